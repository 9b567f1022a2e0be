// SPDX-License-Identifier: MIT
/*
 * Connecting the verbs way: MODIFY_QP RTR names the peer by (GID, QPN),
 * learnt out of band (perftest's TCP exchange, ibv_rc_pingpong).  A QP
 * is bound once both QPs have named each other; until then it waits in
 * CONNECTING (vwait) and its WRs stay queued, as a real RC QP retries.
 *
 *   RTR, GID of this node     -> wait; bind both when the peer names us
 *   RTR, another node's GID   -> cm_rqpn.c: rdma_cm between the vrdmads
 *                                (no RDMA device: UNREACH)
 *   sends waiting 10 s after RTR with no peer -> RETRY_EXC_ERR + QP_ERROR
 *   ERR                       -> flush, the bound peer gets QP_ERROR
 *
 * The GID of a node is its RDMA device's (IPv4-mapped) when it has one,
 * else fe80::/64 with a hash of the node name: unique among named nodes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "../vbe.h"
#include "../target.h"

#define VBE_VWAIT_MS	10000
/* A bound peer that went away: sends fail after about what RC hardware
 * spends on its retries (perftest's timeout 14 x retry 7 is ~0.5 s), not
 * at once, so a program that stops counting before that never sees them. */
#define VBE_LOST_MS	1000

void vbe_node_gid_init(struct vbe_node *n)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */
	const char *p;
	int i;

	if (!vbe_vx_gid(n, n->gid))
		return;
	for (p = n->name; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	memset(n->gid, 0, sizeof(n->gid));
	n->gid[0] = 0xfe;
	n->gid[1] = 0x80;
	for (i = 0; i < 8; i++)
		n->gid[8 + i] = (uint8_t)(h >> (56 - 8 * i));
}

/* QPN -> QP of any guest of the node: a binding names a QP by number, and
 * a scan of every guest's table per request would let one guest stall
 * vrdmad on a full host.  Entries live from CREATE_QP to its destroy. */
struct vbe_qpnent {
	struct vbe_qpnent *next;
	uint32_t qpn;
	struct vbe_guest *g;
	uint32_t idx;
};

static struct vbe_qpnent **vbe_qpn_bucket(struct vbe_node *n, uint32_t qpn)
{
	return &n->qpn_tab[(qpn * 2654435761u) >> 20 & (VBE_QPN_BUCKETS - 1)];
}

int vbe_qpn_add(struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vbe_qpnent *e = malloc(sizeof(*e)), **b;

	if (!e)
		return -ENOMEM;
	b = vbe_qpn_bucket(g->node, qp->qpn);
	e->qpn = qp->qpn;
	e->g = g;
	e->idx = (uint32_t)(qp - g->qps);
	e->next = *b;
	*b = e;
	return 0;
}

void vbe_qpn_del(struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vbe_qpnent **pe, *e;

	for (pe = vbe_qpn_bucket(g->node, qp->qpn); (e = *pe); pe = &e->next)
		if (e->g == g && e->qpn == qp->qpn) {
			*pe = e->next;
			free(e);
			return;
		}
}

void vbe_qpn_fini(struct vbe_node *n)
{
	struct vbe_qpnent *e;
	unsigned i;

	for (i = 0; i < VBE_QPN_BUCKETS; i++)
		while ((e = n->qpn_tab[i])) {
			n->qpn_tab[i] = e->next;
			free(e);
		}
}

/* The QP numbered qpn on this node, whoever owns it. */
struct vbe_qp *vbe_qpn_find(struct vbe_node *n, uint32_t qpn, struct vbe_guest **pg)
{
	struct vbe_qpnent *e;

	for (e = *vbe_qpn_bucket(n, qpn); e; e = e->next) {
		struct vbe_qp *qp = &e->g->qps[e->idx];

		if (e->qpn != qpn || e->g->dead || !qp->s.used || qp->qpn != qpn)
			continue;
		*pg = e->g;
		return qp;
	}
	return NULL;
}

static void vbe_qpn_bind_one(struct vbe_qp *qp, const struct vbe_guest *pg,
			     const struct vbe_qp *pqp)
{
	qp->vwait = false;
	qp->by_qpn = true;
	qp->peer_domid = pg->domid;
	qp->peer_devid = pg->devid;
	qp->peer_handle = pqp->handle;
	qp->peer_qpn = pqp->qpn;
	qp->tgt = &vbe_target_local;
	qp->state = VBE_QPS_RTS;
	vbe_sched_held(pg->node, qp);
}

/* A binding has no direction: either group may reach the other. */
static bool vbe_qpn_policy_ok(const struct vbe_guest *g, const struct vbe_guest *pg)
{
	struct vbe_party a = vbe_policy_local(g->node, g->tenant);
	struct vbe_party b = vbe_policy_local(g->node, pg->tenant);

	return vbe_policy_allow_either(g->node, &a, &b);
}

/* qp named its peer: bind both if the peer named qp too. */
static void vbe_qpn_try_bind(struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vbe_guest *pg;
	struct vbe_qp *pqp = vbe_qpn_find(g->node, qp->peer_qpn, &pg);

	if (!pqp || !pqp->vwait || pqp->state != VBE_QPS_CONNECTING ||
	    pqp->peer_qpn != qp->qpn ||
	    memcmp(pqp->peer_gid, g->node->gid, sizeof(pqp->peer_gid)) ||
	    !vbe_qpn_policy_ok(g, pg))	/* the policy changed meanwhile */
		return;
	vbe_qpn_bind_one(qp, pg, pqp);
	vbe_qpn_bind_one(pqp, g, qp);
	vlog_dbg("guest %u: QP %u bound to QP %u of guest %u", g->domid, qp->qpn,
		 pqp->qpn, pg->domid);
	/* WRs posted while waiting may go now. */
	qp->tgt->sq_run(g, qp);
	if (pqp != qp)
		pqp->tgt->sq_run(pg, pqp);
}

/* qp waits for its peer (gid, qpn): its WRs stay queued meanwhile. */
void vbe_qpn_wait(struct vbe_guest *g, struct vbe_qp *qp, const uint8_t gid[16],
		  uint32_t qpn)
{
	qp->state = VBE_QPS_CONNECTING;
	qp->vwait = true;
	qp->vwait_ms = vplat_now_ms();
	qp->peer_qpn = qpn;
	memcpy(qp->peer_gid, gid, sizeof(qp->peer_gid));
	g->node->vwaiting++;
}

static int vbe_qpn_rtr(struct vbe_guest *g, struct vbe_qp *qp,
		       const struct vrdma_cmd_modify_qp *m)
{
	struct vbe_node *n = g->node;
	struct vbe_guest *pg;
	int st;

	if (qp->state != VBE_QPS_RESET || qp->conn_id || !m->dest_qpn ||
	    m->dest_qpn >= 1u << 24)
		return VRDMA_CS_INVAL;
	/* A QP of this node the policy keeps us from: refused now. */
	if (!memcmp(m->dest_gid, n->gid, sizeof(n->gid)) &&
	    vbe_qpn_find(n, m->dest_qpn, &pg) && !vbe_qpn_policy_ok(g, pg)) {
		vbe_policy_refused(n, "guest %u (tenant %s): binding to QP %u of tenant %s "
				   "refused by policy", g->domid, g->tenant, m->dest_qpn,
				   pg->tenant);
		return VRDMA_CS_ACCESS;
	}
	vbe_qpn_wait(g, qp, m->dest_gid, m->dest_qpn);
	if (!memcmp(m->dest_gid, n->gid, sizeof(n->gid))) {
		vbe_qpn_try_bind(g, qp);
		return VRDMA_CS_OK;
	}
	st = vbe_rqpn_rtr(g, qp);
	if (st != VRDMA_CS_OK) {
		qp->state = VBE_QPS_RESET;
		qp->vwait = false;
		qp->peer_qpn = 0;
	}
	return st;
}

void vbe_qp_fail(struct vbe_guest *g, struct vbe_qp *qp)
{
	if (qp->tgt)
		qp->tgt->disconnect(g, qp);
	if (qp->vwait && qp->conn_id) {
		/* A binding to another node under way: it must not come
		 * back RTS when rdma_cm answers. */
		qp->conn_id = 0;
		vbe_rcm_qp_gone(g, qp);
	}
	qp->vwait = false;
	vbe_qp_error(g, qp);
}

int vbe_cm_modify(struct vbe_guest *g, const struct vrdma_req *r)
{
	const struct vrdma_cmd_modify_qp *m = &r->u.modify_qp;
	struct vbe_qp *qp = VBE_GET(g->qps, VBE_MAX_QPS, r->handle);
	size_t i;

	if (!qp)
		return VRDMA_CS_NOENT;
	if (m->reserved || (m->qkey && m->state != VRDMA_MQ_UD_RTS))
		return VRDMA_CS_INVAL;
	for (i = sizeof(*m); i < sizeof(r->u.raw); i++)
		if (r->u.raw[i])
			return VRDMA_CS_INVAL;
	switch (m->state) {
	case VRDMA_MQ_RTR:
		if (qp->ud)
			return VRDMA_CS_INVAL;	/* datagrams bind to nobody */
		return vbe_qpn_rtr(g, qp, m);
	case VRDMA_MQ_UD_RTS:
		return vbe_ud_modify(g, qp, m);
	case VRDMA_MQ_ERR:
		if (qp->state == VBE_QPS_CONNECTING && !qp->vwait)
			return VRDMA_CS_INVAL;	/* vrdma_connect() owns it */
		vbe_qp_fail(g, qp);
		return VRDMA_CS_OK;
	default:
		return VRDMA_CS_INVAL;
	}
}

void vbe_qpn_lost(struct vbe_guest *g, struct vbe_qp *qp)
{
	/* No send waiting: nothing fails, the posted receives stay. */
	if (qp->lost_ms || qp->state == VBE_QPS_ERR || !qp->sq.count)
		return;
	qp->lost_ms = vplat_now_ms() + VBE_LOST_MS;
	g->node->vwaiting++;
}

/* Sends that waited too long for their peer fail as a real RC QP's would
 * after its retries.  The count of waiting QPs is recounted here, so a
 * QP that went away some other way cannot keep the scan running. */
void vbe_qpn_tick(struct vbe_node *n, int64_t now_ms)
{
	struct vbe_guest *g;
	unsigned waiting = 0;
	uint32_t i;

	if (!n->vwaiting)
		return;
	for (g = n->guests; g; g = g->next) {
		if (g->dead || !g->qps)
			continue;
		for (i = 0; i < VBE_MAX_QPS; i++) {
			struct vbe_qp *qp = &g->qps[i];

			if (qp->s.used && qp->lost_ms) {
				if (qp->state == VBE_QPS_ERR) {
					qp->lost_ms = 0;
				} else if (now_ms >= qp->lost_ms) {
					qp->lost_ms = 0;
					vbe_qp_peer_lost(g, qp);
				} else {
					waiting++;
				}
				continue;
			}
			if (!qp->s.used || !qp->vwait)
				continue;
			if (qp->state != VBE_QPS_CONNECTING) {
				qp->vwait = false;
				continue;
			}
			if (qp->sq.count && now_ms - qp->vwait_ms > VBE_VWAIT_MS) {
				vlog_info("guest %u: QP %u: peer QP %u never bound; sends fail",
					  g->domid, qp->qpn, qp->peer_qpn);
				qp->vwait = false;
				qp->conn_id = 0;	/* a device attempt still under way: orphaned */
				qp->state = VBE_QPS_RESET;	/* peer_lost acts on non-ERR */
				vbe_qp_peer_lost(g, qp);
				continue;
			}
			waiting++;
		}
	}
	n->vwaiting = waiting;
}
