// SPDX-License-Identifier: MIT
/*
 * Teams across nodes (backend/coll/chain.c, chain_run.c): one node's
 * vrdmad against the other nodes, which the test plays through the link
 * seam (vbe_clink_ops): what it sends is taken off its links and checked,
 * what they send is put in its slots.  Agreeing (JOINED, VERDICT, START),
 * the chunks of an operation both ways with the bits of the one order,
 * and a peer or a link that fails: every member ends with a status, never
 * a hang, and the links go.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "backend_tg.h"
#include "vrdma/coll.h"
#include "../backend/vbe.h"
#include "../backend/coll/link.h"
#include "../common/coll/vcoll_reduce.h"

#define LIST_OFF	(DATA_OFF)
#define VEC		(DATA_OFF + 4096)	/* a member's vector, in place */
#define QMAX		32

/* ---- the other nodes, through the seam ---- */

struct tmsg {
	struct vbe_cmsg h;
	uint8_t *pl;
};

static struct vbe_clink *lk[2];		/* the team's links, by direction */
static struct tmsg q[2][QMAX];		/* what it sent, not taken yet */
static unsigned nq[2], closed, opened;
static char peer_name[2][VBE_COLL_NAME];

static int t_open(struct vbe_node *n, struct vbe_team *t, enum vbe_cl_dir dir,
		  const char *peer, struct vbe_clink **out)
{
	struct vbe_clink *l = calloc(1, sizeof(*l));

	(void)n;
	ck_assert_ptr_nonnull(l);
	l->t = t;
	l->dir = (uint8_t)dir;
	l->in = calloc(VBE_CL_SLOTS, VBE_CL_SLOT);
	l->out = calloc(VBE_CL_SLOTS, VBE_CL_SLOT);
	ck_assert(l->in && l->out);
	l->up = true;
	snprintf(peer_name[dir], sizeof(peer_name[dir]), "%s", peer);
	lk[dir] = l;
	opened++;
	*out = l;
	return 0;
}

static int t_send(struct vbe_clink *l, uint32_t len)
{
	const uint8_t *slot = l->out + (l->sent % VBE_CL_SLOTS) * VBE_CL_SLOT;
	struct tmsg *m = &q[l->dir][nq[l->dir]++];

	ck_assert_uint_lt(nq[l->dir], QMAX);
	ck_assert_uint_lt(l->sent - l->peer_used, VBE_CL_SLOTS);
	memcpy(&m->h, slot, sizeof(m->h));
	ck_assert_uint_eq(m->h.magic, VBE_CL_MAGIC);
	m->pl = malloc(len + 1);
	memcpy(m->pl, slot + VBE_CL_HDR, len);
	return 0;
}

static void t_consumed(struct vbe_clink *l)
{
	(void)l;
}

static void t_close(struct vbe_clink *l)
{
	lk[l->dir] = NULL;
	free(l->in);
	free(l->out);
	free(l);
	closed++;
}

static const struct vbe_clink_ops tops = { t_open, t_send, t_consumed, t_close };

/* What the node sent that a test did not take. */
static void drop_sent(void)
{
	for (unsigned d = 0; d < 2; d++)
		for (unsigned i = 0; i < nq[d]; i++)
			free(q[d][i].pl);
	memset(nq, 0, sizeof(nq));
}

static void chain_teardown(void)
{
	drop_sent();
	tg_teardown();
}

static void links_on(void)
{
	drop_sent();
	memset(lk, 0, sizeof(lk));
	closed = opened = 0;
	node->coll->links = &tops;
}

/* The oldest message the node sent towards dir, of type; the peer
 * consumes it at once (room for the next). */
static struct tmsg take(unsigned dir, uint8_t type)
{
	struct tmsg m;

	ck_assert_msg(nq[dir], "no message towards %s", dir ? "next" : "prev");
	m = q[dir][0];
	memmove(&q[dir][0], &q[dir][1], --nq[dir] * sizeof(q[dir][0]));
	ck_assert_uint_eq(m.h.type, type);
	if (lk[dir])
		lk[dir]->peer_used++;
	return m;
}

static void nothing_sent(void)
{
	ck_assert_uint_eq(nq[0] + nq[1], 0);
}

/* What the node at the other end of dir puts into our next slot. */
static void put(unsigned dir, const struct vbe_cmsg *h, const void *pl, uint32_t plen)
{
	struct vbe_clink *l = lk[dir];
	uint8_t *slot;

	ck_assert_ptr_nonnull(l);
	slot = l->in + (l->got % VBE_CL_SLOTS) * VBE_CL_SLOT;
	memcpy(slot, h, sizeof(*h));
	((struct vbe_cmsg *)slot)->magic = VBE_CL_MAGIC;
	if (plen)
		memcpy(slot + VBE_CL_HDR, pl, plen);
	l->got++;
	vbe_chain_kick(l);
}

static void put_ctl(unsigned dir, uint8_t type, uint8_t flags, uint32_t nlocal, uint32_t chunk,
		    const uint32_t *groups, unsigned ng)
{
	struct vbe_cmsg h = { .type = type, .flags = flags, .nlocal = nlocal, .chunk = chunk,
			      .len = 4 * ng };

	put(dir, &h, groups, 4 * ng);
}

/* A FWD or BWD of the operation seq, chunk [off, off + len). */
static void put_chunk(unsigned dir, uint8_t type, uint8_t flags, uint64_t seq, uint8_t kind,
		      uint8_t ctype, uint8_t op, uint32_t root, uint64_t count, uint64_t off,
		      uint32_t len, const void *pl)
{
	struct vbe_cmsg h = { .type = type, .flags = flags, .seq = seq, .kind = kind,
			      .ctype = ctype, .op = op, .root = root, .count = count, .off = off,
			      .len = len };

	put(dir, &h, pl, flags & VBE_CMF_EMPTY ? 0 : len);
}

/* ---- members ---- */

/* TEAM_JOIN of g as rank of the team whose node list is names. */
static int join(struct tg *g, const char *const *names, uint32_t size, uint32_t rank,
		uint32_t *team)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_TEAM_JOIN, 0);
	uint32_t out[4] = { 0 }, len = 0;
	int st;

	for (uint32_t i = 0; i < size; i++) {
		strcpy((char *)g->mem + LIST_OFF + len, names[i]);
		len += (uint32_t)strlen(names[i]) + 1;
	}
	r.u.team_join.key[0] = 0xc4;
	r.u.team_join.size = size;
	r.u.team_join.rank = rank;
	r.u.team_join.pd = g->pd;
	r.u.team_join.cq = g->cq;
	r.u.team_join.list_lkey = g->key;
	r.u.team_join.list_addr = IOVA + LIST_OFF;
	r.u.team_join.list_len = len;
	st = tg_cmd(g, &r, out);
	*team = out[0];
	return st;
}

/* The one EVT_TEAM g got (-1: none). */
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

/* OP_COLL seq of g: send range [VEC, + slen), receive [VEC + roff, + rlen). */
static void post_op(struct tg *g, uint32_t team, uint64_t seq, uint8_t kind, uint8_t type,
		    uint8_t op, uint32_t root, uint64_t count, uint32_t slen, uint32_t roff,
		    uint32_t rlen)
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
		r.u.coll.sge[0] = (struct vrdma_wire_sge){ IOVA + VEC, slen, g->key };
	if (rlen)
		r.u.coll.sge[1] = (struct vrdma_wire_sge){ IOVA + VEC + roff, rlen, g->key };
	tg_push(g, &r);
}

/* g's VM goes: its teams with it. */
static void gone(struct tg *g)
{
	vplat_key_rm(g->p, g->fdir);
	stub_run();
	tg_stop(g);
}

static void poll_n(unsigned n)
{
	while (n--)
		vbe_node_poll(node);
}

/* Node 1 of 2 (the last), one member here: agreed with what node 0 says. */
static void form_last(struct tg *g, uint32_t *team, uint32_t chunk)
{
	static const char *const L[] = { "n2", "n1" };
	static const uint32_t g0 = 0x77;
	struct tmsg m;
	uint32_t mine;

	tg_full(g, 5);
	ck_assert_int_eq(join(g, L, 2, 1, team), VRDMA_CS_OK);
	poll_n(2);
	ck_assert_ptr_nonnull(lk[VBE_CL_PREV]);
	ck_assert_ptr_null(lk[VBE_CL_NEXT]);
	ck_assert_str_eq(peer_name[VBE_CL_PREV], "n2");
	nothing_sent();
	put_ctl(VBE_CL_PREV, VBE_CM_JOINED, 0, 3, 0, &g0, 1);
	poll_n(1);
	m = take(VBE_CL_PREV, VBE_CM_VERDICT);
	ck_assert_uint_eq(m.h.len, 8);
	ck_assert_uint_eq(m.h.nlocal, 3);
	ck_assert_uint_eq(m.h.flags, 0);
	memcpy(&mine, m.pl, 4);		/* its own, then what came */
	ck_assert_uint_eq(mine, vbe_policy_ghash(node, vbe_node_guest(node, 5, 0)->tenant));
	memcpy(&mine, m.pl + 4, 4);
	ck_assert_uint_eq(mine, g0);
	free(m.pl);
	ck_assert_int_eq(team_evt(g), -1);		/* not before node 0 says */
	put_ctl(VBE_CL_PREV, VBE_CM_START, 0, 0, chunk, NULL, 0);
	poll_n(1);
	ck_assert_int_eq(team_evt(g), VRDMA_CS_OK);
}

/* ---- agreeing, then chunks both ways ---- */

/* Node 0 of 2, two members here: JOINED out, VERDICT in, START out with
 * the chunk the most members of a node allow; an allreduce of floats in
 * two chunks: the prefix out is rank 0 + rank 1, the result that comes
 * back is written into both, whole, then completed. */
START_TEST(chain_first)
{
	static const char *const L[] = { "n1", "n1", "n2", "n2" };
	enum { COUNT = 5000 };
	struct tg g[2];
	uint32_t t[2], groups[3];
	float *v[2], p0[COUNT], res[COUNT];
	const void *src[2];
	struct tmsg m;

	links_on();
	tg_full(&g[0], 5);
	tg_full(&g[1], 6);
	ck_assert_int_eq(join(&g[0], L, 4, 0, &t[0]), VRDMA_CS_OK);
	ck_assert_int_eq(join(&g[1], L, 4, 1, &t[1]), VRDMA_CS_OK);
	poll_n(1);
	ck_assert_ptr_null(lk[VBE_CL_PREV]);
	ck_assert_str_eq(peer_name[VBE_CL_NEXT], "n2");
	m = take(VBE_CL_NEXT, VBE_CM_JOINED);
	ck_assert_uint_eq(m.h.nlocal, 2);
	ck_assert_uint_eq(m.h.len, 8);	/* two domains: two tenants */
	memcpy(groups, m.pl, 8);
	free(m.pl);
	groups[2] = 0x99;
	put_ctl(VBE_CL_NEXT, VBE_CM_VERDICT, 0, 64, 0, groups, 3);
	poll_n(1);
	m = take(VBE_CL_NEXT, VBE_CM_START);
	ck_assert_uint_eq(m.h.chunk, vbe_coll_chunk_len(64));	/* 16 KiB */
	ck_assert_uint_eq(m.h.flags, 0);
	free(m.pl);
	ck_assert_int_eq(team_evt(&g[0]), VRDMA_CS_OK);
	ck_assert_int_eq(team_evt(&g[1]), VRDMA_CS_OK);

	for (unsigned i = 0; i < 2; i++) {
		v[i] = (float *)(g[i].mem + VEC);
		for (unsigned k = 0; k < COUNT; k++)
			v[i][k] = (float)(k % 97) * 0.1f + (float)i / 3.0f;
		post_op(&g[i], t[i], 1, VRDMA_COLL_ALLREDUCE, VRDMA_COLL_FLOAT, VRDMA_COLL_SUM, 0,
			COUNT, 4 * COUNT, 0, 4 * COUNT);
	}
	src[0] = v[0];
	src[1] = v[1];
	ck_assert_int_eq(vcoll_fold(VRDMA_COLL_FLOAT, VRDMA_COLL_SUM, p0, src, 2, COUNT), 0);
	poll_n(2);
	m = take(VBE_CL_NEXT, VBE_CM_FWD);
	ck_assert_uint_eq(m.h.seq, 1);
	ck_assert_uint_eq(m.h.off, 0);
	ck_assert_uint_eq(m.h.len, 16384);
	ck_assert_uint_eq(m.h.count, COUNT);
	ck_assert_mem_eq(m.pl, p0, 16384);
	free(m.pl);
	m = take(VBE_CL_NEXT, VBE_CM_FWD);
	ck_assert_uint_eq(m.h.off, 16384);
	ck_assert_uint_eq(m.h.len, 4 * COUNT - 16384);
	ck_assert_mem_eq(m.pl, (uint8_t *)p0 + 16384, 4 * COUNT - 16384);
	free(m.pl);
	expect_no_cqe(&g[0]);

	for (unsigned k = 0; k < COUNT; k++)
		res[k] = p0[k] * 3.0f + 1.0f;
	put_chunk(VBE_CL_NEXT, VBE_CM_BWD, 0, 1, VRDMA_COLL_ALLREDUCE, VRDMA_COLL_FLOAT,
		  VRDMA_COLL_SUM, 0, COUNT, 0, 16384, res);
	poll_n(1);
	expect_no_cqe(&g[0]);		/* half of it */
	ck_assert_mem_eq(v[1], res, 16384);
	put_chunk(VBE_CL_NEXT, VBE_CM_BWD, 0, 1, VRDMA_COLL_ALLREDUCE, VRDMA_COLL_FLOAT,
		  VRDMA_COLL_SUM, 0, COUNT, 16384, 4 * COUNT - 16384, (uint8_t *)res + 16384);
	poll_n(1);
	for (unsigned i = 0; i < 2; i++) {
		expect_cqe(&g[i], 101, VRDMA_WS_SUCCESS);
		ck_assert_mem_eq(v[i], res, 4 * COUNT);
	}
	nothing_sent();
	gone(&g[0]);
	gone(&g[1]);
	ck_assert_uint_eq(closed, 1);
	ck_assert_uint_eq(node->coll->nspans, 0);
}
END_TEST

/* The last of 2: the result is prefix OP its own, in that order (doubles:
 * the bits tell), written here and sent back chunk by chunk. */
START_TEST(chain_last)
{
	enum { COUNT = 1000 };
	double pre[COUNT], res[COUNT], *v;
	const void *src[2];
	struct tmsg m;
	struct tg g;
	uint32_t t;

	links_on();
	form_last(&g, &t, 4096);
	v = (double *)(g.mem + VEC);
	for (unsigned k = 0; k < COUNT; k++) {
		v[k] = 1.0 / (k + 3);
		pre[k] = 1e16 + k;
	}
	src[0] = pre;
	src[1] = v;
	ck_assert_int_eq(vcoll_fold(VRDMA_COLL_DOUBLE, VRDMA_COLL_SUM, res, src, 2, COUNT), 0);
	post_op(&g, t, 1, VRDMA_COLL_ALLREDUCE, VRDMA_COLL_DOUBLE, VRDMA_COLL_SUM, 0, COUNT,
		8 * COUNT, 0, 8 * COUNT);
	poll_n(1);
	nothing_sent();				/* the prefix first */
	for (uint32_t off = 0; off < 8 * COUNT; off += 4096) {
		uint32_t len = 8 * COUNT - off < 4096 ? 8 * COUNT - off : 4096;

		put_chunk(VBE_CL_PREV, VBE_CM_FWD, 0, 1, VRDMA_COLL_ALLREDUCE, VRDMA_COLL_DOUBLE,
			  VRDMA_COLL_SUM, 0, COUNT, off, len, (uint8_t *)pre + off);
		poll_n(1);
		m = take(VBE_CL_PREV, VBE_CM_BWD);
		ck_assert_uint_eq(m.h.off, off);
		ck_assert_uint_eq(m.h.len, len);
		ck_assert_mem_eq(m.pl, (uint8_t *)res + off, len);
		free(m.pl);
	}
	expect_cqe(&g, 101, VRDMA_WS_SUCCESS);
	ck_assert_mem_eq(v, res, 8 * COUNT);
	gone(&g);
}
END_TEST

/* The middle of 3: agreeing passes both ways; a bcast from a rank after
 * it goes forward EMPTY and comes back with the root's bytes; an
 * allgather goes forward with this node's block laid over the prefix. */
START_TEST(chain_middle)
{
	static const char *const L[] = { "n0", "n1", "n2" };
	static const uint32_t ga = 0x11, gb[3] = { 0x11, 0, 0x22 };
	uint8_t data[6000], blocks[300];
	uint32_t groups[3];
	struct tmsg m;
	struct tg g;
	uint32_t t;

	links_on();
	tg_full(&g, 5);
	ck_assert_int_eq(join(&g, L, 3, 1, &t), VRDMA_CS_OK);
	poll_n(1);
	ck_assert_str_eq(peer_name[VBE_CL_PREV], "n0");
	ck_assert_str_eq(peer_name[VBE_CL_NEXT], "n2");
	put_ctl(VBE_CL_PREV, VBE_CM_JOINED, 0, 1, 0, &ga, 1);
	poll_n(1);
	m = take(VBE_CL_NEXT, VBE_CM_JOINED);
	ck_assert_uint_eq(m.h.len, 8);
	memcpy(groups, m.pl, 8);
	free(m.pl);
	ck_assert_uint_eq(groups[1], ga);
	memcpy(groups, gb, sizeof(groups));
	groups[1] = vbe_policy_ghash(node, vbe_node_guest(node, 5, 0)->tenant);
	put_ctl(VBE_CL_NEXT, VBE_CM_VERDICT, 0, 1, 0, groups, 3);
	poll_n(1);
	m = take(VBE_CL_PREV, VBE_CM_VERDICT);
	ck_assert_uint_eq(m.h.len, 12);
	free(m.pl);
	put_ctl(VBE_CL_PREV, VBE_CM_START, 0, 0, 4096, NULL, 0);
	poll_n(1);
	m = take(VBE_CL_NEXT, VBE_CM_START);
	ck_assert_uint_eq(m.h.chunk, 4096);
	free(m.pl);
	ck_assert_int_eq(team_evt(&g), VRDMA_CS_OK);

	/* bcast of 6000 bytes from rank 2 (node 2) */
	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 1);
	memset(g.mem + VEC, 0, sizeof(data));
	post_op(&g, t, 1, VRDMA_COLL_BCAST, 0, 0, 2, sizeof(data), 0, 0, sizeof(data));
	for (uint32_t off = 0; off < sizeof(data); off += 4096) {
		uint32_t len = sizeof(data) - off < 4096 ? sizeof(data) - off : 4096;

		put_chunk(VBE_CL_PREV, VBE_CM_FWD, VBE_CMF_EMPTY, 1, VRDMA_COLL_BCAST, 0, 0, 2,
			  sizeof(data), off, len, NULL);
		poll_n(1);
		m = take(VBE_CL_NEXT, VBE_CM_FWD);
		ck_assert_uint_eq(m.h.flags, VBE_CMF_EMPTY);
		ck_assert_uint_eq(m.h.len, len);
		free(m.pl);
	}
	for (uint32_t off = 0; off < sizeof(data); off += 4096) {
		uint32_t len = sizeof(data) - off < 4096 ? sizeof(data) - off : 4096;

		put_chunk(VBE_CL_NEXT, VBE_CM_BWD, 0, 1, VRDMA_COLL_BCAST, 0, 0, 2, sizeof(data),
			  off, len, data + off);
		poll_n(1);
		m = take(VBE_CL_PREV, VBE_CM_BWD);
		ck_assert_mem_eq(m.pl, data + off, len);
		free(m.pl);
	}
	expect_cqe(&g, 101, VRDMA_WS_SUCCESS);
	ck_assert_mem_eq(g.mem + VEC, data, sizeof(data));

	/* allgather of 100 bytes each: block 1 is this node's */
	memset(blocks, 0xaa, 100);
	memset(blocks + 100, 0, 200);
	memset(g.mem + VEC, 0xbb, 100);
	post_op(&g, t, 2, VRDMA_COLL_ALLGATHER, 0, 0, 0, 100, 100, 1024, 300);
	put_chunk(VBE_CL_PREV, VBE_CM_FWD, 0, 2, VRDMA_COLL_ALLGATHER, 0, 0, 0, 100, 0, 300,
		  blocks);
	poll_n(1);
	m = take(VBE_CL_NEXT, VBE_CM_FWD);
	ck_assert_uint_eq(m.pl[0], 0xaa);
	ck_assert_uint_eq(m.pl[150], 0xbb);
	ck_assert_uint_eq(m.pl[299], 0);
	memset(m.pl + 200, 0xcc, 100);
	put_chunk(VBE_CL_NEXT, VBE_CM_BWD, 0, 2, VRDMA_COLL_ALLGATHER, 0, 0, 0, 100, 0, 300,
		  m.pl);
	poll_n(1);
	free(take(VBE_CL_PREV, VBE_CM_BWD).pl);
	expect_cqe(&g, 102, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(g.mem[VEC + 1024], 0xaa);
	ck_assert_uint_eq(g.mem[VEC + 1124], 0xbb);
	ck_assert_uint_eq(g.mem[VEC + 1323], 0xcc);
	free(m.pl);
	gone(&g);
	ck_assert_uint_eq(closed, 2);
}
END_TEST

/* ---- what fails ---- */

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

TCase *backend_chain_tcase(void)
{
	TCase *t = tcase_create("chain");

	tcase_add_checked_fixture(t, tg_setup, chain_teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, chain_first);
	tcase_add_test(t, chain_last);
	tcase_add_test(t, chain_middle);
	tcase_add_test(t, chain_form_fails);
	tcase_add_test(t, chain_run_fails);
	tcase_add_test(t, chain_abort_and_leave);
	tcase_add_test(t, chain_join_refused);
	return t;
}
