// SPDX-License-Identifier: MIT
/* Queue pairs: creation with the CQ capacity rule, posting, QP events. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vlib.h"
#include "log.h"

/* obj_lock held. */
struct vlib_qp *vlib_qp_find(struct vrdma_device *dev, uint32_t handle)
{
	struct vlib_qp *q;

	for (q = dev->qps; q; q = q->next)
		if (q->pub.handle == handle)
			return q;
	return NULL;
}

static int vlib_qp_caps(const struct vrdma_qp_cap *cap)
{
	if (cap->max_send_wr < 1 || cap->max_send_wr > VRDMA_MAX_WR ||
	    cap->max_recv_wr < 1 || cap->max_recv_wr > VRDMA_MAX_WR ||
	    cap->max_send_sge < 1 || cap->max_send_sge > VRDMA_MAX_SGE ||
	    cap->max_recv_sge < 1 || cap->max_recv_sge > VRDMA_MAX_SGE)
		return -EINVAL;
	return 0;
}

/* The CQ capacity rule: every WR that can be outstanding on the QPs using
 * a CQ has room in it, so an honest guest never overflows a CQ.
 * obj_lock held; reserves on success. */
static int vlib_qp_reserve(struct vlib_cq *scq, struct vlib_cq *rcq,
			   const struct vrdma_qp_cap *cap)
{
	if (scq == rcq) {
		if (scq->committed + cap->max_send_wr + cap->max_recv_wr > scq->size)
			return -EINVAL;
	} else if (scq->committed + cap->max_send_wr > scq->size ||
		   rcq->committed + cap->max_recv_wr > rcq->size) {
		return -EINVAL;
	}
	scq->committed += cap->max_send_wr;
	rcq->committed += cap->max_recv_wr;
	scq->users++;
	rcq->users++;
	return 0;
}

static void vlib_qp_unreserve(struct vlib_cq *scq, struct vlib_cq *rcq,
			      const struct vrdma_qp_cap *cap)
{
	scq->committed -= cap->max_send_wr;
	rcq->committed -= cap->max_recv_wr;
	scq->users--;
	rcq->users--;
}

static void vlib_qp_free(struct vlib_qp *q)
{
	pthread_mutex_destroy(&q->sq_lock);
	pthread_mutex_destroy(&q->rq_lock);
	free(q->sq_len);
	free(q->rq_len);
	free(q);
}

static struct vlib_qp *vlib_qp_new(const struct vrdma_qp_init_attr *attr)
{
	struct vlib_qp *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	pthread_mutex_init(&q->sq_lock, NULL);
	pthread_mutex_init(&q->rq_lock, NULL);
	q->cap = attr->cap;
	q->sq_sig_all = attr->sq_sig_all;
	q->sq_len = calloc(attr->cap.max_send_wr, sizeof(uint32_t));
	q->rq_len = calloc(attr->cap.max_recv_wr, sizeof(uint32_t));
	if (!q->sq_len || !q->rq_len) {
		vlib_qp_free(q);
		return NULL;
	}
	return q;
}

struct vrdma_qp *vrdma_create_qp(struct vrdma_pd *pd, struct vrdma_qp_init_attr *attr)
{
	struct vrdma_req req = { .opcode = VRDMA_CMD_CREATE_QP };
	struct vrdma_device *dev;
	struct vlib_cq *scq, *rcq;
	struct vlib_qp *q;
	uint32_t out[4];
	int rc;

	if (!pd || !pd->device || !attr || !attr->send_cq || !attr->recv_cq ||
	    attr->send_cq->device != pd->device || attr->recv_cq->device != pd->device) {
		errno = EINVAL;
		return NULL;
	}
	dev = pd->device;
	rc = vlib_qp_caps(&attr->cap);
	if (rc)
		goto err;
	q = vlib_qp_new(attr);
	if (!q) {
		rc = -ENOMEM;
		goto err;
	}
	scq = vlib_cq(attr->send_cq);
	rcq = vlib_cq(attr->recv_cq);
	pthread_mutex_lock(&dev->obj_lock);
	rc = vlib_qp_reserve(scq, rcq, &attr->cap);
	if (!rc)
		vlib_pd(pd)->users++;
	pthread_mutex_unlock(&dev->obj_lock);
	if (rc)
		goto err_free;

	req.u.create_qp.pd = pd->handle;
	req.u.create_qp.send_cq = attr->send_cq->handle;
	req.u.create_qp.recv_cq = attr->recv_cq->handle;
	req.u.create_qp.max_send_wr = attr->cap.max_send_wr;
	req.u.create_qp.max_recv_wr = attr->cap.max_recv_wr;
	req.u.create_qp.max_sge = attr->cap.max_send_sge > attr->cap.max_recv_sge ?
				  attr->cap.max_send_sge : attr->cap.max_recv_sge;
	rc = vfe_cmd(&dev->fe, &req, out);
	if (rc)
		goto err_unreserve;

	q->pub.device = dev;
	q->pub.qp_context = attr->qp_context;
	q->pub.pd = pd;
	q->pub.send_cq = attr->send_cq;
	q->pub.recv_cq = attr->recv_cq;
	q->pub.handle = out[0];
	q->pub.qp_num = out[1];
	q->pub.state = VRDMA_QPS_RESET;
	pthread_mutex_lock(&dev->obj_lock);
	q->next = dev->qps;
	dev->qps = q;
	pthread_mutex_unlock(&dev->obj_lock);
	return &q->pub;

err_unreserve:
	pthread_mutex_lock(&dev->obj_lock);
	vlib_qp_unreserve(scq, rcq, &attr->cap);
	vlib_pd(pd)->users--;
	pthread_mutex_unlock(&dev->obj_lock);
err_free:
	vlib_qp_free(q);
err:
	errno = -rc;
	return NULL;
}

int vlib_destroy_qp(struct vlib_qp *q, bool force)
{
	struct vrdma_device *dev = q->pub.device;
	struct vrdma_req req = { .opcode = VRDMA_CMD_DESTROY_QP, .handle = q->pub.handle };
	struct vlib_cq *scq = vlib_cq(q->pub.send_cq), *rcq = vlib_cq(q->pub.recv_cq);
	int rc = 0;

	if (!vfe_is_broken(&dev->fe))
		rc = vfe_cmd(&dev->fe, &req, NULL);
	if (rc && rc != -EIO && !force)
		return rc;
	/* dom0 produces nothing for it from now on: CQEs already in the CQs
	 * are dropped when polled, later ones would be a violation. */
	vlib_cq_forget_qp(scq, q->pub.handle);
	if (rcq != scq)
		vlib_cq_forget_qp(rcq, q->pub.handle);
	pthread_mutex_lock(&dev->obj_lock);
	VLIB_UNLINK(&dev->qps, q);
	vlib_qp_unreserve(scq, rcq, &q->cap);
	vlib_pd(q->pub.pd)->users--;
	pthread_mutex_unlock(&dev->obj_lock);
	/* Pollers and the event consumer found q under obj_lock and use it
	 * under their own lock: wait for them to let go. */
	pthread_mutex_lock(&scq->lock);
	pthread_mutex_unlock(&scq->lock);
	pthread_mutex_lock(&rcq->lock);
	pthread_mutex_unlock(&rcq->lock);
	pthread_mutex_lock(&dev->fe.evt_lock);
	pthread_mutex_unlock(&dev->fe.evt_lock);
	vlib_qp_free(q);
	return 0;
}

int vrdma_destroy_qp(struct vrdma_qp *qp)
{
	if (!qp || !qp->device)
		return EINVAL;
	return vlib_ret(vlib_destroy_qp(vlib_qp(qp), false));
}

/* Event for a QP (evt_lock held).  An unknown handle is a QP destroyed
 * meanwhile: dropped. */
int vlib_qp_event(struct vrdma_device *dev, const struct vrdma_evt *e)
{
	enum vrdma_qp_state st;
	struct vlib_qp *q;

	pthread_mutex_lock(&dev->obj_lock);
	q = vlib_qp_find(dev, e->handle);
	pthread_mutex_unlock(&dev->obj_lock);
	if (!q) {
		vlog_dbg("vrdma: event %u for unknown QP %u dropped", e->type, e->handle);
		return 0;
	}
	st = __atomic_load_n(&q->pub.state, __ATOMIC_ACQUIRE);
	switch (e->type) {
	case VRDMA_EVT_CONNECTED:
		if (st != VRDMA_QPS_CONNECTING)
			return 0;	/* e.g. the passive side, already RTS */
		q->peer_pdata_len = e->u.conn.pdata_len;	/* checked <= max */
		memcpy(q->peer_pdata, e->u.conn.pdata, sizeof(q->peer_pdata));
		q->conn_status = VRDMA_CS_OK;
		__atomic_store_n(&q->pub.state, VRDMA_QPS_RTS, __ATOMIC_RELEASE);
		__atomic_store_n(&q->conn_done, 1, __ATOMIC_RELEASE);
		return 0;
	case VRDMA_EVT_REJECTED:
		if (st != VRDMA_QPS_CONNECTING)
			return 0;	/* a connect that already timed out */
		if (e->status == VRDMA_CS_OK)
			return -EPROTO;
		q->conn_status = e->status;
		__atomic_store_n(&q->pub.state, VRDMA_QPS_RESET, __ATOMIC_RELEASE);
		__atomic_store_n(&q->conn_done, 1, __ATOMIC_RELEASE);
		return 0;
	case VRDMA_EVT_QP_ERROR:
		__atomic_store_n(&q->pub.state, VRDMA_QPS_ERR, __ATOMIC_RELEASE);
		__atomic_store_n(&q->conn_done, 1, __ATOMIC_RELEASE);
		return 0;
	default:
		return -EPROTO;
	}
}
