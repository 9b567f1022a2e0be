// SPDX-License-Identifier: MIT
/*
 * The other nodes of a team across nodes, as test_backend_chain*.c play
 * them through the link seam (vbe_clink_ops), and a member's requests.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "chain_peer.h"

/* ---- the other nodes, through the seam ---- */


struct vbe_clink *lk[2];		/* the team's links, by direction */
struct tmsg q[2][QMAX];		/* what it sent, not taken yet */
unsigned nq[2], closed, opened;
char peer_name[2][VBE_COLL_NAME];

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
void drop_sent(void)
{
	for (unsigned d = 0; d < 2; d++)
		for (unsigned i = 0; i < nq[d]; i++)
			free(q[d][i].pl);
	memset(nq, 0, sizeof(nq));
}

void chain_teardown(void)
{
	drop_sent();
	tg_teardown();
}

void links_on(void)
{
	join_key = 0;
	drop_sent();
	memset(lk, 0, sizeof(lk));
	closed = opened = 0;
	node->coll->links = &tops;
}

/* The oldest message the node sent towards dir, of type; the peer
 * consumes it at once (room for the next). */
struct tmsg take(unsigned dir, uint8_t type)
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

void nothing_sent(void)
{
	ck_assert_uint_eq(nq[0] + nq[1], 0);
}

/* What the node at the other end of dir puts into our next slot. */
void put(unsigned dir, const struct vbe_cmsg *h, const void *pl, uint32_t plen)
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

void put_ctl(unsigned dir, uint8_t type, uint8_t flags, uint32_t nlocal, uint32_t chunk,
		    const uint32_t *groups, unsigned ng)
{
	struct vbe_cmsg h = { .type = type, .flags = flags, .nlocal = nlocal, .chunk = chunk,
			      .len = 4 * ng };

	put(dir, &h, groups, 4 * ng);
}

/* A FWD or BWD of the operation seq, chunk [off, off + len). */
void put_chunk(unsigned dir, uint8_t type, uint8_t flags, uint64_t seq, uint8_t kind,
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
uint8_t join_key;		/* the next joins' team, beside the default */

int join(struct tg *g, const char *const *names, uint32_t size, uint32_t rank,
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
	r.u.team_join.key[1] = join_key;
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
int team_evt(struct tg *g)
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
void post_op(struct tg *g, uint32_t team, uint64_t seq, uint8_t kind, uint8_t type,
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
void gone(struct tg *g)
{
	vplat_key_rm(g->p, g->fdir);
	stub_run();
	tg_stop(g);
}

void poll_n(unsigned n)
{
	while (n--)
		vbe_node_poll(node);
}

/* Node 1 of 2 (the last), one member here: agreed with what node 0 says. */
void form_last(struct tg *g, uint32_t *team, uint32_t chunk)
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
