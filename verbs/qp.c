// SPDX-License-Identifier: MIT
/* Queue pairs: creation (RC and UD), modify through the verbs states, query. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vvb.h"

/* The wr_* operations this library implements (wr.c). */
#define VVB_SEND_OPS	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
			 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
			 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

/* 0 for the defaults verbs programs leave at zero, else clamp-checked. */
static int vvb_cap(uint32_t *v, uint32_t max)
{
	if (*v == 0)
		*v = 1;				/* libvrdma wants at least one */
	return *v > max ? EINVAL : 0;
}

static int vvb_check_init(struct vvb_context *ctx, const struct ibv_qp_init_attr_ex *ia)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS;

	if (!(ia->comp_mask & IBV_QP_INIT_ATTR_PD) || !ia->pd ||
	    !ia->send_cq || !ia->recv_cq)
		return EINVAL;
	if (ia->comp_mask & ~known)
		return EOPNOTSUPP;		/* XRC, TSO, RSS, ... */
	if ((ia->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && ia->create_flags)
		return EOPNOTSUPP;
	if ((ia->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (ia->send_ops_flags & ~(uint64_t)VVB_SEND_OPS))
		return EOPNOTSUPP;
	if (ia->qp_type != IBV_QPT_RC && ia->qp_type != IBV_QPT_UD)
		return EOPNOTSUPP;		/* UC, XRC, raw packet */
	if (ia->pd->context != &ctx->vctx.context ||
	    ia->send_cq->context != ia->pd->context ||
	    ia->recv_cq->context != ia->pd->context ||
	    (ia->srq && ia->srq->context != ia->pd->context))
		return EINVAL;
	if (ia->cap.max_inline_data > VVB_MAX_INLINE)
		return EINVAL;
	return 0;
}

/* The registered inline bounce area (sq_lock not needed: not shared yet). */
static int vvb_inline_init(struct vvb_qp *q, struct vvb_pd *pd)
{
	size_t len;

	if (!q->cap.max_inline_data)
		return 0;
	q->slot_size = (q->cap.max_inline_data + 63) & ~63u;
	len = (size_t)q->slot_size * q->sq_depth * 2;	/* two per WR: vvb.h */
	/* vrdma_alloc_buf() memory is registrable whatever vrdma_reg_mr()
	 * accepts otherwise. */
	q->ibuf = vrdma_alloc_buf(q->ctx->vdev, len);
	if (!q->ibuf)
		return errno;
	q->imr = vrdma_reg_mr(pd->vpd, q->ibuf, len, VRDMA_ACCESS_LOCAL_WRITE);
	if (!q->imr) {
		int rc = errno;

		vrdma_free_buf(q->ctx->vdev, q->ibuf);
		q->ibuf = NULL;
		return rc;
	}
	return 0;
}

static void vvb_qp_free(struct vvb_qp *q)
{
	if (q->imr)
		vrdma_dereg_mr(q->imr);
	if (q->ibuf)
		vrdma_free_buf(q->ctx->vdev, q->ibuf);
	pthread_mutex_destroy(&q->rq_lock);
	pthread_mutex_destroy(&q->qpx.qp_base.mutex);
	pthread_cond_destroy(&q->qpx.qp_base.cond);
	free(q->swr);
	free(q->ssge);
	free(q->rwr);
	free(q->rsge);
	free(q);
}

struct ibv_qp *vvb_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *ia)
{
	struct vrdma_qp_init_attr va;
	struct vvb_context *ctx;
	struct ibv_qp *qp;
	struct vvb_qp *q;
	int rc;

	if (!c || !ia) {
		errno = EINVAL;
		return NULL;
	}
	ctx = vvb_ctx(c);
	rc = vvb_check_init(ctx, ia);
	if (rc)
		goto err;
	q = calloc(1, sizeof(*q));
	if (!q) {
		rc = ENOMEM;
		goto err;
	}
	q->ctx = ctx;
	q->cap = ia->cap;
	q->srq = ia->srq ? vvb_srq(ia->srq) : NULL;
	/* q->sq_lock: free, as calloc left it */
	pthread_mutex_init(&q->rq_lock, NULL);
	pthread_mutex_init(&q->qpx.qp_base.mutex, NULL);
	pthread_cond_init(&q->qpx.qp_base.cond, NULL);
	if (vvb_cap(&q->cap.max_send_wr, ctx->dattr.max_qp_wr) ||
	    vvb_cap(&q->cap.max_recv_wr, ctx->dattr.max_qp_wr) ||
	    vvb_cap(&q->cap.max_send_sge, ctx->dattr.max_sge) ||
	    vvb_cap(&q->cap.max_recv_sge, ctx->dattr.max_sge)) {
		rc = EINVAL;
		goto err_free;
	}
	/* On an SRQ the QP has no receive queue of its own: caps 0, as
	 * providers report them. */
	if (q->srq)
		q->cap.max_recv_wr = q->cap.max_recv_sge = 0;
	q->sq_depth = q->cap.max_send_wr;
	q->rq_depth = q->cap.max_recv_wr;
	q->sq_sig_all = ia->sq_sig_all;
	q->swr = calloc(q->sq_depth, sizeof(*q->swr));
	q->ssge = calloc((size_t)q->sq_depth * q->cap.max_send_sge, sizeof(*q->ssge));
	if (!q->srq) {
		q->rwr = calloc(q->rq_depth, sizeof(*q->rwr));
		q->rsge = calloc((size_t)q->rq_depth * q->cap.max_recv_sge, sizeof(*q->rsge));
	}
	if (!q->swr || !q->ssge || (!q->srq && (!q->rwr || !q->rsge))) {
		rc = ENOMEM;
		goto err_free;
	}

	memset(&va, 0, sizeof(va));
	va.qp_context = q;
	va.send_cq = vvb_cq(ia->send_cq)->vcq;
	va.recv_cq = vvb_cq(ia->recv_cq)->vcq;
	va.cap.max_send_wr = q->cap.max_send_wr;
	va.cap.max_recv_wr = q->cap.max_recv_wr;
	va.cap.max_send_sge = q->cap.max_send_sge;
	va.cap.max_recv_sge = q->cap.max_recv_sge;
	va.sq_sig_all = ia->sq_sig_all;
	q->ud = ia->qp_type == IBV_QPT_UD;
	va.qp_type = q->ud ? VRDMA_QPT_UD : VRDMA_QPT_RC;
	rc = vvb_inline_init(q, vvb_pd(ia->pd));
	if (rc)
		goto err_free;
	/* max_recv_* are ignored with an SRQ (vrdma_create_qp_srq(3)) */
	q->vqp = vrdma_create_qp_srq(vvb_pd(ia->pd)->vpd, &va, q->srq ? q->srq->vsrq : NULL);
	if (!q->vqp) {
		rc = errno;
		goto err_free;
	}

	qp = &q->qpx.qp_base;
	qp->context = c;
	qp->qp_context = ia->qp_context;
	qp->pd = ia->pd;
	qp->send_cq = ia->send_cq;
	qp->recv_cq = ia->recv_cq;
	qp->srq = ia->srq;
	qp->handle = q->vqp->handle;
	qp->qp_num = q->vqp->qp_num;
	qp->state = IBV_QPS_RESET;
	qp->qp_type = ia->qp_type;
	q->attr.qp_state = IBV_QPS_RESET;
	q->attr.port_num = VVB_PORT;
	q->attr.path_mtu = IBV_MTU_4096;
	vvb_wr_init(q);
	ia->cap = q->cap;			/* verbs reports what was granted */
	return qp;

err_free:
	vvb_qp_free(q);
err:
	errno = rc;
	return NULL;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp *qp;

	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	memset(&ia, 0, sizeof(ia));
	ia.qp_context = attr->qp_context;
	ia.send_cq = attr->send_cq;
	ia.recv_cq = attr->recv_cq;
	ia.srq = attr->srq;
	ia.cap = attr->cap;
	ia.qp_type = attr->qp_type;
	ia.sq_sig_all = attr->sq_sig_all;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = pd;
	qp = vvb_create_qp_ex(pd->context, &ia);
	if (qp)
		attr->cap = ia.cap;
	return qp;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct vvb_qp *q;
	int rc;

	if (!qp)
		return EINVAL;
	q = vvb_qp(qp);
	vvb_events_lock_idle(&q->events);
	rc = vrdma_destroy_qp(q->vqp);	/* drops its queued events */
	vvb_events_unlock();
	if (rc)
		return rc;
	/* its completions an arm kept aside go as libvrdma's own did */
	vvb_ev_forget_qp(qp->send_cq, qp->qp_num);
	if (qp->recv_cq != qp->send_cq)
		vvb_ev_forget_qp(qp->recv_cq, qp->qp_num);
	vvb_qp_free(q);
	return 0;
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	return qp ? &vvb_qp(qp)->qpx : NULL;
}

static int vvb_state_to_vrdma(enum ibv_qp_state s, enum vrdma_qp_state *v)
{
	switch (s) {
	case IBV_QPS_RESET:	*v = VRDMA_QPS_RESET; return 0;
	case IBV_QPS_INIT:	*v = VRDMA_QPS_INIT; return 0;
	case IBV_QPS_RTR:	*v = VRDMA_QPS_RTR; return 0;
	case IBV_QPS_RTS:	*v = VRDMA_QPS_RTS; return 0;
	case IBV_QPS_ERR:	*v = VRDMA_QPS_ERR; return 0;
	default:		return EINVAL;	/* SQD, SQE */
	}
}

static enum ibv_qp_state vvb_state_from_vrdma(enum vrdma_qp_state s)
{
	switch (s) {
	case VRDMA_QPS_RESET:		return IBV_QPS_RESET;
	case VRDMA_QPS_CONNECTING:	return IBV_QPS_INIT;
	case VRDMA_QPS_INIT:		return IBV_QPS_INIT;
	case VRDMA_QPS_RTR:		return IBV_QPS_RTR;
	case VRDMA_QPS_RTS:		return IBV_QPS_RTS;
	case VRDMA_QPS_ERR:		return IBV_QPS_ERR;
	}
	return IBV_QPS_UNKNOWN;
}

/* Attributes accepted; those vrdma has no use for (paths, timers, retry
 * counts, read depths) are kept for ibv_query_qp() only. */
#define VVB_MODIFY_MASK	(IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | \
			 IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_AV | IBV_QP_PATH_MTU | \
			 IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | \
			 IBV_QP_RQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER | \
			 IBV_QP_SQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_DEST_QPN | \
			 IBV_QP_QKEY)

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct vrdma_qp_attr va;
	struct vvb_qp *q;
	int vmask = VRDMA_QP_STATE, rc;

	if (!qp || !attr || (mask & ~VVB_MODIFY_MASK))
		return EINVAL;
	q = vvb_qp(qp);
	memset(&va, 0, sizeof(va));
	rc = vvb_state_to_vrdma((mask & IBV_QP_STATE) ? attr->qp_state : qp->state,
				&va.qp_state);
	if (rc)
		return rc;
	if ((mask & IBV_QP_PORT) && attr->port_num != VVB_PORT)
		return EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0)
		return EINVAL;
	/* A Q_Key is UD's (libvrdma refuses it on RC); a UD QP has no peer. */
	if (mask & IBV_QP_QKEY) {
		va.qkey = attr->qkey;
		vmask |= VRDMA_QP_QKEY;
	}
	if (q->ud && (mask & (IBV_QP_AV | IBV_QP_DEST_QPN)))
		return EINVAL;
	if (mask & IBV_QP_ACCESS_FLAGS) {
		int a;

		rc = vvb_map_access(attr->qp_access_flags, &a);
		if (rc)
			return rc;
		va.qp_access_flags = (unsigned int)a;
		vmask |= VRDMA_QP_ACCESS_FLAGS;
	}
	if (mask & (IBV_QP_AV | IBV_QP_DEST_QPN)) {
		/* Peers are named by GID: an address without GRH names none. */
		if ((mask & (IBV_QP_AV | IBV_QP_DEST_QPN)) != (IBV_QP_AV | IBV_QP_DEST_QPN) ||
		    !attr->ah_attr.is_global)
			return EINVAL;
		memcpy(va.dest_gid, attr->ah_attr.grh.dgid.raw, VRDMA_GID_LEN);
		va.dest_qp_num = attr->dest_qp_num;
		vmask |= VRDMA_QP_DEST;
	}
	if (mask & IBV_QP_RQ_PSN) {
		va.rq_psn = attr->rq_psn & 0xffffff;
		vmask |= VRDMA_QP_RQ_PSN;
	}
	if (mask & IBV_QP_SQ_PSN) {
		va.sq_psn = attr->sq_psn & 0xffffff;
		vmask |= VRDMA_QP_SQ_PSN;
	}
	rc = vrdma_modify_qp(q->vqp, &va, vmask);
	if (rc)
		return rc;

	vvb_lock(&q->sq_lock);
	if (mask & IBV_QP_STATE)
		q->attr.qp_state = attr->qp_state;
	if (mask & IBV_QP_ACCESS_FLAGS)
		q->attr.qp_access_flags = attr->qp_access_flags;
	if (mask & IBV_QP_AV)
		q->attr.ah_attr = attr->ah_attr;
	if (mask & IBV_QP_DEST_QPN)
		q->attr.dest_qp_num = attr->dest_qp_num;
	if (mask & IBV_QP_PATH_MTU)
		q->attr.path_mtu = attr->path_mtu;
	if (mask & IBV_QP_TIMEOUT)
		q->attr.timeout = attr->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		q->attr.retry_cnt = attr->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		q->attr.rnr_retry = attr->rnr_retry;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		q->attr.min_rnr_timer = attr->min_rnr_timer;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		q->attr.max_rd_atomic = attr->max_rd_atomic;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		q->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IBV_QP_RQ_PSN)
		q->attr.rq_psn = va.rq_psn;
	if (mask & IBV_QP_SQ_PSN)
		q->attr.sq_psn = va.sq_psn;
	if (mask & IBV_QP_QKEY)
		q->attr.qkey = attr->qkey;
	if (mask & IBV_QP_PKEY_INDEX)
		q->attr.pkey_index = attr->pkey_index;
	vvb_unlock(&q->sq_lock);
	if (mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		 struct ibv_qp_init_attr *init_attr)
{
	struct vrdma_qp_attr va;
	struct vvb_qp *q;
	int rc;

	(void)mask;				/* everything is cheap: fill all */
	if (!qp || !attr || !init_attr)
		return EINVAL;
	q = vvb_qp(qp);
	rc = vrdma_query_qp(q->vqp, &va);
	if (rc)
		return rc;
	vvb_lock(&q->sq_lock);
	*attr = q->attr;
	vvb_unlock(&q->sq_lock);
	attr->qp_state = vvb_state_from_vrdma(va.qp_state);
	attr->cur_qp_state = attr->qp_state;
	attr->dest_qp_num = va.dest_qp_num;
	attr->rq_psn = va.rq_psn;
	attr->sq_psn = va.sq_psn;
	attr->cap = q->cap;
	attr->port_num = VVB_PORT;
	if (q->ud)
		attr->qkey = va.qkey;
	qp->state = attr->qp_state;

	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = qp->qp_context;
	init_attr->send_cq = qp->send_cq;
	init_attr->recv_cq = qp->recv_cq;
	init_attr->srq = qp->srq;
	init_attr->cap = q->cap;
	init_attr->qp_type = qp->qp_type;
	init_attr->sq_sig_all = q->sq_sig_all;
	return 0;
}

int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp; (void)op; (void)flags;
	return 0;				/* no in-order guarantee promised */
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp; (void)ece;
	return EOPNOTSUPP;
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp; (void)ece;
	return EOPNOTSUPP;
}
