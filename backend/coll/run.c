// SPDX-License-Identifier: MIT
/*
 * A team's operations in dom0: an OP_COLL entry checked and queued on
 * its member, then, once every member posted the same seq, run chunk by
 * chunk from the node's poll: fold the send ranges in rank order into
 * the node's scratch, copy the scratch into the receive ranges.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../vbe.h"
#include "coll.h"
#include "../../common/coll/vcoll_reduce.h"

static bool vbe_coll_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

void vbe_coll_queue(struct vbe_node *n, struct vbe_team *t)
{
	if (t->queued)
		return;
	t->queued = true;
	t->run_next = n->coll->run;
	n->coll->run = t;
}

/* Has every member posted the next operation?  Counted as they post, not
 * looked for: an OP_COLL costs dom0 the same in a team of 2 or 4096. */
static bool vbe_coll_ready(const struct vbe_team *t)
{
	return t->state == VBE_TEAM_READY && !t->span && t->nready == t->size;
}

int vbe_coll_post(struct vbe_guest *g, const struct vrdma_req *r)
{
	const struct vrdma_coll_wr *w = &r->u.coll;
	struct vbe_cref *ref = vbe_coll_ref(g, r->handle);
	struct vbe_cmember *m;
	struct vbe_team *t;

	if (!ref)
		return vbe_guest_fatal(g, "OP_COLL for unknown team %#x", r->handle);
	if (r->num_sge || r->flags || w->reserved0 || !vbe_coll_zero(w->reserved, sizeof(w->reserved)))
		return vbe_guest_fatal(g, "OP_COLL with reserved fields set");
	if (w->kind < VBE_CK_ALLREDUCE || w->kind > VBE_CK_ALLGATHER)
		return vbe_guest_fatal(g, "OP_COLL of kind %u", w->kind);
	t = ref->t;
	m = t->m[ref->rank];
	if (t->state == VBE_TEAM_JOINING)
		return vbe_guest_fatal(g, "OP_COLL before team %#x is ready", r->handle);
	if (w->seq != m->posted + 1)
		return vbe_guest_fatal(g, "OP_COLL seq %llu, expected %llu",
				       (unsigned long long)w->seq,
				       (unsigned long long)(m->posted + 1));
	if (m->posted - m->cdone >= VRDMA_TEAM_DEPTH)
		return vbe_guest_fatal(g, "more than %u OP_COLLs pending", VRDMA_TEAM_DEPTH);
	m->q[w->seq % VRDMA_TEAM_DEPTH].id = r->id;
	m->q[w->seq % VRDMA_TEAM_DEPTH].w = *w;
	m->posted++;
	g->ctr.wrs++;
	if (t->state != VBE_TEAM_READY) {	/* failed, or run by the members */
		m->cdone++;
		vbe_coll_cqe(m, r->id, VRDMA_WS_WR_FLUSH_ERR, 0);
		return 0;
	}
	if (t->span) {			/* chain_run.c looks at every poll */
		t->span->moved = 1;
		return 0;
	}
	if (m->posted == t->done + 1)
		t->nready++;
	if (vbe_coll_ready(t))
		vbe_coll_queue(g->node, t);
	return 0;
}

/* Bytes rank r's send and receive ranges must have. */
void vbe_coll_lens(const struct vbe_team *t, const struct vbe_cx *x, uint32_t r,
			  uint64_t *send, uint64_t *recv)
{
	const struct vrdma_coll_wr *w = x->w;

	*send = *recv = 0;
	switch (w->kind) {
	case VBE_CK_ALLREDUCE:
		*send = *recv = x->vbytes;
		break;
	case VBE_CK_REDUCE:
		*send = x->vbytes;
		*recv = r == w->root ? x->vbytes : 0;
		break;
	case VBE_CK_BCAST:
		*(r == w->root ? send : recv) = w->count;
		break;
	case VBE_CK_ALLGATHER:
		*send = w->count;
		*recv = (uint64_t)t->size * w->count;
		break;
	}
}

/* 0, or the status every member's op completes with: they disagree, or
 * they agree on something no one can run. */
static uint8_t vbe_coll_agree(const struct vbe_team *t, struct vbe_cx *x)
{
	const struct vrdma_coll_wr *w = &t->m[0]->q[(t->done + 1) % VRDMA_TEAM_DEPTH].w;

	for (uint32_t r = 1; r < t->size; r++)
		if (!vbe_coll_same(&t->m[r]->q[(t->done + 1) % VRDMA_TEAM_DEPTH].w, w))
			return VRDMA_WS_REM_INV_REQ_ERR;
	return vbe_coll_check_op(w, t->size, x);
}

/* 0 and @x, or the status of an operation no team of @size can run. */
uint8_t vbe_coll_check_op(const struct vrdma_coll_wr *w, uint32_t size, struct vbe_cx *x)
{
	size_t bytes;

	x->w = w;
	x->es = 1;
	switch (w->kind) {
	case VBE_CK_ALLREDUCE:
	case VBE_CK_REDUCE:
		if (vcoll_check(w->type, w->op, w->count, &bytes) ||
		    (w->kind == VBE_CK_REDUCE && w->root >= size))
			return VRDMA_WS_REM_INV_REQ_ERR;
		x->es = vcoll_type_size(w->type);
		x->vbytes = bytes;
		return 0;
	case VBE_CK_BCAST:
		x->vbytes = w->count;
		return w->root < size && !w->type && !w->op ? 0 : VRDMA_WS_REM_INV_REQ_ERR;
	case VBE_CK_BARRIER:
		x->vbytes = 0;
		return !w->type && !w->op && !w->root && !w->count ? 0 : VRDMA_WS_REM_INV_REQ_ERR;
	default:		/* ALLGATHER */
		if (w->type || w->op || w->root || w->count > (UINT64_C(1) << 40) / size)
			return VRDMA_WS_REM_INV_REQ_ERR;
		x->vbytes = (uint64_t)size * w->count;
		return 0;
	}
}

/* Do two members' operations agree (what each must have the same)? */
bool vbe_coll_same(const struct vrdma_coll_wr *a, const struct vrdma_coll_wr *b)
{
	return a->kind == b->kind && a->type == b->type && a->op == b->op &&
	       a->root == b->root && a->count == b->count;
}

/*
 * Rank r's ranges of its operation seq, looked up in its MRs now: NULL
 * where it has none.  -ECONNRESET: it left or was disabled; -EFAULT: a
 * range that is not its own.
 */
int vbe_coll_range(const struct vbe_team *t, const struct vbe_cx *x, uint32_t r, uint64_t seq,
		   uint8_t **sp, uint8_t **rp)
{
	const struct vbe_cmember *m = t->m[r];
	const struct vrdma_coll_wr *w;
	uint64_t sl, rl;

	if (!m || m->g->dead)
		return -ECONNRESET;
	w = &m->q[seq % VRDMA_TEAM_DEPTH].w;
	vbe_coll_lens(t, x, r, &sl, &rl);
	if (w->sge[0].length != sl || w->sge[1].length != rl)
		return -EFAULT;
	*sp = sl ? vbe_mr_ptr(m->g, m->pd, w->sge[0].lkey, w->sge[0].addr, sl, 0) : NULL;
	*rp = rl ? vbe_mr_ptr(m->g, m->pd, w->sge[1].lkey, w->sge[1].addr, rl,
			      VRDMA_ACC_LOCAL_WRITE) : NULL;
	return (sl && !*sp) || (rl && !*rp) ? -EFAULT : 0;
}

/* Rank r's operation seq is whole: its completion. */
void vbe_coll_done_rank(struct vbe_team *t, const struct vbe_cx *x, uint32_t r, uint64_t seq)
{
	struct vbe_cmember *m = t->m[r];
	uint64_t sl, rl;

	vbe_coll_lens(t, x, r, &sl, &rl);
	vbe_coll_cqe(m, m->q[seq % VRDMA_TEAM_DEPTH].id, VRDMA_WS_SUCCESS,
		     rl > UINT32_MAX ? UINT32_MAX : (uint32_t)rl);
	m->cdone++;
}

/*
 * Every member's ranges for this chunk, looked up in its MRs now: NULL in
 * sp/rp where it has none.  A member whose range is not its own (or has
 * left, or was disabled) makes it -1: @bad is that rank.
 */
static int vbe_coll_ranges(struct vbe_team *t, const struct vbe_cx *x, uint8_t **sp,
			   uint8_t **rp, uint32_t *bad)
{
	for (uint32_t r = 0; r < t->size; r++) {
		int rc = vbe_coll_range(t, x, r, t->done + 1, &sp[r], &rp[r]);

		if (rc) {
			*bad = r;
			return rc;
		}
	}
	return 0;
}

/* ALLGATHER: the chunk [off, off + len) of the result into @dst, each
 * block's part read once from its member. */
static void vbe_coll_gather(const struct vbe_team *t, const struct vbe_cx *x,
			    uint8_t *const *sp, uint8_t *dst, uint64_t off, uint64_t len)
{
	uint64_t cnt = x->w->count;

	for (uint32_t q = (uint32_t)(off / cnt); q < t->size && (uint64_t)q * cnt < off + len; q++) {
		uint64_t lo = (uint64_t)q * cnt, hi = lo + cnt;

		if (lo < off)
			lo = off;
		if (hi > off + len)
			hi = off + len;
		memcpy(dst + (lo - off), sp[q] + (lo - (uint64_t)q * cnt), hi - lo);
	}
}

/*
 * One chunk of the running op.  0, or -errno with *bad the member to
 * blame (its ranges) or UINT32_MAX (the kernels refused: cannot happen
 * after vbe_coll_agree).  Every kind makes the chunk in the scratch
 * first, reading each source byte once, then copies it out: a guest
 * writing its own ranges meanwhile (another vCPU, or a receive range of
 * a rank it holds over a send range) changes what every member gets,
 * never what one member gets and another does not.
 */
static int vbe_coll_chunk(struct vbe_coll_node *cn, struct vbe_team *t, const struct vbe_cx *x,
			  uint64_t len, uint32_t *bad, uint64_t *cost)
{
	uint8_t **sp = cn->sp, **rp = cn->rp;
	const void **src = cn->src;
	const struct vrdma_coll_wr *w = x->w;
	uint32_t r;
	int rc;

	rc = vbe_coll_ranges(t, x, sp, rp, bad);
	if (rc)
		return rc;
	*bad = UINT32_MAX;
	if (!len)		/* BARRIER, or a count of 0 */
		goto charge;
	switch (w->kind) {
	case VBE_CK_ALLREDUCE:
	case VBE_CK_REDUCE:
		for (r = 0; r < t->size; r++)
			src[r] = sp[r] + t->off;
		rc = vcoll_fold(w->type, w->op, cn->scratch, src, t->size, len / x->es);
		if (rc)
			return rc;
		break;
	case VBE_CK_BCAST:
		memcpy(cn->scratch, sp[w->root] + t->off, len);
		break;
	case VBE_CK_ALLGATHER:
		vbe_coll_gather(t, x, sp, cn->scratch, t->off, len);
		break;
	}
	for (r = 0; r < t->size; r++)
		if (rp[r])
			memcpy(rp[r] + t->off, cn->scratch, len);
charge:
	/* Each member pays for what was read from and written to it. */
	*cost = 0;
	for (r = 0; r < t->size; r++) {
		uint64_t b = (rp[r] ? len : 0) + (sp[r] ? len : 0);

		vbe_budget_charge(t->m[r]->g, b);
		*cost += b;
	}
	t->off += len;
	return 0;
}

static void vbe_coll_complete(struct vbe_node *n, struct vbe_team *t, const struct vbe_cx *x)
{
	t->nready = 0;
	for (uint32_t r = 0; r < t->size; r++) {
		vbe_coll_done_rank(t, x, r, t->done + 1);
		t->nready += t->m[r]->posted > t->done + 1;	/* posted the next one */
	}
	t->done++;
	t->off = 0;
	t->ops++;
	t->bytes += x->vbytes;
	n->coll->ops++;
	n->coll->bytes += x->vbytes;
}

/*
 * The next chunk's length as the members' budgets allow (the scheduler's
 * weights, classes and rates, sched_round.c): a chunk costs each guest
 * its length for every range of its ranks it reads or writes, so the
 * length is what the poorest guest can pay, in powers of two down to 64
 * bytes (a multiple of every element).  0: some member cannot pay even
 * that this round, and the team waits, as a QP of that guest would.
 */
static uint64_t vbe_coll_afford(const struct vbe_team *t, const struct vbe_cx *x)
{
	uint64_t want = x->vbytes - t->off, pow = t->chunk, sl, rl, can;
	uint32_t r;

	if (!want)
		return 0;
	for (r = 0; r < t->size; r++)
		t->m[r]->g->coll->ways = 0;
	for (r = 0; r < t->size; r++) {
		vbe_coll_lens(t, x, r, &sl, &rl);
		t->m[r]->g->coll->ways += (sl != 0) + (rl != 0);
	}
	for (r = 0; r < t->size && pow; r++) {
		const struct vbe_guest *g = t->m[r]->g;

		if (!g->coll->ways)
			continue;
		can = g->budget_bytes / g->coll->ways;
		if (can >= pow || can >= want)
			continue;
		while (pow > 64 && pow > can)
			pow >>= 1;
		if (pow > can)
			pow = 0;
	}
	return want < pow ? want : pow;
}

/* Run @t's head operation for up to VBE_COLL_ROUND_CHUNKS chunks, while
 * the poll's *budget (members' bytes) and theirs last.  Returns the
 * chunks run, or -1 if the members' budgets held it before any. */
static int vbe_coll_step(struct vbe_node *n, struct vbe_team *t, uint64_t *budget)
{
	struct vbe_cx x;
	uint32_t bad = 0;
	uint64_t cost, len = 0;
	uint8_t ws;
	int rc = 0, k, ran = 0;

	ws = vbe_coll_agree(t, &x);
	if (ws) {
		vlog_warn("vrdmad: team %llu: members disagree on operation %llu",
			  (unsigned long long)t->serial, (unsigned long long)(t->done + 1));
		vbe_coll_fail(t, ws);
		n->coll->fails++;
		goto out;
	}
	for (k = 0; k < VBE_COLL_ROUND_CHUNKS && !rc && *budget; k++) {
		/* A vector's tail, barriers, counts of 0: nothing to pay */
		len = vbe_coll_afford(t, &x);
		if (!len && t->off < x.vbytes)
			break;
		cost = 0;
		rc = vbe_coll_chunk(n->coll, t, &x, len, &bad, &cost);
		ran++;
		*budget -= cost < *budget ? cost : *budget;
		if (!rc && t->off >= x.vbytes) {
			vbe_coll_complete(n, t, &x);
			break;
		}
	}
	/* A member that left or died is no range fault: its leave or its
	 * release fails the team, and it gets no completions. */
	if (rc == -EFAULT && bad < t->size) {
		struct vbe_cmember *m = t->m[bad];

		vlog_warn("vrdmad: %s: team %llu rank %u: a range that is not its own",
			  m->g->name, (unsigned long long)t->serial, bad);
		vbe_coll_cqe(m, m->q[(t->done + 1) % VRDMA_TEAM_DEPTH].id, VRDMA_WS_LOC_PROT_ERR, 0);
		m->cdone++;
	}
	if (rc) {
		vbe_coll_fail(t, VRDMA_WS_RETRY_EXC_ERR);
		n->coll->fails++;
	}
	if (!ran)
		return -1;		/* held: its members' budgets */
out:
	return ran + 1;
}

/* The teams with work, in turn, while VBE_COLL_ROUND_WORK lasts; those
 * the budget did not reach go first at the next poll. */
int vbe_coll_run(struct vbe_node *n)
{
	struct vbe_coll_node *cn = n->coll;
	uint64_t budget = VBE_COLL_ROUND_WORK;
	struct vbe_team *t, **pp, *head, **tail;
	bool held = false, spans_first = !(cn ? cn->rounds++ & 1 : 0);
	int work = 0, did;

	if (!cn || !cn->nteams)
		return 0;
	vbe_coll_tell(n);
	/* teams across nodes and one node's take turns at the poll's work */
	if (cn->spans && spans_first)
		work += vbe_chain_run(n, &budget);
	for (pp = &cn->run; (t = *pp) && budget;) {
		if (vbe_coll_ready(t)) {
			did = vbe_coll_step(n, t, &budget);
			held |= did < 0;
			work += did > 0 ? did : 0;
		}
		if (vbe_coll_ready(t)) {
			pp = &t->run_next;
			continue;
		}
		*pp = t->run_next;
		t->queued = false;
	}
	if (t && pp != &cn->run) {	/* [run, t) ran: after the others */
		head = cn->run;
		*pp = NULL;
		cn->run = t;
		for (tail = &cn->run; *tail; tail = &(*tail)->run_next)
			;
		*tail = head;
	}
	if (cn->spans && !spans_first)
		work += vbe_chain_run(n, &budget);
	cn->held = held && !work;
	return work;
}

/* Teams with work keep the loop polling, unless the last run moved
 * nothing for want of members' budgets: the scheduler's tick refills
 * those (a rate's tokens) or the members' own work keeps it busy. */
bool vbe_coll_busy(const struct vbe_node *n)
{
	const struct vbe_team *t;

	if (!n->coll)
		return false;
	if (n->coll->run && !n->coll->held)
		return true;
	for (t = n->coll->spans; t; t = t->span->next)
		if (t->span->moved)
			return true;
	return false;
}
