/* SPDX-License-Identifier: MIT */
/*
 * RC QP bring-up for the tests that are verbs programs (test_vvb_*):
 * what ibv_rc_pingpong does, towards a QP of the same context.
 */
#ifndef VRDMA_TVERBS_H
#define VRDMA_TVERBS_H

#include <stdint.h>
#include <infiniband/verbs.h>

/* RESET -> INIT on port 1, remote writes allowed. */
void tv_qp_init(struct ibv_qp *qp);
/* INIT -> RTR -> RTS towards dest at gid (this context's GID). */
void tv_qp_rts(struct ibv_qp *qp, const union ibv_gid *gid, uint32_t dest);

#endif /* VRDMA_TVERBS_H */
