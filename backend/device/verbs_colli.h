/* SPDX-License-Identifier: MIT */
/*
 * The links of teams across nodes over the RDMA device, shared by
 * verbs_coll.c (the area, the seam's ops, completions) and
 * verbs_collcm.c (the hello and rdma_cm).  docs/rdma.md, "Teams' links
 * between nodes", is the prose.
 *
 * A link's area: the 4 slots the peer writes into and the word in which
 * it keeps the count of our messages it consumed (one MR at iova 0,
 * REMOTE_WRITE: the peer learns no address of ours), then the 4 slots we
 * send from (another MR, local only: what we send is read once by us and
 * the device, never rewritten by the peer).
 */
#ifndef VRDMA_VBE_VERBS_COLLI_H
#define VRDMA_VBE_VERBS_COLLI_H

#include "verbs.h"
#include "../coll/link.h"

#define VBE_VCL_MAX		(4 * VBE_COLL_NODE_SPANS)	/* and lingering ones */
#define VBE_VCL_LINGER_MS	2000
#define VBE_VCL_RECVS		32
#define VBE_VCL_SENDS		64
#define VBE_VCL_RETRY_MS	250
#define VBE_VCL_IMM_USED	0x80000000u
#define VBE_VCL_WORD		(VBE_CL_SLOTS * VBE_CL_SLOT)	/* iova of the count */
#define VBE_VCL_IN_LEN		(VBE_VCL_WORD + 64)
#define VBE_VCL_OUT_OFF		((VBE_VCL_IN_LEN + 4095) & ~4095u)
#define VBE_VCL_AREA		(VBE_VCL_OUT_OFF + VBE_CL_SLOTS * VBE_CL_SLOT)

enum { VBE_VCL_WR_RECV = 1, VBE_VCL_WR_SEND };

enum vbe_vcl_state {
	VBE_VCL_IDLE,		/* connector: between tries */
	VBE_VCL_ADDR,		/* connector: resolving */
	VBE_VCL_ROUTE,
	VBE_VCL_CONN,		/* REQ sent / REQ accepted */
	VBE_VCL_WAIT,		/* acceptor: no REQ yet */
	VBE_VCL_UP,
	VBE_VCL_DOWN,
};

struct vbe_vcl {
	struct vbe_clink l;		/* the chain's view: first */
	struct vbe_vx *vx;
	uint32_t idx;
	uint16_t gen;
	enum vbe_vcl_state state;
	struct rdma_cm_id *id;
	struct ibv_mr *in_mr, *out_mr;
	uint8_t *mem;			/* VBE_VCL_AREA */
	uint64_t peer_addr;		/* the peer's in area (an iova) */
	uint32_t peer_rkey;
	uint32_t sends;			/* posted, not completed */
	bool used_due;			/* a count to send when a send completes */
	bool closing;			/* the chain let go: its last sends land */
	int64_t close_ms;
	int64_t retry_ms;
	struct sockaddr_storage dst;	/* the peer vrdmad (both directions) */
	uint8_t key[16];
	uint32_t from, hash, size;	/* what our hello says */
};

struct vbe_vcoll {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct vbe_vcl *l[VBE_VCL_MAX];
	uint16_t gen[VBE_VCL_MAX];
};

/* verbs_coll.c */
void vbe_vcl_free(struct vbe_vcl *c);
void vbe_vcl_down(struct vbe_vcl *c, const char *why);
void vbe_vcl_drop_id(struct vbe_vcl *c);
uint64_t vbe_vcl_wrid(const struct vbe_vcl *c, unsigned kind);
/* verbs_collcm.c */
void vbe_vcl_try(struct vbe_vcl *c);
int  vbe_vcl_repost(struct vbe_vcl *c);	/* a receive, after one was used */

#endif /* VRDMA_VBE_VERBS_COLLI_H */
