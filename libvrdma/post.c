// SPDX-License-Identifier: MIT
/* Posting work requests: check each WR locally, convert it to the wire
 * format, and publish the whole chain as one batch (one notification). */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "vlib.h"

static int vlib_sges(struct vrdma_req *r, const struct vrdma_sge *sg, int num_sge,
		     uint32_t max_sge, uint32_t *total)
{
	uint64_t sum = 0;
	int i;

	if (num_sge < 0 || (uint32_t)num_sge > max_sge || (num_sge && !sg))
		return -EINVAL;
	r->num_sge = (uint8_t)num_sge;
	for (i = 0; i < num_sge; i++) {
		r->u.wr.sge[i].addr = sg[i].addr;
		r->u.wr.sge[i].length = sg[i].length;
		r->u.wr.sge[i].lkey = sg[i].lkey;
		sum += sg[i].length;
	}
	if (sum > UINT32_MAX)
		return -EINVAL;
	*total = (uint32_t)sum;
	return 0;
}

/* Remember what the completion of this slot must say. */
static void vlib_slot_set(struct vlib_slot *s, uint64_t wr_id, uint32_t len, uint8_t wc)
{
	s->wr_id = wr_id;
	s->len = len;
	s->wc = wc;
}

/* What a send opcode becomes on the wire, what its successful completion
 * says, and which fields of the WR it carries: one lookup per WR. */
enum { VLIB_SOP_RDMA = 1, VLIB_SOP_ATOMIC = 2, VLIB_SOP_IMM = 4 };

static const struct vlib_sop {
	uint8_t op;		/* VRDMA_OP_* */
	uint8_t wc;		/* VRDMA_WC_* */
	uint8_t has;		/* VLIB_SOP_* */
} vlib_sops[VRDMA_WR_ATOMIC_FETCH_AND_ADD + 1] = {	/* every opcode */
	[VRDMA_WR_SEND]		= { VRDMA_OP_SEND, VRDMA_WC_SEND, 0 },
	[VRDMA_WR_SEND_WITH_IMM] = { VRDMA_OP_SEND_IMM, VRDMA_WC_SEND, VLIB_SOP_IMM },
	[VRDMA_WR_RDMA_WRITE]	= { VRDMA_OP_WRITE, VRDMA_WC_WRITE, VLIB_SOP_RDMA },
	[VRDMA_WR_RDMA_WRITE_WITH_IMM] = { VRDMA_OP_WRITE_IMM, VRDMA_WC_WRITE,
					   VLIB_SOP_RDMA | VLIB_SOP_IMM },
	[VRDMA_WR_RDMA_READ]	= { VRDMA_OP_READ, VRDMA_WC_READ, VLIB_SOP_RDMA },
	[VRDMA_WR_ATOMIC_CMP_AND_SWP] = { VRDMA_OP_CMP_SWAP, VRDMA_WC_CMP_SWAP,
					  VLIB_SOP_ATOMIC },
	[VRDMA_WR_ATOMIC_FETCH_AND_ADD] = { VRDMA_OP_FETCH_ADD, VRDMA_WC_FETCH_ADD,
					    VLIB_SOP_ATOMIC },
};

/* The send flags go on the wire as they are. */
_Static_assert(VRDMA_SEND_SIGNALED == VRDMA_WR_F_SIGNALED &&
	       VRDMA_SEND_FENCE == VRDMA_WR_F_FENCE, "send flags are wire flags");

/*
 * Check a send WR: its opcode's entry, its SGE count and list (read once:
 * the fill uses these, so another thread rewriting the WR cannot make it
 * write past the entry) and its total length, or -EINVAL.
 */
static int vlib_send_check(const struct vlib_qp *q, const struct vrdma_send_wr *wr,
			   const struct vlib_sop **sop, uint32_t *total, int *nsge,
			   const struct vrdma_sge **sgl)
{
	const struct vrdma_sge *sg = wr->sg_list;
	int i, num_sge = wr->num_sge;
	uint64_t sum = 0;

	if ((unsigned)wr->opcode >= sizeof(vlib_sops) / sizeof(vlib_sops[0]) ||
	    (wr->send_flags & ~(unsigned)VRDMA_WR_F_ALL))
		return -EINVAL;
	*sop = &vlib_sops[wr->opcode];
	/* Negative counts wrap to large ones. */
	if ((uint32_t)num_sge > q->cap.max_send_sge || (num_sge && !sg))
		return -EINVAL;
	*nsge = num_sge;
	*sgl = sg;
	if (num_sge == 1) {			/* the common case */
		*total = sg->length;
	} else {
		for (i = 0; i < num_sge; i++)
			sum += sg[i].length;
		if (sum > UINT32_MAX)
			return -EINVAL;
		*total = (uint32_t)sum;
	}
	/* One 8-byte local buffer, as verbs atomics. */
	if (((*sop)->has & VLIB_SOP_ATOMIC) && (num_sge != 1 || *total != 8))
		return -EINVAL;
	return 0;
}

/*
 * Write a checked send WR into its ring entry.  Every byte of the entry
 * is written (fields the opcode does not use, reserved bytes and unused
 * SGEs as zero): nothing stale or of ours leaks to dom0.
 */
static void vlib_send_fill(const struct vlib_qp *q, const struct vrdma_send_wr *wr,
			   const struct vlib_sop *sop, int nsge, const struct vrdma_sge *sg,
			   struct vrdma_req *r)
{
	struct vrdma_wr *w = &r->u.wr;
	int i;

	_Static_assert(sizeof(*r) == 16 + sizeof(*w) &&
		       offsetof(struct vrdma_wr, sge) ==
		       offsetof(struct vrdma_wr, reserved) + sizeof(w->reserved) &&
		       offsetof(struct vrdma_wr, sge) + sizeof(w->sge) == sizeof(*w),
		       "a send entry is header + wr, reserved bytes and SGEs last");
	_Static_assert(sizeof(struct vrdma_sge) == sizeof(struct vrdma_wire_sge),
		       "SGEs copy as they are");
	r->opcode = sop->op;
	r->num_sge = (uint8_t)nsge;
	r->flags = (uint16_t)wr->send_flags | q->sq_sig_all;
	r->handle = q->pub.handle;
	r->id = wr->wr_id;
	if (sop->has & VLIB_SOP_ATOMIC) {
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
		w->rkey = wr->wr.atomic.rkey;
	} else {
		w->remote_addr = sop->has & VLIB_SOP_RDMA ? wr->wr.rdma.remote_addr : 0;
		w->compare_add = 0;
		w->swap = 0;
		w->rkey = sop->has & VLIB_SOP_RDMA ? wr->wr.rdma.rkey : 0;
	}
	w->imm_data = sop->has & VLIB_SOP_IMM ? wr->imm_data : 0;
	/* reserved and the SGEs zero (fixed-size stores), then the WR's. */
	memset((char *)w + offsetof(struct vrdma_wr, reserved), 0,
	       sizeof(*w) - offsetof(struct vrdma_wr, reserved));
	if (nsge == 1)
		memcpy(&w->sge[0], sg, sizeof(w->sge[0]));
	else
		for (i = 0; i < nsge; i++)
			memcpy(&w->sge[i], &sg[i], sizeof(w->sge[i]));
}

int vrdma_post_send(struct vrdma_qp *qp, struct vrdma_send_wr *wr,
		    struct vrdma_send_wr **bad_wr)
{
	const struct vrdma_sge *sg = NULL;
	const struct vlib_sop *sop;
	struct vrdma_device *dev;
	struct vrdma_req *r;
	struct vlib_qp *q;
	uint32_t total;
	int rc = 0, nsge = 0;

	if (bad_wr)
		*bad_wr = wr;
	if (!qp || !qp->device || !wr || !bad_wr)
		return EINVAL;
	q = vlib_qp(qp);
	dev = qp->device;
	/* The ring lock serialises posting (one lock per WR chain, not two):
	 * sq_posted and the send slots change only under it. */
	vfe_ring_lock(&dev->fe);
	for (; wr; wr = wr->next) {
		uint32_t retired = __atomic_load_n(&q->sq_retired, __ATOMIC_ACQUIRE);
		enum vrdma_qp_state st = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
		int err;		/* not rc: its address stays in here */

		/* In ERR dom0 flushes it (WR_FLUSH_ERR), as verbs providers do. */
		if (st != VRDMA_QPS_RTS && st != VRDMA_QPS_ERR) {
			rc = -EINVAL;
			break;
		}
		/* A bad WR says EINVAL even when the queue is full. */
		rc = vlib_send_check(q, wr, &sop, &total, &nsge, &sg);
		if (rc)
			break;
		if (q->sq_posted - retired >= q->cap.max_send_wr) {
			rc = -ENOMEM;
			break;
		}
		/* Built in the ring entry itself; published at unlock. */
		r = vfe_ring_slot(&dev->fe, &err);
		if (!r) {
			rc = err;
			break;
		}
		vlib_send_fill(q, wr, sop, nsge, sg, r);
		vfe_ring_commit(&dev->fe);
		vlib_slot_set(&q->sq_slot[q->sq_posted & q->sq_mask], wr->wr_id, total,
			      sop->wc);
		__atomic_store_n(&q->sq_posted, q->sq_posted + 1, __ATOMIC_RELEASE);
	}
	if (vfe_ring_unlock(&dev->fe) && !rc)
		rc = -EIO;
	*bad_wr = wr;
	return vlib_ret(rc);
}

int vrdma_post_recv(struct vrdma_qp *qp, struct vrdma_recv_wr *wr,
		    struct vrdma_recv_wr **bad_wr)
{
	struct vrdma_device *dev;
	struct vrdma_req r;
	struct vlib_qp *q;
	uint32_t total;
	int rc = 0;

	if (bad_wr)
		*bad_wr = wr;
	if (!qp || !qp->device || !wr || !bad_wr)
		return EINVAL;
	q = vlib_qp(qp);
	dev = qp->device;
	vfe_ring_lock(&dev->fe);
	for (; wr; wr = wr->next) {
		uint32_t retired = __atomic_load_n(&q->rq_retired, __ATOMIC_ACQUIRE);

		if (q->srq) {
			rc = -EINVAL;	/* an SRQ's QP: vrdma_post_srq_recv() */
			break;
		}
		memset(&r, 0, sizeof(r));
		r.opcode = VRDMA_OP_RECV;
		r.handle = qp->handle;
		r.id = wr->wr_id;
		rc = vlib_sges(&r, wr->sg_list, wr->num_sge, q->cap.max_recv_sge, &total);
		if (rc)
			break;
		if (q->rq_posted - retired >= q->cap.max_recv_wr) {
			rc = -ENOMEM;
			break;
		}
		rc = vfe_ring_put(&dev->fe, &r);
		if (rc)
			break;
		vlib_slot_set(&q->rq_slot[q->rq_posted & q->rq_mask], r.id, total,
			      VRDMA_WC_RECV);
		__atomic_store_n(&q->rq_posted, q->rq_posted + 1, __ATOMIC_RELEASE);
	}
	if (vfe_ring_unlock(&dev->fe) && !rc)
		rc = -EIO;
	*bad_wr = wr;
	return vlib_ret(rc);
}
