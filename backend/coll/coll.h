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
struct vbe_clink;
struct vbe_clink_ops;
struct vbe_cmsg;

#define VBE_COLL_CHUNK		(256u << 10)	/* scratch: bytes folded at once */
#define VBE_COLL_ROUND_CHUNKS	4		/* per team per node poll */
#define VBE_COLL_CHUNK_WORK	(2u << 20)	/* members' bytes a chunk reads
						 * and writes, at most */
#define VBE_COLL_ROUND_WORK	(8u << 20)	/* ... every chunk of a node poll */
#define VBE_COLL_GUEST_TEAMS	64		/* teams a guest device is in */
#define VBE_COLL_NODE_TEAMS	1024		/* teams a node keeps */
#define VBE_COLL_NAME		32		/* a node name and its NUL */
#define VBE_COLL_GROUPS		16		/* tenant groups a team dom0 runs */
#define VBE_COLL_NODE_SPANS	32		/* teams across nodes a node runs */
#define VBE_COLL_GUEST_SPANS	8		/* ... a guest device is in */
#define VBE_COLL_FORM_MS	30000		/* ... to agree with the other nodes */

/* The kinds of OP_COLL, as libvrdma sends them (vrdma/coll.h). */
enum { VBE_CK_ALLREDUCE = 1, VBE_CK_REDUCE, VBE_CK_BCAST, VBE_CK_BARRIER, VBE_CK_ALLGATHER };

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

/* A team across nodes: this node's part of the chain (chain.c). */
enum vbe_span_phase {
	VBE_SP_JOINING,			/* this node's members still to come */
	VBE_SP_LINKING,			/* links opening; JOINED from k-1 */
	VBE_SP_VERDICT,			/* JOINED sent on: VERDICT from k+1 */
	VBE_SP_START,			/* VERDICT sent back: START from k-1 */
	VBE_SP_RUN,			/* the team is READY */
	VBE_SP_OVER,			/* decided self, or failed: links closed */
};

struct vbe_cspan {
	uint32_t k, nodes;		/* this node's place in the layout, of */
	char peer[2][VBE_COLL_NAME];	/* nodes k-1 and k+1 ("": an end) */
	struct vbe_clink *l[2];
	enum vbe_span_phase phase;
	int64_t deadline;		/* before RUN: ms */
	uint32_t groups[VBE_COLL_GROUPS];	/* members' tenant groups so far */
	unsigned ngroups;
	uint32_t maxlocal;		/* most members on one node so far */
	bool self;			/* a node wants its members to run it */
	uint32_t chunk;			/* RUN: START's */
	uint64_t fseq, foff;		/* RUN: the forward pass's next chunk */
	uint64_t bseq, boff;		/* ... the backward pass's */
	uint64_t moved;			/* chunks this poll (vbe_coll_busy) */
	uint16_t *node_of;		/* each rank's place in the layout */
	uint32_t bad;			/* RUN: the rank whose range failed */
	struct vbe_node *node;
	struct vbe_team *next;		/* the node's spans */
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
	uint32_t nlocal;		/* ranks on this node (size: one node) */
	uint32_t *local;		/* span: those ranks, ascending */
	struct vbe_cspan *span;		/* NULL: every member is on this node */
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
	unsigned nspans;		/* teams across nodes it is in or made */
	uint32_t ways;			/* run.c: its ranges a chunk touches */
};

struct vbe_coll_node {
	struct vbe_team *teams;
	unsigned nteams;
	struct vbe_team *run;		/* teams with an op every member posted */
	uint64_t serial;
	bool off;			/* the operator's switch: no offload here */
	const struct vbe_clink_ops *links;	/* teams across nodes; NULL: none */
	struct vbe_team *spans;		/* teams across nodes, any phase */
	unsigned nspans;
	uint32_t rounds;		/* polls: who goes first alternates */
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

/* team.c: joining and leaving */
int  vbe_coll_join(struct vbe_guest *g, const struct vrdma_req *r, uint32_t *out);
int  vbe_coll_leave(struct vbe_guest *g, const struct vrdma_req *r);
void vbe_coll_guest_gone(struct vbe_guest *g);
void vbe_coll_node_fini(struct vbe_node *n);
struct vbe_cref *vbe_coll_ref(struct vbe_guest *g, uint32_t handle);
void vbe_coll_free(struct vbe_node *n, struct vbe_team *t);

/* tell.c: a team complete here, and telling its members */
void vbe_coll_joined(struct vbe_guest *g, uint32_t handle);	/* after its CMD_DONE */
uint32_t vbe_coll_chunk_len(uint32_t size);
int  vbe_coll_work(struct vbe_coll_node *cn);
void vbe_coll_work_free(struct vbe_coll_node *cn);
void vbe_coll_say(struct vbe_team *t, uint16_t status);
void vbe_coll_unpend(struct vbe_guest *g, struct vbe_cref *ref);
void vbe_coll_tell(struct vbe_node *n);		/* EVT_TEAMs still to tell */
void vbe_coll_cqe(struct vbe_cmember *m, uint64_t id, uint8_t ws, uint32_t byte_len);
void vbe_coll_fail(struct vbe_team *t, uint8_t ws);

/* run.c */
int  vbe_coll_post(struct vbe_guest *g, const struct vrdma_req *r);
int  vbe_coll_run(struct vbe_node *n);		/* work done (node poll) */
bool vbe_coll_busy(const struct vbe_node *n);	/* keeps the loop polling */
void vbe_coll_queue(struct vbe_node *n, struct vbe_team *t);
/* shared with chain_run.c: the operation every member agreed on */
struct vbe_cx {
	const struct vrdma_coll_wr *w;	/* the first member's */
	size_t es;			/* element bytes, 1 for byte kinds */
	uint64_t vbytes;		/* what is chunked */
};
uint8_t vbe_coll_check_op(const struct vrdma_coll_wr *w, uint32_t size, struct vbe_cx *x);
void vbe_coll_lens(const struct vbe_team *t, const struct vbe_cx *x, uint32_t r,
		   uint64_t *send, uint64_t *recv);
bool vbe_coll_same(const struct vrdma_coll_wr *a, const struct vrdma_coll_wr *b);
int  vbe_coll_range(const struct vbe_team *t, const struct vbe_cx *x, uint32_t r, uint64_t seq,
		    uint8_t **sp, uint8_t **rp);
void vbe_coll_done_rank(struct vbe_team *t, const struct vbe_cx *x, uint32_t r, uint64_t seq);

/* chain.c: teams across nodes */
int  vbe_chain_layout(struct vbe_node *n, struct vbe_team *t, const uint8_t *list,
		      uint32_t len);
void vbe_chain_start(struct vbe_node *n, struct vbe_team *t);
void vbe_chain_stop(struct vbe_node *n, struct vbe_team *t);
void vbe_chain_free(struct vbe_node *n, struct vbe_team *t);
void vbe_chain_link_state(struct vbe_clink *l);	/* the transport: up or down */
void vbe_chain_kick(struct vbe_clink *l);	/* ... a message came, or room */
void vbe_chain_tick(struct vbe_node *n, int64_t now_ms);
bool vbe_chain_form(struct vbe_node *n, struct vbe_team *t);
bool vbe_chain_broken(struct vbe_node *n, struct vbe_team *t);
struct vbe_cmsg *vbe_chain_slot(struct vbe_clink *l, uint8_t type);
int  vbe_chain_put(struct vbe_node *n, struct vbe_clink *l, uint32_t len);
void vbe_chain_used(struct vbe_node *n, struct vbe_clink *l);
/* chain_run.c */
int  vbe_chain_run(struct vbe_node *n, uint64_t *budget);

#endif /* VRDMA_BACKEND_COLL_H */
