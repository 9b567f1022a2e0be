/* SPDX-License-Identifier: MIT */
/*
 * Unreliable datagrams between guests of different nodes, through the
 * RDMA device (docs/rdma.md "Datagrams between nodes").  Each vrdmad owns
 * one device UD QP; a guest's datagram to another node's GID goes as a
 * device UD send to that node's vrdmad QP, behind the header below; the
 * receiving vrdmad checks the header and hands the datagram to local/ud.c,
 * which applies every check a datagram of its own node gets.
 *
 *   verbs_udhdr.c  the header: pack and parse (pure, unit tested, fuzzed)
 *   verbs_ud.c     the device UD QP, its buffer pool, sending, receiving
 *   verbs_udcm.c   the peer nodes: resolving a node GID to its vrdmad's QP
 *   verbs_udi.h    what the last two share
 *
 * A peer vrdmad is no more trusted than a guest: every field is checked,
 * and a datagram that fails a check is dropped and counted.
 */
#ifndef VRDMA_VBE_VERBS_UD_H
#define VRDMA_VBE_VERBS_UD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vrdma/wire.h"

/*
 * Header, little endian, after the 40 bytes the device writes first:
 *   0 u8  magic (VBE_VUD_MAGIC)  1 u8 flags: bit 0 imm valid
 *   2 u16 0
 *   4 u32 destination QP number (a guest QP of the receiving node)
 *   8 u32 source QP number (the sending guest's QP)
 *  12 u32 Q_Key (the sender's QKEY_OWN already resolved)
 *  16 u32 immediate data (as the guest's WR holds it)
 *  20 u32 the sender's tenant group (vbe_policy_hash of its name)
 *  24 u32 payload length, 0 .. VRDMA_UD_MTU: the rest of the datagram
 *  28 u32 0
 *  32 payload
 */
#define VBE_VUD_MAGIC		0xd7
#define VBE_VUD_F_IMM		0x01
#define VBE_VUD_HDR		32
/* One receive buffer: the device's GRH (or RoCE v2's IPv4 header in its
 * last 20 bytes), the header, the largest payload a guest may send. */
#define VBE_VUD_BUF		(VRDMA_GRH_LEN + VBE_VUD_HDR + VRDMA_UD_MTU)

struct vbe_vud_hdr {
	uint8_t  sgid[16];	/* parse: the sending node, as the device saw it */
	uint32_t dqpn, sqpn, qkey, imm, group, len;
	bool     has_imm;
};

/* h -> VBE_VUD_HDR bytes at buf. */
void vbe_vud_pack(const struct vbe_vud_hdr *h, uint8_t *buf);
/*
 * A received buffer of byte_len bytes (GRH area included) -> *h and the
 * payload's offset in buf.  0, or -EPROTO (bad header or GRH) / -EMSGSIZE
 * (lengths that disagree): nothing in *h is to be used then.
 */
int  vbe_vud_parse(const uint8_t *buf, size_t byte_len, struct vbe_vud_hdr *h,
		   size_t *off);

struct ibv_cq;
struct vbe_guest;
struct vbe_node;
struct vbe_piece;
struct vbe_qp;
struct vbe_vx;
struct vbe_wqe;

/* verbs_ud.c: the send of w (its payload pieces pc, total bytes) to
 * another node's GID.  Never waits: handed to the device (or held while
 * the node's address resolves), or dropped and counted. */
void vbe_vud_send(struct vbe_guest *g, struct vbe_qp *qp, const struct vbe_wqe *w,
		  const struct vbe_piece *pc, unsigned np, uint64_t total);
/* verbs_dev.c's hooks: open with the device (0, or -errno: then no
 * datagrams between nodes, as without a device), its fds, polls, tick. */
int  vbe_vud_open(struct vbe_vx *vx);
void vbe_vud_close(struct vbe_vx *vx);
int  vbe_vud_fd(const struct vbe_vx *vx);	/* -1: none */
void vbe_vud_events(struct vbe_vx *vx);
bool vbe_vud_cq_event(struct vbe_vx *vx, struct ibv_cq *cq);	/* ours: acked */
int  vbe_vud_poll(struct vbe_vx *vx, int budget);
int  vbe_vud_arm(struct vbe_vx *vx);
void vbe_vud_tick(struct vbe_vx *vx, int64_t now_ms);

/* local/ud.c: a checked datagram from another node into its guest QP;
 * NULL when delivered, else why it was dropped. */
const char *vbe_ud_from_node(struct vbe_node *n, const struct vbe_vud_hdr *h,
			     const uint8_t *payload);

#endif /* VRDMA_VBE_VERBS_UD_H */
