// SPDX-License-Identifier: MIT
/*
 * Device SRQs: a guest SRQ whose QPs reach other nodes gets a twin
 * ibv_srq in the guest's device PD, made when its first such QP is.
 * The guest's receives move from the SRQ's FIFO (srq.c) onto the twin in
 * order, each with the srq_idx it is given then, so the device consumes
 * them for whichever QP a message arrives on and the completion names
 * the receive it took (target_verbs.c, vbe_vx_srq_cqe).
 *
 * A QP of the same SRQ bound inside the node takes its receives from the
 * FIFO: while the SRQ has QPs that are not on the device, or one in the
 * node took a receive (srq->local), the twin holds at most half of the
 * SRQ, so neither path can take every receive from the other.
 *
 * Twin entries are any free ones (each keeps its srq_idx): a receive the
 * device consumed for a QP destroyed before its completion was polled is
 * lost with its entry, which costs the twin one entry, never the SRQ.
 *
 * A receive with a bad SGE is posted without SGEs and remembers its
 * status: it fails (LOC_PROT_ERR) on the QP that consumes it, as verbs
 * reports a bad SRQ receive.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "verbs.h"

static void vbe_vx_srq_drop(struct vbe_vx *vx, struct vbe_vguest *vg, uint32_t si)
{
	struct vbe_vsrq *vs = vg->srqs[si];

	vg->srqs[si] = NULL;
	vg->nsrqs--;
	vbe_reap_srq(vx, vs);
}

/* Twins of SRQs the guest destroyed go (their QPs went before them). */
void vbe_vx_srq_sync(struct vbe_vx *vx, struct vbe_vguest *vg, const struct vbe_guest *g)
{
	uint32_t i;

	for (i = 0; i < VBE_MAX_SRQS && vg->nsrqs; i++) {
		const struct vbe_vsrq *vs = vg->srqs[i];

		if (vs && (!g->srqs || !g->srqs[i].s.used || g->srqs[i].s.gen != vs->gen))
			vbe_vx_srq_drop(vx, vg, i);
	}
}

/* The twin of guest SRQ index si, made on first use; NULL if the device
 * says no (the QP is refused). */
struct ibv_srq *vbe_vx_srq_get(struct vbe_vx *vx, struct vbe_vguest *vg,
			       struct vbe_guest *g, uint32_t si)
{
	struct vbe_srq *srq = &g->srqs[si];
	struct ibv_srq_init_attr a;
	struct vbe_vsrq *vs = vg->srqs[si];

	if (vs && vs->gen == srq->s.gen)
		return vs->srq;
	if (vs)
		vbe_vx_srq_drop(vx, vg, si);
	vs = calloc(1, sizeof(*vs));
	if (!vs)
		return NULL;
	vs->e = calloc(srq->rq.size, sizeof(*vs->e));
	memset(&a, 0, sizeof(a));
	a.attr.max_wr = srq->rq.size;
	a.attr.max_sge = srq->max_sge;
	if (vs->e)
		vs->srq = ibv_create_srq(vg->pd, &a);
	if (!vs->srq) {
		vlog_warn("rdma: guest %u: no device SRQ of %u: %s", g->domid, srq->rq.size,
			  strerror(errno));
		free(vs->e);
		free(vs);
		return NULL;
	}
	vs->gen = srq->s.gen;
	vs->size = srq->rq.size;
	vg->srqs[si] = vs;
	vg->nsrqs++;
	srq->dev = true;
	return vs->srq;
}

/* Move the guest's receives onto the twin, oldest first. */
void vbe_vx_srq_fill(struct vbe_vx *vx, struct vbe_vguest *vg, struct vbe_guest *g,
		     uint32_t si)
{
	struct vbe_srq *srq = &g->srqs[si];
	struct vbe_vsrq *vs = vg->srqs[si];
	struct ibv_sge sg[VRDMA_MAX_SGE];
	struct ibv_recv_wr wr, *bad;
	struct vbe_vsrq_ent *ent;
	const struct vbe_wqe *w;
	uint32_t cap, slot, k;
	uint64_t total;
	int st, nsg;

	if (!vs || vs->gen != srq->s.gen || !srq->s.used)
		return;
	vbe_vx_guest_sync(vx, vg, g);
	cap = srq->local || vs->qps < srq->users ? (vs->size + 1) / 2 : vs->size;
	while (vs->posted < cap && (w = vbe_wq_head(&srq->rq))) {
		for (k = 0; k < vs->size && vs->e[(vs->next + k) % vs->size].used; k++)
			;
		if (k == vs->size)
			break;		/* every entry lost: the twin is full */
		slot = (vs->next + k) % vs->size;
		vs->next = slot + 1;
		ent = &vs->e[slot];
		st = vbe_vx_sges(g, vg, srq->pd, w, VRDMA_ACC_LOCAL_WRITE, sg, &nsg, &total);
		if (st)
			nsg = 0;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = vbe_vx_wrid(VBE_VX_WR_SRQ, vs->gen, si << 16 | slot);
		wr.sg_list = nsg ? sg : NULL;
		wr.num_sge = nsg;
		if (ibv_post_srq_recv(vs->srq, &wr, &bad)) {
			vlog_warn("rdma: guest %u: ibv_post_srq_recv failed", g->domid);
			break;		/* the next receive or completion tries again */
		}
		ent->used = true;
		ent->id = w->id;
		ent->idx = srq->consumed++;
		ent->st = (uint8_t)st;
		srq->rq.head = (srq->rq.head + 1) % srq->rq.size;
		srq->rq.count--;
		vs->posted++;
	}
}

/* The guest posted to SRQ srq (srq.c): onto its twin, if it has one. */
void vbe_vx_srq_posted(struct vbe_guest *g, struct vbe_srq *srq)
{
	struct vbe_vx *vx = g->node->vx;
	struct vbe_vguest *vg;

	if (!vx || !srq->dev)
		return;
	for (vg = vx->guests; vg; vg = vg->next)
		if (vg->g == g) {
			vbe_vx_srq_fill(vx, vg, g, (uint32_t)(srq - g->srqs));
			return;
		}
}

/* A completion's receive, taken off the twin: false if it is stale. */
bool vbe_vx_srq_take(struct vbe_vguest *vg, uint64_t wr_id, struct vbe_vsrq_ent *out,
		     uint32_t *si)
{
	uint32_t slot = vbe_vx_wrid_slot(wr_id), ei = slot & 0xffff;
	struct vbe_vsrq *vs;

	*si = slot >> 16;
	if (*si >= VBE_MAX_SRQS)
		return false;
	vs = vg->srqs[*si];
	if (!vs || vs->gen != vbe_vx_wrid_gen(wr_id) || ei >= vs->size || !vs->e[ei].used)
		return false;
	*out = vs->e[ei];
	vs->e[ei].used = false;
	vs->posted--;
	return true;
}
