// SPDX-License-Identifier: MIT
/* Completion queues: a shared area dom0 writes CQEs into; every CQE is
 * copied out and checked before the app sees it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vlib.h"
#include "log.h"
#include "vring.h"

struct vrdma_cq *vrdma_create_cq(struct vrdma_device *dev, int cqe, void *cq_context)
{
	struct vrdma_req req = { .opcode = VRDMA_CMD_CREATE_CQ };
	unsigned order = 0;
	struct vlib_cq *c;
	uint32_t out[4];
	int rc;

	if (!dev || cqe < 1 || cqe > (1 << dev->fe.max_cq_order)) {
		errno = EINVAL;
		return NULL;
	}
	if (vlib_broken(dev))
		return NULL;
	while ((1 << order) < cqe)
		order++;
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	rc = vlib_buf_alloc(dev, vrdma_cq_pages(order), true, &c->buf);
	if (rc)
		goto err_free;
	c->hdr = (struct vrdma_cq_hdr *)c->buf->addr;
	c->ring = (struct vrdma_cqe *)(c->buf->addr + VRDMA_PAGE_SIZE);
	c->size = 1u << order;
	c->hdr->magic = VRDMA_WIRE_MAGIC;
	c->hdr->order = order;
	c->hdr->ring.event = 1;	/* armed for the first CQE, as Xen rings */
	vring_mb();

	req.u.create_cq.buf = c->buf->handle;
	req.u.create_cq.page = 0;
	req.u.create_cq.order = order;
	rc = vfe_cmd(&dev->fe, &req, out);
	if (!rc && out[1] != c->size)
		rc = vfe_cmd_bad(&dev->fe, "CREATE_CQ result with another CQ size");
	if (rc)
		goto err_buf;

	vlock_init(&c->lock);
	c->pub.device = dev;
	c->pub.cq_context = cq_context;
	c->pub.cqe = (int)c->size;
	c->pub.handle = out[0];
	VLIB_LINK(dev, &dev->cqs, c);
	return &c->pub;

err_buf:
	vlib_buf_free(dev, c->buf, true);
err_free:
	free(c);
	errno = -rc;
	return NULL;
}

int vlib_destroy_cq(struct vlib_cq *c, bool force)
{
	struct vrdma_device *dev = c->pub.device;
	int rc;

	pthread_mutex_lock(&dev->obj_lock);
	if (c->users && !force) {
		pthread_mutex_unlock(&dev->obj_lock);
		return -EBUSY;
	}
	VLIB_UNLINK(&dev->cqs, c);
	pthread_mutex_unlock(&dev->obj_lock);

	rc = vlib_destroy_cmd(dev, VRDMA_CMD_DESTROY_CQ, c->pub.handle, force);
	if (rc) {
		VLIB_LINK(dev, &dev->cqs, c);
		return rc;
	}
	/* Unlinked: vlib_cq_event (obj_lock) queues nothing more for it. */
	vlib_async_forget(dev, &c->pub);
	vlib_buf_free(dev, c->buf, true);
	free(c->gone);
	free(c);
	return 0;
}

/* CQ_ERROR (evt_lock held): the CQ overran.  Its QPs get QP_ERROR. */
int vlib_cq_event(struct vrdma_device *dev, const struct vrdma_evt *e)
{
	struct vlib_cq *c;

	pthread_mutex_lock(&dev->obj_lock);
	for (c = dev->cqs; c && c->pub.handle != e->handle; c = c->next)
		;
	if (c)
		vlib_async_push(dev, VRDMA_EVENT_CQ_ERR, &c->pub);
	pthread_mutex_unlock(&dev->obj_lock);
	if (!c)
		vlog_dbg("vrdma: CQ error for unknown CQ %u dropped", e->handle);
	return 0;
}

int vrdma_destroy_cq(struct vrdma_cq *cq)
{
	if (!cq || !cq->device)
		return EINVAL;
	return vlib_ret(vlib_destroy_cq(vlib_cq(cq), false));
}

/* Drop the gone entries the consumer has passed (lock held). */
static void vlib_cq_prune(struct vlib_cq *c)
{
	unsigned i, n = 0;

	for (i = 0; i < c->ngone; i++)
		if ((int32_t)(c->gone[i].until - c->cons) > 0)
			c->gone[n++] = c->gone[i];
	c->ngone = n;
}

/* Room for one more gone entry, so that forgetting a QP cannot fail. */
int vlib_cq_gone_prepare(struct vlib_cq *c)
{
	struct vlib_gone *g;
	int rc = 0;

	vlock_lock(&c->lock);
	vlib_cq_prune(c);
	if (c->ngone == c->gone_cap) {
		g = realloc(c->gone, (c->gone_cap + 4) * sizeof(*g));
		if (g) {
			c->gone = g;
			c->gone_cap += 4;
		} else {
			rc = -ENOMEM;
		}
	}
	vlock_unlock(&c->lock);
	return rc;
}

/* A QP using this CQ is being destroyed: CQEs already produced for it are
 * dropped when polled; anything later naming it is a violation. */
void vlib_cq_forget_qp(struct vlib_cq *c, struct vlib_qp *q)
{
	struct vlib_gone *g;

	vlock_lock(&c->lock);
	if (c->last_qp == q)
		c->last_qp = NULL;
	vlib_cq_prune(c);
	if (c->ngone == c->gone_cap) {	/* prepare failed, forced destroy */
		vlog_err("vrdma: out of memory: CQEs of destroyed QP %u will break the device",
			 q->pub.handle);
	} else {
		g = &c->gone[c->ngone++];
		g->qp = q->pub.handle;
		g->until = vring_load_acq(&c->hdr->ring.prod);
	}
	vlock_unlock(&c->lock);
}

static bool vlib_cq_gone(const struct vlib_cq *c, uint32_t qp)
{
	unsigned i;

	for (i = 0; i < c->ngone; i++)
		if (c->gone[i].qp == qp && (int32_t)(c->gone[i].until - c->cons) > 0)
			return true;
	return false;
}

static int vlib_wc_status(uint8_t ws, enum vrdma_wc_status *st)
{
	switch (ws) {
	case VRDMA_WS_SUCCESS:		*st = VRDMA_WC_SUCCESS; break;
	case VRDMA_WS_LOC_LEN_ERR:	*st = VRDMA_WC_LOC_LEN_ERR; break;
	case VRDMA_WS_LOC_QP_OP_ERR:	*st = VRDMA_WC_LOC_QP_OP_ERR; break;
	case VRDMA_WS_LOC_PROT_ERR:	*st = VRDMA_WC_LOC_PROT_ERR; break;
	case VRDMA_WS_WR_FLUSH_ERR:	*st = VRDMA_WC_WR_FLUSH_ERR; break;
	case VRDMA_WS_REM_INV_REQ_ERR:	*st = VRDMA_WC_REM_INV_REQ_ERR; break;
	case VRDMA_WS_REM_ACCESS_ERR:	*st = VRDMA_WC_REM_ACCESS_ERR; break;
	case VRDMA_WS_REM_OP_ERR:	*st = VRDMA_WC_REM_OP_ERR; break;
	case VRDMA_WS_RETRY_EXC_ERR:	*st = VRDMA_WC_RETRY_EXC_ERR; break;
	case VRDMA_WS_RNR_RETRY_EXC_ERR: *st = VRDMA_WC_RNR_RETRY_EXC_ERR; break;
	case VRDMA_WS_FATAL_ERR:	*st = VRDMA_WC_FATAL_ERR; break;
	default:			return -EPROTO;
	}
	return 0;
}

/* 1 for a send-queue opcode, 0 for a receive one, -EPROTO if unknown. */
static int vlib_wc_opcode(uint8_t op, enum vrdma_wc_opcode *wop)
{
	switch (op) {
	case VRDMA_WC_SEND:	*wop = VRDMA_WC_SEND_OP; return 1;
	case VRDMA_WC_WRITE:	*wop = VRDMA_WC_RDMA_WRITE_OP; return 1;
	case VRDMA_WC_READ:	*wop = VRDMA_WC_RDMA_READ_OP; return 1;
	case VRDMA_WC_CMP_SWAP:	*wop = VRDMA_WC_COMP_SWAP_OP; return 1;
	case VRDMA_WC_FETCH_ADD: *wop = VRDMA_WC_FETCH_ADD_OP; return 1;
	case VRDMA_WC_RECV:	*wop = VRDMA_WC_RECV_OP; return 0;
	case VRDMA_WC_RECV_IMM:	*wop = VRDMA_WC_RECV_RDMA_WITH_IMM_OP; return 0;
	default:		return -EPROTO;
	}
}

/*
 * Send CQE: sq_retired moves strictly forward, never past what we posted,
 * and names the slot of the WR it completes (wr_id, length, opcode).
 */
static int vlib_cqe_send(struct vlib_qp *q, const struct vrdma_cqe *e)
{
	uint32_t posted = __atomic_load_n(&q->sq_posted, __ATOMIC_ACQUIRE);
	uint32_t old = q->sq_retired;
	const struct vlib_slot *s;

	if (e->sq_retired == old ||
	    (uint32_t)(e->sq_retired - old) > (uint32_t)(posted - old))
		return -EPROTO;
	s = &q->sq_slot[(e->sq_retired - 1) & q->sq_mask];
	if (e->wr_id != s->wr_id || e->byte_len > s->len ||
	    (e->status == VRDMA_WS_SUCCESS && e->opcode != s->wc))
		return -EPROTO;
	__atomic_store_n(&q->sq_retired, e->sq_retired, __ATOMIC_RELEASE);
	return 0;
}

/* Receive CQE: retires the oldest posted receive (RC receives are FIFO). */
static int vlib_cqe_recv(struct vlib_qp *q, const struct vrdma_cqe *e)
{
	uint32_t posted = __atomic_load_n(&q->rq_posted, __ATOMIC_ACQUIRE);
	uint32_t old = q->rq_retired;
	const struct vlib_slot *s = &q->rq_slot[old & q->rq_mask];

	if (posted == old || e->wr_id != s->wr_id)
		return -EPROTO;
	if (e->opcode == VRDMA_WC_RECV && e->byte_len > s->len)
		return -EPROTO;
	__atomic_store_n(&q->rq_retired, old + 1, __ATOMIC_RELEASE);
	return 0;
}

/* A receive of a destroyed QP took an SRQ slot: free it if the SRQ is
 * still there (nonsense in such a CQE is not checked: the QP is gone). */
static void vlib_cq_gone_srq(struct vlib_cq *c, const struct vrdma_cqe *e)
{
	struct vrdma_device *dev = c->pub.device;
	struct vlib_srq *s;

	/* Under obj_lock: vrdma_destroy_srq unlinks it under that lock first. */
	pthread_mutex_lock(&dev->obj_lock);
	s = vlib_srq_find(dev, e->srq);
	if (s)
		vlib_srq_retire(s, e);
	pthread_mutex_unlock(&dev->obj_lock);
}

/* The QP a CQE names (lock held): the last one seen, else by handle.  It
 * stays alive while we hold the lock: destroying it takes this lock. */
static struct vlib_qp *vlib_cq_qp(struct vlib_cq *c, uint32_t handle)
{
	struct vrdma_device *dev = c->pub.device;
	struct vlib_qp *q = c->last_qp;

	if (q && q->pub.handle == handle)
		return q;
	pthread_mutex_lock(&dev->obj_lock);
	q = vlib_qp_find(dev, handle);
	pthread_mutex_unlock(&dev->obj_lock);
	return q;
}

/* A UD receive that succeeded comes with its GRH, and only it: the
 * program takes byte_len - VRDMA_GRH_LEN for its payload and src_qp for
 * the sender's QP number, so dom0 must not make either up. */
static bool vlib_cqe_bad_grh(const struct vlib_qp *q, const struct vrdma_cqe *e, int is_send)
{
	bool grh = e->flags & VRDMA_CQE_F_GRH;

	if (grh != (q->ud && !is_send && e->opcode == VRDMA_WC_RECV &&
		    e->status == VRDMA_WS_SUCCESS))
		return true;
	return grh && (e->byte_len < VRDMA_GRH_LEN || e->src_qpn >= 1u << 24);
}

/* A CQE vlib_cqe() does not take: a team's OP_COLL (on a team's own CQ,
 * checked by team_dev.c, returned as VLIB_WC_COLL), else nonsense. */
static __attribute__((noinline, cold)) int
vlib_cqe_team(struct vlib_cq *c, const struct vrdma_cqe *e, struct vrdma_wc *wc)
{
	if (!(e->flags & VRDMA_CQE_F_TEAM) || vlib_wc_status(e->status, &wc->status) ||
	    vlib_team_cqe(c, e))
		return -EPROTO;
	wc->opcode = VLIB_WC_COLL;
	wc->vendor_err = e->vendor_err;
	wc->byte_len = e->byte_len;
	wc->qp_num = e->qp;
	return 1;
}

/* Check and convert one CQE.  1: wc filled; 0: dropped (dead QP);
 * -EPROTO: dom0 wrote nonsense. */
static int vlib_cqe(struct vlib_cq *c, const struct vrdma_cqe *e, struct vrdma_wc *wc)
{
	struct vlib_qp *q;
	int is_send, rc;

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = e->wr_id;
	is_send = vlib_wc_opcode(e->opcode, &wc->opcode);
	if (is_send < 0 || vlib_wc_status(e->status, &wc->status) ||
	    (e->flags & ~(VRDMA_CQE_F_IMM | VRDMA_CQE_F_GRH)))
		return vlib_cqe_team(c, e, wc);
	if (e->srq && is_send)
		return -EPROTO;
	q = vlib_cq_qp(c, e->qp);
	if (!q) {
		if (!vlib_cq_gone(c, e->qp))
			return -EPROTO;
		/* A dead QP's receive still took its SRQ slot. */
		if (e->srq)
			vlib_cq_gone_srq(c, e);
		return 0;
	}
	if ((is_send ? q->pub.send_cq : q->pub.recv_cq) != &c->pub ||
	    vlib_cqe_bad_grh(q, e, is_send))
		return -EPROTO;
	c->last_qp = q;
	if (!is_send && (q->srq ? e->srq != q->srq->pub.handle : e->srq != 0))
		return -EPROTO;
	rc = is_send ? vlib_cqe_send(q, e) : q->srq ? vlib_srq_retire(q->srq, e) :
							vlib_cqe_recv(q, e);
	if (rc)
		return rc;
	/* As verbs: QP to error, where dom0 put it (a UD QP's send error
	 * too: ERR for IB's SQE, backend/local/ud.c), but for a UD receive
	 * too small for its datagram, which fails alone. */
	if (e->status != VRDMA_WS_SUCCESS &&
	    !(q->ud && !is_send && e->status == VRDMA_WS_LOC_LEN_ERR))
		vlib_qp_to_err(q);
	wc->vendor_err = e->vendor_err;
	wc->byte_len = e->byte_len;
	if (e->flags & VRDMA_CQE_F_IMM) {
		wc->imm_data = e->imm_data;
		wc->wc_flags = VRDMA_WC_WITH_IMM;
	}
	if (e->flags & VRDMA_CQE_F_GRH)
		wc->wc_flags |= VRDMA_WC_GRH;
	wc->qp_num = q->pub.qp_num;
	wc->src_qp = e->src_qpn;
	return 1;
}

/* vrdma_poll_cq() once there is something to take (or the device broke).
 * Not inlined: its stack frame would cost every empty poll. */
static __attribute__((noinline)) int vlib_poll_locked(struct vlib_cq *c, int num_entries, struct vrdma_wc *wc)
{
	struct vrdma_device *dev = c->pub.device;
	struct vrdma_cqe e;
	uint32_t prod, start;
	int n = 0, rc;

	vlock_lock(&c->lock);
	if (vfe_is_broken(&dev->fe))
		goto err_io;
	prod = vring_load_acq(&c->hdr->ring.prod);
	if (!vring_sane(prod, c->cons, c->size)) {
		vfe_set_broken(&dev->fe, "CQ producer index out of range");
		goto err_io;
	}
	start = c->cons;
	while (n < num_entries && c->cons != prod) {
		memcpy(&e, &c->ring[c->cons & (c->size - 1)], sizeof(e));
		rc = vlib_cqe(c, &e, &wc[n]);
		if (rc < 0) {
			vlog_err("vrdma: bad CQE qp %u opcode %u status %u",
				 e.qp, e.opcode, e.status);
			vfe_set_broken(&dev->fe, "invalid CQE from dom0");
			break;
		}
		__atomic_store_n(&c->cons, c->cons + 1, __ATOMIC_RELEASE);
		n += rc;
	}
	/* The shared line is written only when something was consumed. */
	if (c->cons != start)
		vring_consumed(&c->hdr->ring, c->cons);
	/* CQEs dom0 wrote before it died are handed out first. */
	if (!n && !vfe_live(&dev->fe) && vfe_dom0_gone(&dev->fe))
		goto err_io;
	vlock_unlock(&c->lock);
	if (!n)
		vlib_async_pump(dev);	/* no lock of ours held */
	else if (vlib_lt_on())
		vlib_lt_cqes(wc, n);
	return n;

err_io:
	vlock_unlock(&c->lock);
	errno = EIO;
	return -1;
}

/* vrdma_poll_cq() with nothing to take: dom0's events, if it posted
 * some, are consumed here (so a program that only polls sees them).  A
 * tail call from there: the empty poll needs no stack frame of its own. */
static __attribute__((noinline)) int vlib_poll_empty(struct vrdma_device *dev)
{
	vlib_async_pump(dev);
	return 0;
}

/* vrdma_poll_cq() without room for a completion or with bad arguments. */
static __attribute__((noinline, cold)) int
vlib_poll_odd(struct vrdma_cq *cq, int num_entries, struct vrdma_wc *wc)
{
	if (!cq || !cq->device || num_entries < 0 || (num_entries && !wc)) {
		errno = EINVAL;
		return -1;
	}
	return vlib_poll_locked(vlib_cq(cq), 0, NULL);	/* 0, or EIO if broken */
}

/*
 * A bad CQE breaks the device.  Completions taken before it are returned
 * (n > 0) and the next call fails; with none, this call fails (EIO).
 */
int vrdma_poll_cq(struct vrdma_cq *cq, int num_entries, struct vrdma_wc *wc)
{
	struct vrdma_device *dev;
	struct vlib_cq *c;

	if (vfe_unlikely(!cq || !(dev = cq->device) || num_entries <= 0 || !wc))
		return vlib_poll_odd(cq, num_entries, wc);
	c = vlib_cq(cq);
	/* Nothing new, the usual answer to a busy poller: no lock.  cons
	 * moves only under the lock, prod == cons needs no sanity check.
	 * vfe_live() is false on a broken device and once dom0 died: a
	 * program that only polls learns it here, with the same one look. */
	if (vfe_likely(vfe_live(&dev->fe) &&
		       vring_load_acq(&c->hdr->ring.prod) ==
		       __atomic_load_n(&c->cons, __ATOMIC_ACQUIRE)))
		return vlib_async_pending(dev) ? vlib_poll_empty(dev) : 0;
	return vlib_poll_locked(c, num_entries, wc);
}

static bool vlib_cq_ready(void *arg)
{
	struct vlib_cq *c = arg;

	return vring_load_acq(&c->hdr->ring.prod) !=
	       __atomic_load_n(&c->cons, __ATOMIC_ACQUIRE);
}

static bool vlib_cq_arm(void *arg)
{
	struct vlib_cq *c = arg;

	return vring_arm(&c->hdr->ring, __atomic_load_n(&c->cons, __ATOMIC_ACQUIRE));
}

int vrdma_wait_cq(struct vrdma_cq *cq, int timeout_ms)
{
	if (!cq || !cq->device || timeout_ms < 0)
		return EINVAL;
	return vlib_ret(vfe_wait(&cq->device->fe, vlib_cq_ready, vlib_cq_arm,
				 vlib_cq(cq), timeout_ms));
}
