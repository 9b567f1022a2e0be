// SPDX-License-Identifier: MIT
/*
 * Shared receive queues: one FIFO of receives that every QP created on it
 * consumes (verbs' SRQ).  A receive CQE names the SRQ and the index of the
 * receive it took (srq_idx), because the guest polls the CQs of several
 * QPs in any order.  QP errors do not flush an SRQ (as in verbs): only
 * destroying it does, and a QP keeps it busy.  QPs on one SRQ may be bound
 * inside the node (they take receives here) and across nodes (the SRQ's
 * device twin takes them, verbs_srq.c).
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "../vbe.h"
#include "../target.h"

int vbe_srq_create(struct vbe_guest *g, const struct vrdma_req *r, uint32_t *out)
{
	const struct vrdma_cmd_create_srq *c = &r->u.create_srq;
	struct vbe_pd *pd = VBE_GET(g->pds, VBE_MAX_PDS, c->pd);
	struct vbe_srq *srq;
	uint32_t idx;

	if (!pd)
		return VRDMA_CS_NOENT;
	if (c->reserved || !c->max_wr || c->max_wr > VRDMA_MAX_WR || !c->max_sge ||
	    c->max_sge > g->node->max_sge)
		return VRDMA_CS_INVAL;
	/* Queued WRs cost dom0 memory: the guest's WR budget, as for QPs. */
	if (c->max_wr * vbe_wr_weight(c->max_sge) > VBE_MAX_WR_SLOTS - g->wr_slots ||
	    vbe_quota_qp(g, c->max_wr * vbe_wr_weight(c->max_sge)))
		return VRDMA_CS_NOMEM;
	idx = VBE_TAKE(g->srqs, VBE_MAX_SRQS);
	if (idx == UINT32_MAX)
		return VRDMA_CS_NOMEM;
	srq = &g->srqs[idx];
	if (vbe_wq_alloc(&srq->rq, c->max_wr, c->max_sge)) {
		vbe_slot_free(&srq->s);
		return VRDMA_CS_NOMEM;
	}
	g->wr_slots += c->max_wr * vbe_wr_weight(c->max_sge);
	srq->pd = c->pd & 0xffff;
	srq->max_sge = c->max_sge;
	srq->consumed = 0;
	srq->users = 0;
	srq->handle = vbe_handle(&srq->s, idx);
	pd->users++;
	out[0] = srq->handle;
	return VRDMA_CS_OK;
}

/* Free an SRQ no QP uses (its receives go without completions, as
 * ibv_destroy_srq). */
void vbe_srq_free(struct vbe_guest *g, struct vbe_srq *srq)
{
	g->wr_slots -= srq->rq.size * vbe_wr_weight(srq->max_sge);
	g->pds[srq->pd].users--;
	vbe_wq_free(&srq->rq);
	memset((char *)srq + sizeof(srq->s), 0, sizeof(*srq) - sizeof(srq->s));
	vbe_slot_free(&srq->s);
}

int vbe_srq_destroy(struct vbe_guest *g, const struct vrdma_req *r)
{
	struct vbe_srq *srq = VBE_GET(g->srqs, VBE_MAX_SRQS, r->handle);

	if (!srq)
		return VRDMA_CS_NOENT;
	if (srq->users)
		return VRDMA_CS_BUSY;
	vbe_srq_free(g, srq);
	return VRDMA_CS_OK;
}

/* A receive for the SRQ: queue it; into an empty SRQ, the senders of
 * every QP on it that waited for a receive (RNR) may go on. */
int vbe_srq_recv(struct vbe_guest *g, const struct vrdma_req *r,
		 const struct vrdma_wire_sge *xsge)
{
	struct vbe_srq *srq = VBE_GET(g->srqs, VBE_MAX_SRQS, r->handle);
	struct vbe_wqe *w;
	uint32_t i, si;
	unsigned seen;

	if (!srq)
		return vbe_guest_fatal(g, "SRQ receive for unknown SRQ handle %#x", r->handle);
	if (r->num_sge > srq->max_sge)
		return vbe_guest_fatal(g, "SRQ receive num_sge %u > max_sge %u", r->num_sge,
				       srq->max_sge);
	if (srq->rq.count >= srq->rq.size)
		return vbe_guest_fatal(g, "more receives than SRQ %#x depth %u", r->handle,
				       srq->rq.size);
	w = vbe_wq_tail(&srq->rq);
	w->opcode = r->opcode;
	w->num_sge = r->num_sge;
	w->flags = r->flags;
	w->id = r->id;
	w->wr = r->u.wr;
	if (r->num_sge > VRDMA_WR_SGE)
		memcpy(w->xsge, xsge, (r->num_sge - VRDMA_WR_SGE) * sizeof(*xsge));
	if (r->num_sge > 1 && vbe_wr_too_long(w, r->num_sge))
		return vbe_guest_fatal(g, "SRQ receive of more than 4 GiB in %u SGEs",
				       r->num_sge);
	g->ctr.wrs++;
	srq->rq.count++;
	if (srq->dev)
		vbe_vx_srq_posted(g, srq);
	/* Senders wait for a receive only while the SRQ is empty: only the
	 * first receive after that has anyone to wake. */
	if (srq->rq.count != 1)
		return 0;
	si = (uint32_t)(srq - g->srqs) + 1;
	for (i = 0, seen = 0; i < VBE_MAX_QPS && seen < srq->users; i++) {
		struct vbe_qp *qp = &g->qps[i];

		if (!qp->s.used || qp->srq != si)
			continue;
		seen++;
		if (qp->state == VBE_QPS_RTS && qp->tgt)
			qp->tgt->rq_posted(g, qp);
	}
	return 0;
}
