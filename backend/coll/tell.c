// SPDX-License-Identifier: MIT
/*
 * Teams dom0 runs, once this node's members joined: whether dom0 runs a
 * one-node team (or a team across nodes, chain.c), and telling the
 * members -- EVT_TEAM, kept while their event ring is full, and the CQEs
 * of their operations, done or failed.
 */
#include <stdlib.h>
#include <string.h>

#include "../vbe.h"
#include "coll.h"

void vbe_coll_work_free(struct vbe_coll_node *cn)
{
	free(cn->sp);
	free(cn->rp);
	free(cn->src);
	free(cn->scratch);
	cn->sp = cn->rp = NULL;
	cn->src = NULL;
	cn->scratch = NULL;
}

void vbe_coll_unpend(struct vbe_guest *g, struct vbe_cref *ref)
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
void vbe_coll_say(struct vbe_team *t, uint16_t status)
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
	if (t->span)			/* the other nodes hear it as their link goes */
		vbe_chain_stop(t->span->node, t);
}

/* The node's scratch and rank arrays, made once: 0 or -ENOMEM. */
int vbe_coll_work(struct vbe_coll_node *cn)
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

/* Vector bytes per chunk: a power of two (a multiple of every element)
 * that keeps a chunk's reads and writes, about 2 x size x chunk, within
 * VBE_COLL_CHUNK_WORK: 256 KiB up to 4 members, 256 bytes at 4096. */
uint32_t vbe_coll_chunk_len(uint32_t size)
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
	if (t->state != VBE_TEAM_JOINING || t->joined < t->nlocal)
		return;
	if (t->span) {
		vbe_chain_start(g->node, t);	/* the nodes agree first */
		return;
	}
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
