// SPDX-License-Identifier: MIT
/*
 * Connecting the verbs way: RESET -> INIT -> RTR -> RTS by
 * vrdma_modify_qp().  Only RTR (bind to the peer's GID and QP number) and
 * ERR (flush) reach dom0; the other states are the library's own.  A UD
 * QP reaches dom0 at RTR (UD_RTS with its Q_Key: it takes datagrams from
 * then on, as a verbs UD QP in RTR), with each new Q_Key after that, and
 * at ERR; its sends wait for RTS here (vrdma_post_send refuses them
 * before), dom0 has no need to tell RTR from RTS.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "vlib.h"

#define VLIB_MQ_MASK	(VRDMA_QP_STATE | VRDMA_QP_ACCESS_FLAGS | VRDMA_QP_DEST | \
			 VRDMA_QP_RQ_PSN | VRDMA_QP_SQ_PSN | VRDMA_QP_QKEY)
#define VLIB_PSN_MASK	0xffffffu

static int vlib_mq_cmd(struct vlib_qp *q, uint32_t state, const struct vrdma_qp_attr *a)
{
	struct vrdma_req req = { .opcode = VRDMA_CMD_MODIFY_QP, .handle = q->pub.handle };

	if (!q->pub.device->fe.feat_modify_qp)
		return -EOPNOTSUPP;	/* an older backend: wire.md, Versioning */
	req.u.modify_qp.state = state;
	if (state == VRDMA_MQ_UD_RTS) {
		req.u.modify_qp.qkey = a->qkey;
	} else if (a) {
		req.u.modify_qp.dest_qpn = a->dest_qp_num;
		memcpy(req.u.modify_qp.dest_gid, a->dest_gid, VRDMA_GID_LEN);
	}
	return vfe_cmd(&q->pub.device->fe, &req, NULL);
}

/* Which fields each transition allows (beyond STATE). */
static int vlib_mq_allowed(enum vrdma_qp_state from, enum vrdma_qp_state to)
{
	if (to == VRDMA_QPS_ERR)
		return 0;
	switch (from) {
	case VRDMA_QPS_RESET:
		return to == VRDMA_QPS_INIT ? VRDMA_QP_ACCESS_FLAGS :
		       to == VRDMA_QPS_RESET ? 0 : -1;
	case VRDMA_QPS_INIT:
		return to == VRDMA_QPS_INIT ? VRDMA_QP_ACCESS_FLAGS :
		       to == VRDMA_QPS_RTR ? VRDMA_QP_ACCESS_FLAGS | VRDMA_QP_DEST |
					     VRDMA_QP_RQ_PSN : -1;
	case VRDMA_QPS_RTR:
		return to == VRDMA_QPS_RTS ? VRDMA_QP_ACCESS_FLAGS | VRDMA_QP_SQ_PSN : -1;
	case VRDMA_QPS_RTS:
		return to == VRDMA_QPS_RTS ? VRDMA_QP_ACCESS_FLAGS : -1;
	default:
		return -1;	/* CONNECTING (vrdma_connect owns it), ERR */
	}
}

/* ... of a UD QP: a Q_Key anywhere on the way, no peer (verbs' UD). */
static int vlib_mq_allowed_ud(enum vrdma_qp_state from, enum vrdma_qp_state to)
{
	if (to == VRDMA_QPS_ERR)
		return 0;
	switch (from) {
	case VRDMA_QPS_RESET:
		return to == VRDMA_QPS_INIT ? VRDMA_QP_QKEY : to == VRDMA_QPS_RESET ? 0 : -1;
	case VRDMA_QPS_INIT:
		return to == VRDMA_QPS_INIT || to == VRDMA_QPS_RTR ? VRDMA_QP_QKEY : -1;
	case VRDMA_QPS_RTR:
		return to == VRDMA_QPS_RTS ? VRDMA_QP_QKEY | VRDMA_QP_SQ_PSN : -1;
	case VRDMA_QPS_RTS:
		return to == VRDMA_QPS_RTS ? VRDMA_QP_QKEY : -1;
	default:
		return -1;
	}
}

/* A UD QP's transition: dom0 hears of RTR (and a new Q_Key from then on). */
static int vlib_modify_ud(struct vlib_qp *q, enum vrdma_qp_state from,
			  const struct vrdma_qp_attr *attr, int mask)
{
	enum vrdma_qp_state to = attr->qp_state;
	struct vrdma_qp_attr a = q->va;
	int allowed = vlib_mq_allowed_ud(from, to), rc;

	if (allowed < 0 || (mask & ~(VRDMA_QP_STATE | allowed)) ||
	    (from == VRDMA_QPS_RESET && to == VRDMA_QPS_INIT && !(mask & VRDMA_QP_QKEY)))
		return -EINVAL;
	/* A controlled Q_Key (high bit set) takes CAP_NET_RAW in the kernel's
	 * verbs, and no guest's program is trusted so; in a send WR's
	 * remote_qkey the bit means the QP's own (VRDMA_QKEY_OWN). */
	if ((mask & VRDMA_QP_QKEY) && (attr->qkey & VRDMA_QKEY_OWN))
		return -EPERM;
	if (mask & VRDMA_QP_QKEY)
		a.qkey = attr->qkey;
	if ((to == VRDMA_QPS_RTR || to == VRDMA_QPS_RTS) &&
	    ((from != VRDMA_QPS_RTR && from != VRDMA_QPS_RTS) || (mask & VRDMA_QP_QKEY))) {
		rc = vlib_mq_cmd(q, VRDMA_MQ_UD_RTS, &a);
		if (rc)
			return rc;
	} else if (to == VRDMA_QPS_ERR) {
		rc = vlib_mq_cmd(q, VRDMA_MQ_ERR, NULL);
		if (rc)
			return rc;
	}
	q->va.qkey = a.qkey;
	if (mask & VRDMA_QP_SQ_PSN)
		q->va.sq_psn = attr->sq_psn & VLIB_PSN_MASK;
	q->va.qp_state = to;
	if (to == VRDMA_QPS_ERR)
		vlib_qp_to_err(q);
	else
		__atomic_compare_exchange_n(&q->pub.state, &from, to, false,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return 0;
}

static int vlib_modify(struct vlib_qp *q, const struct vrdma_qp_attr *attr, int mask)
{
	enum vrdma_qp_state from, to = attr->qp_state;
	int allowed, rc;

	if (!(mask & VRDMA_QP_STATE) || (mask & ~VLIB_MQ_MASK))
		return -EINVAL;
	if ((mask & VRDMA_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~(unsigned)(VRDMA_ACCESS_LOCAL_WRITE |
		VRDMA_ACCESS_REMOTE_WRITE | VRDMA_ACCESS_REMOTE_READ |
		VRDMA_ACCESS_REMOTE_ATOMIC)))
		return -EINVAL;
	if (vfe_is_broken(&q->pub.device->fe))
		return -EIO;
	from = __atomic_load_n(&q->pub.state, __ATOMIC_ACQUIRE);
	if (q->ud)
		return vlib_modify_ud(q, from, attr, mask);
	if (mask & VRDMA_QP_QKEY)
		return -EINVAL;		/* UD only */
	if (from == VRDMA_QPS_RTS && q->va.qp_state != VRDMA_QPS_RTS &&
	    to != VRDMA_QPS_ERR)
		return -EINVAL;		/* connected by vrdma_connect() */
	allowed = vlib_mq_allowed(from, to);
	if (allowed < 0 || (mask & ~(VRDMA_QP_STATE | allowed)))
		return -EINVAL;
	if (from == VRDMA_QPS_INIT && to == VRDMA_QPS_RTR && !(mask & VRDMA_QP_DEST))
		return -EINVAL;
	if (to == VRDMA_QPS_RTR && (!attr->dest_qp_num || attr->dest_qp_num > VLIB_PSN_MASK))
		return -EINVAL;

	if (to == VRDMA_QPS_RTR) {
		rc = vlib_mq_cmd(q, VRDMA_MQ_RTR, attr);
		if (rc)
			return rc;
		memcpy(q->va.dest_gid, attr->dest_gid, VRDMA_GID_LEN);
		q->va.dest_qp_num = attr->dest_qp_num;
	} else if (to == VRDMA_QPS_ERR) {
		rc = vlib_mq_cmd(q, VRDMA_MQ_ERR, NULL);
		if (rc)
			return rc;
	}
	if (mask & VRDMA_QP_ACCESS_FLAGS)
		q->va.qp_access_flags = attr->qp_access_flags;
	if (mask & VRDMA_QP_RQ_PSN)
		q->va.rq_psn = attr->rq_psn & VLIB_PSN_MASK;
	if (mask & VRDMA_QP_SQ_PSN)
		q->va.sq_psn = attr->sq_psn & VLIB_PSN_MASK;
	q->va.qp_state = to;
	/* A QP_ERROR event may have moved it to ERR meanwhile: ERR stays. */
	if (to == VRDMA_QPS_ERR)
		vlib_qp_to_err(q);
	else
		__atomic_compare_exchange_n(&q->pub.state, &from, to, false,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return 0;
}

int vrdma_modify_qp(struct vrdma_qp *qp, const struct vrdma_qp_attr *attr, int mask)
{
	struct vlib_qp *q;
	int rc;

	if (!qp || !qp->device || !attr)
		return EINVAL;
	q = vlib_qp(qp);
	/* Two modifies do not interleave (posting reads only the state). */
	pthread_mutex_lock(&q->sq_lock);
	rc = vlib_modify(q, attr, mask);
	pthread_mutex_unlock(&q->sq_lock);
	return vlib_ret(rc);
}

int vrdma_query_qp(struct vrdma_qp *qp, struct vrdma_qp_attr *attr)
{
	struct vlib_qp *q;

	if (!qp || !qp->device || !attr)
		return EINVAL;
	q = vlib_qp(qp);
	/* qkey only for a UD QP: a program built before the field existed
	 * has no room for it, and no UD QP either. */
	pthread_mutex_lock(&q->sq_lock);
	memcpy(attr, &q->va, offsetof(struct vrdma_qp_attr, qkey));
	if (q->ud)
		attr->qkey = q->va.qkey;
	pthread_mutex_unlock(&q->sq_lock);
	attr->qp_state = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
	attr->cap = q->cap;
	return 0;
}
