// SPDX-License-Identifier: MIT
/* Member-thread harness of the team suites (tcoll.h). */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tcoll.h"
#include "tlive.h"
#include "../common/coll/vcoll_reduce.h"

void (*tct_connected)(const char *service, int rc);

int tct_connect(struct vrdma_qp *qp, const char *node, const char *service,
		const void *pd, size_t pdlen, void *peer, size_t *peer_len, int ms)
{
	int rc;

	(void)node;
	rc = vrdma_connect(qp, "", service, pd, pdlen, peer, peer_len, ms);
	if (tct_connected)
		tct_connected(service, rc);
	return rc;
}

static void *member_main(void *arg)
{
	struct member *m = arg;
	struct vrdma_team_attr a = { .size = m->size, .rank = m->rank, .nodes = m->nodes };

	memcpy(a.key, m->key, sizeof(a.key));
	if (m->before)
		m->before(m);
	m->team = vrdma_team_create(m->pd, &a, m->create_ms ? m->create_ms : T_MS);
	m->create_err = m->team ? 0 : errno;
	if (m->team || m->body)
		m->body(m);
	if (m->hold)
		pthread_barrier_wait(&m->tt->held);
	if (m->team)
		vrdma_team_destroy(m->team);
	return NULL;
}

void tc_init(struct tc_team *tt, uint32_t size, const char *const *nodes, tct_body body,
	     void *arg)
{
	uint32_t r;

	ck_assert_uint_le(size, TMAX);
	memset(tt, 0, sizeof(*tt));
	tt->size = size;
	ck_assert_int_eq(vrdma_team_key(tt->key), 0);
	for (r = 0; r < size; r++)
		tt->m[r] = (struct member){ .rank = r, .size = size, .nodes = nodes,
					    .key = tt->key, .body = body, .arg = arg, .tt = tt };
}

void tc_run(struct tc_team *tt)
{
	uint32_t r, present = 0;

	for (r = 0; r < tt->size; r++) {
		struct member *m = &tt->m[r];

		if (m->absent)
			continue;
		present++;
		m->dev = open_dev();
		m->pd = vrdma_alloc_pd(m->dev);
		ck_assert_ptr_nonnull(m->pd);
	}
	ck_assert_int_eq(pthread_barrier_init(&tt->held, NULL, present ? present : 1), 0);
	for (r = 0; r < tt->size; r++)
		if (!tt->m[r].absent)
			ck_assert_int_eq(pthread_create(&tt->m[r].th, NULL, member_main,
							&tt->m[r]), 0);
	for (r = 0; r < tt->size; r++)
		if (!tt->m[r].absent)
			pthread_join(tt->m[r].th, NULL);
	pthread_barrier_destroy(&tt->held);
}

void tc_done(struct tc_team *tt)
{
	char all[TMAX * 180] = "";
	size_t used = 0;
	uint32_t r;

	for (r = 0; r < tt->size; r++) {
		struct member *m = &tt->m[r];

		if (m->absent)
			continue;
		if (m->rc)
			used += (size_t)snprintf(all + used, sizeof(all) - used, " [rank %u: %s]",
						 r, m->msg);
		vrdma_dealloc_pd(m->pd);
		vrdma_close(m->dev);
	}
	ck_assert_msg(!used, "%s", all);
}

void run_team(uint32_t size, const char *const *nodes, tct_body body, void *arg)
{
	struct tc_team tt;

	tc_init(&tt, size, nodes, body, arg);
	tc_run(&tt);
	tc_done(&tt);
}

/* ---- the reference: the documented order, with vcoll's kernels ---- */

const char *const one_node[TMAX] = { "n", "n", "n", "n", "n", "n", "n", "n", "n" };
const char *const three_nodes[6] = { "a", "b", "c", "a", "a", "b" };

void fill(uint32_t type, uint32_t r, void *v, size_t n, uint32_t salt)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t x = (r + 1) * 2654435761u + i * 40503u + salt;

		switch (type) {
		case VRDMA_COLL_INT32: ((int32_t *)v)[i] = (int32_t)(x * 2246822519u); break;
		case VRDMA_COLL_UINT32: ((uint32_t *)v)[i] = (uint32_t)(x * 3266489917u); break;
		case VRDMA_COLL_INT64: ((int64_t *)v)[i] = (int64_t)(x * 0x9e3779b97f4a7c15ull); break;
		case VRDMA_COLL_UINT64: ((uint64_t *)v)[i] = x * 0xc2b2ae3d27d4eb4full; break;
		case VRDMA_COLL_FLOAT:
			((float *)v)[i] = (float)ldexp((double)(x % 1000003) + 0.1, (int)(x % 41) - 20);
			break;
		case VRDMA_COLL_DOUBLE:
			((double *)v)[i] = ldexp((double)(x % 1000003) + 0.1, (int)(x % 61) - 30);
			break;
		}
	}
}

void *reference(uint32_t size, const char *const *nodes, uint32_t type, uint32_t op,
		size_t n, uint32_t salt)
{
	size_t es = vcoll_type_size(type);
	void **vec = calloc(size, sizeof(*vec));
	const void **srcs = calloc(size, sizeof(*srcs));
	void **part = calloc(size, sizeof(*part));
	void *res = malloc(n * es + 1);
	uint32_t r, q, nn = 0, k;

	for (r = 0; r < size; r++) {
		vec[r] = malloc(n * es + 1);
		fill(type, r, vec[r], n, salt);
	}
	for (r = 0; r < size; r++) {		/* r leads a node: fold its members */
		uint32_t c = 0;

		for (q = 0; q < r && strcmp(nodes[q], nodes[r]); q++)
			;
		if (q < r)
			continue;
		for (q = r; q < size; q++)
			if (!strcmp(nodes[q], nodes[r]))
				srcs[c++] = vec[q];
		part[nn] = malloc(n * es + 1);
		ck_assert_int_eq(vcoll_fold(type, op, part[nn], srcs, c, n), 0);
		nn++;
	}
	for (k = 0; k < nn; k++)
		srcs[k] = part[k];
	ck_assert_int_eq(vcoll_fold(type, op, res, srcs, nn, n), 0);
	for (k = 0; k < nn; k++)
		free(part[k]);
	for (r = 0; r < size; r++)
		free(vec[r]);
	free(vec);
	free(srcs);
	free(part);
	return res;
}
