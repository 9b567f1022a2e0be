// SPDX-License-Identifier: MIT
/*
 * Teams dom0 runs (backend/coll/) against guests that want more than
 * their share or other members' bits: what one guest can make dom0
 * allocate, how much a node poll does for a team however large, a member
 * holding several ranks whose ranges alias the others', a node whose
 * teams are all taken, tenants the connect policy keeps apart.
 */
#include <check.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "backend_tg.h"
#include "../backend/vbe.h"
#include "../common/coll/vcoll_reduce.h"

#define LIST_OFF	(DATA_OFF)		/* the node list, up to 12 KiB */
#define DATA		(DATA_OFF + 4096)	/* ranges from here to the MR's end */
#define MR_END		(BUF_PAGES * VRDMA_PAGE_SIZE)

static uint32_t put_list(struct tg *g, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		memcpy(g->mem + LIST_OFF + 3 * i, "n1", 3);
	return 3 * n;
}

/* TEAM_JOIN of g as rank of a team of size keyed (k0, k1): its CMD_DONE. */
static int join(struct tg *g, uint8_t k0, uint8_t k1, uint32_t size, uint32_t rank,
		uint32_t *team)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_TEAM_JOIN, 0);
	uint32_t out[4] = { 0 };
	int st;

	r.u.team_join.key[0] = 0xba;
	r.u.team_join.key[1] = k0;
	r.u.team_join.key[2] = k1;
	r.u.team_join.size = size;
	r.u.team_join.rank = rank;
	r.u.team_join.pd = g->pd;
	r.u.team_join.cq = g->cq;
	r.u.team_join.list_lkey = g->key;
	r.u.team_join.list_addr = IOVA + LIST_OFF;
	r.u.team_join.list_len = put_list(g, size);
	st = tg_cmd(g, &r, out);
	*team = out[0];
	return st;
}

/* EVT_TEAMs g got since the last call with status st. */
static unsigned evts(struct tg *g, int st)
{
	unsigned n = 0;

	tg_events(g);
	for (unsigned i = 0; i < g->nasync; i++)
		n += g->async[i].type == VRDMA_EVT_TEAM && g->async[i].status == st;
	g->nasync = 0;
	return n;
}

static void post_at(struct tg *g, uint32_t team, uint64_t seq, uint8_t kind, uint8_t type,
		    uint8_t op, uint32_t root, uint64_t count, uint32_t soff, uint32_t slen,
		    uint32_t roff, uint32_t rlen)
{
	struct vrdma_req r = mkreq(VRDMA_OP_COLL, team);

	r.id = 100 + seq;
	r.u.coll.kind = kind;
	r.u.coll.type = type;
	r.u.coll.op = op;
	r.u.coll.root = root;
	r.u.coll.count = count;
	r.u.coll.seq = seq;
	if (slen)
		r.u.coll.sge[0] = (struct vrdma_wire_sge){ IOVA + soff, slen, g->key };
	if (rlen)
		r.u.coll.sge[1] = (struct vrdma_wire_sge){ IOVA + roff, rlen, g->key };
	tg_push(g, &r);
}

/* Bytes of dom0's heap in use.  0 under a sanitizer, whose allocator
 * glibc's counts do not see: the bounds below then hold trivially. */
static size_t heap(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* One guest alone makes as many teams dom0 runs as its quota lets it
 * (64 joins: 32 teams of 2, both ranks its own): dom0 holds one chunk of
 * scratch for the node, not one per team (32 x 256 KiB = 8 MiB). */
START_TEST(collbad_scratch_per_node)
{
	struct tg g;
	uint32_t t[2];
	size_t before;

	tg_full(&g, 5);
	before = heap();
	for (unsigned k = 0; k < VBE_COLL_GUEST_TEAMS / 2; k++) {
		ck_assert_int_eq(join(&g, 1, (uint8_t)k, 2, 0, &t[0]), VRDMA_CS_OK);
		ck_assert_int_eq(join(&g, 1, (uint8_t)k, 2, 1, &t[1]), VRDMA_CS_OK);
		ck_assert_uint_eq(evts(&g, VRDMA_CS_OK), 2);
	}
	ck_assert_uint_eq(node->coll->nteams, VBE_COLL_GUEST_TEAMS / 2);
	ck_assert_msg(heap() - before < (2u << 20), "%zu bytes for 32 teams", heap() - before);
	/* the last of them still runs: in place, both ranks on one range */
	for (unsigned i = 0; i < 256; i++)
		((uint32_t *)(g.mem + DATA))[i] = i;
	post_at(&g, t[0], 1, 1, VCOLL_UINT32, VCOLL_SUM, 0, 256, DATA, 1024, DATA, 1024);
	post_at(&g, t[1], 1, 1, VCOLL_UINT32, VCOLL_SUM, 0, 256, DATA, 1024, DATA, 1024);
	vbe_node_poll(node);
	expect_cqe(&g, 101, VRDMA_WS_SUCCESS);
	expect_cqe(&g, 101, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(((uint32_t *)(g.mem + DATA))[255], 2 * 255);
	tg_stop(&g);
}
END_TEST

/* Teams that never fill: one guest joins 64 teams of VRDMA_TEAM_MAX
 * members as rank 0 of each.  dom0 keeps what the joins hold, and a
 * pointer a rank: not a member record for every rank named (14 MiB). */
START_TEST(collbad_joining_teams)
{
	struct tg g;
	uint32_t t;
	size_t before;

	tg_full(&g, 5);
	before = heap();
	for (unsigned k = 0; k < VBE_COLL_GUEST_TEAMS; k++)
		ck_assert_int_eq(join(&g, 2, (uint8_t)k, VRDMA_TEAM_MAX, 0, &t), VRDMA_CS_OK);
	/* its quota: rank 0 of a new team is marked absent (NOENT), in a
	 * team made for it, as often as its quota again; then NOMEM */
	for (unsigned k = 0; k < VBE_COLL_GUEST_TEAMS; k++)
		ck_assert_int_eq(join(&g, 3, (uint8_t)k, VRDMA_TEAM_MAX, 0, &t), VRDMA_CS_NOENT);
	ck_assert_int_eq(join(&g, 3, 0xff, 2, 0, &t), VRDMA_CS_NOMEM);
	ck_assert_uint_eq(node->coll->nteams, 2 * VBE_COLL_GUEST_TEAMS);
	ck_assert_msg(heap() - before < (8u << 20), "%zu bytes for 128 teams", heap() - before);
	vplat_key_rm(g.p, g.fdir);	/* the VM goes: so do its teams */
	stub_run();
	ck_assert_uint_eq(node->coll->nteams, 0);
	tg_stop(&g);
}
END_TEST

static void leave(struct tg *g, uint32_t team)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_TEAM_LEAVE, team);

	ck_assert_int_eq(tg_cmd(g, &r, NULL), VRDMA_CS_OK);
}

/*
 * A member at its teams quota cannot join, and its team mates must not
 * wait out their limit for it: it hears NOENT at once, and they hear
 * NOENT once every rank joined, so all of them run the team themselves.
 * Whether the team was there before it (made by a mate) or made for it;
 * a team whose every rank was at its quota is gone at its last join.
 */
START_TEST(collbad_quota_absent)
{
	struct tg g[3];
	uint32_t t[3], full[VBE_COLL_GUEST_TEAMS];

	for (unsigned i = 0; i < 3; i++)
		tg_full(&g[i], 5 + i);
	for (unsigned k = 0; k < VBE_COLL_GUEST_TEAMS; k++) {
		ck_assert_int_eq(join(&g[0], 8, (uint8_t)k, 3, 0, &full[k]), VRDMA_CS_OK);
		ck_assert_int_eq(join(&g[2], 9, (uint8_t)k, 3, 0, &t[2]), VRDMA_CS_OK);
	}

	/* a mate first: it waits, the member at its quota completes it */
	ck_assert_int_eq(join(&g[1], 10, 0, 2, 1, &t[1]), VRDMA_CS_OK);
	ck_assert_int_eq(join(&g[0], 10, 0, 2, 0, &t[0]), VRDMA_CS_NOENT);
	ck_assert_uint_eq(evts(&g[1], VRDMA_CS_NOENT), 1);
	ck_assert_int_eq(join(&g[0], 10, 0, 2, 0, &t[0]), VRDMA_CS_EXIST);
	leave(&g[1], t[1]);
	ck_assert_uint_eq(node->coll->nteams, 2 * VBE_COLL_GUEST_TEAMS);

	/* the member at its quota first: the team made for it is its
	 * charge until the mate came and went */
	ck_assert_int_eq(join(&g[0], 10, 1, 2, 0, &t[0]), VRDMA_CS_NOENT);
	ck_assert_uint_eq(vbe_node_guest(node, g[0].domid, 0)->coll->ntombs, 1);
	ck_assert_int_eq(join(&g[1], 10, 1, 2, 1, &t[1]), VRDMA_CS_OK);
	ck_assert_uint_eq(evts(&g[1], VRDMA_CS_NOENT), 1);
	leave(&g[1], t[1]);
	ck_assert_uint_eq(vbe_node_guest(node, g[0].domid, 0)->coll->ntombs, 0);
	ck_assert_uint_eq(node->coll->nteams, 2 * VBE_COLL_GUEST_TEAMS);

	/* every rank at its quota: nothing is left */
	ck_assert_int_eq(join(&g[0], 10, 2, 2, 0, &t[0]), VRDMA_CS_NOENT);
	ck_assert_int_eq(join(&g[2], 10, 2, 2, 1, &t[2]), VRDMA_CS_NOENT);
	ck_assert_uint_eq(vbe_node_guest(node, g[0].domid, 0)->coll->ntombs, 0);
	ck_assert_uint_eq(node->coll->nteams, 2 * VBE_COLL_GUEST_TEAMS);

	/* a team made for it, which a mate joined: its VM goes, the mate
	 * still hears NOENT at the team's last join, and the team ends
	 * with the mate */
	ck_assert_int_eq(join(&g[0], 10, 3, 3, 0, &t[0]), VRDMA_CS_NOENT);
	ck_assert_int_eq(join(&g[1], 10, 3, 3, 1, &t[1]), VRDMA_CS_OK);
	vplat_key_rm(g[0].p, g[0].fdir);
	stub_run();
	ck_assert_uint_eq(node->coll->nteams, VBE_COLL_GUEST_TEAMS + 1);
	ck_assert_int_eq(join(&g[2], 10, 3, 3, 2, &t[2]), VRDMA_CS_NOENT);
	ck_assert_uint_eq(evts(&g[1], VRDMA_CS_NOENT), 1);
	leave(&g[1], t[1]);
	ck_assert_uint_eq(node->coll->nteams, VBE_COLL_GUEST_TEAMS);
	for (unsigned i = 0; i < 3; i++)
		tg_stop(&g[i]);
}
END_TEST

/*
 * A guest holding ranks 0 (the root) and 2 of four: rank 2's receive
 * range is the root's send range one byte on.  The honest ranks 1 and 3
 * must get the same bits, the root's as they were when the chunk was
 * read: dom0 reads each source byte once, into its own memory.
 */
START_TEST(collbad_aliased_root)
{
	struct tg g[3];
	uint32_t t[4];
	uint8_t want[1500];

	for (unsigned i = 0; i < 3; i++)
		tg_full(&g[i], 5 + i);
	ck_assert_int_eq(join(&g[0], 4, 0, 4, 0, &t[0]), VRDMA_CS_OK);
	ck_assert_int_eq(join(&g[1], 4, 0, 4, 1, &t[1]), VRDMA_CS_OK);
	ck_assert_int_eq(join(&g[0], 4, 0, 4, 2, &t[2]), VRDMA_CS_OK);
	ck_assert_int_eq(join(&g[2], 4, 0, 4, 3, &t[3]), VRDMA_CS_OK);
	ck_assert_uint_eq(evts(&g[0], VRDMA_CS_OK) + evts(&g[1], VRDMA_CS_OK) +
			  evts(&g[2], VRDMA_CS_OK), 4);
	for (unsigned i = 0; i < sizeof(want); i++)
		want[i] = g[0].mem[DATA + i] = (uint8_t)(i * 13 + 1);

	/* bcast of 1000 bytes from rank 0 */
	post_at(&g[0], t[0], 1, 3, 0, 0, 0, 1000, DATA, 1000, 0, 0);
	post_at(&g[1], t[1], 1, 3, 0, 0, 0, 1000, 0, 0, DATA, 1000);
	post_at(&g[0], t[2], 1, 3, 0, 0, 0, 1000, 0, 0, DATA + 1, 1000);
	post_at(&g[2], t[3], 1, 3, 0, 0, 0, 1000, 0, 0, DATA, 1000);
	vbe_node_poll(node);
	for (unsigned i = 0; i < 3; i++)
		expect_cqe(&g[i], 101, VRDMA_WS_SUCCESS);
	expect_cqe(&g[0], 101, VRDMA_WS_SUCCESS);
	ck_assert_mem_eq(g[1].mem + DATA, want, 1000);
	ck_assert_mem_eq(g[2].mem + DATA, want, 1000);

	/* allgather of 300 bytes each: rank 2 receives over rank 0's block */
	for (unsigned i = 0; i < sizeof(want); i++)
		want[i] = g[0].mem[DATA + i] = (uint8_t)(i * 7 + 3);
	memset(g[1].mem + DATA + 2048, 0x11, 300);
	memset(g[0].mem + DATA + 4096, 0x22, 300);
	memset(g[2].mem + DATA + 2048, 0x33, 300);
	post_at(&g[0], t[0], 2, 5, 0, 0, 0, 300, DATA, 300, DATA + 8192, 1200);
	post_at(&g[1], t[1], 2, 5, 0, 0, 0, 300, DATA + 2048, 300, DATA, 1200);
	post_at(&g[0], t[2], 2, 5, 0, 0, 0, 300, DATA + 4096, 300, DATA + 1, 1200);
	post_at(&g[2], t[3], 2, 5, 0, 0, 0, 300, DATA + 2048, 300, DATA, 1200);
	vbe_node_poll(node);
	for (unsigned i = 0; i < 3; i++)
		expect_cqe(&g[i], 102, VRDMA_WS_SUCCESS);
	expect_cqe(&g[0], 102, VRDMA_WS_SUCCESS);
	ck_assert_mem_eq(g[1].mem + DATA, g[2].mem + DATA, 1200);
	ck_assert_mem_eq(g[1].mem + DATA, want, 300);
	for (unsigned i = 0; i < 3; i++)
		tg_stop(&g[i]);
}
END_TEST

/*
 * Two guests, 64 ranks each (their whole quota), one team of 128: an
 * allreduce of 48 KiB, every rank in place on its guest's one range.
 * Each node poll reads and writes at most VBE_COLL_ROUND_WORK bytes of
 * the members' memory (and one chunk more), however many members a
 * chunk has; the bits are the fold in rank order.
 */
START_TEST(collbad_big_team_per_poll)
{
	enum { N = VBE_COLL_GUEST_TEAMS, COUNT = 12288 };
	struct tg g[2];
	uint32_t t[2][N];
	uint64_t seen = 0, polls = 0;
	unsigned told = 0, cqes = 0;
	struct vrdma_cqe c;

	for (unsigned i = 0; i < 2; i++)
		tg_full(&g[i], 5 + i);
	for (unsigned i = 0; i < 2; i++)
		for (unsigned r = 0; r < N; r++) {
			ck_assert_int_eq(join(&g[i], 5, 0, 2 * N, i * N + r, &t[i][r]), VRDMA_CS_OK);
			told += evts(&g[i], VRDMA_CS_OK);
		}
	/* 128 EVT_TEAMs into two rings of 64: the rest when there is room */
	for (unsigned k = 0; k < 4 && told < 2 * N; k++) {
		vbe_node_poll(node);
		told += evts(&g[0], VRDMA_CS_OK) + evts(&g[1], VRDMA_CS_OK);
	}
	ck_assert_uint_eq(told, 2 * N);
	for (unsigned i = 0; i < 2; i++) {
		for (unsigned k = 0; k < COUNT; k++)
			((int32_t *)(g[i].mem + DATA))[k] = (int32_t)(i ? 3 * k + 1 : k);
		for (unsigned r = 0; r < N; r++)
			post_at(&g[i], t[i][r], 1, 1, VCOLL_INT32, VCOLL_SUM, 0, COUNT,
				DATA, 4 * COUNT, DATA, 4 * COUNT);
	}
	while (cqes < 2 * N && polls++ < 1000) {
		const struct vbe_team *tm = node->coll->teams;
		uint64_t now;

		vbe_node_poll(node);
		now = tm->done * 4 * COUNT + tm->off;
		ck_assert_msg((now - seen) * 2 * 2 * N <= VBE_COLL_ROUND_WORK + VBE_COLL_CHUNK_WORK,
			      "%llu bytes of the vector in one poll",
			      (unsigned long long)(now - seen));
		seen = now;
		for (unsigned i = 0; i < 2; i++)
			while (tg_poll_cq(&g[i], &c)) {
				ck_assert_uint_eq(c.status, VRDMA_WS_SUCCESS);
				cqes++;
			}
	}
	ck_assert_uint_eq(cqes, 2 * N);
	for (unsigned i = 0; i < 2; i++)
		for (unsigned k = 0; k < COUNT; k++)
			ck_assert_int_eq(((int32_t *)(g[i].mem + DATA))[k],
					 (int32_t)(N * k + N * (3 * k + 1)));
	for (unsigned i = 0; i < 2; i++)
		tg_stop(&g[i]);
}
END_TEST

/* The node's teams all taken: a new team is NOENT (its members run it),
 * not NOMEM, which libvrdma takes for a failed create.  The harness has
 * 15 guests (960 teams): the count stands in for the other 1023. */
START_TEST(collbad_node_full)
{
	struct tg g[2];
	uint32_t t[2];

	for (unsigned i = 0; i < 2; i++)
		tg_full(&g[i], 5 + i);
	ck_assert_int_eq(join(&g[0], 6, 0, 2, 0, &t[0]), VRDMA_CS_OK);
	node->coll->nteams += VBE_COLL_NODE_TEAMS - 1;
	ck_assert_int_eq(join(&g[1], 6, 1, 2, 0, &t[1]), VRDMA_CS_NOENT);
	ck_assert_int_eq(join(&g[1], 6, 0, 2, 1, &t[1]), VRDMA_CS_OK);	/* a team there is */
	node->coll->nteams -= VBE_COLL_NODE_TEAMS - 1;
	ck_assert_uint_eq(evts(&g[0], VRDMA_CS_OK) + evts(&g[1], VRDMA_CS_OK), 2);
	for (unsigned i = 0; i < 2; i++)
		tg_stop(&g[i]);
}
END_TEST

/* `vrdmactl policy` lines. */
static void pol(const char *line)
{
	char buf[128], *argv[8], *save = NULL, *tok, out[512];
	int argc = 0;

	snprintf(buf, sizeof(buf), "%s", line);
	for (tok = strtok_r(buf, " ", &save); tok && argc < 8; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	ck_assert_int_eq(vbe_node_policy(node, argc, argv, tg_out(false)), 0);
	tg_out_end(out, sizeof(out));
}

/* Tenants the connect policy keeps apart reach each other through no
 * team either: every member hears NOENT and runs it, where the policy
 * refuses their connections.  One tenant's team is run as before. */
START_TEST(collbad_policy_apart)
{
	struct tg g[3];
	uint32_t t[3];

	pol("default tenant");
	tg_tenant(&g[0], 5, "alice");
	tg_tenant(&g[1], 6, "bob");
	tg_tenant(&g[2], 7, "alice");
	ck_assert_int_eq(join(&g[0], 7, 0, 2, 0, &t[0]), VRDMA_CS_OK);
	ck_assert_int_eq(join(&g[1], 7, 0, 2, 1, &t[1]), VRDMA_CS_OK);
	ck_assert_uint_eq(evts(&g[0], VRDMA_CS_NOENT), 1);
	ck_assert_uint_eq(evts(&g[1], VRDMA_CS_NOENT), 1);
	memset(g[0].mem + DATA, 0x5a, 64);
	memset(g[1].mem + DATA, 0, 64);
	post_at(&g[0], t[0], 1, 3, 0, 0, 0, 64, DATA, 64, 0, 0);
	post_at(&g[1], t[1], 1, 3, 0, 0, 0, 64, 0, 0, DATA, 64);
	vbe_node_poll(node);
	expect_cqe(&g[0], 101, VRDMA_WS_WR_FLUSH_ERR);
	expect_cqe(&g[1], 101, VRDMA_WS_WR_FLUSH_ERR);
	ck_assert_uint_eq(g[1].mem[DATA], 0);

	ck_assert_int_eq(join(&g[0], 7, 1, 2, 0, &t[0]), VRDMA_CS_OK);
	ck_assert_int_eq(join(&g[2], 7, 1, 2, 1, &t[2]), VRDMA_CS_OK);
	ck_assert_uint_eq(evts(&g[0], VRDMA_CS_OK) + evts(&g[2], VRDMA_CS_OK), 2);
	for (unsigned i = 0; i < 3; i++)
		tg_stop(&g[i]);
}
END_TEST

TCase *backend_collbad_tcase(void)
{
	TCase *t = tcase_create("collbad");

	tcase_add_checked_fixture(t, tg_setup, tg_teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, collbad_scratch_per_node);
	tcase_add_test(t, collbad_joining_teams);
	tcase_add_test(t, collbad_quota_absent);
	tcase_add_test(t, collbad_aliased_root);
	tcase_add_test(t, collbad_big_team_per_poll);
	tcase_add_test(t, collbad_node_full);
	tcase_add_test(t, collbad_policy_apart);
	return t;
}
