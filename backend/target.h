/* SPDX-License-Identifier: MIT */
/*
 * The seam "where the data goes": executing a connected QP's queued work
 * requests.  ring.c and cmd.c only queue WRs and call these ops; they
 * never move data themselves.
 *
 *   target_local.c  both QPs on this node: copy between mapped guest pages
 *   target_verbs.c  (issue 4) the peer is on another node: libibverbs
 *
 * A target is chosen per QP when its connection is established (cm.c).
 */
#ifndef VRDMA_VBE_TARGET_H
#define VRDMA_VBE_TARGET_H

struct vbe_guest;
struct vbe_qp;

struct vbe_target {
	const char *name;
	/* Execute as much of qp's send queue as possible, in order. */
	void (*sq_run)(struct vbe_guest *g, struct vbe_qp *qp);
	/* A receive was queued on qp: the peer's send queue may proceed. */
	void (*rq_posted)(struct vbe_guest *g, struct vbe_qp *qp);
	/* qp is going away or to error: tell the peer (QP_ERROR there). */
	void (*disconnect)(struct vbe_guest *g, struct vbe_qp *qp);
};

extern const struct vbe_target vbe_target_local;

#endif /* VRDMA_VBE_TARGET_H */
