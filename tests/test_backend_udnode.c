// SPDX-License-Identifier: MIT
/*
 * Datagrams from another node's guest on the stub platform: what
 * device/verbs_ud.c hands local/ud.c once the header parsed
 * (vbe_ud_from_node).  Delivered with a GRH whose SGID is the sending
 * node and src_qpn the sender's QP; every check of a datagram of this
 * node holds, and a receive published but not read yet counts (no such
 * QP, an RC QP, another Q_Key, no receive, a small
 * one, the policy by the sender's group hash): dropped, never written
 * (a small receive completes LOC_LEN_ERR).  A datagram to another node
 * past the node's max-ud-msg fails its send.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_tg.h"
#include "../backend/vbe.h"
#include "../backend/device/verbs_ud.h"

#define QKEY	0x22222222u

static uint32_t ud_qp(struct tg *g, uint32_t *qpn)
{
	return tg_ud_qp(g, 0, QKEY, qpn);
}

static void recv_on(struct tg *g, uint32_t qp, uint64_t id, uint32_t len)
{
	struct vrdma_req r = mkreq(VRDMA_OP_RECV, qp);

	r.id = id;
	add_sge(&r, DATA_OFF + 4096, len, g->key);
	post(g, &r);
	tg_events(g);		/* dom0 has read it */
}

/* A header as verbs_udhdr.c leaves it: from 10.0.0.2, QP 77. */
static struct vbe_vud_hdr hdr(uint32_t dqpn, uint32_t len, uint32_t group)
{
	struct vbe_vud_hdr h = {
		.sgid = { [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 2 },
		.dqpn = dqpn, .sqpn = 77, .qkey = QKEY, .imm = 0x0a0b0c0d,
		.group = group, .len = len, .has_imm = true,
	};

	return h;
}

/* As verbs_ud.c does it from vbe_node_poll: the CQEs go out at its flush. */
static const char *from(const struct vbe_vud_hdr *h, const uint8_t *payload)
{
	const char *why = vbe_ud_from_node(node, h, payload);

	vbe_node_poll(node);
	return why;
}

static struct vbe_guest *bg(uint32_t domid)
{
	return vbe_node_guest(node, domid, 0);
}

START_TEST(udnode_deliver)
{
	static const uint8_t pay[100] = { 1, 2, 3, [99] = 99 };
	struct vbe_vud_hdr h;
	struct vrdma_cqe c;
	uint32_t qp, qpn;
	uint8_t gid[16];
	struct tg b;

	tg_full(&b, 6);
	qp = ud_qp(&b, &qpn);
	node_gid(&b, gid);
	recv_on(&b, qp, 9, 2048);
	h = hdr(qpn, sizeof(pay), vbe_policy_ghash(node, bg(6)->tenant));
	ck_assert_ptr_null(from(&h, pay));
	c = expect_cqe(&b, 9, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(c.byte_len, VRDMA_GRH_LEN + sizeof(pay));
	ck_assert_uint_eq(c.src_qpn, 77);
	ck_assert_uint_eq(c.flags, VRDMA_CQE_F_GRH | VRDMA_CQE_F_IMM);
	ck_assert_uint_eq(c.imm_data, 0x0a0b0c0d);
	{
		const uint8_t *g = b.mem + DATA_OFF + 4096;

		ck_assert_uint_eq(g[0] >> 4, 6);
		ck_assert_mem_eq(g + 8, h.sgid, 16);	/* SGID: the sending node */
		ck_assert_mem_eq(g + 24, gid, 16);	/* DGID: this node */
		ck_assert_mem_eq(g + 40, pay, sizeof(pay));
	}
	ck_assert_uint_eq(bg(6)->ctr.ud_rx, 1);
	tg_stop(&b);
}
END_TEST

/* A receive b published that dom0 has not read yet takes a datagram
 * from another node (the device's completion came before b's turn). */
START_TEST(udnode_recv_unread)
{
	static const uint8_t pay[64] = { 7, [63] = 8 };
	struct vbe_vud_hdr h;
	struct vrdma_req r;
	uint32_t qp, qpn, cons;
	struct tg b;

	tg_full(&b, 6);
	qp = ud_qp(&b, &qpn);
	r = mkreq(VRDMA_OP_RECV, qp);
	r.id = 9;
	add_sge(&r, DATA_OFF + 4096, 2048, b.key);
	tg_push(&b, &r);
	cons = bg(6)->req_cons;
	h = hdr(qpn, sizeof(pay), vbe_policy_ghash(node, bg(6)->tenant));
	ck_assert_ptr_null(vbe_ud_from_node(node, &h, pay));
	ck_assert_uint_eq(bg(6)->req_cons, cons + 1);
	vbe_node_poll(node);
	ck_assert_uint_eq(expect_cqe(&b, 9, VRDMA_WS_SUCCESS).byte_len,
			  VRDMA_GRH_LEN + sizeof(pay));
	ck_assert_mem_eq(b.mem + DATA_OFF + 4096 + VRDMA_GRH_LEN, pay, sizeof(pay));
	ck_assert_uint_eq(bg(6)->ctr.ud_rx_drop, 0);
	tg_stop(&b);
}
END_TEST

START_TEST(udnode_drops)
{
	static const uint8_t pay[64];
	struct vbe_vud_hdr h;
	uint32_t qp, qpn, grp;
	struct tg b;

	tg_full(&b, 6);
	qp = ud_qp(&b, &qpn);
	grp = vbe_policy_ghash(node, bg(6)->tenant);
	/* No receive posted. */
	h = hdr(qpn, 64, grp);
	ck_assert_str_eq(from(&h, pay), "no receive posted");
	/* No such QP, an RC QP's number. */
	recv_on(&b, qp, 9, 2048);
	h.dqpn = 0xfffff0;
	ck_assert_ptr_nonnull(from(&h, pay));
	h.dqpn = b.qpn;
	ck_assert_ptr_nonnull(from(&h, pay));
	/* Another Q_Key; the own-Q_Key bit means nothing from a peer. */
	h = hdr(qpn, 64, grp);
	h.qkey = QKEY + 1;
	ck_assert_str_eq(from(&h, pay), "Q_Key mismatch");
	h.qkey = VRDMA_QKEY_OWN;
	ck_assert_str_eq(from(&h, pay), "Q_Key mismatch");
	expect_no_cqe(&b);
	/* Too small for GRH and payload: that receive completes LOC_LEN_ERR,
	 * as for a datagram of this node. */
	h = hdr(qpn, 2048 - 39, grp);
	ck_assert_str_eq(from(&h, b.mem), "receive too small");
	expect_cqe(&b, 9, VRDMA_WS_LOC_LEN_ERR);
	ck_assert_uint_eq(bg(6)->ctr.ud_rx_drop, 4);
	ck_assert_uint_eq(bg(6)->ctr.ud_rx, 0);
	/* The QP goes on: the next receive takes a good one. */
	recv_on(&b, qp, 10, 2048);
	h = hdr(qpn, 2048 - 40, grp);
	ck_assert_ptr_null(from(&h, b.mem));
	ck_assert_uint_eq(expect_cqe(&b, 10, VRDMA_WS_SUCCESS).byte_len, 2048);
	ck_assert_int_eq(back_state(&b), VRDMA_XB_CONNECTED);
	tg_stop(&b);
}
END_TEST

/* A `vrdmactl policy` line, words split at spaces. */
static int pol(const char *line)
{
	char buf[128], *argv[8], sink[512], *save = NULL, *w;
	int argc = 0, rc;

	snprintf(buf, sizeof(buf), "%s", line);
	for (w = strtok_r(buf, " ", &save); w && argc < 7; w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	argv[argc] = NULL;
	rc = vbe_node_policy(node, argc, argv, tg_out(false));
	tg_out_end(sink, sizeof(sink));
	return rc;
}

/* Another node's group reaches a tenant only as the policy lets it,
 * either way as a binding from there: a rule toward the sender admits
 * the answer. */
START_TEST(udnode_policy)
{
	static const uint8_t pay[8];
	struct vbe_vud_hdr h;
	uint32_t qp, qpn;
	char path[256];
	struct tg b;

	snprintf(path, sizeof(path), VRDMA_XS_BACK_FMT "/tenant", 6u, 0u);
	ck_assert_int_eq(vplat_key_write(dom0, path, "alice"), 0);
	tg_full(&b, 6);
	qp = ud_qp(&b, &qpn);
	recv_on(&b, qp, 9, 256);
	ck_assert_int_eq(pol("default tenant"), 0);
	h = hdr(qpn, 8, vbe_policy_hash("mallory"));
	ck_assert_str_eq(from(&h, pay), "policy");
	/* alice's own group from the other node: the same group. */
	h.group = vbe_policy_hash("alice");
	ck_assert_ptr_null(from(&h, pay));
	expect_cqe(&b, 9, VRDMA_WS_SUCCESS);
	/* An allow rule toward alice only: mallory -> alice passes. */
	recv_on(&b, qp, 10, 256);
	ck_assert_int_eq(pol("allow mallory alice"), 0);
	h.group = vbe_policy_hash("mallory");
	ck_assert_ptr_null(from(&h, pay));
	expect_cqe(&b, 10, VRDMA_WS_SUCCESS);
	/* A rule from alice to mallory: mallory's answer passes too. */
	ck_assert_int_eq(pol("remove allow mallory alice"), 0);
	ck_assert_str_eq(from(&h, pay), "policy");
	ck_assert_int_eq(pol("allow alice mallory"), 0);
	recv_on(&b, qp, 11, 256);
	ck_assert_ptr_null(from(&h, pay));
	expect_cqe(&b, 11, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(bg(6)->ctr.ud_rx_drop, 0);	/* the policy is no QP's fault */
	tg_stop(&b);
}
END_TEST

/* A datagram of len bytes at DATA_OFF of g's qp to (gid, qpn). */
static void send_to(struct tg *g, uint32_t qp, uint64_t id, uint32_t len,
		    const uint8_t gid[16], uint32_t qpn)
{
	struct vrdma_req r = mkreq(VRDMA_OP_SEND, qp);

	r.flags = VRDMA_WR_F_SIGNALED;
	r.id = id;
	memcpy(r.u.wr.ud.dgid, gid, 16);
	r.u.wr.ud.remote_qpn = qpn;
	r.u.wr.ud.remote_qkey = QKEY;
	add_sge(&r, DATA_OFF, len, g->key);
	post(g, &r);
}

/*
 * A node whose device carries 992 bytes behind the header (rxe over
 * 1500-byte Ethernet; the stub platform has no device, so the node is
 * given the payload vbe_vud_open would set): its guests are told
 * max-ud-msg 992, a datagram to another node's GID past it fails
 * LOC_LEN_ERR (the QP to ERR) with nothing counted as sent or dropped,
 * 992 bytes go (dropped here: no device), and a full VRDMA_UD_MTU still
 * lands on this node.
 */
START_TEST(udnode_max_msg)
{
	uint8_t gid[16], other[16];
	uint32_t qa, qa2, qb, qpna, qpnb;
	char path[256], v[16];
	struct tg a, b;

	node->max_ud_msg = 992;
	tg_full(&a, 5);
	tg_full(&b, 6);
	snprintf(path, sizeof(path), "%s/max-ud-msg", a.bdir);
	ck_assert_int_eq(vplat_key_read(a.p, path, v, sizeof(v)), 0);
	ck_assert_str_eq(v, "992");
	qa = ud_qp(&a, &qpna);
	qb = ud_qp(&b, &qpnb);
	node_gid(&a, gid);
	memcpy(other, gid, 16);
	other[15] ^= 1;
	send_to(&a, qa, 1, 993, other, 77);
	expect_cqe(&a, 1, VRDMA_WS_LOC_LEN_ERR);
	ck_assert_int_eq(bg(5)->qps[qa & 0xffff].state, VBE_QPS_ERR);
	ck_assert_uint_eq(bg(5)->ctr.ud_tx, 0);
	ck_assert_uint_eq(bg(5)->ctr.ud_tx_drop, 0);
	ck_assert_uint_eq(bg(5)->ctr.tx_bytes, 0);
	qa2 = ud_qp(&a, &qpna);
	send_to(&a, qa2, 2, 992, other, 77);
	expect_cqe(&a, 2, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(bg(5)->ctr.ud_tx_drop, 1);
	recv_on(&b, qb, 9, VRDMA_GRH_LEN + VRDMA_UD_MTU);
	send_to(&a, qa2, 3, VRDMA_UD_MTU, gid, qpnb);
	expect_cqe(&a, 3, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(expect_cqe(&b, 9, VRDMA_WS_SUCCESS).byte_len,
			  VRDMA_GRH_LEN + VRDMA_UD_MTU);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

/* No device for datagrams: every destination takes VRDMA_UD_MTU. */
START_TEST(udnode_max_msg_plain)
{
	char path[256], v[16];
	struct tg a;

	tg_full(&a, 5);
	snprintf(path, sizeof(path), "%s/max-ud-msg", a.bdir);
	ck_assert_int_eq(vplat_key_read(a.p, path, v, sizeof(v)), 0);
	ck_assert_int_eq(atoi(v), VRDMA_UD_MTU);
	tg_stop(&a);
}
END_TEST

TCase *backend_udnode_tcase(void)
{
	TCase *t = tcase_create("udnode");

	tcase_add_checked_fixture(t, tg_setup, tg_teardown);
	tcase_add_test(t, udnode_deliver);
	tcase_add_test(t, udnode_recv_unread);
	tcase_add_test(t, udnode_drops);
	tcase_add_test(t, udnode_policy);
	tcase_add_test(t, udnode_max_msg);
	tcase_add_test(t, udnode_max_msg_plain);
	return t;
}
