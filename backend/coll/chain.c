// SPDX-License-Identifier: MIT
/*
 * Teams across nodes, until they run (link.h has the wire, chain_run.c
 * the operations): this node's place in the layout, the links to its
 * neighbours, and how the nodes agree whether the vrdmads run the team
 * or its members do.  Every node must tell its members the same, so the
 * answer is node 0's, and node 0 answers only after every node saw every
 * member's tenant group:
 *
 *   JOINED   k -> k+1   nodes 0..k joined: their groups, the most members
 *                       a node has, SELF if one wants its members to run it
 *   VERDICT  K-1 -> 0   every group; SELF if any node wanted so, or if its
 *                       connect policy keeps two of the groups apart
 *   START    0 -> K-1   node 0's answer; each node tells its members (OK:
 *                       READY, or NOENT) as START passes
 *
 * A link that breaks or a node that does not answer within
 * VBE_COLL_FORM_MS makes this node tell its members NOENT and close its
 * links, which the other nodes see as a broken link: they do the same.
 * Only a link that breaks after START passed one node but not the next
 * leaves the nodes told differently: the ones told OK fail their first
 * operation (their link is gone), the others find nobody to connect to;
 * each member gets an error within its limit, never wrong bits.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../vbe.h"
#include "coll.h"
#include "link.h"

static uint32_t vbe_chain_fnv(const char *p)
{
	uint32_t h = 2166136261u;

	while (*p)
		h = (h ^ (uint8_t)*p++) * 16777619u;
	return h;
}

/*
 * The layout of @t from its list (checked by the join: size names, this
 * node's among them, at the joiner's rank): nodes in the order of their
 * lowest rank, this node's place and neighbours, its ranks.  0 or -errno.
 */
int vbe_chain_layout(struct vbe_node *n, struct vbe_team *t, const uint8_t *list, uint32_t len)
{
	uint32_t cap = 16, nodes = 0, k = UINT32_MAX, nl = 0, r, i, *slot, *local;
	const char *p = (const char *)list, **first;
	struct vbe_cspan *s;
	uint16_t *nof;

	while (cap < 2 * t->size)
		cap <<= 1;
	slot = calloc(cap, sizeof(*slot));		/* node index + 1 */
	first = calloc(t->size, sizeof(*first));	/* node j's name */
	local = calloc(t->size, sizeof(*local));
	nof = calloc(t->size, sizeof(*nof));
	s = calloc(1, sizeof(*s));
	if (!slot || !first || !local || !nof || !s)
		goto nomem;
	for (r = 0; r < t->size && p < (const char *)list + len; r++, p += strlen(p) + 1) {
		for (i = vbe_chain_fnv(p) & (cap - 1); slot[i] && strcmp(first[slot[i] - 1], p);
		     i = (i + 1) & (cap - 1))
			;
		if (!slot[i]) {
			first[nodes] = p;
			slot[i] = ++nodes;
		}
		nof[r] = (uint16_t)(slot[i] - 1);
		if (!strcmp(p, n->name)) {
			k = slot[i] - 1;
			local[nl++] = r;
		}
	}
	if (r < t->size || k == UINT32_MAX || nodes < 2) {
		free(slot);
		free(first);
		free(local);
		free(nof);
		free(s);
		return -EINVAL;
	}
	s->k = k;
	s->node_of = nof;
	s->nodes = nodes;
	if (k > 0)
		memcpy(s->peer[VBE_CL_PREV], first[k - 1], strlen(first[k - 1]) + 1);
	if (k + 1 < nodes)
		memcpy(s->peer[VBE_CL_NEXT], first[k + 1], strlen(first[k + 1]) + 1);
	s->node = n;
	s->next = n->coll->spans;
	n->coll->spans = t;
	n->coll->nspans++;
	t->span = s;
	t->local = local;
	t->nlocal = nl;
	free(slot);
	free(first);
	return 0;
nomem:
	free(slot);
	free(first);
	free(local);
	free(nof);
	free(s);
	return -ENOMEM;
}

static void vbe_chain_close(struct vbe_node *n, struct vbe_team *t)
{
	struct vbe_cspan *s = t->span;

	for (unsigned d = 0; d < 2; d++)
		if (s->l[d]) {
			n->coll->links->close(s->l[d]);
			s->l[d] = NULL;
		}
}

void vbe_chain_free(struct vbe_node *n, struct vbe_team *t)
{
	struct vbe_team **pp;

	vbe_chain_close(n, t);
	for (pp = &n->coll->spans; *pp; pp = &(*pp)->span->next)
		if (*pp == t) {
			*pp = t->span->next;
			break;
		}
	n->coll->nspans--;
	free(t->span->node_of);
	free(t->span);
	t->span = NULL;
}

/* No more agreeing or running: links closed, the members told NOENT if
 * they were not told yet (the caller fails a READY team). */
void vbe_chain_stop(struct vbe_node *n, struct vbe_team *t)
{
	struct vbe_cspan *s = t->span;

	if (s->phase == VBE_SP_OVER)
		return;
	s->phase = VBE_SP_OVER;
	s->moved = 0;
	vbe_chain_close(n, t);
	if (t->state == VBE_TEAM_JOINING) {
		t->state = VBE_TEAM_SELF;
		vbe_coll_say(t, VRDMA_CS_NOENT);
	}
}

/* Stopped, and nobody here holds the team (its ranks here were all at
 * their quota): it goes.  True if it went. */
static bool vbe_chain_drop(struct vbe_node *n, struct vbe_team *t)
{
	vbe_chain_stop(n, t);
	if (t->joined != t->nabsent)
		return false;
	vbe_coll_free(n, t);
	return true;
}

/* The tenant groups of this node's members into the span's list. */
static bool vbe_chain_add_group(struct vbe_cspan *s, uint32_t h)
{
	for (unsigned i = 0; i < s->ngroups; i++)
		if (s->groups[i] == h)
			return true;
	if (s->ngroups == VBE_COLL_GROUPS)
		return false;
	s->groups[s->ngroups++] = h;
	return true;
}

void vbe_chain_start(struct vbe_node *n, struct vbe_team *t)
{
	struct vbe_cspan *s = t->span;
	const struct vbe_clink_ops *ops = n->coll->links;

	if (s->phase != VBE_SP_JOINING)
		return;
	s->phase = VBE_SP_LINKING;
	s->deadline = vplat_now_ms() + VBE_COLL_FORM_MS;
	s->self = t->self || vbe_coll_work(n->coll);	/* no scratch: not here */
	s->maxlocal = t->nlocal;
	s->moved = 1;
	for (uint32_t i = 0; i < t->nlocal; i++) {
		const struct vbe_cmember *m = t->m[t->local[i]];

		if (m && !vbe_chain_add_group(s, vbe_policy_ghash(n, m->g->tenant)))
			s->self = true;		/* too many to judge pair by pair */
	}
	for (unsigned d = 0; d < 2; d++)
		if (s->peer[d][0] && ops->open(n, t, d, s->peer[d], &s->l[d])) {
			vlog_warn("vrdmad: team %llu: no link to node %s: its members run it",
				  (unsigned long long)t->serial, s->peer[d]);
			vbe_chain_drop(n, t);
			return;
		}
}

/* The transport's news about l (up, down, a message, room): the next
 * poll looks.  Nothing is done from inside the transport's callback, so
 * it may go on using l. */
void vbe_chain_link_state(struct vbe_clink *l)
{
	l->t->span->moved = 1;
}

void vbe_chain_kick(struct vbe_clink *l)
{
	l->t->span->moved = 1;
}

/* A link of a live span broke: true if the team went with it. */
bool vbe_chain_broken(struct vbe_node *n, struct vbe_team *t)
{
	struct vbe_cspan *s = t->span;
	unsigned d;

	for (d = 0; d < 2 && !(s->l[d] && s->l[d]->down); d++)
		;
	if (d == 2 || s->phase == VBE_SP_OVER)
		return false;
	vlog_info("vrdmad: team %llu: the link to node %s is gone", (unsigned long long)t->serial,
		  s->peer[d]);
	if (t->state == VBE_TEAM_READY) {
		bool busy = false;

		for (uint32_t i = 0; i < t->nlocal; i++)
			busy |= t->m[t->local[i]] &&
				t->m[t->local[i]]->posted > t->m[t->local[i]]->cdone;
		vbe_coll_fail(t, VRDMA_WS_RETRY_EXC_ERR);
		n->coll->fails += busy;		/* not the team's normal end */
		return false;
	}
	return vbe_chain_drop(n, t);
}

void vbe_chain_tick(struct vbe_node *n, int64_t now_ms)
{
	struct vbe_team *t, *next;

	for (t = n->coll->spans; t; t = next) {
		next = t->span->next;
		if (t->span->phase < VBE_SP_LINKING || t->span->phase > VBE_SP_START ||
		    now_ms < t->span->deadline)
			continue;
		/* what already came first: a START in a slot decides */
		if (vbe_chain_form(n, t) || t->span->phase == VBE_SP_RUN ||
		    t->span->phase == VBE_SP_OVER)
			continue;
		vlog_warn("vrdmad: team %llu: the other nodes did not agree within %d ms: its "
			  "members run it", (unsigned long long)t->serial, VBE_COLL_FORM_MS);
		vbe_chain_drop(n, t);
	}
}

/* ---- messages ---- */

/*
 * The next message l's peer put, copied out and checked for what any
 * message must be: 1 (*h, its payload in place), 0 none yet, -EPROTO.
 */
int vbe_cmsg_get(const struct vbe_clink *l, struct vbe_cmsg *h, const uint8_t **payload)
{
	const uint8_t *slot;

	if (l->used >= l->got)
		return 0;
	if (l->got - l->used > VBE_CL_SLOTS)
		return -EPROTO;
	slot = l->in + (l->used % VBE_CL_SLOTS) * VBE_CL_SLOT;
	memcpy(h, slot, sizeof(*h));
	if (h->magic != VBE_CL_MAGIC || h->type < VBE_CM_JOINED || h->type > VBE_CM_ABORT ||
	    h->len > VBE_CL_CHUNK || (h->flags & ~(VBE_CMF_SELF | VBE_CMF_EMPTY)) ||
	    h->reserved0)
		return -EPROTO;
	for (unsigned i = 0; i < sizeof(h->reserved); i++)
		if (h->reserved[i])
			return -EPROTO;
	*payload = slot + VBE_CL_HDR;
	return 1;
}

/* The slot for l's next message, zeroed header, or NULL: no room yet. */
struct vbe_cmsg *vbe_chain_slot(struct vbe_clink *l, uint8_t type)
{
	struct vbe_cmsg *h;

	if (!l->up || l->down || l->sent - l->peer_used >= VBE_CL_SLOTS)
		return NULL;
	h = (struct vbe_cmsg *)(l->out + (l->sent % VBE_CL_SLOTS) * VBE_CL_SLOT);
	memset(h, 0, sizeof(*h));
	h->magic = VBE_CL_MAGIC;
	h->type = type;
	return h;
}

/* Send what vbe_chain_slot gave, its header filled in, with @len bytes
 * of payload after it. */
int vbe_chain_put(struct vbe_node *n, struct vbe_clink *l, uint32_t len)
{
	int rc;

	rc = n->coll->links->send(l, len);
	if (rc)
		return rc;
	l->sent++;
	return 0;
}

void vbe_chain_used(struct vbe_node *n, struct vbe_clink *l)
{
	l->used++;
	n->coll->links->consumed(l);
}

/* ---- agreeing ---- */

/* Does this node's policy keep one of its members' tenants apart from a
 * group of the team?  Judged as a connection between nodes would be. */
static bool vbe_chain_apart(struct vbe_node *n, struct vbe_team *t)
{
	const struct vbe_cspan *s = t->span;

	for (uint32_t i = 0; i < t->nlocal; i++) {
		const struct vbe_cmember *m = t->m[t->local[i]];
		struct vbe_party p;

		if (!m)
			continue;
		p = vbe_policy_local(n, m->g->tenant);
		for (unsigned j = 0; j < s->ngroups; j++) {
			struct vbe_party q = vbe_policy_remote(s->groups[j]);

			if (s->groups[j] == p.hash || vbe_policy_allow_either(n, &p, &q))
				continue;
			vbe_policy_refused(n, "vrdmad: team %llu: tenant %s kept apart by policy "
					   "from a member's group on another node: its members "
					   "run it", (unsigned long long)t->serial, m->g->tenant);
			return true;
		}
	}
	return false;
}

/* JOINED or VERDICT's groups and counts into the span: 0 or -EPROTO. */
static int vbe_chain_take(struct vbe_cspan *s, const struct vbe_cmsg *h, const uint8_t *pl)
{
	uint32_t g;

	if (h->len % 4 || h->len / 4 > VBE_COLL_GROUPS || !h->nlocal ||
	    h->nlocal > VRDMA_TEAM_MAX || h->seq || h->off || h->count || h->chunk ||
	    h->status || h->root || h->kind || h->ctype || h->op ||
	    (h->flags & ~VBE_CMF_SELF))
		return -EPROTO;
	for (uint32_t i = 0; i < h->len / 4; i++) {
		memcpy(&g, pl + 4 * i, 4);
		if (!g)
			return -EPROTO;
		if (!vbe_chain_add_group(s, g))
			s->self = true;
	}
	if (h->nlocal > s->maxlocal)
		s->maxlocal = h->nlocal;
	s->self |= !!(h->flags & VBE_CMF_SELF);
	return 0;
}

/* JOINED or VERDICT on l, with everything the span has gathered. */
static int vbe_chain_tell(struct vbe_node *n, struct vbe_team *t, struct vbe_clink *l,
			  uint8_t type)
{
	struct vbe_cspan *s = t->span;
	struct vbe_cmsg *h = vbe_chain_slot(l, type);

	if (!h)
		return -EAGAIN;
	h->nlocal = s->maxlocal;
	h->flags = s->self ? VBE_CMF_SELF : 0;
	h->len = 4 * s->ngroups;
	memcpy((uint8_t *)h + VBE_CL_HDR, s->groups, 4 * s->ngroups);
	return vbe_chain_put(n, l, 4 * s->ngroups);
}

/* Node 0's answer reached this node (or is node 0's own): tell.  2 if
 * the team went (self, and nobody here holds it), else 1. */
static int vbe_chain_decide(struct vbe_node *n, struct vbe_team *t)
{
	struct vbe_cspan *s = t->span;

	if (s->self || t->state != VBE_TEAM_JOINING) {
		vlog_info("vrdmad: team %llu: across %u nodes, run by its members",
			  (unsigned long long)t->serial, s->nodes);
		return vbe_chain_drop(n, t) ? 2 : 1;
	}
	s->phase = VBE_SP_RUN;
	s->fseq = s->bseq = 1;
	s->foff = s->boff = 0;
	t->state = VBE_TEAM_READY;
	vbe_coll_say(t, VRDMA_CS_OK);
	vlog_info("vrdmad: team %llu: %u members, %u here, across %u nodes (this one %u): run "
		  "by their vrdmads", (unsigned long long)t->serial, t->size, t->nlocal, s->nodes,
		  s->k);
	return 1;
}

/* One message's worth of agreeing: 1 done something, 2 the team went,
 * 0 waiting, -EPROTO the peer broke the rules, -errno a link failed. */
static int vbe_chain_form_one(struct vbe_node *n, struct vbe_team *t)
{
	struct vbe_cspan *s = t->span;
	struct vbe_clink *prev = s->l[VBE_CL_PREV], *next = s->l[VBE_CL_NEXT];
	bool last = s->k + 1 == s->nodes;
	const uint8_t *pl;
	struct vbe_cmsg h, *o;
	int rc;

	switch (s->phase) {
	case VBE_SP_LINKING:
		if ((prev && !prev->up) || (next && !next->up))
			return 0;
		if (prev) {
			rc = vbe_cmsg_get(prev, &h, &pl);
			if (rc <= 0)
				return rc;
			if (h.type != VBE_CM_JOINED || vbe_chain_take(s, &h, pl))
				return -EPROTO;
			if (!vbe_chain_slot(last ? prev : next, last ? VBE_CM_VERDICT : VBE_CM_JOINED))
				return 0;	/* room first: the message stays */
			vbe_chain_used(n, prev);
		}
		if (last) {
			s->self |= vbe_chain_apart(n, t);
			rc = vbe_chain_tell(n, t, prev, VBE_CM_VERDICT);
			s->phase = VBE_SP_START;
		} else {
			rc = vbe_chain_tell(n, t, next, VBE_CM_JOINED);
			s->phase = VBE_SP_VERDICT;
		}
		return rc ? rc : 1;
	case VBE_SP_VERDICT:
		rc = vbe_cmsg_get(next, &h, &pl);
		if (rc <= 0)
			return rc;
		if (h.type != VBE_CM_VERDICT)
			return -EPROTO;
		o = vbe_chain_slot(prev ? prev : next, prev ? VBE_CM_VERDICT : VBE_CM_START);
		if (!o)
			return 0;
		s->ngroups = 0;			/* the whole team's, now */
		if (vbe_chain_take(s, &h, pl))
			return -EPROTO;
		vbe_chain_used(n, next);
		s->self |= vbe_chain_apart(n, t);
		if (prev) {
			rc = vbe_chain_tell(n, t, prev, VBE_CM_VERDICT);
			s->phase = VBE_SP_START;
			return rc ? rc : 1;
		}
		s->chunk = vbe_coll_chunk_len(s->maxlocal);
		if (s->chunk > VBE_CL_CHUNK)
			s->chunk = VBE_CL_CHUNK;
		o->flags = s->self ? VBE_CMF_SELF : 0;
		o->chunk = s->chunk;
		rc = vbe_chain_put(n, next, 0);
		if (rc)
			return rc;
		return vbe_chain_decide(n, t);
	case VBE_SP_START:
		rc = vbe_cmsg_get(prev, &h, &pl);
		if (rc <= 0)
			return rc;
		/* A chunk no longer than this node's members allow; an OK only if
		 * nothing this node saw wants its members to run the team. */
		if (h.type != VBE_CM_START || h.len || h.chunk < 64 ||
		    h.chunk > vbe_coll_chunk_len(t->nlocal) || h.chunk > VBE_CL_CHUNK ||
		    (h.chunk & (h.chunk - 1)) || (h.flags & ~VBE_CMF_SELF) || h.seq || h.off ||
		    h.count || h.nlocal || h.status || h.root || h.kind || h.ctype || h.op ||
		    (s->self && !(h.flags & VBE_CMF_SELF)))
			return -EPROTO;
		if (!last) {
			o = vbe_chain_slot(next, VBE_CM_START);
			if (!o)
				return 0;
			o->flags = h.flags;
			o->chunk = h.chunk;
			rc = vbe_chain_put(n, next, 0);
			if (rc)
				return rc;
		}
		vbe_chain_used(n, prev);
		s->self = !!(h.flags & VBE_CMF_SELF);	/* node 0's word is final */
		s->chunk = h.chunk;
		return vbe_chain_decide(n, t);
	default:
		return 0;
	}
}

/* Agreeing, as far as the messages at hand go (chain_run.c's poll and
 * the tick).  True if the team went (nobody here holds it). */
bool vbe_chain_form(struct vbe_node *n, struct vbe_team *t)
{
	int rc;

	t->span->moved = 0;		/* what moves it next is news */
	do
		rc = vbe_chain_form_one(n, t);
	while (rc == 1 && t->span->phase > VBE_SP_JOINING && t->span->phase < VBE_SP_RUN);
	if (rc == 2)
		return true;
	if (rc == -EPROTO)
		vlog_warn("vrdmad: team %llu: node %s or %s broke the agreement's rules: its "
			  "members run it", (unsigned long long)t->serial,
			  t->span->peer[VBE_CL_PREV], t->span->peer[VBE_CL_NEXT]);
	return rc < 0 && vbe_chain_drop(n, t);
}
