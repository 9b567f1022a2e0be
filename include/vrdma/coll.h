/* SPDX-License-Identifier: MIT */
/*
 * libvrdma collectives: a team of vrdma guests reduces, broadcasts,
 * gathers and synchronises, MPI's collectives on vrdma's terms.
 *
 * A team is an ordered list of members (ranks 0..size-1), one vrdma
 * device each, created collectively: every member calls
 * vrdma_team_create() with the same key, size and node list, and its own
 * rank.  Every member then calls the team's operations in the same order
 * with agreeing arguments (type, op, count, root); an operation whose
 * arguments disagree breaks the team: the member that sees it fails with
 * EPROTO, and the others with ECONNRESET as it leaves.
 *
 * The reduction order is part of the result: a node's members are folded
 * left to right in rank order, then the nodes left to right in the order
 * of their lowest rank (docs/collectives.md).  Every member gets the same
 * bits, and the same bits whether dom0 does the work (offload) or the
 * members do it over ordinary vrdma QPs (fallback).
 *
 * Errors as in vrdma.h: int calls return 0 or a positive errno, the
 * constructor NULL with errno.  Every wait has the caller's limit.  After
 * an operation fails for any reason other than a wait's ETIMEDOUT, the
 * team is broken: every pending and later operation fails with that
 * error, and only vrdma_team_destroy() is left to do.
 *
 * Threads: a team is used by one thread at a time.
 */
#ifndef VRDMA_COLL_H
#define VRDMA_COLL_H

#include <stddef.h>
#include <stdint.h>

#include <vrdma/vrdma.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VRDMA_TEAM_KEY_LEN	16
#define VRDMA_TEAM_MAX_SIZE	4096

/* Element types; the values are vrdma's wire values, 0 is none. */
enum vrdma_coll_type {
	VRDMA_COLL_INT32 = 1,
	VRDMA_COLL_INT64,
	VRDMA_COLL_UINT32,
	VRDMA_COLL_UINT64,
	VRDMA_COLL_FLOAT,
	VRDMA_COLL_DOUBLE,
};

/* Reduction operations; bitwise ones on FLOAT or DOUBLE are refused. */
enum vrdma_coll_op {
	VRDMA_COLL_SUM = 1,
	VRDMA_COLL_PROD,
	VRDMA_COLL_MIN,
	VRDMA_COLL_MAX,
	VRDMA_COLL_BAND,
	VRDMA_COLL_BOR,
	VRDMA_COLL_BXOR,
};

enum vrdma_coll_kind {
	VRDMA_COLL_ALLREDUCE = 1,
	VRDMA_COLL_REDUCE,
	VRDMA_COLL_BCAST,
	VRDMA_COLL_BARRIER,
	VRDMA_COLL_ALLGATHER,
};

enum vrdma_team_flags {
	VRDMA_TEAM_NO_OFFLOAD	= 1 << 0,	/* run in the guests even where
						 * dom0 could do it */
};

enum vrdma_team_mode {
	VRDMA_TEAM_FALLBACK = 1,	/* the members over vrdma QPs */
	VRDMA_TEAM_OFFLOAD,		/* dom0 reduces */
};

/* vrdma_coll_wait()'s flags for the operation it waited for. */
enum vrdma_coll_flags {
	VRDMA_COLL_OFFLOADED	= 1 << 0,
};

struct vrdma_team_attr {
	uint8_t key[VRDMA_TEAM_KEY_LEN];	/* the same in every member:
						 * vrdma_team_key() in one,
						 * passed out of band */
	uint32_t size;				/* 1..VRDMA_TEAM_MAX_SIZE */
	uint32_t rank;				/* this member, < size */
	const char *const *nodes;		/* size names: nodes[r] is
						 * vrdma_node_name() of rank r's
						 * device, as rank r read it */
	uint32_t flags;				/* enum vrdma_team_flags */
	uint32_t reserved;			/* 0 */
};

struct vrdma_team_info {
	uint32_t mode;			/* enum vrdma_team_mode */
	uint32_t size;
	uint32_t rank;
	uint32_t nnodes;		/* nodes the team spans */
	uint32_t node;			/* this member's node, 0..nnodes-1 in
					 * the order of their lowest rank */
	uint32_t leader;		/* rank of the lowest member of this
					 * member's node */
	uint64_t ops;			/* operations completed */
	uint64_t bytes;			/* vector bytes of those operations */
	char why[64];			/* FALLBACK: why not offloaded */
};

/* An operation, for vrdma_coll_post(). */
struct vrdma_coll_args {
	uint32_t kind;			/* enum vrdma_coll_kind */
	uint32_t type;			/* reductions: enum vrdma_coll_type */
	uint32_t op;			/* reductions: enum vrdma_coll_op */
	uint32_t root;			/* REDUCE, BCAST */
	const void *sendbuf;		/* ALLREDUCE, REDUCE, ALLGATHER */
	void *recvbuf;			/* ALLREDUCE, REDUCE (root), BCAST,
					 * ALLGATHER (size * count bytes) */
	size_t count;			/* elements (reductions); bytes (BCAST,
					 * and each member's for ALLGATHER) */
};
/* In place: ALLREDUCE and REDUCE take sendbuf == recvbuf; ALLGATHER
 * takes sendbuf == recvbuf + rank * count (this member's block already
 * where it goes).  Other overlaps of sendbuf and recvbuf are undefined. */

struct vrdma_team;

/* vrdma_team_key - a fresh random key.  Returns 0 or EIO. */
int vrdma_team_key(uint8_t key[VRDMA_TEAM_KEY_LEN]);

/*
 * vrdma_team_create - join the team @attr names, waiting up to
 * @timeout_ms for every member to join.  @pd is this member's.
 * A create succeeds in every member or in none (but for a member that
 * dies meanwhile).  NULL with errno: EINVAL (bad attr), ENOMEM,
 * ETIMEDOUT (not every member joined in time, or one that had joined
 * gave up first, or a member's key differs: it is another team), EPROTO
 * (a member's size or node list differs, in the members that see it; a
 * member that cannot fails with ETIMEDOUT), EACCES (dom0's connect
 * policy refuses a member), EIO.
 */
struct vrdma_team *vrdma_team_create(struct vrdma_pd *pd, const struct vrdma_team_attr *attr,
				     int timeout_ms);

/* vrdma_team_destroy - leave and free; pending operations are dropped.
 * Returns 0 or EINVAL. */
int vrdma_team_destroy(struct vrdma_team *team);

/* vrdma_team_query - returns 0 or EINVAL. */
int vrdma_team_query(struct vrdma_team *team, struct vrdma_team_info *info);

/*
 * vrdma_coll_post - start an operation; its buffers belong to the team
 * until it completes.  *@seq (may be NULL) is its number, for
 * vrdma_coll_wait(); a team's operations complete in order.  At most 64
 * are pending.  Returns 0, EINVAL (bad args, or type/op/count that
 * vcoll cannot reduce), ENOSPC (64 pending), EOVERFLOW (a vector over
 * 1 GiB), or the error that broke the team.
 */
int vrdma_coll_post(struct vrdma_team *team, const struct vrdma_coll_args *args,
		    uint64_t *seq);

/*
 * vrdma_coll_wait - make progress until operation @seq is done, up to
 * @timeout_ms (0: only progress, as a test).  *@flags (may be NULL) gets
 * its enum vrdma_coll_flags.  Returns 0, EAGAIN (timeout 0, not done),
 * ETIMEDOUT (the operation goes on), EINVAL (@seq never posted), or the
 * error that broke the team: ECONNRESET (a member left), EPROTO (members
 * disagree or sent nonsense), ETIMEDOUT from a blocking call, EIO.
 */
int vrdma_coll_wait(struct vrdma_team *team, uint64_t seq, uint32_t *flags, int timeout_ms);

/*
 * The blocking operations: post, then wait up to @timeout_ms.  Here an
 * ETIMEDOUT breaks the team (the members are at different steps).
 */
int vrdma_allreduce(struct vrdma_team *team, const void *sendbuf, void *recvbuf,
		    size_t count, uint32_t type, uint32_t op, int timeout_ms);
int vrdma_reduce(struct vrdma_team *team, const void *sendbuf, void *recvbuf,
		 size_t count, uint32_t type, uint32_t op, uint32_t root, int timeout_ms);
int vrdma_bcast(struct vrdma_team *team, void *buf, size_t bytes, uint32_t root,
		int timeout_ms);
int vrdma_barrier(struct vrdma_team *team, int timeout_ms);
int vrdma_allgather(struct vrdma_team *team, const void *sendbuf, void *recvbuf,
		    size_t bytes, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* VRDMA_COLL_H */
