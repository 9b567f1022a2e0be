// SPDX-License-Identifier: MIT
/*
 * WRs of more than VRDMA_WR_SGE SGEs, on the stub platform: the backend
 * publishes max-sge, takes a WR's SGE entries (struct vrdma_sge_ext) from
 * the ring after it, wrapped or not, gathers and scatters through all of
 * them; a WR whose entries were not published with it, a count past the
 * wire's or the QP's limit, and objects asking for more are refused.
 */
#include <check.h>
#include <string.h>

#include "backend_tg.h"
#include "../backend/vbe.h"

/* Push r and the SGEs past its first VRDMA_WR_SGE in one publish. */
static void push_ext(struct tg *g, struct vrdma_req *r, const struct vrdma_wire_sge *s,
		     uint32_t n, uint32_t unpublished)
{
	const uint32_t mask = (1u << VRDMA_REQ_RING_ORDER_DEF) - 1;
	uint32_t nx = VRDMA_SGE_EXT_ENTRIES(n), i;

	memset(r->u.wr.sge, 0, sizeof(r->u.wr.sge));
	for (i = 0; i < n && i < VRDMA_WR_SGE; i++)
		r->u.wr.sge[i] = s[i];
	r->num_sge = (uint8_t)n;
	g->req[g->req_prod++ & mask] = *r;
	for (i = 0; i < nx; i++) {
		struct vrdma_sge_ext x;
		uint32_t j;

		memset(&x, 0, sizeof(x));
		for (j = 0; j < VRDMA_EXT_SGE; j++) {
			uint32_t k = VRDMA_WR_SGE + i * VRDMA_EXT_SGE + j;

			if (k < n)
				x.sge[j] = s[k];
		}
		memcpy(&g->req[g->req_prod++ & mask], &x, sizeof(x));
	}
	vring_store_rel(&g->sr->req.prod, g->req_prod - unpublished);
	vbe_node_poll(node);
}

static void sges(struct tg *g, struct vrdma_wire_sge *s, uint32_t n, uint64_t off,
		 uint32_t len, uint32_t stride)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		s[i] = (struct vrdma_wire_sge){ IOVA + off + i * stride, len, g->key };
}

START_TEST(sge_max_published)
{
	char path[256], v[16];
	struct tg a;

	tg_full(&a, 5);
	snprintf(path, sizeof(path), "%s/max-sge", a.bdir);
	ck_assert_int_eq(vplat_key_read(a.p, path, v, sizeof(v)), 0);
	ck_assert_str_eq(v, "16");
	tg_stop(&a);
}
END_TEST

/* WRITE gathered from 16 pieces 64 bytes apart lands contiguous. */
START_TEST(sge_write_16)
{
	struct vrdma_wire_sge s[VRDMA_MAX_SGE];
	struct vrdma_req r;
	struct tg a, b;
	uint32_t i;

	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_connect(&a, &b);
	for (i = 0; i < 16 * 64; i++)
		a.mem[DATA_OFF + i] = (uint8_t)(i * 13 + 1);
	sges(&a, s, 16, DATA_OFF, 0, 64);
	for (i = 0; i < 16; i++)
		s[i].length = 1 + i;		/* 1..16 bytes: 136 in all */
	r = mkwr(&a, VRDMA_OP_WRITE, VRDMA_WR_F_SIGNALED, 41);
	r.u.wr.remote_addr = IOVA + DATA_OFF + 8192;
	r.u.wr.rkey = b.key;
	push_ext(&a, &r, s, 16, 0);
	expect_cqe(&a, 41, VRDMA_WS_SUCCESS);
	{
		uint32_t at = 0;

		for (i = 0; i < 16; i++) {
			ck_assert_mem_eq(b.mem + DATA_OFF + 8192 + at, a.mem + DATA_OFF + i * 64,
					 1 + i);
			at += 1 + i;
		}
		ck_assert_uint_eq(at, 136);
	}
	write_works(&a, &b);	/* the ring goes on at the next entry */
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

/* SEND of 9 pieces into a receive of 16 pieces of 8 bytes, the receive's
 * SGE entries wrapping past the ring's end. */
START_TEST(sge_send_recv_wrapped)
{
	const uint32_t size = 1u << VRDMA_REQ_RING_ORDER_DEF;
	struct vrdma_wire_sge s[VRDMA_MAX_SGE], d[VRDMA_MAX_SGE];
	struct vrdma_cqe c;
	struct vrdma_req r;
	struct tg a, b;
	uint32_t i;

	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_connect(&a, &b);
	/* b's next entry is the ring's last: its two SGE entries wrap. */
	while ((b.req_prod & (size - 1)) != size - 1) {
		r = mkreq(VRDMA_CMD_ALLOC_PD, 0);
		ck_assert_int_eq(tg_cmd(&b, &r, NULL), VRDMA_CS_OK);
	}
	memset(b.mem + DATA_OFF + 4096, 0xee, 16 * 32);
	sges(&b, d, 16, DATA_OFF + 4096, 8, 32);
	r = mkwr(&b, VRDMA_OP_RECV, 0, 50);
	push_ext(&b, &r, d, 16, 0);
	ck_assert_uint_eq(b.req_prod & (size - 1), 2);
	for (i = 0; i < 9 * 16; i++)
		a.mem[DATA_OFF + i] = (uint8_t)(i + 3);
	sges(&a, s, 9, DATA_OFF, 10, 16);	/* 90 bytes */
	r = mkwr(&a, VRDMA_OP_SEND, VRDMA_WR_F_SIGNALED, 51);
	push_ext(&a, &r, s, 9, 0);
	expect_cqe(&a, 51, VRDMA_WS_SUCCESS);
	c = expect_cqe(&b, 50, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(c.byte_len, 90);
	for (i = 0; i < 90; i++) {
		uint32_t src = (i / 10) * 16 + i % 10, dst = (i / 8) * 32 + i % 8;

		ck_assert_uint_eq(b.mem[DATA_OFF + 4096 + dst], a.mem[DATA_OFF + src]);
	}
	ck_assert_uint_eq(b.mem[DATA_OFF + 4096 + 11 * 32 + 2], 0xee);	/* past 90 */
	write_works(&b, &a);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

enum sbad { S_UNPUBLISHED, S_HALF_PUBLISHED, S_17, S_OVER_QP, S_TOO_LONG, S_SRQ_TOO_LONG };

/* One guest misbehaves: it alone is disabled, the others go on. */
static void sge_bad(enum sbad how)
{
	struct vrdma_wire_sge s[VRDMA_MAX_SGE + 1];
	struct vrdma_req r;
	struct tg a, b, c;
	uint32_t out[4];

	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_connect(&a, &b);
	tg_full(&c, 7);
	sges(&c, s, VRDMA_MAX_SGE + 1, DATA_OFF, 8, 8);
	r = mkwr(&c, VRDMA_OP_WRITE, 0, 1);
	r.u.wr.remote_addr = IOVA + DATA_OFF;
	r.u.wr.rkey = c.key;
	switch (how) {
	case S_UNPUBLISHED:
		push_ext(&c, &r, s, 16, 2);
		break;
	case S_HALF_PUBLISHED:
		push_ext(&c, &r, s, 16, 1);
		break;
	case S_17:
		push_ext(&c, &r, s, 17, 0);
		break;
	case S_TOO_LONG:
		/* Two SGEs of 2 GiB + 8 over one small MR: dom0 would count
		 * 8 bytes for 4 GiB + 16 (libvrdma refuses such a WR). */
		s[0].length = s[1].length = 0x80000008u;
		push_ext(&c, &r, s, 2, 0);
		break;
	case S_SRQ_TOO_LONG:
		r = mkreq(VRDMA_CMD_CREATE_SRQ, 0);
		r.u.create_srq.pd = c.pd;
		r.u.create_srq.max_wr = DEPTH;
		r.u.create_srq.max_sge = 2;
		ck_assert_int_eq(tg_cmd(&c, &r, out), VRDMA_CS_OK);
		r = mkreq(VRDMA_OP_SRQ_RECV, out[0]);
		s[0].length = s[1].length = 0x80000008u;
		push_ext(&c, &r, s, 2, 0);
		break;
	case S_OVER_QP:
		r = mkreq(VRDMA_CMD_CREATE_QP, 0);
		r.u.create_qp.pd = c.pd;
		r.u.create_qp.send_cq = r.u.create_qp.recv_cq = c.cq;
		r.u.create_qp.max_send_wr = r.u.create_qp.max_recv_wr = DEPTH;
		r.u.create_qp.max_sge = VRDMA_WR_SGE;
		ck_assert_int_eq(tg_cmd(&c, &r, out), VRDMA_CS_OK);
		r = mkreq(VRDMA_OP_RECV, out[0]);
		push_ext(&c, &r, s, VRDMA_WR_SGE + 1, 0);
		break;
	}
	ck_assert_int_eq(back_state(&c), VRDMA_XB_CLOSED);
	write_works(&a, &b);
	write_works(&b, &a);
	tg_stop(&a);
	tg_stop(&b);
	tg_stop(&c);
}

START_TEST(sge_bad_unpublished) { sge_bad(S_UNPUBLISHED); }
END_TEST
START_TEST(sge_bad_half_published) { sge_bad(S_HALF_PUBLISHED); }
END_TEST
START_TEST(sge_bad_17) { sge_bad(S_17); }
END_TEST
START_TEST(sge_bad_too_long) { sge_bad(S_TOO_LONG); }
END_TEST
START_TEST(sge_bad_srq_too_long) { sge_bad(S_SRQ_TOO_LONG); }
END_TEST
START_TEST(sge_bad_over_qp) { sge_bad(S_OVER_QP); }
END_TEST

/* Asking for more SGEs than max-sge is a status, not a violation. */
START_TEST(sge_create_limits)
{
	struct vrdma_req r;
	struct tg a;

	tg_full(&a, 5);
	r = mkreq(VRDMA_CMD_CREATE_QP, 0);
	r.u.create_qp.pd = a.pd;
	r.u.create_qp.send_cq = r.u.create_qp.recv_cq = a.cq;
	r.u.create_qp.max_send_wr = r.u.create_qp.max_recv_wr = DEPTH;
	r.u.create_qp.max_sge = VRDMA_MAX_SGE + 1;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);
	r = mkreq(VRDMA_CMD_CREATE_SRQ, 0);
	r.u.create_srq.pd = a.pd;
	r.u.create_srq.max_wr = DEPTH;
	r.u.create_srq.max_sge = VRDMA_MAX_SGE + 1;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);
	r.u.create_srq.max_sge = VRDMA_MAX_SGE;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	tg_stop(&a);
}
END_TEST

/* dom0 memory for queued WRs: a WR slot of a 16-SGE queue counts 3 of
 * the guest's 65536 (its side table), so two QPs of 4096 + 4096 fit and
 * a third is refused, where eight of 4 SGEs fit; destroying one gives
 * its slots back. */
START_TEST(sge_slots_weighed)
{
	struct vrdma_req r;
	uint32_t out[4], qp[8];
	unsigned i;
	struct tg a;

	ck_assert_uint_eq(vbe_wr_weight(VRDMA_WR_SGE), 1);
	ck_assert_uint_eq(vbe_wr_weight(VRDMA_MAX_SGE), 3);
	tg_full(&a, 5);
	r = mkreq(VRDMA_CMD_DESTROY_QP, a.qp);	/* tg_full's QP of 16 */
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	r = mkreq(VRDMA_CMD_CREATE_QP, 0);
	r.u.create_qp.pd = a.pd;
	r.u.create_qp.send_cq = r.u.create_qp.recv_cq = a.cq;
	r.u.create_qp.max_send_wr = r.u.create_qp.max_recv_wr = VRDMA_MAX_WR;
	r.u.create_qp.max_sge = VRDMA_MAX_SGE;
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(tg_cmd(&a, &r, out), VRDMA_CS_OK);
		qp[i] = out[0];
	}
	ck_assert_int_eq(tg_cmd(&a, &r, out), VRDMA_CS_NOMEM);
	for (i = 0; i < 2; i++) {
		struct vrdma_req d = mkreq(VRDMA_CMD_DESTROY_QP, qp[i]);

		ck_assert_int_eq(tg_cmd(&a, &d, NULL), VRDMA_CS_OK);
	}
	r.u.create_qp.max_sge = VRDMA_WR_SGE;
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(tg_cmd(&a, &r, out), VRDMA_CS_OK);
	ck_assert_int_eq(tg_cmd(&a, &r, out), VRDMA_CS_NOMEM);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	tg_stop(&a);
}
END_TEST

TCase *backend_sge_tcase(void)
{
	TCase *t = tcase_create("sge");

	tcase_add_checked_fixture(t, tg_setup, tg_teardown);
	tcase_add_test(t, sge_max_published);
	tcase_add_test(t, sge_write_16);
	tcase_add_test(t, sge_send_recv_wrapped);
	tcase_add_test(t, sge_bad_unpublished);
	tcase_add_test(t, sge_bad_half_published);
	tcase_add_test(t, sge_bad_17);
	tcase_add_test(t, sge_bad_too_long);
	tcase_add_test(t, sge_bad_srq_too_long);
	tcase_add_test(t, sge_slots_weighed);
	tcase_add_test(t, sge_bad_over_qp);
	tcase_add_test(t, sge_create_limits);
	return t;
}
