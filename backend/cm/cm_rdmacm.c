// SPDX-License-Identifier: MIT
/*
 * Connections between nodes with librdmacm (cm.c keeps the intra-node
 * ones).  Node names resolve with getaddrinfo, so an IP works; every
 * vrdmad listens on the same port (-p).
 *
 *   connector node                         listener node
 *   CONNECT(node, svc, pdata)
 *     resolve addr, route (2 s each)
 *     device QP in the guest's PD
 *     REQ hello{qpn, pd, key table, hash(svc), pdata}  ->
 *                                          no such service: REJ NOENT
 *                                          else a vbe_conn (domid REMOTE):
 *                                          CONN_REQUEST to the listener guest
 *                                          REJECT  -> REJ REFUSED + pdata
 *                                          nobody answers in 10 s: REJ TIMEDOUT
 *                                          ACCEPT  -> device QP, REP hello
 *   ESTABLISHED: CONNECTED(peer qpn, pdata) <-
 *   REJ / errors: REJECTED (status; UNREACH if no vrdmad answered)
 *   no answer within 10 s: REJECTED TIMEDOUT
 *
 * Events are copied and acked at once, so destroying an id never waits.
 * An id's context is the handle of its vbe_vqp (0 for the listener, and
 * conn slot + 1 with the top bit set for a request awaiting its guest).
 */
#include <errno.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <string.h>

#include "log.h"
#include "../device/verbs.h"
#include "../target.h"

#define VBE_RCM_CONN_CTX	0x80000000u

static void vbe_rcm_refuse(struct vbe_vx *vx, struct vbe_vqp *vq, int status,
			   const uint8_t *pdata, uint32_t pdata_len)
{
	struct vbe_guest *g;
	struct vbe_qp *qp = vbe_vx_guest_qp(vx, vq, &g);
	struct vrdma_evt e;

	if (qp && qp->state == VBE_QPS_CONNECTING && qp->conn_id == vq->conn_id &&
	    qp->vwait) {
		/* A binding (cm_rqpn.c): its sends fail as an RC QP's would. */
		qp->vwait = false;
		qp->conn_id = 0;
		qp->state = VBE_QPS_RESET;
		vbe_qp_peer_lost(g, qp);
	} else if (qp && qp->state == VBE_QPS_CONNECTING && qp->conn_id == vq->conn_id) {
		qp->state = VBE_QPS_RESET;
		qp->conn_id = 0;
		memset(&e, 0, sizeof(e));
		e.type = VRDMA_EVT_REJECTED;
		e.status = (uint16_t)status;
		e.handle = qp->handle;
		e.id = vq->conn_id;
		if (pdata_len) {
			e.u.conn.pdata_len = pdata_len;
			memcpy(e.u.conn.pdata, pdata, pdata_len);
		}
		vbe_evt_qp(g, qp, &e);
	}
	vbe_vx_qp_free(vx, vq);
}

/*
 * Start an rdma_cm connection for guest QP qp to the vrdmad at dst: a
 * device QP, resolve address and route (events), then REQ with hello.
 * 0, or -errno with nothing left behind.
 */
int vbe_rcm_start(struct vbe_guest *g, struct vbe_qp *qp, const struct sockaddr *dst,
		  const struct vbe_vx_hello *hello)
{
	struct vbe_vx *vx = g->node->vx;
	struct sockaddr_storage src;
	uint8_t tmp[VBE_VX_HELLO_MAX];
	struct vbe_vqp *vq;
	int err;

	if (!vx)
		return -ENODEV;
	if (vbe_vx_hello_pack(hello, tmp, sizeof(tmp)) < 0)
		return -EINVAL;
	vq = vbe_vx_qp_new(vx, g, qp);
	if (!vq)
		return -ENOMEM;
	vq->connector = true;
	vq->hello = *hello;
	vq->hello.pd = (uint16_t)qp->pd;
	vq->hello.qpn = qp->qpn;
	vq->hello.rkt_rkey = vq->vg->rkt_mr->rkey;
	vq->hello.group = vbe_policy_ghash(g->node, g->tenant);
	vq->hello.domid = g->domid;
	err = rdma_create_id(vx->ech, &vq->id,
			     (void *)(uintptr_t)vbe_handle(&vq->s, (uint32_t)(vq - vx->qps)),
			     RDMA_PS_TCP);
	if (err) {
		err = -errno;
		vq->id = NULL;
		goto err_vq;
	}
	/* From our RDMA address: the route must use our device. */
	memcpy(&src, &vx->addr, sizeof(src));
	((struct sockaddr_in *)&src)->sin_port = 0;
	if (rdma_resolve_addr(vq->id, (struct sockaddr *)&src, (struct sockaddr *)dst,
			      VBE_VX_RESOLVE_MS)) {
		err = -errno;
		goto err_vq;
	}
	vq->state = VBE_VQ_ADDR;
	vq->conn_id = ++g->node->next_conn_id;
	vq->deadline = vplat_now_ms() + VBE_CONN_TIMEOUT_MS;
	qp->state = VBE_QPS_CONNECTING;
	qp->conn_id = vq->conn_id;
	return 0;

err_vq:
	vbe_vx_qp_free(vx, vq);
	return err ? err : -EIO;
}

int vbe_rcm_connect(struct vbe_guest *g, struct vbe_qp *qp,
		    const struct vrdma_cmd_connect *c, struct vbe_late *late)
{
	struct vbe_vx *vx = g->node->vx;
	struct addrinfo hints = { .ai_family = AF_INET }, *res;
	struct vbe_vx_hello h;
	char port[8];
	int err;

	late->g = g;
	late->e.status = VRDMA_CS_UNREACH;
	if (!vx)
		return VRDMA_CS_OK;
	/* "group/svc" names the group: our side of the policy before any
	 * packet (a bare name's group is known only from the answer). */
	if (strchr(c->service, '/')) {
		struct vbe_party me = vbe_policy_local(g->node, g->tenant), to;
		char grp[VRDMA_NAME_MAX];

		snprintf(grp, sizeof(grp), "%.*s", (int)(strchr(c->service, '/') - c->service),
			 c->service);
		to.group = grp;
		to.hash = vbe_policy_hash(grp);
		if (!vbe_policy_allow(g->node, &me, &to)) {
			vbe_policy_refused(g->node, "guest %u (tenant %s): connect to '%.31s' "
					   "refused by policy", g->domid, g->tenant, c->service);
			late->e.status = VRDMA_CS_ACCESS;
			return VRDMA_CS_OK;
		}
	}
	/* Numeric first: a name may wait on DNS (/etc/hosts is instant). */
	snprintf(port, sizeof(port), "%u", vx->port);
	hints.ai_flags = AI_NUMERICHOST;
	if (getaddrinfo(c->node, port, &hints, &res)) {
		hints.ai_flags = 0;
		if (getaddrinfo(c->node, port, &hints, &res))
			return VRDMA_CS_OK;
	}
	memset(&h, 0, sizeof(h));
	/* "svc" or "group/svc": the listener's node resolves the hash. */
	h.svc_hash = vbe_policy_hash(c->service);
	h.qualified = strchr(c->service, '/') != NULL;
	h.pdata_len = c->pdata_len;
	memcpy(h.pdata, c->pdata, c->pdata_len);
	err = vbe_rcm_start(g, qp, res->ai_addr, &h);
	freeaddrinfo(res);
	if (err == -ENOMEM) {
		late->g = NULL;
		return VRDMA_CS_NOMEM;
	}
	if (!err)
		late->g = NULL;	/* CONNECTED or REJECTED come from events */
	return VRDMA_CS_OK;	/* else late: REJECTED UNREACH */
}

/* Before the QP leaves INIT: rdma_cm's default for RoCE may be far
 * longer, and a lost packet then stalls the QP for that long. */
static void vbe_rcm_ack_timeout(struct rdma_cm_id *id)
{
	uint8_t t = VBE_VX_ACK_TIMEOUT;

	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t)))
		vlog_dbg("rdma: cannot set the ack timeout: %s", strerror(errno));
}

static void vbe_rcm_conn_param(struct rdma_conn_param *p, const void *pd, uint8_t len)
{
	memset(p, 0, sizeof(*p));
	p->private_data = pd;
	p->private_data_len = len;
	p->responder_resources = VBE_VX_RD_ATOM;
	p->initiator_depth = VBE_VX_RD_ATOM;
	p->retry_count = 7;
	/* Not 7 (infinite): a peer that never posts a RECV would keep this
	 * guest's SENDs, and so the node's device room, forever.  6 x the
	 * CM's RNR timer (655 ms) gives a late RECV about 4 s. */
	p->rnr_retry_count = 6;
}

static void vbe_rcm_route_ok(struct vbe_vx *vx, struct vbe_vqp *vq)
{
	struct vbe_guest *g;
	struct vbe_qp *qp = vbe_vx_guest_qp(vx, vq, &g);
	struct rdma_conn_param p;
	uint8_t buf[VBE_VX_HELLO_MAX];
	int len;

	if (!qp || qp->conn_id != vq->conn_id || qp->state != VBE_QPS_CONNECTING) {
		vbe_vx_qp_free(vx, vq);
		return;
	}
	len = vbe_vx_hello_pack(&vq->hello, buf, sizeof(buf));
	if (len < 0 || vbe_vx_qp_create(vx, vq, qp)) {
		vbe_rcm_refuse(vx, vq, VRDMA_CS_UNREACH, NULL, 0);
		return;
	}
	/* RECVs the guest posted while connecting go first. */
	qp->tgt = &vbe_target_verbs;
	vq->state = VBE_VQ_CONN;
	vbe_target_verbs.rq_posted(g, qp);
	vbe_rcm_conn_param(&p, buf, (uint8_t)len);
	vbe_rcm_ack_timeout(vq->id);
	if (rdma_connect(vq->id, &p))
		vbe_rcm_refuse(vx, vq, VRDMA_CS_UNREACH, NULL, 0);
}

/* May g's QP be connected to a guest of group `peer` on another node?
 * A service connect goes from g to the peer; a binding has no direction,
 * so either way will do. */
bool vbe_rcm_policy_ok(const struct vbe_guest *g, uint32_t peer, bool binding)
{
	struct vbe_party mine = vbe_policy_local(g->node, g->tenant);
	struct vbe_party them = vbe_policy_remote(peer);

	return binding ? vbe_policy_allow_either(g->node, &mine, &them) :
			 vbe_policy_allow(g->node, &mine, &them);
}

/* The connecting node as a listener is told: its RDMA address. */
static void vbe_rcm_peer_name(struct rdma_cm_id *id, char name[VRDMA_NAME_MAX])
{
	struct sockaddr *sa = rdma_get_peer_addr(id);

	name[0] = '\0';
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, name, VRDMA_NAME_MAX);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, name,
			  VRDMA_NAME_MAX);
	if (!name[0])
		snprintf(name, VRDMA_NAME_MAX, "remote");
}

static void vbe_rcm_established(struct vbe_vx *vx, struct vbe_vqp *vq,
				const void *pd, size_t pd_len)
{
	struct vbe_guest *g;
	struct vbe_qp *qp = vbe_vx_guest_qp(vx, vq, &g);
	struct vbe_vx_hello h;
	struct vrdma_evt e;

	if (!vq->connector) {
		vq->state = VBE_VQ_UP;	/* acceptor: already RTS at ACCEPT */
		return;
	}
	if (!qp || qp->conn_id != vq->conn_id || qp->state != VBE_QPS_CONNECTING) {
		vbe_vx_qp_free(vx, vq);
		return;
	}
	/* A binding: the peer vrdmad must have bound the QP we named. */
	if (vbe_vx_hello_unpack(pd, pd_len, &h) ||
	    (qp->vwait && h.qpn != qp->peer_qpn)) {
		vbe_rcm_refuse(vx, vq, VRDMA_CS_UNREACH, NULL, 0);
		return;
	}
	/* Our side of the policy (the peer's node checked its own). */
	if (!vbe_rcm_policy_ok(g, h.group, qp->vwait)) {
		vbe_policy_refused(g->node, "guest %u (tenant %s): connection to a remote "
				   "group refused by policy", g->domid, g->tenant);
		vbe_rcm_refuse(vx, vq, VRDMA_CS_ACCESS, NULL, 0);
		return;
	}
	vq->state = VBE_VQ_UP;
	vq->peer_qpn = h.qpn;
	vq->peer_pd = h.pd;
	vq->peer_rkt = h.rkt_rkey;
	qp->by_qpn = qp->vwait;		/* a binding: RC semantics when it is lost */
	qp->vwait = false;
	qp->conn_id = 0;
	qp->peer_domid = VBE_DOMID_REMOTE;
	qp->peer_devid = 0;
	qp->peer_handle = 0;
	qp->peer_qpn = h.qpn;
	qp->tgt = &vbe_target_verbs;
	qp->state = VBE_QPS_RTS;
	vbe_sched_held(g->node, qp);	/* queue delay from now (vbe_vx_sq_run) */
	memset(&e, 0, sizeof(e));
	e.type = VRDMA_EVT_CONNECTED;
	e.handle = qp->handle;
	e.id = vq->conn_id;
	e.u.conn.peer_qpn = h.qpn;
	e.u.conn.pdata_len = h.pdata_len;
	memcpy(e.u.conn.pdata, h.pdata, h.pdata_len);
	vbe_evt_qp(g, qp, &e);
	vq->conn_id = 0;
	/* RECVs that came after route_ok were held (CONNECTING): the peer's
	 * first SEND must find them on the device QP, not RNR until it fails. */
	qp->tgt->rq_posted(g, qp);
	qp->tgt->sq_run(g, qp);
}

static void vbe_rcm_reject_id(struct rdma_cm_id *id, int status, const uint8_t *pdata,
			      uint32_t pdata_len)
{
	uint8_t buf[VBE_VX_REJ_MAX];
	int len = vbe_vx_rej_pack((uint16_t)status, pdata, pdata_len, buf, sizeof(buf));

	rdma_reject(id, len > 0 ? buf : NULL, len > 0 ? (uint8_t)len : 0);
	rdma_destroy_id(id);
}

void vbe_rcm_reject(struct rdma_cm_id *id, int status)
{
	vbe_rcm_reject_id(id, status, NULL, 0);
}

/* A REQ from another node: find the service, queue a CONN_REQUEST. */
static void vbe_rcm_request(struct vbe_vx *vx, struct rdma_cm_id *id,
			    const void *pd, size_t pd_len)
{
	struct vbe_node *n = vx->node;
	struct vbe_listener *l = NULL;
	struct vbe_conn *cn = NULL;
	struct vbe_vx_hello h;
	struct vbe_guest *lg;
	unsigned backlog = 0, from = 0, group = 0, at_lis = 0;
	struct vbe_party them;
	char peer[VRDMA_NAME_MAX];
	uint32_t i, li;
	int st;

	if (vbe_vcl_is_hello(pd, pd_len)) {	/* a team's link (verbs_coll.c) */
		vbe_vcl_request(vx, id, pd, pd_len);
		return;
	}
	if (!vbe_vx_hello_unpack(pd, pd_len, &h) && h.dest_qpn) {
		vbe_rqpn_request(vx, id, &h);
		return;
	}
	if (vbe_vx_magic_other(pd, pd_len)) {
		vlog_limited(&vx->hello_lim, VLOG_WARN, "rdma: a request refused: the other "
			     "node's vrdmad speaks node protocol %#x, this one %#x: run one "
			     "vrdma version on every node", vbe_vx_magic_other(pd, pd_len),
			     VBE_VX_PD_MAGIC);
		vbe_rcm_reject_id(id, VRDMA_CS_REFUSED, NULL, 0);
		return;
	}
	if (vbe_vx_hello_unpack(pd, pd_len, &h) || !h.svc_hash) {
		vlog_limited(&vx->hello_lim, VLOG_INFO, "rdma: a request refused: its hello "
			     "does not parse (%zu bytes, first %#x)", pd_len,
			     pd_len ? ((const uint8_t *)pd)[0] : 0);
		vbe_rcm_reject_id(id, VRDMA_CS_REFUSED, NULL, 0);
		return;
	}
	vbe_rcm_peer_name(id, peer);
	them = vbe_policy_remote(h.group);
	st = vbe_cm_resolve(n, &them, NULL, h.svc_hash, h.qualified, &l);
	if (st) {
		if (st == VRDMA_CS_ACCESS)
			vbe_policy_refused(n, "rdma: request from %s (domain %u): refused by "
					   "policy", peer, h.domid);
		else
			vlog_limited(&vx->req_lim, VLOG_INFO, "rdma: request from %s (domain %u): "
				     "no listener for service hash %#x%s", peer, h.domid,
				     h.svc_hash, h.qualified ? " (group/svc)" : "");
		vbe_rcm_reject_id(id, st, NULL, 0);
		return;
	}
	li = l->handle & 0xffff;
	for (i = 0; i < VBE_MAX_CONNS; i++) {
		if (!n->conns[i].id) {
			if (!cn)
				cn = &n->conns[i];
			continue;
		}
		backlog += n->conns[i].lis == li;
		if (n->conns[i].domid == VBE_DOMID_REMOTE &&
		    !strcmp(n->conns[i].from_node, peer)) {
			from++;
			group += n->conns[i].from_group == h.group;
			at_lis += n->conns[i].lis == li;
		}
	}
	lg = vbe_node_guest(n, l->domid, l->devid);
	/* No other node holds more than its share of the table either, nor
	 * one group of that node more than its share of the node's, nor that
	 * node more than its share of one listener's backlog. */
	if (!cn || backlog >= VBE_LISTEN_BACKLOG || from >= VBE_RQPN_PER_NODE ||
	    group >= VBE_RQPN_PER_GROUP || at_lis >= VBE_LISTEN_SHARE || !lg || lg->dead ||
	    !lg->connected) {
		vlog_limited(&vx->req_lim, VLOG_INFO, "rdma: request from %s refused: %s", peer,
			     !cn ? "no free request slot" :
			     backlog >= VBE_LISTEN_BACKLOG ? "listener backlog full" :
			     from >= VBE_RQPN_PER_NODE || group >= VBE_RQPN_PER_GROUP ?
			     "that node's share taken" :
			     at_lis >= VBE_LISTEN_SHARE ? "that node's share of the listener taken" :
			     "the listener's guest is gone");
		vbe_rcm_reject_id(id, VRDMA_CS_REFUSED, NULL, 0);
		return;
	}
	i = (uint32_t)(cn - n->conns);
	cn->id = ++n->next_conn_id;
	cn->domid = VBE_DOMID_REMOTE;
	cn->devid = i;
	cn->qp = 0;
	cn->qpn = h.qpn;
	cn->lis = li;
	cn->pdata_len = h.pdata_len;
	memcpy(cn->pdata, h.pdata, h.pdata_len);
	cn->delivered = false;
	memcpy(cn->from_node, peer, sizeof(cn->from_node));
	cn->from_domid = h.domid;
	cn->from_devid = 0;
	cn->from_group = h.group;
	cn->deadline = vplat_now_ms() + VBE_CONN_TIMEOUT_MS;
	vx->rconn[i].id = id;
	vx->rconn[i].hello = h;
	id->context = (void *)(uintptr_t)(VBE_RCM_CONN_CTX | (i + 1));
	lg->nconnq++;
	vbe_cm_deliver(lg);
}

/* cm.c frees a remote conn (answered, timed out, listener gone). */
void vbe_rcm_conn_drop(struct vbe_node *n, struct vbe_conn *c, int status,
		       const uint8_t *pdata, uint32_t pdata_len)
{
	struct vbe_vx *vx = n->vx;
	uint32_t i = (uint32_t)(c - n->conns);

	if (!vx || !vx->rconn[i].id)
		return;
	vbe_rcm_reject_id(vx->rconn[i].id, status, pdata, pdata_len);
	vx->rconn[i].id = NULL;
}

/*
 * Answer the REQ on id (its hello h) with guest QP qp.  *taken: the id
 * belongs to the QP now (or was destroyed); else the request still waits.
 */
int vbe_rcm_accept_id(struct vbe_guest *g, struct vbe_qp *qp, struct rdma_cm_id *id,
		      const struct vbe_vx_hello *h, const uint8_t *pdata,
		      uint32_t pdata_len, bool *taken)
{
	struct vbe_vx *vx = g->node->vx;
	struct rdma_conn_param p;
	struct vbe_vx_hello mine;
	struct vbe_vqp *vq;
	uint8_t buf[VBE_VX_HELLO_MAX];
	int len;

	*taken = false;
	vq = vbe_vx_qp_new(vx, g, qp);
	if (!vq)
		return VRDMA_CS_NOMEM;	/* the request stays: REJECT or retry */
	vq->id = id;
	if (vbe_vx_qp_create(vx, vq, qp)) {
		vq->id = NULL;
		vbe_vx_qp_free(vx, vq);
		return VRDMA_CS_NOMEM;
	}
	*taken = true;
	id->context = (void *)(uintptr_t)vbe_handle(&vq->s, (uint32_t)(vq - vx->qps));
	memset(&mine, 0, sizeof(mine));
	mine.pd = (uint16_t)qp->pd;
	mine.qpn = qp->qpn;
	mine.rkt_rkey = vq->vg->rkt_mr->rkey;
	mine.group = vbe_policy_ghash(g->node, g->tenant);
	mine.domid = g->domid;
	mine.pdata_len = pdata_len;
	memcpy(mine.pdata, pdata, pdata_len);
	len = vbe_vx_hello_pack(&mine, buf, sizeof(buf));
	vq->peer_qpn = h->qpn;
	vq->peer_pd = h->pd;
	vq->peer_rkt = h->rkt_rkey;
	vq->state = VBE_VQ_UP;
	qp->by_qpn = qp->vwait;
	qp->vwait = false;
	qp->peer_domid = VBE_DOMID_REMOTE;
	qp->peer_devid = 0;
	qp->peer_handle = 0;
	qp->peer_qpn = h->qpn;
	qp->tgt = &vbe_target_verbs;
	qp->state = VBE_QPS_RTS;
	vbe_sched_held(g->node, qp);	/* queue delay from now (vbe_vx_sq_run) */
	qp->tgt->rq_posted(g, qp);
	vbe_rcm_conn_param(&p, buf, (uint8_t)(len > 0 ? len : 0));
	vbe_rcm_ack_timeout(id);
	/* rdma_accept moves the QP to RTR and RTS before the REP leaves. */
	if (len < 0 || rdma_accept(id, &p)) {
		vbe_vx_qp_free(vx, vq);
		qp->state = VBE_QPS_RESET;
		qp->by_qpn = false;
		qp->tgt = NULL;
		qp->peer_qpn = 0;
		return VRDMA_CS_NOENT;	/* the id went with vq */
	}
	qp->tgt->sq_run(g, qp);
	return VRDMA_CS_OK;
}

int vbe_rcm_accept(struct vbe_guest *g, struct vbe_qp *qp, struct vbe_conn *c,
		   const struct vrdma_cmd_accept *a, uint32_t *out)
{
	struct vbe_node *n = g->node;
	struct vbe_vx *vx = n->vx;
	uint32_t i = (uint32_t)(c - n->conns);
	bool taken;
	int st;

	if (!vx || !vx->rconn[i].id)
		return VRDMA_CS_NOENT;
	st = vbe_rcm_accept_id(g, qp, vx->rconn[i].id, &vx->rconn[i].hello, a->pdata,
			       a->pdata_len, &taken);
	/* The id is the QP's now: conn_free must not reject it. */
	if (taken)
		vx->rconn[i].id = NULL;
	if (st == VRDMA_CS_OK)
		out[0] = vx->rconn[i].hello.qpn;
	return st;
}

/* A guest QP goes away: its device QP, pending or not, goes too. */
void vbe_rcm_qp_gone(struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vbe_vx *vx = g->node->vx;
	struct vbe_vqp *vq;

	if (vx && (vq = vbe_vx_qp_find(vx, g, qp)))
		vbe_vx_qp_free(vx, vq);
}

static void vbe_rcm_event(struct vbe_vx *vx, enum rdma_cm_event_type type,
			  struct rdma_cm_id *id, uintptr_t ctx, int status,
			  const uint8_t *pd, size_t pd_len)
{
	struct vbe_vqp *vq;
	uint8_t rpd[VRDMA_PDATA_MAX];
	uint32_t rlen;
	uint16_t rst;

	if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		vbe_rcm_request(vx, id, pd, pd_len);
		return;
	}
	if (id == vx->lis)
		return;
	if (ctx & VBE_VCL_CTX) {
		vbe_vcl_event(vx, type, id, ctx, pd, pd_len);
		return;
	}
	if (type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
		vlog_err("rdma: device removed; remote connections fail");
		return;
	}
	if (ctx & VBE_RCM_CONN_CTX) {
		/* A request whose connector vanished before the answer. */
		uint32_t i = (uint32_t)(ctx & ~VBE_RCM_CONN_CTX) - 1;

		if (i < VBE_MAX_CONNS && vx->rconn[i].id == id &&
		    (type == RDMA_CM_EVENT_DISCONNECTED || type == RDMA_CM_EVENT_TIMEWAIT_EXIT))
			vlog_dbg("rdma: request %u: peer left", i);
		return;
	}
	vq = VBE_GET(vx->qps, VBE_VX_MAX_QPS, (uint32_t)ctx);
	if (!vq || vq->id != id)
		return;
	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		vq->state = VBE_VQ_ROUTE;
		if (rdma_resolve_route(id, VBE_VX_RESOLVE_MS))
			vbe_rcm_refuse(vx, vq, VRDMA_CS_UNREACH, NULL, 0);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		vbe_rcm_route_ok(vx, vq);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		vbe_rcm_established(vx, vq, pd, pd_len);
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (vbe_vx_rej_unpack(pd, pd_len, &rst, rpd, &rlen)) {
			if (vbe_vx_magic_other(pd, pd_len))
				vlog_limited(&vx->rej_lim, VLOG_WARN, "rdma: the other node's "
					     "vrdmad speaks node protocol %#x, this one %#x: run "
					     "one vrdma version on every node",
					     vbe_vx_magic_other(pd, pd_len), VBE_VX_PD_MAGIC);
			vlog_dbg("rdma: rejected without vrdmad data (status %d)", status);
			rst = VRDMA_CS_UNREACH;
		}
		vlog_limited(&vx->rej_lim, VLOG_INFO, "rdma: a connect was rejected by the "
			     "other node (status %u)", rst);
		vbe_rcm_refuse(vx, vq, rst, rpd, rlen);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		if (vq->connector && vq->state != VBE_VQ_UP)
			vbe_rcm_refuse(vx, vq, VRDMA_CS_UNREACH, NULL, 0);
		else
			vbe_vx_qp_lost(vx, vq, false);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		vbe_vx_qp_lost(vx, vq, true);
		break;
	default:
		break;
	}
}

void vbe_rcm_events(struct vbe_vx *vx)
{
	struct rdma_cm_event *ev;
	unsigned budget = 256;	/* the rest on the next readiness */

	while (budget-- && !rdma_get_cm_event(vx->ech, &ev)) {
		enum rdma_cm_event_type type = ev->event;
		struct rdma_cm_id *id = ev->id;
		uintptr_t ctx = (uintptr_t)id->context;
		int status = ev->status;
		uint8_t pd[256];
		size_t len = ev->param.conn.private_data_len;

		/* UD params never come here: PS_TCP only. */
		if (len > sizeof(pd))
			len = sizeof(pd);
		if (len && ev->param.conn.private_data)
			memcpy(pd, ev->param.conn.private_data, len);
		else
			len = 0;
		vlog_dbg("rdma: cm event %s status %d", rdma_event_str(type), status);
		rdma_ack_cm_event(ev);
		vbe_rcm_event(vx, type, id, ctx, status, pd, len);
	}
}

/* Connector attempts nobody answered: REJECTED TIMEDOUT. */
void vbe_rcm_tick(struct vbe_vx *vx, int64_t now_ms)
{
	uint32_t i;

	vbe_rqpn_tick(vx, now_ms);
	vbe_vcl_tick(vx, now_ms);
	for (i = 0; i < VBE_VX_MAX_QPS; i++) {
		struct vbe_vqp *vq = &vx->qps[i];

		if (vq->s.used && vq->connector && vq->state != VBE_VQ_UP &&
		    vq->state != VBE_VQ_DOWN && vq->deadline <= now_ms)
			vbe_rcm_refuse(vx, vq, VRDMA_CS_TIMEDOUT, NULL, 0);
	}
}
