// SPDX-License-Identifier: MIT
/* Posting work requests: check each WR locally, convert it to the wire
 * format, and publish the whole chain as one batch (one notification). */
#include <errno.h>
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

/* The completion opcode dom0 reports for a send WR that succeeded. */
static uint8_t vlib_send_wc(uint8_t op)
{
	switch (op) {
	case VRDMA_OP_WRITE:
	case VRDMA_OP_WRITE_IMM:	return VRDMA_WC_WRITE;
	case VRDMA_OP_READ:		return VRDMA_WC_READ;
	case VRDMA_OP_CMP_SWAP:		return VRDMA_WC_CMP_SWAP;
	case VRDMA_OP_FETCH_ADD:	return VRDMA_WC_FETCH_ADD;
	default:			return VRDMA_WC_SEND;
	}
}

/* Remember what the completion of this slot must say. */
static void vlib_slot_set(struct vlib_slot *s, uint64_t wr_id, uint32_t len, uint8_t wc)
{
	s->wr_id = wr_id;
	s->len = len;
	s->wc = wc;
}

static int vlib_send_req(const struct vlib_qp *q, const struct vrdma_send_wr *wr,
			 struct vrdma_req *r, uint32_t *total)
{
	const unsigned known = VRDMA_SEND_SIGNALED | VRDMA_SEND_FENCE;
	bool atomic = false;
	int rc;

	memset(r, 0, sizeof(*r));
	switch (wr->opcode) {
	case VRDMA_WR_SEND:		r->opcode = VRDMA_OP_SEND; break;
	case VRDMA_WR_SEND_WITH_IMM:	r->opcode = VRDMA_OP_SEND_IMM; break;
	case VRDMA_WR_RDMA_WRITE:	r->opcode = VRDMA_OP_WRITE; break;
	case VRDMA_WR_RDMA_WRITE_WITH_IMM: r->opcode = VRDMA_OP_WRITE_IMM; break;
	case VRDMA_WR_RDMA_READ:	r->opcode = VRDMA_OP_READ; break;
	case VRDMA_WR_ATOMIC_CMP_AND_SWP:
		r->opcode = VRDMA_OP_CMP_SWAP;
		atomic = true;
		break;
	case VRDMA_WR_ATOMIC_FETCH_AND_ADD:
		r->opcode = VRDMA_OP_FETCH_ADD;
		atomic = true;
		break;
	default:
		return -EINVAL;
	}
	if (wr->send_flags & ~known)
		return -EINVAL;
	if ((wr->send_flags & VRDMA_SEND_SIGNALED) || q->sq_sig_all)
		r->flags |= VRDMA_WR_F_SIGNALED;
	if (wr->send_flags & VRDMA_SEND_FENCE)
		r->flags |= VRDMA_WR_F_FENCE;
	r->handle = q->pub.handle;
	r->id = wr->wr_id;
	rc = vlib_sges(r, wr->sg_list, wr->num_sge, q->cap.max_send_sge, total);
	if (rc)
		return rc;
	if (atomic) {
		/* One 8-byte local buffer, as verbs atomics. */
		if (wr->num_sge != 1 || *total != 8)
			return -EINVAL;
		r->u.wr.remote_addr = wr->wr.atomic.remote_addr;
		r->u.wr.rkey = wr->wr.atomic.rkey;
		r->u.wr.compare_add = wr->wr.atomic.compare_add;
		r->u.wr.swap = wr->wr.atomic.swap;
	} else if (r->opcode != VRDMA_OP_SEND && r->opcode != VRDMA_OP_SEND_IMM) {
		r->u.wr.remote_addr = wr->wr.rdma.remote_addr;
		r->u.wr.rkey = wr->wr.rdma.rkey;
	}
	if (r->opcode == VRDMA_OP_SEND_IMM || r->opcode == VRDMA_OP_WRITE_IMM)
		r->u.wr.imm_data = wr->imm_data;
	return 0;
}

int vrdma_post_send(struct vrdma_qp *qp, struct vrdma_send_wr *wr,
		    struct vrdma_send_wr **bad_wr)
{
	struct vrdma_req tmp, *r;
	struct vrdma_device *dev;
	struct vlib_qp *q;
	uint32_t total;
	int rc = 0;

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

		/* In ERR dom0 flushes it (WR_FLUSH_ERR), as verbs providers do. */
		if (st != VRDMA_QPS_RTS && st != VRDMA_QPS_ERR) {
			rc = -EINVAL;
			break;
		}
		if (q->sq_posted - retired >= q->cap.max_send_wr) {
			/* A bad WR says EINVAL even when the queue is full. */
			rc = vlib_send_req(q, wr, &tmp, &total);
			if (!rc)
				rc = -ENOMEM;
			break;
		}
		/* Built in the ring entry itself; published at unlock. */
		r = vfe_ring_slot(&dev->fe, &rc);
		if (!r)
			break;
		rc = vlib_send_req(q, wr, r, &total);
		if (rc)
			break;
		vfe_ring_commit(&dev->fe);
		vlib_slot_set(&q->sq_slot[q->sq_posted & q->sq_mask], r->id, total,
			      vlib_send_wc(r->opcode));
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
