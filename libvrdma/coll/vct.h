/* SPDX-License-Identifier: MIT */
/*
 * Teams in the guest (vct_*): vrdma/coll.h's operations run by the
 * members themselves over ordinary vrdma RC QPs, the fallback whose bits
 * dom0's offload must match.  Only public vrdma_* calls are used: this is
 * a user of the data path, not a part of it.  The offload itself
 * (offload.c: dom0 runs a one-node team) also posts OP_COLLs, which only
 * libvrdma's team_dev.c can, through dev->team_ops (vlib.h).
 *
 * Shape, from the node list alone (docs/collectives.md): a node's lowest
 * rank is its leader; nodes are ordered by their leader's rank (node k,
 * K nodes).  Every operation is cut into chunks of the vector; a chunk is
 * one *step* of the team's step counter, and every member does every step
 * in order:
 *
 *   member -> its leader:        its part of the chunk (contribution)
 *   leader k -> leader k + 1:    the prefix: nodes 0..k combined
 *   leader K-1 -> leaders < K-1: the result (final)
 *   leader -> its members:       the result
 *
 * A leader first combines its node (P(k), members in rank order), then
 * the prefix with it (prefix OP P(k)): exactly the order the API states.
 *
 * Flow control without credits: a receive for step s + 1 is posted on
 * every link before anything of step s is sent, and a step ends only when
 * its receives were consumed and its sends completed.  Every message of
 * step s + 1 that reaches a member is caused by something that member
 * sent in step s, so its receive is always there; slots alternate by step
 * parity.
 *
 * Every message is a vct_hdr and a payload.  The receiver checks every
 * field against what its own arguments say the sender must send, so
 * members that disagree or a peer that writes nonsense break the team
 * (EPROTO), never a buffer.
 */
#ifndef VRDMA_LIBVRDMA_COLL_VCT_H
#define VRDMA_LIBVRDMA_COLL_VCT_H

#include <stdbool.h>
#include <stdint.h>

#include "vrdma/coll.h"

#define VCT_CHUNK	(128u << 10)	/* payload bytes of a step; a multiple
					 * of every element size */
#define VCT_HDR		64u		/* a header's room in front of a payload */
#define VCT_SLOT	(VCT_HDR + VCT_CHUNK)
#define VCT_MAGIC	0x76637431u	/* "vct1" */
#define VCT_PENDING	64		/* operations posted, not done */
#define VCT_MAX_BYTES	(1ull << 30)	/* a vector's bytes, at most */
#define VCT_CONNECT_TRY	2000		/* ms of one connect attempt */

/* vct_hdr.flags */
#define VCT_F_DATA	0x01		/* BCAST: the payload is the root's */

struct vct_hdr {
	uint32_t magic;
	uint32_t step;			/* the team's step counter */
	uint64_t seq;			/* the operation */
	uint64_t count;
	uint32_t root;
	uint8_t  kind, type, op, flags;
	uint32_t off;			/* payload's offset in the chunk */
	uint32_t len;			/* payload bytes */
};
_Static_assert(sizeof(struct vct_hdr) == 40, "vct_hdr is 40 bytes");
_Static_assert(sizeof(struct vct_hdr) <= VCT_HDR, "vct_hdr fits its room");

/* What connects a link, in its request's private data. */
enum vct_role {
	VCT_ROLE_MEMBER = 1,		/* a member to its leader */
	VCT_ROLE_NEXT,			/* leader k + 1 to leader k */
	VCT_ROLE_FINAL,			/* leader K-1 to leader k < K-1 */
};

/* A connection to one other member. */
struct vct_link {
	struct vrdma_qp *qp;
	uint32_t rank;			/* the member at the other end */
	bool recv;			/* it sends to us */
	uint8_t *rslot[2];		/* receive slots by step parity */
	uint8_t *hout[2];		/* our headers to it, by parity */
	bool got[2];			/* a message is in rslot[] */
	uint32_t rlen[2];		/* its byte_len */
	unsigned sending;		/* sends not completed */
	int dead;			/* a receive failed: the peer left
					 * (ECONNRESET) or overran (EPROTO);
					 * fatal once the link is needed, not
					 * before: a member may leave after the
					 * last step it had a part in */
};

struct vct_op {
	struct vrdma_coll_args a;
	uint64_t seq;
	uint64_t vbytes;		/* the vector: what is chunked */
	uint32_t tsize;			/* element bytes (reductions), else 1 */
	uint32_t nsteps;		/* chunks, at least 1 */
};

/* Where a leader or member is within the step at the head. */
enum vct_state {
	VCT_BEGIN,			/* nothing of this step done */
	VCT_NODE,			/* leader: waits for its members */
	VCT_PREFIX,			/* leader k > 0: waits for the prefix */
	VCT_FINAL,			/* waits for the result */
	VCT_DRAIN,			/* waits for its sends to complete */
};

struct vrdma_team {
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	uint8_t *mem;			/* every slot and header, one MR */
	size_t memlen;
	struct vrdma_mr *mr;
	uint8_t key[VRDMA_TEAM_KEY_LEN];
	uint32_t size, rank;
	uint32_t nnodes, node;		/* K, and k */
	uint32_t leader;		/* this node's lowest rank */
	bool is_leader;
	uint32_t *members;		/* leader: this node's ranks, rank order */
	uint32_t nmembers;
	const void **srcs;		/* leader: nmembers fold sources */
	uint32_t *leaders;		/* rank of node i's leader */

	/* Links.  A member: up (to its leader).  A leader: mem[] (its other
	 * members, rank order), prev (from leader k-1), next (to k+1),
	 * fin_in (from leader K-1), fin_out[] (leader K-1: to leaders < K-1). */
	struct vct_link *links;
	uint32_t nlinks;
	struct vct_link *up, *prev, *next, *fin_in;
	struct vct_link *mem0;		/* mem[0..nmembers-2] */
	struct vct_link *fin_out0;	/* fin_out[0..nnodes-2] */
	uint8_t *out[2];		/* leader: P(k) or a member's contribution */

	/* Operations: ring of posted ones, the head in progress. */
	struct vct_op ops[VCT_PENDING];
	uint64_t next_seq;		/* seq of the next post (from 1) */
	uint64_t done_seq;		/* every op up to it is done */
	uint32_t step;			/* the team's step counter */
	uint32_t chunk;			/* head op's chunk in progress */
	enum vct_state st;
	uint8_t *acc;			/* leader: the step's combined payload */
	int err;			/* broken: the error every call gets */
	uint64_t nops, nbytes;

	/* OFFLOAD (offload.c): dom0 runs the team; no links, and cq, mem
	 * and mr are the staging's. */
	struct vct_off *off;		/* NULL: FALLBACK */
	char why[64];			/* FALLBACK: why (vrdma_team_query) */
};

/*
 * offload.c: vct_off_create, at create once the shape is known: 0 dom0
 * runs the team (t->off), 1 the members do (t->why), -errno the create
 * fails.  The others as step.c's, for an OFFLOAD team; vct_off_free
 * leaves dom0's team and frees the staging and the CQ.
 */
struct vct_off;
int  vct_off_create(struct vrdma_team *t, const struct vrdma_team_attr *a, int timeout_ms);
int  vct_off_progress(struct vrdma_team *t);
void vct_off_break(struct vrdma_team *t, int err);
void vct_off_free(struct vrdma_team *t);

/* team.c */
uint32_t vct_hash_nodes(uint32_t size, const char *const *nodes);
void vct_free_area(struct vrdma_team *t);

/* step.c: the head operation, as far as it goes without waiting.  0 or
 * -errno (the team is then broken). */
int vct_progress(struct vrdma_team *t);
/* Post the receive of step @step on @l. */
int vct_post_recv(struct vrdma_team *t, struct vct_link *l, uint32_t step);
/* Broken with @err (positive): the links closed, so the others learn. */
void vct_break(struct vrdma_team *t, int err);

/* ops.c: a create's last step, once every link is up.  0 or -errno. */
int vct_settle(struct vrdma_team *t, int timeout_ms);

#endif /* VRDMA_LIBVRDMA_COLL_VCT_H */
