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

#include <stdbool.h>

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
extern const struct vbe_target vbe_target_ud;	/* local/ud.c: UD QPs */

/*
 * Device credits (issue 5, sched.c): bound a guest's WRs outstanding on
 * the device, or a flooder's queue depth wins whatever the weights say.
 * A target that posts to a device takes one per WR before posting (false:
 * the guest is at its limit, qp now waits on the run list -- leave the WR
 * queued and return) and puts it back when the WR completes or is
 * flushed.  The local target executes synchronously: its credits are
 * the per-poll budget.  vbe_sched_start_wr (vbe.h) feeds the queue-delay
 * counters (ring.c stamps a WR's t_q when it is queued).
 */
bool vbe_credit_take(struct vbe_guest *g, struct vbe_qp *qp);
void vbe_credit_put(struct vbe_guest *g);
bool vbe_dev_take(struct vbe_guest *g, struct vbe_qp *qp, uint64_t bytes);
void vbe_dev_put(struct vbe_node *n, struct vbe_guest *g, uint64_t bytes);

#endif /* VRDMA_VBE_TARGET_H */
