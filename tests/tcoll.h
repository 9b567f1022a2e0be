/* SPDX-License-Identifier: MIT */
/*
 * Member-thread harness of the team suites (test_coll_team,
 * test_coll_fault): every member is a thread with a vrdma device of its
 * own on the test's live vrdmad (tlive.h).
 *
 * A plain host is one node.  The suites build the team code with
 * vrdma_connect() routed through tct_connect(), which connects on this
 * node whatever node a member names: the shape (leaders, the chain, the
 * finals) is what the node list says, the bytes go through the one vrdmad.
 */
#ifndef VRDMA_TCOLL_H
#define VRDMA_TCOLL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vrdma/coll.h"

#define TMAX		9
#define T_MS		20000

/* The team code's vrdma_connect(); @tct_connected, if set, is told of
 * every connect it made (service, result), from the connecting thread. */
int tct_connect(struct vrdma_qp *qp, const char *node, const char *service,
		const void *pd, size_t pdlen, void *peer, size_t *peer_len, int ms);
extern void (*tct_connected)(const char *service, int rc);

struct member;
typedef void (*tct_body)(struct member *m);

struct member {
	uint32_t rank, size;
	const char *const *nodes;
	const uint8_t *key;
	tct_body body;
	tct_body before;		/* if set: runs before the create */
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
	struct vrdma_team *team;
	int create_ms;			/* 0: T_MS */
	bool absent;			/* no thread, no device: played
					 * elsewhere or never joins */
	bool hold;			/* keep the team until every member's
					 * body returned */
	int create_err;
	int rc;				/* the body's verdict, 0 = fine */
	char msg[160];
	pthread_t th;
	void *arg;
	struct tc_team *tt;
};

struct tc_team {
	uint32_t size;
	uint8_t key[VRDMA_TEAM_KEY_LEN];
	struct member m[TMAX];
	pthread_barrier_t held;
};

#define M_FAIL(m, ...) do {						\
	snprintf((m)->msg, sizeof((m)->msg), __VA_ARGS__);		\
	(m)->rc = -1;							\
} while (0)

/* A team of @size members on @nodes running @body, a fresh key; nothing
 * opened yet, so a test may change members (or fork) before tc_run(). */
void tc_init(struct tc_team *tt, uint32_t size, const char *const *nodes, tct_body body,
	     void *arg);
/* Open the present members' devices, run them, join them. */
void tc_run(struct tc_team *tt);
/* Every member's verdict checked; PDs and devices closed. */
void tc_done(struct tc_team *tt);
/* The three in one: every member's verdict checked. */
void run_team(uint32_t size, const char *const *nodes, tct_body body, void *arg);

extern const char *const one_node[TMAX];
/* three nodes, interleaved ranks, uneven: a = {0, 3, 4}, b = {1, 5}, c = {2} */
extern const char *const three_nodes[6];

/* Member r's element i of a vector of type t: values that make float
 * sums order-sensitive, so a wrong grouping shows in the bits. */
void fill(uint32_t type, uint32_t r, void *v, size_t n, uint32_t salt);
/* The team's result for members' vectors: P(node) folds, then nodes. */
void *reference(uint32_t size, const char *const *nodes, uint32_t type, uint32_t op,
		size_t n, uint32_t salt);

#endif /* VRDMA_TCOLL_H */
