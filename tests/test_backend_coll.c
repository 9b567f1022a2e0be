// SPDX-License-Identifier: MIT
/*
 * Teams dom0 runs (backend/coll/): joins and their EVT_TEAM, OP_COLLs
 * run once every member posted, results written into every member's own
 * MR in the documented order, and what a guest must not get away with:
 * members that disagree, a range that is not the member's, a member that
 * leaves or dies mid-team, entries that break the wire contract.
 */
#include <check.h>
#include <string.h>

#include "backend_tg.h"
#include "../backend/vbe.h"
#include "../common/coll/vcoll_reduce.h"

#define LIST_OFF	(DATA_OFF)		/* the node list */
#define SEND_OFF	(DATA_OFF + 4096)	/* 16 KiB send range */
#define RECV_OFF	(DATA_OFF + 20480)	/* 24 KiB receive range */
#define NMAX		3

static const uint8_t KEY[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static struct vbe_guest *bg(uint32_t domid)
{
	return vbe_node_guest(node, domid, 0);
}

/* Write n names into g's list area; returns its length. */
static uint32_t put_list(struct tg *g, unsigned n, const char *name)
{
	uint32_t len = 0;

	for (unsigned i = 0; i < n; i++) {
		strcpy((char *)g->mem + LIST_OFF + len, name);
		len += (uint32_t)strlen(name) + 1;
	}
	return len;
}

static int join(struct tg *g, const uint8_t *key, uint32_t size, uint32_t rank, uint32_t flags,
		const char *name, uint32_t *team)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_TEAM_JOIN, 0);
	uint32_t out[4] = { 0 };
	int st;

	memcpy(r.u.team_join.key, key, 16);
	r.u.team_join.size = size;
	r.u.team_join.rank = rank;
	r.u.team_join.pd = g->pd;
	r.u.team_join.cq = g->cq;
	r.u.team_join.list_lkey = g->key;
	r.u.team_join.list_addr = IOVA + LIST_OFF;
	r.u.team_join.list_len = put_list(g, size, name);
	r.u.team_join.flags = flags;
	st = tg_cmd(g, &r, out);
	*team = out[0];
	return st;
}

/* The one EVT_TEAM g got, its status. */
static int team_evt(struct tg *g)
{
	int st = -1;

	tg_events(g);
	for (unsigned i = 0; i < g->nasync; i++)
		if (g->async[i].type == VRDMA_EVT_TEAM) {
			ck_assert_int_eq(st, -1);
			st = g->async[i].status;
		}
	g->nasync = 0;
	return st;
}

static void post_coll(struct tg *g, uint32_t team, uint64_t seq, uint8_t kind, uint8_t type,
		      uint8_t op, uint32_t root, uint64_t count, uint32_t slen, uint32_t rlen)
{
	struct vrdma_req r = mkreq(VRDMA_OP_COLL, team);

	r.id = 100 + seq;
	r.u.coll.kind = kind;
	r.u.coll.type = type;
	r.u.coll.op = op;
	r.u.coll.root = root;
	r.u.coll.count = count;
	r.u.coll.seq = seq;
	r.u.coll.sge[0] = (struct vrdma_wire_sge){ slen ? IOVA + SEND_OFF : 0, slen, slen ? g->key : 0 };
	r.u.coll.sge[1] = (struct vrdma_wire_sge){ rlen ? IOVA + RECV_OFF : 0, rlen, rlen ? g->key : 0 };
	tg_push(g, &r);
}

/* n guests dom.. joined as ranks 0.. of one team; each team handle. */
static void team_at(struct tg *g, unsigned n, uint32_t dom, uint32_t *team)
{
	uint8_t key[16];

	memcpy(key, KEY, 16);
	key[0] = (uint8_t)dom;			/* a team of its own */
	for (unsigned i = 0; i < n; i++)
		tg_full(&g[i], dom + i);
	for (unsigned i = 0; i < n; i++) {
		ck_assert_int_eq(join(&g[i], key, n, i, 0, "n1", &team[i]), VRDMA_CS_OK);
		ck_assert_int_eq(team_evt(&g[i]), i + 1 < n ? -1 : VRDMA_CS_OK);
	}
	for (unsigned i = 0; i + 1 < n; i++)
		ck_assert_int_eq(team_evt(&g[i]), VRDMA_CS_OK);
}

static void team_of(struct tg *g, unsigned n, uint32_t *team)
{
	team_at(g, n, 5, team);
}

/* g's VM goes away: the backend releases everything of it. */
static void gone(struct tg *g)
{
	vplat_key_rm(g->p, g->fdir);
	stub_run();
}

static void stop_all(struct tg *g, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		tg_stop(&g[i]);
}

/* Sum of doubles over 3 members, 2048 elements: bits of the fold in
 * rank order, in every member, in place in one of them. */
START_TEST(coll_allreduce)
{
	struct tg g[NMAX];
	uint32_t team[NMAX];
	double want[2048];
	const void *src[NMAX];

	team_of(g, NMAX, team);
	for (unsigned i = 0; i < NMAX; i++) {
		double *v = (double *)(g[i].mem + SEND_OFF);

		for (unsigned k = 0; k < 2048; k++)
			v[k] = (k * 0.37 + 1) * (i == 1 ? 1e16 : 1.0) * (k & 1 ? -1 : 1);
		src[i] = v;
	}
	ck_assert_int_eq(vcoll_fold(VCOLL_DOUBLE, VCOLL_SUM, want, src, NMAX, 2048), 0);
	for (unsigned i = 0; i < NMAX; i++)
		post_coll(&g[i], team[i], 1, 1, VCOLL_DOUBLE, VCOLL_SUM, 0, 2048, 16384, 16384);
	vbe_node_poll(node);
	for (unsigned i = 0; i < NMAX; i++) {
		struct vrdma_cqe c = expect_cqe(&g[i], 101, VRDMA_WS_SUCCESS);

		ck_assert_uint_eq(c.opcode, VRDMA_WC_COLL);
		ck_assert_uint_eq(c.flags, VRDMA_CQE_F_TEAM);
		ck_assert_uint_eq(c.qp, team[i]);
		ck_assert_uint_eq(c.byte_len, 16384);
		ck_assert_mem_eq(g[i].mem + RECV_OFF, want, sizeof(want));
	}
	stop_all(g, NMAX);
}
END_TEST

/* bcast from rank 2, allgather, barrier, reduce at rank 1. */
START_TEST(coll_kinds)
{
	struct tg g[NMAX];
	uint32_t team[NMAX];

	team_of(g, NMAX, team);
	for (unsigned i = 0; i < NMAX; i++)
		memset(g[i].mem + SEND_OFF, 'a' + i, 8192);
	/* bcast: the root sends, the others receive */
	for (unsigned i = 0; i < NMAX; i++)
		post_coll(&g[i], team[i], 1, 3, 0, 0, 2, 5000, i == 2 ? 5000 : 0, i == 2 ? 0 : 5000);
	vbe_node_poll(node);
	for (unsigned i = 0; i < NMAX; i++) {
		expect_cqe(&g[i], 101, VRDMA_WS_SUCCESS);
		if (i != 2)
			ck_assert_uint_eq(g[i].mem[RECV_OFF + 4999], 'c');
	}
	/* allgather of 3000 bytes each */
	for (unsigned i = 0; i < NMAX; i++)
		post_coll(&g[i], team[i], 2, 5, 0, 0, 0, 3000, 3000, 9000);
	vbe_node_poll(node);
	for (unsigned i = 0; i < NMAX; i++) {
		expect_cqe(&g[i], 102, VRDMA_WS_SUCCESS);
		for (unsigned q = 0; q < NMAX; q++)
			ck_assert_uint_eq(g[i].mem[RECV_OFF + q * 3000 + 2999], 'a' + q);
	}
	for (unsigned i = 0; i < NMAX; i++)
		post_coll(&g[i], team[i], 3, 4, 0, 0, 0, 0, 0, 0);
	vbe_node_poll(node);
	for (unsigned i = 0; i < NMAX; i++)
		expect_cqe(&g[i], 103, VRDMA_WS_SUCCESS);
	/* reduce: only the root writes; its CQE says the bytes */
	for (unsigned i = 0; i < NMAX; i++) {
		memset(g[i].mem + RECV_OFF, 0, 4096);
		post_coll(&g[i], team[i], 4, 2, VCOLL_UINT32, VCOLL_BOR, 1, 1024, 4096,
			  i == 1 ? 4096 : 0);
	}
	vbe_node_poll(node);
	for (unsigned i = 0; i < NMAX; i++) {
		struct vrdma_cqe c = expect_cqe(&g[i], 104, VRDMA_WS_SUCCESS);

		ck_assert_uint_eq(c.byte_len, i == 1 ? 4096 : 0);
		ck_assert_uint_eq(g[i].mem[RECV_OFF + 7], i == 1 ? ('a' | 'b' | 'c') : 0);
	}
	ck_assert_uint_eq(node->coll->ops, 4);
	{
		char text[1024];

		ck_assert_int_eq(vbe_node_teams(node, tg_out(false)), 0);
		tg_out_end(text, sizeof(text));
		ck_assert_msg(strstr(text, "node n1: offload on, 1 teams, 3 joins, 4 ops") &&
			      strstr(text, " offload members 3 joined 3 nodes 1 ops 4") &&
			      strstr(text, " 0:dom5/0 (0 pending) 1:dom6/0 (0 pending)"), "%s", text);
		ck_assert_int_eq(vbe_node_teams(node, tg_out(true)), 0);
		tg_out_end(text, sizeof(text));
		ck_assert_msg(strstr(text, "\"state\":\"offload\"") &&
			      strstr(text, "\"rank\":2"), "%s", text);
	}
	stop_all(g, NMAX);
}
END_TEST

/* Members that disagree on count: every member's op fails, and so does
 * every later one; dom0 ran nothing. */
START_TEST(coll_disagree)
{
	struct tg g[NMAX];
	uint32_t team[NMAX];

	team_of(g, NMAX, team);
	memset(g[0].mem + RECV_OFF, 0x77, 64);
	for (unsigned i = 0; i < NMAX; i++)
		post_coll(&g[i], team[i], 1, 1, VCOLL_INT32, VCOLL_SUM, 0, i == 2 ? 8 : 16,
			  i == 2 ? 32 : 64, i == 2 ? 32 : 64);
	vbe_node_poll(node);
	for (unsigned i = 0; i < NMAX; i++)
		expect_cqe(&g[i], 101, VRDMA_WS_REM_INV_REQ_ERR);
	ck_assert_uint_eq(g[0].mem[RECV_OFF], 0x77);
	post_coll(&g[0], team[0], 2, 4, 0, 0, 0, 0, 0, 0);
	vbe_node_poll(node);
	expect_cqe(&g[0], 102, VRDMA_WS_WR_FLUSH_ERR);
	for (unsigned i = 0; i < NMAX; i++)
		ck_assert_int_eq(back_state(&g[i]), VRDMA_XB_CONNECTED);
	stop_all(g, NMAX);
}
END_TEST

/* A member names a range past its MR, or another guest's key: it fails
 * LOC_PROT_ERR, the others RETRY_EXC_ERR; no byte moved. */
START_TEST(coll_foreign_range)
{
	struct tg g[NMAX];
	uint32_t team[NMAX];
	struct vrdma_req r;

	team_of(g, NMAX, team);
	memset(g[0].mem + RECV_OFF, 0x55, 64);
	for (unsigned i = 0; i < 2; i++)
		post_coll(&g[i], team[i], 1, 1, VCOLL_INT32, VCOLL_SUM, 0, 16, 64, 64);
	r = mkreq(VRDMA_OP_COLL, team[2]);
	r.id = 101;
	r.u.coll = (struct vrdma_coll_wr){ .kind = 1, .type = VCOLL_INT32, .op = VCOLL_SUM,
					   .count = 16, .seq = 1 };
	r.u.coll.sge[0] = (struct vrdma_wire_sge){ IOVA + SEND_OFF, 64, g[0].key };
	r.u.coll.sge[1] = (struct vrdma_wire_sge){ IOVA + RECV_OFF, 64, g[2].key };
	tg_push(&g[2], &r);
	vbe_node_poll(node);
	expect_cqe(&g[2], 101, VRDMA_WS_LOC_PROT_ERR);
	expect_cqe(&g[0], 101, VRDMA_WS_RETRY_EXC_ERR);
	expect_cqe(&g[1], 101, VRDMA_WS_RETRY_EXC_ERR);
	ck_assert_uint_eq(g[0].mem[RECV_OFF], 0x55);
	stop_all(g, NMAX);
}
END_TEST

/* A member that leaves with an op pending: the others' pending op fails
 * RETRY_EXC_ERR; a member that dies: the same, and dom0 keeps nothing. */
START_TEST(coll_leave_die)
{
	struct tg g[NMAX];
	uint32_t team[NMAX];
	struct vrdma_req r;

	team_of(g, NMAX, team);
	post_coll(&g[0], team[0], 1, 4, 0, 0, 0, 0, 0, 0);
	vbe_node_poll(node);
	expect_no_cqe(&g[0]);
	r = mkreq(VRDMA_CMD_TEAM_LEAVE, team[2]);
	ck_assert_int_eq(tg_cmd(&g[2], &r, NULL), VRDMA_CS_OK);
	expect_cqe(&g[0], 101, VRDMA_WS_RETRY_EXC_ERR);
	post_coll(&g[1], team[1], 1, 4, 0, 0, 0, 0, 0, 0);
	vbe_node_poll(node);
	expect_cqe(&g[1], 101, VRDMA_WS_WR_FLUSH_ERR);
	ck_assert_int_eq(tg_cmd(&g[2], &r, NULL), VRDMA_CS_NOENT);	/* gone */
	r = mkreq(VRDMA_CMD_TEAM_LEAVE, team[0]);
	ck_assert_int_eq(tg_cmd(&g[0], &r, NULL), VRDMA_CS_OK);
	r = mkreq(VRDMA_CMD_TEAM_LEAVE, team[1]);
	ck_assert_int_eq(tg_cmd(&g[1], &r, NULL), VRDMA_CS_OK);
	ck_assert_ptr_null(node->coll->teams);		/* the last left: freed */
	stop_all(g, NMAX);

	/* dies: its VM goes away while the other waits */
	team_at(g, 2, 10, team);
	post_coll(&g[0], team[0], 1, 4, 0, 0, 0, 0, 0, 0);
	vbe_node_poll(node);
	gone(&g[1]);
	vbe_node_poll(node);
	expect_cqe(&g[0], 101, VRDMA_WS_RETRY_EXC_ERR);
	gone(&g[0]);
	ck_assert_uint_eq(node->coll->nteams, 0);
	stop_all(g, 2);
}
END_TEST

/* Joins dom0 does not run: a name of another node (NOENT at once), a
 * member asking to run it themselves (every member hears NOENT), two
 * members with different lists (INVAL), a rank taken twice (EXIST). */
START_TEST(coll_join_refusals)
{
	static const uint8_t k2[16] = { 2 }, k3[16] = { 3 }, k4[16] = { 4 };
	struct tg g[NMAX];
	uint32_t t[NMAX];

	for (unsigned i = 0; i < NMAX; i++)
		tg_full(&g[i], 5 + i);
	ck_assert_int_eq(join(&g[0], KEY, 2, 0, 0, "other", &t[0]), VRDMA_CS_NOENT);

	ck_assert_int_eq(join(&g[0], k2, 2, 0, 0, "n1", &t[0]), VRDMA_CS_OK);
	ck_assert_int_eq(join(&g[1], k2, 2, 1, VRDMA_TEAM_F_SELF, "n1", &t[1]), VRDMA_CS_OK);
	ck_assert_int_eq(team_evt(&g[0]), VRDMA_CS_NOENT);
	ck_assert_int_eq(team_evt(&g[1]), VRDMA_CS_NOENT);

	ck_assert_int_eq(join(&g[0], k3, 3, 0, 0, "n1", &t[0]), VRDMA_CS_OK);
	ck_assert_int_eq(join(&g[1], k3, 2, 1, 0, "n1", &t[1]), VRDMA_CS_INVAL);
	ck_assert_int_eq(team_evt(&g[0]), VRDMA_CS_INVAL);

	ck_assert_int_eq(join(&g[0], k4, 2, 0, 0, "n1", &t[0]), VRDMA_CS_OK);
	ck_assert_int_eq(join(&g[1], k4, 2, 0, 0, "n1", &t[1]), VRDMA_CS_EXIST);
	ck_assert_int_eq(team_evt(&g[0]), -1);
	/* a malformed list: no NULs */
	memset(g[2].mem + LIST_OFF, 'x', 64);
	{
		struct vrdma_req r = mkreq(VRDMA_CMD_TEAM_JOIN, 0);

		memcpy(r.u.team_join.key, k4, 16);
		r.u.team_join = (struct vrdma_cmd_team_join){ .size = 2, .rank = 1, .pd = g[2].pd,
			.cq = g[2].cq, .list_lkey = g[2].key, .list_addr = IOVA + LIST_OFF,
			.list_len = 64 };
		ck_assert_int_eq(tg_cmd(&g[2], &r, NULL), VRDMA_CS_INVAL);
	}
	for (unsigned i = 0; i < NMAX; i++)
		ck_assert_int_eq(back_state(&g[i]), VRDMA_XB_CONNECTED);
	for (unsigned i = 0; i < NMAX; i++)
		gone(&g[i]);
	ck_assert_uint_eq(node->coll->nteams, 0);
	stop_all(g, NMAX);
}
END_TEST

/* Entries that break the contract disable their guest alone. */
START_TEST(coll_violations)
{
	struct tg g[2];
	uint32_t team[2];
	struct vrdma_req r;

	team_at(g, 2, 5, team);
	post_coll(&g[0], team[0], 2, 4, 0, 0, 0, 0, 0, 0);	/* seq 2 first */
	vbe_node_poll(node);
	ck_assert(bg(5)->dead);
	ck_assert(!bg(6)->dead);
	stop_all(g, 2);

	team_at(g, 2, 7, team);
	r = mkreq(VRDMA_OP_COLL, team[0] ^ 0x10000);		/* stale handle */
	tg_push(&g[0], &r);
	vbe_node_poll(node);
	ck_assert(bg(7)->dead);
	stop_all(g, 2);

	team_at(g, 2, 9, team);
	r = mkreq(VRDMA_OP_COLL, team[0]);			/* reserved set */
	r.u.coll = (struct vrdma_coll_wr){ .kind = 4, .seq = 1 };
	r.u.coll.reserved[55] = 1;
	tg_push(&g[0], &r);
	vbe_node_poll(node);
	ck_assert(bg(9)->dead);
	stop_all(g, 2);

	team_at(g, 2, 11, team);
	for (unsigned s = 1; s <= VRDMA_TEAM_DEPTH + 1; s++)	/* one too many */
		post_coll(&g[0], team[0], s, 4, 0, 0, 0, 0, 0, 0);
	vbe_node_poll(node);
	ck_assert(bg(11)->dead);
	vbe_node_poll(node);
	expect_no_cqe(&g[1]);
	ck_assert(!bg(12)->dead);
	stop_all(g, 2);
}
END_TEST

/* A member 64 operations ahead (the whole depth), the other catching up
 * one and then many at a time: every operation completes in seq order in
 * both, across the queue's wrap; a leave then fails exactly the ops the
 * other has pending. */
START_TEST(coll_depth)
{
	struct tg g[2];
	uint32_t t[2];
	struct vrdma_req r;
	struct vrdma_cqe c;
	uint64_t next[2] = { 101, 101 };

	team_at(g, 2, 5, t);
	for (unsigned s = 1; s <= VRDMA_TEAM_DEPTH; s++)
		post_coll(&g[0], t[0], s, 4, 0, 0, 0, 0, 0, 0);
	vbe_node_poll(node);
	expect_no_cqe(&g[0]);
	post_coll(&g[1], t[1], 1, 4, 0, 0, 0, 0, 0, 0);
	vbe_node_poll(node);
	for (unsigned i = 0; i < 2; i++)
		next[i] = expect_cqe(&g[i], 101, VRDMA_WS_SUCCESS).wr_id + 1;
	for (unsigned s = 2; s <= VRDMA_TEAM_DEPTH; s++)
		post_coll(&g[1], t[1], s, 4, 0, 0, 0, 0, 0, 0);
	for (unsigned k = 0; k < 4 * VRDMA_TEAM_DEPTH && next[1] <= 100 + VRDMA_TEAM_DEPTH; k++) {
		vbe_node_poll(node);
		for (unsigned i = 0; i < 2; i++)
			while (tg_poll_cq(&g[i], &c)) {
				ck_assert_uint_eq(c.wr_id, next[i]++);
				ck_assert_uint_eq(c.status, VRDMA_WS_SUCCESS);
			}
	}
	ck_assert_uint_eq(next[0], 101 + VRDMA_TEAM_DEPTH);
	ck_assert_uint_eq(next[1], 101 + VRDMA_TEAM_DEPTH);
	/* past the wrap: 65..70 in g[0], 65 in g[1], then g[1] leaves */
	for (unsigned s = VRDMA_TEAM_DEPTH + 1; s <= VRDMA_TEAM_DEPTH + 6; s++)
		post_coll(&g[0], t[0], s, 4, 0, 0, 0, 0, 0, 0);
	post_coll(&g[1], t[1], VRDMA_TEAM_DEPTH + 1, 4, 0, 0, 0, 0, 0, 0);
	vbe_node_poll(node);
	expect_cqe(&g[0], 101 + VRDMA_TEAM_DEPTH, VRDMA_WS_SUCCESS);
	expect_cqe(&g[1], 101 + VRDMA_TEAM_DEPTH, VRDMA_WS_SUCCESS);
	r = mkreq(VRDMA_CMD_TEAM_LEAVE, t[1]);
	ck_assert_int_eq(tg_cmd(&g[1], &r, NULL), VRDMA_CS_OK);
	for (unsigned s = VRDMA_TEAM_DEPTH + 2; s <= VRDMA_TEAM_DEPTH + 6; s++)
		expect_cqe(&g[0], 100 + s, VRDMA_WS_RETRY_EXC_ERR);
	expect_no_cqe(&g[0]);
	expect_no_cqe(&g[1]);
	stop_all(g, 2);
}
END_TEST

/* g's event ring as if it held 63 events g has not read: no room for an
 * async event (a command's answer keeps the last slot). */
static void evt_ring_full(struct tg *g)
{
	vring_consumed(&g->sr->evt, g->evt_cons - ((1u << VRDMA_EVT_RING_ORDER_DEF) - 1));
}

/* An EVT_TEAM that finds its member's event ring full waits on that
 * member's handle and goes at a later poll once there is room; one whose
 * member leaves first is forgotten. */
START_TEST(coll_evt_later)
{
	static const uint8_t ka[16] = { 0xa }, kb[16] = { 0xb };
	struct tg g[2];
	uint32_t t[2];
	struct vrdma_req r;

	for (unsigned i = 0; i < 2; i++)
		tg_full(&g[i], 5 + i);
	ck_assert_int_eq(join(&g[0], ka, 2, 0, 0, "n1", &t[0]), VRDMA_CS_OK);
	evt_ring_full(&g[0]);
	ck_assert_int_eq(join(&g[1], ka, 2, 1, 0, "n1", &t[1]), VRDMA_CS_OK);
	ck_assert_int_eq(team_evt(&g[1]), VRDMA_CS_OK);
	vbe_node_poll(node);
	ck_assert_uint_eq(vring_load_acq(&g[0].sr->evt.prod), g[0].evt_cons);	/* none yet */
	ck_assert_uint_eq(node->coll->npend, 1);
	vring_consumed(&g[0].sr->evt, g[0].evt_cons);	/* read: room again */
	vbe_node_poll(node);
	ck_assert_int_eq(team_evt(&g[0]), VRDMA_CS_OK);
	ck_assert_uint_eq(node->coll->npend, 0);

	ck_assert_int_eq(join(&g[0], kb, 2, 0, 0, "n1", &t[0]), VRDMA_CS_OK);
	evt_ring_full(&g[0]);
	ck_assert_int_eq(join(&g[1], kb, 2, 1, 0, "n1", &t[1]), VRDMA_CS_OK);
	ck_assert_uint_eq(node->coll->npend, 1);
	r = mkreq(VRDMA_CMD_TEAM_LEAVE, t[0]);
	vring_consumed(&g[0].sr->evt, g[0].evt_cons);
	ck_assert_int_eq(tg_cmd(&g[0], &r, NULL), VRDMA_CS_OK);
	ck_assert_uint_eq(node->coll->npend, 0);
	vbe_node_poll(node);
	ck_assert_int_eq(team_evt(&g[0]), -1);
	stop_all(g, 2);
}
END_TEST

/* A member's team holds its PD and CQ: DEALLOC_PD and DESTROY_CQ are
 * BUSY until it leaves (dom0 pushes the team's CQEs there, reads its
 * MRs through that PD); one guest may hold several ranks, each its own
 * handle, and leaving one keeps the other's hold. */
START_TEST(coll_holds_pd_cq)
{
	static const uint8_t k9[16] = { 9 };
	struct tg g;
	uint32_t t[2];
	struct vrdma_req r;

	tg_full(&g, 5);
	ck_assert_int_eq(join(&g, k9, 3, 0, 0, "n1", &t[0]), VRDMA_CS_OK);
	ck_assert_int_eq(join(&g, k9, 3, 2, 0, "n1", &t[1]), VRDMA_CS_OK);
	ck_assert_uint_ne(t[0], t[1]);
	r = mkreq(VRDMA_CMD_DESTROY_QP, g.qp);		/* the QP and MR hold them too */
	ck_assert_int_eq(tg_cmd(&g, &r, NULL), VRDMA_CS_OK);
	r = mkreq(VRDMA_CMD_DEREG_MR, g.mr);
	ck_assert_int_eq(tg_cmd(&g, &r, NULL), VRDMA_CS_OK);
	for (unsigned i = 0; i < 2; i++) {
		r = mkreq(VRDMA_CMD_DESTROY_CQ, g.cq);
		ck_assert_int_eq(tg_cmd(&g, &r, NULL), VRDMA_CS_BUSY);
		r = mkreq(VRDMA_CMD_DEALLOC_PD, g.pd);
		ck_assert_int_eq(tg_cmd(&g, &r, NULL), VRDMA_CS_BUSY);
		r = mkreq(VRDMA_CMD_TEAM_LEAVE, t[i]);
		ck_assert_int_eq(tg_cmd(&g, &r, NULL), VRDMA_CS_OK);
	}
	ck_assert_uint_eq(node->coll->nteams, 0);
	r = mkreq(VRDMA_CMD_DESTROY_CQ, g.cq);
	ck_assert_int_eq(tg_cmd(&g, &r, NULL), VRDMA_CS_OK);
	r = mkreq(VRDMA_CMD_DEALLOC_PD, g.pd);
	ck_assert_int_eq(tg_cmd(&g, &r, NULL), VRDMA_CS_OK);
	ck_assert_int_eq(back_state(&g), VRDMA_XB_CONNECTED);
	tg_stop(&g);
}
END_TEST

TCase *backend_coll_tcase(void)
{
	TCase *t = tcase_create("coll");

	tcase_add_checked_fixture(t, tg_setup, tg_teardown);
	tcase_add_test(t, coll_allreduce);
	tcase_add_test(t, coll_kinds);
	tcase_add_test(t, coll_disagree);
	tcase_add_test(t, coll_foreign_range);
	tcase_add_test(t, coll_leave_die);
	tcase_add_test(t, coll_join_refusals);
	tcase_add_test(t, coll_violations);
	tcase_add_test(t, coll_holds_pd_cq);
	tcase_add_test(t, coll_evt_later);
	tcase_add_test(t, coll_depth);
	return t;
}
