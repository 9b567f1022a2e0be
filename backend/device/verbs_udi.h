/* SPDX-License-Identifier: MIT */
/*
 * What verbs_ud.c (the device UD QP, its buffers, sending and receiving)
 * and verbs_udcm.c (the peer nodes and their resolution) share.
 */
#ifndef VRDMA_VBE_VERBS_UDI_H
#define VRDMA_VBE_VERBS_UDI_H

#include "verbs.h"
#include "verbs_ud.h"

#define VBE_VUD_RECVS		64
#define VBE_VUD_SENDS		64
#define VBE_VUD_PEERS		16	/* nodes whose address handle we keep */
#define VBE_VUD_HOLD		8	/* datagrams waiting for one node's resolution */
#define VBE_VUD_RETRY_MS	1000	/* a node that did not resolve: asked again after */
/* A resolved node is asked again this often, its old handle in use
 * meanwhile: a vrdmad that restarted has another QP number. */
#define VBE_VUD_REFRESH_MS	30000
#define VBE_VUD_QKEY		0x01234567u	/* the kernel's RDMA_UDP_QKEY (SIDR) */

enum { VBE_VUD_WR_RECV = 1, VBE_VUD_WR_SEND = 2 };

enum vbe_vud_state { VBE_VUD_FREE, VBE_VUD_RESOLVING, VBE_VUD_UP, VBE_VUD_FAILED };

struct vbe_vud_peer {
	uint8_t gid[16];
	enum vbe_vud_state state;
	struct rdma_cm_id *id;		/* RESOLVING, or UP and refreshing */
	struct ibv_ah *ah;		/* UP */
	uint32_t qpn, qkey;
	int64_t deadline;		/* RESOLVING: give up; FAILED: forget;
					 * UP: resolve again */
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

/* verbs_ud.c */
void vbe_vud_give(struct vbe_vud *u, uint16_t i);
void vbe_vud_post(struct vbe_vud *u, struct vbe_vud_peer *p, uint16_t i);
/* verbs_udcm.c */
struct vbe_vud_peer *vbe_vud_peer(struct vbe_vx *vx, const uint8_t *gid);

#endif /* VRDMA_VBE_VERBS_UDI_H */
