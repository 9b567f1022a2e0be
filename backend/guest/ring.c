// SPDX-License-Identifier: MIT
/*
 * The guest's rings: pull requests (netback's discipline -- sanity-check
 * the producer index, copy each entry out before looking at it, validate
 * every field) and produce events.  Structural nonsense that libvrdma
 * never produces disables the guest; it never touches another guest.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "vring.h"
#include "../vbe.h"
#include "../target.h"
#include "../trace/lat.h"

/* Disable g with a logged reason; returns -EPROTO for the caller's use. */
int vbe_guest_fatal(struct vbe_guest *g, const char *fmt, ...)
{
	va_list ap;

	if (g->dead)
		return -EPROTO;
	va_start(ap, fmt);
	vsnprintf(g->why, sizeof(g->why), fmt, ap);
	va_end(ap);
	vlog_warn("guest %u disabled: %s", g->domid, g->why);
	/* Resources go at the next safe point (vbe_node_poll's reap): the
	 * caller may be deep inside this guest's objects. */
	g->dead = true;
	g->ctr.violations++;
	g->node->disabled++;
	g->node->reap = true;
	return -EPROTO;
}

/* ---- event ring (dom0 produces) ---- */

static int vbe_evt_space(struct vbe_guest *g, uint32_t *space)
{
	uint32_t cons = vring_load_acq(&g->sring->evt.cons);

	if (!vring_sane(g->evt_prod, cons, g->evt_size)) {
		vbe_guest_fatal(g, "impossible event ring cons %u (prod %u)",
				cons, g->evt_prod);
		return -EPROTO;
	}
	*space = g->evt_size - (g->evt_prod - cons);
	return 0;
}

static void vbe_evt_put(struct vbe_guest *g, const struct vrdma_evt *e)
{
	g->evt[g->evt_prod & (g->evt_size - 1)] = *e;
	g->evt_prod++;
}

/*
 * Post an event.  A CMD_DONE always fits for an honest guest (one command
 * in flight): async events never take the last free slot (review C1), so
 * a guest that is slow to drain them cannot be disabled by a peer's
 * CONNECT flood.  An async event that does not fit returns -ENOSPC and
 * the caller keeps it on its object (sched.c, cm.c).
 */
int vbe_evt_post(struct vbe_guest *g, const struct vrdma_evt *e, bool cmd)
{
	uint32_t space;

	if (g->dead || !g->connected)
		return -EPIPE;
	if (vbe_evt_space(g, &space))
		return -EPROTO;
	if (space > (cmd ? 0u : 1u)) {
		vbe_evt_put(g, e);
		return 0;
	}
	if (cmd) {
		vbe_guest_fatal(g, "event ring full for a command result");
		return -EPROTO;
	}
	return -ENOSPC;
}

/* Two events back to back (CONN_FROM, CONN_REQUEST), or neither:
 * -ENOSPC while the ring has not room for both and a command's result. */
int vbe_evt_post2(struct vbe_guest *g, const struct vrdma_evt *a, const struct vrdma_evt *b)
{
	uint32_t space;

	if (g->dead || !g->connected)
		return -EPIPE;
	if (vbe_evt_space(g, &space))
		return -EPROTO;
	if (space <= 2)
		return -ENOSPC;
	vbe_evt_put(g, a);
	vbe_evt_put(g, b);
	return 0;
}

/* End of a batch: publish events and CQEs, one notification at most. */
void vbe_ring_flush(struct vbe_guest *g)
{
	if (!g->connected || g->dead)
		return;
	if (g->cq_err)
		vbe_cq_err_run(g);
	/* CQEs before events: once the guest sees DESTROY_QP's result it
	 * treats every CQE it cannot see yet as coming from the future. */
	vbe_cq_flush(g);
	vbe_evt_drain(g);
	if (g->evt_prod != g->evt_pub && !g->dead) {
		if (vring_push(&g->sring->evt, g->evt_pub, g->evt_prod))
			g->kick = true;
		g->evt_pub = g->evt_prod;
	}
	if (g->kick && !g->dead) {
		vplat_notify(g->chan);
		vbe_lt_kick(g);
	}
	g->kick = false;
}

/* ---- requests (guest produces) ---- */

/* The 16 reserved bytes of a WR are zero: two loads, not a byte loop. */
static bool vbe_zero16(const uint8_t *p)
{
	uint64_t a, b;

	memcpy(&a, p, 8);
	memcpy(&b, p + 8, 8);
	return !(a | b);
}

/* num_sge, flags and the reserved bytes of a WR (a private copy). */
static int vbe_wr_check(struct vbe_guest *g, const struct vrdma_req *h,
			const struct vrdma_wr *wr, bool recv)
{
	if (h->num_sge > VRDMA_MAX_SGE)
		return vbe_guest_fatal(g, "WR with num_sge %u", h->num_sge);
	if (h->flags & ~(recv ? 0u : VRDMA_WR_F_ALL))
		return vbe_guest_fatal(g, "WR with reserved flags %#x", h->flags);
	_Static_assert(sizeof(wr->reserved) == 16, "reserved bytes");
	if (!vbe_zero16(wr->reserved))
		return vbe_guest_fatal(g, "WR with reserved bytes set");
	return 0;
}

/* A message is at most 2^32 - 1 bytes, as the CQE's byte_len and the
 * device's budgets count it (libvrdma refuses more): more is a guest's
 * lie, whatever its SGEs name. */
__attribute__((noinline)) bool vbe_wr_too_long(const struct vbe_wqe *w, unsigned n)
{
	uint64_t t = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		t += vbe_wqe_sge(w, i)->length;
	return t > UINT32_MAX;
}

/* A WR for qp failed vbe_wr_queue's checks: say which one. */
static __attribute__((noinline, cold)) int
vbe_wr_bad(struct vbe_guest *g, const struct vrdma_req *h, const struct vrdma_wr *wr,
	   const struct vbe_qp *qp, bool recv)
{
	if (vbe_wr_check(g, h, wr, recv))
		return -EPROTO;
	if (h->num_sge > qp->max_sge)
		return vbe_guest_fatal(g, "WR num_sge %u > QP max_sge %u",
				       h->num_sge, qp->max_sge);
	return vbe_guest_fatal(g, "receive posted to QP %#x of an SRQ", h->handle);
}

/*
 * Queue a SEND..RECV.  h is a private copy of the entry's header; body is
 * the entry's WR body, maybe still in the shared ring: it is read once,
 * straight into the dom0-private queue slot, and checked there (the slot
 * counts only once it passed), so a WR is copied once, not twice.  A send
 * WR's QP is left in *run: vbe_ring_poll runs it.
 */
static int vbe_wr_queue(struct vbe_guest *g, const struct vrdma_req *h,
			const struct vrdma_wr *body, const struct vrdma_wire_sge *xsge,
			struct vbe_qp **run)
{
	struct vbe_qp *qp;
	struct vbe_wq *q;
	struct vbe_wqe *w;
	bool recv = h->opcode == VRDMA_OP_RECV;

	qp = VBE_GET(g->qps, VBE_MAX_QPS, h->handle);
	if (!qp)
		return vbe_guest_fatal(g, "WR for unknown QP handle %#x", h->handle);
	q = recv ? &qp->rq : &qp->sq;
	if (q->count >= q->size) {
		if (recv && qp->srq)	/* its rq is empty: say why */
			return vbe_guest_fatal(g, "receive posted to QP %#x of an SRQ",
					       h->handle);
		return vbe_guest_fatal(g, "more WRs than QP %#x depth %u",
				       h->handle, q->size);
	}
	w = vbe_wq_tail(q);
	memcpy(&w->wr, body, sizeof(w->wr));
	/* From here on only the copy counts, whatever the guest writes. */
	__asm__ __volatile__("" ::: "memory");
	/* Every check in one test (qp->max_sge <= VRDMA_MAX_SGE, cmd.c);
	 * vbe_wr_bad finds which failed. */
	if (h->num_sge > qp->max_sge || (h->flags & ~(recv ? 0u : VRDMA_WR_F_ALL)) ||
	    !vbe_zero16(w->wr.reserved) || (recv && qp->srq))
		return vbe_wr_bad(g, h, &w->wr, qp, recv);
	/* num_sge <= max_sge: the slot's side table holds them. */
	if (h->num_sge > VRDMA_WR_SGE)
		memcpy(w->xsge, xsge, (h->num_sge - VRDMA_WR_SGE) * sizeof(*xsge));
	if (h->num_sge > 1 && vbe_wr_too_long(w, h->num_sge))
		return vbe_guest_fatal(g, "WR of more than 4 GiB in %u SGEs", h->num_sge);
	w->opcode = h->opcode;
	w->num_sge = h->num_sge;
	w->flags = h->flags;
	w->id = h->id;
	/* Queue delay from here (vbe_sched_start_wr): the round's clock. */
	w->t_q = qp->state == VBE_QPS_RTS ? g->node->round_us : 0;
	q->count++;
	g->ctr.wrs++;
	vbe_lt_wr(VBE_LT_PULL, g, qp, w, 0);

	if (qp->state == VBE_QPS_ERR)
		vbe_qp_error(g, qp);	/* posted to an errored QP: flushed */
	else if (qp->state == VBE_QPS_RTS && qp->tgt) {
		if (recv)
			qp->tgt->rq_posted(g, qp);
		else
			*run = qp;
	}
	/* RESET/CONNECTING: held until the connection is established. */
	return 0;
}

/* Run the send queue of a QP vbe_wr_queue left in *run. */
static void vbe_wr_run(struct vbe_guest *g, struct vbe_qp **run)
{
	struct vbe_qp *qp = *run;

	*run = NULL;
	if (!g->dead && qp->state == VBE_QPS_RTS && qp->tgt)
		qp->tgt->sq_run(g, qp);
}

/* r: a private copy of a whole entry that is not a SEND..RECV (those go
 * straight to vbe_wr_queue). */
static int vbe_req_handle(struct vbe_guest *g, const struct vrdma_req *r,
			  const struct vrdma_wire_sge *xsge)
{
	if (r->opcode == VRDMA_OP_COLL)
		return vbe_coll_post(g, r);
	if (r->opcode == VRDMA_OP_SRQ_RECV) {
		if (vbe_wr_check(g, r, &r->u.wr, true))
			return -EPROTO;
		return vbe_srq_recv(g, r, xsge);
	}
	if (r->opcode >= VRDMA_CMD_ATTACH_BUF && r->opcode <= VRDMA_CMD_LAST) {
		if (r->num_sge || r->flags)
			return vbe_guest_fatal(g, "command %#x with num_sge/flags set",
					       r->opcode);
		g->ctr.commands++;
		vbe_cmd_exec(g, r);
		return 0;
	}
	return vbe_guest_fatal(g, "unknown opcode %#x", r->opcode);
}

/*
 * The extension entries of a WR whose header (private copy h) says more
 * than VRDMA_WR_SGE SGEs, copied out of the ring into xsge and consumed:
 * they must all be published with it (wire.h).  0 or -EPROTO.
 */
static __attribute__((noinline, cold)) int
vbe_wr_ext(struct vbe_guest *g, const struct vrdma_req *h, uint32_t prod,
	   struct vrdma_wire_sge *xsge, int *n)
{
	uint32_t k, next;

	if (h->num_sge > VRDMA_MAX_SGE)
		return vbe_guest_fatal(g, "WR with num_sge %u", h->num_sge);
	next = VRDMA_SGE_EXT_ENTRIES(h->num_sge);
	if (prod - g->req_cons < next)
		return vbe_guest_fatal(g, "WR of %u SGEs published without its %u SGE entries",
				       h->num_sge, next);
	for (k = 0; k < next; k++) {
		const struct vrdma_req *e = &g->req[g->req_cons & (g->req_size - 1)];

		memcpy(xsge + k * VRDMA_EXT_SGE, e, sizeof(struct vrdma_sge_ext));
		g->req_cons++;
	}
	*n += (int)next;
	return 0;
}

/*
 * Pull at most max requests: any kind (the guest's turn), or with
 * recvs_only only the receives at the ring's head, stopping at the first
 * entry of another kind (vbe_ring_recvs).  g->polling keeps a pull from
 * starting inside another of the same guest's: later entries are later
 * posts.
 */
static int vbe_ring_pull(struct vbe_guest *g, bool recvs_only, unsigned max)
{
	struct vrdma_wire_sge xsge[VRDMA_SGE_EXT_ENTRIES(VRDMA_MAX_SGE) * VRDMA_EXT_SGE];
	const struct vrdma_req *e;
	struct vbe_qp *run = NULL;
	struct vrdma_req r;
	uint32_t prod;
	int n = 0;

	if (!g->connected || g->dead || g->polling)
		return 0;
	if (!recvs_only)
		g->sch.cmd_throttled = false;
	prod = vring_load_acq(&g->sring->req.prod);
	if (!vring_sane(prod, g->req_cons, g->req_size)) {
		vbe_guest_fatal(g, "impossible number of requests: prod %u cons %u size %u",
				prod, g->req_cons, g->req_size);
		return 0;
	}
	g->polling = true;
	/* A bounded batch per poll: the rest waits for the next round. */
	while (g->req_cons != prod && !g->dead && (unsigned)n < max) {
		e = &g->req[g->req_cons & (g->req_size - 1)];
		g->req_cons++;
		n++;
		/* The header first: a WR's body goes straight to its queue. */
		memcpy(&r, e, offsetof(struct vrdma_req, u));
		__asm__ __volatile__("" ::: "memory");
		if (recvs_only && r.opcode != VRDMA_OP_RECV && r.opcode != VRDMA_OP_SRQ_RECV) {
			g->req_cons--;
			n--;
			break;
		}
		/* Send WRs to one QP in a row run together: one sq_run, one
		 * peer lookup for the lot.  Any other entry runs them first,
		 * so effects keep the ring's order. */
		if (run && (r.handle != run->handle || r.opcode < VRDMA_OP_SEND ||
			    r.opcode >= VRDMA_OP_RECV))
			vbe_wr_run(g, &run);
		/* A WR's SGE entries follow it: out of the ring now, so
		 * the ring position always stays at an entry's start. */
		if (r.num_sge > VRDMA_WR_SGE &&
		    r.opcode >= VRDMA_OP_SEND && r.opcode <= VRDMA_OP_SRQ_RECV &&
		    vbe_wr_ext(g, &r, prod, xsge, &n))
			break;
		if (r.opcode >= VRDMA_OP_SEND && r.opcode <= VRDMA_OP_RECV) {
			vbe_wr_queue(g, &r, &e->u.wr, xsge, &run);
			continue;
		}
		/* Out of command tokens (prio.cmds), or the last command's
		 * answer is held (cmd.c): it stays in the ring, so the ring's
		 * order holds; the tick refills, the release moves it on. */
		if (r.opcode >= VRDMA_CMD_ATTACH_BUF && r.opcode <= VRDMA_CMD_LAST &&
		    (g->held || !vbe_sched_cmd_take(g))) {
			g->sch.cmd_throttled = true;
			g->req_cons--;
			n--;
			break;
		}
		/* Anything else: the rest of the entry.  The header stays the
		 * one read above (the opcode was decided on it). */
		memcpy(&r.u, &e->u, sizeof(r.u));
		__asm__ __volatile__("" ::: "memory");
		vbe_req_handle(g, &r, xsge);
		/* A buffer's pages are the command's work: a list page's
		 * worth counts as a request of the poll's budget. */
		if (r.opcode == VRDMA_CMD_ATTACH_BUF)
			n += (int)((r.u.attach_buf.npages < VRDMA_BUF_MAX_PAGES_IND ?
				    r.u.attach_buf.npages : VRDMA_BUF_MAX_PAGES_IND) /
				   VRDMA_REFS_PER_PAGE);
	}
	if (run)
		vbe_wr_run(g, &run);
	g->polling = false;
	if (!g->dead && (n || !recvs_only))
		vring_consumed(&g->sring->req, g->req_cons);
	g->ctr.requests += n;
	return n;
}

int vbe_ring_poll(struct vbe_guest *g)
{
	return vbe_ring_pull(g, false, g->node->poll_reqs);
}

/*
 * The receives g published and dom0 has not read yet, read now: a
 * datagram finding no receive posted.  The guest may have posted one and
 * told the sender before its turn came; on an HCA that receive would be
 * there, and a datagram would not be lost to dom0's reading order.  Only
 * receives at the ring's head: effects keep the ring's order, and the
 * sends and commands behind them wait for the guest's turn.  At most
 * poll_reqs of them between two of g's turns, as a turn reads: senders
 * of datagrams cannot make dom0 read more of g's ring than g may ask.
 */
int vbe_ring_recvs(struct vbe_guest *g)
{
	unsigned max = g->node->poll_reqs;
	int n;

	if (g->sch.ahead >= max)
		return 0;
	n = vbe_ring_pull(g, true, max - g->sch.ahead);
	g->sch.ahead += (unsigned)n;
	return n;
}
