// SPDX-License-Identifier: MIT
/*
 * Intra-host target: both QPs live on this node, so a work request is a
 * copy from one guest's mapped pages straight into the other's -- one
 * memcpy per contiguous piece, no bounce buffer.  Error semantics mirror
 * RC verbs: local problems are LOC_*, problems found at the responder are
 * REM_* for the requester; either way the requester's QP goes to error
 * and its remaining WRs are flushed.
 *
 * A guest moves at most its per-poll budget (sched.c): a big WR is moved
 * in pieces across polls (qp->wr_off) and completes when the last piece
 * lands, so one guest's 256 MiB WRITE cannot stall everybody else.
 */
#include <string.h>

#include "../vbe.h"
#include "../target.h"
#include "local.h"
#include "../trace/lat.h"

#define VBE_WAIT	(-1)	/* no receive posted yet: keep the WR queued */
#define VBE_PART	(-2)	/* a piece moved; the rest in a later turn */

/*
 * memmove, with small moves (an 8-byte WRITE) done in place of a libc
 * call: every load before any store, so overlap is fine as in memmove.
 */
static inline void vbe_move(uint8_t *d, const uint8_t *s, size_t n)
{
	uint64_t a, b;
	uint32_t c, e;

	if (n >= 8 && n <= 16) {
		memcpy(&a, s, 8);
		memcpy(&b, s + n - 8, 8);
		memcpy(d, &a, 8);
		memcpy(d + n - 8, &b, 8);
	} else if (n >= 4 && n < 8) {
		memcpy(&c, s, 4);
		memcpy(&e, s + n - 4, 4);
		memcpy(d, &c, 4);
		memcpy(d + n - 4, &e, 4);
	} else {
		memmove(d, s, n);
	}
}

/* Local SGEs -> mapped pieces: lkey valid, in PD pd, in bounds, rights. */
int vbe_sges(struct vbe_guest *g, uint32_t pd, const struct vbe_wqe *w,
	     bool write, struct vbe_piece *pc, unsigned *np, uint64_t *total)
{
	unsigned i, n = 0;

	*total = 0;
	for (i = 0; i < w->num_sge; i++) {
		const struct vrdma_wire_sge *s = vbe_wqe_sge(w, i);

		if (!s->length)
			continue;
		pc[n].p = vbe_mr_ptr(g, pd, s->lkey, s->addr, s->length,
				     write ? VRDMA_ACC_LOCAL_WRITE : 0);
		if (!pc[n].p)
			return VRDMA_WS_LOC_PROT_ERR;
		pc[n].len = s->length;
		*total += s->length;
		n++;
	}
	*np = n;
	return 0;
}

/* The responder's side: rkey of pqp's guest, same PD as pqp, rights, bounds. */
static int vbe_remote(struct vbe_guest *pg, struct vbe_qp *pqp, uint32_t rkey,
		      uint64_t addr, uint64_t len, uint32_t acc, uint8_t **p)
{
	*p = NULL;
	if (!len)
		return 0;
	*p = vbe_mr_ptr(pg, pqp->pd, rkey, addr, len, acc);
	return *p ? 0 : VRDMA_WS_REM_ACCESS_ERR;
}

/* Skip `skip` bytes of a piece list: index and offset of the next byte. */
static void vbe_seek(const struct vbe_piece *pc, unsigned np, uint64_t skip,
		     unsigned *i, uint32_t *off)
{
	for (*i = 0; *i < np && skip >= pc[*i].len; (*i)++)
		skip -= pc[*i].len;
	*off = (uint32_t)skip;
}

/*
 * Scatter-gather copy of bytes [skip, skip + n) of both lists, one copy
 * per contiguous piece.  memmove: a guest looping back inside one buffer
 * may name overlapping ranges (its data, its problem, but no UB in dom0).
 */
void vbe_copy(const struct vbe_piece *d, unsigned nd,
	      const struct vbe_piece *s, unsigned ns, uint64_t skip, uint64_t n)
{
	unsigned i, j;
	uint32_t doff, soff;

	if (nd == 1 && ns == 1 && !skip) {	/* the common case: one piece */
		if (n > d->len)
			n = d->len;
		memmove(d->p, s->p, n < s->len ? n : s->len);
		return;
	}
	vbe_seek(d, nd, skip, &i, &doff);
	vbe_seek(s, ns, skip, &j, &soff);

	while (n && i < nd && j < ns) {
		uint64_t chunk = d[i].len - doff;

		if (chunk > s[j].len - soff)
			chunk = s[j].len - soff;
		if (chunk > n)
			chunk = n;
		memmove(d[i].p + doff, s[j].p + soff, chunk);
		n -= chunk;
		doff += (uint32_t)chunk;
		soff += (uint32_t)chunk;
		if (doff == d[i].len) {
			i++;
			doff = 0;
		}
		if (soff == s[j].len) {
			j++;
			soff = 0;
		}
	}
}

/*
 * Deliver bytes [skip, skip + n) of a `total`-byte message into the peer's
 * next receive; the receive completes with the last piece.  VBE_WAIT if
 * none is posted.
 */
static int vbe_deliver(struct vbe_qp *qp, struct vbe_guest *pg, struct vbe_qp *pqp,
		       const struct vbe_piece *src, unsigned ns, uint64_t total,
		       uint64_t skip, uint64_t n, bool with_data, bool imm,
		       uint32_t imm_data)
{
	struct vbe_wqe *rw = vbe_qp_rq_head(pg, pqp);
	struct vbe_piece dst[VRDMA_MAX_SGE];
	uint64_t cap = 0;
	unsigned nd = 0;
	int st;

	if (!rw)
		return VBE_WAIT;
	if (with_data) {
		/* An SRQ's receives belong to the SRQ's PD (as in verbs). */
		st = vbe_sges(pg, pqp->srq ? pg->srqs[pqp->srq - 1].pd : pqp->pd, rw,
			      true, dst, &nd, &cap);
		if (st) {
			vbe_rq_complete(pg, pqp, VRDMA_WC_RECV, st, 0, 0, false, qp->qpn);
			vbe_qp_error(pg, pqp);
			return VRDMA_WS_REM_OP_ERR;
		}
		if (total > cap) {
			vbe_rq_complete(pg, pqp, VRDMA_WC_RECV, VRDMA_WS_LOC_LEN_ERR, 0, 0,
					false, qp->qpn);
			vbe_qp_error(pg, pqp);
			return VRDMA_WS_REM_INV_REQ_ERR;
		}
		vbe_copy(dst, nd, src, ns, skip, n);
		if (skip + n < total)
			return VBE_PART;
	}
	vbe_lt_copy(qp, pg, pqp);	/* the message is in */
	vbe_rq_complete(pg, pqp, with_data ? VRDMA_WC_RECV : VRDMA_WC_RECV_IMM,
			VRDMA_WS_SUCCESS, (uint32_t)total, imm_data, imm, qp->qpn);
	return 0;
}

static int vbe_atomic(struct vbe_guest *pg, struct vbe_qp *pqp, const struct vbe_wqe *w,
		      const struct vbe_piece *pc, unsigned np, uint64_t total)
{
	uint64_t *rp, old;
	struct vbe_piece src;
	uint8_t *p;
	int st;

	if (total < sizeof(old))
		return VRDMA_WS_LOC_LEN_ERR;
	if (w->wr.remote_addr & 7)
		return VRDMA_WS_REM_INV_REQ_ERR;
	st = vbe_remote(pg, pqp, w->wr.rkey, w->wr.remote_addr, sizeof(old),
			VRDMA_ACC_REMOTE_ATOMIC, &p);
	if (st)
		return st;
	if ((uintptr_t)p & 7)
		return VRDMA_WS_REM_INV_REQ_ERR;
	rp = (uint64_t *)(void *)p;
	/* The owner may touch the word concurrently: real atomics. */
	if (w->opcode == VRDMA_OP_CMP_SWAP) {
		old = w->wr.compare_add;
		__atomic_compare_exchange_n(rp, &old, w->wr.swap, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	} else {
		old = __atomic_fetch_add(rp, w->wr.compare_add, __ATOMIC_SEQ_CST);
	}
	src.p = (uint8_t *)&old;
	src.len = sizeof(old);
	vbe_copy(pc, np, &src, 1, 0, sizeof(old));
	return 0;
}

/*
 * Execute (the next piece of) the head WR: 0 / VRDMA_WS_* / VBE_WAIT /
 * VBE_PART; *wc and *len for the CQE, *moved bytes moved now.
 */
static int vbe_exec(struct vbe_guest *g, struct vbe_qp *qp, const struct vbe_wqe *w,
		    struct vbe_guest *pg, struct vbe_qp *pqp, uint8_t *wc, uint32_t *len,
		    uint64_t *moved)
{
	struct vbe_piece pc[VRDMA_MAX_SGE], rem;
	bool rd = w->opcode == VRDMA_OP_READ || w->opcode == VRDMA_OP_CMP_SWAP ||
		  w->opcode == VRDMA_OP_FETCH_ADD;
	uint64_t total, skip = qp->wr_off, n;
	unsigned np;
	uint8_t *p;
	int st;

	/* WRITE_IMM / SEND need a receive before anything else happens. */
	if ((w->opcode == VRDMA_OP_SEND || w->opcode == VRDMA_OP_SEND_IMM ||
	     w->opcode == VRDMA_OP_WRITE_IMM) && !vbe_qp_rq_head(pg, pqp))
		return VBE_WAIT;
	st = vbe_sges(g, qp->pd, w, rd, pc, &np, &total);
	if (st)
		return st;
	*len = (uint32_t)total;
	/* This turn's piece: what the budget allows (sq_run checked > 0). */
	n = skip < total ? total - skip : 0;
	if (n > g->budget_bytes)
		n = g->budget_bytes;
	switch (w->opcode) {
	case VRDMA_OP_SEND:
	case VRDMA_OP_SEND_IMM:
		*wc = VRDMA_WC_SEND;
		st = vbe_deliver(qp, pg, pqp, pc, np, total, skip, n, true,
				 w->opcode == VRDMA_OP_SEND_IMM, w->wr.imm_data);
		break;
	case VRDMA_OP_WRITE:
	case VRDMA_OP_WRITE_IMM:
		*wc = VRDMA_WC_WRITE;
		st = vbe_remote(pg, pqp, w->wr.rkey, w->wr.remote_addr, total,
				VRDMA_ACC_REMOTE_WRITE, &p);
		if (st)
			break;
		rem.p = p;
		rem.len = (uint32_t)total;
		vbe_copy(&rem, 1, pc, np, skip, n);
		if (skip + n < total)
			st = VBE_PART;
		else if (w->opcode == VRDMA_OP_WRITE_IMM)
			st = vbe_deliver(qp, pg, pqp, NULL, 0, total, 0, 0, false, true,
					 w->wr.imm_data);
		break;
	case VRDMA_OP_READ:
		*wc = VRDMA_WC_READ;
		st = vbe_remote(pg, pqp, w->wr.rkey, w->wr.remote_addr, total,
				VRDMA_ACC_REMOTE_READ, &p);
		if (st)
			break;
		rem.p = p;
		rem.len = (uint32_t)total;
		vbe_copy(pc, np, &rem, 1, skip, n);
		if (skip + n < total)
			st = VBE_PART;
		break;
	default:
		*wc = w->opcode == VRDMA_OP_CMP_SWAP ? VRDMA_WC_CMP_SWAP : VRDMA_WC_FETCH_ADD;
		*len = 8;
		n = 8;
		st = vbe_atomic(pg, pqp, w, pc, np, total);
		break;
	}
	if (!st || st == VBE_PART) {
		*moved = n;
		g->ctr.tx_bytes += n;
		pg->ctr.rx_bytes += n;
	}
	if (!st) {
		g->ctr.tx_ops++;
		pg->ctr.rx_ops++;
	}
	return st;
}

/*
 * The common case in one pass (issue 11): a WRITE of one SGE that fits
 * the budget (vbe_budget_left said it is not empty), none of it moved
 * yet: executed and completed.  It only ever succeeds: when a check
 * fails it returns false having changed nothing, and vbe_exec goes over
 * the WR again and reports what is wrong.
 */
static bool vbe_fast_write(struct vbe_guest *g, struct vbe_qp *qp, struct vbe_wqe *w,
			   struct vbe_guest *pg, struct vbe_qp *pqp)
{
	const struct vrdma_wire_sge *s = &w->wr.sge[0];
	uint32_t len = s->length;
	uint8_t *src, *dst;

	if (w->opcode != VRDMA_OP_WRITE || w->num_sge != 1 || qp->wr_off ||
	    !len || len > g->budget_bytes)
		return false;
	src = vbe_mr_ptr(g, qp->pd, s->lkey, s->addr, len, 0);
	if (!src)
		return false;
	dst = vbe_mr_ptr(pg, pqp->pd, w->wr.rkey, w->wr.remote_addr, len,
			 VRDMA_ACC_REMOTE_WRITE);
	if (!dst)
		return false;
	vbe_move(dst, src, len);
	vbe_lt_copy(qp, pg, pqp);
	g->ctr.tx_bytes += len;
	pg->ctr.rx_bytes += len;
	g->ctr.tx_ops++;
	pg->ctr.rx_ops++;
	vbe_sched_start_wr(g, w);
	vbe_budget_charge(g, len);
	vbe_sq_complete(g, qp, VRDMA_WC_WRITE, VRDMA_WS_SUCCESS, len);
	return true;
}

/* A turn of the head WR, the general way; false: the run stops.  Out of
 * line: its piece lists would make every run pay for a big frame. */
static __attribute__((noinline)) bool
vbe_local_step(struct vbe_guest *g, struct vbe_qp *qp, struct vbe_wqe *w,
	       struct vbe_guest *pg, struct vbe_qp *pqp)
{
	uint64_t moved = 0;
	uint32_t len = 0;
	uint8_t wc = VRDMA_WC_SEND;
	bool first = !qp->wr_off;
	int st;

	st = vbe_exec(g, qp, w, pg, pqp, &wc, &len, &moved);
	if (st == VBE_WAIT)
		return false;
	if (first)
		vbe_sched_start_wr(g, w);
	vbe_budget_charge(g, moved);
	if (st == VBE_PART) {
		qp->wr_off += moved;
		return true;
	}
	vbe_sq_complete(g, qp, wc, (uint8_t)st, st ? 0 : len);
	if (st) {
		vbe_qp_error(g, qp);
		return false;
	}
	return true;
}

static void vbe_local_sq_run(struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vbe_guest *pg = NULL;
	struct vbe_qp *pqp = NULL;
	struct vbe_wqe *w;

	while (!g->dead && qp->sq.count) {
		w = &qp->sq.e[qp->sq.head];
		if (qp->state != VBE_QPS_RTS) {
			if (qp->state == VBE_QPS_ERR)
				vbe_qp_error(g, qp);
			return;
		}
		/* One lookup per run: within it the peer QP cannot be freed
		 * (that takes its guest's commands or a reap), only go to
		 * error or its guest be disabled, which are looked at. */
		if (!pqp || pg->dead || pqp->state != VBE_QPS_RTS)
			pqp = vbe_qp_peer(g, qp, &pg);
		if (!pqp || pqp->state != VBE_QPS_RTS) {
			if (qp->by_qpn && pqp != qp)
				vbe_qpn_lost(g, qp);	/* fails after the retry time */
			else
				vbe_qp_peer_lost(g, qp);
			return;
		}
		if (!vbe_budget_left(g, qp))
			return;
		if (!vbe_fast_write(g, qp, w, pg, pqp) &&
		    !vbe_local_step(g, qp, w, pg, pqp))
			return;
	}
}

static void vbe_local_rq_posted(struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vbe_guest *pg;
	struct vbe_qp *pqp = vbe_qp_peer(g, qp, &pg);

	if (pqp && pqp->state == VBE_QPS_RTS && pqp->sq.count)
		vbe_local_sq_run(pg, pqp);
}

/*
 * qp goes away.  A peer connected by CONNECT learns at once (QP_ERROR, as
 * rdma_cm's DISCONNECTED).  A peer bound by number (verbs) learns as an RC
 * QP does: its sends fail RETRY_EXC once the retry time passed (queued
 * ones then, later ones then too); its posted receives stay.
 */
static void vbe_local_disconnect(struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vbe_guest *pg;
	struct vbe_qp *pqp = vbe_qp_peer(g, qp, &pg);

	if (pqp && (!pqp->by_qpn || pqp == qp))
		vbe_qp_peer_lost(pg, pqp);
	else if (pqp)
		vbe_qpn_lost(pg, pqp);
	qp->peer_qpn = 0;
	qp->peer_handle = 0;
}

const struct vbe_target vbe_target_local = {
	.name		= "local",
	.sq_run		= vbe_local_sq_run,
	.rq_posted	= vbe_local_rq_posted,
	.disconnect	= vbe_local_disconnect,
};
