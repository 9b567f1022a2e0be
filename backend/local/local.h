/* SPDX-License-Identifier: MIT */
/*
 * What the two targets of local/ share: a guest's SGE list turned into
 * pieces of dom0's mappings, and a scatter-gather copy between two piece
 * lists (target_local.c).
 */
#ifndef VRDMA_VBE_LOCAL_H
#define VRDMA_VBE_LOCAL_H

#include <stdbool.h>
#include <stdint.h>

struct vbe_guest;
struct vbe_wqe;

struct vbe_piece {
	uint8_t *p;
	uint32_t len;
};

/* Local SGEs of w -> mapped pieces (at most VRDMA_MAX_SGE): lkey valid,
 * in PD pd, in bounds, LOCAL_WRITE if write.  0 or VRDMA_WS_LOC_PROT_ERR. */
int  vbe_sges(struct vbe_guest *g, uint32_t pd, const struct vbe_wqe *w, bool write,
	      struct vbe_piece *pc, unsigned *np, uint64_t *total);
/* Bytes [skip, skip + n) of s into the same bytes of d. */
void vbe_copy(const struct vbe_piece *d, unsigned nd, const struct vbe_piece *s,
	      unsigned ns, uint64_t skip, uint64_t n);

#endif /* VRDMA_VBE_LOCAL_H */
