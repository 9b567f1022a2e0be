/* SPDX-License-Identifier: MIT */
/*
 * Teams run by dom0 (vbe_coll_*): the members of a one-node team post
 * OP_COLL entries naming ranges of their own MRs; once every member
 * posted operation s, dom0 folds the send ranges in place, in rank order,
 * into a chunk of the node's scratch and copies the chunk into every
 * member's receive range (docs/collectives.md, wire.md "Teams").
 *
 * Trust: a member's entry is copied out of its ring and checked before
 * anything is queued; ranges are looked up in the member's own MR table
 * again at every chunk (an MR deregistered mid-operation fails that
 * member, never dom0), and the kernels see only those ranges and the
 * scratch.  A chunk runs only as far as every member's scheduling budget
 * pays for its bytes (run.c, vbe_coll_afford).  Work is
 * bounded in the members' bytes it reads and writes: a chunk's length
 * shrinks with the team's size so that a chunk touches at most
 * VBE_COLL_CHUNK_WORK bytes, and a node poll runs chunks of every team
 * together up to VBE_COLL_ROUND_WORK (at most VBE_COLL_ROUND_CHUNKS of
 * one team), taking up next time the teams it did not reach: neither a
 * large vector, nor a large team, nor many teams hold the loop.
 */
#ifndef VRDMA_BACKEND_COLL_H
#define VRDMA_BACKEND_COLL_H

#include <stdbool.h>
#include <stdint.h>

#include "log.h"
#include "vrdma/wire.h"

struct vbe_guest;
struct vbe_node;

#define VBE_COLL_CHUNK		(256u << 10)	/* scratch: bytes folded at once */
#define VBE_COLL_ROUND_CHUNKS	4		/* per team per node poll */
#define VBE_COLL_CHUNK_WORK	(2u << 20)	/* members' bytes a chunk reads
						 * and writes, at most */
#define VBE_COLL_ROUND_WORK	(8u << 20)	/* ... every chunk of a node poll */
#define VBE_COLL_GUEST_TEAMS	64		/* teams a guest device is in */
#define VBE_COLL_NODE_TEAMS	1024		/* teams a node keeps */
#define VBE_COLL_NAME		32		/* a node name and its NUL */
#define VBE_COLL_GROUPS		16		/* tenant groups a team dom0 runs */

enum vbe_team_state {
	VBE_TEAM_JOINING,		/* members still to come */
	VBE_TEAM_READY,			/* dom0 runs it */
	VBE_TEAM_SELF,			/* told to run it themselves */
	VBE_TEAM_FAILED,		/* every op completes with an error */
};

/* A member's OP_COLL as queued: the checked copy. */
struct vbe_cop {
	uint64_t id;
	struct vrdma_coll_wr w;
};

/* A member, made by its join, gone with its leave: a team that never
 * fills holds what its joins made, and a pointer a rank. */
struct vbe_cmember {
	struct vbe_guest *g;
	uint32_t handle;		/* the team's handle in g's space */
	uint32_t pd, cq;		/* g's table indexes */
	uint64_t posted;		/* seqs posted so far; seq s is in
					 * q[s % VRDMA_TEAM_DEPTH] */
	uint64_t cdone;			/* ... and completed */
	struct vbe_cop q[VRDMA_TEAM_DEPTH];	/* posted, not done */
};

struct vbe_team {
	struct vbe_team *next;
	uint8_t key[16];
	uint32_t size, joined, hash;
	enum vbe_team_state state;
	uint8_t fail_ws;		/* FAILED: status of ops that come later */
	bool self;			/* a member joined with VRDMA_TEAM_F_SELF */
	bool queued;			/* on the node's run list */
	struct vbe_team *run_next;
	struct vbe_cmember **m;		/* by rank; NULL: not joined, or left */
	uint64_t done;			/* READY: ops completed in every member */
	uint64_t off;			/* the running op: bytes of the vector done */
	uint32_t chunk;			/* READY: bytes of the vector a chunk takes */
	uint32_t nready;		/* READY: members that posted op done + 1 */
	uint64_t ops, bytes;		/* for vrdmactl */
	uint64_t serial;		/* the node's count: names it in logs */
	/* Ranks whose guest was at its teams quota when it joined: told
	 * NOENT at once, they run the team themselves, and so will the
	 * others once every rank joined (the team is self).  Counted in
	 * joined; a team of absent ranks only was made by one of them and
	 * is charged to that guest (tomb) until the others come. */
	uint64_t *absent;		/* bitmap by rank, NULL: none */
	uint32_t nabsent;
	struct vbe_guest *tomb;
};

/* A guest's handles to its teams.  An EVT_TEAM its event ring had no
 * room for waits here, on the guest that keeps it waiting: the node's
 * poll retries the guests that have one, no scan of every team. */
struct vbe_cref {
	struct vbe_team *t;		/* NULL: free */
	uint32_t rank;
	uint16_t gen;
	uint16_t evt;			/* EVT_TEAM status still to tell */
	bool evt_pend;
};

struct vbe_coll_guest {
	struct vbe_cref ref[VBE_COLL_GUEST_TEAMS];
	unsigned nteams;
	unsigned npend;			/* refs with evt_pend */
	unsigned ntombs;		/* teams it made at its quota */
	uint32_t ways;			/* run.c: its ranges a chunk touches */
};

struct vbe_coll_node {
	struct vbe_team *teams;
	unsigned nteams;
	struct vbe_team *run;		/* teams with an op every member posted */
	uint64_t serial;
	bool off;			/* the operator's switch: no offload here */
	uint64_t joins, ops, bytes, fails;
	struct vlog_lim absent_lim;	/* "at its quota" lines */
	unsigned npend;			/* EVT_TEAMs waiting, every guest's */
	bool held;			/* the last run moved nothing: every
					 * team waits for a member's budget */
	/* What a chunk is made in, one for the node: its poll runs one
	 * chunk at a time and finishes it before the next.  Allocated with
	 * the first team dom0 runs, kept until the node goes. */
	uint8_t *scratch;		/* VBE_COLL_CHUNK */
	uint8_t **sp, **rp;		/* VRDMA_TEAM_MAX each: a chunk's ranges */
	const void **src;		/* VRDMA_TEAM_MAX: the fold's sources */
};

/* team.c */
int  vbe_coll_join(struct vbe_guest *g, const struct vrdma_req *r, uint32_t *out);
void vbe_coll_joined(struct vbe_guest *g, uint32_t handle);	/* after its CMD_DONE */
int  vbe_coll_leave(struct vbe_guest *g, const struct vrdma_req *r);
void vbe_coll_guest_gone(struct vbe_guest *g);
void vbe_coll_node_fini(struct vbe_node *n);
struct vbe_cref *vbe_coll_ref(struct vbe_guest *g, uint32_t handle);
void vbe_coll_fail(struct vbe_team *t, uint8_t ws);
void vbe_coll_tell(struct vbe_node *n);		/* EVT_TEAMs still to tell */
void vbe_coll_cqe(struct vbe_cmember *m, uint64_t id, uint8_t ws, uint32_t byte_len);

/* run.c */
int  vbe_coll_post(struct vbe_guest *g, const struct vrdma_req *r);
int  vbe_coll_run(struct vbe_node *n);		/* work done (node poll) */
bool vbe_coll_busy(const struct vbe_node *n);	/* keeps the loop polling */
void vbe_coll_queue(struct vbe_node *n, struct vbe_team *t);

#endif /* VRDMA_BACKEND_COLL_H */
