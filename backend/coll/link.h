/* SPDX-License-Identifier: MIT */
/*
 * Teams across nodes: the links between the vrdmads of a team's nodes
 * (vbe_clink) and the messages on them (vbe_cmsg), the wire contract
 * between two vrdmads.  docs/collectives.md, "Across nodes", has the
 * design; chain.c runs it.
 *
 * A team's layout orders its nodes 0..K-1 by their lowest rank.  Node k
 * has a link to node k-1 (VBE_CL_PREV) and one to node k+1 (VBE_CL_NEXT);
 * the lower node of a pair opens it.  A link carries messages both ways,
 * in order.  Each side has VBE_CL_SLOTS slots for what the other puts:
 * message i goes into slot i % VBE_CL_SLOTS, and the sender may put
 * message i only once the receiver said it consumed message
 * i - VBE_CL_SLOTS (its `used` count, which the transport carries back).
 * So there is no receive to miss and nothing to drop; a receiver that
 * stops consuming stops its sender, which stops nothing but this team.
 *
 * The seam (vbe_clink_ops) is the transport: the RDMA device between
 * nodes (a QP per link; a message is a write with immediate into the
 * peer's slot, `used` an RDMA write into the peer's counter), or, in the
 * tests, the test itself playing the other nodes.  Everything else --
 * what to send, when, and what a message may say -- is chain.c's, so
 * every transport is held to the same checks.
 *
 * Trust: another node's vrdmad is checked like a guest.  A message is
 * copied out of its slot before it is looked at (vbe_cmsg_get), every
 * field is checked against what this node's own state says it must be,
 * and anything else fails this team on every node it reaches, never a
 * buffer of dom0 or of a member.
 */
#ifndef VRDMA_BACKEND_COLL_LINK_H
#define VRDMA_BACKEND_COLL_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vbe_node;
struct vbe_team;

#define VBE_CL_SLOTS		4		/* a direction's slots */
#define VBE_CL_HDR		64u		/* a message's header room */
#define VBE_CL_CHUNK		(128u << 10)	/* payload bytes at most */
#define VBE_CL_SLOT		(VBE_CL_HDR + VBE_CL_CHUNK)
#define VBE_CL_MAGIC		0x7663686eu	/* "vchn" */
#define VBE_CL_GROUPS		16		/* tenant groups a team may have */

enum vbe_cl_dir { VBE_CL_PREV, VBE_CL_NEXT };

/* vbe_cmsg.type */
enum vbe_cl_type {
	VBE_CM_JOINED = 1,	/* forward: nodes 0..k joined; payload: groups */
	VBE_CM_VERDICT,		/* backward: every node saw every group */
	VBE_CM_START,		/* forward: node 0's decision */
	VBE_CM_FWD,		/* forward: the prefix of a chunk */
	VBE_CM_BWD,		/* backward: the result of a chunk */
	VBE_CM_ABORT,		/* either way: the team failed (status) */
};

/* vbe_cmsg.flags */
#define VBE_CMF_SELF		0x01	/* JOINED, VERDICT, START: the members
					 * run the team themselves */
#define VBE_CMF_EMPTY		0x02	/* FWD: no payload yet (BCAST before
					 * the root's node) */

/*
 * A message's header, at the start of its slot (little-endian, as every
 * node of a cluster runs one vrdma on one architecture: the hello
 * refuses another version).
 *
 *   JOINED   nlocal = the most members any node 0..k has, len = 4 x
 *            groups (the tenant groups of their members, by hash)
 *   VERDICT  nlocal, groups as JOINED's, over all nodes; SELF if a node
 *            wants it or its policy keeps two groups apart
 *   START    chunk = the bytes of a chunk, at most VBE_CL_CHUNK; SELF:
 *            every node tells its members NOENT
 *   FWD/BWD  the operation (seq, kind, type, op, root, count) and the
 *            chunk at off of len bytes of the vector
 *   ABORT    status: the VRDMA_WS_* every member's operations end with
 */
struct vbe_cmsg {
	uint32_t magic;
	uint8_t  type, flags;
	uint16_t status;
	uint64_t seq;
	uint64_t count;
	uint64_t off;
	uint32_t len;
	uint32_t root;
	uint8_t  kind, ctype, op, reserved0;
	uint32_t nlocal;
	uint32_t chunk;
	uint8_t  reserved[12];
};
_Static_assert(sizeof(struct vbe_cmsg) == VBE_CL_HDR, "vbe_cmsg fills its room");
_Static_assert(VBE_CL_CHUNK % 8 == 0, "a chunk is whole elements");

/*
 * A link, this side.  The transport owns in and out (VBE_CL_SLOTS slots
 * of VBE_CL_SLOT bytes each, registered for it) and sets got (messages
 * in our slots, in order) and peer_used (what the peer consumed of ours);
 * chain.c sets sent and used and calls the ops.
 */
struct vbe_clink {
	struct vbe_team *t;
	uint8_t dir;			/* enum vbe_cl_dir, seen from t's node */
	bool up;			/* the transport said so */
	bool down;			/* ... broke, or closed: no more */
	uint8_t *in, *out;
	uint64_t got, used;		/* theirs: arrived, consumed by us */
	uint64_t sent, peer_used;	/* ours: put, consumed by them */
	void *impl;			/* the transport's */
};

struct vbe_clink_ops {
	/* A link of t towards its neighbour in dir, node `peer` (a name as
	 * the team's list has it).  0: made, up or down follows (chain.c's
	 * vbe_chain_link_state); -errno: none. */
	int  (*open)(struct vbe_node *n, struct vbe_team *t, enum vbe_cl_dir dir,
		     const char *peer, struct vbe_clink **out);
	/* Message l->sent is in out[l->sent % VBE_CL_SLOTS] (header and len
	 * bytes of payload): put it into the peer's slot.  0, or -errno:
	 * the link is broken. */
	int  (*send)(struct vbe_clink *l, uint32_t len);
	/* l->used went up: tell the peer. */
	void (*consumed)(struct vbe_clink *l);
	/* Done with l: free it (and what the transport holds for it). */
	void (*close)(struct vbe_clink *l);
};

/* chain.c: the checks every message goes through (fuzz_clink) */
int vbe_cmsg_get(const struct vbe_clink *l, struct vbe_cmsg *h, const uint8_t **payload);

#endif /* VRDMA_BACKEND_COLL_LINK_H */
