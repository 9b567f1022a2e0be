// SPDX-License-Identifier: MIT
/*
 * The dom0 backend against fake guests living in this process: the stub
 * platform's grant refs resolve to memfd pages the test shares, the
 * handshake runs through the stub's keys and watches, and requests are
 * written raw into the ring.  The catalogue of malformed requests is in
 * test_backend_bad.c; the fake guests are in backend_tg.c.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "backend_tg.h"
#include "../backend/vbe.h"
#include "ck_run.h"


/* ---- handshake ---- */

START_TEST(handshake_good)
{
	struct tg a;
	struct vbe_census c;

	tg_start(&a, 5);
	tg_handshake(&a, HS_GOOD);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	vbe_node_census(node, &c);
	ck_assert_uint_eq(c.guests, 1);
	ck_assert_uint_eq(c.maps, 1);
	ck_assert_uint_eq(c.chans, 1);
	tg_stop(&a);
}
END_TEST

static void handshake_refused(enum hs how)
{
	struct tg a, b, c;
	struct vbe_census cen;

	tg_full(&b, 7);
	tg_full(&c, 8);
	tg_connect(&b, &c);
	tg_start(&a, 5);
	tg_handshake(&a, how);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CLOSED);
	vbe_node_census(node, &cen);
	ck_assert_uint_eq(cen.guests, 3);
	ck_assert_uint_eq(cen.maps, 4);	/* b and c: ring + buffer each */
	ck_assert_uint_eq(cen.chans, 2);
	write_works(&b, &c);
	tg_stop(&a);
	tg_stop(&b);
	tg_stop(&c);
}

START_TEST(handshake_bad_version) { handshake_refused(HS_BADVER); }
END_TEST
START_TEST(handshake_bad_ring_pages) { handshake_refused(HS_BADPAGES); }
END_TEST
START_TEST(handshake_bad_ref) { handshake_refused(HS_BADREF); }
END_TEST
START_TEST(handshake_bad_magic) { handshake_refused(HS_BADMAGIC); }
END_TEST
START_TEST(handshake_order_too_big) { handshake_refused(HS_BIGORDER); }
END_TEST

START_TEST(frontend_close_and_reconnect)
{
	struct tg a;
	struct vbe_census c;
	char path[256];

	tg_full(&a, 5);
	fkey(&a, "state", VRDMA_XB_CLOSING);
	stub_run();
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CLOSED);
	vbe_node_census(node, &c);
	ck_assert_uint_eq(c.maps + c.chans + c.qps + c.mrs + c.cqs + c.pds + c.bufs, 0);
	tg_stop(&a);
	/* The frontend starts over. */
	tg_start(&a, 5);
	tg_handshake(&a, HS_GOOD);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	/* The toolstack removes the device: the guest is gone. */
	snprintf(path, sizeof(path), "%s", a.bdir);
	vplat_key_rm(dom0, path);
	stub_run();
	vbe_node_census(node, &c);
	ck_assert_uint_eq(c.guests, 0);
	ck_assert_uint_eq(c.maps, 0);
	tg_stop(&a);
}
END_TEST

/* ---- commands ---- */

START_TEST(commands_objects)
{
	struct vrdma_req r;
	struct tg a;
	uint32_t out[4], mr2, cq2;
	struct vbe_census c;

	tg_full(&a, 5);
	vbe_node_census(node, &c);
	ck_assert_uint_eq(c.bufs, 1);
	ck_assert_uint_eq(c.pds, 1);
	ck_assert_uint_eq(c.cqs, 1);
	ck_assert_uint_eq(c.mrs, 1);
	ck_assert_uint_eq(c.qps, 1);
	ck_assert_uint_ne(a.qpn, 0);
	ck_assert_uint_le(a.qpn, 0xffffff);

	/* In use: BUSY. */
	r = mkreq(VRDMA_CMD_DETACH_BUF, a.buf);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_BUSY);
	r = mkreq(VRDMA_CMD_DEALLOC_PD, a.pd);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_BUSY);
	r = mkreq(VRDMA_CMD_DESTROY_CQ, a.cq);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_BUSY);

	/* Access rules of REG_MR. */
	ck_assert_int_eq(tg_reg_mr(&a, 0, 4096, VRDMA_ACC_REMOTE_WRITE, out), VRDMA_CS_INVAL);
	ck_assert_int_eq(tg_reg_mr(&a, 0, 4096, 0x10, out), VRDMA_CS_INVAL);
	ck_assert_int_eq(tg_reg_mr(&a, 0, 4096, VRDMA_ACC_REMOTE_READ, out), VRDMA_CS_OK);
	mr2 = out[0];
	ck_assert_uint_ne(out[1], a.key);
	r = mkreq(VRDMA_CMD_DEREG_MR, mr2);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_NOENT);
	/* The slot comes back with another key generation. */
	ck_assert_int_eq(tg_reg_mr(&a, 0, 4096, VRDMA_ACC_REMOTE_READ, out), VRDMA_CS_OK);
	ck_assert_uint_ne(out[0], mr2);
	r = mkreq(VRDMA_CMD_DEREG_MR, out[0]);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);

	/* A second CQ at pages 4-5 with a bad then good header. */
	r = mkreq(VRDMA_CMD_CREATE_CQ, 0);
	r.u.create_cq.buf = a.buf;
	r.u.create_cq.page = 4;
	r.u.create_cq.order = CQ_ORDER;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);	/* no magic */
	((struct vrdma_cq_hdr *)(a.mem + 4 * 4096))->magic = VRDMA_WIRE_MAGIC;
	((struct vrdma_cq_hdr *)(a.mem + 4 * 4096))->order = CQ_ORDER;
	ck_assert_int_eq(tg_cmd(&a, &r, out), VRDMA_CS_OK);
	cq2 = out[0];
	ck_assert_uint_eq(out[1], 1u << CQ_ORDER);
	r = mkreq(VRDMA_CMD_DESTROY_CQ, cq2);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);

	/* QP limits. */
	r = mkreq(VRDMA_CMD_CREATE_QP, 0);
	r.u.create_qp.pd = a.pd;
	r.u.create_qp.send_cq = a.cq;
	r.u.create_qp.recv_cq = a.cq;
	r.u.create_qp.max_send_wr = VRDMA_MAX_WR + 1;
	r.u.create_qp.max_recv_wr = 1;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);
	r.u.create_qp.max_send_wr = 1;
	r.u.create_qp.max_sge = VRDMA_MAX_SGE + 1;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);

	/* Tear down in order; a receive still queued is flushed. */
	r = mkreq(VRDMA_OP_RECV, a.qp);
	r.id = 55;
	post(&a, &r);
	expect_no_cqe(&a);
	r = mkreq(VRDMA_CMD_DESTROY_QP, a.qp);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	expect_cqe(&a, 55, VRDMA_WS_WR_FLUSH_ERR);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_NOENT);
	r = mkreq(VRDMA_CMD_DESTROY_CQ, a.cq);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	r = mkreq(VRDMA_CMD_DETACH_BUF, a.buf);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_BUSY);	/* the MR */
	r = mkreq(VRDMA_CMD_DEREG_MR, a.mr);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	r = mkreq(VRDMA_CMD_DEALLOC_PD, a.pd);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	r = mkreq(VRDMA_CMD_DETACH_BUF, a.buf);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	vbe_node_census(node, &c);
	ck_assert_uint_eq(c.qps + c.mrs + c.cqs + c.pds + c.bufs, 0);
	ck_assert_uint_eq(c.maps, 1);	/* the ring only */
	tg_stop(&a);
}
END_TEST

START_TEST(commands_cm)
{
	struct vrdma_req r;
	struct tg a, b;
	struct tg *gs[2] = { &a, &b };
	uint32_t out[4], lis;
	uint64_t conn;

	tg_full(&a, 5);
	tg_full(&b, 6);
	/* Nobody listens: NOENT. */
	r = mkreq(VRDMA_CMD_CONNECT, a.qp);
	strcpy(r.u.connect.service, "nobody");
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_NOENT);
	/* Another node: REJECTED UNREACH after CMD_DONE OK. */
	strcpy(r.u.connect.node, "elsewhere");
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	ck_assert_uint_eq(a.nasync, 1);
	ck_assert_int_eq(a.async[0].type, VRDMA_EVT_REJECTED);
	ck_assert_int_eq(a.async[0].status, VRDMA_CS_UNREACH);
	/* Names are unique per tenant group (test_policy.c: across them). */
	r = mkreq(VRDMA_CMD_LISTEN, 0);
	strcpy(r.u.listen.service, "echo");
	ck_assert_int_eq(tg_cmd(&b, &r, out), VRDMA_CS_OK);
	lis = out[0];
	ck_assert_int_eq(tg_cmd(&b, &r, NULL), VRDMA_CS_EXIST);
	strcpy(r.u.listen.service, "a/b");	/* '/' names a group */
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);
	memset(r.u.listen.service, 'x', sizeof(r.u.listen.service));
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);	/* no NUL */
	/* Rejected. */
	r = mkreq(VRDMA_CMD_CONNECT, a.qp);
	strcpy(r.u.connect.node, "n1");
	strcpy(r.u.connect.service, "echo");
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	pump(gs, 2);
	ck_assert_int_eq(b.async[b.nasync - 1].type, VRDMA_EVT_CONN_REQUEST);
	conn = b.async[b.nasync - 1].id;
	r = mkreq(VRDMA_CMD_REJECT, lis);
	r.u.accept.conn_id = conn;
	ck_assert_int_eq(tg_cmd(&b, &r, NULL), VRDMA_CS_OK);
	ck_assert_int_eq(tg_cmd(&b, &r, NULL), VRDMA_CS_NOENT);
	pump(gs, 2);
	ck_assert_int_eq(a.async[a.nasync - 1].type, VRDMA_EVT_REJECTED);
	ck_assert_int_eq(a.async[a.nasync - 1].status, VRDMA_CS_REFUSED);
	/* Timed out. */
	r = mkreq(VRDMA_CMD_CONNECT, a.qp);
	strcpy(r.u.connect.service, "echo");
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);	/* already connecting */
	vbe_node_tick(node, vplat_now_ms() + 11000);
	pump(gs, 2);
	ck_assert_int_eq(a.async[a.nasync - 1].type, VRDMA_EVT_REJECTED);
	ck_assert_int_eq(a.async[a.nasync - 1].status, VRDMA_CS_TIMEDOUT);
	/* ACCEPT of a timed-out request: NOENT. */
	r = mkreq(VRDMA_CMD_ACCEPT, b.qp);
	r.u.accept.conn_id = b.async[b.nasync - 1].id;
	ck_assert_int_eq(tg_cmd(&b, &r, NULL), VRDMA_CS_NOENT);
	/* Unlisten, then the name is free again. */
	r = mkreq(VRDMA_CMD_UNLISTEN, lis);
	ck_assert_int_eq(tg_cmd(&b, &r, NULL), VRDMA_CS_OK);
	ck_assert_int_eq(tg_cmd(&b, &r, NULL), VRDMA_CS_NOENT);
	tg_connect(&a, &b);
	write_works(&a, &b);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST


/* The node's GID as the backend published it (node-gid, 32 hex digits). */
/* MODIFY_QP: binding by number; every bad argument is a status, never a
 * violation, and a bound pair moves data. */
START_TEST(commands_modify_qp)
{
	struct vrdma_req r;
	struct tg a, b;
	struct tg *gs[2] = { &a, &b };
	uint8_t gid[16];

	tg_full(&a, 5);
	tg_full(&b, 6);
	node_gid(&a, gid);
	r = mkreq(VRDMA_CMD_MODIFY_QP, a.qp);
	r.u.modify_qp.state = VRDMA_MQ_RTR;
	memcpy(r.u.modify_qp.dest_gid, gid, 16);
	r.u.modify_qp.dest_qpn = 0;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);	/* QPN 0 */
	r.u.modify_qp.dest_qpn = 1u << 24;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);	/* > 24 bits */
	r.u.modify_qp.dest_qpn = b.qpn;
	r.u.modify_qp.reserved = 1;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);
	r.u.modify_qp.reserved = 0;
	r.u.modify_qp.qkey = 1;					/* UD_RTS only */
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);
	r.u.modify_qp.qkey = 0;
	r.u.raw[100] = 1;					/* body past the struct */
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);
	r.u.raw[100] = 0;
	r.u.modify_qp.state = 7;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);
	r.u.modify_qp.state = VRDMA_MQ_RTR;
	r.handle = 0xdead;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_NOENT);
	r.handle = a.qp;
	r.u.modify_qp.dest_gid[0] ^= 1;				/* another node, no device */
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_UNREACH);
	r.u.modify_qp.dest_gid[0] ^= 1;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);	/* RTR twice */
	/* A CONNECT on a QP bound by number: refused. */
	{
		struct vrdma_req c = mkreq(VRDMA_CMD_CONNECT, a.qp);

		strcpy(c.u.connect.service, "svc");
		ck_assert_int_eq(tg_cmd(&a, &c, NULL), VRDMA_CS_INVAL);
	}
	r = mkreq(VRDMA_CMD_MODIFY_QP, b.qp);
	r.u.modify_qp.state = VRDMA_MQ_RTR;
	memcpy(r.u.modify_qp.dest_gid, gid, 16);
	r.u.modify_qp.dest_qpn = a.qpn;
	ck_assert_int_eq(tg_cmd(&b, &r, NULL), VRDMA_CS_OK);
	pump(gs, 2);
	write_works(&a, &b);	/* also: nobody was disabled on the way */
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

/* ---- data path ---- */

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed);
}

START_TEST(opcodes_move_data)
{
	struct tg a, b;
	struct vrdma_req r;
	struct vrdma_cqe c;
	uint64_t v;

	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_connect(&a, &b);

	/* SEND gathered from two pieces, scattered into two. */
	fill(a.mem + DATA_OFF, 300, 1);
	r = mkwr(&b, VRDMA_OP_RECV, 0, 10);
	add_sge(&r, DATA_OFF, 100, b.key);
	add_sge(&r, DATA_OFF + 1000, 500, b.key);
	post(&b, &r);
	r = mkwr(&a, VRDMA_OP_SEND, VRDMA_WR_F_SIGNALED, 11);
	add_sge(&r, DATA_OFF, 150, a.key);
	add_sge(&r, DATA_OFF + 150, 150, a.key);
	post(&a, &r);
	c = expect_cqe(&a, 11, VRDMA_WS_SUCCESS);
	ck_assert_int_eq(c.opcode, VRDMA_WC_SEND);
	ck_assert_uint_eq(c.sq_retired, 1);
	c = expect_cqe(&b, 10, VRDMA_WS_SUCCESS);
	ck_assert_int_eq(c.opcode, VRDMA_WC_RECV);
	ck_assert_uint_eq(c.byte_len, 300);
	ck_assert_uint_eq(c.src_qpn, a.qpn);
	ck_assert_uint_eq(c.qp, b.qp);
	ck_assert_mem_eq(b.mem + DATA_OFF, a.mem + DATA_OFF, 100);
	ck_assert_mem_eq(b.mem + DATA_OFF + 1000, a.mem + DATA_OFF + 100, 200);

	/* SEND_IMM */
	r = mkwr(&b, VRDMA_OP_RECV, 0, 12);
	add_sge(&r, DATA_OFF, 64, b.key);
	post(&b, &r);
	r = mkwr(&a, VRDMA_OP_SEND_IMM, VRDMA_WR_F_SIGNALED, 13);
	add_sge(&r, DATA_OFF, 8, a.key);
	r.u.wr.imm_data = 0x12345678;
	post(&a, &r);
	expect_cqe(&a, 13, VRDMA_WS_SUCCESS);
	c = expect_cqe(&b, 12, VRDMA_WS_SUCCESS);
	ck_assert(c.flags & VRDMA_CQE_F_IMM);
	ck_assert_uint_eq(c.imm_data, 0x12345678);

	/* WRITE */
	write_works(&a, &b);

	/* WRITE_IMM consumes a receive, data lands at remote_addr. */
	r = mkwr(&b, VRDMA_OP_RECV, 0, 14);
	post(&b, &r);
	fill(a.mem + DATA_OFF, 200, 9);
	r = mkwr(&a, VRDMA_OP_WRITE_IMM, VRDMA_WR_F_SIGNALED, 15);
	add_sge(&r, DATA_OFF, 200, a.key);
	r.u.wr.remote_addr = IOVA + DATA_OFF + 8192;
	r.u.wr.rkey = b.key;
	r.u.wr.imm_data = 99;
	post(&a, &r);
	expect_cqe(&a, 15, VRDMA_WS_SUCCESS);
	c = expect_cqe(&b, 14, VRDMA_WS_SUCCESS);
	ck_assert_int_eq(c.opcode, VRDMA_WC_RECV_IMM);
	ck_assert_uint_eq(c.imm_data, 99);
	ck_assert_uint_eq(c.byte_len, 200);
	ck_assert_mem_eq(b.mem + DATA_OFF + 8192, a.mem + DATA_OFF, 200);

	/* READ */
	fill(b.mem + DATA_OFF + 12288, 5000, 3);
	r = mkwr(&a, VRDMA_OP_READ, VRDMA_WR_F_SIGNALED, 16);
	add_sge(&r, DATA_OFF + 20000, 5000, a.key);
	r.u.wr.remote_addr = IOVA + DATA_OFF + 12288;
	r.u.wr.rkey = b.key;
	post(&a, &r);
	c = expect_cqe(&a, 16, VRDMA_WS_SUCCESS);
	ck_assert_int_eq(c.opcode, VRDMA_WC_READ);
	ck_assert_mem_eq(a.mem + DATA_OFF + 20000, b.mem + DATA_OFF + 12288, 5000);

	/* CMP_SWAP hit and miss, FETCH_ADD */
	v = 41;
	memcpy(b.mem + DATA_OFF + 64, &v, 8);
	r = mkwr(&a, VRDMA_OP_CMP_SWAP, VRDMA_WR_F_SIGNALED, 17);
	add_sge(&r, DATA_OFF + 8, 8, a.key);
	r.u.wr.remote_addr = IOVA + DATA_OFF + 64;
	r.u.wr.rkey = b.key;
	r.u.wr.compare_add = 41;
	r.u.wr.swap = 1000;
	post(&a, &r);
	expect_cqe(&a, 17, VRDMA_WS_SUCCESS);
	memcpy(&v, a.mem + DATA_OFF + 8, 8);
	ck_assert_uint_eq(v, 41);
	memcpy(&v, b.mem + DATA_OFF + 64, 8);
	ck_assert_uint_eq(v, 1000);
	r.id = 18;
	post(&a, &r);	/* compare 41 != 1000: no swap */
	expect_cqe(&a, 18, VRDMA_WS_SUCCESS);
	memcpy(&v, a.mem + DATA_OFF + 8, 8);
	ck_assert_uint_eq(v, 1000);
	r = mkwr(&a, VRDMA_OP_FETCH_ADD, VRDMA_WR_F_SIGNALED, 19);
	add_sge(&r, DATA_OFF + 16, 8, a.key);
	r.u.wr.remote_addr = IOVA + DATA_OFF + 64;
	r.u.wr.rkey = b.key;
	r.u.wr.compare_add = 5;
	post(&a, &r);
	c = expect_cqe(&a, 19, VRDMA_WS_SUCCESS);
	ck_assert_int_eq(c.opcode, VRDMA_WC_FETCH_ADD);
	memcpy(&v, a.mem + DATA_OFF + 16, 8);
	ck_assert_uint_eq(v, 1000);
	memcpy(&v, b.mem + DATA_OFF + 64, 8);
	ck_assert_uint_eq(v, 1005);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

START_TEST(unsignaled_and_sq_retired)
{
	struct tg a, b;
	struct vrdma_req r;
	struct vrdma_cqe c;
	int i;

	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_connect(&a, &b);
	for (i = 0; i < 5; i++) {
		r = mkwr(&a, VRDMA_OP_WRITE, i == 4 ? VRDMA_WR_F_SIGNALED : 0, 100 + i);
		add_sge(&r, DATA_OFF, 16, a.key);
		r.u.wr.remote_addr = IOVA + DATA_OFF;
		r.u.wr.rkey = b.key;
		post(&a, &r);
	}
	c = expect_cqe(&a, 104, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(c.sq_retired, 5);
	expect_no_cqe(&a);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

/* WRs and then a command in one poll: send WRs to one QP run together
 * (issue 11), still before the entry after them -- here the DEREG_MR of
 * the MR they read. */
START_TEST(batch_keeps_ring_order)
{
	struct tg a, b;
	struct vrdma_req r;
	int i;

	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_connect(&a, &b);
	fill(a.mem + DATA_OFF, 64, 3);
	for (i = 0; i < 4; i++) {
		r = mkwr(&a, VRDMA_OP_WRITE, i == 3 ? VRDMA_WR_F_SIGNALED : 0, 200 + i);
		add_sge(&r, DATA_OFF + 16 * i, 16, a.key);
		r.u.wr.remote_addr = IOVA + DATA_OFF + 16 * i;
		r.u.wr.rkey = b.key;
		tg_push(&a, &r);
	}
	r = mkreq(VRDMA_CMD_DEREG_MR, a.mr);
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	ck_assert_uint_eq(expect_cqe(&a, 203, VRDMA_WS_SUCCESS).sq_retired, 4);
	ck_assert_mem_eq(b.mem + DATA_OFF, a.mem + DATA_OFF, 64);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

START_TEST(send_waits_for_recv)
{
	struct tg a, b;
	struct vrdma_req r;
	struct vrdma_cqe c;

	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_connect(&a, &b);
	fill(a.mem + DATA_OFF, 32, 4);
	r = mkwr(&a, VRDMA_OP_SEND, VRDMA_WR_F_SIGNALED, 1);
	add_sge(&r, DATA_OFF, 32, a.key);
	post(&a, &r);
	r.id = 2;	/* a WRITE behind it waits too: order is kept */
	r.opcode = VRDMA_OP_WRITE;
	r.u.wr.remote_addr = IOVA + DATA_OFF + 4096;
	r.u.wr.rkey = b.key;
	post(&a, &r);
	vbe_node_poll(node);
	expect_no_cqe(&a);
	r = mkwr(&b, VRDMA_OP_RECV, 0, 50);
	add_sge(&r, DATA_OFF, 32, b.key);
	post(&b, &r);
	c = expect_cqe(&a, 1, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(c.sq_retired, 1);
	c = expect_cqe(&a, 2, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(c.sq_retired, 2);
	expect_cqe(&b, 50, VRDMA_WS_SUCCESS);
	ck_assert_mem_eq(b.mem + DATA_OFF, a.mem + DATA_OFF, 32);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

/* ---- error completions ---- */

enum wrerr { E_LKEY, E_LTAG, E_LSLOT, E_RKEY, E_RSLOT, E_OOB1, E_WRAP, E_LWRAP, E_NOACC, E_ALIGN, E_SMALLRECV, E_NOLW };

static void error_case(enum wrerr how, uint8_t want)
{
	struct tg a, b;
	struct vrdma_req r;
	struct vrdma_cqe c;
	uint32_t out[4], rokey;

	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_connect(&a, &b);
	ck_assert_int_eq(tg_reg_mr(&b, DATA_OFF, 4096, VRDMA_ACC_LOCAL_WRITE, out), VRDMA_CS_OK);
	ck_assert_int_eq(tg_reg_mr(&a, DATA_OFF, 4096, VRDMA_ACC_REMOTE_READ, out), VRDMA_CS_OK);
	rokey = out[1];
	r = mkwr(&a, VRDMA_OP_WRITE, VRDMA_WR_F_SIGNALED, 1);
	add_sge(&r, DATA_OFF, 64, a.key);
	r.u.wr.remote_addr = IOVA + DATA_OFF;
	r.u.wr.rkey = b.key;
	switch (how) {
	case E_LKEY:
		r.u.wr.sge[0].lkey = a.key + 1;
		break;
	case E_LTAG:	/* the right slot, a wrong random tag (issue 12) */
		r.u.wr.sge[0].lkey = a.key ^ 0x80000000u;
		break;
	case E_LSLOT:	/* the right tag in another (random) slot */
		r.u.wr.sge[0].lkey = a.key ^ 1u << (VBE_KEY_IDX_BITS - 1);
		break;
	case E_RKEY:	/* the right slot, a wrong random tag */
		r.u.wr.rkey = b.key ^ 1u << VBE_KEY_IDX_BITS;
		break;
	case E_RSLOT:	/* the right tag in another (random) slot */
		r.u.wr.rkey = b.key ^ 1;
		break;
	case E_OOB1:	/* one byte past the MR's end */
		r.u.wr.remote_addr = IOVA + BUF_PAGES * VRDMA_PAGE_SIZE - 63;
		break;
	case E_WRAP:
		r.u.wr.remote_addr = UINT64_MAX - 7;
		break;
	case E_LWRAP:
		r.u.wr.sge[0].addr = UINT64_MAX - 7;
		break;
	case E_NOACC:	/* set below: an MR of b without REMOTE_WRITE */
		break;
	case E_ALIGN:
		r.opcode = VRDMA_OP_FETCH_ADD;
		r.u.wr.sge[0].length = 8;
		r.u.wr.remote_addr = IOVA + DATA_OFF + 4;
		break;
	case E_SMALLRECV:
		r.opcode = VRDMA_OP_SEND;
		break;
	case E_NOLW:	/* READ into a local MR without LOCAL_WRITE */
		r.opcode = VRDMA_OP_READ;
		r.u.wr.sge[0].lkey = rokey;
		break;
	}
	if (how == E_NOACC) {
		uint32_t o2[4];

		ck_assert_int_eq(tg_reg_mr(&b, DATA_OFF, 4096, VRDMA_ACC_LOCAL_WRITE, o2),
				 VRDMA_CS_OK);
		r.u.wr.rkey = o2[1];
	}
	if (how == E_SMALLRECV) {
		struct vrdma_req rr = mkwr(&b, VRDMA_OP_RECV, 0, 40);

		add_sge(&rr, DATA_OFF, 63, b.key);
		post(&b, &rr);
	}
	post(&a, &r);
	/* A second WR behind the failed one is flushed. */
	r = mkwr(&a, VRDMA_OP_WRITE, 0, 2);
	post(&a, &r);
	c = expect_cqe(&a, 1, want);
	ck_assert_uint_eq(c.sq_retired, 1);
	c = expect_cqe(&a, 2, VRDMA_WS_WR_FLUSH_ERR);
	ck_assert_uint_eq(c.sq_retired, 2);
	if (how == E_SMALLRECV)
		expect_cqe(&b, 40, VRDMA_WS_LOC_LEN_ERR);
	/* A completion error, never a disable. */
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	ck_assert_int_eq(back_state(&b), VRDMA_XB_CONNECTED);
	tg_stop(&a);
	tg_stop(&b);
}

START_TEST(err_bad_lkey) { error_case(E_LKEY, VRDMA_WS_LOC_PROT_ERR); }
END_TEST
START_TEST(err_lkey_wrong_tag) { error_case(E_LTAG, VRDMA_WS_LOC_PROT_ERR); }
END_TEST
START_TEST(err_lkey_wrong_slot) { error_case(E_LSLOT, VRDMA_WS_LOC_PROT_ERR); }
END_TEST
START_TEST(err_bad_rkey) { error_case(E_RKEY, VRDMA_WS_REM_ACCESS_ERR); }
END_TEST
START_TEST(err_rkey_wrong_slot) { error_case(E_RSLOT, VRDMA_WS_REM_ACCESS_ERR); }
END_TEST
START_TEST(err_oob_by_one) { error_case(E_OOB1, VRDMA_WS_REM_ACCESS_ERR); }
END_TEST
START_TEST(err_remote_wrap) { error_case(E_WRAP, VRDMA_WS_REM_ACCESS_ERR); }
END_TEST
START_TEST(err_local_wrap) { error_case(E_LWRAP, VRDMA_WS_LOC_PROT_ERR); }
END_TEST
START_TEST(err_no_remote_write) { error_case(E_NOACC, VRDMA_WS_REM_ACCESS_ERR); }
END_TEST
START_TEST(err_misaligned_atomic) { error_case(E_ALIGN, VRDMA_WS_REM_INV_REQ_ERR); }
END_TEST
START_TEST(err_recv_too_small) { error_case(E_SMALLRECV, VRDMA_WS_REM_INV_REQ_ERR); }
END_TEST
START_TEST(err_read_no_local_write) { error_case(E_NOLW, VRDMA_WS_LOC_PROT_ERR); }
END_TEST


/* ---- peers going away ---- */

static void queue_sends(struct tg *a, unsigned n)
{
	struct vrdma_req r;
	unsigned i;

	for (i = 0; i < n; i++) {
		r = mkwr(a, VRDMA_OP_SEND, 0, 1 + i);
		add_sge(&r, DATA_OFF, 16, a->key);
		post(a, &r);
	}
	expect_no_cqe(a);
}

static void expect_peer_lost(struct tg *a, unsigned n)
{
	struct vrdma_cqe c;
	unsigned i;

	c = expect_cqe(a, 1, VRDMA_WS_RETRY_EXC_ERR);
	ck_assert_uint_eq(c.sq_retired, 1);
	for (i = 1; i < n; i++)
		expect_cqe(a, 1 + i, VRDMA_WS_WR_FLUSH_ERR);
	tg_events(a);
	ck_assert_int_eq(a->async[a->nasync - 1].type, VRDMA_EVT_QP_ERROR);
	ck_assert_uint_eq(a->async[a->nasync - 1].handle, a->qp);
}

START_TEST(peer_torn_down)
{
	struct tg a, b;
	struct vbe_census c;

	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_connect(&a, &b);
	queue_sends(&a, 3);
	vplat_key_rm(b.p, b.fdir);
	stub_run();
	ck_assert_int_eq(back_state(&b), VRDMA_XB_CLOSED);
	expect_peer_lost(&a, 3);
	vbe_node_census(node, &c);
	ck_assert_uint_eq(c.maps, 2);
	ck_assert_uint_eq(c.chans, 1);
	ck_assert_uint_eq(c.qps, 1);
	ck_assert_uint_eq(c.mrs, 1);
	ck_assert_uint_eq(c.cqs, 1);
	ck_assert_uint_eq(c.pds, 1);
	ck_assert_uint_eq(c.bufs, 1);
	ck_assert_uint_eq(c.listeners, 0);
	vplat_key_rm(dom0, b.bdir);
	stub_run();
	vbe_node_census(node, &c);
	ck_assert_uint_eq(c.guests, 1);
	tg_stop(&b);
	tg_stop(&a);
}
END_TEST

START_TEST(peer_disabled)
{
	struct tg a, b;
	struct vrdma_req r;

	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_connect(&a, &b);
	queue_sends(&a, 2);
	r = mkreq(0xff, 0);
	post(&b, &r);
	ck_assert_int_eq(back_state(&b), VRDMA_XB_CLOSED);
	expect_peer_lost(&a, 2);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

START_TEST(peer_qp_destroyed)
{
	struct tg a, b;
	struct vrdma_req r;

	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_connect(&a, &b);
	queue_sends(&a, 2);
	r = mkreq(VRDMA_CMD_DESTROY_QP, b.qp);
	ck_assert_int_eq(tg_cmd(&b, &r, NULL), VRDMA_CS_OK);
	expect_peer_lost(&a, 2);
	/* Posting to the errored QP flushes at once. */
	r = mkwr(&a, VRDMA_OP_RECV, 0, 9);
	post(&a, &r);
	expect_cqe(&a, 9, VRDMA_WS_WR_FLUSH_ERR);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

START_TEST(dump_text_and_json)
{
	struct json_object *doc, *gs, *g, *v;
	struct tg a, b;
	char buf[16384];
	size_t i;

	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_connect(&a, &b);
	write_works(&a, &b);
	vbe_node_dump(node, tg_out(true));
	tg_out_end(buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "{\"node\":\"n1\""));
	ck_assert_ptr_nonnull(strstr(buf, "\"tx_bytes\":64"));
	/* A parser's view: states and rights spelled out. */
	doc = json_tokener_parse(buf);
	ck_assert_msg(doc != NULL, "not JSON: %s", buf);
	ck_assert(json_object_object_get_ex(doc, "guests", &gs));
	ck_assert_uint_eq(json_object_array_length(gs), 2);
	for (i = 0; i < 2; i++) {
		g = json_object_array_get_idx(gs, i);
		ck_assert(json_object_object_get_ex(g, "state", &v));
		ck_assert_str_eq(json_object_get_string(v), "connected");
		ck_assert(json_object_object_get_ex(g, "qps", &v));
		ck_assert_str_eq(json_object_get_string(json_object_object_get(
			json_object_array_get_idx(v, 0), "state")), "rts");
		ck_assert(json_object_object_get_ex(g, "mrs", &v));
		ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
			json_object_object_get(json_object_array_get_idx(v, 0), "access"), 0)),
			"local-write");
	}
	json_object_put(doc);
	vbe_node_dump(node, tg_out(false));
	tg_out_end(buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "guest 6/0 tenant dom6 state connected"));
	ck_assert_ptr_nonnull(strstr(buf, "rx_bytes=64"));
	ck_assert_ptr_nonnull(strstr(buf, " access local-write,"));
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

START_TEST(notifications)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_ALLOC_PD, 0);
	struct tg a, b;

	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_connect(&a, &b);
	while (vplat_chan_ack(a.ch) > 0)
		;
	/* Idle: arming reports no work and asks the guest for a kick. */
	ck_assert_int_eq(vbe_node_arm(node), 0);
	ck_assert_uint_eq(a.sr->req.event, a.req_prod + 1);
	tg_push(&a, &r);
	ck_assert_int_eq(vbe_node_arm(node), 1);
	/* Busy polling: no kicks wanted. */
	vbe_node_disarm(node);
	ck_assert(!vring_need_notify(a.sr->req.event, a.req_prod, a.req_prod + 1));
	/* Guest not armed for events: the result comes without a kick. */
	vring_disarm(&a.sr->evt, a.evt_cons);
	vbe_node_poll(node);
	ck_assert_int_eq(vplat_chan_ack(a.ch), 0);
	tg_events(&a);
	/* Armed: exactly one kick per batch. */
	vring_arm(&a.sr->evt, a.evt_cons);
	tg_push(&a, &r);
	tg_push(&a, &r);
	vbe_node_poll(node);
	ck_assert_int_eq(vplat_chan_ack(a.ch), 1);
	ck_assert_int_eq(vplat_chan_ack(a.ch), 0);
	tg_events(&a);
	/* A CQE into an armed CQ of the peer kicks the peer. */
	vring_arm(&b.cqh->ring, b.cq_cons);
	while (vplat_chan_ack(b.ch) > 0)
		;
	r = mkwr(&b, VRDMA_OP_RECV, 0, 3);
	add_sge(&r, DATA_OFF, 64, b.key);
	post(&b, &r);
	ck_assert_int_eq(vplat_chan_ack(b.ch), 0);
	r = mkwr(&a, VRDMA_OP_SEND, 0, 4);
	add_sge(&r, DATA_OFF, 64, a.key);
	post(&a, &r);
	ck_assert_int_eq(vplat_chan_ack(b.ch), 1);
	expect_cqe(&b, 3, VRDMA_WS_SUCCESS);
	/* The fd vrdmad polls is the channel's: fd_ready acks it. */
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

static Suite *backend_suite(void)
{
	Suite *s = suite_create("backend");
	TCase *t;

	t = tcase_create("handshake");
	tcase_add_checked_fixture(t, tg_setup, tg_teardown);
	tcase_add_test(t, handshake_good);
	tcase_add_test(t, handshake_bad_version);
	tcase_add_test(t, handshake_bad_ring_pages);
	tcase_add_test(t, handshake_bad_ref);
	tcase_add_test(t, handshake_bad_magic);
	tcase_add_test(t, handshake_order_too_big);
	tcase_add_test(t, frontend_close_and_reconnect);
	suite_add_tcase(s, t);

	t = tcase_create("commands");
	tcase_add_checked_fixture(t, tg_setup, tg_teardown);
	tcase_add_test(t, commands_objects);
	tcase_add_test(t, commands_cm);
	tcase_add_test(t, commands_modify_qp);
	tcase_add_test(t, dump_text_and_json);
	suite_add_tcase(s, t);

	t = tcase_create("data");
	tcase_add_checked_fixture(t, tg_setup, tg_teardown);
	tcase_add_test(t, opcodes_move_data);
	tcase_add_test(t, unsignaled_and_sq_retired);
	tcase_add_test(t, batch_keeps_ring_order);
	tcase_add_test(t, send_waits_for_recv);
	tcase_add_test(t, notifications);
	tcase_add_test(t, err_bad_lkey);
	tcase_add_test(t, err_lkey_wrong_tag);
	tcase_add_test(t, err_lkey_wrong_slot);
	tcase_add_test(t, err_bad_rkey);
	tcase_add_test(t, err_rkey_wrong_slot);
	tcase_add_test(t, err_oob_by_one);
	tcase_add_test(t, err_remote_wrap);
	tcase_add_test(t, err_local_wrap);
	tcase_add_test(t, err_no_remote_write);
	tcase_add_test(t, err_misaligned_atomic);
	tcase_add_test(t, err_recv_too_small);
	tcase_add_test(t, err_read_no_local_write);
	tcase_add_test(t, peer_torn_down);
	tcase_add_test(t, peer_disabled);
	tcase_add_test(t, peer_qp_destroyed);
	suite_add_tcase(s, t);

	suite_add_tcase(s, backend_bad_tcase());
	suite_add_tcase(s, backend_fair_tcase());
	suite_add_tcase(s, backend_keys_tcase());
	suite_add_tcase(s, backend_policy_tcase());
	suite_add_tcase(s, backend_share_tcase());
	suite_add_tcase(s, backend_sge_tcase());
	suite_add_tcase(s, backend_buf_tcase());
	suite_add_tcase(s, backend_ud_tcase());
	suite_add_tcase(s, backend_udnode_tcase());
	suite_add_tcase(s, backend_udahead_tcase());
	suite_add_tcase(s, backend_coll_tcase());
	suite_add_tcase(s, backend_collsw_tcase());
	suite_add_tcase(s, backend_collbad_tcase());
	suite_add_tcase(s, backend_chain_tcase());
	suite_add_tcase(s, backend_chainbad_tcase());
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(backend_suite());

	/* Disabled guests log a warning each: keep the output readable. */
	if (!getenv("VRDMA_LOG"))
		setenv("VRDMA_LOG", "0", 1);
	return ck_run(sr);
}
