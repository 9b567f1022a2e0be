// SPDX-License-Identifier: MIT
/*
 * Binding QPs of two nodes by number (MODIFY_QP RTR naming another node's
 * GID): the two vrdmads connect a device QP pair with rdma_cm, as for
 * vrdma_connect(), but nobody listens: the REQ names the QP it wants.
 *
 *   lower GID side (connector)          higher GID side (acceptor)
 *   RTR(gid B, qpn b)                   RTR(gid A, qpn a) -- before or after
 *     REQ hello{qpn a, dest_qpn b}  ->    QP b bound to (A, a)? accept
 *                                         QP b not RTR yet: wait <= 10 s
 *                                         no QP b, or b names another: REJ
 *   ESTABLISHED: both QPs RTS       <-
 *   REJ / no answer in 10 s: the first send fails RETRY_EXC, QP_ERROR
 *
 * A node's GID is its RDMA address IPv4-mapped (cm_qpn.c), so the GID a
 * guest learnt out of band is where the other vrdmad listens.
 */
#include <string.h>

#include "log.h"
#include "../device/verbs.h"
#include "../target.h"

/* Binding REQs waiting for their QP's RTR: to one guest. */
#define VBE_RQPN_PER_GUEST	32

static bool vbe_rqpn_v4(const uint8_t gid[16], struct sockaddr_in *sin)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (memcmp(gid, pfx, sizeof(pfx)))
		return false;
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	memcpy(&sin->sin_addr, gid + 12, 4);
	return true;
}

static void vbe_rqpn_gid_of(struct rdma_cm_id *id, uint8_t gid[16])
{
	const struct sockaddr *sa = rdma_get_peer_addr(id);

	memset(gid, 0, 16);
	if (sa && sa->sa_family == AF_INET) {
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	}
}

static bool vbe_rqpn_match(const struct vbe_qp *qp, const uint8_t gid[16], uint32_t qpn)
{
	return qp->vwait && qp->state == VBE_QPS_CONNECTING && !qp->conn_id &&
	       qp->peer_qpn == qpn && !memcmp(qp->peer_gid, gid, 16);
}

static void vbe_rqpn_reject(struct rdma_cm_id *id, int status)
{
	uint8_t buf[VBE_VX_REJ_MAX];
	int len = vbe_vx_rej_pack((uint16_t)status, NULL, 0, buf, sizeof(buf));

	rdma_reject(id, len > 0 ? buf : NULL, len > 0 ? (uint8_t)len : 0);
	rdma_destroy_id(id);
}

static void vbe_rqpn_accept(struct vbe_guest *g, struct vbe_qp *qp, struct rdma_cm_id *id,
			    const struct vbe_vx_hello *h)
{
	bool taken;
	int st = vbe_rcm_accept_id(g, qp, id, h, NULL, 0, &taken);

	if (!taken)
		vbe_rqpn_reject(id, st);
	if (st != VRDMA_CS_OK) {
		vlog_info("guest %u: QP %u: binding to remote QP %u failed (%d)", g->domid,
			  qp->qpn, h->qpn, st);
		/* Its RTR was answered OK: its sends fail as an RC QP's would. */
		qp->vwait = false;
		if (qp->state != VBE_QPS_ERR) {
			qp->state = VBE_QPS_RESET;
			vbe_qp_peer_lost(g, qp);
		}
	}
}

/* RTR named another node: connect, or wait for its REQ (GID order). */
int vbe_rqpn_rtr(struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vbe_node *n = g->node;
	struct vbe_vx *vx = n->vx;
	struct vbe_vx_hello h;
	struct sockaddr_in sin;
	uint32_t i;

	if (!vx || !vbe_rqpn_v4(qp->peer_gid, &sin))
		return VRDMA_CS_UNREACH;
	if (memcmp(n->gid, qp->peer_gid, 16) < 0) {
		memset(&h, 0, sizeof(h));
		h.dest_qpn = qp->peer_qpn;
		sin.sin_port = htons(vx->port);
		switch (vbe_rcm_start(g, qp, (struct sockaddr *)&sin, &h)) {
		case 0:
			return VRDMA_CS_OK;	/* ESTABLISHED binds it (cm_rdmacm.c) */
		case -ENOMEM:
			return VRDMA_CS_NOMEM;
		default:
			return VRDMA_CS_UNREACH;
		}
	}
	/* Acceptor: the peer's REQ may be here already. */
	for (i = 0; i < VBE_MAX_CONNS; i++) {
		struct vbe_vqreq *q = &vx->qreq[i];

		if (q->id && q->hello.dest_qpn == qp->qpn &&
		    vbe_rqpn_match(qp, q->gid, q->hello.qpn)) {
			struct rdma_cm_id *id = q->id;

			q->id = NULL;
			/* It waited: the policy may have changed since. */
			if (!vbe_rcm_policy_ok(g, q->hello.group, true)) {
				vbe_policy_refused(n, "guest %u (tenant %s): a waiting binding "
						   "from a remote group refused by policy",
						   g->domid, g->tenant);
				vbe_rqpn_reject(id, VRDMA_CS_ACCESS);
				break;
			}
			vbe_rqpn_accept(g, qp, id, &q->hello);
			break;
		}
	}
	return VRDMA_CS_OK;
}

/* A binding REQ: the QP it names answers now, later, or never. */
void vbe_rqpn_request(struct vbe_vx *vx, struct rdma_cm_id *id, const struct vbe_vx_hello *h)
{
	struct vbe_vqreq *free_q = NULL;
	unsigned from = 0, to = 0;
	struct vbe_guest *g;
	struct vbe_qp *qp;
	uint8_t gid[16];
	uint32_t i;

	vbe_rqpn_gid_of(id, gid);
	qp = vbe_qpn_find(vx->node, h->dest_qpn, &g);
	if (!qp || (qp->state != VBE_QPS_RESET && !vbe_rqpn_match(qp, gid, h->qpn))) {
		vbe_rqpn_reject(id, VRDMA_CS_NOENT);
		return;
	}
	if (!vbe_rcm_policy_ok(g, h->group, true)) {
		vbe_policy_refused(vx->node, "guest %u (tenant %s): binding from a remote "
				   "group refused by policy", g->domid, g->tenant);
		vbe_rqpn_reject(id, VRDMA_CS_ACCESS);
		return;
	}
	if (qp->state != VBE_QPS_RESET) {
		vbe_rqpn_accept(g, qp, id, h);
		return;
	}
	/* Not RTR yet (the out-of-band exchange raced us): wait for it, but
	 * no node and no guest of ours takes more than its share of the table. */
	for (i = 0; i < VBE_MAX_CONNS; i++) {
		struct vbe_vqreq *q = &vx->qreq[i];
		struct vbe_guest *qg;

		if (!q->id) {
			if (!free_q)
				free_q = q;
			continue;
		}
		from += !memcmp(q->gid, gid, 16);
		if (vbe_qpn_find(vx->node, q->hello.dest_qpn, &qg) && qg == g)
			to++;
	}
	if (!free_q || from >= VBE_RQPN_PER_NODE || to >= VBE_RQPN_PER_GUEST) {
		vbe_rqpn_reject(id, VRDMA_CS_REFUSED);
		return;
	}
	free_q->id = id;
	free_q->hello = *h;
	memcpy(free_q->gid, gid, 16);
	free_q->deadline = vplat_now_ms() + VBE_CONN_TIMEOUT_MS;
	id->context = NULL;	/* events on it before the answer: ignored */
}

void vbe_rqpn_tick(struct vbe_vx *vx, int64_t now_ms)
{
	uint32_t i;

	for (i = 0; i < VBE_MAX_CONNS; i++) {
		struct vbe_vqreq *q = &vx->qreq[i];

		if (q->id && q->deadline <= now_ms) {
			vbe_rqpn_reject(q->id, VRDMA_CS_TIMEDOUT);
			q->id = NULL;
		}
	}
}
