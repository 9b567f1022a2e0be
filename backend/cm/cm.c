// SPDX-License-Identifier: MIT
/*
 * Intra-node connection management (rdma_cm-like, by service name).
 *
 *   connector: CONNECT(qp, node, service, pdata)
 *       node other than "" / ours  -> cm_rdmacm.c: rdma_cm to that node
 *                                     (no RDMA device: REJECTED UNREACH)
 *       no listener on service     -> CMD_DONE NOENT (nothing follows)
 *       else                       -> CMD_DONE OK; the listener's guest gets
 *                                     CONN_REQUEST(id = conn id, peer_qpn, pdata)
 *   listener:  ACCEPT(qp, conn id, pdata) -> both QPs RTS; the connector gets
 *                                     CONNECTED(peer_qpn, pdata)
 *              REJECT(listener, conn id)  -> connector gets REJECTED REFUSED
 *   nobody answers within 10 s       -> connector gets REJECTED TIMEDOUT
 *   listener has 64 unanswered       -> connector gets REJECTED REFUSED at once
 *
 * Quotas (review I2): a guest holds at most 16 listeners and 32 pending
 * CONNECTs, so no guest takes a node table; and a tenant (all guests of
 * one uid or domain) at most a quarter of each (tenant.c, issue 12).
 *
 * Names (issue 12): each tenant group (policy.c) is a namespace of its
 * own, so nobody can take or shadow another group's service.  A CONNECT
 * to "svc" reaches its own group's listener, else the one listener of
 * another group the policy lets it reach (several: refused as
 * ambiguous); "group/svc" names the group.  The listener learns who asks
 * (CONN_FROM: node and domain, as dom0 knows them).  A CONN_REQUEST
 * waits in its vbe_conn until the listener's event ring has room (never
 * dropped).
 *
 * Connector and acceptor are remembered by (domid, devid, handle), never by
 * pointer, so either side may vanish at any time.
 */
#include <string.h>

#include "log.h"
#include "../vbe.h"
#include "../target.h"

static bool vbe_cm_name_ok(const char *s, bool empty_ok)
{
	size_t len = strnlen(s, VRDMA_NAME_MAX);

	return len < VRDMA_NAME_MAX && (empty_ok || len > 0);
}

static struct vbe_listener *vbe_cm_lis_get(struct vbe_guest *g, uint32_t h)
{
	struct vbe_listener *l = VBE_GET(g->node->lis, VBE_MAX_LISTENERS, h);

	if (!l || l->domid != g->domid || l->devid != g->devid)
		return NULL;
	return l;
}

static bool vbe_cm_mine(const struct vbe_guest *g, uint32_t domid, uint32_t devid)
{
	return g->domid == domid && g->devid == devid;
}

/* Free a conn slot; an undelivered request leaves its listener's count. */
static void vbe_cm_conn_free(struct vbe_node *n, struct vbe_conn *c)
{
	struct vbe_listener *l = &n->lis[c->lis];
	struct vbe_guest *lg;

	/* A request from another node: its rdma_cm id is refused too. */
	if (c->domid == VBE_DOMID_REMOTE)
		vbe_rcm_conn_drop(n, c, VRDMA_CS_REFUSED, NULL, 0);
	if (!c->delivered && l->s.used) {
		lg = vbe_node_guest(n, l->domid, l->devid);
		if (lg && lg->nconnq)
			lg->nconnq--;
	}
	memset(c, 0, sizeof(*c));
}

/* Tell connector QP `h` of cg that its attempt failed (QP back to RESET). */
static void vbe_cm_refuse(struct vbe_guest *cg, uint32_t h, uint64_t id, int status,
			  const uint8_t *pdata, uint32_t pdata_len)
{
	struct vbe_qp *qp;
	struct vrdma_evt e;

	/* No VBE_GET inside ?: -- cppcheck 2.x crashes on it (review). */
	if (!cg || cg->dead)
		return;
	qp = VBE_GET(cg->qps, VBE_MAX_QPS, h);
	if (!qp || qp->conn_id != id)
		return;
	qp->state = VBE_QPS_RESET;
	qp->conn_id = 0;
	memset(&e, 0, sizeof(e));
	e.type = VRDMA_EVT_REJECTED;
	e.status = (uint16_t)status;
	e.handle = qp->handle;
	e.id = id;
	if (pdata && pdata_len) {
		e.u.conn.pdata_len = pdata_len;
		memcpy(e.u.conn.pdata, pdata, pdata_len);
	}
	vbe_evt_qp(cg, qp, &e);
}

/* Finish a pending request on the connector's side and free the slot. */
static void vbe_cm_conn_end(struct vbe_node *n, struct vbe_conn *c, int status,
			    const uint8_t *pdata, uint32_t pdata_len)
{
	struct vbe_guest *cg = vbe_node_guest(n, c->domid, c->devid);
	uint32_t h = c->qp;
	uint64_t id = c->id;

	if (c->domid == VBE_DOMID_REMOTE)
		vbe_rcm_conn_drop(n, c, status, pdata, pdata_len);
	vbe_cm_conn_free(n, c);
	vbe_cm_refuse(cg, h, id, status, pdata, pdata_len);
}

/* Names that cross nodes: the hash of the name as the connector wrote
 * it, bare ("svc") or qualified ("group/svc"). */
uint32_t vbe_cm_svc_hash(const char *group, const char *svc)
{
	char full[2 * VRDMA_NAME_MAX + 2];

	if (!group)
		return vbe_policy_hash(svc);
	snprintf(full, sizeof(full), "%s/%s", group, svc);
	return vbe_policy_hash(full);
}

/*
 * The listener a CONNECT from group `from` reaches: by name (svc, from
 * this node) or by hash (hsvc, from another; qual: it named a group).
 * Its own group's, or the named group's, first; else the only one of
 * another group the policy allows.  VRDMA_CS_OK with *out, NOENT (none,
 * or several: ambiguous), ACCESS (only listeners the policy keeps it
 * from).  Names are compared before any group is looked up.
 */
int vbe_cm_resolve(struct vbe_node *n, const struct vbe_party *from, const char *svc,
		   uint32_t hsvc, bool qual, struct vbe_listener **out)
{
	const char *slash = svc ? strchr(svc, '/') : NULL;
	struct vbe_listener *first = NULL, *other = NULL;
	unsigned nother = 0, denied = 0;
	uint32_t i;

	*out = NULL;
	if (svc)
		qual = slash != NULL;
	for (i = 0; i < VBE_MAX_LISTENERS; i++) {
		struct vbe_listener *l = &n->lis[i];
		struct vbe_party lp;

		if (!l->s.used)
			continue;
		if (svc ? strcmp(l->service, qual ? slash + 1 : svc) :
			  (!qual && vbe_cm_svc_hash(NULL, l->service) != hsvc))
			continue;
		lp = vbe_policy_local(n, l->tenant);
		if (qual && (svc ? (size_t)(slash - svc) != strlen(lp.group) ||
				   strncmp(svc, lp.group, (size_t)(slash - svc)) :
				   vbe_cm_svc_hash(lp.group, l->service) != hsvc))
			continue;
		if (!vbe_policy_allow(n, from, &lp)) {
			denied++;
			continue;
		}
		if (qual || vbe_policy_same(from, &lp)) {
			if (!first)
				first = l;
		} else {
			other = l;
			nother++;
		}
	}
	if (first || nother == 1) {
		*out = first ? first : other;
		return VRDMA_CS_OK;
	}
	if (nother > 1) {
		vbe_policy_refused(n, "backend: connect to service '%.31s': %u groups listen "
				   "on it; name one as group/service", svc ? svc : "(remote)",
				   nother);
		return VRDMA_CS_NOENT;
	}
	return denied ? VRDMA_CS_ACCESS : VRDMA_CS_NOENT;
}

int vbe_cm_listen(struct vbe_guest *g, const struct vrdma_req *r, uint32_t *out)
{
	struct vbe_node *n = g->node;
	const char *svc = r->u.listen.service;
	struct vbe_party me = vbe_policy_local(n, g->tenant), lp;
	struct vbe_listener *l;
	unsigned mine = 0;
	uint32_t i;

	/* '/' is how a connector names another group's service. */
	if (!vbe_cm_name_ok(svc, false) || strchr(svc, '/'))
		return VRDMA_CS_INVAL;
	for (i = 0; i < VBE_MAX_LISTENERS; i++) {
		if (!n->lis[i].s.used)
			continue;
		/* Taken only within its group: a squatter elsewhere is no one's
		 * concern but its own group's. */
		if (!strcmp(n->lis[i].service, svc)) {
			lp = vbe_policy_local(n, n->lis[i].tenant);
			if (vbe_policy_same(&me, &lp))
				return VRDMA_CS_EXIST;
		}
		mine += vbe_cm_mine(g, n->lis[i].domid, n->lis[i].devid);
	}
	if (mine >= VBE_GUEST_LISTENERS)
		return VRDMA_CS_NOMEM;
	if (vbe_tenant_check(g, VBE_TQ_LISTENERS))
		return VRDMA_CS_NOMEM;
	i = VBE_TAKE(n->lis, VBE_MAX_LISTENERS);
	if (i == UINT32_MAX)
		return VRDMA_CS_NOMEM;
	l = &n->lis[i];
	memcpy(l->service, svc, VRDMA_NAME_MAX);
	l->domid = g->domid;
	l->devid = g->devid;
	l->handle = vbe_handle(&l->s, i);
	memcpy(l->tenant, g->tenant, sizeof(l->tenant));
	out[0] = l->handle;
	return VRDMA_CS_OK;
}

static void vbe_cm_lis_free(struct vbe_node *n, struct vbe_listener *l)
{
	uint32_t idx = l->handle & 0xffff, i;

	for (i = 0; i < VBE_MAX_CONNS; i++)
		if (n->conns[i].id && n->conns[i].lis == idx)
			vbe_cm_conn_end(n, &n->conns[i], VRDMA_CS_REFUSED, NULL, 0);
	memset((char *)l + sizeof(l->s), 0, sizeof(*l) - sizeof(l->s));
	vbe_slot_free(&l->s);
}

int vbe_cm_unlisten(struct vbe_guest *g, const struct vrdma_req *r)
{
	struct vbe_listener *l = vbe_cm_lis_get(g, r->handle);

	if (!l)
		return VRDMA_CS_NOENT;
	vbe_cm_lis_free(g->node, l);
	return VRDMA_CS_OK;
}

int vbe_cm_connect(struct vbe_guest *g, const struct vrdma_req *r, uint32_t *out,
		   struct vbe_late *late)
{
	const struct vrdma_cmd_connect *c = &r->u.connect;
	struct vbe_qp *qp = VBE_GET(g->qps, VBE_MAX_QPS, r->handle);
	struct vbe_node *n = g->node;
	struct vbe_listener *l = NULL;
	struct vbe_conn *cn = NULL;
	struct vbe_guest *lg;
	unsigned mine = 0, backlog = 0, ours = 0;
	struct vbe_party me, owner;
	static struct vlog_lim share_lim;
	uint32_t i, li;
	int st;

	(void)out;
	if (!qp)
		return VRDMA_CS_NOENT;
	if (qp->state != VBE_QPS_RESET || qp->ud || !vbe_cm_name_ok(c->node, true) ||
	    !vbe_cm_name_ok(c->service, false) || c->pdata_len > VRDMA_PDATA_MAX ||
	    c->reserved)
		return VRDMA_CS_INVAL;
	memset(&late->e, 0, sizeof(late->e));
	late->e.type = VRDMA_EVT_REJECTED;
	late->e.handle = qp->handle;
	if (c->node[0] && strcmp(c->node, n->name))
		return vbe_rcm_connect(g, qp, c, late);
	me = vbe_policy_local(n, g->tenant);
	st = vbe_cm_resolve(n, &me, c->service, 0, false, &l);
	if (st == VRDMA_CS_ACCESS)
		vbe_policy_refused(n, "guest %u (tenant %s): connect to '%.31s' refused by "
				   "policy", g->domid, g->tenant, c->service);
	if (st)
		return st;
	li = l->handle & 0xffff;
	for (i = 0; i < VBE_MAX_CONNS; i++) {
		struct vbe_conn *x = &n->conns[i];

		if (!x->id) {
			if (!cn)
				cn = x;
			continue;
		}
		mine += vbe_cm_mine(g, x->domid, x->devid);
		if (x->lis != li)
			continue;
		backlog++;
		if (x->tenant[0]) {	/* one of this node's: its group's? */
			struct vbe_party xp = vbe_policy_local(n, x->tenant);

			ours += vbe_policy_same(&xp, &me);
		}
	}
	if (!cn || mine >= VBE_GUEST_CONNS)
		return VRDMA_CS_NOMEM;
	if (vbe_tenant_check(g, VBE_TQ_CONNS))
		return VRDMA_CS_NOMEM;
	/* Another group's clients take a quarter of the backlog at most. */
	owner = vbe_policy_local(n, l->tenant);
	if (ours >= VBE_LISTEN_SHARE && !vbe_policy_same(&me, &owner)) {
		vlog_limited(&share_lim, VLOG_INFO, "guest %u (tenant %s): connect to '%.31s' "
			     "refused: its group holds %u of the listener's %u requests",
			     g->domid, g->tenant, c->service, ours, VBE_LISTEN_BACKLOG);
		backlog = VBE_LISTEN_BACKLOG;
	}
	lg = vbe_node_guest(n, l->domid, l->devid);
	if (backlog >= VBE_LISTEN_BACKLOG || !lg || lg->dead || !lg->connected) {
		/* Refused at once, as a full TCP listen queue would. */
		late->g = g;
		late->e.status = VRDMA_CS_REFUSED;
		return VRDMA_CS_OK;
	}
	cn->id = ++n->next_conn_id;
	cn->domid = g->domid;
	cn->devid = g->devid;
	cn->qp = qp->handle;
	cn->qpn = qp->qpn;
	cn->lis = li;
	cn->pdata_len = c->pdata_len;
	memcpy(cn->pdata, c->pdata, c->pdata_len);
	cn->delivered = false;
	memcpy(cn->tenant, g->tenant, sizeof(cn->tenant));
	memcpy(cn->from_node, n->name, sizeof(cn->from_node));
	cn->from_domid = g->domid;
	cn->from_devid = g->devid;
	cn->deadline = vplat_now_ms() + VBE_CONN_TIMEOUT_MS;
	qp->state = VBE_QPS_CONNECTING;
	qp->conn_id = cn->id;
	lg->nconnq++;

	/* Delivered after CMD_DONE (vbe_cm_late), or when the ring has room. */
	late->g = lg;
	late->conn = (int)(cn - n->conns);
	return VRDMA_CS_OK;
}

/* After CONNECT's CMD_DONE: the connector's REJECTED, or the request. */
void vbe_cm_late(struct vbe_node *n, struct vbe_late *late)
{
	struct vbe_qp *qp;

	(void)n;
	if (late->conn >= 0) {
		vbe_cm_deliver(late->g);
		return;
	}
	qp = VBE_GET(late->g->qps, VBE_MAX_QPS, late->e.handle);
	if (qp)
		vbe_evt_qp(late->g, qp, &late->e);
}

/* Does the policy still let c's connector reach its listener? */
static bool vbe_cm_conn_allowed(struct vbe_node *n, const struct vbe_conn *c)
{
	struct vbe_party from = c->domid == VBE_DOMID_REMOTE ?
				vbe_policy_remote(c->from_group) :
				vbe_policy_local(n, c->tenant);
	struct vbe_party to = vbe_policy_local(n, n->lis[c->lis].tenant);

	return vbe_policy_allow(n, &from, &to);
}

/* Hand g its waiting CONN_REQUESTs, oldest first, while its ring has room. */
void vbe_cm_deliver(struct vbe_guest *g)
{
	struct vbe_node *n = g->node;
	struct vrdma_evt e, f;

	while (g->nconnq && !g->dead) {
		struct vbe_conn *c = NULL;
		uint32_t i;

		for (i = 0; i < VBE_MAX_CONNS; i++) {
			struct vbe_conn *x = &n->conns[i];
			struct vbe_listener *l = &n->lis[x->lis];

			if (x->id && !x->delivered && l->s.used &&
			    vbe_cm_mine(g, l->domid, l->devid) && (!c || x->id < c->id))
				c = x;
		}
		if (!c) {
			g->nconnq = 0;	/* cannot happen; do not spin on it */
			return;
		}
		/* The policy may have changed while the request waited. */
		if (!vbe_cm_conn_allowed(n, c)) {
			vbe_policy_refused(n, "backend: a request waiting for guest %u refused: "
					   "the policy changed", g->domid);
			vbe_cm_conn_end(n, c, VRDMA_CS_ACCESS, NULL, 0);
			continue;
		}
		memset(&e, 0, sizeof(e));
		e.type = VRDMA_EVT_CONN_REQUEST;
		e.handle = n->lis[c->lis].handle;
		e.id = c->id;
		e.u.conn.peer_qpn = c->qpn;
		e.u.conn.pdata_len = c->pdata_len;
		memcpy(e.u.conn.pdata, c->pdata, c->pdata_len);
		if (g->conn_from) {
			/* Who asks, then the request: both or neither. */
			memset(&f, 0, sizeof(f));
			f.type = VRDMA_EVT_CONN_FROM;
			f.handle = e.handle;
			f.id = e.id;
			memcpy(f.u.from.node, c->from_node, sizeof(f.u.from.node));
			f.u.from.node[VRDMA_NAME_MAX - 1] = '\0';
			f.u.from.domid = c->from_domid;
			f.u.from.devid = c->from_devid;
			if (vbe_evt_post2(g, &f, &e))
				return;
		} else if (vbe_evt_post(g, &e, false)) {
			return;
		}
		c->delivered = true;
		g->nconnq--;
	}
}

static struct vbe_conn *vbe_cm_conn_find(struct vbe_guest *g, uint64_t id)
{
	struct vbe_node *n = g->node;
	uint32_t i;

	if (!id)
		return NULL;
	for (i = 0; i < VBE_MAX_CONNS; i++) {
		struct vbe_conn *c = &n->conns[i];
		struct vbe_listener *l;

		if (c->id != id)
			continue;
		l = &n->lis[c->lis];
		/* Only the listener's owner may answer. */
		if (l->s.used && l->domid == g->domid && l->devid == g->devid)
			return c;
		return NULL;
	}
	return NULL;
}

int vbe_cm_accept(struct vbe_guest *g, const struct vrdma_req *r, uint32_t *out)
{
	const struct vrdma_cmd_accept *a = &r->u.accept;
	struct vbe_qp *qp = VBE_GET(g->qps, VBE_MAX_QPS, r->handle);
	struct vbe_guest *cg;
	struct vbe_qp *cqp;
	struct vbe_conn *c;
	struct vrdma_evt e;

	if (!qp)
		return VRDMA_CS_NOENT;
	if (qp->state != VBE_QPS_RESET || qp->ud || a->pdata_len > VRDMA_PDATA_MAX ||
	    a->reserved)
		return VRDMA_CS_INVAL;
	c = vbe_cm_conn_find(g, a->conn_id);
	if (!c)
		return VRDMA_CS_NOENT;
	if (c->domid == VBE_DOMID_REMOTE) {
		int st = vbe_rcm_accept(g, qp, c, a, out);

		/* NOMEM leaves the request for a REJECT or another try. */
		if (st != VRDMA_CS_NOMEM)
			vbe_cm_conn_free(g->node, c);
		return st;
	}
	cg = vbe_node_guest(g->node, c->domid, c->devid);
	cqp = NULL;
	if (cg && !cg->dead)
		cqp = VBE_GET(cg->qps, VBE_MAX_QPS, c->qp);
	if (!cqp || cqp->conn_id != c->id) {
		vbe_cm_conn_free(g->node, c);
		return VRDMA_CS_NOENT;
	}
	vbe_cm_conn_free(g->node, c);

	cqp->conn_id = 0;
	cqp->peer_domid = g->domid;
	cqp->peer_devid = g->devid;
	cqp->peer_handle = qp->handle;
	cqp->peer_qpn = qp->qpn;
	cqp->tgt = &vbe_target_local;
	cqp->state = VBE_QPS_RTS;
	vbe_sched_held(g->node, cqp);
	qp->peer_domid = cg->domid;
	qp->peer_devid = cg->devid;
	qp->peer_handle = cqp->handle;
	qp->peer_qpn = cqp->qpn;
	qp->tgt = &vbe_target_local;
	qp->state = VBE_QPS_RTS;
	vbe_sched_held(g->node, qp);

	memset(&e, 0, sizeof(e));
	e.type = VRDMA_EVT_CONNECTED;
	e.handle = cqp->handle;
	e.id = a->conn_id;
	e.u.conn.peer_qpn = qp->qpn;
	e.u.conn.pdata_len = a->pdata_len;
	memcpy(e.u.conn.pdata, a->pdata, a->pdata_len);
	vbe_evt_qp(cg, cqp, &e);
	out[0] = cqp->qpn;

	/* WRs posted while connecting may go now. */
	cqp->tgt->sq_run(cg, cqp);
	qp->tgt->sq_run(g, qp);
	return VRDMA_CS_OK;
}

int vbe_cm_reject(struct vbe_guest *g, const struct vrdma_req *r)
{
	const struct vrdma_cmd_accept *a = &r->u.accept;
	struct vbe_listener *l = vbe_cm_lis_get(g, r->handle);
	struct vbe_conn *c;

	if (!l)
		return VRDMA_CS_NOENT;
	if (a->pdata_len > VRDMA_PDATA_MAX || a->reserved)
		return VRDMA_CS_INVAL;
	c = vbe_cm_conn_find(g, a->conn_id);
	if (!c || c->lis != (l->handle & 0xffff))
		return VRDMA_CS_NOENT;
	vbe_cm_conn_end(g->node, c, VRDMA_CS_REFUSED, a->pdata, a->pdata_len);
	return VRDMA_CS_OK;
}

/* qp is being destroyed: forget its pending request. */
void vbe_cm_qp_gone(struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vbe_node *n = g->node;
	uint32_t i;

	vbe_rcm_qp_gone(g, qp);		/* a device QP, pending or not */
	if (!qp->conn_id)
		return;
	for (i = 0; i < VBE_MAX_CONNS; i++)
		if (n->conns[i].id == qp->conn_id)
			vbe_cm_conn_free(n, &n->conns[i]);
	qp->conn_id = 0;
}

/* g is going away: its listeners close (pending connectors are refused). */
void vbe_cm_guest_gone(struct vbe_guest *g)
{
	struct vbe_node *n = g->node;
	uint32_t i;

	for (i = 0; i < VBE_MAX_LISTENERS; i++) {
		struct vbe_listener *l = &n->lis[i];

		if (l->s.used && l->domid == g->domid && l->devid == g->devid)
			vbe_cm_lis_free(n, l);
	}
	for (i = 0; i < VBE_MAX_CONNS; i++)
		if (n->conns[i].id && vbe_cm_mine(g, n->conns[i].domid, n->conns[i].devid))
			vbe_cm_conn_free(n, &n->conns[i]);
	g->nconnq = 0;
}

void vbe_cm_tick(struct vbe_node *n, int64_t now_ms)
{
	uint32_t i;

	for (i = 0; i < VBE_MAX_CONNS; i++)
		if (n->conns[i].id && n->conns[i].deadline <= now_ms)
			vbe_cm_conn_end(n, &n->conns[i], VRDMA_CS_TIMEDOUT, NULL, 0);
}
