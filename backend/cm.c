// SPDX-License-Identifier: MIT
/*
 * Intra-node connection management (rdma_cm-like, by service name).
 *
 *   connector: CONNECT(qp, node, service, pdata)
 *       node other than "" / ours  -> CMD_DONE OK, then REJECTED UNREACH
 *                                     (issue 4: rdmacm to the other node)
 *       no listener on service     -> CMD_DONE NOENT (nothing follows)
 *       else                       -> CMD_DONE OK; the listener's guest gets
 *                                     CONN_REQUEST(id = conn id, peer_qpn, pdata)
 *   listener:  ACCEPT(qp, conn id, pdata) -> both QPs RTS; the connector gets
 *                                     CONNECTED(peer_qpn, pdata)
 *              REJECT(listener, conn id)  -> connector gets REJECTED REFUSED
 *   nobody answers within 10 s       -> connector gets REJECTED TIMEDOUT
 *
 * Connector and acceptor are remembered by (domid, devid, handle), never by
 * pointer, so either side may vanish at any time.
 */
#include <string.h>

#include "log.h"
#include "vbe.h"
#include "target.h"

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

/* Finish a pending request on the connector's side and free the slot. */
static void vbe_cm_conn_end(struct vbe_node *n, struct vbe_conn *c, int status,
			    const uint8_t *pdata, uint32_t pdata_len)
{
	struct vbe_guest *cg = vbe_node_guest(n, c->domid, c->devid);
	struct vbe_qp *qp = cg && !cg->dead ? VBE_GET(cg->qps, VBE_MAX_QPS, c->qp) : NULL;
	struct vrdma_evt e;

	if (qp && qp->conn_id == c->id) {
		qp->state = VBE_QPS_RESET;
		qp->conn_id = 0;
		memset(&e, 0, sizeof(e));
		e.type = VRDMA_EVT_REJECTED;
		e.status = (uint16_t)status;
		e.handle = qp->handle;
		e.id = c->id;
		if (pdata && pdata_len) {
			e.u.conn.pdata_len = pdata_len;
			memcpy(e.u.conn.pdata, pdata, pdata_len);
		}
		vbe_evt_post(cg, &e, false);
	}
	memset(c, 0, sizeof(*c));
}

int vbe_cm_listen(struct vbe_guest *g, const struct vrdma_req *r, uint32_t *out)
{
	struct vbe_node *n = g->node;
	const char *svc = r->u.listen.service;
	struct vbe_listener *l;
	uint32_t i;

	if (!vbe_cm_name_ok(svc, false))
		return VRDMA_CS_INVAL;
	for (i = 0; i < VBE_MAX_LISTENERS; i++)
		if (n->lis[i].s.used && !strcmp(n->lis[i].service, svc))
			return VRDMA_CS_EXIST;
	i = VBE_TAKE(n->lis, VBE_MAX_LISTENERS);
	if (i == UINT32_MAX)
		return VRDMA_CS_NOMEM;
	l = &n->lis[i];
	memcpy(l->service, svc, VRDMA_NAME_MAX);
	l->domid = g->domid;
	l->devid = g->devid;
	l->handle = vbe_handle(&l->s, i);
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
	uint32_t i;

	(void)out;
	if (!qp)
		return VRDMA_CS_NOENT;
	if (qp->state != VBE_QPS_RESET || !vbe_cm_name_ok(c->node, true) ||
	    !vbe_cm_name_ok(c->service, false) || c->pdata_len > VRDMA_PDATA_MAX ||
	    c->reserved)
		return VRDMA_CS_INVAL;
	memset(&late->e, 0, sizeof(late->e));
	if (c->node[0] && strcmp(c->node, n->name)) {
		late->g = g;
		late->e.type = VRDMA_EVT_REJECTED;
		late->e.status = VRDMA_CS_UNREACH;
		late->e.handle = qp->handle;
		return VRDMA_CS_OK;
	}
	for (i = 0; i < VBE_MAX_LISTENERS && !l; i++)
		if (n->lis[i].s.used && !strcmp(n->lis[i].service, c->service))
			l = &n->lis[i];
	if (!l)
		return VRDMA_CS_NOENT;
	for (i = 0; i < VBE_MAX_CONNS && !cn; i++)
		if (!n->conns[i].id)
			cn = &n->conns[i];
	if (!cn)
		return VRDMA_CS_NOMEM;
	cn->id = ++n->next_conn_id;
	cn->domid = g->domid;
	cn->devid = g->devid;
	cn->qp = qp->handle;
	cn->qpn = qp->qpn;
	cn->lis = l->handle & 0xffff;
	cn->deadline = vplat_now_ms() + VBE_CONN_TIMEOUT_MS;
	qp->state = VBE_QPS_CONNECTING;
	qp->conn_id = cn->id;

	late->g = vbe_node_guest(n, l->domid, l->devid);
	late->conn = (int)(cn - n->conns);
	late->e.type = VRDMA_EVT_CONN_REQUEST;
	late->e.handle = l->handle;
	late->e.id = cn->id;
	late->e.u.conn.peer_qpn = qp->qpn;
	late->e.u.conn.pdata_len = c->pdata_len;
	memcpy(late->e.u.conn.pdata, c->pdata, c->pdata_len);
	return VRDMA_CS_OK;
}

/* After CONNECT's CMD_DONE: deliver; an undeliverable request is refused. */
void vbe_cm_late(struct vbe_node *n, struct vbe_late *late)
{
	int err = late->g ? vbe_evt_post(late->g, &late->e, false) : -1;

	if (err && late->conn >= 0 && n->conns[late->conn].id == late->e.id) {
		vlog_info("connection request %llu undeliverable: refused",
			  (unsigned long long)late->e.id);
		vbe_cm_conn_end(n, &n->conns[late->conn], VRDMA_CS_REFUSED, NULL, 0);
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
	if (qp->state != VBE_QPS_RESET || a->pdata_len > VRDMA_PDATA_MAX || a->reserved)
		return VRDMA_CS_INVAL;
	c = vbe_cm_conn_find(g, a->conn_id);
	if (!c)
		return VRDMA_CS_NOENT;
	cg = vbe_node_guest(g->node, c->domid, c->devid);
	cqp = cg && !cg->dead ? VBE_GET(cg->qps, VBE_MAX_QPS, c->qp) : NULL;
	if (!cqp || cqp->conn_id != c->id) {
		memset(c, 0, sizeof(*c));
		return VRDMA_CS_NOENT;
	}
	memset(c, 0, sizeof(*c));

	cqp->conn_id = 0;
	cqp->peer_domid = g->domid;
	cqp->peer_devid = g->devid;
	cqp->peer_handle = qp->handle;
	cqp->peer_qpn = qp->qpn;
	cqp->tgt = &vbe_target_local;
	cqp->state = VBE_QPS_RTS;
	qp->peer_domid = cg->domid;
	qp->peer_devid = cg->devid;
	qp->peer_handle = cqp->handle;
	qp->peer_qpn = cqp->qpn;
	qp->tgt = &vbe_target_local;
	qp->state = VBE_QPS_RTS;

	memset(&e, 0, sizeof(e));
	e.type = VRDMA_EVT_CONNECTED;
	e.handle = cqp->handle;
	e.id = a->conn_id;
	e.u.conn.peer_qpn = qp->qpn;
	e.u.conn.pdata_len = a->pdata_len;
	memcpy(e.u.conn.pdata, a->pdata, a->pdata_len);
	vbe_evt_post(cg, &e, false);
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

	if (!qp->conn_id)
		return;
	for (i = 0; i < VBE_MAX_CONNS; i++)
		if (n->conns[i].id == qp->conn_id)
			memset(&n->conns[i], 0, sizeof(n->conns[i]));
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
		if (n->conns[i].id && n->conns[i].domid == g->domid &&
		    n->conns[i].devid == g->devid)
			memset(&n->conns[i], 0, sizeof(n->conns[i]));
}

void vbe_cm_tick(struct vbe_node *n, int64_t now_ms)
{
	uint32_t i;

	for (i = 0; i < VBE_MAX_CONNS; i++)
		if (n->conns[i].id && n->conns[i].deadline <= now_ms)
			vbe_cm_conn_end(n, &n->conns[i], VRDMA_CS_TIMEDOUT, NULL, 0);
}
