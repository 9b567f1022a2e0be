// SPDX-License-Identifier: MIT
/* Posting work requests: check each WR locally, convert it to the wire
 * format, and publish the whole chain as one batch (one notification). */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "vlib.h"

/* Where SGE i of a WR goes: its entry, or the extension entries after it. */
static inline struct vrdma_wire_sge *vlib_wsge(struct vrdma_wire_sge *ws,
					       struct vrdma_sge_ext *x, uint32_t i)
{
	return i < VRDMA_WR_SGE ? &ws[i] :
	       &x[(i - VRDMA_WR_SGE) / VRDMA_EXT_SGE].sge[(i - VRDMA_WR_SGE) % VRDMA_EXT_SGE];
}

/* An SGE list into ws[] (and x[] past VRDMA_WR_SGE), each field read once
 * (another thread of the program may be changing it: what is summed is
 * what goes out); every SGE of the entries used that the list does not
 * fill is zero.  0 or -EINVAL. */
static int vlib_put_sges(const struct vrdma_sge *sg, uint32_t nsge, uint32_t max_sge,
			 struct vrdma_wire_sge *ws, struct vrdma_sge_ext *x, uint32_t *total)
{
	uint32_t i, end = VRDMA_WR_SGE + VRDMA_SGE_EXT_ENTRIES(nsge) * VRDMA_EXT_SGE;
	uint64_t sum = 0;

	/* A negative count came in as a large one. */
	if (nsge > max_sge || (nsge && !sg))
		return -EINVAL;
	for (i = 0; i < end; i++) {
		struct vrdma_wire_sge *w = vlib_wsge(ws, x, i);
		uint64_t addr = i < nsge ? VLIB_ONCE(sg[i].addr) : 0;
		uint32_t len = i < nsge ? VLIB_ONCE(sg[i].length) : 0;
		uint32_t lkey = i < nsge ? VLIB_ONCE(sg[i].lkey) : 0;

		w->addr = addr;
		w->length = len;
		w->lkey = lkey;
		sum += len;
	}
	if (sum > UINT32_MAX)
		return -EINVAL;
	*total = (uint32_t)sum;
	return 0;
}

/* A receive's SGE list into @r and x[]; *nx gets the extension entries. */
int vlib_sges(struct vrdma_req *r, struct vrdma_sge_ext *x, uint32_t *nx,
	      const struct vrdma_sge *sg, int num_sge, uint32_t max_sge, uint32_t *total)
{
	int rc = vlib_put_sges(sg, (uint32_t)num_sge, max_sge, r->u.wr.sge, x, total);

	if (rc)
		return rc;
	r->num_sge = (uint8_t)num_sge;
	*nx = VRDMA_SGE_EXT_ENTRIES((uint32_t)num_sge);
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
 * vlib_send_put() for any SGE list but one SGE: check the count, copy
 * each SGE once into the entry's (unused ones zero), sum their lengths:
 * 0, or 1 when there are more than the entry holds (vlib_send_ext then
 * writes them), or -EINVAL.  Off the hot path: its loop would cost
 * every post.
 */
static __attribute__((noinline, cold)) int
vlib_send_sges(const struct vlib_qp *q, const struct vrdma_sge *sg, uint32_t nsge,
	       struct vrdma_wire_sge *ws, uint32_t *total)
{
	if (nsge > VRDMA_WR_SGE && nsge <= q->cap.max_send_sge && sg)
		return 1;
	return vlib_put_sges(sg, nsge, VRDMA_WR_SGE < q->cap.max_send_sge ?
			     VRDMA_WR_SGE : q->cap.max_send_sge, ws, NULL, total);
}

/*
 * A send WR of more SGEs than its entry holds, whose entry vlib_send_put
 * left in @local: its SGE list read and checked again (once, as it goes
 * out: what is summed is what is sent) into the entry and its SGE
 * entries, put into the ring with them.  The bytes it sends, or -errno
 * (not through a pointer to the caller's slot: that would keep the slot
 * out of registers on every post).
 */
static __attribute__((noinline, cold)) int64_t
vlib_send_ext(struct vfe_dev *fe, const struct vlib_qp *q, const struct vrdma_send_wr *wr,
	      struct vrdma_req *local)
{
	struct vrdma_sge_ext x[VRDMA_SGE_EXT_ENTRIES(VRDMA_MAX_SGE)];
	const struct vrdma_sge *sg = VLIB_ONCE(wr->sg_list);
	uint32_t nsge = (uint32_t)VLIB_ONCE(wr->num_sge), total;
	int rc = vlib_put_sges(sg, nsge, q->cap.max_send_sge, local->u.wr.sge, x, &total);

	if (!rc) {
		local->num_sge = (uint8_t)nsge;
		rc = vfe_ring_put_ext(fe, local, x, VRDMA_SGE_EXT_ENTRIES(nsge));
	}
	return rc ? rc : (int64_t)total;
}

/*
 * Read the program's send WR, check it and write it into r (its ring
 * entry, or a local copy when the ring has no room yet); nothing is
 * published.  Each field is read once and what is checked is what is
 * written, whatever another thread does to the WR meanwhile; r is only
 * written, never read back (dom0 may scribble on it).  Every byte of r
 * is written (fields the opcode does not use, reserved bytes and unused
 * SGEs as zero): nothing stale or of ours leaks to dom0.  *slot gets
 * what the completion must say.  0, or 1 for a WR of more SGEs than r
 * holds (r has all but its SGEs: vlib_send_ext's), or -EINVAL (r is then
 * garbage).  Always inline: vrdma_post_send's body is there twice (the
 * latency trace's copy), which took GCC past its inlining limit (a call
 * per WR, ~40 instructions more).
 */
static inline __attribute__((always_inline)) int
vlib_send_put(const struct vlib_qp *q, const struct vrdma_send_wr *wr, struct vrdma_req *r,
	      struct vlib_slot *slot)
{
	const struct vrdma_sge *sg = VLIB_ONCE(wr->sg_list);
	uint32_t nsge = (uint32_t)VLIB_ONCE(wr->num_sge);
	uint32_t opc = (uint32_t)VLIB_ONCE(wr->opcode);
	uint32_t flags = VLIB_ONCE(wr->send_flags);
	uint64_t wr_id = VLIB_ONCE(wr->wr_id);
	struct vrdma_wr *w = &r->u.wr;
	struct vlib_sop sop;
	int more = 0;

	_Static_assert(sizeof(*r) == 16 + sizeof(*w) &&
		       offsetof(struct vrdma_wr, sge) ==
		       offsetof(struct vrdma_wr, reserved) + sizeof(w->reserved) &&
		       offsetof(struct vrdma_wr, sge) + sizeof(w->sge) == sizeof(*w),
		       "a send entry is header + wr, reserved bytes and SGEs last");
	_Static_assert(sizeof(struct vrdma_sge) == sizeof(struct vrdma_wire_sge),
		       "SGEs copy as they are");
	if (vfe_unlikely(opc >= sizeof(vlib_sops) / sizeof(vlib_sops[0]) ||
			 (flags & ~(unsigned)VRDMA_WR_F_ALL)))
		return -EINVAL;
	sop = vlib_sops[opc];
	r->opcode = sop.op;
	r->num_sge = (uint8_t)nsge;	/* checked below */
	r->flags = (uint16_t)flags | q->sq_sig_all;
	r->handle = q->pub.handle;
	r->id = wr_id;
	memset(w->reserved, 0, sizeof(w->reserved));
	/* max_send_sge >= 1: one SGE needs no count check. */
	if (vfe_likely(nsge == 1 && sg)) {
		uint64_t addr = VLIB_ONCE(sg->addr);
		uint32_t len = VLIB_ONCE(sg->length), lkey = VLIB_ONCE(sg->lkey);

		w->sge[0].addr = addr;
		w->sge[0].length = len;
		w->sge[0].lkey = lkey;
		memset(&w->sge[1], 0, sizeof(w->sge) - sizeof(w->sge[0]));
		slot->len = len;
	} else {
		uint32_t total;		/* not slot->len: slot stays in registers */
		more = vlib_send_sges(q, sg, nsge, w->sge, &total);
		if (more < 0)
			return more;
		slot->len = total;	/* vlib_send_ext's when more */
	}
	if (sop.has & VLIB_SOP_ATOMIC) {
		/* One 8-byte local buffer, as verbs atomics. */
		if (nsge != 1 || slot->len != 8)
			return -EINVAL;
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
		w->rkey = wr->wr.atomic.rkey;
	} else {
		w->remote_addr = sop.has & VLIB_SOP_RDMA ? wr->wr.rdma.remote_addr : 0;
		w->compare_add = 0;
		w->swap = 0;
		w->rkey = sop.has & VLIB_SOP_RDMA ? wr->wr.rdma.rkey : 0;
	}
	w->imm_data = sop.has & VLIB_SOP_IMM ? wr->imm_data : 0;
	slot->wr_id = wr_id;
	slot->wc = sop.wc;
	/* A UD QP's destination in the RC fields' place (ah.c). */
	if (vfe_unlikely(q->ud)) {
		int rc = vlib_send_ud(q, wr, w, opc);

		if (rc)
			return rc;
	}
	return more;
}

/* The device broke while a chain was posted: what vfe_ring_unlock() did
 * not publish never reaches dom0, so the first WR not posted is the one
 * after those published (mid-chain flushes when the ring filled), counted
 * from the chain's first entry @start. */
static __attribute__((noinline, cold)) struct vrdma_send_wr *
vlib_send_unposted(const struct vfe_dev *fe, struct vrdma_send_wr *head, uint32_t start)
{
	uint32_t n = fe->req_pushed - start;

	/* A WR of more than VRDMA_WR_SGE SGEs took its SGE entries too,
	 * pushed with it (never split: vfe_ring_put_ext). */
	while (head && n) {
		uint32_t nsge = (uint32_t)VLIB_ONCE(head->num_sge);
		uint32_t e = 1 + (nsge <= VRDMA_MAX_SGE ? VRDMA_SGE_EXT_ENTRIES(nsge) : 0);

		if (e > n)
			break;
		n -= e;
		head = head->next;
	}
	return head;
}

/* The SQ looked full: look at the poller's counter again.  Out of line:
 * GCC kept its address in a register (spilled) for the whole loop. */
static __attribute__((noinline, cold)) uint32_t vlib_sq_retired(const struct vlib_qp *q)
{
	return __atomic_load_n(&q->sq_retired, __ATOMIC_ACQUIRE);
}

/* vrdma_post_send(), inlined twice: there and traced. */
static inline __attribute__((always_inline)) int
vlib_post_send(struct vrdma_qp *qp, struct vrdma_send_wr *wr, struct vrdma_send_wr **bad_wr)
{
	struct vrdma_device *dev;
	enum vrdma_qp_state st;
	uint32_t posted, retired, start;
	struct vrdma_send_wr *head = wr;
	struct vrdma_req local;
	struct vlib_qp *q;
	int rc = 0;

	if (vfe_unlikely(!qp || !qp->device || !wr || !bad_wr)) {
		if (bad_wr)
			*bad_wr = wr;
		return EINVAL;
	}
	q = vlib_qp(qp);
	dev = qp->device;
	/* The ring lock serialises posting (one lock per WR chain, not two):
	 * sq_posted and the send slots change only under it. */
	vfe_ring_lock(&dev->fe);
	/* Once per chain (the loop keeps fewer values live): the state (a
	 * modify's command waits for this lock to reach the ring), the
	 * room on the send queue (only grows meanwhile: looked at again
	 * when used up), a broken device (later: vfe_ring_unlock()). */
	posted = q->sq_posted;
	start = dev->fe.req_prod;
	retired = __atomic_load_n(&q->sq_retired, __ATOMIC_ACQUIRE);
	st = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
	/* In ERR dom0 flushes it (WR_FLUSH_ERR), as verbs providers do. */
	if (vfe_unlikely(st != VRDMA_QPS_RTS && st != VRDMA_QPS_ERR))
		rc = -EINVAL;
	else if (vfe_unlikely(vfe_is_broken(&dev->fe)))
		rc = -EIO;
	for (; !rc && wr; wr = wr->next) {
		struct vrdma_req *r = &local;
		struct vlib_slot slot;

		/* Built in the ring entry itself (published at unlock), or
		 * put there once the ring has room (which may take a wait:
		 * a bad WR or a full queue says so first). */
		if (vfe_likely(vfe_ring_room(&dev->fe)))
			r = vfe_ring_entry(&dev->fe);
		rc = vlib_send_put(q, wr, r, &slot);
		if (vfe_unlikely(rc)) {
			if (rc < 0)
				break;
			/* SGE entries follow: the WR goes with them from local
			 * (r was not committed: a wait for room leaves it
			 * unpublished); local.num_sge says so below. */
			rc = 0;
			if (r != &local)
				memcpy(&local, r, sizeof(local));
			r = &local;
		}
		if (vfe_unlikely(posted - retired >= q->cap.max_send_wr)) {
			retired = vlib_sq_retired(q);
			if (posted - retired >= q->cap.max_send_wr) {
				rc = -ENOMEM;
				break;
			}
		}
		if (vfe_unlikely(r == &local)) {
			if (local.num_sge > VRDMA_WR_SGE) {
				int64_t sent = vlib_send_ext(&dev->fe, q, wr, &local);

				rc = sent < 0 ? (int)sent : 0;
				slot.len = (uint32_t)sent;
			} else {
				rc = vfe_ring_put(&dev->fe, &local);
			}
			if (rc)
				break;
		} else {
			vfe_ring_commit(&dev->fe);
		}
		q->sq_slot[posted & q->sq_mask] = slot;
		__atomic_store_n(&q->sq_posted, ++posted, __ATOMIC_RELEASE);
	}
	if (vfe_unlikely(vfe_ring_unlock(&dev->fe))) {
		rc = -EIO;
		wr = vlib_send_unposted(&dev->fe, head, start);
	}
	*bad_wr = wr;
	return -rc;	/* rc is 0 or -errno */
}

/* With the latency trace on: stamps at entry and once the doorbell rang
 * (bells: the doorbells rung meanwhile; none when dom0 was polling). */
static __attribute__((noinline, cold)) int
vlib_post_send_traced(struct vrdma_qp *qp, struct vrdma_send_wr *wr,
		      struct vrdma_send_wr **bad_wr)
{
	struct vfe_dev *fe = qp && qp->device ? &qp->device->fe : NULL;
	uint32_t qpn = qp ? qp->qp_num : 0, bells = fe ? VLIB_ONCE(fe->notified) : 0;
	uint64_t id = wr ? VLIB_ONCE(wr->wr_id) : 0;
	int rc;

	vlib_lt_put(VLIB_LT_POST, qpn, id, 0);
	rc = vlib_post_send(qp, wr, bad_wr);
	bells = fe ? VLIB_ONCE(fe->notified) - bells : 0;
	vlib_lt_put(VLIB_LT_BELL, qpn, id, ((uint32_t)rc & 0xffff) | bells << 16);
	return rc;
}

int vrdma_post_send(struct vrdma_qp *qp, struct vrdma_send_wr *wr,
		    struct vrdma_send_wr **bad_wr)
{
	if (vlib_lt_on())
		return vlib_post_send_traced(qp, wr, bad_wr);
	return vlib_post_send(qp, wr, bad_wr);
}

int vrdma_post_recv(struct vrdma_qp *qp, struct vrdma_recv_wr *wr,
		    struct vrdma_recv_wr **bad_wr)
{
	struct vrdma_sge_ext ext[VRDMA_SGE_EXT_ENTRIES(VRDMA_MAX_SGE)];
	struct vrdma_device *dev;
	struct vrdma_req r;
	struct vlib_qp *q;
	uint32_t total, nx;
	int rc = 0;

	if (bad_wr)
		*bad_wr = wr;
	if (!qp || !qp->device || !wr || !bad_wr)
		return EINVAL;
	if (vlib_lt_on())
		vlib_lt_put(VLIB_LT_RECV, qp->qp_num, VLIB_ONCE(wr->wr_id), 0);
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
		rc = vlib_sges(&r, ext, &nx, VLIB_ONCE(wr->sg_list), VLIB_ONCE(wr->num_sge),
			       q->cap.max_recv_sge, &total);
		if (rc)
			break;
		if (q->rq_posted - retired >= q->cap.max_recv_wr) {
			rc = -ENOMEM;
			break;
		}
		rc = nx ? vfe_ring_put_ext(&dev->fe, &r, ext, nx) : vfe_ring_put(&dev->fe, &r);
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
