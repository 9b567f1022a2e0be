// SPDX-License-Identifier: MIT
/*
 * Who is served next, and how much (issue 5; the rules are docs/prio.md).
 * One vbe_node_poll is one round:
 *
 *   classes   high, then normal, then low.  A class whose guests still
 *             have ready work after their turns blocks the classes below
 *             for this round: their data waits, their commands do not.
 *             Before each lower-class turn, a higher-class guest with new
 *             requests in its ring gets a turn first (preemption point),
 *             and while a higher class was busy in the last rounds a
 *             lower one moves small slices (VBE_SCHED_SLICE x weight).
 *   guard     a class blocked for VBE_SCHED_GUARD rounds in a row while
 *             it had work is served in the next one anyway, so a lower
 *             class is slowed, never starved.
 *   DRR       within a class, a backlogged guest's deficit grows by
 *             weight x quantum per round; its byte budget is the deficit;
 *             what it moved is taken off at the start of its next turn.
 *             An idle guest's deficit is reset: it costs nothing and
 *             saves nothing.
 *   bucket    a guest with a rate gets at most its tokens; with none left
 *             it is throttled: skipped, and not counted as work by
 *             vbe_node_arm, so the daemon sleeps until the next tick.
 *   commands  a guest with `cmds` runs at most that many commands per
 *             second (issue 12); the one found without a token stays in
 *             its ring (ring order holds) and the guest's ring is not
 *             counted as work until the tick refills.
 *
 * Budgets are in bytes and WRs (WRs scale with the weight too, so small
 * messages share by weight as well).  A big WR moves in pieces.
 */
#include <time.h>

#include "log.h"
#include "vring.h"
#include "../vbe.h"

int64_t vbe_sched_now(struct vbe_node *n)
{
	struct timespec ts;

	if (n->clock_us)
		return n->clock_us();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Requests waiting in the ring: a hint only, the guest writes prod. */
static bool vbe_sched_ring_work(struct vbe_guest *g)
{
	return g->sring && vring_load_acq(&g->sring->req.prod) != g->req_cons;
}

bool vbe_sched_ready(struct vbe_guest *g)
{
	return g->runq.count && !g->sch.throttled;
}

/* Ready, and not only QPs parked for the device since its last put. */
bool vbe_sched_spin(struct vbe_guest *g)
{
	const struct vbe_sched *s = &g->sch;

	return vbe_sched_ready(g) &&
	       (g->runq.count > s->dev_parked || s->dev_parked_gen != g->node->dev_gen);
}

/* Was a class above cls active in the last VBE_SCHED_RECENT rounds? */
static bool vbe_sched_upper_recent(struct vbe_node *n, unsigned cls)
{
	unsigned c;

	for (c = 0; c < cls && c < VBE_NCLASS; c++)
		if (n->busy_round[c] && n->sch_round - n->busy_round[c] < VBE_SCHED_RECENT)
			return true;
	return false;
}

/* A lower class squeezed in between a higher class's bursts moves small
 * slices: the higher class never waits behind a whole quantum. */
static uint64_t vbe_sched_quantum(struct vbe_guest *g)
{
	uint64_t base = g->node->poll_bytes < VBE_SCHED_QUANTUM ?
			g->node->poll_bytes : VBE_SCHED_QUANTUM;

	if (base > VBE_SCHED_SLICE && vbe_sched_upper_recent(g->node, g->prio.cls))
		base = VBE_SCHED_SLICE;

	return (g->prio.weight ? g->prio.weight : 1) * (base ? base : 1);
}

/* Tokens for the time since the last refill, never more than burst.
 * t_fill moves by exactly the time the tokens paid for: no drift. */
static void vbe_sched_refill(struct vbe_guest *g, int64_t now)
{
	struct vbe_sched *s = &g->sch;
	unsigned __int128 add;
	int64_t dt = now - s->t_fill;

	if (!g->prio.rate || dt <= 0) {
		if (dt < 0)
			s->t_fill = now;	/* clock went back: start over */
		return;
	}
	if (dt > 60 * 1000000ll)
		dt = 60 * 1000000ll;
	add = (unsigned __int128)g->prio.rate * (uint64_t)dt / 1000000u;
	if (s->tokens + add >= g->prio.burst) {
		s->tokens = g->prio.burst;
		s->t_fill = now;
		return;
	}
	s->tokens += (uint64_t)add;
	s->t_fill += (int64_t)(add * 1000000u / g->prio.rate);
}

/* 200 ms worth, as the data bucket's: the tick refills it in time. */
uint32_t vbe_sched_cmd_burst(uint32_t cmds)
{
	return cmds / 5 < 16 ? 16 : cmds / 5;
}

/*
 * Refill an empty command bucket (rate per second, burst 200 ms worth)
 * from the time it is counted to: no clock read per command, and *fill
 * moves by exactly what was granted (or to now when the bucket is full),
 * so its owner gets at most burst + rate x elapsed whatever its pattern.
 * Whether a token is there.
 */
static bool vbe_cmd_bucket(struct vbe_node *n, uint32_t *tokens, int64_t *fill,
			   uint32_t rate)
{
	uint32_t burst = vbe_sched_cmd_burst(rate);
	int64_t now, dt;
	uint64_t add;

	/* A rate lowered meanwhile: no more than its burst is banked. */
	if (*tokens > burst)
		*tokens = burst;
	if (*tokens)
		return true;
	now = n->round_us ? n->round_us : vbe_sched_now(n);
	dt = now - *fill;
	if (dt > 60 * 1000000ll)
		dt = 60 * 1000000ll;
	add = dt > 0 ? (uint64_t)rate * (uint64_t)dt / 1000000u : 0;
	if (add >= burst) {
		*tokens = burst;
		*fill = now;
	} else if (add) {
		*tokens = (uint32_t)add;
		*fill += (int64_t)(add * 1000000u / rate);
	}
	return *tokens != 0;
}

/* Take a command token: the guest's (prio.cmds) and its tenant's (issue
 * 12), both or neither.  Out of either: the command waits in the ring. */
bool vbe_sched_cmd_take(struct vbe_guest *g)
{
	struct vbe_sched *s = &g->sch;
	uint32_t rate = g->prio.cmds, trate = vbe_tenant_cmds(g);

	if (!rate && !trate)
		return true;
	if ((rate && !vbe_cmd_bucket(g->node, &s->cmd_tokens, &s->cmd_fill, rate)) ||
	    (trate && !vbe_cmd_bucket(g->node, &g->ten->cmd_tokens, &g->ten->cmd_fill,
				      trate))) {
		s->cmd_throttled = true;
		g->ctr.cmd_waits++;
		return false;
	}
	if (rate)
		s->cmd_tokens--;
	if (trate)
		g->ten->cmd_tokens--;
	return true;
}

/* The end of g's last turn: charge what it moved since, refill. */
static void vbe_sched_settle(struct vbe_guest *g, int64_t now)
{
	struct vbe_sched *s = &g->sch;
	uint64_t used = s->given > g->budget_bytes ? s->given - g->budget_bytes : 0;

	s->deficit -= (int64_t)used;
	if (s->deficit < 0)
		s->deficit = 0;
	s->tokens = used < s->tokens ? s->tokens - used : 0;
	if (s->throttled && s->t_round && now > s->t_round)
		g->ctr.throttled_us += (uint64_t)(now - s->t_round);
	s->t_round = now;
	s->given = 0;
	s->ahead = 0;
	g->budget_bytes = 0;
	g->budget_wrs = 0;
	vbe_sched_refill(g, now);
}

/* g's turn: *waited = it had data work but its class was blocked;
 * returns requests handled, *busy = ready work left after the turn. */
static int vbe_sched_turn(struct vbe_guest *g, bool allow, int64_t now,
			  bool *waited, bool *busy)
{
	struct vbe_sched *s = &g->sch;
	uint64_t q, bytes, wrs;
	bool backlog;
	int done;

	if (!g->connected || g->dead) {
		vbe_dev_turn_end(g, false);
		return 0;
	}
	vbe_sched_settle(g, now);
	backlog = g->runq.count || vbe_sched_ring_work(g);
	if (allow) {
		q = vbe_sched_quantum(g);
		/* Holding the device: it spends what it has, no new round. */
		if (g->node->dev_hold != g)
			s->deficit = (int64_t)(s->deficit + q > 2 * q ? 2 * q : s->deficit + q);
		bytes = (uint64_t)s->deficit;
		if (g->prio.rate && bytes > s->tokens)
			bytes = s->tokens;
		wrs = (uint64_t)g->node->poll_wrs * (g->prio.weight ? g->prio.weight : 1);
		g->budget_bytes = bytes;
		g->budget_wrs = (unsigned)(wrs > 4096 ? 4096 : wrs);
		s->given = bytes;
	} else if (backlog) {
		*waited = true;
	}
	s->dev_parked = 0;
	vbe_run_start(g);
	done = vbe_ring_poll(g);
	/* Throttled: work left and the bucket is what stopped it. */
	s->throttled = g->prio.rate && g->runq.count &&
		       s->tokens <= s->given - g->budget_bytes;
	vbe_dev_turn_end(g, allow);
	/* Idle: no credit saved up.  WRs parked behind the device (their
	 * QP waits for completions, not on the run list) are not idle. */
	if (!g->runq.count && !vbe_sched_ring_work(g) && !s->dev_bytes)
		s->deficit = 0;
	if (vbe_sched_ready(g) ||
	    (!s->throttled && !s->cmd_throttled && vbe_sched_ring_work(g)))
		*busy = true;
	return done;
}

/*
 * Preemption point before a lower-class turn: a guest of a class above
 * cls whose ring has new requests gets another turn now rather than after
 * everybody below (its latency is one lower-class turn, not a round).
 */
static int vbe_sched_preempt(struct vbe_node *n, unsigned cls, int64_t now, bool *busy)
{
	struct vbe_guest *h;
	bool waited = false;
	int total = 0;

	for (h = n->guests; h; h = h->next)
		if (h->prio.cls < cls && h->connected && !h->dead &&
		    !h->sch.throttled && !h->sch.cmd_throttled && vbe_sched_ring_work(h))
			total += vbe_sched_turn(h, true, now, &waited, busy);
	return total;
}

int vbe_sched_round(struct vbe_node *n)
{
	unsigned count = 0, first, i, pass, cls, upper = 0;
	int64_t now = vbe_sched_now(n);
	bool higher_busy = false;
	struct vbe_guest *g;
	int total = 0;

	for (g = n->guests; g; g = g->next) {
		count++;
		upper += g->prio.cls < VBE_CLASS_LOW;
	}
	first = count ? n->rr++ % count : 0;
	n->sch_round++;
	n->round_us = now;
	for (cls = 0; cls < VBE_NCLASS; cls++) {
		bool allow = !higher_busy || n->starve[cls] >= VBE_SCHED_GUARD;
		bool waited = false, busy = false, active = false;
		int done;

		/* Who goes first within the class rotates. */
		for (pass = 0; pass < 2; pass++)
			for (i = 0, g = n->guests; g; g = g->next, i++) {
				if ((pass == 0) != (i >= first) || g->prio.cls != cls)
					continue;
				if (cls && upper)
					total += vbe_sched_preempt(n, cls, now, &higher_busy);
				done = vbe_sched_turn(g, allow, now, &waited, &busy);
				active = active || done > 0;
				total += done;
			}
		/* Active (any request, or work left): lower classes take
		 * slices for a while, so the next request waits less. */
		if (busy || active)
			n->busy_round[cls] = n->sch_round;
		if (allow)
			n->starve[cls] = 0;
		else if (waited)
			n->starve[cls]++;
		higher_busy = higher_busy || busy;
	}
	n->round_us = 0;
	return total;
}

/* Once a second: bytes/s each way for `vrdmactl stats` and `top`. */
void vbe_sched_tick(struct vbe_node *n, int64_t now_ms)
{
	int64_t dt = now_ms - n->rate_mark_ms;
	struct vbe_guest *g;

	if (dt < 1000 && dt >= 0)
		return;
	for (g = n->guests; g; g = g->next) {
		if (dt > 0 && dt < 10000) {
			g->sch.bps_tx = (g->ctr.tx_bytes - g->sch.last_tx) * 1000 / (uint64_t)dt;
			g->sch.bps_rx = (g->ctr.rx_bytes - g->sch.last_rx) * 1000 / (uint64_t)dt;
		}
		g->sch.last_tx = g->ctr.tx_bytes;
		g->sch.last_rx = g->ctr.rx_bytes;
	}
	n->rate_mark_ms = now_ms;
}

/* qp went to RTS: send WRs posted while it connected wait from now on (the
 * connection's time is not queue delay); later ones are stamped as
 * queued (ring.c). */
void vbe_sched_held(struct vbe_node *n, struct vbe_qp *qp)
{
	int64_t now = n->round_us ? n->round_us : vbe_sched_now(n);
	uint32_t i, j = qp->sq.head;

	for (i = 0; i < qp->sq.count; i++) {
		qp->sq.e[j].t_q = now;
		if (++j == qp->sq.size)
			j = 0;
	}
}
