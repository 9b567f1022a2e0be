// SPDX-License-Identifier: MIT
/*
 * Teams dom0 runs: joining, telling the members, leaving.  A team lives
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
 * Returns its hash (with size), or -errno: -EINVAL a malformed list,
 * -EFAULT no such range, -ENOENT a name that is not this node's.
 */
static int64_t vbe_coll_list(struct vbe_guest *g, const struct vrdma_cmd_team_join *c)
{
	uint32_t h = 2166136261u, names = 0, i, len = 0;
	const uint8_t *src;
	uint8_t *list;
	bool other = false;

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
		names++;
		len = 0;
	}
	free(list);
	if (i < c->list_len || len || names != c->size)
		return -EINVAL;
	return other ? -ENOENT : (int64_t)h;
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
	t->hash = hash;
	t->state = VBE_TEAM_JOINING;
	t->serial = ++cn->serial;
	t->next = cn->teams;
	cn->teams = t;
	cn->nteams++;
	return t;
}

static void vbe_coll_work_free(struct vbe_coll_node *cn)
{
	free(cn->sp);
	free(cn->rp);
	free(cn->src);
	free(cn->scratch);
	cn->sp = cn->rp = NULL;
	cn->src = NULL;
	cn->scratch = NULL;
}

static void vbe_coll_free(struct vbe_node *n, struct vbe_team *t)
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
	if (t->tomb)
		t->tomb->coll->ntombs--;
	for (uint32_t r = 0; r < t->size; r++)
		free(t->m[r]);
	free(t->m);
	free(t->absent);
	free(t);
}

static bool vbe_coll_taken(const struct vbe_team *t, uint32_t rank)
{
	return t->m[rank] || (t->absent && t->absent[rank / 64] >> (rank % 64) & 1);
}

static void vbe_coll_unpend(struct vbe_guest *g, struct vbe_cref *ref)
{
	if (!ref->evt_pend)
		return;
	ref->evt_pend = false;
	g->coll->npend--;
	g->node->coll->npend--;
}

/* @ref's EVT_TEAM, unless its guest's event ring has no room for it. */
static void vbe_coll_tell_ref(struct vbe_guest *g, struct vbe_cref *ref)
{
	struct vrdma_evt e;

	memset(&e, 0, sizeof(e));
	e.type = VRDMA_EVT_TEAM;
	e.status = ref->evt;
	e.handle = (uint32_t)ref->gen << 16 | (uint32_t)(ref - g->coll->ref);
	if (vbe_evt_post(g, &e, false) != -ENOSPC)
		vbe_coll_unpend(g, ref);	/* told, or gone */
}

/* Each node poll: the EVT_TEAMs that found no room, if any. */
void vbe_coll_tell(struct vbe_node *n)
{
	struct vbe_guest *g;

	if (!n->coll || !n->coll->npend)
		return;
	for (g = n->guests; g && n->coll->npend; g = g->next) {
		if (!g->coll || !g->coll->npend)
			continue;
		for (uint32_t i = 0; i < VBE_COLL_GUEST_TEAMS; i++)
			if (g->coll->ref[i].t && g->coll->ref[i].evt_pend)
				vbe_coll_tell_ref(g, &g->coll->ref[i]);
	}
}

/* One EVT_TEAM per member, kept on its handle while its ring is full. */
static void vbe_coll_say(struct vbe_team *t, uint16_t status)
{
	for (uint32_t r = 0; r < t->size; r++) {
		struct vbe_cmember *m = t->m[r];
		struct vbe_cref *ref;

		if (!m)
			continue;
		ref = &m->g->coll->ref[m->handle & 0xffff];
		if (!ref->evt_pend) {
			ref->evt_pend = true;
			m->g->coll->npend++;
			m->g->node->coll->npend++;
		}
		ref->evt = status;
		vbe_coll_tell_ref(m->g, ref);
	}
}

void vbe_coll_cqe(struct vbe_cmember *m, uint64_t id, uint8_t ws, uint32_t byte_len)
{
	struct vrdma_cqe c;

	memset(&c, 0, sizeof(c));
	c.wr_id = id;
	c.qp = m->handle;
	c.opcode = VRDMA_WC_COLL;
	c.status = ws;
	c.flags = VRDMA_CQE_F_TEAM;
	c.byte_len = byte_len;
	vbe_cq_push(m->g, m->cq, &c);
}

/* Every op not done completes with @ws in every member; every op posted
 * later completes WR_FLUSH_ERR at once: the team is over. */
void vbe_coll_fail(struct vbe_team *t, uint8_t ws)
{
	uint32_t r;

	if (t->state == VBE_TEAM_FAILED)
		return;
	t->state = VBE_TEAM_FAILED;
	t->fail_ws = VRDMA_WS_WR_FLUSH_ERR;
	t->off = 0;
	for (r = 0; r < t->size; r++) {
		struct vbe_cmember *m = t->m[r];

		for (; m && m->cdone < m->posted; m->cdone++)
			vbe_coll_cqe(m, m->q[(m->cdone + 1) % VRDMA_TEAM_DEPTH].id, ws, 0);
	}
}

/* The node's scratch and rank arrays, made once: 0 or -ENOMEM. */
static int vbe_coll_work(struct vbe_coll_node *cn)
{
	if (cn->scratch)
		return 0;
	cn->sp = calloc(VRDMA_TEAM_MAX, sizeof(*cn->sp));
	cn->rp = calloc(VRDMA_TEAM_MAX, sizeof(*cn->rp));
	cn->src = calloc(VRDMA_TEAM_MAX, sizeof(*cn->src));
	cn->scratch = malloc(VBE_COLL_CHUNK);
	if (cn->sp && cn->rp && cn->src && cn->scratch)
		return 0;
	vbe_coll_work_free(cn);
	return -ENOMEM;
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
			   const struct vrdma_cmd_team_join *c, uint32_t hash)
{
	struct vbe_coll_node *cn = g->node->coll;
	bool made = false;

	if (!t) {
		if (g->coll->ntombs >= VBE_COLL_GUEST_TEAMS)
			return VRDMA_CS_NOMEM;
		if (cn->nteams >= VBE_COLL_NODE_TEAMS)
			return VRDMA_CS_NOENT;	/* as any join to a full node */
		t = vbe_coll_new(cn, c->key, c->size, hash);
		if (!t)
			return VRDMA_CS_NOMEM;
		t->tomb = g;
		g->coll->ntombs++;
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
	if (t->joined == t->size) {
		t->state = VBE_TEAM_SELF;
		vbe_coll_say(t, VRDMA_CS_NOENT);
		if (t->joined == t->nabsent)	/* every rank answered already */
			vbe_coll_free(g->node, t);
	}
	return VRDMA_CS_NOENT;
}

int vbe_coll_join(struct vbe_guest *g, const struct vrdma_req *r, uint32_t *out)
{
	struct vrdma_cmd_team_join c;
	struct vbe_coll_node *cn = vbe_coll_node(g->node);
	struct vbe_pd *pd;
	struct vbe_cq *cq;
	struct vbe_team *t;
	struct vbe_cmember *m;
	struct vbe_cref *ref = NULL;
	int64_t hash;
	uint32_t i;

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
	hash = vbe_coll_list(g, &c);
	if (hash == -ENOENT)
		return VRDMA_CS_NOENT;
	if (hash == -ENOMEM)
		return VRDMA_CS_NOMEM;
	if (hash < 0)
		return VRDMA_CS_INVAL;
	if (!g->coll) {
		g->coll = calloc(1, sizeof(*g->coll));
		if (!g->coll)
			return VRDMA_CS_NOMEM;
	}
	for (i = 0; i < VBE_COLL_GUEST_TEAMS && !ref; i++)
		if (!g->coll->ref[i].t)
			ref = &g->coll->ref[i];

	t = vbe_coll_find(cn, c.key);
	if (t && (t->size != c.size || t->hash != (uint32_t)hash)) {
		/* Members that disagree: the team is no use to any of them. */
		if (t->state == VBE_TEAM_JOINING) {
			vbe_coll_say(t, VRDMA_CS_INVAL);
			t->state = VBE_TEAM_FAILED;
			t->fail_ws = VRDMA_WS_WR_FLUSH_ERR;
		}
		return VRDMA_CS_INVAL;
	}
	if (t && (vbe_coll_taken(t, c.rank) || t->state != VBE_TEAM_JOINING))
		return VRDMA_CS_EXIST;
	if (!ref)
		return vbe_coll_absent(g, t, &c, (uint32_t)hash);
	if (!t) {
		/* The node keeps as many teams as it may: it runs no new one,
		 * and says so as a node that is off does, so that the members
		 * run it themselves.  NOMEM would fail their create: it is the
		 * guest's own quota. */
		if (cn->nteams >= VBE_COLL_NODE_TEAMS)
			return VRDMA_CS_NOENT;
		t = vbe_coll_new(cn, c.key, c.size, (uint32_t)hash);
		if (!t)
			return VRDMA_CS_NOMEM;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		if (!t->joined)
			vbe_coll_free(g->node, t);
		return VRDMA_CS_NOMEM;
	}
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

/* Vector bytes per chunk: a power of two (a multiple of every element)
 * that keeps a chunk's reads and writes, about 2 x size x chunk, within
 * VBE_COLL_CHUNK_WORK: 256 KiB up to 4 members, 256 bytes at 4096. */
static uint32_t vbe_coll_chunk_len(uint32_t size)
{
	uint32_t c = VBE_COLL_CHUNK;

	while (c > 64 && (uint64_t)c * 2 * size > VBE_COLL_CHUNK_WORK)
		c >>= 1;
	return c;
}

/*
 * Does the connect policy keep some two members' tenants apart?  dom0
 * would carry their bytes to each other, which the policy refuses their
 * QPs; told NOENT, the members run the team themselves, and the policy
 * judges their connections.  A binding has no direction, nor has a team:
 * either way will do, as for bindings by QP number (cm_qpn.c).  Members
 * of more than VBE_COLL_GROUPS groups are not compared pair by pair
 * (4096 groups would be 8M decisions): such a team runs in its members.
 */
static bool vbe_coll_apart(struct vbe_node *n, const struct vbe_team *t)
{
	struct vbe_party seen[VBE_COLL_GROUPS];
	const char *who[VBE_COLL_GROUPS];
	unsigned ns = 0, i;

	for (uint32_t r = 0; r < t->size; r++) {
		const char *tenant = t->m[r]->g->tenant;
		struct vbe_party p = vbe_policy_local(n, tenant);

		for (i = 0; i < ns && !vbe_policy_same(&seen[i], &p); i++)
			;
		if (i < ns)
			continue;
		for (i = 0; i < ns; i++)
			if (!vbe_policy_allow_either(n, &seen[i], &p)) {
				vbe_policy_refused(n, "vrdmad: team %llu: tenants %s and %s kept "
						   "apart by policy: its members run it",
						   (unsigned long long)t->serial, who[i], tenant);
				return true;
			}
		if (ns == VBE_COLL_GROUPS) {
			vlog_info("vrdmad: team %llu: members of more than %u tenant groups: "
				  "its members run it", (unsigned long long)t->serial,
				  VBE_COLL_GROUPS);
			return true;
		}
		seen[ns] = p;
		who[ns++] = tenant;
	}
	return false;
}

/* After the join's CMD_DONE went out: the last member makes the team. */
void vbe_coll_joined(struct vbe_guest *g, uint32_t handle)
{
	struct vbe_cref *ref = vbe_coll_ref(g, handle);
	struct vbe_team *t;

	if (!ref)
		return;
	t = ref->t;
	if (t->state != VBE_TEAM_JOINING || t->joined < t->size)
		return;
	if (!t->self && !g->node->coll->off && !vbe_coll_apart(g->node, t)) {
		if (!vbe_coll_work(g->node->coll)) {
			t->state = VBE_TEAM_READY;
			t->chunk = vbe_coll_chunk_len(t->size);
			t->nready = 0;		/* no OP_COLL before READY */
			vbe_coll_say(t, VRDMA_CS_OK);
			vlog_info("vrdmad: team %llu: %u members, run by dom0",
				  (unsigned long long)t->serial, t->size);
			return;
		}
		vlog_warn("vrdmad: team %llu: no memory for the scratch: its members run it",
			  (unsigned long long)t->serial);
	}
	/* Asked to, kept apart, or no scratch: the members run it. */
	t->state = VBE_TEAM_SELF;
	vbe_coll_say(t, VRDMA_CS_NOENT);
}

/* Drop @ref: its ops go without completions, the others' team fails. */
static void vbe_coll_drop(struct vbe_guest *g, struct vbe_cref *ref)
{
	struct vbe_team *t = ref->t;
	struct vbe_cmember *m = t->m[ref->rank];
	struct vbe_pd *pd = &g->pds[m->pd];
	struct vbe_cq *cq = &g->cqs[m->cq];

	t->m[ref->rank] = NULL;	/* no completions for the one leaving */
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
