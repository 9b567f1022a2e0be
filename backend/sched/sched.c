// SPDX-License-Identifier: MIT
/*
 * Work that waits for a later moment, bounded by the object tables:
 *
 *   event queue  QPs whose CONNECTED / REJECTED / QP_ERROR found the
 *                guest's event ring short of space (review C1).  Async
 *                events never take the ring's last free slot: that one
 *                is the result of the single command in flight.
 *   run list     QPs whose send queue outlived the guest's budget for
 *                this poll (review C3): a guest posting huge WRs gets
 *                its share and the others get theirs.
 *
 * Both are FIFOs of QP handles; a QP is on each at most once (qp->evq,
 * qp->runq) and leaves them when destroyed.
 *
 * Who is served, and how much: sched_round.c (issue 5).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "../vbe.h"
#include "../target.h"

int vbe_qfifo_init(struct vbe_qfifo *q)
{
	q->h = calloc(VBE_MAX_QPS, sizeof(*q->h));
	q->head = q->count = 0;
	return q->h ? 0 : -ENOMEM;
}

void vbe_qfifo_fini(struct vbe_qfifo *q)
{
	free(q->h);
	q->h = NULL;
	q->head = q->count = 0;
}

static void vbe_qfifo_push(struct vbe_qfifo *q, uint32_t h)
{
	/* Callers keep one entry per live QP: never more than VBE_MAX_QPS. */
	q->h[(q->head + q->count) % VBE_MAX_QPS] = h;
	q->count++;
}

static uint32_t vbe_qfifo_pop(struct vbe_qfifo *q)
{
	uint32_t h = q->h[q->head];

	q->head = (q->head + 1) % VBE_MAX_QPS;
	q->count--;
	return h;
}

/* Rare (a QP destroyed while queued): close the gap, keep the order. */
static void vbe_qfifo_remove(struct vbe_qfifo *q, uint32_t h)
{
	uint32_t i, j, n = q->count;

	for (i = j = 0; i < n; i++) {
		uint32_t v = q->h[(q->head + i) % VBE_MAX_QPS];

		if (v != h)
			q->h[(q->head + j++) % VBE_MAX_QPS] = v;
	}
	q->count = j;
}

/* ---- async QP events ---- */

static bool vbe_evq_out(struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vrdma_evt e;

	if (qp->pend_cm.type) {
		if (vbe_evt_post(g, &qp->pend_cm, false))
			return false;
		qp->pend_cm.type = 0;
	}
	if (qp->pend_err) {
		memset(&e, 0, sizeof(e));
		e.type = VRDMA_EVT_QP_ERROR;
		e.status = qp->pend_err;
		e.handle = qp->handle;
		if (vbe_evt_post(g, &e, false))
			return false;
		qp->pend_err = 0;
	}
	return true;
}

/*
 * An async event for qp: onto the ring if nothing waits before it and
 * there is room, else remembered on the QP (one CM result, one error).
 */
void vbe_evt_qp(struct vbe_guest *g, struct vbe_qp *qp, const struct vrdma_evt *e)
{
	if (g->dead || !g->connected)
		return;
	if (!g->evq.count && !vbe_evt_post(g, e, false))
		return;
	if (e->type == VRDMA_EVT_QP_ERROR) {
		qp->pend_err = e->status ? e->status : VRDMA_CS_UNREACH;
	} else {
		if (qp->pend_cm.type)
			g->ctr.evt_dropped++;	/* only a guest ignoring its CM */
		qp->pend_cm = *e;
	}
	if (!qp->evq) {
		qp->evq = true;
		vbe_qfifo_push(&g->evq, qp->handle);
	}
}

/* QP_ERROR with status (UNREACH: peer gone; NOMEM: its CQ overran). */
void vbe_evt_qp_error(struct vbe_guest *g, struct vbe_qp *qp, uint16_t status)
{
	struct vrdma_evt e;

	memset(&e, 0, sizeof(e));
	e.type = VRDMA_EVT_QP_ERROR;
	e.status = status;
	e.handle = qp->handle;
	vbe_evt_qp(g, qp, &e);
}

/* Ring space came back: waiting QP events, then connection requests. */
void vbe_evt_drain(struct vbe_guest *g)
{
	struct vbe_qp *qp;

	while (g->evq.count && !g->dead) {
		qp = VBE_GET(g->qps, VBE_MAX_QPS, g->evq.h[g->evq.head]);
		if (qp && !vbe_evq_out(g, qp))
			return;
		vbe_qfifo_pop(&g->evq);
		if (qp)
			qp->evq = false;
	}
	if (g->nconnq && !g->dead)
		vbe_cm_deliver(g);
}

/* ---- run list and budgets ---- */

/* g's budget ran out (vbe_budget_left, vbe.h): qp waits on the run list. */
bool vbe_budget_out(struct vbe_guest *g, struct vbe_qp *qp)
{
	if (!qp->runq) {
		qp->runq = true;
		vbe_qfifo_push(&g->runq, qp->handle);
	}
	return false;
}

/* g's turn in vbe_sched_round (budget already set): leftover work first. */
void vbe_run_start(struct vbe_guest *g)
{
	uint32_t todo = g->runq.count;
	struct vbe_qp *qp;

	/* Budgets come from vbe_sched_round.  Each QP at most once per
	 * turn: one that runs out goes back on. */
	while (todo-- && g->runq.count && !g->dead && g->budget_wrs && g->budget_bytes) {
		qp = VBE_GET(g->qps, VBE_MAX_QPS, vbe_qfifo_pop(&g->runq));
		if (!qp)
			continue;
		qp->runq = false;
		if (qp->state == VBE_QPS_RTS && qp->tgt)
			qp->tgt->sq_run(g, qp);
	}
}

/* qp is going away: off both lists. */
void vbe_sched_qp_gone(struct vbe_guest *g, struct vbe_qp *qp)
{
	if (qp->evq)
		vbe_qfifo_remove(&g->evq, qp->handle);
	if (qp->runq)
		vbe_qfifo_remove(&g->runq, qp->handle);
	qp->evq = qp->runq = false;
}

/* ---- device credits (issue 5) ---- */

/* A QP of g waits for a device completion (its credits, or room on a full
 * device): polling again cannot move it, the completion's vbe_dev_put
 * will.  So vrdmad sleeps on the completion channel instead of spinning. */
static void vbe_dev_park(struct vbe_guest *g, struct vbe_qp *qp, bool completion)
{
	if (qp->runq)
		return;		/* queued already, maybe for more than this */
	qp->runq = true;
	vbe_qfifo_push(&g->runq, qp->handle);
	if (completion) {
		g->sch.dev_parked++;
		g->sch.dev_parked_gen = g->node->dev_gen;
	}
}

/* One WR onto the device for g, if its credits allow; else qp waits on
 * the run list, like a spent budget. */
bool vbe_credit_take(struct vbe_guest *g, struct vbe_qp *qp)
{
	if (g->sch.credits_used < g->prio.credits) {
		g->sch.credits_used++;
		return true;
	}
	vbe_dev_park(g, qp, true);
	return false;
}

void vbe_credit_put(struct vbe_guest *g)
{
	if (g->sch.credits_used)
		g->sch.credits_used--;
}

/*
 * Room for a send WR of `bytes` on the node's device (VBE_DEV_BYTES, all
 * guests; one WR always fits an idle device).  DRR with the device as the
 * link: a guest whose turn finds no room holds the device, so the room
 * freed next is its, not that of whoever completes or comes first, until
 * it has spent its round's bytes (vbe_dev_turn_end).  Else qp waits on the
 * run list.  A hold lasts VBE_DEV_HOLD_MS at most.
 */
bool vbe_dev_take(struct vbe_guest *g, struct vbe_qp *qp, uint64_t bytes)
{
	struct vbe_node *n = g->node;
	bool room = !n->dev_bytes || n->dev_bytes + bytes <= n->dev_max;

	if (n->dev_hold && n->dev_hold != g &&
	    vplat_now_ms() - n->dev_hold_ms > VBE_DEV_HOLD_MS) {
		n->dev_hold = NULL;
		n->dev_hold_expired++;
	}
	if (room && (!n->dev_hold || n->dev_hold == g)) {
		n->dev_bytes += bytes;
		g->sch.dev_bytes += bytes;
		return true;
	}
	n->dev_full += !room;
	if (!n->dev_hold) {
		n->dev_hold = g;
		n->dev_hold_ms = vplat_now_ms();
	}
	/* No room: a completion frees some.  Room but held by another:
	 * its turn comes this round, keep polling. */
	vbe_dev_park(g, qp, !room);
	return false;
}

/* g: NULL when the guest is gone already. */
void vbe_dev_put(struct vbe_node *n, struct vbe_guest *g, uint64_t bytes)
{
	n->dev_bytes -= bytes < n->dev_bytes ? bytes : n->dev_bytes;
	n->dev_gen++;
	if (g)
		g->sch.dev_bytes -= bytes < g->sch.dev_bytes ? bytes : g->sch.dev_bytes;
}

/* g's turn ended: it lets go of the device once its bytes are spent, it
 * has no work left, or it may not run now. */
void vbe_dev_turn_end(struct vbe_guest *g, bool allow)
{
	struct vbe_node *n = g->node;
	bool work = g->runq.count || g->sch.dev_bytes;	/* CQEs run it */

	if (n->dev_hold == g && (!allow || !g->budget_bytes || !work || g->dead))
		n->dev_hold = NULL;
}
