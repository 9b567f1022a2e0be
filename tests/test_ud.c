// SPDX-License-Identifier: MIT
/*
 * UD QPs through libvrdma and a live vrdmad: two guests exchange
 * datagrams (GRH, src_qp, VRDMA_WC_GRH, the bytes), through WRs of more
 * than 4 SGEs (the GRH split across the receive's) and an SRQ; a UD QP
 * moves through the verbs states with its Q_Key, and misuse is refused
 * before anything reaches dom0 (a NULL or destroyed AH, an RDMA opcode,
 * DEST or QKEY on the wrong kind of QP).
 *
 * Every datagram is sent once: the receive it needs is posted, then a
 * command on the receiver's ring (fence()) makes sure dom0 has read it,
 * so a datagram that does not land is a failure, never a retry.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "tlive.h"
/* t_ud_bad_cqe plays a lying dom0 by writing into the CQ (layout only). */
#include "../libvrdma/vlib.h"

#define QKEY	0x1234u
#define BUFSZ	(64u << 10)

struct side {
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	struct vrdma_srq *srq;
	struct vrdma_qp *qp;
	uint8_t *buf;
	struct vrdma_mr *mr;
	uint8_t gid[VRDMA_GID_LEN];
};

static void qp_to(struct side *s, enum vrdma_qp_state st)
{
	struct vrdma_qp_attr m = { .qp_state = st };

	ck_assert_int_eq(vrdma_modify_qp(s->qp, &m, VRDMA_QP_STATE), 0);
}

/* s: a device, a UD QP of nsge SGEs each way (its receives from an SRQ
 * when srq), moved RESET -> INIT -> RTR (-> RTS unless to is RTR) with
 * Q_Key QKEY. */
static void ud_open_to(struct side *s, uint32_t nsge, bool srq, enum vrdma_qp_state to)
{
	struct vrdma_qp_init_attr a = { 0 };
	struct vrdma_qp_attr m = { 0 };

	s->dev = open_dev();
	s->pd = vrdma_alloc_pd(s->dev);
	ck_assert_ptr_nonnull(s->pd);
	s->cq = vrdma_create_cq(s->dev, 64, NULL);
	ck_assert_ptr_nonnull(s->cq);
	a.send_cq = a.recv_cq = s->cq;
	a.cap = (struct vrdma_qp_cap){ 16, 16, nsge, nsge };
	a.qp_type = VRDMA_QPT_UD;
	s->srq = NULL;
	if (srq) {
		struct vrdma_srq_init_attr sa = { .max_wr = 16, .max_sge = nsge };

		s->srq = vrdma_create_srq(s->pd, &sa);
		ck_assert_msg(s->srq != NULL, "create_srq: %s", strerror(errno));
	}
	s->qp = vrdma_create_qp_srq(s->pd, &a, s->srq);
	ck_assert_msg(s->qp != NULL, "create_qp: %s", strerror(errno));
	s->buf = vrdma_alloc_buf(s->dev, BUFSZ);
	ck_assert_ptr_nonnull(s->buf);
	s->mr = vrdma_reg_mr(s->pd, s->buf, BUFSZ, VRDMA_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(s->mr);
	ck_assert_int_eq(vrdma_query_gid(s->dev, s->gid), 0);
	/* RESET -> INIT needs the Q_Key. */
	m.qp_state = VRDMA_QPS_INIT;
	ck_assert_int_eq(vrdma_modify_qp(s->qp, &m, VRDMA_QP_STATE), EINVAL);
	/* A controlled Q_Key (high bit set) is for privileged programs. */
	m.qkey = 0x80000000u | QKEY;
	ck_assert_int_eq(vrdma_modify_qp(s->qp, &m, VRDMA_QP_STATE | VRDMA_QP_QKEY), EPERM);
	m.qkey = QKEY;
	ck_assert_int_eq(vrdma_modify_qp(s->qp, &m, VRDMA_QP_STATE | VRDMA_QP_QKEY), 0);
	m.qp_state = VRDMA_QPS_RTR;
	ck_assert_int_eq(vrdma_modify_qp(s->qp, &m, VRDMA_QP_STATE | VRDMA_QP_DEST), EINVAL);
	qp_to(s, VRDMA_QPS_RTR);
	if (to == VRDMA_QPS_RTR)
		return;
	m.qp_state = VRDMA_QPS_RTS;
	ck_assert_int_eq(vrdma_modify_qp(s->qp, &m, VRDMA_QP_STATE | VRDMA_QP_SQ_PSN), 0);
}

static void ud_open(struct side *s, uint32_t nsge, bool srq)
{
	ud_open_to(s, nsge, srq, VRDMA_QPS_RTS);
}

static void ud_init(struct side *s)
{
	ud_open(s, 2, false);
}

/* A receive of s (its QP's, or its SRQ's) of the nsge pieces sg. */
static void recv_sg(struct side *s, uint64_t id, struct vrdma_sge *sg, int nsge)
{
	struct vrdma_recv_wr w = { .wr_id = id, .sg_list = sg, .num_sge = nsge }, *bad;

	if (s->srq)
		ck_assert_int_eq(vrdma_post_srq_recv(s->srq, &w, &bad), 0);
	else
		ck_assert_int_eq(vrdma_post_recv(s->qp, &w, &bad), 0);
}

static void recv_at(struct side *s, uint64_t id, uint32_t off, uint32_t len)
{
	struct vrdma_sge sg = { (uintptr_t)s->buf + off, len, s->mr->lkey };

	recv_sg(s, id, &sg, 1);
}

/*
 * A command queued on s's ring after the receives posted: once dom0 has
 * answered it, it has read them (commands and WRs share the ring, in
 * order), so a datagram sent now finds them.
 */
static void fence(struct side *s)
{
	struct vrdma_pd *pd = vrdma_alloc_pd(s->dev);

	ck_assert_ptr_nonnull(pd);
	ck_assert_int_eq(vrdma_dealloc_pd(pd), 0);
}

static int send_sg(struct side *s, struct vrdma_ah *ah, uint32_t qpn, uint64_t id,
		   struct vrdma_sge *sg, int nsge, enum vrdma_wr_opcode op)
{
	struct vrdma_send_wr w = { .wr_id = id, .sg_list = sg, .num_sge = nsge,
				   .opcode = op, .send_flags = VRDMA_SEND_SIGNALED }, *bad;

	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = qpn;
	w.wr.ud.remote_qkey = QKEY;
	w.imm_data = 0x0a0b0c0d;
	return vrdma_post_send(s->qp, &w, &bad);
}

static int send_to(struct side *s, struct vrdma_ah *ah, uint32_t qpn, uint64_t id,
		   uint32_t len, enum vrdma_wr_opcode op)
{
	struct vrdma_sge sg = { (uintptr_t)s->buf, len, s->mr->lkey };

	return send_sg(s, ah, qpn, id, &sg, 1, op);
}

static void done(struct side *s, uint64_t id, struct vrdma_wc *wc)
{
	ck_assert_msg(wait_one_ms(s->cq, wc, 5000) == 1, "no completion for wr %llu",
		      (unsigned long long)id);
	ck_assert_msg(wc->status == VRDMA_WC_SUCCESS, "wr %llu: %s",
		      (unsigned long long)wc->wr_id, vrdma_wc_status_str(wc->status));
	ck_assert_uint_eq(wc->wr_id, id);
}

/* r's receives are read by dom0, then s sends once: the datagram lands
 * in receive rid (wc: its completion) or the test fails. */
static void datagram(struct side *s, struct vrdma_ah *ah, struct side *r, uint64_t sid,
		     uint64_t rid, uint32_t len, enum vrdma_wr_opcode op, struct vrdma_wc *wc)
{
	fence(r);
	ck_assert_int_eq(send_to(s, ah, r->qp->qp_num, sid, len, op), 0);
	done(s, sid, wc);
	done(r, rid, wc);
}

/* A receive of r too small for a's datagram: the receive completes
 * VRDMA_WC_LOC_LEN_ERR, r's QP stays in RTS and its next receive takes
 * the next datagram. */
static void too_small(struct side *a, struct vrdma_ah *ah, struct side *r, uint64_t rid)
{
	struct vrdma_qp_attr qa;
	struct vrdma_wc wc;

	recv_at(r, rid, 4096, VRDMA_GRH_LEN + 63);
	recv_at(r, rid + 1, 8192, 1024);
	fence(r);
	ck_assert_int_eq(send_to(a, ah, r->qp->qp_num, 50, 64, VRDMA_WR_SEND), 0);
	done(a, 50, &wc);
	ck_assert_int_eq(wait_one_ms(r->cq, &wc, 5000), 1);
	ck_assert_uint_eq(wc.wr_id, rid);
	ck_assert_int_eq(wc.status, VRDMA_WC_LOC_LEN_ERR);
	ck_assert_uint_eq(wc.qp_num, r->qp->qp_num);
	ck_assert_int_eq(vrdma_query_qp(r->qp, &qa), 0);
	ck_assert_int_eq(qa.qp_state, VRDMA_QPS_RTS);
	datagram(a, ah, r, 51, rid + 1, 64, VRDMA_WR_SEND, &wc);
	ck_assert_uint_eq(wc.byte_len, VRDMA_GRH_LEN + 64);
}

START_TEST(t_ud_exchange)
{
	struct vrdma_qp_attr qa;
	struct side a, b;
	struct vrdma_ah *ah_b, *ah_a;
	struct vrdma_wc wc;
	unsigned i, round;

	NEED_DAEMON();
	ud_init(&a);
	ud_init(&b);
	ck_assert_mem_eq(a.gid, b.gid, VRDMA_GID_LEN);	/* one node */
	ck_assert_int_eq(vrdma_query_qp(a.qp, &qa), 0);
	ck_assert_int_eq(qa.qp_state, VRDMA_QPS_RTS);
	ck_assert_uint_eq(qa.qkey, QKEY);
	/* Not in RTS either; the Q_Key stays. */
	qa.qkey = 0xffffffffu;
	ck_assert_int_eq(vrdma_modify_qp(a.qp, &qa, VRDMA_QP_STATE | VRDMA_QP_QKEY), EPERM);
	ck_assert_int_eq(vrdma_query_qp(a.qp, &qa), 0);
	ck_assert_uint_eq(qa.qkey, QKEY);
	ah_b = vrdma_create_ah(a.pd, b.gid);
	ah_a = vrdma_create_ah(b.pd, a.gid);
	ck_assert_ptr_nonnull(ah_b);
	ck_assert_ptr_nonnull(ah_a);
	for (round = 0; round < 8; round++) {
		uint32_t len = 1 + round * 500;

		for (i = 0; i < len; i++)
			a.buf[i] = (uint8_t)(i * 7 + round);
		recv_at(&b, 100 + round, 8192, VRDMA_GRH_LEN + 4096);
		datagram(&a, ah_b, &b, round, 100 + round, len,
			 round & 1 ? VRDMA_WR_SEND_WITH_IMM : VRDMA_WR_SEND, &wc);
		ck_assert_int_eq(wc.opcode, VRDMA_WC_RECV_OP);
		ck_assert_uint_eq(wc.byte_len, VRDMA_GRH_LEN + len);
		ck_assert_uint_eq(wc.src_qp, a.qp->qp_num);
		ck_assert(wc.wc_flags & VRDMA_WC_GRH);
		ck_assert_uint_eq(!!(wc.wc_flags & VRDMA_WC_WITH_IMM), round & 1);
		ck_assert_mem_eq(b.buf + 8192 + 8, a.gid, VRDMA_GID_LEN);	/* SGID */
		ck_assert_mem_eq(b.buf + 8192 + VRDMA_GRH_LEN, a.buf, len);
	}
	/* A receive too small: it fails alone. */
	too_small(&a, ah_b, &b, 20);
	/* And back: b answers a. */
	memcpy(b.buf, "pong", 4);
	recv_at(&a, 7, 4096, 128);
	datagram(&b, ah_a, &a, 8, 7, 4, VRDMA_WR_SEND, &wc);
	ck_assert_mem_eq(a.buf + 4096 + VRDMA_GRH_LEN, "pong", 4);
	/* Past the MTU: LOC_LEN_ERR, and the QP goes to ERR (IB: SQE, which
	 * vrdma does not have); the next send is flushed. */
	ck_assert_int_eq(send_to(&a, ah_b, b.qp->qp_num, 9, VRDMA_UD_MTU + 1,
				 VRDMA_WR_SEND), 0);
	ck_assert_int_eq(wait_one_ms(a.cq, &wc, 5000), 1);
	ck_assert_int_eq(wc.status, VRDMA_WC_LOC_LEN_ERR);
	ck_assert_int_eq(vrdma_query_qp(a.qp, &qa), 0);
	ck_assert_int_eq(qa.qp_state, VRDMA_QPS_ERR);
	ck_assert_int_eq(send_to(&a, ah_b, b.qp->qp_num, 11, 16, VRDMA_WR_SEND), 0);
	ck_assert_int_eq(wait_one_ms(a.cq, &wc, 5000), 1);
	ck_assert_uint_eq(wc.wr_id, 11);
	ck_assert_int_eq(wc.status, VRDMA_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(wait_one_ms(b.cq, &wc, 0), 0);
	ck_assert_int_eq(vrdma_dealloc_pd(a.pd), EBUSY);	/* the AH, the QP */
	ck_assert_int_eq(vrdma_destroy_ah(ah_b), 0);
	ck_assert_int_eq(vrdma_destroy_ah(ah_a), 0);
	ck_assert_int_eq(vrdma_close(a.dev), 0);
	ck_assert_int_eq(vrdma_close(b.dev), 0);
}
END_TEST

/* The bytes a receive of pieces rs got, as one stream, into out. */
static void gather(const struct vrdma_sge *rs, int n, uint8_t *out)
{
	int i;

	for (i = 0; i < n; i++) {
		memcpy(out, (const void *)(uintptr_t)rs[i].addr, rs[i].length);
		out += rs[i].length;
	}
}

/* Six SGEs each way: the payload gathered from six pieces of a's, the
 * GRH and payload scattered over six of b's (the GRH's 40 bytes end in
 * the third). */
START_TEST(t_ud_many_sge)
{
	static const uint32_t slen[6] = { 100, 1, 50, 7, 200, 42 };
	static const uint32_t rlen[6] = { 10, 20, 15, 300, 7, 2000 };
	uint8_t want[400], got[2352];
	struct vrdma_sge ss[6], rs[6];
	struct vrdma_ah *ah;
	struct vrdma_wc wc;
	struct side a, b;
	uint32_t off, n = 0;
	int i;

	NEED_DAEMON();
	ud_open(&a, 6, false);
	ud_open(&b, 6, false);
	ah = vrdma_create_ah(a.pd, b.gid);
	ck_assert_ptr_nonnull(ah);
	for (i = 0, off = 0; i < 6; i++, off += 1024) {
		uint32_t j;

		ss[i] = (struct vrdma_sge){ (uintptr_t)a.buf + off, slen[i], a.mr->lkey };
		for (j = 0; j < slen[i]; j++, n++)
			want[n] = a.buf[off + j] = (uint8_t)(n * 13 + 5);
		rs[i] = (struct vrdma_sge){ (uintptr_t)b.buf + 8192 + 4096 * i, rlen[i],
					    b.mr->lkey };
	}
	ck_assert_uint_eq(n, sizeof(want));
	recv_sg(&b, 1, rs, 6);
	fence(&b);
	ck_assert_int_eq(send_sg(&a, ah, b.qp->qp_num, 2, ss, 6, VRDMA_WR_SEND), 0);
	done(&a, 2, &wc);
	done(&b, 1, &wc);
	ck_assert_uint_eq(wc.byte_len, VRDMA_GRH_LEN + sizeof(want));
	ck_assert(wc.wc_flags & VRDMA_WC_GRH);
	ck_assert_uint_eq(wc.src_qp, a.qp->qp_num);
	gather(rs, 6, got);
	ck_assert_uint_eq(got[0] >> 4, 6);				/* IP version 6 */
	ck_assert_uint_eq((unsigned)got[4] << 8 | got[5], sizeof(want));	/* payload length */
	ck_assert_mem_eq(got + 8, a.gid, VRDMA_GID_LEN);		/* SGID */
	ck_assert_mem_eq(got + 24, b.gid, VRDMA_GID_LEN);		/* DGID */
	ck_assert_mem_eq(got + VRDMA_GRH_LEN, want, sizeof(want));
	ck_assert_int_eq(vrdma_destroy_ah(ah), 0);
	ck_assert_int_eq(vrdma_close(a.dev), 0);
	ck_assert_int_eq(vrdma_close(b.dev), 0);
}
END_TEST

/* b's UD QP takes its receives from an SRQ: each datagram lands in the
 * next one, named by b's QP; one too small fails alone. */
START_TEST(t_ud_srq)
{
	struct vrdma_ah *ah;
	struct vrdma_wc wc;
	struct side a, b;
	unsigned i;

	NEED_DAEMON();
	ud_init(&a);
	ud_open(&b, 2, true);
	ah = vrdma_create_ah(a.pd, b.gid);
	ck_assert_ptr_nonnull(ah);
	for (i = 0; i < 3; i++)
		recv_at(&b, 10 + i, 8192 + 1024 * i, 1024);
	for (i = 0; i < 3; i++) {
		memset(a.buf, 'a' + (int)i, 64);
		datagram(&a, ah, &b, i, 10 + i, 64, VRDMA_WR_SEND, &wc);
		ck_assert_uint_eq(wc.qp_num, b.qp->qp_num);
		ck_assert_uint_eq(wc.src_qp, a.qp->qp_num);
		ck_assert_uint_eq(wc.byte_len, VRDMA_GRH_LEN + 64);
		ck_assert_mem_eq(b.buf + 8192 + 1024 * i + VRDMA_GRH_LEN, a.buf, 64);
	}
	too_small(&a, ah, &b, 20);
	ck_assert_int_eq(vrdma_destroy_ah(ah), 0);
	ck_assert_int_eq(vrdma_close(a.dev), 0);
	ck_assert_int_eq(vrdma_close(b.dev), 0);
}
END_TEST

/* As in verbs, a UD QP receives from RTR on and sends from RTS only. */
START_TEST(t_ud_rtr_receives)
{
	struct vrdma_ah *ah_b, *ah_a;
	struct vrdma_wc wc;
	struct side a, b;

	NEED_DAEMON();
	ud_init(&a);
	ud_open_to(&b, 2, false, VRDMA_QPS_RTR);
	ah_b = vrdma_create_ah(a.pd, b.gid);
	ah_a = vrdma_create_ah(b.pd, a.gid);
	ck_assert_ptr_nonnull(ah_b);
	ck_assert_ptr_nonnull(ah_a);
	recv_at(&b, 1, 8192, 256);
	memcpy(a.buf, "ping", 4);
	datagram(&a, ah_b, &b, 2, 1, 4, VRDMA_WR_SEND, &wc);
	ck_assert_uint_eq(wc.byte_len, VRDMA_GRH_LEN + 4);
	ck_assert_mem_eq(b.buf + 8192 + VRDMA_GRH_LEN, "ping", 4);
	/* No send before RTS; then the answer goes. */
	ck_assert_int_eq(send_to(&b, ah_a, a.qp->qp_num, 3, 4, VRDMA_WR_SEND), EINVAL);
	recv_at(&a, 4, 8192, 256);
	qp_to(&b, VRDMA_QPS_RTS);
	memcpy(b.buf, "pong", 4);
	datagram(&b, ah_a, &a, 5, 4, 4, VRDMA_WR_SEND, &wc);
	ck_assert_mem_eq(a.buf + 8192 + VRDMA_GRH_LEN, "pong", 4);
	/* b still takes datagrams (RTR -> RTS told dom0 nothing new). */
	recv_at(&b, 6, 8192, 256);
	datagram(&a, ah_b, &b, 7, 6, 4, VRDMA_WR_SEND, &wc);
	ck_assert_int_eq(vrdma_destroy_ah(ah_b), 0);
	ck_assert_int_eq(vrdma_destroy_ah(ah_a), 0);
	ck_assert_int_eq(vrdma_close(a.dev), 0);
	ck_assert_int_eq(vrdma_close(b.dev), 0);
}
END_TEST

/* Ways a lying dom0 may dress up a UD receive's CQE. */
enum lie { LIE_GRH_ON_ERROR, LIE_SHORT, LIE_SRC_QPN, LIE_NO_GRH, LIE_N };

/*
 * dom0 vouches for a UD receive's CQE: a program takes byte_len - 40 for
 * its payload and src_qp for a QP number.  A GRH on an error CQE, a
 * byte_len short of the GRH, a src_qpn past 24 bits, or a successful UD
 * receive without its GRH is a broken device (-1 / EIO), never a
 * completion.
 */
START_TEST(t_ud_bad_cqe)
{
	struct vrdma_ah *ah;
	struct vrdma_wc wc;
	struct side a, b;
	int lie;

	NEED_DAEMON();
	for (lie = 0; lie < LIE_N; lie++) {
		struct vlib_cq *c;
		struct vrdma_cqe *e;
		int64_t end;

		ud_init(&a);
		ud_init(&b);
		ah = vrdma_create_ah(a.pd, b.gid);
		ck_assert_ptr_nonnull(ah);
		recv_at(&b, 1, 8192, 256);
		fence(&b);
		ck_assert_int_eq(send_to(&a, ah, b.qp->qp_num, 2, 8, VRDMA_WR_SEND), 0);
		done(&a, 2, &wc);
		/* The receive's CQE, unpolled. */
		c = vlib_cq(b.cq);
		for (end = now_ms() + 5000; now_ms() < end &&
		     __atomic_load_n(&c->hdr->ring.prod, __ATOMIC_ACQUIRE) == c->cons;)
			usleep(1000);
		ck_assert_uint_eq(__atomic_load_n(&c->hdr->ring.prod, __ATOMIC_ACQUIRE) -
				  c->cons, 1);
		e = &c->ring[c->cons & (c->size - 1)];
		ck_assert_uint_eq(e->flags, VRDMA_CQE_F_GRH);
		switch (lie) {
		case LIE_GRH_ON_ERROR:	e->status = VRDMA_WS_LOC_LEN_ERR; break;
		case LIE_SHORT:		e->byte_len = VRDMA_GRH_LEN - 1; break;
		case LIE_SRC_QPN:	e->src_qpn = 1u << 24; break;
		case LIE_NO_GRH:	e->flags = 0; break;
		}
		errno = 0;
		ck_assert_msg(vrdma_poll_cq(b.cq, 1, &wc) == -1 && errno == EIO,
			      "lie %d taken", lie);
		ck_assert_int_eq(vrdma_close(a.dev), 0);
		ck_assert_int_eq(vrdma_close(b.dev), 0);
	}
}
END_TEST

START_TEST(t_ud_misuse)
{
	struct vrdma_qp_init_attr ia = { 0 };
	struct vrdma_qp_attr m = { 0 };
	struct vrdma_qp *rc;
	struct vrdma_ah *ah;
	struct vrdma_wc wc;
	struct side a;

	NEED_DAEMON();
	ud_init(&a);
	/* vrdmad without a device for datagrams: 4096 to any node. */
	{
		struct vrdma_device_attr da;

		ck_assert_int_eq(vrdma_query_device(a.dev, &da), 0);
		ck_assert_uint_eq(da.max_ud_msg, VRDMA_UD_MTU);
		ck_assert_uint_eq(da.reserved32, 0);
	}
	ck_assert_ptr_null(vrdma_create_ah(NULL, a.gid));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(vrdma_create_ah(a.pd, NULL));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(vrdma_destroy_ah(NULL), EINVAL);
	/* NULL AH, destroyed AH, an RDMA opcode. */
	ck_assert_int_eq(send_to(&a, NULL, a.qp->qp_num, 1, 8, VRDMA_WR_SEND), EINVAL);
	ah = vrdma_create_ah(a.pd, a.gid);
	ck_assert_ptr_nonnull(ah);
	ck_assert_int_eq(send_to(&a, ah, a.qp->qp_num, 2, 8, VRDMA_WR_RDMA_WRITE), EINVAL);
	ck_assert_int_eq(vrdma_destroy_ah(ah), 0);
	ck_assert_int_eq(vrdma_destroy_ah(ah), EINVAL);
	ck_assert_int_eq(send_to(&a, ah, a.qp->qp_num, 3, 8, VRDMA_WR_SEND), EINVAL);
	ck_assert_int_eq(vrdma_poll_cq(a.cq, 1, &wc), 0);
	/* A new AH reuses it; to itself, no receive posted: success, dropped. */
	ck_assert_ptr_eq(vrdma_create_ah(a.pd, a.gid), ah);
	ck_assert_int_eq(send_to(&a, ah, a.qp->qp_num, 4, 8, VRDMA_WR_SEND), 0);
	done(&a, 4, &wc);
	/* QKEY on an RC QP, a bad qp_type. */
	ia.send_cq = ia.recv_cq = a.cq;
	ia.cap = (struct vrdma_qp_cap){ 4, 4, 1, 1 };
	ia.qp_type = 7;
	ck_assert_ptr_null(vrdma_create_qp(a.pd, &ia));
	ck_assert_int_eq(errno, EINVAL);
	ia.qp_type = VRDMA_QPT_RC;
	rc = vrdma_create_qp(a.pd, &ia);
	ck_assert_ptr_nonnull(rc);
	m.qp_state = VRDMA_QPS_INIT;
	m.qkey = 1;
	ck_assert_int_eq(vrdma_modify_qp(rc, &m, VRDMA_QP_STATE | VRDMA_QP_QKEY), EINVAL);
	/* A UD QP does not connect. */
	ck_assert_int_eq(vrdma_connect(a.qp, "", "nobody", NULL, 0, NULL, NULL, 1000), EINVAL);
	ck_assert_int_eq(vrdma_close(a.dev), 0);
}
END_TEST

static Suite *ud_suite(void)
{
	Suite *s = suite_create("ud");
	TCase *live = tlive_tcase();

	tcase_add_test(live, t_ud_exchange);
	tcase_add_test(live, t_ud_many_sge);
	tcase_add_test(live, t_ud_srq);
	tcase_add_test(live, t_ud_rtr_receives);
	tcase_add_test(live, t_ud_bad_cqe);
	tcase_add_test(live, t_ud_misuse);
	suite_add_tcase(s, live);
	return s;
}

int main(void)
{
	return tlive_main("test_ud", ud_suite());
}
