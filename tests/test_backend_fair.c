// SPDX-License-Identifier: MIT
/*
 * One guest must not hurt another (review C1, C3, I1, I2): a CONNECT
 * flood against a listener whose guest then issues a command, per-guest
 * CM quotas, a guest posting huge WRs while another's small WRITE goes
 * through in the same poll, the WR-slot budget.  Functional checks only:
 * what happened within one poll, never how long it took.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend_tg.h"
#include "../backend/vbe.h"

#define EVT_SLOTS	(1u << VRDMA_EVT_RING_ORDER_DEF)

/* C1: the victim listens and does not read its ring; 96 CONNECTs from
 * three guests; then the victim's command still gets its answer.  All of
 * its own tenant: another's would stop at its quarter of the backlog
 * (test_backend_share.c). */
START_TEST(connect_flood_victim_lives)
{
	struct tg a, b, x, y, z;
	struct tally ta = { 0 }, tz = { 0 };
	struct vrdma_req r;
	uint32_t out[4];

	tenant_limit("acme", "conns", 128);
	tg_tenant(&a, 5, "acme");
	tg_full(&b, 6);
	tg_connect(&a, &b);
	ck_assert_int_eq(tg_listen_on(&a, "svc", NULL), VRDMA_CS_OK);
	tg_tenant(&x, 7, "acme");
	tg_tenant(&y, 8, "acme");
	tg_tenant(&z, 9, "acme");
	tg_flood(&x, VBE_GUEST_CONNS, "svc", VRDMA_CS_OK);
	tg_flood(&y, VBE_GUEST_CONNS, "svc", VRDMA_CS_OK);
	/* Past the listen backlog: refused at once, not silently queued. */
	tg_flood(&z, VBE_GUEST_CONNS, "svc", VRDMA_CS_OK);
	tg_drain(&z, &tz);
	ck_assert_uint_eq(tz.refused, VBE_GUEST_CONNS);
	/* Past the per-guest quota of pending CONNECTs. */
	ck_assert_int_eq(tg_create_qp(&x, x.cq, out), VRDMA_CS_OK);
	ck_assert_int_eq(tg_connect_to(&x, out[0], "svc"), VRDMA_CS_NOMEM);

	/* The victim's connected peer goes: a terminal event that must not be
	 * dropped although a's ring is full of requests. */
	r = mkreq(VRDMA_CMD_DESTROY_QP, b.qp);
	ck_assert_int_eq(tg_cmd(&b, &r, NULL), VRDMA_CS_OK);
	vbe_node_poll(node);
	vbe_node_poll(node);

	/* The victim finally issues a command without draining first. */
	r = mkreq(VRDMA_CMD_ALLOC_PD, 0);
	ck_assert_int_eq(tg_cmd(&a, &r, out), VRDMA_CS_OK);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	tg_drain(&a, &ta);
	ck_assert_uint_eq(ta.conn_req, VBE_LISTEN_BACKLOG);
	ck_assert_uint_eq(ta.qp_error, 1);
	ck_assert_uint_eq(ta.qp_error_handle, a.qp);
	r = mkreq(VRDMA_CMD_ALLOC_PD, 0);
	ck_assert_int_eq(tg_cmd(&a, &r, out), VRDMA_CS_OK);

	tg_stop(&z);
	tg_stop(&y);
	tg_stop(&x);
	tg_stop(&b);
	tg_stop(&a);
}
END_TEST

/* C1: async events never take the event ring's last free slot. */
START_TEST(async_events_leave_one_slot)
{
	struct tg a, x, y;
	uint32_t prod;

	tg_tenant(&a, 5, "acme");	/* one tenant: the whole backlog is theirs */
	ck_assert_int_eq(tg_listen_on(&a, "svc", NULL), VRDMA_CS_OK);
	tg_tenant(&x, 7, "acme");
	tg_tenant(&y, 8, "acme");
	tg_flood(&x, VBE_GUEST_CONNS, "svc", VRDMA_CS_OK);
	tg_flood(&y, VBE_GUEST_CONNS, "svc", VRDMA_CS_OK);
	vbe_node_poll(node);
	prod = vring_load_acq(&a.sr->evt.prod);
	ck_assert_uint_eq(prod - a.evt_cons, EVT_SLOTS - 1);
	tg_stop(&y);
	tg_stop(&x);
	tg_stop(&a);
}
END_TEST

/* I2: a guest holds at most 16 listeners; others still get theirs. */
START_TEST(cm_listener_quota)
{
	struct tg a, b;
	struct vrdma_req r;
	char svc[16];
	uint32_t lis = 0;
	unsigned i;

	tg_full(&a, 5);
	tg_full(&b, 6);
	for (i = 0; i < VBE_GUEST_LISTENERS; i++) {
		snprintf(svc, sizeof(svc), "a%u", i);
		ck_assert_int_eq(tg_listen_on(&a, svc, &lis), VRDMA_CS_OK);
	}
	ck_assert_int_eq(tg_listen_on(&a, "one-more", NULL), VRDMA_CS_NOMEM);
	ck_assert_int_eq(tg_listen_on(&b, "b0", NULL), VRDMA_CS_OK);
	/* First come within a group; b (another tenant) has names of its own. */
	ck_assert_int_eq(tg_listen_on(&b, "b0", NULL), VRDMA_CS_EXIST);
	ck_assert_int_eq(tg_listen_on(&b, "a0", NULL), VRDMA_CS_OK);
	r = mkreq(VRDMA_CMD_UNLISTEN, lis);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	ck_assert_int_eq(tg_listen_on(&a, "one-more", NULL), VRDMA_CS_OK);
	tg_stop(&b);
	tg_stop(&a);
}
END_TEST

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed);
}

/* Poll until g has `want` CQEs (bounded); returns how many came. */
static unsigned collect(struct tg *g, struct vrdma_cqe *c, unsigned want)
{
	unsigned got = 0, round;

	for (round = 0; round < 200 && got < want; round++) {
		while (got < want && tg_poll_cq(g, &c[got]))
			got++;
		if (got < want)
			vbe_node_poll(node);
	}
	return got;
}

#define BIG	(16u * 1024)
#define NBIG	8

/* C3: a's eight 16 KiB WRITEs and c's 64-byte WRITE arrive together: c's
 * completes in that poll, a's take several (budget 8 KiB, 4 WRs). */
START_TEST(huge_wrs_do_not_starve)
{
	struct tg a, b, c, d;
	struct vrdma_cqe cq[NBIG];
	struct vrdma_req r;
	unsigned i;

	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_full(&c, 7);
	tg_full(&d, 8);
	tg_connect(&a, &b);
	tg_connect(&c, &d);
	node->poll_bytes = 8192;
	node->poll_wrs = 4;

	fill(a.mem + DATA_OFF, BIG, 1);
	for (i = 0; i < NBIG; i++) {
		r = mkwr(&a, VRDMA_OP_WRITE, VRDMA_WR_F_SIGNALED, 100 + i);
		add_sge(&r, DATA_OFF, BIG, a.key);
		r.u.wr.remote_addr = IOVA + DATA_OFF + BIG + (i % 2) * BIG;
		r.u.wr.rkey = b.key;
		tg_push(&a, &r);
	}
	fill(c.mem + DATA_OFF, 64, 2);
	r = mkwr(&c, VRDMA_OP_WRITE, VRDMA_WR_F_SIGNALED, 77);
	add_sge(&r, DATA_OFF, 64, c.key);
	r.u.wr.remote_addr = IOVA + DATA_OFF;
	r.u.wr.rkey = d.key;
	tg_push(&c, &r);

	ck_assert_int_gt(vbe_node_poll(node), 0);
	expect_cqe(&c, 77, VRDMA_WS_SUCCESS);
	ck_assert_mem_eq(d.mem + DATA_OFF, c.mem + DATA_OFF, 64);
	ck_assert(!tg_poll_cq(&a, &cq[0]));	/* 8 KiB moved: no WR done yet */

	/* No new requests: the run list finishes a's work. */
	ck_assert_uint_eq(collect(&a, cq, NBIG), NBIG);
	for (i = 0; i < NBIG; i++) {
		ck_assert_uint_eq(cq[i].wr_id, 100 + i);
		ck_assert_uint_eq(cq[i].status, VRDMA_WS_SUCCESS);
		ck_assert_uint_eq(cq[i].byte_len, BIG);
	}
	ck_assert_mem_eq(b.mem + DATA_OFF + BIG, a.mem + DATA_OFF, BIG);
	ck_assert_mem_eq(b.mem + DATA_OFF + 2 * BIG, a.mem + DATA_OFF, BIG);
	ck_assert_int_eq(vbe_node_arm(node), 0);
	write_works(&c, &d);
	tg_stop(&d);
	tg_stop(&c);
	tg_stop(&b);
	tg_stop(&a);
}
END_TEST

/* C3: one big SEND and READ move in pieces and arrive whole. */
START_TEST(big_send_and_read_in_pieces)
{
	struct tg a, b;
	struct vrdma_cqe c;
	struct vrdma_req r;

	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_connect(&a, &b);
	node->poll_bytes = 4096;

	r = mkwr(&b, VRDMA_OP_RECV, 0, 9);
	add_sge(&r, DATA_OFF + 1000, 2 * BIG, b.key);
	post(&b, &r);
	fill(a.mem + DATA_OFF, 3 * 4096 + 100, 3);
	r = mkwr(&a, VRDMA_OP_SEND, VRDMA_WR_F_SIGNALED, 10);
	add_sge(&r, DATA_OFF, 4096 + 7, a.key);
	add_sge(&r, DATA_OFF + 4096 + 7, 2 * 4096 + 93, a.key);
	post(&a, &r);
	expect_no_cqe(&a);
	ck_assert_uint_eq(collect(&a, &c, 1), 1);
	ck_assert_uint_eq(c.wr_id, 10);
	ck_assert_uint_eq(c.status, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(collect(&b, &c, 1), 1);
	ck_assert_uint_eq(c.wr_id, 9);
	ck_assert_uint_eq(c.byte_len, 3 * 4096 + 100);
	ck_assert_mem_eq(b.mem + DATA_OFF + 1000, a.mem + DATA_OFF, 3 * 4096 + 100);

	fill(b.mem + DATA_OFF + 2 * BIG, BIG, 4);
	r = mkwr(&a, VRDMA_OP_READ, VRDMA_WR_F_SIGNALED, 11);
	add_sge(&r, DATA_OFF + BIG, BIG, a.key);
	r.u.wr.remote_addr = IOVA + DATA_OFF + 2 * BIG;
	r.u.wr.rkey = b.key;
	post(&a, &r);
	ck_assert_uint_eq(collect(&a, &c, 1), 1);
	ck_assert_uint_eq(c.wr_id, 11);
	ck_assert_uint_eq(c.status, VRDMA_WS_SUCCESS);
	ck_assert_mem_eq(a.mem + DATA_OFF + BIG, b.mem + DATA_OFF + 2 * BIG, BIG);
	tg_stop(&b);
	tg_stop(&a);
}
END_TEST

/* C3: a QP destroyed half-way through a big WR leaves the run list. */
START_TEST(destroy_mid_wr)
{
	struct tg a, b;
	struct vrdma_req r;

	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_connect(&a, &b);
	node->poll_bytes = 4096;
	r = mkwr(&a, VRDMA_OP_WRITE, VRDMA_WR_F_SIGNALED, 1);
	add_sge(&r, DATA_OFF, BIG, a.key);
	r.u.wr.remote_addr = IOVA + DATA_OFF + BIG;
	r.u.wr.rkey = b.key;
	post(&a, &r);
	expect_no_cqe(&a);
	r = mkreq(VRDMA_CMD_DESTROY_QP, a.qp);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	ck_assert_int_eq(vbe_node_poll(node), 0);
	ck_assert_int_eq(vbe_node_arm(node), 0);
	tg_stop(&b);
	tg_stop(&a);
}
END_TEST

/* I1: queued-WR slots are a per-guest budget; QP numbers stay unique. */
START_TEST(wr_slot_budget_and_qpns)
{
	struct tg a;
	struct vrdma_req r = mkreq(VRDMA_CMD_CREATE_QP, 0);
	uint32_t out[4], qp[8], qpn[8];
	unsigned i, j, n = VBE_MAX_WR_SLOTS / (2 * VRDMA_MAX_WR);

	tg_full(&a, 5);		/* its QP holds 2 * DEPTH slots */
	r.u.create_qp.pd = a.pd;
	r.u.create_qp.send_cq = a.cq;
	r.u.create_qp.recv_cq = a.cq;
	r.u.create_qp.max_send_wr = VRDMA_MAX_WR;
	r.u.create_qp.max_recv_wr = VRDMA_MAX_WR;
	ck_assert_uint_le(n, 8);
	for (i = 0; i + 1 < n; i++) {
		ck_assert_int_eq(tg_cmd(&a, &r, out), VRDMA_CS_OK);
		qp[i] = out[0];
		qpn[i] = out[1];
		ck_assert_uint_ne(qpn[i], 0);
		ck_assert_uint_ne(qpn[i], a.qpn);
		for (j = 0; j < i; j++)
			ck_assert_uint_ne(qpn[i], qpn[j]);
	}
	ck_assert_int_eq(tg_cmd(&a, &r, out), VRDMA_CS_NOMEM);
	r = mkreq(VRDMA_CMD_DESTROY_QP, qp[0]);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	r = mkreq(VRDMA_CMD_CREATE_QP, 0);
	r.u.create_qp.pd = a.pd;
	r.u.create_qp.send_cq = a.cq;
	r.u.create_qp.recv_cq = a.cq;
	r.u.create_qp.max_send_wr = VRDMA_MAX_WR;
	r.u.create_qp.max_recv_wr = VRDMA_MAX_WR;
	ck_assert_int_eq(tg_cmd(&a, &r, out), VRDMA_CS_OK);
	for (j = 1; j + 1 < n; j++)
		ck_assert_uint_ne(out[1], qpn[j]);
	tg_stop(&a);
}
END_TEST

/* Review minor: ATTACH_BUF's body past the struct must be zero. */
START_TEST(attach_reserved_body)
{
	struct tg a;
	struct vrdma_req r = mkreq(VRDMA_CMD_ATTACH_BUF, 0);

	tg_full(&a, 5);
	r.u.attach_buf.npages = 1;
	r.u.attach_buf.nlist = 1;
	r.u.attach_buf.list_ref[0] = vplat_share_refs(a.list)[0];
	r.u.raw[sizeof(r.u.raw) - 1] = 1;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);
	r.u.raw[sizeof(r.u.raw) - 1] = 0;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	tg_stop(&a);
}
END_TEST

/* Issue 12: guests of one tenant (the plain host's `tenant` key, written
 * by the toolstack before `frontend`; on Xen the domain) share one quota
 * of devices, listeners and pending CONNECTs; another tenant is untouched. */
START_TEST(tenant_devices)
{
	struct tg a, b, c, d;

	tenant_limit("acme", "guests", 2);
	tg_tenant(&a, 5, "acme");
	tg_tenant(&b, 6, "acme");
	/* A third device of acme is refused at connect (state Closed). */
	ck_assert_int_eq(vplat_key_write(dom0, VRDMA_XS_BACK_ROOT "/7/0/tenant", "acme"), 0);
	tg_start(&c, 7);
	tg_handshake(&c, HS_GOOD);
	ck_assert_int_eq(back_state(&c), VRDMA_XB_CLOSED);
	tg_stop(&c);
	tg_tenant(&d, 8, NULL);		/* dom8 is a tenant of its own */
	/* `vrdmactl attach`: a device more for acme (dom5 is acme's) is
	 * refused, one it has is not one more, dom8 may have another. */
	{
		char buf[256];

		ck_assert_int_eq(vbe_node_attach_ok(node, 5, 1, tg_out(false)), -EUSERS);
		tg_out_end(buf, sizeof(buf));
		ck_assert_ptr_nonnull(strstr(buf, "error: attach 5/1: tenant acme has 3 devices"));
		ck_assert_int_eq(vbe_node_attach_ok(node, 5, 0, tg_out(false)), 0);
		tg_out_end(buf, sizeof(buf));
		ck_assert_int_eq(vbe_node_attach_ok(node, 8, 1, tg_out(false)), 0);
		tg_out_end(buf, sizeof(buf));
	}
	/* The operator's new limit applies to the next device. */
	tenant_limit("acme", "guests", 3);
	tg_tenant(&c, 9, "acme");
	tg_stop(&c);
	tg_stop(&d);
	tg_stop(&b);
	tg_stop(&a);
}
END_TEST

START_TEST(tenant_listeners_and_conns)
{
	struct tg a, b, x;
	uint32_t out[4];
	char svc[16];
	unsigned i;

	tenant_limit("default", "listeners", 20);
	tenant_limit("acme", "conns", 3);
	tg_tenant(&a, 5, "acme");
	tg_tenant(&b, 6, "acme");
	tg_tenant(&x, 7, NULL);
	for (i = 0; i < VBE_GUEST_LISTENERS; i++) {
		snprintf(svc, sizeof(svc), "a%u", i);
		ck_assert_int_eq(tg_listen_on(&a, svc, NULL), VRDMA_CS_OK);
	}
	for (i = 0; i < 4; i++) {
		snprintf(svc, sizeof(svc), "b%u", i);
		ck_assert_int_eq(tg_listen_on(&b, svc, NULL), VRDMA_CS_OK);
	}
	ck_assert_int_eq(tg_listen_on(&b, "b-more", NULL), VRDMA_CS_NOMEM);
	ck_assert_int_eq(tg_listen_on(&x, "x0", NULL), VRDMA_CS_OK);	/* dom7 */
	/* Pending CONNECTs: acme's two guests together hold at most 3. */
	tg_flood(&a, 2, "x0", VRDMA_CS_OK);
	tg_flood(&b, 1, "x0", VRDMA_CS_OK);
	ck_assert_int_eq(tg_create_qp(&b, b.cq, out), VRDMA_CS_OK);
	ck_assert_int_eq(tg_connect_to(&b, out[0], "x0"), VRDMA_CS_NOMEM);
	tg_flood(&x, 3, "a0", VRDMA_CS_OK);
	tg_stop(&x);
	tg_stop(&b);
	tg_stop(&a);
}
END_TEST

/* QPs, registered bytes, MRs, CQs and mapped pages summed over a
 * tenant's guests; a limit
 * written after its guests came applies (the watch re-reads it). */
START_TEST(tenant_qps_and_mem)
{
	struct tg a, b, x;
	struct vrdma_req r;
	struct vbe_tenant *ten;
	uint32_t out[4], buf, buf2;

	tenant_limit("acme", "qps", 3);
	tg_tenant(&a, 5, "acme");	/* one QP and 64 KiB registered each */
	tg_tenant(&b, 6, "acme");
	tg_tenant(&x, 7, NULL);
	ck_assert_int_eq(tg_create_qp(&a, a.cq, out), VRDMA_CS_OK);
	ck_assert_int_eq(tg_create_qp(&b, b.cq, out), VRDMA_CS_NOMEM);
	ck_assert_int_eq(tg_create_qp(&x, x.cq, out), VRDMA_CS_OK);
	tenant_limit("acme", "mem", 160 << 10);
	ck_assert_int_eq(tg_reg_mr(&a, 0, 32 << 10, VRDMA_ACC_ALL, out), VRDMA_CS_OK);
	ck_assert_int_eq(tg_reg_mr(&b, 0, 4096, VRDMA_ACC_ALL, out), VRDMA_CS_NOMEM);
	ck_assert_int_eq(tg_reg_mr(&x, 0, 4096, VRDMA_ACC_ALL, out), VRDMA_CS_OK);
	/* MRs and CQs by number: a has 2 MRs now, b 1 (tg_full's each). */
	tenant_limit("acme", "mem", 1 << 30);
	tenant_limit("acme", "mrs", 4);
	ck_assert_int_eq(tg_reg_mr(&b, 0, 4096, VRDMA_ACC_ALL, out), VRDMA_CS_OK);
	ck_assert_int_eq(tg_reg_mr(&a, 0, 4096, VRDMA_ACC_ALL, out), VRDMA_CS_NOMEM);
	ck_assert_int_eq(tg_reg_mr(&x, 0, 4096, VRDMA_ACC_ALL, out), VRDMA_CS_OK);
	r = mkreq(VRDMA_CMD_DEREG_MR, out[0]);	/* x's: frees nothing of acme's */
	ck_assert_int_eq(tg_cmd(&x, &r, NULL), VRDMA_CS_OK);
	ck_assert_int_eq(tg_reg_mr(&a, 0, 4096, VRDMA_ACC_ALL, out), VRDMA_CS_NOMEM);
	ck_assert_int_eq(tg_reg_mr(&b, 0, 4096, VRDMA_ACC_ALL, out), VRDMA_CS_NOMEM);
	tenant_limit("acme", "cqs", 2);		/* one each already */
	r = mkreq(VRDMA_CMD_CREATE_CQ, 0);
	r.u.create_cq.buf = a.buf;
	r.u.create_cq.order = CQ_ORDER;
	ck_assert_int_eq(tg_cmd(&a, &r, out), VRDMA_CS_NOMEM);
	r.u.create_cq.buf = x.buf;
	ck_assert_int_eq(tg_cmd(&x, &r, out), VRDMA_CS_OK);
	r = mkreq(VRDMA_CMD_DESTROY_CQ, out[0]);
	ck_assert_int_eq(tg_cmd(&x, &r, NULL), VRDMA_CS_OK);
	tenant_limit("acme", "cqs", 3);
	r = mkreq(VRDMA_CMD_CREATE_CQ, 0);
	r.u.create_cq.buf = a.buf;
	r.u.create_cq.order = CQ_ORDER;
	ck_assert_int_eq(tg_cmd(&a, &r, out), VRDMA_CS_OK);
	r = mkreq(VRDMA_CMD_DESTROY_CQ, out[0]);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	/* Buffer pages mapped in dom0: 16 each now (tg_full's buffer). */
	tenant_limit("acme", "pages", 40);
	ck_assert_int_eq(tg_reattach(&a, 8, &buf), VRDMA_CS_OK);
	ck_assert_int_eq(tg_reattach(&b, 1, &buf2), VRDMA_CS_NOMEM);
	ck_assert_int_eq(tg_reattach(&x, 8, &buf2), VRDMA_CS_OK);
	r = mkreq(VRDMA_CMD_DETACH_BUF, buf);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	ck_assert_int_eq(tg_reattach(&b, 8, &buf2), VRDMA_CS_OK);
	/* A dropped buffer the device still pins stays the tenant's until
	 * it is unmapped (verbs_reap.c): 40 in use, 8 of them dropped. */
	ten = vbe_node_guest(node, 6, 0)->ten;
	r = mkreq(VRDMA_CMD_DETACH_BUF, buf2);
	ck_assert_int_eq(tg_cmd(&b, &r, NULL), VRDMA_CS_OK);
	vbe_tenant_late(node, ten, 8, 0, true);
	ck_assert_int_eq(tg_reattach(&a, 1, &buf), VRDMA_CS_NOMEM);
	vbe_tenant_late(node, ten, 8, 0, false);
	ck_assert_int_eq(tg_reattach(&a, 8, &buf), VRDMA_CS_OK);
	ck_assert_uint_eq(a.nasync + b.nasync, 0);	/* nobody was disabled */
	tg_stop(&x);
	tg_stop(&b);
	tg_stop(&a);
}
END_TEST

/*
 * DEREG_MR's answer held until its device MR is gone (cmd.c), on a node
 * whose MR lane is the test's (node->test_mr_lane): the next command
 * waits in the ring, another guest is not held, the answers come in
 * order once the lane has run, and an answer held for a guest that went
 * is dropped, not given to its next frontend.
 */
START_TEST(dereg_held)
{
	struct vrdma_req r, pd;
	struct tg a, x;
	uint32_t out[4], mr2, mr3;
	uint64_t id;

	tg_full(&a, 5);
	tg_full(&x, 7);
	ck_assert_int_eq(tg_reg_mr(&a, 0, 4096, VRDMA_ACC_ALL, out), VRDMA_CS_OK);
	mr2 = out[0];
	ck_assert_int_eq(tg_reg_mr(&a, 0, 4096, VRDMA_ACC_ALL, out), VRDMA_CS_OK);
	mr3 = out[0];
	node->test_mr_lane.on = true;
	r = mkreq(VRDMA_CMD_DEREG_MR, mr2);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), -1);		/* held */
	id = r.id;
	ck_assert_uint_eq(node->nheld, 1);
	pd = mkreq(VRDMA_CMD_ALLOC_PD, 0);
	ck_assert_int_eq(tg_cmd(&a, &pd, NULL), -1);		/* waits behind */
	ck_assert_int_eq(tg_cmd(&x, &pd, out), VRDMA_CS_OK);	/* x is not held */
	vbe_node_poll(node);
	tg_events(&a);
	ck_assert_uint_eq(a.done.type, 0);
	node->test_mr_lane.done = node->test_mr_lane.queued;	/* the lane ran */
	vbe_node_poll(node);
	tg_events(&a);
	ck_assert_uint_eq(a.done.id, id);
	ck_assert_uint_eq(a.done.status, VRDMA_CS_OK);
	vbe_node_poll(node);
	tg_events(&a);
	ck_assert_uint_eq(a.done.id, id + 1);			/* then ALLOC_PD */
	ck_assert_uint_eq(a.done.status, VRDMA_CS_OK);
	ck_assert_uint_eq(node->nheld, 0);
	/* Held, then the frontend goes: nothing posted, nothing left. */
	r = mkreq(VRDMA_CMD_DEREG_MR, mr3);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), -1);
	tg_stop(&a);
	stub_run();
	node->test_mr_lane.done = node->test_mr_lane.queued;
	vbe_node_poll(node);
	ck_assert_uint_eq(node->nheld, 0);
	ck_assert_uint_eq(x.nasync, 0);
	node->test_mr_lane.on = false;
	tg_stop(&x);
}
END_TEST

/* cmds per tenant: one bucket (burst 200 ms worth) for all its guests;
 * the command without a token waits in its ring; another tenant is not
 * held back. */
START_TEST(tenant_cmds)
{
	struct tg a, b, x;
	struct vrdma_req r;
	uint32_t out[4];
	unsigned i, k;

	tg_tenant(&a, 5, "acme");
	tg_tenant(&b, 6, "acme");
	tg_tenant(&x, 7, NULL);
	tenant_limit("acme", "cmds", 100);	/* burst 20 */
	for (i = 0; i < 10; i++) {
		r = mkreq(VRDMA_CMD_ALLOC_PD, 0);
		ck_assert_int_eq(tg_cmd(&a, &r, out), VRDMA_CS_OK);
	}
	for (k = 0; k < 40; k++) {
		r = mkreq(VRDMA_CMD_ALLOC_PD, 0);
		if (tg_cmd(&b, &r, out) != VRDMA_CS_OK)
			break;
	}
	ck_assert_uint_ge(10 + k, 20);		/* the burst ... */
	ck_assert_uint_le(10 + k, 22);		/* ... and what 100/s adds meanwhile */
	ck_assert_uint_ge(vbe_node_guest(node, 6, 0)->ctr.cmd_waits, 1);
	for (i = 0; i < 30; i++) {
		r = mkreq(VRDMA_CMD_ALLOC_PD, 0);
		ck_assert_int_eq(tg_cmd(&x, &r, out), VRDMA_CS_OK);
	}
	tg_stop(&x);
	tg_stop(&b);
	tg_stop(&a);
}
END_TEST

TCase *backend_fair_tcase(void)
{
	TCase *t = tcase_create("fairness");

	tcase_add_checked_fixture(t, tg_setup, tg_teardown);
	tcase_set_timeout(t, 30);
	tcase_add_test(t, connect_flood_victim_lives);
	tcase_add_test(t, async_events_leave_one_slot);
	tcase_add_test(t, cm_listener_quota);
	tcase_add_test(t, tenant_devices);
	tcase_add_test(t, tenant_listeners_and_conns);
	tcase_add_test(t, tenant_qps_and_mem);
	tcase_add_test(t, dereg_held);
	tcase_add_test(t, tenant_cmds);
	tcase_add_test(t, huge_wrs_do_not_starve);
	tcase_add_test(t, big_send_and_read_in_pieces);
	tcase_add_test(t, destroy_mid_wr);
	tcase_add_test(t, wr_slot_budget_and_qpns);
	tcase_add_test(t, attach_reserved_body);
	return t;
}
