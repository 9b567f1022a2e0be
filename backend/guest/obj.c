// SPDX-License-Identifier: MIT
/*
 * Per-guest object tables, the CQ writer, and QP error handling.
 * Tables are fixed-size arrays allocated when the guest appears, so a
 * guest can never make dom0 allocate without bound.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "log.h"
#include "vring.h"
#include "../vbe.h"
#include "../target.h"
#include "../trace/lat.h"

uint32_t vbe_slot_take(struct vbe_slot *tab, size_t stride, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct vbe_slot *s = (struct vbe_slot *)((char *)tab + i * stride);

		if (!s->used) {
			if (!s->gen)
				s->gen = 1;
			s->used = 1;
			return i;
		}
	}
	return UINT32_MAX;
}

void vbe_slot_free(struct vbe_slot *s)
{
	s->used = 0;
	if (++s->gen == 0)
		s->gen = 1;
}

/*
 * A guest's object tables (~700 KiB) are mapped, not calloc'ed: a page
 * costs memory only once a slot in it is used, so an idle guest costs
 * dom0 a few pages (calloc may clear heap memory, touching all of it).
 */
#define VBE_TABLE(p, n) ((p) = vbe_table_alloc((n) * sizeof(*(p))))
#define VBE_UNTABLE(p, n) vbe_table_free((p), (n) * sizeof(*(p)))

static void *vbe_table_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void vbe_table_free(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}

/* The MR table behind its key map and unused MR (vbe.h vbe_mr_map). */
#define VBE_MR_TAB_LEN	(VBE_MR_PRE + VBE_MAX_MRS * sizeof(struct vbe_mr))

static struct vbe_mr *vbe_mrs_alloc(void)
{
	char *p = vbe_table_alloc(VBE_MR_TAB_LEN);

	return p ? (struct vbe_mr *)(p + VBE_MR_PRE) : NULL;
}

static void vbe_mrs_free(struct vbe_mr *mrs)
{
	if (mrs)
		vbe_table_free((char *)mrs - VBE_MR_PRE, VBE_MR_TAB_LEN);
}

int vbe_obj_init(struct vbe_guest *g)
{
	VBE_TABLE(g->bufs, VBE_MAX_BUFS);
	g->pds = calloc(VBE_MAX_PDS, sizeof(*g->pds));
	g->mrs = vbe_mrs_alloc();
	VBE_TABLE(g->cqs, VBE_MAX_CQS);
	VBE_TABLE(g->qps, VBE_MAX_QPS);
	VBE_TABLE(g->srqs, VBE_MAX_SRQS);
	g->dirty = calloc(VBE_MAX_CQS, sizeof(*g->dirty));
	if (!g->bufs || !g->pds || !g->mrs || !g->cqs || !g->qps || !g->srqs || !g->dirty ||
	    vbe_qfifo_init(&g->evq) || vbe_qfifo_init(&g->runq)) {
		vbe_obj_fini(g);
		return -ENOMEM;
	}
	return 0;
}

void vbe_obj_fini(struct vbe_guest *g)
{
	VBE_UNTABLE(g->bufs, VBE_MAX_BUFS);
	free(g->pds);
	vbe_mrs_free(g->mrs);
	VBE_UNTABLE(g->cqs, VBE_MAX_CQS);
	VBE_UNTABLE(g->qps, VBE_MAX_QPS);
	VBE_UNTABLE(g->srqs, VBE_MAX_SRQS);
	free(g->dirty);
	vbe_qfifo_fini(&g->evq);
	vbe_qfifo_fini(&g->runq);
	g->dirty = NULL;
	g->ndirty = 0;
	g->bufs = NULL;
	g->pds = NULL;
	g->mrs = NULL;
	g->cqs = NULL;
	g->qps = NULL;
	g->srqs = NULL;
}

/* Drop every object of g: QPs first (they break connections), then the
 * rest, then the mappings.  Safe to call twice.  The three big tables
 * are walked only while their live counts say something is left (an MR
 * is at least a byte, a buffer a page): a walk to their ends would fault
 * in every page of them (~700 KiB) for a guest that used a few slots,
 * or none (a refused handshake), on vrdmad's one thread. */
void vbe_obj_release(struct vbe_guest *g)
{
	uint32_t i;

	if (g->node->dev_hold == g)
		g->node->dev_hold = NULL;
	vbe_coll_guest_gone(g);		/* before the MRs and CQs it reads */
	if (!g->qps)
		return;
	for (i = 0; i < VBE_MAX_QPS && g->nqps; i++)
		if (g->qps[i].s.used)
			vbe_qp_destroy(g, &g->qps[i]);
	vbe_cm_guest_gone(g);
	for (i = 0; i < VBE_MAX_SRQS; i++)
		if (g->srqs[i].s.used)
			vbe_srq_free(g, &g->srqs[i]);
	for (i = 0; i < VBE_MAX_MRS && g->nmrs; i++)
		if (g->mrs[i].s.used) {
			g->mr_bytes -= g->mrs[i].length;
			g->nmrs--;
			vbe_slot_free(&g->mrs[i].s);
		}
	g->mr_bytes = 0;
	g->nmrs = 0;
	for (i = 0; i < VBE_MAX_CQS; i++)
		if (g->cqs[i].s.used)
			vbe_cq_forget(g, &g->cqs[i]);
	for (i = 0; i < VBE_MAX_PDS; i++)
		if (g->pds[i].s.used)
			vbe_slot_free(&g->pds[i].s);
	for (i = 0; i < VBE_MAX_BUFS && g->pages; i++)
		if (g->bufs[i].s.used)
			vbe_buf_drop(g, &g->bufs[i]);
}

/* Unmap an attached buffer and free its slot (DETACH_BUF, release). */
void vbe_buf_drop(struct vbe_guest *g, struct vbe_buf *b)
{
	/* The device lets go of the pages before dom0 does. */
	if (!vbe_vx_unpin(g->node, g, b->addr, (size_t)b->npages * VRDMA_PAGE_SIZE, b->map))
		vbe_unmap_node(g->node, b->map, b->npages);
	g->nmaps--;
	g->pages -= b->npages;
	g->maps -= b->maps;
	memset((char *)b + sizeof(b->s), 0, sizeof(*b) - sizeof(b->s));
	vbe_slot_free(&b->s);
}

/* ---- completion queues ---- */

void vbe_cq_push(struct vbe_guest *g, uint32_t cqi, const struct vrdma_cqe *c)
{
	struct vbe_cq *cq = &g->cqs[cqi];
	uint32_t cons;

	if (g->dead || !g->connected || !cq->s.used)
		return;
	if (cq->err)
		return;		/* overran: lost, as on hardware */
	/* The guest's cons is untrusted: one past prod or more than a CQ
	 * behind is a lie; exactly a CQ behind is an overrun, which verbs
	 * allows a program to cause (QPs deeper than their CQ). */
	cons = vring_load_acq(&cq->hdr->ring.cons);
	if ((uint32_t)(cq->prod - cons) > cq->size) {
		vbe_guest_fatal(g, "CQ %#x impossible cons %u (prod %u size %u)",
				vbe_handle(&cq->s, cqi), cons, cq->prod, cq->size);
		return;
	}
	if (cq->prod - cons == cq->size) {
		vlog_warn("vrdmad: %s: CQ %#x overran (size %u): CQ error",
			  g->name, vbe_handle(&cq->s, cqi), cq->size);
		cq->err = cq->err_pend = true;
		g->cq_err = true;	/* the QPs at the flush, not mid-walk */
		g->ctr.errors++;
		return;
	}
	cq->cqe[cq->prod & (cq->size - 1)] = *c;
	cq->prod++;
	vbe_lt_cqe(g, c);
	if (!cq->dirty) {
		cq->dirty = true;
		g->dirty[g->ndirty++] = (uint16_t)cqi;
	}
	g->ctr.completions++;
	if (c->status)
		g->ctr.errors++;
}

/* Publish the batch of every dirty CQ; one channel kick per guest.  Only
 * the CQs written since the last flush are visited (review I5). */
void vbe_cq_flush(struct vbe_guest *g)
{
	unsigned i;

	if (!g->cqs || g->dead)
		return;
	for (i = 0; i < g->ndirty; i++) {
		struct vbe_cq *cq = &g->cqs[g->dirty[i]];

		cq->dirty = false;
		if (vring_push(&cq->hdr->ring, cq->pub, cq->prod))
			g->kick = true;
		vbe_lt_pub(g, g->dirty[i]);
		cq->pub = cq->prod;
	}
	g->ndirty = 0;
}

/*
 * At the end of a batch (vbe_ring_flush), never inside a WR walk: each
 * overran CQ's QPs go to error, the guest gets CQ_ERROR and a QP_ERROR per
 * QP.  An event that finds the ring full waits for the next flush.
 */
void vbe_cq_err_run(struct vbe_guest *g)
{
	struct vrdma_evt e;
	unsigned i, j;

	g->cq_err = false;	/* set again by an overrun the flushes cause */
	for (i = 0; i < VBE_MAX_CQS && !g->dead; i++) {
		struct vbe_cq *cq = &g->cqs[i];

		bool posted;

		if (!cq->s.used || !cq->err_pend)
			continue;
		memset(&e, 0, sizeof(e));
		e.type = VRDMA_EVT_CQ_ERROR;
		e.handle = vbe_handle(&cq->s, i);
		posted = !vbe_evt_post(g, &e, false);
		if (!posted)
			g->cq_err = true;	/* ring full: the event next time */
		else
			cq->err_pend = false;
		/* The QPs stop at once, told or not (their QP_ERRORs wait on
		 * them if the ring is full): nothing moves unreported. */
		if (cq->err_qps)
			continue;
		cq->err_qps = true;
		for (j = 0; j < VBE_MAX_QPS && g->qps; j++) {
			struct vbe_qp *qp = &g->qps[j];

			if (!qp->s.used || qp->state == VBE_QPS_ERR ||
			    (qp->send_cq != i && qp->recv_cq != i) ||
			    (qp->state == VBE_QPS_CONNECTING && !qp->vwait))
				continue;
			vbe_qp_fail(g, qp);
			vbe_evt_qp_error(g, qp, VRDMA_CS_NOMEM);
		}
	}
}

/* Free a CQ slot; it leaves the dirty list (unpublished CQEs die with it). */
void vbe_cq_forget(struct vbe_guest *g, struct vbe_cq *cq)
{
	unsigned i, j;

	if (cq->dirty) {
		for (i = j = 0; i < g->ndirty; i++)
			if (&g->cqs[g->dirty[i]] != cq)
				g->dirty[j++] = g->dirty[i];
		g->ndirty = j;
	}
	g->bufs[cq->buf].users--;
	g->ncqs--;
	memset((char *)cq + sizeof(cq->s), 0, sizeof(*cq) - sizeof(cq->s));
	vbe_slot_free(&cq->s);
}

/* ---- work queues ---- */

/* The CQE of the head send WR w (vbe_sq_complete, vbe.h). */
void vbe_sq_cqe(struct vbe_guest *g, struct vbe_qp *qp, const struct vbe_wqe *w,
		uint8_t wc, uint8_t status, uint32_t byte_len)
{
	struct vrdma_cqe c;

	memset(&c, 0, sizeof(c));
	c.wr_id = w->id;
	c.qp = qp->handle;
	c.opcode = wc;
	c.status = status;
	c.byte_len = byte_len;
	c.src_qpn = qp->peer_qpn;
	c.sq_retired = qp->sq_retired;
	vbe_cq_push(g, qp->send_cq, &c);
}

void vbe_rq_complete(struct vbe_guest *g, struct vbe_qp *qp, uint8_t wc,
		     uint8_t status, uint32_t byte_len, uint32_t imm,
		     bool has_imm, uint32_t src_qpn)
{
	struct vbe_wqe *w = vbe_qp_rq_head(g, qp);
	struct vrdma_cqe c;

	if (!w)
		return;
	memset(&c, 0, sizeof(c));
	if (qp->srq) {
		c.srq = g->srqs[qp->srq - 1].handle;
		c.srq_idx = qp->srq_idx;
	}
	c.wr_id = w->id;
	c.qp = qp->handle;
	c.opcode = wc;
	c.status = status;
	c.byte_len = byte_len;
	c.imm_data = imm;
	c.flags = (has_imm ? VRDMA_CQE_F_IMM : 0) |
		  (qp->ud && !status ? VRDMA_CQE_F_GRH : 0);
	c.src_qpn = src_qpn;
	c.sq_retired = qp->sq_retired;
	vbe_cq_push(g, qp->recv_cq, &c);
	if (qp->srq) {
		qp->srq_held = false;
		return;
	}
	vbe_wq_pop(&qp->rq);
}

/* One allocation: the slots, then the SGEs past VRDMA_WR_SGE of each
 * (what a queue of at most VRDMA_WR_SGE never pays for). */
int vbe_wq_alloc(struct vbe_wq *q, uint32_t size, uint32_t max_sge)
{
	size_t x = max_sge > VRDMA_WR_SGE ? max_sge - VRDMA_WR_SGE : 0;
	struct vrdma_wire_sge *t;
	uint32_t i;

	q->e = calloc(size, sizeof(*q->e) + x * sizeof(*t));
	if (!q->e)
		return -ENOMEM;
	t = (struct vrdma_wire_sge *)(q->e + size);
	for (i = 0; x && i < size; i++)
		q->e[i].xsge = t + i * x;
	q->size = size;
	q->head = q->count = 0;
	return 0;
}

void vbe_wq_free(struct vbe_wq *q)
{
	free(q->e);
	q->e = NULL;
}

struct vbe_wqe *vbe_qp_rq_head(struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vbe_srq *srq;
	struct vbe_wqe *w;

	if (!qp->srq)
		return vbe_wq_head(&qp->rq);
	if (qp->srq_held)
		return &qp->srq_wqe;
	srq = &g->srqs[qp->srq - 1];
	srq->local = true;	/* its device twin leaves receives here */
	w = vbe_wq_head(&srq->rq);
	if (!w)
		return NULL;
	qp->srq_wqe = *w;
	/* The SRQ's slot (and its SGE table share) is free once popped. */
	if (w->num_sge > VRDMA_WR_SGE)
		memcpy(qp->srq_xsge, w->xsge,
		       (w->num_sge - VRDMA_WR_SGE) * sizeof(qp->srq_xsge[0]));
	qp->srq_wqe.xsge = qp->srq_xsge;
	qp->srq_idx = srq->consumed++;
	qp->srq_held = true;
	vbe_wq_pop(&srq->rq);
	return &qp->srq_wqe;
}

uint8_t vbe_wc_of(uint8_t op)
{
	switch (op) {
	case VRDMA_OP_WRITE:
	case VRDMA_OP_WRITE_IMM:
		return VRDMA_WC_WRITE;
	case VRDMA_OP_READ:
		return VRDMA_WC_READ;
	case VRDMA_OP_CMP_SWAP:
		return VRDMA_WC_CMP_SWAP;
	case VRDMA_OP_FETCH_ADD:
		return VRDMA_WC_FETCH_ADD;
	default:
		return VRDMA_WC_SEND;
	}
}

/* QP to error: every queued WR completes WR_FLUSH_ERR, as in verbs. */
void vbe_qp_error(struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vbe_wqe *w;

	qp->state = VBE_QPS_ERR;
	while ((w = vbe_wq_head(&qp->sq)))
		vbe_sq_complete(g, qp, vbe_wc_of(w->opcode), VRDMA_WS_WR_FLUSH_ERR, 0);
	/* An SRQ's receives stay for its other QPs, but for one this QP took. */
	while (vbe_wq_head(&qp->rq) || qp->srq_held)
		vbe_rq_complete(g, qp, VRDMA_WC_RECV, VRDMA_WS_WR_FLUSH_ERR, 0, 0,
				false, 0);
}

/* The peer vanished (guest gone, QP destroyed, QP in error): the WR in
 * flight exhausts its retries, the rest is flushed, the guest is told. */
void vbe_qp_peer_lost(struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vbe_wqe *w = vbe_wq_head(&qp->sq);

	if (qp->state == VBE_QPS_ERR)
		return;
	if (w)
		vbe_sq_complete(g, qp, vbe_wc_of(w->opcode), VRDMA_WS_RETRY_EXC_ERR, 0);
	vbe_qp_error(g, qp);
	vbe_evt_qp_error(g, qp, VRDMA_CS_UNREACH);
}

/* Peer QP of qp if it is still connected to qp, else NULL. */
/* vbe_qp_peer's cache missed: the node's guest list, once. */
struct vbe_guest *vbe_qp_peer_guest(struct vbe_guest *g, struct vbe_qp *qp)
{
	qp->peer_g = vbe_node_guest(g->node, qp->peer_domid, qp->peer_devid);
	qp->peer_epoch = g->node->guest_epoch;
	return qp->peer_g;
}

/* Destroy: the peer learns the connection is gone (QP_ERROR there), our
 * own queued WRs are flushed (no CQEs once the guest is disconnected). */
void vbe_qp_destroy(struct vbe_guest *g, struct vbe_qp *qp)
{
	if (qp->tgt)
		qp->tgt->disconnect(g, qp);
	vbe_qp_error(g, qp);
	vbe_cm_qp_gone(g, qp);
	vbe_sched_qp_gone(g, qp);
	vbe_qpn_del(g, qp);
	vbe_node_qpn_free(g->node, qp->qpn);
	g->wr_slots -= (qp->sq.size + qp->rq.size) * vbe_wr_weight(qp->max_sge);
	g->nqps--;
	g->pds[qp->pd].users--;
	g->cqs[qp->send_cq].users--;
	g->cqs[qp->recv_cq].users--;
	if (qp->srq)
		g->srqs[qp->srq - 1].users--;
	vbe_wq_free(&qp->sq);
	vbe_wq_free(&qp->rq);
	memset((char *)qp + sizeof(qp->s), 0, sizeof(*qp) - sizeof(qp->s));
	vbe_slot_free(&qp->s);
}
