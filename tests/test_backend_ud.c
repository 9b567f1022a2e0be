// SPDX-License-Identifier: MIT
/*
 * UD QPs on the stub platform (backend/local/ud.c): a datagram lands
 * in the destination's receive behind a 40-byte GRH, with src_qpn and
 * VRDMA_CQE_F_GRH; a wrong Q_Key, no receive, a small receive (which
 * completes LOC_LEN_ERR, of the QP's own queue or of an SRQ), an unknown
 * QPN, another node's GID and a tenant the policy keeps away drop it and
 * count it; a payload past the MTU fails the send; RC operations on a
 * UD QP and UD commands on an RC QP are refused.
 */
#include <check.h>
#include <string.h>

#include "backend_tg.h"
#include "../backend/vbe.h"

#define QKEY	0x11111111u

struct ud {
	uint32_t qp, qpn;
};

static int ud_create(struct tg *g, struct ud *u)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_CREATE_QP, 0);
	uint32_t out[4];
	int st;

	r.u.create_qp.pd = g->pd;
	r.u.create_qp.send_cq = g->cq;
	r.u.create_qp.recv_cq = g->cq;
	r.u.create_qp.max_send_wr = DEPTH;
	r.u.create_qp.max_recv_wr = DEPTH;
	r.u.create_qp.max_sge = 2;
	r.u.create_qp.type = VRDMA_QP_TYPE_UD;
	st = tg_cmd(g, &r, out);
	u->qp = out[0];
	u->qpn = out[1];
	return st;
}

static int ud_rts(struct tg *g, uint32_t qp, uint32_t qkey)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_MODIFY_QP, qp);

	r.u.modify_qp.state = VRDMA_MQ_UD_RTS;
	r.u.modify_qp.qkey = qkey;
	return tg_cmd(g, &r, NULL);
}

/* A UD QP of g in RTS with Q_Key QKEY. */
static void ud_full(struct tg *g, uint32_t domid, struct ud *u)
{
	tg_full(g, domid);
	ck_assert_int_eq(ud_create(g, u), VRDMA_CS_OK);
	ck_assert_int_eq(ud_rts(g, u->qp, QKEY), VRDMA_CS_OK);
}

static void ud_recv(struct tg *g, const struct ud *u, uint64_t id, uint64_t off, uint32_t len)
{
	struct vrdma_req r = mkreq(VRDMA_OP_RECV, u->qp);

	r.id = id;
	add_sge(&r, off, len, g->key);
	post(g, &r);
}

/* A datagram of len bytes at DATA_OFF of a to (gid, qpn, qkey). */
static void ud_send(struct tg *a, const struct ud *u, uint64_t id, uint32_t len,
		    const uint8_t gid[16], uint32_t qpn, uint32_t qkey)
{
	struct vrdma_req r = mkreq(VRDMA_OP_SEND, u->qp);

	r.flags = VRDMA_WR_F_SIGNALED;
	r.id = id;
	memcpy(r.u.wr.ud.dgid, gid, 16);
	r.u.wr.ud.remote_qpn = qpn;
	r.u.wr.ud.remote_qkey = qkey;
	add_sge(&r, DATA_OFF, len, a->key);
	post(a, &r);
}

static struct vbe_guest *bg(uint32_t domid)
{
	return vbe_node_guest(node, domid, 0);
}

static enum vbe_qp_state ud_state(uint32_t domid, const struct ud *u)
{
	return bg(domid)->qps[u->qp & 0xffff].state;
}

START_TEST(ud_feature_published)
{
	char path[256], v[16];
	struct tg a;

	tg_full(&a, 5);
	snprintf(path, sizeof(path), "%s/feature-ud", a.bdir);
	ck_assert_int_eq(vplat_key_read(a.p, path, v, sizeof(v)), 0);
	ck_assert_str_eq(v, "1");
	tg_stop(&a);
}
END_TEST

/* 100 bytes from a to b: GRH then payload, byte_len 140, src_qpn. */
START_TEST(ud_deliver_grh)
{
	uint8_t gid[16];
	struct vrdma_cqe c;
	struct tg a, b;
	struct ud ua, ub;
	unsigned i;

	ud_full(&a, 5, &ua);
	ud_full(&b, 6, &ub);
	node_gid(&a, gid);
	for (i = 0; i < 100; i++)
		a.mem[DATA_OFF + i] = (uint8_t)(i * 3 + 1);
	ud_recv(&b, &ub, 9, DATA_OFF + 4096, 2048);
	ud_send(&a, &ua, 1, 100, gid, ub.qpn, QKEY);
	c = expect_cqe(&a, 1, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(c.byte_len, 100);
	c = expect_cqe(&b, 9, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(c.opcode, VRDMA_WC_RECV);
	ck_assert_uint_eq(c.byte_len, VRDMA_GRH_LEN + 100);
	ck_assert_uint_eq(c.src_qpn, ua.qpn);
	ck_assert_uint_eq(c.qp, ub.qp);
	ck_assert_uint_eq(c.flags, VRDMA_CQE_F_GRH);
	{
		const uint8_t *h = b.mem + DATA_OFF + 4096;

		ck_assert_uint_eq(h[0] >> 4, 6);		/* IP version 6 */
		ck_assert_uint_eq((unsigned)h[4] << 8 | h[5], 100);	/* payload length */
		ck_assert_uint_eq(h[6], 0x1b);			/* next header */
		ck_assert_mem_eq(h + 8, gid, 16);		/* SGID */
		ck_assert_mem_eq(h + 24, gid, 16);		/* DGID */
		ck_assert_mem_eq(h + 40, a.mem + DATA_OFF, 100);
	}
	ck_assert_uint_eq(bg(5)->ctr.ud_tx, 1);
	ck_assert_uint_eq(bg(6)->ctr.ud_rx, 1);
	/* SEND_IMM, and the own-Q_Key bit. */
	ud_recv(&b, &ub, 10, DATA_OFF + 4096, 2048);
	{
		struct vrdma_req r = mkreq(VRDMA_OP_SEND_IMM, ua.qp);

		r.id = 2;
		memcpy(r.u.wr.ud.dgid, gid, 16);
		r.u.wr.ud.remote_qpn = ub.qpn;
		r.u.wr.ud.remote_qkey = VRDMA_QKEY_OWN;
		r.u.wr.imm_data = 0x01020304;
		add_sge(&r, DATA_OFF, 8, a.key);
		post(&a, &r);
	}
	expect_no_cqe(&a);			/* unsignaled success */
	c = expect_cqe(&b, 10, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(c.flags, VRDMA_CQE_F_GRH | VRDMA_CQE_F_IMM);
	ck_assert_uint_eq(c.imm_data, 0x01020304);
	ck_assert_uint_eq(c.byte_len, VRDMA_GRH_LEN + 8);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

/* Dropped and counted, the sender's WR a success each time. */
START_TEST(ud_drops)
{
	uint8_t gid[16], other[16];
	struct tg a, b;
	struct ud ua, ub;

	ud_full(&a, 5, &ua);
	ud_full(&b, 6, &ub);
	node_gid(&a, gid);
	/* No receive posted. */
	ud_send(&a, &ua, 1, 64, gid, ub.qpn, QKEY);
	expect_cqe(&a, 1, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(bg(5)->ctr.ud_tx_drop, 1);
	ck_assert_uint_eq(bg(6)->ctr.ud_rx_drop, 1);
	/* Wrong Q_Key. */
	ud_recv(&b, &ub, 9, DATA_OFF + 4096, 2048);
	ud_send(&a, &ua, 2, 64, gid, ub.qpn, QKEY + 1);
	expect_cqe(&a, 2, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(bg(6)->ctr.ud_rx_drop, 2);
	/* Too small: the receive holds the payload but not the GRH too.
	 * It completes LOC_LEN_ERR (no GRH), the QP goes on. */
	ud_send(&a, &ua, 3, 2048 - 39, gid, ub.qpn, QKEY);
	expect_cqe(&a, 3, VRDMA_WS_SUCCESS);
	{
		struct vrdma_cqe c = expect_cqe(&b, 9, VRDMA_WS_LOC_LEN_ERR);

		ck_assert_uint_eq(c.flags, 0);
		ck_assert_uint_eq(c.byte_len, 0);
	}
	ck_assert_uint_eq(bg(6)->ctr.ud_rx_drop, 3);
	ck_assert_int_eq(bg(6)->qps[ub.qp & 0xffff].state, VBE_QPS_RTS);
	ud_recv(&b, &ub, 10, DATA_OFF + 4096, 2048);
	/* Unknown QPN, an RC QP's number, another node's GID. */
	ud_send(&a, &ua, 4, 64, gid, 0xfffff0, QKEY);
	expect_cqe(&a, 4, VRDMA_WS_SUCCESS);
	ud_send(&a, &ua, 5, 64, gid, b.qpn, QKEY);
	expect_cqe(&a, 5, VRDMA_WS_SUCCESS);
	memcpy(other, gid, 16);
	other[15] ^= 1;
	ud_send(&a, &ua, 6, 64, other, ub.qpn, QKEY);
	expect_cqe(&a, 6, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(bg(5)->ctr.ud_tx_drop, 6);
	ck_assert_uint_eq(bg(6)->ctr.ud_rx_drop, 3);
	ck_assert_uint_eq(bg(5)->ctr.ud_tx, 0);
	/* The next receive is still there: the next good one lands in it. */
	expect_no_cqe(&b);
	ud_send(&a, &ua, 7, 2048 - 40, gid, ub.qpn, QKEY);
	expect_cqe(&a, 7, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(expect_cqe(&b, 10, VRDMA_WS_SUCCESS).byte_len, 2048);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

/*
 * A UD QP of b on an SRQ of depth 4: a receive too small for the
 * datagram completes LOC_LEN_ERR (naming the SRQ), and the QP goes on to
 * the SRQ's next receive; held by the QP instead, it would take every
 * later datagram to it down with it.
 */
START_TEST(ud_srq_small)
{
	struct vrdma_req r;
	struct vrdma_cqe c;
	uint8_t gid[16];
	uint32_t out[4], srq;
	struct tg a, b;
	struct ud ua, ub;

	ud_full(&a, 5, &ua);
	tg_full(&b, 6);
	node_gid(&a, gid);
	r = mkreq(VRDMA_CMD_CREATE_SRQ, 0);
	r.u.create_srq.pd = b.pd;
	r.u.create_srq.max_wr = 4;
	r.u.create_srq.max_sge = 2;
	ck_assert_int_eq(tg_cmd(&b, &r, out), VRDMA_CS_OK);
	srq = out[0];
	r = mkreq(VRDMA_CMD_CREATE_QP, 0);
	r.u.create_qp.pd = b.pd;
	r.u.create_qp.send_cq = r.u.create_qp.recv_cq = b.cq;
	r.u.create_qp.max_send_wr = DEPTH;
	r.u.create_qp.max_sge = 2;
	r.u.create_qp.srq = srq;
	r.u.create_qp.type = VRDMA_QP_TYPE_UD;
	ck_assert_int_eq(tg_cmd(&b, &r, out), VRDMA_CS_OK);
	ub.qp = out[0];
	ub.qpn = out[1];
	ck_assert_int_eq(ud_rts(&b, ub.qp, QKEY), VRDMA_CS_OK);
	r = mkwr(&b, VRDMA_OP_SRQ_RECV, 0, 30);
	r.handle = srq;
	add_sge(&r, DATA_OFF + 4096, 64, b.key);
	post(&b, &r);
	r = mkwr(&b, VRDMA_OP_SRQ_RECV, 0, 31);
	r.handle = srq;
	add_sge(&r, DATA_OFF + 8192, 1024, b.key);
	post(&b, &r);
	ud_send(&a, &ua, 1, 200, gid, ub.qpn, QKEY);
	expect_cqe(&a, 1, VRDMA_WS_SUCCESS);
	c = expect_cqe(&b, 30, VRDMA_WS_LOC_LEN_ERR);
	ck_assert_uint_eq(c.srq, srq);
	ck_assert_uint_eq(c.qp, ub.qp);
	ck_assert_int_eq(ud_state(6, &ub), VBE_QPS_RTS);
	ck_assert_uint_eq(bg(6)->ctr.ud_rx_drop, 1);
	ud_send(&a, &ua, 2, 200, gid, ub.qpn, QKEY);
	expect_cqe(&a, 2, VRDMA_WS_SUCCESS);
	c = expect_cqe(&b, 31, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(c.byte_len, VRDMA_GRH_LEN + 200);
	ck_assert_uint_eq(c.flags, VRDMA_CQE_F_GRH);
	ck_assert_int_eq(back_state(&b), VRDMA_XB_CONNECTED);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

/*
 * Past the MTU the send fails LOC_LEN_ERR, with a bad lkey LOC_PROT_ERR,
 * and either moves the QP to ERR (IB: SQE): its receives and the sends
 * behind it are flushed.  A full MTU lands.
 */
START_TEST(ud_send_errors)
{
	uint8_t gid[16];
	struct vrdma_req r;
	struct tg a, b;
	struct ud ua, ub, ua2;

	ud_full(&a, 5, &ua);
	ud_full(&b, 6, &ub);
	node_gid(&a, gid);
	ud_recv(&b, &ub, 9, DATA_OFF + 4096, 8192);
	ud_recv(&a, &ua, 20, DATA_OFF + 4096, 256);
	ud_send(&a, &ua, 1, VRDMA_UD_MTU + 1, gid, ub.qpn, QKEY);
	expect_cqe(&a, 1, VRDMA_WS_LOC_LEN_ERR);
	expect_cqe(&a, 20, VRDMA_WS_WR_FLUSH_ERR);
	ck_assert_int_eq(ud_state(5, &ua), VBE_QPS_ERR);
	ud_send(&a, &ua, 2, 64, gid, ub.qpn, QKEY);
	expect_cqe(&a, 2, VRDMA_WS_WR_FLUSH_ERR);
	expect_no_cqe(&b);
	/* Another UD QP of a: its own bad SGE. */
	ck_assert_int_eq(ud_create(&a, &ua2), VRDMA_CS_OK);
	ck_assert_int_eq(ud_rts(&a, ua2.qp, QKEY), VRDMA_CS_OK);
	r = mkreq(VRDMA_OP_SEND, ua2.qp);
	r.flags = VRDMA_WR_F_SIGNALED;
	r.id = 3;
	memcpy(r.u.wr.ud.dgid, gid, 16);
	r.u.wr.ud.remote_qpn = ub.qpn;
	r.u.wr.ud.remote_qkey = QKEY;
	add_sge(&r, DATA_OFF, 64, a.key ^ 0x100);
	post(&a, &r);
	expect_cqe(&a, 3, VRDMA_WS_LOC_PROT_ERR);
	ck_assert_int_eq(ud_state(5, &ua2), VBE_QPS_ERR);
	expect_no_cqe(&b);
	/* b, which did nothing wrong, takes a full MTU from a new QP. */
	ck_assert_int_eq(ud_create(&a, &ua2), VRDMA_CS_OK);
	ck_assert_int_eq(ud_rts(&a, ua2.qp, QKEY), VRDMA_CS_OK);
	ud_send(&a, &ua2, 4, VRDMA_UD_MTU, gid, ub.qpn, QKEY);
	expect_cqe(&a, 4, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(expect_cqe(&b, 9, VRDMA_WS_SUCCESS).byte_len,
			  VRDMA_GRH_LEN + VRDMA_UD_MTU);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

/* RC work on a UD QP, UD on an RC QP: refused, nobody disabled. */
START_TEST(ud_rc_mixups)
{
	uint8_t gid[16];
	struct vrdma_req r;
	struct tg a, b;
	struct ud ua, ub;

	ud_full(&a, 5, &ua);
	ud_full(&b, 6, &ub);
	node_gid(&a, gid);
	/* A UD QP binds to nobody and connects to nobody. */
	r = mkreq(VRDMA_CMD_MODIFY_QP, ua.qp);
	r.u.modify_qp.state = VRDMA_MQ_RTR;
	memcpy(r.u.modify_qp.dest_gid, gid, 16);
	r.u.modify_qp.dest_qpn = ub.qpn;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);
	r = mkreq(VRDMA_CMD_CONNECT, ua.qp);
	strcpy(r.u.connect.service, "svc");
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);
	/* A controlled Q_Key (high bit set) is not a guest's to take: the
	 * QP keeps its own, a datagram for that still lands. */
	ck_assert_int_eq(ud_rts(&b, ub.qp, VRDMA_QKEY_OWN | QKEY), VRDMA_CS_ACCESS);
	ck_assert_uint_eq(bg(6)->qps[ub.qp & 0xffff].qkey, QKEY);
	ud_recv(&b, &ub, 8, DATA_OFF + 4096, 256);
	ud_send(&a, &ua, 4, 8, gid, ub.qpn, QKEY);
	expect_cqe(&a, 4, VRDMA_WS_SUCCESS);
	expect_cqe(&b, 8, VRDMA_WS_SUCCESS);
	/* UD_RTS on an RC QP; a Q_Key with another state; a bad type. */
	ck_assert_int_eq(ud_rts(&a, a.qp, QKEY), VRDMA_CS_INVAL);
	r = mkreq(VRDMA_CMD_MODIFY_QP, ua.qp);
	r.u.modify_qp.state = VRDMA_MQ_UD_RTS;
	r.u.modify_qp.dest_qpn = 5;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);
	r = mkreq(VRDMA_CMD_CREATE_QP, 0);
	r.u.create_qp.pd = a.pd;
	r.u.create_qp.send_cq = a.cq;
	r.u.create_qp.recv_cq = a.cq;
	r.u.create_qp.max_send_wr = 1;
	r.u.create_qp.max_recv_wr = 1;
	r.u.create_qp.max_sge = 1;
	r.u.create_qp.type = 2;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);
	/* An RC QP cannot bind to a UD QP's number: its RTR waits for a peer
	 * that never names it back (a UD QP has no RTR), its SEND waits
	 * meanwhile, never reaching the UD QP's receive, and fails as a
	 * send to nobody once the wait is over. */
	ud_recv(&b, &ub, 9, DATA_OFF + 4096, 256);
	r = mkreq(VRDMA_CMD_MODIFY_QP, a.qp);
	r.u.modify_qp.state = VRDMA_MQ_RTR;
	memcpy(r.u.modify_qp.dest_gid, gid, 16);
	r.u.modify_qp.dest_qpn = ub.qpn;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	ck_assert_int_eq(bg(5)->qps[a.qp & 0xffff].state, VBE_QPS_CONNECTING);
	r = mkwr(&a, VRDMA_OP_SEND, VRDMA_WR_F_SIGNALED, 3);
	add_sge(&r, DATA_OFF, 8, a.key);
	post(&a, &r);
	expect_no_cqe(&a);
	expect_no_cqe(&b);
	vbe_node_tick(node, vplat_now_ms() + 11000);
	expect_cqe(&a, 3, VRDMA_WS_RETRY_EXC_ERR);
	ck_assert_int_eq(bg(5)->qps[a.qp & 0xffff].state, VBE_QPS_ERR);
	expect_no_cqe(&b);
	ck_assert_int_eq(bg(6)->qps[ub.qp & 0xffff].state, VBE_QPS_RTS);
	/* A new Q_Key in RTS: the receive still waiting takes the datagram;
	 * ERR flushes. */
	ck_assert_int_eq(ud_rts(&b, ub.qp, QKEY + 7), VRDMA_CS_OK);
	ud_send(&a, &ua, 2, 8, gid, ub.qpn, QKEY + 7);
	expect_cqe(&a, 2, VRDMA_WS_SUCCESS);
	expect_cqe(&b, 9, VRDMA_WS_SUCCESS);
	ud_recv(&b, &ub, 10, DATA_OFF + 4096, 256);
	r = mkreq(VRDMA_CMD_MODIFY_QP, ub.qp);
	r.u.modify_qp.state = VRDMA_MQ_ERR;
	ck_assert_int_eq(tg_cmd(&b, &r, NULL), VRDMA_CS_OK);
	expect_cqe(&b, 10, VRDMA_WS_WR_FLUSH_ERR);
	/* An RDMA WRITE on a UD QP: LOC_QP_OP_ERR, the QP to ERR. */
	r = mkreq(VRDMA_OP_WRITE, ua.qp);
	r.flags = VRDMA_WR_F_SIGNALED;
	r.id = 1;
	add_sge(&r, DATA_OFF, 8, a.key);
	r.u.wr.remote_addr = IOVA + DATA_OFF;
	r.u.wr.rkey = b.key;
	post(&a, &r);
	expect_cqe(&a, 1, VRDMA_WS_LOC_QP_OP_ERR);
	ck_assert_int_eq(ud_state(5, &ua), VBE_QPS_ERR);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	ck_assert_int_eq(back_state(&b), VRDMA_XB_CONNECTED);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

/* A guest of `tenant`. */
static void mk_tenant(struct tg *g, uint32_t domid, const char *tenant, struct ud *u)
{
	char path[256];

	snprintf(path, sizeof(path), VRDMA_XS_BACK_FMT "/tenant", domid, 0u);
	ck_assert_int_eq(vplat_key_write(dom0, path, tenant), 0);
	ud_full(g, domid, u);
}

static int pol(const char *line)
{
	char buf[256], *argv[8], *save = NULL, *tok, sink[512];
	int argc = 0, rc;

	snprintf(buf, sizeof(buf), "%s", line);
	for (tok = strtok_r(buf, " ", &save); tok && argc < 8; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	rc = vbe_node_policy(node, argc, argv, tg_out(false));
	tg_out_end(sink, sizeof(sink));
	return rc;
}

/*
 * A datagram from s (guest sd) to d's QP (guest dd): delivered into a
 * receive of d, or (want false) dropped by the policy: no receive is
 * posted then, so a drop the policy did not make would count on d too.
 */
static void dgram(struct tg *s, uint32_t sd, const struct ud *us, struct tg *d, uint32_t dd,
		  const struct ud *ud, uint64_t id, bool want)
{
	uint64_t tx_drop = bg(sd)->ctr.ud_tx_drop, rx_drop = bg(dd)->ctr.ud_rx_drop;
	uint8_t gid[16];

	node_gid(s, gid);
	if (want)
		ud_recv(d, ud, 100 + id, DATA_OFF + 4096, 256);
	ud_send(s, us, id, 8, gid, ud->qpn, QKEY);
	expect_cqe(s, id, VRDMA_WS_SUCCESS);
	if (want) {
		expect_cqe(d, 100 + id, VRDMA_WS_SUCCESS);
		ck_assert_uint_eq(bg(sd)->ctr.ud_tx_drop, tx_drop);
	} else {
		expect_no_cqe(d);
		ck_assert_uint_eq(bg(sd)->ctr.ud_tx_drop, tx_drop + 1);
		ck_assert_uint_eq(bg(dd)->ctr.ud_rx_drop, rx_drop);
	}
}

/*
 * The tenant connect policy keeps datagrams out as it keeps connections,
 * and as a binding by QP number, a datagram has no direction: a rule
 * either way admits it, so the answer to a datagram the policy let
 * through goes back.  Two guests of one tenant reach each other.
 */
START_TEST(ud_policy)
{
	uint8_t gid[16];
	struct tg a, a2, m;
	struct ud ua, ua2, um;

	mk_tenant(&a, 5, "alice", &ua);
	mk_tenant(&a2, 6, "alice", &ua2);
	mk_tenant(&m, 7, "mallory", &um);
	ck_assert_int_eq(pol("default tenant"), 0);
	dgram(&m, 7, &um, &a, 5, &ua, 1, false);
	dgram(&a, 5, &ua, &m, 7, &um, 2, false);
	/* Two guests of alice: either way. */
	dgram(&a, 5, &ua, &a2, 6, &ua2, 3, true);
	dgram(&a2, 6, &ua2, &a, 5, &ua, 4, true);
	/* A guest's datagrams to itself are its own business. */
	node_gid(&a, gid);
	ud_recv(&a, &ua, 9, DATA_OFF + 4096, 256);
	ud_send(&a, &ua, 5, 8, gid, ua.qpn, QKEY);
	expect_cqe(&a, 9, VRDMA_WS_SUCCESS);
	expect_cqe(&a, 5, VRDMA_WS_SUCCESS);
	/* alice may reach mallory: mallory's answer comes back. */
	ck_assert_int_eq(pol("allow alice mallory"), 0);
	dgram(&a, 5, &ua, &m, 7, &um, 6, true);
	dgram(&m, 7, &um, &a, 5, &ua, 7, true);
	dgram(&m, 7, &um, &a2, 6, &ua2, 8, true);
	ck_assert_int_eq(pol("remove allow alice mallory"), 0);
	dgram(&m, 7, &um, &a, 5, &ua, 10, false);
	tg_stop(&m);
	tg_stop(&a2);
	tg_stop(&a);
}
END_TEST

TCase *backend_ud_tcase(void)
{
	TCase *t = tcase_create("ud");

	tcase_add_checked_fixture(t, tg_setup, tg_teardown);
	tcase_add_test(t, ud_feature_published);
	tcase_add_test(t, ud_deliver_grh);
	tcase_add_test(t, ud_drops);
	tcase_add_test(t, ud_srq_small);
	tcase_add_test(t, ud_send_errors);
	tcase_add_test(t, ud_rc_mixups);
	tcase_add_test(t, ud_policy);
	return t;
}
