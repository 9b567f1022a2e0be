// SPDX-License-Identifier: MIT
/*
 * vrdmactl teams: the teams this dom0 runs or was asked to, a team a
 * line (text) or an array (-j), and the node's totals.  Members are named
 * as vrdmactl names guests elsewhere: VM name, else the guest's label.
 */
#include <stdio.h>

#include "../vbe.h"
#include "coll.h"

static const char *const vbe_team_states[] = {
	[VBE_TEAM_JOINING] = "joining",
	[VBE_TEAM_READY] = "offload",
	[VBE_TEAM_SELF] = "fallback",
	[VBE_TEAM_FAILED] = "failed",
};

static void vbe_team_show(const struct vbe_team *t, struct vout *o)
{
	const char *state = vbe_team_states[t->state];

	vout_obj(o, NULL);
	vout_u64(o, "team", t->serial, "team %llu", (unsigned long long)t->serial);
	vout_text(o, " key %02x%02x%02x%02x", t->key[0], t->key[1], t->key[2], t->key[3]);
	vout_str(o, "state", state, " %s", state);
	vout_u64(o, "size", t->size, " members %u", t->size);
	vout_u64(o, "joined", t->joined, " joined %u", t->joined);
	/* across nodes: how many, this node's place, the links' peers */
	vout_u64(o, "nodes", t->span ? t->span->nodes : 1, " nodes %u",
		 t->span ? t->span->nodes : 1);
	if (t->span) {
		vout_u64(o, "here", t->nlocal, " here %u", t->nlocal);
		vout_u64(o, "place", t->span->k, " place %u", t->span->k);
		vout_str(o, "prev", t->span->peer[0], " prev %s",
			 t->span->peer[0][0] ? t->span->peer[0] : "-");
		vout_str(o, "next", t->span->peer[1], " next %s",
			 t->span->peer[1][0] ? t->span->peer[1] : "-");
	}
	vout_u64(o, "ops", t->ops, " ops %llu", (unsigned long long)t->ops);
	vout_u64(o, "bytes", t->bytes, " bytes %llu", (unsigned long long)t->bytes);
	vout_arr(o, "members");
	vout_text(o, "\n ");
	for (uint32_t r = 0; r < t->size; r++) {
		const struct vbe_cmember *m = t->m[r];
		const struct vbe_guest *g;

		if (!m)
			continue;
		g = m->g;
		vout_obj(o, NULL);
		vout_u64(o, "rank", r, " %u:", r);
		vout_str(o, "vm", g->vm[0] ? g->vm : g->name, "%s", g->vm[0] ? g->vm : g->name);
		vout_ju64(o, "domid", g->domid);
		vout_ju64(o, "devid", g->devid);
		vout_u64(o, "pending", m->posted - m->cdone, " (%llu pending)",
			 (unsigned long long)(m->posted - m->cdone));
		vout_end(o);
	}
	vout_end(o);
	vout_text(o, "\n");
	vout_end(o);
}

int vbe_node_teams(struct vbe_node *n, struct vout *o)
{
	const struct vbe_coll_node *cn = n->coll;
	const struct vbe_team *t;

	vout_str(o, "node", n->name, "node %s:", n->name);
	vout_bool(o, "offload", !cn || !cn->off, " offload %s", cn && cn->off ? "off" : "on");
	vout_u64(o, "teams", cn ? cn->nteams : 0, ", %u teams", cn ? cn->nteams : 0);
	vout_u64(o, "joins", cn ? cn->joins : 0, ", %llu joins",
		 (unsigned long long)(cn ? cn->joins : 0));
	vout_u64(o, "ops", cn ? cn->ops : 0, ", %llu ops",
		 (unsigned long long)(cn ? cn->ops : 0));
	vout_u64(o, "bytes", cn ? cn->bytes : 0, ", %llu bytes reduced",
		 (unsigned long long)(cn ? cn->bytes : 0));
	vout_u64(o, "failed", cn ? cn->fails : 0, ", %llu failed\n",
		 (unsigned long long)(cn ? cn->fails : 0));
	vout_arr(o, "list");
	for (t = cn ? cn->teams : NULL; t; t = t->next)
		vbe_team_show(t, o);
	vout_end(o);
	return 0;
}
