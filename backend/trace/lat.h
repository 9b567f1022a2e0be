/* SPDX-License-Identifier: MIT */
/*
 * dom0's per-hop latency trace (`vrdmactl trace lat N`, common/vlt.h):
 * the stamp sites of the data path.  One trace per vrdmad, armed by the
 * control command, in the loop's thread like everything else here.
 * While it is off a site costs a load and a branch: vbe_lt() is inline,
 * the stamp itself out of line and cold.
 *
 * Kinds, in the order a WR meets them (qpn: the QP number the guest
 * sees; id: the guest WR's wr_id):
 *   pull    a send WR pulled from a guest's ring, checked and queued
 *   rpull   a receive WR, the same
 *   copy    local path: a SEND's (WRITE_IMM's) bytes in the peer's
 *           receive, or a one-piece WRITE's in place; aux the peer's QPN,
 *           dom the peer's domid
 *   dpost   device path: ibv_post_send of the guest WR returned
 *   dsend   device path: the send's device completion reaped, aux status
 *   drecv   device path: a receive's device completion reaped, aux status
 *           (id: the guest receive's wr_id)
 *   cqe     a CQE written into a guest's CQ ring (qpn: its QP), aux
 *           opcode << 8 | status (wire.h's VRDMA_WC_* and VRDMA_WS_*)
 *   pub     a CQ's new CQEs published to the guest (id: the CQ's handle,
 *           qpn 0, aux: how many)
 *   kick    the notification to a guest (event channel, eventfd)
 * dom is the guest's domid.  UD datagrams and SRQ receives of the device
 * path are not stamped.
 */
#ifndef VRDMA_VBE_LAT_H
#define VRDMA_VBE_LAT_H

#include <stdbool.h>
#include <stdint.h>

#include "vlt.h"

struct vbe_guest;
struct vbe_qp;
struct vbe_wqe;
struct vrdma_cqe;

enum vbe_lt_kind {
	VBE_LT_PULL, VBE_LT_RPULL, VBE_LT_COPY, VBE_LT_DPOST, VBE_LT_DSEND, VBE_LT_DRECV,
	VBE_LT_CQE, VBE_LT_PUB, VBE_LT_KICK, VBE_LT_NKINDS
};

/* Hidden: a site loads `on` straight, not through the GOT. */
extern struct vlt vbe_lt_trace __attribute__((visibility("hidden")));

/* vrdmactl takes answers of up to 64 MiB: a dump's lines (~70 bytes)
 * stay well within. */
#define VBE_LT_MAX	(VLT_MAX / 2)

/* vbe_node_free: the trace's memory back (vrdmad ends). */
void vbe_lt_fini(void);

/* A plain load: vrdmad's one thread is the only writer. */
static inline bool vbe_lt_on(void)
{
	return __builtin_expect(vbe_lt_trace.on, 0);
}

/*
 * The stamps take the objects a site has at hand and read their fields
 * themselves, out of line: a site that computed its stamp's values
 * would compute them on every pass (GCC hoists such loads out of the
 * unlikely branch), and in vbe_ring_poll that cost 4 instructions a WR.
 */
void vbe_lt_put(unsigned kind, uint32_t qpn, uint64_t id, uint32_t aux, uint32_t dom)
	__attribute__((cold));
void vbe_lt_wr_put(unsigned kind, const struct vbe_guest *g, const struct vbe_qp *qp,
		   const struct vbe_wqe *w, uint32_t aux) __attribute__((cold));
void vbe_lt_copy_put(const struct vbe_qp *qp, const struct vbe_guest *pg,
		     const struct vbe_qp *pqp) __attribute__((cold));
void vbe_lt_cqe_put(const struct vbe_guest *g, const struct vrdma_cqe *c)
	__attribute__((cold));
void vbe_lt_pub_put(const struct vbe_guest *g, uint32_t cqi) __attribute__((cold));
void vbe_lt_kick_put(const struct vbe_guest *g) __attribute__((cold));

/* WR w of g's qp: pull (rpull for a receive), dpost, dsend (aux status). */
static inline void vbe_lt_wr(unsigned kind, const struct vbe_guest *g,
			     const struct vbe_qp *qp, const struct vbe_wqe *w, uint32_t aux)
{
	if (vbe_lt_on())
		vbe_lt_wr_put(kind, g, qp, w, aux);
}

/* The head send WR of qp delivered to pqp of guest pg. */
static inline void vbe_lt_copy(const struct vbe_qp *qp, const struct vbe_guest *pg,
			       const struct vbe_qp *pqp)
{
	if (vbe_lt_on())
		vbe_lt_copy_put(qp, pg, pqp);
}

/* CQE c written into g's CQ ring. */
static inline void vbe_lt_cqe(const struct vbe_guest *g, const struct vrdma_cqe *c)
{
	if (vbe_lt_on())
		vbe_lt_cqe_put(g, c);
}

/* g's CQ number cqi about to publish its new CQEs. */
static inline void vbe_lt_pub(const struct vbe_guest *g, uint32_t cqi)
{
	if (vbe_lt_on())
		vbe_lt_pub_put(g, cqi);
}

/* g notified. */
static inline void vbe_lt_kick(const struct vbe_guest *g)
{
	if (vbe_lt_on())
		vbe_lt_kick_put(g);
}

#endif /* VRDMA_VBE_LAT_H */
