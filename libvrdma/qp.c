// SPDX-License-Identifier: MIT
/* Queue pairs: creation, destruction, QP events. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "vlib.h"
#include "log.h"

/* obj_lock held. */
struct vlib_qp *vlib_qp_find(struct vrdma_device *dev, uint32_t handle)
{
	struct vlib_qp *q;

	for (q = *vlib_qp_bucket(dev, handle); q; q = q->next)
		if (q->pub.handle == handle)
			return q;
	return NULL;
}

/* The receive caps do not count on an SRQ (as in verbs). */
static int vlib_qp_caps(const struct vrdma_device *dev, const struct vrdma_qp_cap *cap,
			bool srq)
{
	uint32_t max_sge = dev->fe.max_sge;	/* the backend's max-sge */

	if (cap->max_send_wr < 1 || cap->max_send_wr > VRDMA_MAX_WR ||
	    cap->max_send_sge < 1 || cap->max_send_sge > max_sge)
		return -EINVAL;
	if (!srq && (cap->max_recv_wr < 1 || cap->max_recv_wr > VRDMA_MAX_WR ||
		     cap->max_recv_sge < 1 || cap->max_recv_sge > max_sge))
		return -EINVAL;
	return 0;
}

/*
 * A QP uses its CQs, PD and SRQ (obj_lock held).  Verbs lets the QPs of a
 * CQ be deeper than it: a program that lets it overrun gets the CQ's error
 * event and its QPs go to error (dom0 drops what does not fit), as on
 * hardware, so there is no capacity rule here.
 */
static void vlib_qp_use(struct vlib_cq *scq, struct vlib_cq *rcq, struct vlib_pd *p,
			struct vlib_srq *srq, bool take)
{
	if (take) {
		scq->users++;
		rcq->users++;
		p->users++;
		if (srq)
			srq->users++;
	} else {
		scq->users--;
		rcq->users--;
		p->users--;
		if (srq)
			srq->users--;
	}
}

void vlib_qp_free(struct vlib_qp *q)
{
	pthread_mutex_destroy(&q->sq_lock);
	free(q->sq_slot);
	free(q->rq_slot);
	free(q);
}

static uint32_t vlib_pow2(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static struct vlib_qp *vlib_qp_new(const struct vrdma_qp_init_attr *attr,
				   struct vrdma_srq *srq)
{
	struct vlib_qp *q = calloc(1, sizeof(*q));
	uint32_t ns = vlib_pow2(attr->cap.max_send_wr), nr = vlib_pow2(attr->cap.max_recv_wr);

	if (!q)
		return NULL;
	pthread_mutex_init(&q->sq_lock, NULL);
	q->cap = attr->cap;
	if (srq) {
		q->srq = vlib_srq(srq);
		q->cap.max_recv_wr = q->cap.max_recv_sge = 0;
		nr = 1;
	}
	q->sq_sig_all = attr->sq_sig_all ? VRDMA_WR_F_SIGNALED : 0;
	q->ud = attr->qp_type == VRDMA_QPT_UD;
	q->sq_slot = calloc(ns, sizeof(*q->sq_slot));
	q->rq_slot = calloc(nr, sizeof(*q->rq_slot));
	q->sq_mask = ns - 1;
	q->rq_mask = nr - 1;
	if (!q->sq_slot || !q->rq_slot) {
		vlib_qp_free(q);
		return NULL;
	}
	return q;
}

static void vlib_create_qp_req(struct vrdma_req *req, struct vrdma_pd *pd,
			       const struct vrdma_qp_init_attr *attr, struct vrdma_srq *srq)
{
	const struct vrdma_qp_cap *cap = &attr->cap;

	req->u.create_qp.pd = pd->handle;
	req->u.create_qp.send_cq = attr->send_cq->handle;
	req->u.create_qp.recv_cq = attr->recv_cq->handle;
	req->u.create_qp.max_send_wr = cap->max_send_wr;
	req->u.create_qp.max_recv_wr = srq ? 0 : cap->max_recv_wr;
	req->u.create_qp.max_sge = cap->max_send_sge > cap->max_recv_sge || srq ?
				   cap->max_send_sge : cap->max_recv_sge;
	req->u.create_qp.srq = srq ? srq->handle : 0;
	req->u.create_qp.type = attr->qp_type == VRDMA_QPT_UD ? VRDMA_QP_TYPE_UD :
								VRDMA_QP_TYPE_RC;
}

/* qp_type took what was the struct's tail padding: programs built before
 * it keep their layout. */
_Static_assert(sizeof(struct vrdma_qp_init_attr) ==
	       offsetof(struct vrdma_qp_init_attr, sq_sig_all) + 8, "qp_type in the padding");

struct vrdma_qp *vrdma_create_qp(struct vrdma_pd *pd, struct vrdma_qp_init_attr *attr)
{
	return vrdma_create_qp_srq(pd, attr, NULL);
}

struct vrdma_qp *vrdma_create_qp_srq(struct vrdma_pd *pd, struct vrdma_qp_init_attr *attr,
				     struct vrdma_srq *srq)
{
	struct vrdma_req req = { .opcode = VRDMA_CMD_CREATE_QP };
	struct vrdma_device *dev;
	struct vlib_cq *scq, *rcq;
	struct vlib_qp *q;
	uint32_t out[4];
	int rc;

	if (!pd || !pd->device || !attr || !attr->send_cq || !attr->recv_cq ||
	    attr->send_cq->device != pd->device || attr->recv_cq->device != pd->device ||
	    (srq && srq->device != pd->device)) {
		errno = EINVAL;
		return NULL;
	}
	dev = pd->device;
	if (vlib_broken(dev))
		return NULL;
	rc = vlib_qp_caps(dev, &attr->cap, srq != NULL);
	if (!rc && attr->qp_type != VRDMA_QPT_RC && attr->qp_type != VRDMA_QPT_UD)
		rc = -EINVAL;
	if (!rc && attr->qp_type == VRDMA_QPT_UD && !dev->fe.feat_ud)
		rc = -EOPNOTSUPP;	/* an older backend: wire.md, feature-ud */
	if (rc)
		goto err;
	q = vlib_qp_new(attr, srq);
	if (!q) {
		rc = -ENOMEM;
		goto err;
	}
	scq = vlib_cq(attr->send_cq);
	rcq = vlib_cq(attr->recv_cq);
	pthread_mutex_lock(&dev->obj_lock);
	vlib_qp_use(scq, rcq, vlib_pd(pd), q->srq, true);
	pthread_mutex_unlock(&dev->obj_lock);

	vlib_create_qp_req(&req, pd, attr, srq);
	rc = vfe_cmd(&dev->fe, &req, out);
	if (rc)
		goto err_unuse;

	q->pub.device = dev;
	q->pub.qp_context = attr->qp_context;
	q->pub.pd = pd;
	q->pub.send_cq = attr->send_cq;
	q->pub.recv_cq = attr->recv_cq;
	q->pub.handle = out[0];
	q->pub.qp_num = out[1];
	q->pub.state = VRDMA_QPS_RESET;
	pthread_mutex_lock(&dev->obj_lock);
	if (vlib_qp_find(dev, q->pub.handle)) {
		/* CQEs and events are routed by handle: two QPs cannot share one. */
		pthread_mutex_unlock(&dev->obj_lock);
		rc = vfe_cmd_bad(&dev->fe, "dom0 gave a new QP the handle of a live one");
		goto err_unuse;
	}
	q->next = *vlib_qp_bucket(dev, q->pub.handle);
	*vlib_qp_bucket(dev, q->pub.handle) = q;
	pthread_mutex_unlock(&dev->obj_lock);
	return &q->pub;

err_unuse:
	pthread_mutex_lock(&dev->obj_lock);
	vlib_qp_use(scq, rcq, vlib_pd(pd), q->srq, false);
	pthread_mutex_unlock(&dev->obj_lock);
	vlib_qp_free(q);
err:
	errno = -rc;
	return NULL;
}

int vlib_destroy_qp(struct vlib_qp *q, bool force)
{
	struct vrdma_device *dev = q->pub.device;
	struct vlib_cq *scq = vlib_cq(q->pub.send_cq), *rcq = vlib_cq(q->pub.recv_cq);
	int rc;

	/* Room for the gone entries first: after the command there is no
	 * way back, and a CQE of an unknown QP would break the device. */
	rc = vlib_cq_gone_prepare(scq);
	if (!rc && rcq != scq)
		rc = vlib_cq_gone_prepare(rcq);
	if (rc && !force)
		return rc;
	rc = vlib_destroy_cmd(dev, VRDMA_CMD_DESTROY_QP, q->pub.handle, force);
	if (rc)
		return rc;
	/* dom0 produces nothing for it from now on: CQEs already in the CQs
	 * are dropped when polled, later ones would be a violation. */
	vlib_cq_forget_qp(scq, q);
	if (rcq != scq)
		vlib_cq_forget_qp(rcq, q);
	pthread_mutex_lock(&dev->obj_lock);
	VLIB_UNLINK(vlib_qp_bucket(dev, q->pub.handle), q);
	vlib_qp_use(scq, rcq, vlib_pd(q->pub.pd), NULL, false);
	pthread_mutex_unlock(&dev->obj_lock);
	/* Pollers and the event consumer found q under their own lock or
	 * obj_lock and use it under their own lock: wait for them to let go. */
	vlock_lock(&scq->lock);
	vlock_unlock(&scq->lock);
	vlock_lock(&rcq->lock);
	vlock_unlock(&rcq->lock);
	pthread_mutex_lock(&dev->fe.evt_lock);
	pthread_mutex_unlock(&dev->fe.evt_lock);
	vlib_async_forget(dev, &q->pub);
	/* Only now may its SRQ go: a poller may have used q->srq till here. */
	if (q->srq) {
		pthread_mutex_lock(&dev->obj_lock);
		q->srq->users--;
		pthread_mutex_unlock(&dev->obj_lock);
	}
	vlib_qp_free(q);
	return 0;
}

int vrdma_destroy_qp(struct vrdma_qp *qp)
{
	if (!qp || !qp->device)
		return EINVAL;
	return vlib_ret(vlib_destroy_qp(vlib_qp(qp), false));
}

/*
 * The QP goes to ERR, from whichever thread saw why (an error completion,
 * an event, a modify): a QP on an SRQ says LAST_WQE_REACHED once per
 * transition, as verbs does.
 */
void vlib_qp_to_err(struct vlib_qp *q)
{
	if (__atomic_exchange_n(&q->pub.state, VRDMA_QPS_ERR, __ATOMIC_ACQ_REL) !=
	    VRDMA_QPS_ERR && q->srq)
		vlib_async_push(q->pub.device, VRDMA_EVENT_QP_LAST_WQE_REACHED, &q->pub);
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
		/* A peer that is gone shows in completions, as on RC
		 * hardware; anything else is the QP's fatal error. */
		if (e->status != VRDMA_CS_UNREACH)
			vlib_async_push(dev, VRDMA_EVENT_QP_FATAL, &q->pub);
		vlib_qp_to_err(q);
		__atomic_store_n(&q->conn_done, 1, __ATOMIC_RELEASE);
		return 0;
	default:
		return -EPROTO;
	}
}
