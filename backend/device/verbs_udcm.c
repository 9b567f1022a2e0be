// SPDX-License-Identifier: MIT
/*
 * The peer nodes of datagrams between nodes (verbs_ud.c): a node GID is
 * the IPv4-mapped address its vrdmad's rdma_cm listener binds, so it is
 * resolved as rdma_cm resolves a UD service: an RDMA_PS_UDP id at that
 * address and vrdmad's rdma port, address, route, then SIDR, which the
 * other vrdmad's RDMA_PS_UDP listener answers with its QP number; the
 * SIDR reply's address attributes become our address handle.  All of it
 * non-blocking: the events come on the channel's fd in vrdmad's loop,
 * each step has a time limit, ids go to the reaper.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "log.h"
#include "verbs_udi.h"

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
	if (p->ah)
		ibv_destroy_ah(p->ah);
	p->ah = NULL;
	p->state = VBE_VUD_FAILED;
	p->deadline = vx->node->now_ms + VBE_VUD_RETRY_MS;
	vbe_vud_flush(u, p);
}

/* Start resolving p's GID (IPv4-mapped: the node's RDMA address). */
static int vbe_vud_start(struct vbe_vx *vx, struct vbe_vud_peer *p)
{
	static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff };
	struct sockaddr_in src, dst;
	int err;

	if (memcmp(p->gid, v4, sizeof(v4)) || vx->addr.ss_family != AF_INET)
		return -EAFNOSUPPORT;
	memcpy(&src, &vx->addr, sizeof(src));
	src.sin_port = 0;
	memset(&dst, 0, sizeof(dst));
	dst.sin_family = AF_INET;
	dst.sin_port = htons(vx->port);
	memcpy(&dst.sin_addr, p->gid + 12, 4);
	if (rdma_create_id(vx->ud->ech, &p->id, p, RDMA_PS_UDP))
		return -errno;
	if (rdma_resolve_addr(p->id, (struct sockaddr *)&src, (struct sockaddr *)&dst,
			      VBE_VX_RESOLVE_MS)) {
		err = -errno;
		vbe_reap_qp(vx, p->id, false, NULL, 0);
		p->id = NULL;
		return err;
	}
	p->deadline = vx->node->now_ms + 3 * VBE_VX_RESOLVE_MS;
	return 0;
}

static int vbe_vud_resolve(struct vbe_vx *vx, struct vbe_vud_peer *p, const uint8_t *gid)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->gid, gid, sizeof(p->gid));
	p->state = VBE_VUD_RESOLVING;
	return vbe_vud_start(vx, p);
}

/* gid's entry, made (and its resolution started) if need be; NULL: no room. */
struct vbe_vud_peer *vbe_vud_peer(struct vbe_vx *vx, const uint8_t *gid)
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
	case RDMA_CM_EVENT_ESTABLISHED: {
		struct ibv_ah *ah = ibv_create_ah(u->pd, &ev->param.ud.ah_attr);

		if (!ah || !ev->param.ud.qp_num || ev->param.ud.qp_num >= 1u << 24) {
			if (ah)
				ibv_destroy_ah(ah);
			vbe_vud_fail(vx, p, ah ? "bad QP number" : "no address handle");
			break;
		}
		if (p->ah)		/* a refresh: the new one replaces it */
			ibv_destroy_ah(p->ah);
		p->ah = ah;
		p->qpn = ev->param.ud.qp_num;
		p->qkey = ev->param.ud.qkey;
		p->state = VBE_VUD_UP;
		p->used = vx->node->now_ms;
		p->deadline = vx->node->now_ms + VBE_VUD_REFRESH_MS;
		*done = true;	/* the id's work is done: p->id goes after the ack */
		vbe_vud_flush(u, p);
		break;
	}
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
		if (p && p->state == VBE_VUD_UP && type == RDMA_CM_EVENT_ESTABLISHED) {
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

		if ((p->state == VBE_VUD_RESOLVING || p->id) && now_ms > p->deadline)
			vbe_vud_fail(vx, p, "timed out");
		else if (p->state == VBE_VUD_FAILED && now_ms > p->deadline)
			memset(p, 0, sizeof(*p));
		else if (p->state == VBE_VUD_UP && now_ms > p->deadline && vbe_vud_start(vx, p))
			vbe_vud_fail(vx, p, "cannot resolve it again");
	}
}
