// SPDX-License-Identifier: MIT
/*
 * Datagrams between guests of different nodes (verbs_ud.h; docs/rdma.md
 * "Datagrams between nodes").  The node's vrdmad owns one device UD QP,
 * one CQ on the device's completion channel, and one registered pool of
 * VBE_VUD_RECVS + VBE_VUD_SENDS buffers (VBE_VUD_BUF bytes each): its
 * dom0 memory is fixed at open.
 *
 * Sending: the guest's payload is copied into a free send buffer behind
 * the header and posted to the destination node's vrdmad QP.  Which QP,
 * and the device address handle to it, the peer table says; a node not
 * in it is resolved as rdma_cm resolves a UD service (RDMA_PS_UDP at the
 * vrdmads' rdma port: address, route, SIDR), the node GID being the
 * IPv4-mapped RDMA address vrdmad listens on (vbe_vx_gid).  While that
 * runs, up to VBE_VUD_HOLD datagrams wait for it in their send buffers;
 * all of it is non-blocking and bounded by VBE_VX_RESOLVE_MS.  No free
 * buffer, a full hold, a node that does not resolve, a device that
 * refuses the send: the datagram is dropped and counted.
 *
 * Receiving: every receive buffer stays posted; a completion's buffer is
 * parsed (verbs_udhdr.c), handed to local/ud.c for the checks any
 * datagram gets and copied into the guest's receive there, then posted
 * again.  A listener on RDMA_PS_UDP answers other nodes' resolutions
 * with our QP number; it grants nothing: each datagram is checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "log.h"
#include "verbs.h"
#include "verbs_ud.h"
#include "../local/local.h"

#define VBE_VUD_RECVS		64
#define VBE_VUD_SENDS		64
#define VBE_VUD_PEERS		16	/* nodes whose address handle we keep */
#define VBE_VUD_HOLD		8	/* datagrams waiting for one node's resolution */
#define VBE_VUD_RETRY_MS	1000	/* a node that did not resolve: asked again after */
#define VBE_VUD_QKEY		0x01234567u	/* the kernel's RDMA_UDP_QKEY (SIDR) */

enum { VBE_VUD_WR_RECV = 1, VBE_VUD_WR_SEND = 2 };

enum vbe_vud_state { VBE_VUD_FREE, VBE_VUD_RESOLVING, VBE_VUD_UP, VBE_VUD_FAILED };

struct vbe_vud_peer {
	uint8_t gid[16];
	enum vbe_vud_state state;
	struct rdma_cm_id *id;		/* RESOLVING */
	struct ibv_ah *ah;		/* UP */
	uint32_t qpn, qkey;
	int64_t deadline;		/* RESOLVING: give up; FAILED: forget */
	int64_t used;			/* the least used UP one makes room */
	uint16_t held[VBE_VUD_HOLD];	/* send buffers waiting for UP */
	unsigned nheld;
};

struct vbe_vud {
	struct rdma_event_channel *ech;
	struct rdma_cm_id *lis;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf;			/* receives, then sends */
	struct ibv_mr *mr;
	uint32_t len[VBE_VUD_SENDS];	/* header + payload of each send buffer */
	uint16_t free[VBE_VUD_SENDS];	/* free send buffers */
	unsigned nfree;
	uint32_t max_payload;		/* the device's MTU less the header */
	uint8_t port;
	struct vbe_vud_peer peer[VBE_VUD_PEERS];
	struct { uint64_t tx, rx, tx_drop, rx_bad, rx_drop; } ctr;
	struct vlog_lim lim;		/* a peer's bad datagrams */
	struct vlog_lim res_lim;	/* nodes that did not resolve */
};

static uint8_t *vbe_vud_rbuf(struct vbe_vud *u, uint32_t i)
{
	return u->buf + (size_t)i * VBE_VUD_BUF;
}

static uint8_t *vbe_vud_sbuf(struct vbe_vud *u, uint32_t i)
{
	return u->buf + (size_t)(VBE_VUD_RECVS + i) * VBE_VUD_BUF;
}

static int vbe_vud_post_recv(struct vbe_vud *u, uint32_t i)
{
	struct ibv_sge sg = {
		.addr = (uintptr_t)vbe_vud_rbuf(u, i), .length = VBE_VUD_BUF, .lkey = u->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)VBE_VUD_WR_RECV << 32 | i,
				  .sg_list = &sg, .num_sge = 1 }, *bad;

	return ibv_post_recv(u->qp, &wr, &bad) ? -EIO : 0;
}

/* RESET -> INIT -> RTR -> RTS, Q_Key VBE_VUD_QKEY: what SIDR tells peers. */
static int vbe_vud_qp_up(struct vbe_vud *u)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = u->port;
	a.qkey = VBE_VUD_QKEY;
	if (ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_QKEY))
		return -EIO;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(u->qp, &a, IBV_QP_STATE))
		return -EIO;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) ? -EIO : 0;
}

static int vbe_vud_listen(struct vbe_vx *vx, struct vbe_vud *u)
{
	if (rdma_create_id(u->ech, &u->lis, vx, RDMA_PS_UDP) ||
	    rdma_bind_addr(u->lis, (struct sockaddr *)&vx->addr) ||
	    rdma_listen(u->lis, VBE_LISTEN_BACKLOG))
		return -errno;
	return 0;
}

int vbe_vud_open(struct vbe_vx *vx)
{
	const size_t len = (size_t)(VBE_VUD_RECVS + VBE_VUD_SENDS) * VBE_VUD_BUF;
	struct ibv_qp_init_attr qa;
	struct ibv_port_attr pa;
	struct vbe_vud *u;
	uint32_t i, mtu;
	int err = -ENOMEM;
	void *p;

	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	if (posix_memalign(&p, VRDMA_PAGE_SIZE, len))
		goto err_free;
	u->buf = p;
	memset(u->buf, 0, len);
	u->port = vx->lis->port_num ? vx->lis->port_num : 1;
	err = -EIO;
	if (ibv_query_port(vx->ctx, u->port, &pa))
		goto err_buf;
	mtu = 128u << pa.active_mtu;		/* IBV_MTU_256 = 1 ... */
	if (mtu <= VBE_VUD_HDR)
		goto err_buf;
	u->max_payload = mtu - VBE_VUD_HDR < VRDMA_UD_MTU ? mtu - VBE_VUD_HDR : VRDMA_UD_MTU;
	u->ech = rdma_create_event_channel();
	if (!u->ech)
		goto err_buf;
	u->pd = ibv_alloc_pd(vx->ctx);
	if (!u->pd)
		goto err_ech;
	u->mr = ibv_reg_mr(u->pd, u->buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (!u->mr)
		goto err_pd;
	u->cq = ibv_create_cq(vx->ctx, VBE_VUD_RECVS + VBE_VUD_SENDS, NULL, vx->cch, 0);
	if (!u->cq)
		goto err_mr;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = u->cq;
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = VBE_VUD_SENDS;
	qa.cap.max_recv_wr = VBE_VUD_RECVS;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	u->qp = ibv_create_qp(u->pd, &qa);
	if (!u->qp)
		goto err_cq;
	err = vbe_vud_qp_up(u);
	for (i = 0; !err && i < VBE_VUD_RECVS; i++)
		err = vbe_vud_post_recv(u, i);
	if (!err)
		err = ibv_req_notify_cq(u->cq, 0) ? -EIO : 0;
	if (!err) {
		int fl = fcntl(u->ech->fd, F_GETFL);

		err = fl < 0 || fcntl(u->ech->fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
	}
	if (!err)
		err = vbe_vud_listen(vx, u);
	if (err)
		goto err_qp;
	for (i = 0; i < VBE_VUD_SENDS; i++)
		u->free[i] = (uint16_t)i;
	u->nfree = VBE_VUD_SENDS;
	vx->ud = u;
	vlog_info("rdma: datagrams between nodes on UD QP %u (payload up to %u bytes)",
		  u->qp->qp_num, u->max_payload);
	return 0;

err_qp:
	if (u->lis)
		rdma_destroy_id(u->lis);
	ibv_destroy_qp(u->qp);
err_cq:
	ibv_destroy_cq(u->cq);
err_mr:
	ibv_dereg_mr(u->mr);
err_pd:
	ibv_dealloc_pd(u->pd);
err_ech:
	rdma_destroy_event_channel(u->ech);
err_buf:
	free(u->buf);
err_free:
	free(u);
	return err;
}

/* At vrdmad's exit, after the reaper stopped: here may wait. */
void vbe_vud_close(struct vbe_vx *vx)
{
	struct vbe_vud *u = vx->ud;
	unsigned i;

	if (!u)
		return;
	for (i = 0; i < VBE_VUD_PEERS; i++) {
		if (u->peer[i].id)
			rdma_destroy_id(u->peer[i].id);
		if (u->peer[i].ah)
			ibv_destroy_ah(u->peer[i].ah);
	}
	rdma_destroy_id(u->lis);
	ibv_destroy_qp(u->qp);
	ibv_destroy_cq(u->cq);
	ibv_dereg_mr(u->mr);
	ibv_dealloc_pd(u->pd);
	rdma_destroy_event_channel(u->ech);
	free(u->buf);
	free(u);
	vx->ud = NULL;
}

int vbe_vud_fd(const struct vbe_vx *vx)
{
	return vx->ud ? vx->ud->ech->fd : -1;
}

/* CQ events of our CQ: acked at once, the poll reads it. */
bool vbe_vud_cq_event(struct vbe_vx *vx, struct ibv_cq *cq)
{
	if (!vx->ud || cq != vx->ud->cq)
		return false;
	ibv_ack_cq_events(cq, 1);
	return true;
}

/* ---- sending ---- */

static void vbe_vud_give(struct vbe_vud *u, uint16_t i)
{
	u->free[u->nfree++] = i;
}

static void vbe_vud_post(struct vbe_vud *u, struct vbe_vud_peer *p, uint16_t i)
{
	struct ibv_sge sg = {
		.addr = (uintptr_t)vbe_vud_sbuf(u, i), .length = u->len[i], .lkey = u->mr->lkey,
	};
	struct ibv_send_wr wr = { .wr_id = (uint64_t)VBE_VUD_WR_SEND << 32 | i,
				  .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.ud.ah = p->ah;
	wr.wr.ud.remote_qpn = p->qpn;
	wr.wr.ud.remote_qkey = p->qkey;
	if (ibv_post_send(u->qp, &wr, &bad)) {
		u->ctr.tx_drop++;
		vbe_vud_give(u, i);
		return;
	}
	u->ctr.tx++;
}

/* The peer entry's datagrams held for it: sent (UP) or dropped. */
static void vbe_vud_flush(struct vbe_vud *u, struct vbe_vud_peer *p)
{
	unsigned k;

	for (k = 0; k < p->nheld; k++) {
		if (p->state == VBE_VUD_UP) {
			vbe_vud_post(u, p, p->held[k]);
		} else {
			u->ctr.tx_drop++;
			vbe_vud_give(u, p->held[k]);
		}
	}
	p->nheld = 0;
}

static void vbe_vud_fail(struct vbe_vx *vx, struct vbe_vud_peer *p, const char *why)
{
	struct vbe_vud *u = vx->ud;
	char a[INET_ADDRSTRLEN];

	vlog_limited(&u->res_lim, VLOG_INFO, "rdma: datagrams to node %s: %s; %u dropped",
		     inet_ntop(AF_INET, p->gid + 12, a, sizeof(a)) ? a : "?", why, p->nheld);
	if (p->id)
		vbe_reap_qp(vx, p->id, false, NULL, 0);	/* no QP: the id alone */
	p->id = NULL;
	p->state = VBE_VUD_FAILED;
	p->deadline = vx->node->now_ms + VBE_VUD_RETRY_MS;
	vbe_vud_flush(u, p);
}

/* Start resolving gid (IPv4-mapped: the node's RDMA address) into p. */
static int vbe_vud_resolve(struct vbe_vx *vx, struct vbe_vud_peer *p, const uint8_t *gid)
{
	static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff };
	struct sockaddr_in src, dst;

	if (memcmp(gid, v4, sizeof(v4)) || vx->addr.ss_family != AF_INET)
		return -EAFNOSUPPORT;
	memcpy(&src, &vx->addr, sizeof(src));
	src.sin_port = 0;
	memset(&dst, 0, sizeof(dst));
	dst.sin_family = AF_INET;
	dst.sin_port = htons(vx->port);
	memcpy(&dst.sin_addr, gid + 12, 4);
	memset(p, 0, sizeof(*p));
	memcpy(p->gid, gid, sizeof(p->gid));
	if (rdma_create_id(vx->ud->ech, &p->id, p, RDMA_PS_UDP))
		return -errno;
	if (rdma_resolve_addr(p->id, (struct sockaddr *)&src, (struct sockaddr *)&dst,
			      VBE_VX_RESOLVE_MS)) {
		vbe_reap_qp(vx, p->id, false, NULL, 0);
		p->id = NULL;
		return -errno;
	}
	p->state = VBE_VUD_RESOLVING;
	p->deadline = vx->node->now_ms + 3 * VBE_VX_RESOLVE_MS;
	return 0;
}

/* gid's entry, made (and its resolution started) if need be; NULL: no room. */
static struct vbe_vud_peer *vbe_vud_peer(struct vbe_vx *vx, const uint8_t *gid)
{
	struct vbe_vud *u = vx->ud;
	struct vbe_vud_peer *p, *room = NULL;
	unsigned i;

	for (i = 0; i < VBE_VUD_PEERS; i++) {
		p = &u->peer[i];
		if (p->state != VBE_VUD_FREE && !memcmp(p->gid, gid, sizeof(p->gid)))
			return p;
		if (p->state == VBE_VUD_FREE)
			room = p;
		else if (p->state == VBE_VUD_UP && (!room || (room->state == VBE_VUD_UP &&
							    p->used < room->used)))
			room = p;
	}
	if (!room)
		return NULL;
	if (room->ah)
		ibv_destroy_ah(room->ah);
	room->ah = NULL;
	room->state = VBE_VUD_FREE;
	if (vbe_vud_resolve(vx, room, gid)) {
		memset(room, 0, sizeof(*room));
		return NULL;
	}
	return room;
}

static void vbe_vud_drop(struct vbe_guest *g, const char *why, uint32_t qpn)
{
	g->ctr.ud_tx_drop++;
	vlog_dbg("guest %u: datagram to QP %u of another node dropped: %s", g->domid, qpn, why);
}

void vbe_vud_send(struct vbe_guest *g, struct vbe_qp *qp, const struct vbe_wqe *w,
		  const struct vbe_piece *pc, unsigned np, uint64_t total)
{
	struct vbe_vx *vx = g->node->vx;
	uint32_t qpn = w->wr.ud.remote_qpn, qkey = w->wr.ud.remote_qkey;
	struct vbe_vud_hdr h;
	struct vbe_vud_peer *p;
	struct vbe_vud *u;
	uint8_t *b;
	uint16_t i;
	unsigned k;

	if (!vx || !vx->ud) {
		vbe_vud_drop(g, "no RDMA device for datagrams", qpn);
		return;
	}
	u = vx->ud;
	if (!qpn || qpn >= 1u << 24) {
		vbe_vud_drop(g, "no such QP number", qpn);
		return;
	}
	if (total > u->max_payload) {
		vbe_vud_drop(g, "larger than the device's MTU", qpn);
		return;
	}
	if (!u->nfree) {
		vbe_vud_drop(g, "no free device send buffer", qpn);
		return;
	}
	p = vbe_vud_peer(vx, w->wr.ud.dgid);
	if (!p || p->state == VBE_VUD_FAILED ||
	    (p->state == VBE_VUD_RESOLVING && p->nheld == VBE_VUD_HOLD)) {
		vbe_vud_drop(g, !p ? "node not reachable by datagrams" :
			     p->state == VBE_VUD_FAILED ? "node did not resolve" :
			     "node still resolving", qpn);
		return;
	}
	i = u->free[--u->nfree];
	memset(&h, 0, sizeof(h));
	h.dqpn = qpn;
	h.sqpn = qp->qpn;
	h.qkey = qkey & VRDMA_QKEY_OWN ? qp->qkey : qkey;
	h.imm = w->wr.imm_data;
	h.has_imm = w->opcode == VRDMA_OP_SEND_IMM;
	h.group = vbe_policy_ghash(g->node, g->tenant);
	h.len = (uint32_t)total;
	b = vbe_vud_sbuf(u, i) + VRDMA_GRH_LEN;
	vbe_vud_pack(&h, b);
	for (b += VBE_VUD_HDR, k = 0; k < np; b += pc[k].len, k++)
		memcpy(b, pc[k].p, pc[k].len);
	u->len[i] = VBE_VUD_HDR + (uint32_t)total;
	g->ctr.ud_tx++;
	g->ctr.tx_bytes += total;
	g->ctr.tx_ops++;
	if (p->state == VBE_VUD_RESOLVING) {
		p->held[p->nheld++] = i;
		return;
	}
	p->used = vx->node->now_ms;
	vbe_vud_post(u, p, i);
}

/* ---- rdma_cm: resolving nodes, answering their resolutions ---- */

static struct vbe_vud_peer *vbe_vud_of_id(struct vbe_vud *u, struct rdma_cm_id *id)
{
	struct vbe_vud_peer *p = id->context;

	if (p < u->peer || p >= u->peer + VBE_VUD_PEERS || p->id != id)
		return NULL;
	return p;
}

/* Another node's vrdmad asks for our QP number (SIDR REQ). */
static void vbe_vud_request(struct vbe_vx *vx, struct rdma_cm_id *id)
{
	struct rdma_conn_param cp;

	memset(&cp, 0, sizeof(cp));
	cp.qp_num = vx->ud->qp->qp_num;
	if (id->verbs != vx->ctx || rdma_accept(id, &cp))
		rdma_reject(id, NULL, 0);
}

static void vbe_vud_event(struct vbe_vx *vx, struct rdma_cm_event *ev, bool *done)
{
	struct vbe_vud *u = vx->ud;
	struct vbe_vud_peer *p;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		vbe_vud_request(vx, ev->id);
		*done = true;	/* the id is ours to destroy, once acked */
		return;
	}
	p = ev->id == u->lis ? NULL : vbe_vud_of_id(u, ev->id);
	if (!p)
		return;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(p->id, VBE_VX_RESOLVE_MS))
			vbe_vud_fail(vx, p, "no route");
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED: {
		struct rdma_conn_param cp;

		memset(&cp, 0, sizeof(cp));
		if (p->id->verbs != vx->ctx)
			vbe_vud_fail(vx, p, "routed to another device");
		else if (rdma_connect(p->id, &cp))
			vbe_vud_fail(vx, p, "no service request");
		break;
	}
	case RDMA_CM_EVENT_ESTABLISHED:
		p->ah = ibv_create_ah(u->pd, &ev->param.ud.ah_attr);
		if (!p->ah || !ev->param.ud.qp_num || ev->param.ud.qp_num >= 1u << 24) {
			vbe_vud_fail(vx, p, p->ah ? "bad QP number" : "no address handle");
			break;
		}
		p->qpn = ev->param.ud.qp_num;
		p->qkey = ev->param.ud.qkey;
		p->state = VBE_VUD_UP;
		p->used = vx->node->now_ms;
		*done = true;	/* the id's work is done: p->id goes after the ack */
		vbe_vud_flush(u, p);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		/* vbe_vud_fail hands the id to the reaper: after the ack. */
		*done = true;
		break;
	default:
		break;
	}
}

void vbe_vud_events(struct vbe_vx *vx)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct vbe_vud_peer *p;
	bool done;
	int type;

	if (!vx->ud)
		return;
	while (!rdma_get_cm_event(vx->ud->ech, &ev)) {
		done = false;
		id = ev->id;
		type = ev->event;
		vbe_vud_event(vx, ev, &done);
		rdma_ack_cm_event(ev);
		if (!done)
			continue;
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			vbe_reap_qp(vx, id, false, NULL, 0);
			continue;
		}
		p = vbe_vud_of_id(vx->ud, id);
		if (p && p->state == VBE_VUD_UP) {
			vbe_reap_qp(vx, id, false, NULL, 0);
			p->id = NULL;
		} else if (p) {
			vbe_vud_fail(vx, p, rdma_event_str(type));
		}
	}
}

void vbe_vud_tick(struct vbe_vx *vx, int64_t now_ms)
{
	unsigned i;

	for (i = 0; vx->ud && i < VBE_VUD_PEERS; i++) {
		struct vbe_vud_peer *p = &vx->ud->peer[i];

		if (p->state == VBE_VUD_RESOLVING && now_ms > p->deadline)
			vbe_vud_fail(vx, p, "timed out");
		else if (p->state == VBE_VUD_FAILED && now_ms > p->deadline)
			memset(p, 0, sizeof(*p));
	}
}

/* ---- receiving ---- */

static void vbe_vud_recv(struct vbe_vx *vx, uint32_t i, const struct ibv_wc *wc)
{
	struct vbe_vud *u = vx->ud;
	const uint8_t *b = vbe_vud_rbuf(u, i);
	struct vbe_vud_hdr h;
	const char *why;
	size_t off;
	int err;

	if (wc->status == IBV_WC_SUCCESS) {
		err = vbe_vud_parse(b, wc->byte_len, &h, &off);
		if (err) {
			u->ctr.rx_bad++;
			vlog_limited(&u->lim, VLOG_INFO, "rdma: a datagram from another node "
				     "dropped: bad header (%u bytes, %s)", wc->byte_len,
				     strerror(-err));
		} else if ((why = vbe_ud_from_node(vx->node, &h, b + off))) {
			u->ctr.rx_drop++;
			vlog_dbg("rdma: datagram to QP %u from another node dropped: %s",
				 h.dqpn, why);
		} else {
			u->ctr.rx++;
		}
	}
	if (vbe_vud_post_recv(u, i))
		vlog_limited(&u->lim, VLOG_WARN, "rdma: a datagram receive buffer could not "
			     "be posted again");
}

int vbe_vud_poll(struct vbe_vx *vx, int budget)
{
	struct ibv_wc wc[VBE_VX_CQ_BATCH];
	struct vbe_vud *u = vx->ud;
	int i, k, done = 0;

	while (u && done < budget) {
		k = ibv_poll_cq(u->cq, VBE_VX_CQ_BATCH, wc);
		if (k <= 0)
			break;
		for (i = 0; i < k; i++) {
			uint32_t slot = (uint32_t)wc[i].wr_id;

			if (wc[i].wr_id >> 32 == VBE_VUD_WR_RECV && slot < VBE_VUD_RECVS) {
				vbe_vud_recv(vx, slot, &wc[i]);
			} else if (wc[i].wr_id >> 32 == VBE_VUD_WR_SEND && slot < VBE_VUD_SENDS) {
				if (wc[i].status != IBV_WC_SUCCESS)
					u->ctr.tx_drop++;
				vbe_vud_give(u, (uint16_t)slot);
			}
		}
		done += k;
	}
	return done;
}

int vbe_vud_arm(struct vbe_vx *vx)
{
	if (!vx->ud)
		return 0;
	ibv_req_notify_cq(vx->ud->cq, 0);
	/* A completion that landed before the arm raises no event. */
	return vbe_vud_poll(vx, VBE_VX_POLL_CQES) > 0;
}
