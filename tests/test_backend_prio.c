// SPDX-License-Identifier: MIT
/*
 * Issue 5: the scheduler across guests (docs/prio.md).  Flooding guests
 * keep their send queues full of 16 KiB WRITEs; each round is one
 * vbe_node_poll and the clock is ours, so every check is about bytes
 * served per round or per simulated second, never about elapsed time.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "backend_tg.h"
#include "../backend/vbe.h"
#include "../backend/target.h"
#include "ck_run.h"

#define WR_LEN		(16u * 1024)
#define BASE		4096u		/* node->poll_bytes: the DRR quantum base */

static int64_t fake_us;

static int64_t fake_clock(void)
{
	return fake_us;
}

struct flood {
	struct tg *g, *peer;
	unsigned out;
	uint64_t id;
};

/* Reap completions, then top the send queue up to DEPTH WRITEs. */
static void flood_fill(struct flood *f)
{
	struct vrdma_cqe c;
	struct vrdma_req r;

	while (tg_poll_cq(f->g, &c)) {
		ck_assert_uint_eq(c.status, VRDMA_WS_SUCCESS);
		f->out--;
	}
	while (f->out < DEPTH) {
		r = mkwr(f->g, VRDMA_OP_WRITE, VRDMA_WR_F_SIGNALED, ++f->id);
		add_sge(&r, DATA_OFF, WR_LEN, f->g->key);
		r.u.wr.remote_addr = IOVA + DATA_OFF;
		r.u.wr.rkey = f->peer->key;
		tg_push(f->g, &r);
		f->out++;
	}
}

static uint64_t served(struct tg *g)
{
	struct vbe_guest *bg = vbe_node_guest(node, g->domid, 0);

	ck_assert_ptr_nonnull(bg);
	return bg->ctr.tx_bytes;
}

/* n rounds of every flooder topping up, then one poll; tick_us per round. */
static void rounds(struct flood *f, unsigned nf, unsigned n, int64_t tick_us)
{
	unsigned i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < nf; j++)
			flood_fill(&f[j]);
		vbe_node_poll(node);
		fake_us += tick_us;
	}
}

static int set(const char *vm, const char *kv)
{
	char buf[128], *kvs[1] = { buf }, out[512];
	int err;

	snprintf(buf, sizeof(buf), "%s", kv);
	err = vbe_node_prio_set(node, vm, 1, kvs, tg_out(false));
	tg_out_end(out, sizeof(out));
	return err;
}

/* Two senders a -> b, c -> d, with the node's quantum base lowered. */
static void two_floods(struct tg *t, struct flood *f)
{
	tg_full(&t[0], 5);
	tg_full(&t[1], 6);
	tg_full(&t[2], 7);
	tg_full(&t[3], 8);
	tg_connect(&t[0], &t[1]);
	tg_connect(&t[2], &t[3]);
	node->poll_bytes = BASE;
	node->clock_us = fake_clock;
	fake_us = 1000000;
	memset(f, 0, 2 * sizeof(*f));
	f[0].g = &t[0];
	f[0].peer = &t[1];
	f[1].g = &t[2];
	f[1].peer = &t[3];
}

static void stop_all(struct tg *t)
{
	tg_stop(&t[3]);
	tg_stop(&t[2]);
	tg_stop(&t[1]);
	tg_stop(&t[0]);
}

/* served bytes of f[1] over f[0] in n rounds */
static double share_ratio(struct flood *f, unsigned n)
{
	uint64_t a0 = served(f[0].g), c0 = served(f[1].g), a, c;

	rounds(f, 2, n, 1000);
	a = served(f[0].g) - a0;
	c = served(f[1].g) - c0;
	ck_assert_uint_gt(a, 0);
	return (double)c / (double)a;
}

START_TEST(weights_split_bytes)
{
	struct tg t[4];
	struct flood f[2];
	double r;

	two_floods(t, f);
	ck_assert_int_eq(set("7", "weight=3"), 0);
	rounds(f, 2, 10, 1000);		/* warm up: queues full */
	r = share_ratio(f, 200);
	ck_assert_msg(r > 2.5 && r < 3.5, "weights 1:3 gave 1:%.2f", r);
	stop_all(t);
}
END_TEST

START_TEST(weight_changed_live)
{
	struct tg t[4];
	struct flood f[2];
	char path[256];
	double r;

	two_floods(t, f);
	rounds(f, 2, 10, 1000);
	r = share_ratio(f, 100);
	ck_assert_msg(r > 0.8 && r < 1.25, "equal weights gave 1:%.2f", r);
	/* An operator's write into the backend dir, applied by the watch. */
	snprintf(path, sizeof(path), "%s/weight", t[2].bdir);
	ck_assert_int_eq(vplat_key_write(dom0, path, "4"), 0);
	stub_run();
	ck_assert_uint_eq(vbe_node_guest(node, 7, 0)->prio.weight, 4);
	r = share_ratio(f, 100);
	ck_assert_msg(r > 3.3 && r < 4.7, "weights 1:4 gave 1:%.2f", r);
	/* And back through vrdmactl's path. */
	ck_assert_int_eq(set("dom7/0", "weight=1"), 0);
	r = share_ratio(f, 100);
	ck_assert_msg(r > 0.8 && r < 1.25, "back to 1:1 gave 1:%.2f", r);
	stop_all(t);
}
END_TEST

/* 1 MiB/s, 64 KiB burst, 2 simulated seconds of flooding: the guest gets
 * its bucket (no more than burst + rate x time, most of it), the other
 * one is not held back, and a throttled-only node lets the loop sleep. */
START_TEST(rate_limit_holds)
{
	const uint64_t rate = 1u << 20, burst = 64u << 10;
	struct tg t[4];
	struct flood f[2];
	uint64_t a0, a, c0, c;

	two_floods(t, f);
	node->poll_bytes = VBE_POLL_BYTES;
	ck_assert_int_eq(set("5", "rate=1M/s,64K"), 0);
	ck_assert_uint_eq(vbe_node_guest(node, 5, 0)->prio.rate, rate);
	ck_assert_uint_eq(vbe_node_guest(node, 5, 0)->prio.burst, burst);
	a0 = served(&t[0]);
	c0 = served(&t[2]);
	rounds(f, 2, 2000, 1000);	/* 2 s, 1 ms a round */
	a = served(&t[0]) - a0;
	c = served(&t[2]) - c0;
	ck_assert_uint_le(a, burst + 2 * rate);
	ck_assert_uint_ge(a, 2 * rate - 2 * rate / 10);
	ck_assert_uint_gt(c, 4 * a);
	ck_assert_uint_gt(vbe_node_guest(node, 5, 0)->ctr.throttled_us, 0);

	/* Only the throttled guest has work left: nothing to spin on. */
	f[1].out = DEPTH;		/* stop topping c up */
	rounds(f, 1, 50, 0);
	ck_assert_uint_gt(t[0].sr->req.prod, 0);
	ck_assert_int_eq(vbe_node_arm(node), 0);
	a = served(&t[0]);
	fake_us += 100000;		/* the tick: the bucket refills */
	vbe_node_poll(node);
	ck_assert_uint_gt(served(&t[0]), a);
	stop_all(t);
}
END_TEST

/* c (high) floods against a (normal): a gets only the guard's rounds. */
START_TEST(high_class_first_guard_serves_low)
{
	const unsigned n = 33 * 10;
	struct tg t[4];
	struct flood f[2];
	uint64_t a0, a, c0, c;

	two_floods(t, f);
	ck_assert_int_eq(set("7", "class=high"), 0);
	ck_assert_int_eq(set("5", "class=low"), 0);
	rounds(f, 2, 10, 1000);
	a0 = served(&t[0]);
	c0 = served(&t[2]);
	rounds(f, 2, n, 1000);
	a = served(&t[0]) - a0;
	c = served(&t[2]) - c0;
	/* c: a quantum every round.  a: one in every GUARD + 1 rounds at
	 * least (never starved), and not much more. */
	ck_assert_uint_ge(c, (uint64_t)(n - 1) * BASE);
	ck_assert_uint_ge(a, (uint64_t)(n / (VBE_SCHED_GUARD + 1) - 1) * BASE);
	ck_assert_uint_le(a, (uint64_t)(n / (VBE_SCHED_GUARD + 1) + 2) * 2 * BASE);
	stop_all(t);
}
END_TEST

/* A small WRITE of a high-class guest beside a normal flooder: done in
 * the poll it arrives in. */
START_TEST(high_class_small_write_first)
{
	struct tg t[4];
	struct flood f[2];
	struct vrdma_req r;

	two_floods(t, f);
	ck_assert_int_eq(set("7", "class=high"), 0);
	rounds(f, 1, 5, 1000);
	r = mkwr(&t[2], VRDMA_OP_WRITE, VRDMA_WR_F_SIGNALED, 42);
	add_sge(&r, DATA_OFF, 64, t[2].key);
	r.u.wr.remote_addr = IOVA + DATA_OFF;
	r.u.wr.rkey = t[3].key;
	flood_fill(&f[0]);
	tg_push(&t[2], &r);
	vbe_node_poll(node);
	expect_cqe(&t[2], 42, VRDMA_WS_SUCCESS);
	stop_all(t);
}
END_TEST

/* Queue delay (vrdmactl stats): every WR that starts is counted once; a
 * WR run in the round that queued it waited 0, one behind a flood's
 * earlier WRs waited the rounds in between (1000 us each here). */
START_TEST(queue_delay_counted)
{
	struct vbe_guest *a, *c;
	struct tg t[4];
	struct flood f[2];
	struct vrdma_req r;

	two_floods(t, f);
	c = vbe_node_guest(node, t[2].domid, 0);
	r = mkwr(&t[2], VRDMA_OP_WRITE, VRDMA_WR_F_SIGNALED, 42);
	add_sge(&r, DATA_OFF, 64, t[2].key);
	r.u.wr.remote_addr = IOVA + DATA_OFF;
	r.u.wr.rkey = t[3].key;
	tg_push(&t[2], &r);
	vbe_node_poll(node);
	expect_cqe(&t[2], 42, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(c->ctr.qdelay_n, 1);
	ck_assert_uint_eq(c->ctr.qdelay_sum_us, 0);

	a = vbe_node_guest(node, t[0].domid, 0);
	rounds(f, 1, 40, 1000);		/* 16 KiB WRs, 4 KiB a round */
	ck_assert_uint_ge(a->ctr.tx_ops, 5);
	/* the head WR may be in flight: counted, not done */
	ck_assert_uint_ge(a->ctr.qdelay_n, a->ctr.tx_ops);
	ck_assert_uint_le(a->ctr.qdelay_n, a->ctr.tx_ops + 1);
	ck_assert_uint_ge(a->ctr.qdelay_max_us, 4 * 1000);
	ck_assert_uint_le(a->ctr.qdelay_max_us, 40 * 1000);
	ck_assert_uint_ge(a->ctr.qdelay_sum_us, a->ctr.qdelay_max_us);
	stop_all(t);
}
END_TEST

START_TEST(quotas_refuse_nomem)
{
	struct vbe_guest *bg;
	uint32_t out[4];
	unsigned i;

	struct tg a;

	tg_full(&a, 5);
	bg = vbe_node_guest(node, 5, 0);
	ck_assert_int_eq(set("5", "qps=1"), 0);
	ck_assert_int_eq(tg_create_qp(&a, a.cq, out), VRDMA_CS_NOMEM);
	ck_assert_uint_eq(bg->ctr.refusals, 1);
	ck_assert_int_eq(set("5", "qps=2"), 0);
	ck_assert_int_eq(tg_create_qp(&a, a.cq, out), VRDMA_CS_OK);

	/* 1 MiB of registrations: tg_full's 64 KiB MR plus 15 more. */
	ck_assert_int_eq(set("5", "mem=1M"), 0);
	for (i = 0; i < 15; i++)
		ck_assert_int_eq(tg_reg_mr(&a, 0, BUF_PAGES * VRDMA_PAGE_SIZE,
					   VRDMA_ACC_LOCAL_WRITE, out), VRDMA_CS_OK);
	ck_assert_int_eq(tg_reg_mr(&a, 0, 4096, VRDMA_ACC_LOCAL_WRITE, out),
			 VRDMA_CS_NOMEM);
	ck_assert_uint_eq(bg->ctr.refusals, 2);

	/* Queued-WR slots: two QPs hold 4 x DEPTH. */
	ck_assert_int_eq(set("5", "qps=8"), 0);
	ck_assert_int_eq(set("5", "wrs=64"), 0);
	ck_assert_int_eq(tg_create_qp(&a, a.cq, out), VRDMA_CS_NOMEM);
	ck_assert_uint_eq(bg->ctr.refusals, 3);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);

	/* Device credits: two, then the QP waits on the run list. */
	ck_assert_int_eq(set("5", "credits=2"), 0);
	ck_assert(vbe_credit_take(bg, &bg->qps[0]));
	ck_assert(vbe_credit_take(bg, &bg->qps[0]));
	bg->sch.dev_parked = 0;
	ck_assert(!vbe_credit_take(bg, &bg->qps[0]));
	ck_assert(bg->qps[0].runq);
	ck_assert_uint_eq(bg->sch.dev_parked, 1);	/* waits for a completion */
	vbe_credit_put(bg);
	ck_assert(vbe_credit_take(bg, &bg->qps[0]));
	vbe_sched_qp_gone(bg, &bg->qps[0]);
	tg_stop(&a);
}
END_TEST

/* Device room (the node-wide bound): a guest whose turn finds the device
 * full holds it; another guest's WR waits even when room comes back; the
 * holder lets go once its bytes are spent, or after VBE_DEV_HOLD_MS. */
/* Issue 12: cmds=N runs at most burst + N x elapsed commands; the one
 * without a token waits in the ring (no CMD_DONE, nothing to spin on)
 * and runs after the tick, in ring order; a WR behind it waits too. */
START_TEST(commands_per_second)
{
	struct vbe_guest *bg;
	struct vrdma_req r;
	unsigned i, burst;
	uint32_t out[4];
	struct tg a;

	tg_full(&a, 5);
	node->clock_us = fake_clock;
	fake_us = 1000000;
	bg = vbe_node_guest(node, 5, 0);
	ck_assert_int_eq(set("5", "cmds=9"), -EINVAL);
	ck_assert_int_eq(set("5", "cmds=100"), 0);
	ck_assert_uint_eq(bg->prio.cmds, 100);
	burst = vbe_sched_cmd_burst(100);
	ck_assert_uint_eq(burst, 20);
	for (i = 0; i < burst; i++) {
		r = mkreq(VRDMA_CMD_ALLOC_PD, 0);
		ck_assert_int_eq(tg_cmd(&a, &r, out), VRDMA_CS_OK);
	}
	r = mkreq(VRDMA_CMD_ALLOC_PD, 0);
	ck_assert_int_eq(tg_cmd(&a, &r, out), -1);	/* waits in the ring */
	ck_assert_uint_eq(bg->ctr.cmd_waits, 1);
	ck_assert_int_eq(vbe_node_arm(node), 0);
	vbe_node_disarm(node);
	fake_us += 10000;			/* 10 ms: one token */
	vbe_node_poll(node);
	tg_events(&a);
	ck_assert_uint_eq(a.done.type, VRDMA_EVT_CMD_DONE);
	ck_assert_uint_eq(a.done.status, VRDMA_CS_OK);
	/* Over 1 s of simulated time, about 100 more and never beyond. */
	for (i = 0; i < 1000; i++) {
		r = mkreq(VRDMA_CMD_ALLOC_PD, 0);
		if (tg_cmd(&a, &r, out) == VRDMA_CS_OK)
			continue;
		while (a.done.type != VRDMA_EVT_CMD_DONE && fake_us < 3000000) {
			fake_us += 1000;
			vbe_node_poll(node);
			tg_events(&a);
		}
		ck_assert_uint_eq(a.done.type, VRDMA_EVT_CMD_DONE);
		if (fake_us >= 2010000)
			break;
	}
	ck_assert_uint_ge(i, 95);
	ck_assert_uint_le(i, 101);
	ck_assert_int_eq(set("5", "cmds=unlimited"), 0);
	r = mkreq(VRDMA_CMD_ALLOC_PD, 0);
	ck_assert_int_eq(tg_cmd(&a, &r, out), VRDMA_CS_OK);
	tg_stop(&a);
}
END_TEST

START_TEST(device_room_held_in_turn)
{
	struct vbe_guest *ga, *gc;
	struct tg t[4];
	struct flood f[2];

	two_floods(t, f);
	ga = vbe_node_guest(node, 5, 0);
	gc = vbe_node_guest(node, 7, 0);
	ck_assert(ga && gc && ga->qps && gc->qps);
	node->dev_max = 2 << 20;
	ck_assert(vbe_dev_take(ga, &ga->qps[0], 1 << 20));
	ck_assert(vbe_dev_take(ga, &ga->qps[0], 1 << 20));
	gc->sch.dev_parked = 0;					/* as a turn starts */
	ck_assert(!vbe_dev_take(gc, &gc->qps[0], 1 << 20));	/* full: c holds */
	ck_assert(gc->qps[0].runq);
	ck_assert(node->dev_hold == gc);
	/* Parked for a completion: no reason to poll (vrdmad sleeps). */
	ck_assert_uint_eq(gc->runq.count, 1);
	ck_assert(vbe_sched_ready(gc) && !vbe_sched_spin(gc));
	vbe_dev_put(node, ga, 1 << 20);
	ck_assert(vbe_sched_spin(gc));				/* room came back */
	ck_assert(!vbe_dev_take(ga, &ga->qps[0], 1 << 20));	/* room is c's */
	ck_assert(vbe_dev_take(gc, &gc->qps[0], 1 << 20));
	gc->budget_bytes = 0;				/* c spent its round */
	vbe_dev_turn_end(gc, true);
	ck_assert(node->dev_hold == NULL);
	vbe_dev_put(node, gc, 1 << 20);
	ck_assert(vbe_dev_take(ga, &ga->qps[0], 1 << 20));
	/* A hold has a time limit: a holder that never comes back. */
	ck_assert(!vbe_dev_take(gc, &gc->qps[0], 1 << 20));
	ck_assert(node->dev_hold == gc);
	node->dev_hold_ms -= VBE_DEV_HOLD_MS + 1;
	vbe_dev_put(node, ga, 1 << 20);
	ck_assert(vbe_dev_take(ga, &ga->qps[0], 1 << 20));
	node->dev_bytes = 0;
	ga->sch.dev_bytes = gc->sch.dev_bytes = 0;
	node->dev_hold = NULL;
	vbe_sched_qp_gone(ga, &ga->qps[0]);
	vbe_sched_qp_gone(gc, &gc->qps[0]);
	stop_all(t);
}
END_TEST

/* Bad values: refused with what is allowed, nothing stored. */
START_TEST(bad_values_refused)
{
	static const char *const bad[] = {
		"weight=0", "weight=1001", "weight=x", "class=urgent", "rate=10",
		"rate=1M,1", "rate=1M/min", "qps=0", "qps=1025", "mem=1", "mem=2T",
		"wrs=1", "credits=0", "colour=red", "weight",
	};
	char out[512], buf[256], *kv[1] = { buf };
	struct vbe_guest *bg;
	struct tg a;
	unsigned i;

	tg_full(&a, 5);
	bg = vbe_node_guest(node, 5, 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", bad[i]);
		ck_assert_int_lt(vbe_node_prio_set(node, "5", 1, kv, tg_out(false)), 0);
		tg_out_end(out, sizeof(out));
		ck_assert_msg(!strncmp(out, "error:", 6) &&
			      (strstr(out, "allowed") || strstr(out, "key=value")),
			      "%s: %s", bad[i], out);
	}
	ck_assert_uint_eq(bg->prio.weight, 1);
	ck_assert_uint_eq(bg->prio.cls, VBE_CLASS_NORMAL);
	ck_assert_uint_eq(bg->prio.rate, 0);
	ck_assert_int_lt(set("99", "weight=2"), 0);
	/* A bad key written straight into the store is ignored. */
	snprintf(buf, sizeof(buf), "%s/weight", a.bdir);
	ck_assert_int_eq(vplat_key_write(dom0, buf, "-3"), 0);
	stub_run();
	ck_assert_uint_eq(bg->prio.weight, 1);
	tg_stop(&a);
}
END_TEST

/* vm_start: a guest of VM `name` (its domain's name key) up to InitWait. */
static struct vbe_guest *vm_start(struct tg *g, uint32_t domid, const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), "/local/domain/%u/name", domid);
	ck_assert_int_eq(vplat_key_write(dom0, path, name), 0);
	tg_start(g, domid);
	return vbe_node_guest(node, domid, 0);
}

/* The guest leaves: its backend dir goes (plain host: process gone). */
static void vm_leave(struct tg *g)
{
	char path[64];

	tg_stop(g);
	ck_assert_int_eq(vplat_key_rm(dom0, g->bdir), 0);
	snprintf(path, sizeof(path), "/local/domain/%u", g->domid);
	vplat_key_rm(dom0, path);
	stub_run();
	ck_assert_ptr_null(vbe_node_guest(node, g->domid, 0));
}

/* A VM's settings come back with its next guest (a new domid, the same
 * name), into the new backend dir; another VM gets the defaults; a
 * guest's own keys win; settings reset to the defaults are forgotten. */
START_TEST(settings_follow_the_vm)
{
	struct vbe_guest *bg;
	struct tg a, b, c;
	char path[256], val[64];

	vm_start(&a, 5, "vm-a");
	ck_assert_int_eq(set("vm-a", "weight=7"), 0);	/* by VM name */
	ck_assert_int_eq(set("5", "class=high"), 0);
	ck_assert_int_eq(set("5", "rate=2M,64K"), 0);
	vm_leave(&a);

	bg = vm_start(&b, 6, "vm-a");
	ck_assert_uint_eq(bg->prio.weight, 7);
	ck_assert_uint_eq(bg->prio.cls, VBE_CLASS_HIGH);
	ck_assert_uint_eq(bg->prio.rate, 2u << 20);
	ck_assert_uint_eq(bg->prio.burst, 64u << 10);
	snprintf(path, sizeof(path), "%s/weight", b.bdir);
	ck_assert_int_eq(vplat_key_read(dom0, path, val, sizeof(val)), 0);
	ck_assert_str_eq(val, "7");
	bg = vm_start(&c, 7, "vm-c");
	ck_assert_uint_eq(bg->prio.weight, 1);
	ck_assert_uint_eq(bg->prio.cls, VBE_CLASS_NORMAL);
	vm_leave(&c);
	ck_assert_int_eq(set("6", "weight=1"), 0);
	ck_assert_int_eq(set("6", "class=normal"), 0);
	ck_assert_int_eq(set("6", "rate=0"), 0);
	vm_leave(&b);
	bg = vm_start(&a, 8, "vm-a");
	ck_assert_uint_eq(bg->prio.weight, 1);
	ck_assert_uint_eq(bg->prio.cls, VBE_CLASS_NORMAL);
	ck_assert_uint_eq(bg->prio.rate, 0);
	ck_assert_int_eq(set("8", "weight=3"), 0);
	vm_leave(&a);

	/* Keys already in the new dir (an operator's) win over the memory. */
	snprintf(path, sizeof(path), VRDMA_XS_BACK_FMT "/weight", 9u, 0u);
	ck_assert_int_eq(vplat_key_write(dom0, path, "2"), 0);
	bg = vm_start(&a, 9, "vm-a");
	ck_assert_uint_eq(bg->prio.weight, 2);
	tg_stop(&a);
}
END_TEST

/* The node again, keeping its settings in a fresh dir (store_dir). */
static char store_dir[64];

static void store_node(void)
{
	struct vbe_node_cfg cfg = { .node_name = "n1", .plat = dom0 };

	snprintf(store_dir, sizeof(store_dir), "/tmp/vrdma-store-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(store_dir));
	cfg.state_dir = store_dir;
	vbe_node_free(node);
	ck_assert_int_eq(vbe_node_new(&cfg, &node), 0);
	stub_run();
}

static void store_rm(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/settings", store_dir);
	unlink(path);
	ck_assert_int_eq(rmdir(store_dir), 0);
}

/* Lines of store_dir/settings that start with pfx. */
static unsigned store_lines(const char *pfx)
{
	char path[128], line[512];
	unsigned n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/settings", store_dir);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += !strncmp(line, pfx, strlen(pfx));
	fclose(f);
	return n;
}

/* Changes nobody waits for (an operator's key writes, guests leaving)
 * are written at the next tick, once for all of them; `set` answers
 * after its own write; a failing write is tried again a second later,
 * not at every tick. */
START_TEST(settings_written_once_per_tick)
{
	struct tg t[8], x;
	struct vbe_guest *bg;
	char vm[32], path[160], line[64];
	uint64_t w;
	unsigned i;

	store_node();
	for (i = 0; i < 8; i++) {
		snprintf(vm, sizeof(vm), "flood-%u", i);
		vm_start(&t[i], 20 + i, vm);
	}
	w = node->store_writes;
	for (i = 0; i < 8; i++) {
		snprintf(path, sizeof(path), "%s/weight", t[i].bdir);
		snprintf(line, sizeof(line), "%u", i + 2);
		ck_assert_int_eq(vplat_key_write(dom0, path, line), 0);
	}
	stub_run();
	for (i = 0; i < 8; i++)
		ck_assert_uint_eq(vbe_node_guest(node, 20 + i, 0)->prio.weight, i + 2);
	ck_assert_uint_eq(node->store_writes, w);
	ck_assert_uint_eq(store_lines("vm flood-"), 0);
	vbe_node_tick(node, 1000);
	ck_assert_uint_eq(node->store_writes, w + 1);
	ck_assert_uint_eq(store_lines("vm flood-"), 8);
	vbe_node_tick(node, 1100);
	ck_assert_uint_eq(node->store_writes, w + 1);

	/* All leave in one rescan, each with settings the table lacks (as
	 * after it forgot them): still one write, at the tick. */
	for (i = 0; i < 8; i++) {
		bg = vbe_node_guest(node, 20 + i, 0);
		bg->prio.weight = 50 + i;
		tg_stop(&t[i]);
		ck_assert_int_eq(vplat_key_rm(dom0, t[i].bdir), 0);
		snprintf(path, sizeof(path), "/local/domain/%u", t[i].domid);
		vplat_key_rm(dom0, path);
	}
	stub_run();
	for (i = 0; i < 8; i++)
		ck_assert_ptr_null(vbe_node_guest(node, 20 + i, 0));
	ck_assert_uint_eq(node->store_writes, w + 1);
	ck_assert_uint_eq(store_lines("vm flood-0 0 weight=50"), 0);
	vbe_node_tick(node, 1200);
	ck_assert_uint_eq(node->store_writes, w + 2);
	ck_assert_uint_eq(store_lines("vm flood-0 0 weight=50"), 1);
	ck_assert_uint_eq(store_lines("vm flood-7 0 weight=57"), 1);

	/* `set` is on disk when it answers, ticks aside. */
	ck_assert_int_eq(set("flood-3", "weight=9"), 0);
	ck_assert_uint_eq(node->store_writes, w + 3);
	ck_assert_uint_eq(store_lines("vm flood-3 0 weight=9"), 1);

	/* A write that fails (settings.new a directory) keeps the change
	 * pending and is tried again after VBE_STORE_RETRY_MS. */
	bg = vm_start(&x, 40, "late");
	snprintf(path, sizeof(path), "%s/weight", x.bdir);
	ck_assert_int_eq(vplat_key_write(dom0, path, "4"), 0);
	stub_run();
	ck_assert_uint_eq(bg->prio.weight, 4);
	snprintf(path, sizeof(path), "%s/settings.new", store_dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	vbe_node_tick(node, 2000);
	ck_assert_uint_eq(node->store_writes, w + 3);
	ck_assert_int_eq(rmdir(path), 0);
	vbe_node_tick(node, 2100);
	ck_assert_uint_eq(node->store_writes, w + 3);
	vbe_node_tick(node, 3000);
	ck_assert_uint_eq(node->store_writes, w + 4);
	ck_assert_uint_eq(store_lines("vm late 0 weight=4"), 1);

	/* What no tick wrote yet is written when the node goes. */
	bg->prio.weight = 6;
	vm_leave(&x);
	ck_assert_uint_eq(store_lines("vm late 0 weight=6"), 0);
	vbe_node_free(node);
	node = NULL;
	ck_assert_uint_eq(store_lines("vm late 0 weight=6"), 1);
	store_rm();
}
END_TEST

/* `set` of the value a key written by hand put in the table (saved only
 * at the next tick) still answers after the disk: a failing one fails
 * it, where it used to answer OK with nothing written. */
START_TEST(set_waits_for_disk)
{
	char path[160];
	struct tg x;

	store_node();
	vm_start(&x, 40, "late");
	snprintf(path, sizeof(path), "%s/weight", x.bdir);
	ck_assert_int_eq(vplat_key_write(dom0, path, "4"), 0);
	stub_run();
	ck_assert_uint_eq(vbe_node_guest(node, 40, 0)->prio.weight, 4);
	ck_assert(node->store_dirty);
	snprintf(path, sizeof(path), "%s/settings.new", store_dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_ne(set("late", "weight=4"), 0);
	ck_assert_uint_eq(store_lines("vm late 0 weight=4"), 0);
	ck_assert_int_eq(rmdir(path), 0);
	ck_assert_int_eq(set("late", "weight=4"), 0);
	ck_assert_uint_eq(store_lines("vm late 0 weight=4"), 1);
	ck_assert(!node->store_dirty);
	vm_leave(&x);
	vbe_node_free(node);
	node = NULL;
	store_rm();
}
END_TEST

static void touch_file(const char *path)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fclose(f);
}

/* One vrdmad per kept file (vbe_files_lock, vrdmad takes it before the
 * platform): a second taker of either file is refused, also when the
 * policy file sits in a state dir made only now; a -P naming the
 * settings file is refused as such; gone, the first one holds nothing. */
START_TEST(files_one_vrdmad)
{
	char base[] = "/tmp/vrdma-lock-XXXXXX", st[64], pol[80], set[80], lk[96];
	struct vbe_files a, b;

	ck_assert_ptr_nonnull(mkdtemp(base));
	snprintf(st, sizeof(st), "%s/st", base);	/* not there yet */
	snprintf(pol, sizeof(pol), "%s/policy", st);
	snprintf(set, sizeof(set), "%s/settings", st);
	ck_assert_int_eq(vbe_files_lock(pol, st, &a), 0);
	ck_assert_int_ge(a.fd[0], 0);
	ck_assert_int_ge(a.fd[1], 0);
	ck_assert_int_eq(vbe_files_lock(pol, NULL, &b), -EBUSY);
	ck_assert_int_eq(vbe_files_lock(NULL, st, &b), -EBUSY);
	ck_assert_int_eq(vbe_files_lock(set, NULL, &b), -EBUSY);
	ck_assert_int_eq(b.fd[0], -1);
	ck_assert_int_eq(b.fd[1], -1);
	vbe_files_unlock(&a);
	ck_assert_int_eq(vbe_files_lock(set, st, &b), -EINVAL);
	ck_assert_int_eq(vbe_files_lock(pol, st, &b), 0);
	vbe_files_unlock(&b);
	ck_assert_int_eq(vbe_files_lock(NULL, NULL, &b), 0);	/* nothing kept */
	ck_assert_int_eq(b.fd[0], -1);
	/* The settings file under another name: refused too. */
	touch_file(set);
	snprintf(lk, sizeof(lk), "%s/link", base);
	ck_assert_int_eq(symlink(set, lk), 0);
	ck_assert_int_eq(vbe_files_lock(lk, st, &b), -EINVAL);
	ck_assert_int_eq(b.fd[0], -1);
	ck_assert_int_eq(unlink(set), 0);
	ck_assert_int_eq(unlink(lk), 0);
	strcat(lk, ".lock");
	ck_assert_int_eq(access(lk, F_OK), -1);	/* refused before any lock */
	snprintf(lk, sizeof(lk), "%s.lock", pol);
	ck_assert_int_eq(unlink(lk), 0);
	snprintf(lk, sizeof(lk), "%s.lock", set);
	ck_assert_int_eq(unlink(lk), 0);
	ck_assert_int_eq(rmdir(st), 0);
	ck_assert_int_eq(rmdir(base), 0);
}
END_TEST

/* A tenant limit written by hand (xenstore-write .../vrdma-tenants/T/KEY)
 * reaches the settings file at the next tick, as a VM's key does. */
START_TEST(tenant_key_by_hand_saved)
{
	uint64_t w;

	store_node();
	vbe_node_tick(node, 1000);		/* whatever the start left */
	w = node->store_writes;
	ck_assert_int_eq(vplat_key_write(dom0, VPLAT_TENANT_ROOT "/t1/qps", "7"), 0);
	stub_run();
	ck_assert(node->store_dirty);
	ck_assert_uint_eq(store_lines("tenant t1 "), 0);
	vbe_node_tick(node, 1100);
	ck_assert_uint_eq(node->store_writes, w + 1);
	ck_assert_uint_eq(store_lines("tenant t1 qps=7"), 1);
	vbe_node_tick(node, 1200);		/* nothing more */
	ck_assert_uint_eq(node->store_writes, w + 1);
	vbe_node_free(node);
	node = NULL;
	store_rm();
}
END_TEST

/* A settings file's version line: first (comments aside) and once, or
 * absent; digits; a number too big for us is a newer vrdmad's file. */
START_TEST(store_version_line)
{
	static const struct {
		const char *text;
		int err;
		const char *says;	/* in the log */
	} c[] = {
		{ "# c\nversion 2\ndetached a\n", 0, NULL },
		{ "version 2\nversion 2\ndetached a\n", -EINVAL, "comes first, once" },
		{ "vm a 0 weight=2\nversion 2\n", -EINVAL, "comes first, once" },
		{ "version 4\n", -EPROTONOSUPPORT, "version 4: written by a newer vrdmad" },
		{ "version 99999999999999999999999\n", -EPROTONOSUPPORT,
		  "version 99999999999999999999999: written by a newer vrdmad" },
		{ "version 184467440737095516160000000000000000\n", -EPROTONOSUPPORT,
		  "...: written by a newer vrdmad" },
		{ "version -1\n", -EINVAL, "want: version N" },
		{ "version +2\n", -EINVAL, "want: version N" },
		{ "version 2x\n", -EINVAL, "want: version N" },
		{ "version 0\n", -EINVAL, "N from 1" },
		{ "version\n", -EINVAL, "want: version N" },
	};
	struct vbe_node_cfg cfg = { .node_name = "n1", .plat = dom0 };
	char path[128], log[4096];
	struct vbe_node *x;
	FILE *f, *cap;
	unsigned i;
	size_t got;
	int err, fd2;

	vbe_node_free(node);
	node = NULL;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		snprintf(store_dir, sizeof(store_dir), "/tmp/vrdma-store-XXXXXX");
		ck_assert_ptr_nonnull(mkdtemp(store_dir));
		snprintf(path, sizeof(path), "%s/settings", store_dir);
		f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fputs(c[i].text, f);
		fclose(f);
		cfg.state_dir = store_dir;
		cap = tmpfile();
		ck_assert_ptr_nonnull(cap);
		fflush(stderr);
		fd2 = dup(2);
		dup2(fileno(cap), 2);
		x = NULL;
		err = vbe_node_new(&cfg, &x);
		fflush(stderr);
		dup2(fd2, 2);
		close(fd2);
		rewind(cap);
		got = fread(log, 1, sizeof(log) - 1, cap);
		log[got] = '\0';
		fclose(cap);
		ck_assert_msg(err == c[i].err, "'%s': %d", c[i].text, err);
		if (c[i].says)
			ck_assert_msg(strstr(log, c[i].says), "'%s': log '%s'", c[i].text, log);
		if (x)
			vbe_node_free(x);
		store_rm();
	}
}
END_TEST

/* Tenant limits: K/M/G/T on bytes (mem) only, as vrdmad.conf(5) says. */
START_TEST(tenant_suffix_mem_only)
{
	uint64_t v = 0;
	unsigned q;

	ck_assert_int_eq(vbe_tenant_parse(VBE_TQ_MEM, "4K", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(vbe_tenant_parse(VBE_TQ_MEM, "16G", &v), 0);
	ck_assert_uint_eq(v, 16ull << 30);
	for (q = 0; q < VBE_TQ_N; q++) {
		ck_assert_int_eq(vbe_tenant_parse(q, "3", &v), 0);
		ck_assert_uint_eq(v, 3);
		if (q != VBE_TQ_MEM) {
			ck_assert_int_eq(vbe_tenant_parse(q, "1K", &v), -EINVAL);
			ck_assert_int_eq(vbe_tenant_parse(q, "1k", &v), -EINVAL);
		}
		ck_assert_int_eq(vbe_tenant_parse(q, "3x", &v), -EINVAL);
		ck_assert_int_eq(vbe_tenant_parse(q, "", &v), -EINVAL);
	}
}
END_TEST

static Suite *prio_suite(void)
{
	Suite *s = suite_create("backend_prio");
	TCase *t = tcase_create("prio");

	tcase_add_checked_fixture(t, tg_setup, tg_teardown);
	tcase_add_test(t, weights_split_bytes);
	tcase_add_test(t, weight_changed_live);
	tcase_add_test(t, rate_limit_holds);
	tcase_add_test(t, high_class_first_guard_serves_low);
	tcase_add_test(t, high_class_small_write_first);
	tcase_add_test(t, queue_delay_counted);
	tcase_add_test(t, quotas_refuse_nomem);
	tcase_add_test(t, device_room_held_in_turn);
	tcase_add_test(t, commands_per_second);
	tcase_add_test(t, bad_values_refused);
	tcase_add_test(t, settings_follow_the_vm);
	tcase_add_test(t, settings_written_once_per_tick);
	tcase_add_test(t, set_waits_for_disk);
	tcase_add_test(t, tenant_key_by_hand_saved);
	tcase_add_test(t, files_one_vrdmad);
	tcase_add_test(t, store_version_line);
	tcase_add_test(t, tenant_suffix_mem_only);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(prio_suite());

	return ck_run(sr);
}
