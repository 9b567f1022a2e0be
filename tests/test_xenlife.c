// SPDX-License-Identifier: MIT
/* Backend lifecycle of backend/guest/xenbus.c: process death, disable, domain
 * destroyed, vrdmad restart with stale frontends, a frontend that gives up or
 * starts over while dom0 reads its keys (stub platform). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "backend_tg.h"
#include "../backend/vbe.h"
#include "../frontend/front.h"

/* What frontend/front.c publishes, state last; dom0 has not looked yet. */
static void publish(struct tg *g)
{
	uint32_t pages = vrdma_sring_pages(VRDMA_REQ_RING_ORDER_DEF, VRDMA_EVT_RING_ORDER_DEF);
	uint32_t port, i;
	char key[32];

	ck_assert_int_eq(vplat_share(g->p, 0, pages, 1, &g->dev), 0);
	g->sr = vplat_share_addr(g->dev);
	g->sr->magic = VRDMA_WIRE_MAGIC;
	g->sr->version = VRDMA_WIRE_VERSION;
	g->sr->req_order = VRDMA_REQ_RING_ORDER_DEF;
	g->sr->evt_order = VRDMA_EVT_RING_ORDER_DEF;
	g->sr->guest_live = 1;
	ck_assert_int_eq(vplat_chan_alloc(g->p, 0, &g->ch, &port), 0);
	fkey(g, "ring-pages", pages);
	for (i = 0; i < pages; i++) {
		snprintf(key, sizeof(key), "ring-ref%u", i);
		fkey(g, key, vplat_share_refs(g->dev)[i]);
	}
	fkey(g, "event-channel", port);
	fkey(g, "state", VRDMA_XB_INITIALISED);
}

static void hs_live(struct tg *g)
{
	publish(g);
	stub_run();
}

static int front_state(struct tg *g)
{
	char path[256]; uint32_t v = 0;
	snprintf(path, sizeof(path), "%s/state", g->fdir);
	if (vplat_key_read_u32(dom0, path, &v)) return -1;
	return (int)v;
}

static void drop(struct tg *g)
{
	if (g->ch) vplat_chan_close(g->ch);
	if (g->dev) vplat_unshare(g->dev);
	g->ch = NULL; g->dev = NULL;
}

static struct vbe_census cen(void) { struct vbe_census c; vbe_node_census(node, &c); return c; }

static void key_path(char *path, size_t len, const char *dir, const char *key)
{
	snprintf(path, len, "%s/%s", dir, key);
}

/* A frontend past its deadline (vfe_open's unwind): Closed, then its
 * channel and grants go. */
static void give_up(void *arg)
{
	struct tg *g = arg;

	fkey(g, "state", VRDMA_XB_CLOSED);
	drop(g);
}

/* ... and the domain's next process on the device, at once: Initialising,
 * its own keys, Initialised. */
static void give_up_and_restart(void *arg)
{
	struct tg *g = arg;

	give_up(g);
	fkey(g, "state", VRDMA_XB_INITIALISING);
	publish(g);
}

static int back_written = -1;

static void note_back_state(void *arg)
{
	back_written = back_state(arg);
}

static void let_dom0_look(void *arg)
{
	(void)arg;
	stub_hold(dom0, false);
	stub_run();
}

static int no_evt(void *arg, const struct vrdma_evt *e)
{
	(void)arg;
	(void)e;
	return 0;
}

START_TEST(process_death)
{
	struct tg a;
	tg_start(&a, 5);
	hs_live(&a);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	vbe_node_tick(node, vplat_now_ms());
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	a.sr->guest_live = 0;
	vbe_node_poll(node);
	stub_run();
	ck_assert_int_eq(front_state(&a), VRDMA_XB_CLOSED);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_INITWAIT);
	ck_assert_uint_eq(cen().maps, 0);
	ck_assert_uint_eq(cen().chans, 0);
	drop(&a);
	hs_live(&a);	/* the next process */
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	tg_stop(&a);
}
END_TEST

START_TEST(disabled_then_dies)
{
	struct tg a;
	tg_start(&a, 5);
	hs_live(&a);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	vring_store_rel(&a.sr->req.prod, 1000);
	vbe_node_poll(node);
	stub_run();
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CLOSED);
	ck_assert_uint_eq(cen().maps, 1);	/* page 0 kept for liveness */
	ck_assert_uint_eq(cen().chans, 1);
	vbe_node_tick(node, vplat_now_ms());
	stub_run();
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CLOSED);
	a.sr->guest_live = 0;
	vbe_node_tick(node, vplat_now_ms());
	stub_run();
	ck_assert_int_eq(back_state(&a), VRDMA_XB_INITWAIT);
	ck_assert_uint_eq(cen().maps, 0);
	drop(&a);
	hs_live(&a);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	tg_stop(&a);
}
END_TEST

START_TEST(disabled_then_closes)
{
	struct tg a;
	tg_start(&a, 5);
	hs_live(&a);
	vring_store_rel(&a.sr->req.prod, 1000);
	vbe_node_poll(node);
	stub_run();
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CLOSED);
	fkey(&a, "state", VRDMA_XB_CLOSED);
	stub_run();
	ck_assert_int_eq(back_state(&a), VRDMA_XB_INITWAIT);
	ck_assert_uint_eq(cen().maps, 0);
	drop(&a);
	tg_start(&a, 6);	/* unrelated guest still fine */
	tg_stop(&a);
}
END_TEST

START_TEST(domain_destroyed)
{
	struct tg a, b;
	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_connect(&a, &b);
	vplat_key_rm(dom0, "/local/domain/6");
	stub_run();
	ck_assert_int_eq(back_state(&b), VRDMA_XB_CLOSED);
	ck_assert_uint_eq(cen().guests, 2);
	vbe_node_tick(node, vplat_now_ms());
	stub_run();
	ck_assert_uint_eq(cen().guests, 1);
	ck_assert_int_eq(back_state(&b), -1);
	{
		char l[64]; unsigned n = 0;
		int r = vplat_key_list(dom0, "/local/domain/0/backend/vrdma/6", l, sizeof(l), &n);
		ck_assert(r == -ENOENT || n == 0);
	}
	tg_stop(&b);
	tg_stop(&a);
}
END_TEST

START_TEST(restart_stale)
{
	struct tg a;
	struct vbe_node_cfg cfg = { .node_name = "n1" };
	tg_start(&a, 5);
	hs_live(&a);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	fkey(&a, "state", VRDMA_XB_CONNECTED);
	stub_run();
	vbe_node_free(node);
	cfg.plat = dom0;
	ck_assert_int_eq(vbe_node_new(&cfg, &node), 0);
	stub_run();
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CLOSED);
	ck_assert_uint_eq(cen().maps, 1);
	ck_assert_uint_eq(cen().chans, 1);	/* rebound to hear the notify */
	a.sr->guest_live = 0;
	vbe_node_tick(node, vplat_now_ms());
	stub_run();
	ck_assert_int_eq(back_state(&a), VRDMA_XB_INITWAIT);
	ck_assert_uint_eq(cen().maps, 0);
	drop(&a);
	hs_live(&a);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	tg_stop(&a);
}
END_TEST

START_TEST(restart_stale_dead)
{
	struct tg a;
	struct vbe_node_cfg cfg = { .node_name = "n1" };
	tg_start(&a, 5);
	hs_live(&a);
	fkey(&a, "state", VRDMA_XB_CONNECTED);
	stub_run();
	vbe_node_free(node);
	a.sr->guest_live = 0;
	cfg.plat = dom0;
	ck_assert_int_eq(vbe_node_new(&cfg, &node), 0);
	stub_run();
	ck_assert_int_eq(back_state(&a), VRDMA_XB_INITWAIT);
	ck_assert_uint_eq(cen().maps, 0);
	tg_stop(&a);
}
END_TEST

/*
 * dom0 read Initialised and the refs; before it mapped them the frontend
 * gave up (its vrdma_open deadline under load): Closed, grants ended.
 * The map fails, but nothing was refused: InitWait, never Closed, and the
 * next process connects.
 */
START_TEST(gave_up_while_read)
{
	struct tg a;
	char path[256];

	tg_start(&a, 5);
	key_path(path, sizeof(path), a.fdir, "event-channel");
	stub_hook(STUB_HOOK_READ, path, give_up, &a);
	key_path(path, sizeof(path), a.bdir, "state");
	back_written = -1;
	stub_hook(STUB_HOOK_WRITE, path, note_back_state, &a);
	hs_live(&a);
	ck_assert_int_eq(back_written, -1);	/* not even a passing Closed */
	stub_hook(STUB_HOOK_WRITE, path, NULL, NULL);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_INITWAIT);
	ck_assert_uint_eq(cen().maps, 0);
	ck_assert_uint_eq(cen().chans, 0);
	hs_live(&a);	/* the next process */
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	tg_stop(&a);
}
END_TEST

/*
 * As above, and the next process published its own set before dom0 used
 * the refs it had read: dom0 connects that set (its watch event is still
 * queued), not Closed with the new Initialised already seen.
 */
START_TEST(restarted_while_read)
{
	struct tg a;
	char path[256];

	tg_start(&a, 5);
	key_path(path, sizeof(path), a.fdir, "event-channel");
	stub_hook(STUB_HOOK_READ, path, give_up_and_restart, &a);
	hs_live(&a);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	ck_assert_uint_eq(cen().maps, 1);
	ck_assert_int_eq(a.sr->dom0_live, VRDMA_SRING_LIVE);	/* the new area */
	tg_stop(&a);
}
END_TEST

/*
 * A process published Initialised and died (killed) before a busy dom0
 * looked; the next one claims the device and rewrites the keys while dom0
 * still has that Initialised to read.  Runs frontend/front.c: it says
 * Initialising before any key, so dom0 never maps half of the dead set
 * and half of the new one and refuses the new process.
 */
START_TEST(new_process_over_dead_initialised)
{
	struct tg old;
	struct vfe_dev d;
	char path[256];

	tg_start(&old, 1);	/* the stub's vplat_open is domain 1's */
	key_path(path, sizeof(path), old.fdir, "backend");
	ck_assert_int_eq(vplat_key_write(old.p, path, old.bdir), 0);
	stub_hold(dom0, true);
	publish(&old);
	drop(&old);
	key_path(path, sizeof(path), old.fdir, "ring-ref0");
	stub_hook(STUB_HOOK_WRITE, path, let_dom0_look, NULL);
	ck_assert_int_eq(vfe_open(&d, NULL, 5000, no_evt, NULL), 0);
	ck_assert_int_eq(back_state(&old), VRDMA_XB_CONNECTED);
	vfe_close(&d);
	stub_run();
	ck_assert_int_eq(back_state(&old), VRDMA_XB_INITWAIT);
	tg_stop(&old);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("life");
	TCase *t = tcase_create("life");
	SRunner *sr;
	int nf;
	tcase_add_checked_fixture(t, tg_setup, tg_teardown);
	tcase_add_test(t, process_death);
	tcase_add_test(t, disabled_then_dies);
	tcase_add_test(t, disabled_then_closes);
	tcase_add_test(t, domain_destroyed);
	tcase_add_test(t, restart_stale);
	tcase_add_test(t, restart_stale_dead);
	tcase_add_test(t, gave_up_while_read);
	tcase_add_test(t, restarted_while_read);
	tcase_add_test(t, new_process_over_dead_initialised);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
