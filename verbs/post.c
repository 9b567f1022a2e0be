// SPDX-License-Identifier: MIT
/*
 * ibv_post_send / ibv_post_recv: convert a chain into libvrdma WRs in
 * the QP's scratch array, at most a queue's depth at a time (more could
 * not be outstanding anyway), and post it; a single send WR, the usual
 * call, is converted on the stack.  Inline data is copied into the QP's
 * registered bounce slots here, at post time, as verbs requires.
 */
#include <errno.h>
#include <string.h>

#include "vvb.h"

uint8_t *vvb_inline_slot(struct vvb_qp *q, uint32_t i)
{
	return q->ibuf + (size_t)((q->sq_count + i) % (2 * (uint64_t)q->sq_depth)) *
	       q->slot_size;
}

/* Post swr[0..n) as one chain (sq_lock held); *posted is how many went. */
int vvb_sq_post(struct vvb_qp *q, uint32_t n, uint32_t *posted)
{
	struct vrdma_send_wr *bad = NULL;
	uint32_t i;
	long sig;
	int rc;

	*posted = 0;
	if (!n)
		return 0;
	for (i = 0; i < n; i++)
		q->swr[i].next = i + 1 < n ? &q->swr[i + 1] : NULL;
	rc = vrdma_post_send(q->vqp, q->swr, &bad);
	*posted = rc ? (uint32_t)(bad ? bad - q->swr : 0) : n;
	q->sq_count += *posted;
	for (i = 0, sig = 0; i < *posted; i++)
		sig += q->sq_sig_all || (q->swr[i].send_flags & VRDMA_SEND_SIGNALED);
	vvb_cq_due(vvb_cq(q->qpx.qp_base.send_cq), sig);
	return rc;
}

/* What each verbs send opcode is for libvrdma, in one lookup: 0 for
 * those it has not (LOCAL_INV, BIND_MW, SEND_WITH_INV, TSO, ...). */
enum { VVB_SOP_OK = 1, VVB_SOP_INLINE = 2, VVB_SOP_ATOMIC = 4 };

static const struct vvb_sop {
	uint8_t has;			/* VVB_SOP_* */
	uint8_t op;			/* enum vrdma_wr_opcode */
} vvb_sops[IBV_WR_ATOMIC_FETCH_AND_ADD + 1] = {
	[IBV_WR_SEND]		= { VVB_SOP_OK | VVB_SOP_INLINE, VRDMA_WR_SEND },
	[IBV_WR_SEND_WITH_IMM]	= { VVB_SOP_OK | VVB_SOP_INLINE, VRDMA_WR_SEND_WITH_IMM },
	[IBV_WR_RDMA_WRITE]	= { VVB_SOP_OK | VVB_SOP_INLINE, VRDMA_WR_RDMA_WRITE },
	[IBV_WR_RDMA_WRITE_WITH_IMM] = { VVB_SOP_OK | VVB_SOP_INLINE,
					 VRDMA_WR_RDMA_WRITE_WITH_IMM },
	[IBV_WR_RDMA_READ]	= { VVB_SOP_OK, VRDMA_WR_RDMA_READ },
	[IBV_WR_ATOMIC_CMP_AND_SWP] = { VVB_SOP_OK | VVB_SOP_ATOMIC,
					VRDMA_WR_ATOMIC_CMP_AND_SWP },
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = { VVB_SOP_OK | VVB_SOP_ATOMIC,
					  VRDMA_WR_ATOMIC_FETCH_AND_ADD },
};

/*
 * An inline WR: its data copied now into the registered slot of the
 * i-th WR posted next (the program may reuse its buffers once the call
 * returns), sent from there through isge.  Off the hot path.
 */
static __attribute__((noinline)) int
vvb_convert_inline(struct vvb_qp *q, const struct ibv_send_wr *w, struct vrdma_send_wr *v,
		   struct vrdma_sge *isge, uint32_t i)
{
	size_t total = 0;
	uint8_t *slot;
	int k;

	v->sg_list = isge;
	v->num_sge = 0;
	for (k = 0; k < w->num_sge; k++)
		total += w->sg_list[k].length;
	if (total > q->cap.max_inline_data)
		return EINVAL;
	if (!total)
		return 0;			/* num_sge 0: a zero-byte message */
	slot = vvb_inline_slot(q, i);
	total = 0;
	for (k = 0; k < w->num_sge; k++) {
		memcpy(slot + total, (void *)(uintptr_t)w->sg_list[k].addr,
		       w->sg_list[k].length);
		total += w->sg_list[k].length;
	}
	isge->addr = (uintptr_t)slot;
	isge->length = (uint32_t)total;
	isge->lkey = q->imr->lkey;
	v->num_sge = 1;
	return 0;
}

/*
 * One verbs WR into v, the i-th WR posted next (sq_lock held).  Its SGE
 * list is the program's own (the same layout, vvb.h): libvrdma reads it,
 * each field once, before vrdma_post_send() returns.  Inline data goes
 * through isge instead.
 */
static inline int vvb_convert_send(struct vvb_qp *q, const struct ibv_send_wr *w,
				   struct vrdma_send_wr *v, struct vrdma_sge *isge, uint32_t i)
{
	const unsigned int known = IBV_SEND_SIGNALED | IBV_SEND_FENCE |
				   IBV_SEND_SOLICITED | IBV_SEND_INLINE;
	unsigned int flags = w->send_flags;
	struct vvb_sop sop = { 0, 0 };

	if (vvb_likely((unsigned int)w->opcode < sizeof(vvb_sops) / sizeof(vvb_sops[0])))
		sop = vvb_sops[w->opcode];
	if (vvb_unlikely(!(sop.has & VVB_SOP_OK) || (flags & ~known) || w->num_sge < 0))
		return EINVAL;
	*v = (struct vrdma_send_wr){
		.wr_id = w->wr_id,
		.sg_list = (struct vrdma_sge *)w->sg_list,
		.num_sge = w->num_sge,
		.opcode = (enum vrdma_wr_opcode)sop.op,
		.send_flags = ((flags & IBV_SEND_SIGNALED) ? VRDMA_SEND_SIGNALED : 0) |
			      ((flags & IBV_SEND_FENCE) ? VRDMA_SEND_FENCE : 0),
		.imm_data = w->imm_data,
	};
	if (sop.has & VVB_SOP_ATOMIC) {
		v->wr.atomic.remote_addr = w->wr.atomic.remote_addr;
		v->wr.atomic.compare_add = w->wr.atomic.compare_add;
		v->wr.atomic.swap = w->wr.atomic.swap;
		v->wr.atomic.rkey = w->wr.atomic.rkey;
	} else if (vvb_unlikely(q->ud)) {
		/* libvrdma checks the AH (NULL, destroyed: EINVAL) */
		v->wr.ud.ah = w->wr.ud.ah ? vvb_ah(w->wr.ud.ah)->vah : NULL;
		v->wr.ud.remote_qpn = w->wr.ud.remote_qpn;
		v->wr.ud.remote_qkey = w->wr.ud.remote_qkey;
	} else {
		v->wr.rdma.remote_addr = w->wr.rdma.remote_addr;
		v->wr.rdma.rkey = w->wr.rdma.rkey;
	}
	if (vvb_unlikely((flags & IBV_SEND_INLINE) && (sop.has & VVB_SOP_INLINE)))
		return vvb_convert_inline(q, w, v, isge, i);
	if (vvb_unlikely((uint32_t)w->num_sge > q->cap.max_send_sge))
		return EINVAL;
	return 0;
}

/* A chain of more than one WR: at most a queue's depth at a time goes
 * through the scratch array (sq_lock held). */
static __attribute__((noinline)) int
vvb_post_chain(struct vvb_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct ibv_send_wr *w = wr, *start;
	uint32_t n, posted;
	int rc = 0, rc2;

	while (w && !rc) {
		start = w;
		for (n = 0; w && n < q->sq_depth; w = w->next, n++) {
			rc = vvb_convert_send(q, w, &q->swr[n], &q->ssge[n], n);
			if (rc)
				break;
		}
		/* the WRs before a bad one are posted, as verbs promises */
		rc2 = vvb_sq_post(q, n, &posted);
		if (rc2) {
			for (w = start; posted--; w = w->next)
				;
			rc = rc2;
		}
	}
	if (rc && bad)
		*bad = w;
	return rc;
}

/*
 * ibv_post_send.  The usual call posts one WR: converted on the stack and
 * posted under one take of the QP's lock, which keeps the inline slots
 * in libvrdma's order when several threads post to the QP.
 */
int vvb_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct vvb_qp *q = vvb_qp(qp);
	struct vrdma_send_wr v, *vbad;
	int rc;

	vvb_lock(&q->sq_lock);
	if (vvb_unlikely(!wr || wr->next)) {
		rc = vvb_post_chain(q, wr, bad);
		vvb_unlock(&q->sq_lock);
		return rc;
	}
	rc = vvb_convert_send(q, wr, &v, q->ssge, 0);
	if (vvb_likely(!rc))
		rc = vrdma_post_send(q->vqp, &v, &vbad);
	if (vvb_likely(!rc)) {
		q->sq_count++;
		if (q->sq_sig_all || (v.send_flags & VRDMA_SEND_SIGNALED))
			vvb_cq_due(vvb_cq(qp->send_cq), 1);
	}
	vvb_unlock(&q->sq_lock);
	if (vvb_unlikely(rc) && bad)
		*bad = wr;
	return rc;
}

/*
 * A chain of ibv_recv_wr posted through libvrdma: converted at most max at
 * a time into rwr[] (max_sge sges each from rsge[]), posted with post(obj,
 * ...), and *bad names the first WR not posted.  Shared by QPs and SRQs.
 */
int vvb_recv_chain(struct ibv_recv_wr *wr, struct ibv_recv_wr **bad,
		   struct vrdma_recv_wr *rwr, struct vrdma_sge *rsge, uint32_t max,
		   uint32_t max_sge, vvb_recv_post_fn *post, void *obj)
{
	struct ibv_recv_wr *w = wr, *start;
	struct vrdma_recv_wr *vbad;
	uint32_t n, i, posted;
	int rc = 0, rc2, k;

	while (w && !rc) {
		start = w;
		for (n = 0; w && n < max; w = w->next, n++) {
			struct vrdma_sge *sge = &rsge[(size_t)n * max_sge];

			if (w->num_sge < 0 || (uint32_t)w->num_sge > max_sge) {
				rc = EINVAL;
				break;
			}
			for (k = 0; k < w->num_sge; k++) {
				sge[k].addr = w->sg_list[k].addr;
				sge[k].length = w->sg_list[k].length;
				sge[k].lkey = w->sg_list[k].lkey;
			}
			rwr[n].wr_id = w->wr_id;
			rwr[n].sg_list = sge;
			rwr[n].num_sge = w->num_sge;
		}
		if (!n)
			break;
		for (i = 0; i < n; i++)
			rwr[i].next = i + 1 < n ? &rwr[i + 1] : NULL;
		vbad = NULL;
		rc2 = post(obj, rwr, &vbad);
		if (rc2) {
			posted = vbad ? (uint32_t)(vbad - rwr) : 0;
			for (w = start; posted--; w = w->next)
				;
			rc = rc2;
		}
	}
	if (rc && bad)
		*bad = w;
	return rc;
}

static int vvb_qp_post_recv(void *obj, struct vrdma_recv_wr *wr, struct vrdma_recv_wr **bad)
{
	return vrdma_post_recv(obj, wr, bad);
}

int vvb_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct vvb_qp *q = vvb_qp(qp);
	int rc;

	if (q->srq) {				/* ibv_post_srq_recv() feeds it */
		if (bad)
			*bad = wr;
		return EINVAL;
	}
	pthread_mutex_lock(&q->rq_lock);
	rc = vvb_recv_chain(wr, bad, q->rwr, q->rsge, q->rq_depth, q->cap.max_recv_sge,
			    vvb_qp_post_recv, q->vqp);
	pthread_mutex_unlock(&q->rq_lock);
	return rc;
}
