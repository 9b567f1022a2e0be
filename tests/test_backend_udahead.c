// SPDX-License-Identifier: MIT
/*
 * A datagram that finds no receive dom0 has read first reads the
 * receives at the head of the destination's ring (guest/ring.c
 * vbe_ring_recvs): a receive counts once the guest published it, as an
 * HCA's counts once ibv_post_recv returned.  Only RECV and SRQ_RECV at
 * the head, never past another entry (a send, a command waiting for a
 * token), never inside the same guest's own pull (later entries are
 * later posts), at most poll_reqs between two of the guest's turns, and
 * a guest disabled by what is read goes alone.  Each case polls the
 * sender's ring alone, as when its turn comes first.
 */
#include <check.h>
#include <string.h>

#include "backend_tg.h"
#include "../backend/vbe.h"

#define QKEY	0x33333333u

static struct vbe_guest *bg(uint32_t domid)
{
	return vbe_node_guest(node, domid, 0);
}

/* Two guests a (5) and b (6) with a UD QP each; gid the node's. */
static void two(struct tg *a, struct tg *b, uint32_t *qa, uint32_t *na, uint32_t *qb,
		uint32_t *nb, uint8_t gid[16])
{
	tg_full(a, 5);
	tg_full(b, 6);
	*qa = tg_ud_qp(a, 0, QKEY, na);
	*qb = tg_ud_qp(b, 0, QKEY, nb);
	node_gid(a, gid);
}

/* b's receive published, not read: a's datagram takes it.  One behind
 * b's own send is not read; that datagram drops, and b's send and
 * receive then run in ring order at b's turn. */
START_TEST(udahead_unread)
{
	uint32_t qa, na, qb, nb, cons;
	uint8_t gid[16];
	struct tg a, b;

	two(&a, &b, &qa, &na, &qb, &nb, gid);
	tg_push_recv(&b, qb, 9, DATA_OFF + 4096, 2048);
	cons = bg(6)->req_cons;
	tg_push_ud(&a, qa, 1, 64, gid, nb, QKEY);
	ck_assert_int_eq(vbe_ring_poll(bg(5)), 1);
	ck_assert_uint_eq(bg(6)->req_cons, cons + 1);
	ck_assert_uint_eq(bg(6)->ctr.ud_rx, 1);
	ck_assert_uint_eq(bg(6)->ctr.ud_rx_drop, 0);
	vbe_node_poll(node);
	expect_cqe(&a, 1, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(expect_cqe(&b, 9, VRDMA_WS_SUCCESS).byte_len, VRDMA_GRH_LEN + 64);
	expect_no_cqe(&b);

	tg_push_ud(&b, qb, 20, 8, gid, na, QKEY);	/* a has no receive */
	tg_push_recv(&b, qb, 21, DATA_OFF + 4096, 2048);
	cons = bg(6)->req_cons;
	tg_push_ud(&a, qa, 2, 64, gid, nb, QKEY);
	ck_assert_int_eq(vbe_ring_poll(bg(5)), 1);
	ck_assert_uint_eq(bg(6)->req_cons, cons);
	ck_assert_uint_eq(bg(6)->ctr.ud_rx_drop, 1);
	vbe_node_poll(node);
	expect_cqe(&a, 2, VRDMA_WS_SUCCESS);
	expect_cqe(&b, 20, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(bg(5)->ctr.ud_rx_drop, 1);
	expect_no_cqe(&b);			/* 21 stays posted */
	ck_assert_uint_eq(bg(6)->req_cons, cons + 2);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	ck_assert_int_eq(back_state(&b), VRDMA_XB_CONNECTED);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

/* a's own ring [send to its own QP, receive 10, receive 11]: the
 * datagram was sent before either receive, so it drops, and the next
 * one lands in 10, not 11. */
START_TEST(udahead_self_order)
{
	uint8_t gid[16];
	uint32_t qa, na;
	struct tg a;

	tg_full(&a, 5);
	qa = tg_ud_qp(&a, 0, QKEY, &na);
	node_gid(&a, gid);
	tg_push_ud(&a, qa, 1, 64, gid, na, QKEY);
	tg_push_recv(&a, qa, 10, DATA_OFF + 4096, 2048);
	tg_push_recv(&a, qa, 11, DATA_OFF + 8192, 2048);
	vbe_node_poll(node);
	expect_cqe(&a, 1, VRDMA_WS_SUCCESS);
	expect_no_cqe(&a);
	ck_assert_uint_eq(bg(5)->ctr.ud_rx_drop, 1);
	tg_push_ud(&a, qa, 2, 64, gid, na, QKEY);
	vbe_node_poll(node);
	expect_cqe(&a, 10, VRDMA_WS_SUCCESS);
	expect_cqe(&a, 2, VRDMA_WS_SUCCESS);
	tg_stop(&a);
}
END_TEST

/* b's UD QP on an SRQ: an SRQ receive published, not read, counts. */
START_TEST(udahead_srq)
{
	uint32_t out[4], srq, qa, na, qb, nb, cons;
	struct vrdma_req r;
	uint8_t gid[16];
	struct tg a, b;

	tg_full(&a, 5);
	tg_full(&b, 6);
	qa = tg_ud_qp(&a, 0, QKEY, &na);
	r = mkreq(VRDMA_CMD_CREATE_SRQ, 0);
	r.u.create_srq.pd = b.pd;
	r.u.create_srq.max_wr = 4;
	r.u.create_srq.max_sge = 2;
	ck_assert_int_eq(tg_cmd(&b, &r, out), VRDMA_CS_OK);
	srq = out[0];
	qb = tg_ud_qp(&b, srq, QKEY, &nb);
	node_gid(&a, gid);
	r = mkwr(&b, VRDMA_OP_SRQ_RECV, 0, 30);
	r.handle = srq;
	add_sge(&r, DATA_OFF + 4096, 1024, b.key);
	tg_push(&b, &r);
	cons = bg(6)->req_cons;
	tg_push_ud(&a, qa, 1, 64, gid, nb, QKEY);
	ck_assert_int_eq(vbe_ring_poll(bg(5)), 1);
	ck_assert_uint_eq(bg(6)->req_cons, cons + 1);
	ck_assert_uint_eq(bg(6)->ctr.ud_rx, 1);
	vbe_node_poll(node);
	expect_cqe(&a, 1, VRDMA_WS_SUCCESS);
	{
		struct vrdma_cqe c = expect_cqe(&b, 30, VRDMA_WS_SUCCESS);

		ck_assert_uint_eq(c.srq, srq);
		ck_assert_uint_eq(c.qp, qb);
	}
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

/* b's unread head is a receive that disables b (more SGEs than its QP
 * takes): read inside a's turn, b goes, a's send completes and a goes on. */
START_TEST(udahead_fatal)
{
	uint32_t qa, na, qb, nb;
	struct vrdma_req r;
	uint8_t gid[16];
	struct tg a, b;

	two(&a, &b, &qa, &na, &qb, &nb, gid);
	r = mkreq(VRDMA_OP_RECV, qb);
	r.id = 9;
	add_sge(&r, DATA_OFF + 4096, 64, b.key);
	add_sge(&r, DATA_OFF + 4096, 64, b.key);
	add_sge(&r, DATA_OFF + 4096, 64, b.key);	/* max_sge is 2 */
	tg_push(&b, &r);
	tg_push_ud(&a, qa, 1, 64, gid, nb, QKEY);
	ck_assert_int_eq(vbe_ring_poll(bg(5)), 1);
	ck_assert(bg(6)->dead);
	ck_assert(!bg(6)->polling);
	ck_assert(!bg(5)->dead);
	vbe_node_poll(node);
	expect_cqe(&a, 1, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(bg(5)->ctr.ud_tx_drop, 1);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	ck_assert_int_ne(back_state(&b), VRDMA_XB_CONNECTED);
	tg_push_recv(&a, qa, 50, DATA_OFF + 4096, 2048);
	tg_push_ud(&a, qa, 2, 64, gid, na, QKEY);
	vbe_node_poll(node);
	expect_cqe(&a, 50, VRDMA_WS_SUCCESS);
	expect_cqe(&a, 2, VRDMA_WS_SUCCESS);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

/* b's head is a command out of tokens: nothing is read past it, and its
 * throttle mark stays (a cleared one would have b armed and spinning). */
START_TEST(udahead_throttled)
{
	uint32_t qa, na, qb, nb, cons;
	struct vrdma_req r;
	uint8_t gid[16];
	struct tg a, b;

	two(&a, &b, &qa, &na, &qb, &nb, gid);
	r = mkreq(VRDMA_CMD_ALLOC_PD, 0);
	tg_push(&b, &r);
	tg_push_recv(&b, qb, 9, DATA_OFF + 4096, 2048);
	bg(6)->sch.cmd_throttled = true;
	cons = bg(6)->req_cons;
	tg_push_ud(&a, qa, 1, 64, gid, nb, QKEY);
	ck_assert_int_eq(vbe_ring_poll(bg(5)), 1);
	ck_assert_uint_eq(bg(6)->req_cons, cons);
	ck_assert(bg(6)->sch.cmd_throttled);
	ck_assert_uint_eq(bg(6)->ctr.ud_rx_drop, 1);
	bg(6)->sch.cmd_throttled = false;
	vbe_node_poll(node);
	expect_cqe(&a, 1, VRDMA_WS_SUCCESS);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

/* Every datagram finds no receive (b's receives go to a QP in error,
 * flushed as read): b's ring is read ahead at most poll_reqs times
 * between two of b's turns, however many datagrams a sends. */
START_TEST(udahead_cap)
{
	unsigned save = node->poll_reqs, i;
	uint32_t qa, na, qb, nb, qe, ne, cons;
	struct vrdma_req r;
	uint8_t gid[16];
	struct tg a, b;

	two(&a, &b, &qa, &na, &qb, &nb, gid);
	qe = tg_ud_qp(&b, 0, QKEY, &ne);
	r = mkreq(VRDMA_CMD_MODIFY_QP, qe);
	r.u.modify_qp.state = VRDMA_MQ_ERR;
	ck_assert_int_eq(tg_cmd(&b, &r, NULL), VRDMA_CS_OK);
	for (i = 0; i < 12; i++)
		tg_push_recv(&b, qe, 100 + i, DATA_OFF + 4096, 64);
	for (i = 0; i < 8; i++)
		tg_push_ud(&a, qa, 1 + i, 64, gid, nb, QKEY);
	node->poll_reqs = 4;
	cons = bg(6)->req_cons;
	ck_assert_int_eq(vbe_ring_poll(bg(5)), 4);
	ck_assert_uint_eq(bg(6)->req_cons, cons + 4);	/* not 4 per datagram */
	ck_assert_uint_eq(bg(6)->ctr.ud_rx_drop, 4);
	node->poll_reqs = save;
	vbe_node_poll(node);
	vbe_node_poll(node);
	ck_assert_uint_eq(bg(6)->req_cons, cons + 12);
	ck_assert_int_eq(back_state(&b), VRDMA_XB_CONNECTED);
	tg_stop(&a);
	tg_stop(&b);
}
END_TEST

TCase *backend_udahead_tcase(void)
{
	TCase *t = tcase_create("udahead");

	tcase_add_checked_fixture(t, tg_setup, tg_teardown);
	tcase_add_test(t, udahead_unread);
	tcase_add_test(t, udahead_self_order);
	tcase_add_test(t, udahead_srq);
	tcase_add_test(t, udahead_fatal);
	tcase_add_test(t, udahead_throttled);
	tcase_add_test(t, udahead_cap);
	return t;
}
