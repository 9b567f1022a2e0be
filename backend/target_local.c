// SPDX-License-Identifier: MIT
/*
 * Intra-host target: both QPs live on this node, so a work request is a
 * copy from one guest's mapped pages straight into the other's -- one
 * memcpy per contiguous piece, no bounce buffer.  Error semantics mirror
 * RC verbs: local problems are LOC_*, problems found at the responder are
 * REM_* for the requester; either way the requester's QP goes to error
 * and its remaining WRs are flushed.
 */
#include <string.h>

#include "vbe.h"
#include "target.h"

#define VBE_WAIT	(-1)	/* no receive posted yet: keep the WR queued */

struct vbe_piece {
	uint8_t *p;
	uint32_t len;
};

/* Local SGEs -> mapped pieces: lkey valid, same PD, in bounds, rights. */
static int vbe_sges(struct vbe_guest *g, struct vbe_qp *qp, const struct vbe_wqe *w,
		    bool write, struct vbe_piece *pc, unsigned *np, uint64_t *total)
{
	unsigned i, n = 0;

	*total = 0;
	for (i = 0; i < w->num_sge; i++) {
		const struct vrdma_wire_sge *s = &w->wr.sge[i];
		uint32_t idx = s->lkey >> 8;
		struct vbe_mr *mr;
		uint64_t off;

		if (!s->length)
			continue;
		if (idx >= VBE_MAX_MRS)
			return VRDMA_WS_LOC_PROT_ERR;
		mr = &g->mrs[idx];
		if (!mr->s.used || mr->key != s->lkey || mr->pd != qp->pd)
			return VRDMA_WS_LOC_PROT_ERR;
		if (write && !(mr->access & VRDMA_ACC_LOCAL_WRITE))
			return VRDMA_WS_LOC_PROT_ERR;
		/* Overflow-safe: addr - iova cannot wrap once addr >= iova. */
		if (s->addr < mr->iova)
			return VRDMA_WS_LOC_PROT_ERR;
		off = s->addr - mr->iova;
		if (off > mr->length || s->length > mr->length - off)
			return VRDMA_WS_LOC_PROT_ERR;
		pc[n].p = g->bufs[mr->buf].addr + mr->offset + off;
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
	uint32_t idx = rkey >> 8;
	struct vbe_mr *mr;
	uint64_t off;

	*p = NULL;
	if (!len)
		return 0;
	if (idx >= VBE_MAX_MRS)
		return VRDMA_WS_REM_ACCESS_ERR;
	mr = &pg->mrs[idx];
	if (!mr->s.used || mr->key != rkey || mr->pd != pqp->pd || !(mr->access & acc))
		return VRDMA_WS_REM_ACCESS_ERR;
	if (addr < mr->iova)
		return VRDMA_WS_REM_ACCESS_ERR;
	off = addr - mr->iova;
	if (off > mr->length || len > mr->length - off)
		return VRDMA_WS_REM_ACCESS_ERR;
	*p = pg->bufs[mr->buf].addr + mr->offset + off;
	return 0;
}

/* Scatter-gather copy of n bytes: one memcpy per contiguous piece. */
static void vbe_copy(const struct vbe_piece *d, unsigned nd,
		     const struct vbe_piece *s, unsigned ns, uint64_t n)
{
	unsigned i = 0, j = 0;
	uint32_t doff = 0, soff = 0;

	while (n && i < nd && j < ns) {
		uint64_t chunk = d[i].len - doff;

		if (chunk > s[j].len - soff)
			chunk = s[j].len - soff;
		if (chunk > n)
			chunk = n;
		memcpy(d[i].p + doff, s[j].p + soff, chunk);
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

/* Deliver into the peer's next receive; VBE_WAIT if none is posted. */
static int vbe_deliver(struct vbe_guest *g, struct vbe_qp *qp, struct vbe_guest *pg,
		       struct vbe_qp *pqp, const struct vbe_piece *src, unsigned ns,
		       uint64_t total, bool with_data, bool imm, uint32_t imm_data)
{
	struct vbe_wqe *rw = vbe_wq_head(&pqp->rq);
	struct vbe_piece dst[VRDMA_MAX_SGE];
	uint64_t cap = 0;
	unsigned nd = 0;
	int st;

	if (!rw)
		return VBE_WAIT;
	if (with_data) {
		st = vbe_sges(pg, pqp, rw, true, dst, &nd, &cap);
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
		vbe_copy(dst, nd, src, ns, total);
	}
	vbe_rq_complete(pg, pqp, with_data ? VRDMA_WC_RECV : VRDMA_WC_RECV_IMM,
			VRDMA_WS_SUCCESS, (uint32_t)total, imm_data, imm, qp->qpn);
	(void)g;
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
	vbe_copy(pc, np, &src, 1, sizeof(old));
	return 0;
}

/* Execute the head WR: 0 / VRDMA_WS_* / VBE_WAIT; *wc and *len for the CQE. */
static int vbe_exec(struct vbe_guest *g, struct vbe_qp *qp, const struct vbe_wqe *w,
		    struct vbe_guest *pg, struct vbe_qp *pqp, uint8_t *wc, uint32_t *len)
{
	struct vbe_piece pc[VRDMA_MAX_SGE], rem;
	bool rd = w->opcode == VRDMA_OP_READ || w->opcode == VRDMA_OP_CMP_SWAP ||
		  w->opcode == VRDMA_OP_FETCH_ADD;
	uint64_t total;
	unsigned np;
	uint8_t *p;
	int st;

	/* WRITE_IMM / SEND need a receive before anything else happens. */
	if ((w->opcode == VRDMA_OP_SEND || w->opcode == VRDMA_OP_SEND_IMM ||
	     w->opcode == VRDMA_OP_WRITE_IMM) && !vbe_wq_head(&pqp->rq))
		return VBE_WAIT;
	st = vbe_sges(g, qp, w, rd, pc, &np, &total);
	if (st)
		return st;
	*len = (uint32_t)total;
	switch (w->opcode) {
	case VRDMA_OP_SEND:
	case VRDMA_OP_SEND_IMM:
		*wc = VRDMA_WC_SEND;
		st = vbe_deliver(g, qp, pg, pqp, pc, np, total, true,
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
		vbe_copy(&rem, 1, pc, np, total);
		if (w->opcode == VRDMA_OP_WRITE_IMM)
			st = vbe_deliver(g, qp, pg, pqp, NULL, 0, total, false, true,
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
		vbe_copy(pc, np, &rem, 1, total);
		break;
	default:
		*wc = w->opcode == VRDMA_OP_CMP_SWAP ? VRDMA_WC_CMP_SWAP : VRDMA_WC_FETCH_ADD;
		*len = 8;
		st = vbe_atomic(pg, pqp, w, pc, np, total);
		break;
	}
	if (!st) {
		g->ctr.tx_ops++;
		g->ctr.tx_bytes += *len;
		pg->ctr.rx_ops++;
		pg->ctr.rx_bytes += *len;
	}
	return st;
}

static void vbe_local_sq_run(struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vbe_guest *pg;
	struct vbe_qp *pqp;
	struct vbe_wqe *w;
	uint32_t len;
	uint8_t wc;
	int st;

	while (!g->dead && (w = vbe_wq_head(&qp->sq))) {
		if (qp->state == VBE_QPS_ERR) {
			vbe_qp_error(g, qp);
			return;
		}
		if (qp->state != VBE_QPS_RTS)
			return;
		pqp = vbe_qp_peer(g, qp, &pg);
		if (!pqp || pqp->state != VBE_QPS_RTS) {
			vbe_qp_peer_lost(g, qp);
			return;
		}
		wc = VRDMA_WC_SEND;
		len = 0;
		st = vbe_exec(g, qp, w, pg, pqp, &wc, &len);
		if (st == VBE_WAIT)
			return;
		vbe_sq_complete(g, qp, wc, (uint8_t)st, st ? 0 : len);
		if (st) {
			vbe_qp_error(g, qp);
			return;
		}
	}
}

static void vbe_local_rq_posted(struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vbe_guest *pg;
	struct vbe_qp *pqp = vbe_qp_peer(g, qp, &pg);

	if (pqp && pqp->state == VBE_QPS_RTS && pqp->sq.count)
		vbe_local_sq_run(pg, pqp);
}

static void vbe_local_disconnect(struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vbe_guest *pg;
	struct vbe_qp *pqp = vbe_qp_peer(g, qp, &pg);

	if (pqp)
		vbe_qp_peer_lost(pg, pqp);
	qp->peer_qpn = 0;
	qp->peer_handle = 0;
}

const struct vbe_target vbe_target_local = {
	.name		= "local",
	.sq_run		= vbe_local_sq_run,
	.rq_posted	= vbe_local_rq_posted,
	.disconnect	= vbe_local_disconnect,
};
