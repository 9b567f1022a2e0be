// SPDX-License-Identifier: MIT
/*
 * Node tables shared out per tenant, on the stub platform.  dom0's
 * mappings of guest pages against the node's budget (backend/guest/
 * maps.c), on the stub platform, whose maps cost their runs of contiguous
 * pages as on the plain host and whose budget the test sets
 * (stub_map_limits): a tenant's `maps` summed over its guests, buffers
 * that never eat the device areas' reserve, a node whose four tenants hold
 * their quarters still connecting a fifth tenant's device, the page budget
 * Xen's maptrack gives, and a device area in too many pieces refused.
 * A listener's backlog: another tenant's quarter of it at most.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend_tg.h"
#include "../backend/vbe.h"

/* Shares the fragmented buffers use, let go at the end of each test. */
static struct vplat_share *pool[64];
static unsigned npool;

static void pool_drop(void)
{
	while (npool)
		vplat_unshare(pool[--npool]);
}

/* A buffer of nruns pages, every other page of a share of g's: nruns
 * mappings on the plain host (and on the stub), and one list page. */
static int frag(struct tg *g, uint32_t nruns, uint32_t *buf)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_ATTACH_BUF, 0);
	struct vplat_share *data, *list;
	uint32_t out[4] = { 0 }, i;
	int st;

	ck_assert_uint_lt(npool + 2, sizeof(pool) / sizeof(pool[0]));
	ck_assert_int_eq(vplat_share(g->p, 0, 2 * nruns, 1, &data), 0);
	ck_assert_int_eq(vplat_share(g->p, 0, 1, 0, &list), 0);
	pool[npool++] = data;
	pool[npool++] = list;
	for (i = 0; i < nruns; i++)
		((uint32_t *)vplat_share_addr(list))[i] = vplat_share_refs(data)[2 * i];
	r.u.attach_buf.npages = nruns;
	r.u.attach_buf.nlist = 1;
	r.u.attach_buf.writable = 1;
	r.u.attach_buf.list_ref[0] = vplat_share_refs(list)[0];
	st = tg_cmd(g, &r, out);
	*buf = out[0];
	return st;
}

static int detach(struct tg *g, uint32_t buf)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_DETACH_BUF, buf);

	return tg_cmd(g, &r, NULL);
}

/* The node again, on a budget of the test's (tg_setup reads it). */
static void node_on_budget(uint64_t maps, uint64_t pages)
{
	tg_teardown();
	stub_map_limits(maps, pages);
	tg_setup();
}

static uint64_t tenant_use(const char *tenant, unsigned q)
{
	uint64_t use[VBE_TQ_N];

	vbe_tenant_usage(node, tenant, use);
	return use[q];
}

/* `maps` summed over a tenant's guests; another tenant untouched; what a
 * detached buffer held comes back. */
START_TEST(maps_tenant_share)
{
	uint32_t a1, a2, b1, b2, x1;
	struct tg a, b, x;

	ck_assert_uint_eq(node->tenant_def[VBE_TQ_MAPS], (32768 - 1024) / 4);
	tenant_limit("acme", "maps", 12);
	tg_tenant(&a, 5, "acme");	/* tg_full's buffer: one mapping each */
	tg_tenant(&b, 6, "acme");
	tg_tenant(&x, 7, NULL);
	ck_assert_int_eq(frag(&a, 4, &a1), VRDMA_CS_OK);	/* acme: 6 */
	ck_assert_int_eq(frag(&b, 4, &b1), VRDMA_CS_OK);	/* 10 */
	ck_assert_int_eq(frag(&a, 4, &a2), VRDMA_CS_NOMEM);	/* 14 would pass 12 */
	ck_assert_int_eq(frag(&x, 4, &x1), VRDMA_CS_OK);	/* dom7's own */
	ck_assert_int_eq(frag(&b, 2, &b2), VRDMA_CS_OK);	/* 12: at the limit */
	ck_assert_uint_eq(tenant_use("acme", VBE_TQ_MAPS), 12);
	ck_assert_uint_eq(tenant_use("dom7", VBE_TQ_MAPS), 5);
	ck_assert_uint_eq(vbe_node_guest(node, 5, 0)->ctr.refusals, 1);
	ck_assert_int_eq(detach(&b, b1), VRDMA_CS_OK);
	ck_assert_uint_eq(tenant_use("acme", VBE_TQ_MAPS), 8);
	ck_assert_int_eq(frag(&a, 4, &a2), VRDMA_CS_OK);
	/* The node's count: three areas (one mapping each) and the buffers. */
	ck_assert_uint_eq(node->area_maps, 3);
	ck_assert_uint_eq(node->map_use, 3 + 12 + 5);
	ck_assert_uint_eq(a.nasync + b.nasync + x.nasync, 0);	/* nobody disabled */
	tg_stop(&x);
	tg_stop(&b);
	tg_stop(&a);
	pool_drop();
}
END_TEST

/*
 * The lockout, small: four tenants each hold their quarter of what
 * buffers may take; a fifth tenant's device still connects (its area
 * comes from the reserve, which no buffer touched) and its buffer is
 * refused with NOMEM, not a crash; once a tenant lets go, it attaches.
 */
START_TEST(maps_node_reserve)
{
	uint32_t buf[4], more, extra;
	struct tg t[5];
	unsigned i;

	node_on_budget(VBE_AREA_RESERVE_MAPS + 40, UINT64_MAX);
	ck_assert_uint_eq(node->tenant_def[VBE_TQ_MAPS], 10);
	for (i = 0; i < 4; i++) {
		tg_full(&t[i], 11 + i);				/* 1 */
		ck_assert_int_eq(frag(&t[i], 8, &buf[i]), VRDMA_CS_OK);	/* 9 */
		ck_assert_int_eq(frag(&t[i], 1, &more), VRDMA_CS_OK);	/* 10 */
		ck_assert_int_eq(frag(&t[i], 1, &more), VRDMA_CS_NOMEM);
	}
	ck_assert_uint_eq(node->map_use, 4 + 40);
	tg_start(&t[4], 15);
	tg_handshake(&t[4], HS_GOOD);
	ck_assert_int_eq(back_state(&t[4]), VRDMA_XB_CONNECTED);
	ck_assert_int_eq(tg_attach(&t[4], 1, &extra), VRDMA_CS_NOMEM);
	ck_assert_uint_eq(node->map_refused, 1);
	ck_assert_int_eq(detach(&t[0], buf[0]), VRDMA_CS_OK);
	ck_assert_int_eq(tg_reattach(&t[4], 1, &extra), VRDMA_CS_OK);
	for (i = 0; i < 5; i++) {
		ck_assert_uint_eq(t[i].nasync, 0);
		tg_stop(&t[i]);
	}
	pool_drop();
}
END_TEST

/* Xen: pages mapped fill dom0's maptrack, shared by every backend of
 * dom0; a tenant's `pages` defaults to a quarter of the node's budget
 * less the areas' reserve, and the same pages attached again count
 * again (one maptrack entry each). */
START_TEST(maps_pages_budget)
{
	uint32_t b1, b2;
	struct tg a, x;

	node_on_budget(32768, VBE_AREA_RESERVE_PAGES + 4 * 40);
	ck_assert_uint_eq(node->tenant_def[VBE_TQ_PAGES], 40);
	tg_tenant(&a, 5, NULL);					/* 16 */
	ck_assert_int_eq(tg_reattach(&a, 16, &b1), VRDMA_CS_OK);	/* 32 */
	ck_assert_int_eq(tg_reattach(&a, 16, &b2), VRDMA_CS_NOMEM);
	ck_assert_int_eq(tg_reattach(&a, 8, &b2), VRDMA_CS_OK);	/* 40 */
	tg_tenant(&x, 6, NULL);
	ck_assert_uint_eq(node->page_use, 40 + 16 + node->area_pages);
	ck_assert_uint_eq(a.nasync + x.nasync, 0);
	tg_stop(&x);
	tg_stop(&a);
}
END_TEST

/* A device area in more pieces than VBE_AREA_MAPS is refused at connect,
 * and nothing of it stays mapped or counted. */
START_TEST(maps_area_pieces)
{
	struct tg g, h;

	tg_start(&g, 5);
	tg_handshake(&g, HS_SCATTER);
	ck_assert_int_eq(back_state(&g), VRDMA_XB_CLOSED);
	ck_assert_uint_eq(node->area_maps, 0);
	ck_assert_uint_eq(node->map_use, 0);
	ck_assert_uint_eq(node->page_use, 0);
	tg_full(&h, 6);
	tg_stop(&h);
	tg_stop(&g);
}
END_TEST

/*
 * A listener's backlog (64) is its own: another tenant group holds at
 * most a quarter of it (16), a flood from two tenants of that group
 * included; a third group's client and the listener's own group's still
 * get in.
 */
START_TEST(listen_backlog_share)
{
	struct tally tx = { 0 }, ty = { 0 }, th = { 0 }, ta = { 0 };
	char w0[] = "group", w1[] = "crew", w2[] = "h1", w3[] = "h2";
	char *grp[] = { w0, w1, w2, w3 };
	struct tg a, o, x, y, h;

	ck_assert_int_eq(vbe_node_policy(node, 4, grp, tg_out(false)), 0);
	tg_out_end((char[256]){ 0 }, 256);
	tg_tenant(&a, 5, "svcco");
	ck_assert_int_eq(tg_listen_on(&a, "svc", NULL), VRDMA_CS_OK);
	tg_tenant(&x, 6, "h1");
	tg_tenant(&y, 7, "h2");
	tg_tenant(&h, 8, "honest");
	tg_tenant(&o, 9, "svcco");
	tg_flood(&x, VBE_GUEST_CONNS, "svc", VRDMA_CS_OK);
	tg_drain(&x, &tx);
	ck_assert_uint_eq(tx.refused, VBE_GUEST_CONNS - VBE_LISTEN_SHARE);
	tg_flood(&y, 4, "svc", VRDMA_CS_OK);
	tg_drain(&y, &ty);
	ck_assert_uint_eq(ty.refused, 4);	/* its group holds its 16 */
	tg_flood(&h, 1, "svc", VRDMA_CS_OK);
	tg_flood(&o, 20, "svc", VRDMA_CS_OK);	/* the owner's own: no share */
	tg_drain(&h, &th);
	tg_drain(&o, &th);
	ck_assert_uint_eq(th.rejected, 0);
	tg_drain(&a, &ta);
	ck_assert_uint_eq(ta.conn_req, VBE_LISTEN_SHARE + 1 + 20);
	tg_stop(&o);
	tg_stop(&h);
	tg_stop(&y);
	tg_stop(&x);
	tg_stop(&a);
}
END_TEST

TCase *backend_share_tcase(void)
{
	TCase *t = tcase_create("shares");

	tcase_add_checked_fixture(t, tg_setup, tg_teardown);
	tcase_set_timeout(t, 30);
	tcase_add_test(t, maps_tenant_share);
	tcase_add_test(t, maps_node_reserve);
	tcase_add_test(t, maps_pages_budget);
	tcase_add_test(t, maps_area_pieces);
	tcase_add_test(t, listen_backlog_share);
	return t;
}
