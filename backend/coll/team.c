// SPDX-License-Identifier: MIT
/*
 * Teams dom0 runs: joining and leaving (tell.c: once joined).  A team lives
 * on the node while any member is in it; it is found by its key, and a
 * guest names it by a handle of its own (vbe_cref), so no guest can name
 * a team it did not join.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../vbe.h"
#include "coll.h"

static struct vbe_coll_node *vbe_coll_node(struct vbe_node *n)
{
	if (!n->coll)
		n->coll = calloc(1, sizeof(*n->coll));
	return n->coll;
}

struct vbe_cref *vbe_coll_ref(struct vbe_guest *g, uint32_t handle)
{
	uint32_t idx = handle & 0xffff;
	struct vbe_cref *c;

	if (!g->coll || idx >= VBE_COLL_GUEST_TEAMS)
		return NULL;
	c = &g->coll->ref[idx];
	return c->t && c->gen == handle >> 16 ? c : NULL;
}

/*
 * The node list, copied out of the member's MR before it is read: size
 * names, each NUL-terminated and at most VRDMA_NAME_MAX - 1 characters.
 * Returns its hash (with size), or -errno: -EINVAL a malformed list, or
 * the joiner's own rank named on another node; -EFAULT no such range;
 * -ENOENT a name that is not this node's and no teams across nodes here.
 * A list naming other nodes is kept in *keep (the caller frees it) for
 * the team's layout.
 */
static int64_t vbe_coll_list(struct vbe_guest *g, const struct vrdma_cmd_team_join *c,
			     uint8_t **keep)
{
	uint32_t h = 2166136261u, names = 0, i, len = 0;
	const uint8_t *src;
	uint8_t *list;
	bool other = false, mine = false;

	*keep = NULL;
	if (c->list_len < c->size || c->list_len > c->size * VBE_COLL_NAME)
		return -EINVAL;
	src = vbe_mr_ptr(g, c->pd & 0xffff, c->list_lkey, c->list_addr, c->list_len, 0);
	if (!src)
		return -EFAULT;
	list = malloc(c->list_len);
	if (!list)
		return -ENOMEM;
	memcpy(list, src, c->list_len);
	for (i = 0; i < 4; i++)
		h = (h ^ ((c->size >> (8 * i)) & 0xff)) * 16777619u;
	for (i = 0; i < c->list_len; i++) {
		h = (h ^ list[i]) * 16777619u;
		if (list[i]) {
			if (++len >= VBE_COLL_NAME)
				break;
			continue;
		}
		if (strcmp((const char *)list + i - len, g->node->name))
			other = true;
		else if (names == c->rank)
			mine = true;
		names++;
		len = 0;
	}
	if (i < c->list_len || len || names != c->size) {
		free(list);
		return -EINVAL;
	}
	if (!other) {
		free(list);
		return (int64_t)h;
	}
	if (!g->node->coll->links) {
		free(list);
		return -ENOENT;
	}
	if (!mine) {
		free(list);
		return -EINVAL;
	}
	*keep = list;
	return (int64_t)h;
}

static struct vbe_team *vbe_coll_find(struct vbe_coll_node *cn, const uint8_t key[16])
{
	struct vbe_team *t;

	for (t = cn->teams; t; t = t->next)
		if (!memcmp(t->key, key, 16))
			return t;
	return NULL;
}

static struct vbe_team *vbe_coll_new(struct vbe_coll_node *cn, const uint8_t key[16],
				     uint32_t size, uint32_t hash)
{
	struct vbe_team *t;

	if (cn->nteams >= VBE_COLL_NODE_TEAMS)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->m = calloc(size, sizeof(*t->m));
	if (!t->m) {
		free(t);
		return NULL;
	}
	memcpy(t->key, key, 16);
	t->size = size;
	t->nlocal = size;
	t->hash = hash;
	t->state = VBE_TEAM_JOINING;
	t->serial = ++cn->serial;
	t->next = cn->teams;
	cn->teams = t;
	cn->nteams++;
	return t;
}

void vbe_coll_free(struct vbe_node *n, struct vbe_team *t)
{
	struct vbe_coll_node *cn = n->coll;
	struct vbe_team **pp;

	for (pp = &cn->teams; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	for (pp = &cn->run; *pp; pp = &(*pp)->run_next)
		if (*pp == t) {
			*pp = t->run_next;
			break;
		}
	cn->nteams--;
	if (t->tomb) {
		t->tomb->coll->ntombs--;
		t->tomb->coll->nspans -= t->span != NULL;
	}
	if (t->span)
		vbe_chain_free(n, t);
	for (uint32_t r = 0; r < t->size; r++)
		free(t->m[r]);
	free(t->m);
	free(t->absent);
	free(t->local);
	free(t);
}

/* Does g hold a rank of the team across nodes t already?  A guest's
 * share of such teams counts teams, not ranks. */
static bool vbe_coll_holds(const struct vbe_team *t, const struct vbe_guest *g)
{
	for (uint32_t i = 0; t->span && i < t->nlocal; i++)
		if (t->m[t->local[i]] && t->m[t->local[i]]->g == g)
			return true;
	return false;
}

static bool vbe_coll_taken(const struct vbe_team *t, uint32_t rank)
{
	return t->m[rank] || (t->absent && t->absent[rank / 64] >> (rank % 64) & 1);
}

/* A new team for a join: one node's, or this node's part of one across
 * nodes (its list kept).  A VRDMA_CS_* status; *out the team on OK. */
static int vbe_coll_make(struct vbe_guest *g, const struct vrdma_cmd_team_join *c,
			 uint32_t hash, const uint8_t *list, struct vbe_team **out)
{
	struct vbe_coll_node *cn = g->node->coll;
	struct vbe_team *t;
	int rc;

	/* The node keeps as many teams as it may: it runs no new one, and
	 * says so as a node that is off does, so that the members run it
	 * themselves.  NOMEM would fail their create: it is the guest's own
	 * quota.  So for teams across nodes. */
	if (cn->nteams >= VBE_COLL_NODE_TEAMS || (list && cn->nspans >= VBE_COLL_NODE_SPANS))
		return VRDMA_CS_NOENT;
	t = vbe_coll_new(cn, c->key, c->size, hash);
	if (!t)
		return VRDMA_CS_NOMEM;
	if (list) {
		rc = vbe_chain_layout(g->node, t, list, c->list_len);
		if (rc) {
			vbe_coll_free(g->node, t);
			return rc == -ENOMEM ? VRDMA_CS_NOMEM : VRDMA_CS_INVAL;
		}
	}
	*out = t;
	return VRDMA_CS_OK;
}

/* The last rank of this node joined (or was marked absent). */
static void vbe_coll_complete_here(struct vbe_guest *g, struct vbe_team *t)
{
	if (t->span) {
		vbe_chain_start(g->node, t);	/* the nodes agree first */
		return;
	}
	t->state = VBE_TEAM_SELF;
	vbe_coll_say(t, VRDMA_CS_NOENT);
	if (t->joined == t->nabsent)		/* every rank answered already */
		vbe_coll_free(g->node, t);
}

/*
 * @g is in as many teams as its quota lets it: it cannot join, yet its
 * team mates are waiting for it.  Its rank is marked absent instead and
 * it hears NOENT: it runs the team itself, and the others hear NOENT
 * too once every rank joined, so all of them fall back together rather
 * than wait out their limit for a member that never comes.  A team not
 * made yet is made for it, charged to it (another quota of as many), so
 * the marks it can leave are bounded too.  NOENT, or NOMEM at both
 * quotas.
 */
static int vbe_coll_absent(struct vbe_guest *g, struct vbe_team *t,
			   const struct vrdma_cmd_team_join *c, uint32_t hash, const uint8_t *list)
{
	struct vbe_coll_node *cn = g->node->coll;
	bool made = false;
	int st;

	if (!t) {
		if (g->coll->ntombs >= VBE_COLL_GUEST_TEAMS ||
		    (list && g->coll->nspans >= VBE_COLL_GUEST_SPANS))
			return VRDMA_CS_NOMEM;
		st = vbe_coll_make(g, c, hash, list, &t);
		if (st)
			return st;
		t->tomb = g;
		g->coll->ntombs++;
		g->coll->nspans += list != NULL;
		made = true;
	}
	if (!t->absent) {
		t->absent = calloc((t->size + 63) / 64, sizeof(*t->absent));
		if (!t->absent) {
			if (made)
				vbe_coll_free(g->node, t);
			return VRDMA_CS_NOMEM;
		}
	}
	t->absent[c->rank / 64] |= 1ull << (c->rank % 64);
	t->nabsent++;
	t->joined++;
	t->self = true;
	cn->joins++;
	vlog_limited(&cn->absent_lim, VLOG_INFO, "vrdmad: team %llu: %s is in %u teams, its "
		     "quota: its rank %u and the others run the team themselves",
		     (unsigned long long)t->serial, g->name, VBE_COLL_GUEST_TEAMS, c->rank);
	if (t->joined == t->nlocal)
		vbe_coll_complete_here(g, t);
	return VRDMA_CS_NOENT;
}

static int vbe_coll_join_list(struct vbe_guest *g, const struct vrdma_cmd_team_join *cp,
			      struct vbe_pd *pd, struct vbe_cq *cq, uint32_t hash,
			      const uint8_t *list, uint32_t *out);

int vbe_coll_join(struct vbe_guest *g, const struct vrdma_req *r, uint32_t *out)
{
	struct vrdma_cmd_team_join c;
	struct vbe_coll_node *cn = vbe_coll_node(g->node);
	struct vbe_pd *pd;
	struct vbe_cq *cq;
	uint8_t *list = NULL;
	int64_t hash;
	int st;

	memcpy(&c, &r->u.team_join, sizeof(c));
	if (!cn)
		return VRDMA_CS_NOMEM;
	pd = VBE_GET(g->pds, VBE_MAX_PDS, c.pd);
	cq = VBE_GET(g->cqs, VBE_MAX_CQS, c.cq);
	if (!pd || !cq)
		return VRDMA_CS_INVAL;
	if (!c.size || c.size > VRDMA_TEAM_MAX || c.rank >= c.size ||
	    (c.flags & ~VRDMA_TEAM_F_SELF) || c.reserved[0] || c.reserved[1] || c.reserved[2])
		return VRDMA_CS_INVAL;
	if (cn->off)
		return VRDMA_CS_NOENT;
	hash = vbe_coll_list(g, &c, &list);
	if (hash == -ENOENT)
		return VRDMA_CS_NOENT;
	if (hash == -ENOMEM)
		return VRDMA_CS_NOMEM;
	if (hash < 0)
		return VRDMA_CS_INVAL;
	st = vbe_coll_join_list(g, &c, pd, cq, (uint32_t)hash, list, out);
	free(list);
	return st;
}

/* vbe_coll_join with the list checked (and kept if it names other
 * nodes). */
static int vbe_coll_join_list(struct vbe_guest *g, const struct vrdma_cmd_team_join *cp,
			      struct vbe_pd *pd, struct vbe_cq *cq, uint32_t hash,
			      const uint8_t *list, uint32_t *out)
{
	const struct vrdma_cmd_team_join c = *cp;
	struct vbe_coll_node *cn = g->node->coll;
	struct vbe_cref *ref = NULL;
	struct vbe_cmember *m;
	struct vbe_team *t;
	uint32_t i;
	int st;

	if (!g->coll) {
		g->coll = calloc(1, sizeof(*g->coll));
		if (!g->coll)
			return VRDMA_CS_NOMEM;
	}
	for (i = 0; i < VBE_COLL_GUEST_TEAMS && !ref; i++)
		if (!g->coll->ref[i].t)
			ref = &g->coll->ref[i];

	t = vbe_coll_find(cn, c.key);
	if (t && (t->size != c.size || t->hash != hash)) {
		/* Members that disagree: the team is no use to any of them. */
		if (t->state == VBE_TEAM_JOINING) {
			vbe_coll_say(t, VRDMA_CS_INVAL);
			t->state = VBE_TEAM_FAILED;
			t->fail_ws = VRDMA_WS_WR_FLUSH_ERR;
			if (t->span)		/* the other nodes see its links go */
				vbe_chain_stop(g->node, t);
		}
		return VRDMA_CS_INVAL;
	}
	if (t && (vbe_coll_taken(t, c.rank) || t->state != VBE_TEAM_JOINING))
		return VRDMA_CS_EXIST;
	/* At its quota of teams, or of teams across nodes (each takes links
	 * and a place of the node's few): absent, so that all fall back. */
	if (!ref || (list && g->coll->nspans >= VBE_COLL_GUEST_SPANS &&
		     !(t && vbe_coll_holds(t, g))))
		return vbe_coll_absent(g, t, &c, hash, list);
	if (!t) {
		st = vbe_coll_make(g, &c, hash, list, &t);
		if (st)
			return st;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		if (!t->joined)
			vbe_coll_free(g->node, t);
		return VRDMA_CS_NOMEM;
	}
	g->coll->nspans += t->span && !vbe_coll_holds(t, g);	/* before it holds this */
	t->m[c.rank] = m;
	ref->t = t;
	ref->rank = c.rank;
	ref->gen = (uint16_t)(ref->gen + 1) ? (uint16_t)(ref->gen + 1) : 1;
	m->g = g;
	m->handle = (uint32_t)ref->gen << 16 | (uint32_t)(ref - g->coll->ref);
	m->pd = c.pd & 0xffff;
	m->cq = c.cq & 0xffff;
	pd->users++;
	cq->users++;
	g->coll->nteams++;
	t->joined++;
	if ((c.flags & VRDMA_TEAM_F_SELF) || g->prio.coll_off)
		t->self = true;
	cn->joins++;
	out[0] = m->handle;
	return VRDMA_CS_OK;
}

/* Drop @ref: its ops go without completions, the others' team fails. */
static void vbe_coll_drop(struct vbe_guest *g, struct vbe_cref *ref)
{
	struct vbe_team *t = ref->t;
	struct vbe_cmember *m = t->m[ref->rank];
	struct vbe_pd *pd = &g->pds[m->pd];
	struct vbe_cq *cq = &g->cqs[m->cq];

	t->m[ref->rank] = NULL;	/* no completions for the one leaving */
	/* Agreeing with the other nodes without it: the others run it. */
	if (t->span && t->state == VBE_TEAM_JOINING && t->span->phase != VBE_SP_JOINING)
		vbe_chain_stop(g->node, t);
	if (t->state == VBE_TEAM_READY) {
		/* A failure only if an operation was under way: members leave
		 * one by one at a team's normal end. */
		bool busy = m->posted > m->cdone;

		for (uint32_t r = 0; r < t->size; r++)
			busy |= t->m[r] && t->m[r]->posted > t->m[r]->cdone;
		vbe_coll_fail(t, VRDMA_WS_RETRY_EXC_ERR);
		if (busy)
			g->node->coll->fails++;
	}
	free(m);
	vbe_coll_unpend(g, ref);
	if (pd->users)
		pd->users--;
	if (cq->users)
		cq->users--;
	ref->t = NULL;
	g->coll->nteams--;
	g->coll->nspans -= t->span && !vbe_coll_holds(t, g);
	/* The last member out frees the team: absent ranks had their
	 * answer at their join. */
	if (--t->joined == t->nabsent)
		vbe_coll_free(g->node, t);
}

int vbe_coll_leave(struct vbe_guest *g, const struct vrdma_req *r)
{
	struct vbe_cref *ref = vbe_coll_ref(g, r->handle);

	if (!ref)
		return VRDMA_CS_NOENT;
	vbe_coll_drop(g, ref);
	return VRDMA_CS_OK;
}

void vbe_coll_guest_gone(struct vbe_guest *g)
{
	struct vbe_team *t, *next;

	if (!g->coll)
		return;
	for (uint32_t i = 0; i < VBE_COLL_GUEST_TEAMS; i++)
		if (g->coll->ref[i].t)
			vbe_coll_drop(g, &g->coll->ref[i]);
	/* Teams it made at its quota: gone with it unless a member holds
	 * one, which then ends as any team does. */
	for (t = g->coll->ntombs ? g->node->coll->teams : NULL; t; t = next) {
		next = t->next;
		if (t->tomb != g)
			continue;
		if (t->joined == t->nabsent) {
			vbe_coll_free(g->node, t);
		} else {
			t->tomb = NULL;
			g->coll->ntombs--;
			g->coll->nspans -= t->span != NULL;
		}
	}
	free(g->coll);
	g->coll = NULL;
}

void vbe_coll_node_fini(struct vbe_node *n)
{
	if (!n->coll)
		return;
	while (n->coll->teams)
		vbe_coll_free(n, n->coll->teams);
	vbe_coll_work_free(n->coll);
	free(n->coll);
	n->coll = NULL;
}
