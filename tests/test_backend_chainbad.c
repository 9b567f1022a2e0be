// SPDX-License-Identifier: MIT
/*
 * Teams across nodes, what fails (chain_peer.c plays the other nodes):
 * a link that breaks or an agreement that runs out of time, another
 * node that breaks the rules (a message of another operation, a reserved
 * byte, a START that overrides what this node needs), members that
 * disagree or leave, joins a node cannot take.  Every member ends with a
 * status, never a hang, and the links go.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "chain_peer.h"

/* A link that breaks while the nodes agree, or their time that runs
 * out, or a VERDICT that says SELF: the members hear NOENT, links go. */
START_TEST(chain_form_fails)
{
	static const char *const L[] = { "n1", "n2" };
	static const uint32_t g2 = 0x5;
	struct tg g;
	struct tmsg m;
	uint32_t t, t2;

	links_on();
	tg_full(&g, 5);
	ck_assert_int_eq(join(&g, L, 2, 0, &t), VRDMA_CS_OK);
	poll_n(1);
	free(take(VBE_CL_NEXT, VBE_CM_JOINED).pl);
	lk[VBE_CL_NEXT]->down = true;
	vbe_chain_link_state(lk[VBE_CL_NEXT]);
	ck_assert(vbe_coll_busy(node));
	poll_n(1);
	ck_assert_int_eq(team_evt(&g), VRDMA_CS_NOENT);
	ck_assert_uint_eq(closed, 1);
	ck_assert(!vbe_coll_busy(node));

	/* no answer in time */
	ck_assert_int_eq(join(&g, L, 2, 0, &t2), VRDMA_CS_EXIST);	/* same key: left first */
	{
		struct vrdma_req r = mkreq(VRDMA_CMD_TEAM_LEAVE, t);

		ck_assert_int_eq(tg_cmd(&g, &r, NULL), VRDMA_CS_OK);
	}
	ck_assert_uint_eq(node->coll->nteams, 0);
	ck_assert_int_eq(join(&g, L, 2, 0, &t), VRDMA_CS_OK);
	poll_n(1);
	free(take(VBE_CL_NEXT, VBE_CM_JOINED).pl);
	vbe_node_tick(node, vplat_now_ms() + VBE_COLL_FORM_MS - 1000);
	ck_assert_int_eq(team_evt(&g), -1);
	vbe_node_tick(node, vplat_now_ms() + VBE_COLL_FORM_MS + 1000);
	ck_assert_int_eq(team_evt(&g), VRDMA_CS_NOENT);
	ck_assert_uint_eq(closed, 2);
	{
		struct vrdma_req r = mkreq(VRDMA_CMD_TEAM_LEAVE, t);

		ck_assert_int_eq(tg_cmd(&g, &r, NULL), VRDMA_CS_OK);
	}

	/* the other node wants its members to run it */
	ck_assert_int_eq(join(&g, L, 2, 0, &t), VRDMA_CS_OK);
	poll_n(1);
	m = take(VBE_CL_NEXT, VBE_CM_JOINED);
	free(m.pl);
	put_ctl(VBE_CL_NEXT, VBE_CM_VERDICT, VBE_CMF_SELF, 1, 0, &g2, 1);
	poll_n(1);
	m = take(VBE_CL_NEXT, VBE_CM_START);
	ck_assert_uint_eq(m.h.flags, VBE_CMF_SELF);
	free(m.pl);
	ck_assert_int_eq(team_evt(&g), VRDMA_CS_NOENT);
	ck_assert_uint_eq(closed, 3);
	gone(&g);
	ck_assert_uint_eq(node->coll->nteams, 0);
}
END_TEST

/* Running, as the last node: a link gone mid-operation fails it
 * (RETRY_EXC_ERR), later ones flush; a peer whose FWD says another count
 * fails it REM_INV_REQ_ERR and hears ABORT; one that writes nonsense
 * fails it too.  Every time the links are closed. */
START_TEST(chain_run_fails)
{
	struct tmsg m;
	struct tg g;
	uint32_t t;
	uint8_t junk[64] = { 0 };
	struct vrdma_req r;

	links_on();
	form_last(&g, &t, 4096);
	post_op(&g, t, 1, VRDMA_COLL_ALLREDUCE, VRDMA_COLL_INT32, VRDMA_COLL_SUM, 0, 16, 64, 0, 64);
	poll_n(1);
	lk[VBE_CL_PREV]->down = true;
	vbe_chain_link_state(lk[VBE_CL_PREV]);
	poll_n(1);
	expect_cqe(&g, 101, VRDMA_WS_RETRY_EXC_ERR);
	post_op(&g, t, 2, VRDMA_COLL_ALLREDUCE, VRDMA_COLL_INT32, VRDMA_COLL_SUM, 0, 16, 64, 0, 64);
	poll_n(1);
	expect_cqe(&g, 102, VRDMA_WS_WR_FLUSH_ERR);
	ck_assert_uint_eq(closed, 1);
	r = mkreq(VRDMA_CMD_TEAM_LEAVE, t);
	ck_assert_int_eq(tg_cmd(&g, &r, NULL), VRDMA_CS_OK);
	gone(&g);

	/* another count */
	links_on();
	form_last(&g, &t, 4096);
	post_op(&g, t, 1, VRDMA_COLL_ALLREDUCE, VRDMA_COLL_INT32, VRDMA_COLL_SUM, 0, 16, 64, 0, 64);
	put_chunk(VBE_CL_PREV, VBE_CM_FWD, 0, 1, VRDMA_COLL_ALLREDUCE, VRDMA_COLL_INT32,
		  VRDMA_COLL_SUM, 0, 15, 0, 60, junk);
	poll_n(1);
	expect_cqe(&g, 101, VRDMA_WS_REM_INV_REQ_ERR);
	m = take(VBE_CL_PREV, VBE_CM_ABORT);
	ck_assert_uint_eq(m.h.status, VRDMA_WS_REM_INV_REQ_ERR);
	free(m.pl);
	ck_assert_uint_eq(closed, 1);
	r = mkreq(VRDMA_CMD_TEAM_LEAVE, t);
	ck_assert_int_eq(tg_cmd(&g, &r, NULL), VRDMA_CS_OK);
	gone(&g);

	/* nonsense: a reserved byte, then a chunk past the vector */
	for (unsigned k = 0; k < 2; k++) {
		struct vbe_cmsg h = { .type = VBE_CM_FWD, .seq = 1, .kind = VRDMA_COLL_ALLREDUCE,
				      .ctype = VRDMA_COLL_INT32, .op = VRDMA_COLL_SUM, .count = 16,
				      .len = 64 };

		if (k)
			h.len = 128;
		else
			h.reserved[3] = 1;
		links_on();
		form_last(&g, &t, 4096);
		post_op(&g, t, 1, VRDMA_COLL_ALLREDUCE, VRDMA_COLL_INT32, VRDMA_COLL_SUM, 0, 16, 64,
			0, 64);
		put(VBE_CL_PREV, &h, junk, 64);
		poll_n(1);
		expect_cqe(&g, 101, VRDMA_WS_RETRY_EXC_ERR);
		ck_assert_uint_eq(closed, 1);
		gone(&g);
	}
}
END_TEST

/* The other nodes' ABORT fails the operation with their status; a member
 * that leaves while the nodes agree tells its mate NOENT. */
START_TEST(chain_abort_and_leave)
{
	static const char *const L[] = { "n1", "n1", "n2" };
	struct vbe_cmsg h = { .type = VBE_CM_ABORT, .status = VRDMA_WS_REM_INV_REQ_ERR };
	struct vrdma_req r;
	struct tg g[2];
	uint32_t t[2];

	links_on();
	form_last(&g[0], &t[0], 4096);
	post_op(&g[0], t[0], 1, VRDMA_COLL_BARRIER, 0, 0, 0, 0, 0, 0, 0);
	put(VBE_CL_PREV, &h, NULL, 0);
	poll_n(1);
	expect_cqe(&g[0], 101, VRDMA_WS_REM_INV_REQ_ERR);
	ck_assert_uint_eq(closed, 1);
	gone(&g[0]);

	links_on();
	tg_full(&g[0], 5);
	tg_full(&g[1], 6);
	ck_assert_int_eq(join(&g[0], L, 3, 0, &t[0]), VRDMA_CS_OK);
	ck_assert_int_eq(join(&g[1], L, 3, 1, &t[1]), VRDMA_CS_OK);
	poll_n(1);
	free(take(VBE_CL_NEXT, VBE_CM_JOINED).pl);
	r = mkreq(VRDMA_CMD_TEAM_LEAVE, t[1]);
	ck_assert_int_eq(tg_cmd(&g[1], &r, NULL), VRDMA_CS_OK);
	ck_assert_int_eq(team_evt(&g[0]), VRDMA_CS_NOENT);
	ck_assert_uint_eq(closed, 1);
	gone(&g[0]);
	gone(&g[1]);
	ck_assert_uint_eq(node->coll->nteams, 0);
}
END_TEST

/* Joins a node cannot take across nodes: no transport (NOENT, as
 * before), a rank the list puts on another node (INVAL), a node running
 * as many teams across nodes as it may (NOENT). */
START_TEST(chain_join_refused)
{
	static const char *const L[] = { "n1", "n2" };
	struct tg g;
	uint32_t t;

	tg_full(&g, 5);
	ck_assert_int_eq(join(&g, L, 2, 0, &t), VRDMA_CS_NOENT);
	links_on();
	ck_assert_int_eq(join(&g, L, 2, 1, &t), VRDMA_CS_INVAL);
	node->coll->nspans = VBE_COLL_NODE_SPANS;
	ck_assert_int_eq(join(&g, L, 2, 0, &t), VRDMA_CS_NOENT);
	node->coll->nspans = 0;
	ck_assert_int_eq(join(&g, L, 2, 0, &t), VRDMA_CS_OK);
	ck_assert_uint_eq(node->coll->nspans, 1);
	gone(&g);
	ck_assert_uint_eq(node->coll->nspans, 0);
}
END_TEST

/* What node 0's START may not say: OK when this node passed SELF on (a
 * node before it wants its members to run the team), a chunk longer
 * than this node's members allow (16 ranks here: 64 KiB).  The members
 * hear NOENT and the links go. */
START_TEST(chain_start_refused)
{
	static const char *const L[17] = { "n2", "n1", "n1", "n1", "n1", "n1", "n1", "n1", "n1",
					   "n1", "n1", "n1", "n1", "n1", "n1", "n1", "n1" };
	static const uint32_t g0 = 0x77;
	struct tmsg m;
	struct tg g;
	uint32_t t, teams[16];
	unsigned noent = 0;

	links_on();
	tg_full(&g, 5);
	ck_assert_int_eq(join(&g, L, 2, 1, &t), VRDMA_CS_OK);
	poll_n(1);
	put_ctl(VBE_CL_PREV, VBE_CM_JOINED, VBE_CMF_SELF, 1, 0, &g0, 1);
	poll_n(1);
	m = take(VBE_CL_PREV, VBE_CM_VERDICT);
	ck_assert_uint_eq(m.h.flags, VBE_CMF_SELF);
	free(m.pl);
	put_ctl(VBE_CL_PREV, VBE_CM_START, 0, 0, 4096, NULL, 0);
	poll_n(1);
	ck_assert_int_eq(team_evt(&g), VRDMA_CS_NOENT);
	ck_assert_uint_eq(closed, 1);
	gone(&g);

	links_on();
	tg_full(&g, 5);
	for (uint32_t r = 1; r < 17; r++)
		ck_assert_int_eq(join(&g, L, 17, r, &teams[r - 1]), VRDMA_CS_OK);
	poll_n(1);
	put_ctl(VBE_CL_PREV, VBE_CM_JOINED, 0, 1, 0, &g0, 1);
	poll_n(1);
	free(take(VBE_CL_PREV, VBE_CM_VERDICT).pl);
	put_ctl(VBE_CL_PREV, VBE_CM_START, 0, 0, VBE_CL_CHUNK, NULL, 0);
	poll_n(1);
	tg_events(&g);
	for (unsigned i = 0; i < g.nasync; i++)
		noent += g.async[i].type == VRDMA_EVT_TEAM && g.async[i].status == VRDMA_CS_NOENT;
	g.nasync = 0;
	ck_assert_uint_eq(noent, 16);
	ck_assert_uint_eq(closed, 1);
	gone(&g);
}
END_TEST

/* A middle node told EMPTY for a bcast whose root is before it: the
 * node that must have had the root's bytes did not send them, and the
 * members must not get stale bits as a success. */
START_TEST(chain_empty_refused)
{
	static const char *const L[] = { "n0", "n1", "n2" };
	static const uint32_t ga = 0x11;
	uint32_t groups[3] = { 0x11, 0, 0x22 };
	struct tg g;
	uint32_t t;

	links_on();
	tg_full(&g, 5);
	ck_assert_int_eq(join(&g, L, 3, 1, &t), VRDMA_CS_OK);
	poll_n(1);
	put_ctl(VBE_CL_PREV, VBE_CM_JOINED, 0, 1, 0, &ga, 1);
	poll_n(1);
	free(take(VBE_CL_NEXT, VBE_CM_JOINED).pl);
	groups[1] = vbe_policy_ghash(node, vbe_node_guest(node, 5, 0)->tenant);
	put_ctl(VBE_CL_NEXT, VBE_CM_VERDICT, 0, 1, 0, groups, 3);
	poll_n(1);
	free(take(VBE_CL_PREV, VBE_CM_VERDICT).pl);
	put_ctl(VBE_CL_PREV, VBE_CM_START, 0, 0, 4096, NULL, 0);
	poll_n(1);
	free(take(VBE_CL_NEXT, VBE_CM_START).pl);
	ck_assert_int_eq(team_evt(&g), VRDMA_CS_OK);
	post_op(&g, t, 1, VRDMA_COLL_BCAST, 0, 0, 0, 100, 0, 0, 100);
	put_chunk(VBE_CL_PREV, VBE_CM_FWD, VBE_CMF_EMPTY, 1, VRDMA_COLL_BCAST, 0, 0, 0, 100, 0,
		  100, NULL);
	poll_n(1);
	expect_cqe(&g, 101, VRDMA_WS_RETRY_EXC_ERR);
	ck_assert_uint_eq(closed, 2);
	gone(&g);
}
END_TEST

/* A join of another size while the nodes agree fails the team for its
 * members here (INVAL) and closes its links: nothing later (a START, a
 * poll) runs a team whose members left. */
START_TEST(chain_mismatch_forming)
{
	static const char *const L[] = { "n1", "n1", "n2" };
	struct tg g[2];
	uint32_t t[2];
	struct vrdma_req r;

	links_on();
	tg_full(&g[0], 5);
	tg_full(&g[1], 6);
	ck_assert_int_eq(join(&g[0], L, 3, 0, &t[0]), VRDMA_CS_OK);
	ck_assert_int_eq(join(&g[1], L, 3, 1, &t[1]), VRDMA_CS_OK);
	poll_n(1);
	free(take(VBE_CL_NEXT, VBE_CM_JOINED).pl);
	ck_assert_int_eq(join(&g[1], L, 2, 1, &t[1]), VRDMA_CS_INVAL);
	ck_assert_int_eq(team_evt(&g[0]), VRDMA_CS_INVAL);
	ck_assert_uint_eq(closed, 1);
	r = mkreq(VRDMA_CMD_TEAM_LEAVE, t[0]);
	ck_assert_int_eq(tg_cmd(&g[0], &r, NULL), VRDMA_CS_OK);
	poll_n(3);
	gone(&g[0]);
	gone(&g[1]);
	ck_assert_uint_eq(node->coll->nteams, 0);
}
END_TEST

/* A guest in 8 teams across nodes (each takes links and one of the
 * node's 32 places) is absent from a ninth: NOENT, and its mates hear
 * NOENT once every rank here joined; more ranks of a team it is in
 * already do not count. */
START_TEST(chain_guest_share)
{
	static const char *const L[] = { "n1", "n1", "n2" };
	struct tg g[2];
	uint32_t t;

	links_on();
	tg_full(&g[0], 5);
	tg_full(&g[1], 6);
	for (join_key = 1; join_key <= VBE_COLL_GUEST_SPANS; join_key++)
		ck_assert_int_eq(join(&g[0], L, 3, 0, &t), VRDMA_CS_OK);
	join_key = VBE_COLL_GUEST_SPANS;
	ck_assert_int_eq(join(&g[0], L, 3, 1, &t), VRDMA_CS_OK);	/* team 8 again */
	join_key++;
	ck_assert_int_eq(join(&g[1], L, 3, 1, &t), VRDMA_CS_OK);	/* team 9's rank 1 */
	ck_assert_int_eq(join(&g[0], L, 3, 0, &t), VRDMA_CS_NOENT);	/* absent */
	ck_assert_uint_eq(vbe_node_guest(node, 5, 0)->coll->nspans, VBE_COLL_GUEST_SPANS);
	/* the nodes agree that the members run team 9 */
	poll_n(1);
	ck_assert_uint_eq(nq[VBE_CL_NEXT], 2);		/* teams 8 and 9 started */
	ck_assert_uint_eq(q[VBE_CL_NEXT][1].h.type, VBE_CM_JOINED);
	ck_assert_uint_eq(q[VBE_CL_NEXT][1].h.flags, VBE_CMF_SELF);
	ck_assert_int_eq(team_evt(&g[1]), -1);		/* until node 0's START */
	gone(&g[0]);
	gone(&g[1]);
	ck_assert_uint_eq(node->coll->nspans, 0);
}
END_TEST

TCase *backend_chainbad_tcase(void)
{
	TCase *t = tcase_create("chainbad");

	tcase_add_checked_fixture(t, tg_setup, chain_teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, chain_form_fails);
	tcase_add_test(t, chain_run_fails);
	tcase_add_test(t, chain_abort_and_leave);
	tcase_add_test(t, chain_join_refused);
	tcase_add_test(t, chain_start_refused);
	tcase_add_test(t, chain_empty_refused);
	tcase_add_test(t, chain_mismatch_forming);
	tcase_add_test(t, chain_guest_share);
	return t;
}
