// SPDX-License-Identifier: MIT
/*
 * Teams and their collectives in the guests (libvrdma/coll/) through a
 * live vrdmad: every member is a thread with a device of its own.  Each
 * result is checked against the documented order computed here with the
 * same kernels: a node's members in rank order, then the nodes in the
 * order of their lowest rank.
 *
 * A plain host is one node.  To give a team several nodes the suite
 * builds the team code with vrdma_connect() routed through tct_connect(),
 * which connects on this node whatever node a member names: the shape
 * (leaders, the chain, the finals) is what the node list says, the bytes
 * go through the one vrdmad.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tlive.h"
#include "vrdma/coll.h"
#include "../common/coll/vcoll_reduce.h"

#define TMAX		9
#define T_MS		20000

int tct_connect(struct vrdma_qp *qp, const char *node, const char *service,
		const void *pd, size_t pdlen, void *peer, size_t *peer_len, int ms);
int tct_connect(struct vrdma_qp *qp, const char *node, const char *service,
		const void *pd, size_t pdlen, void *peer, size_t *peer_len, int ms)
{
	(void)node;
	return vrdma_connect(qp, "", service, pd, pdlen, peer, peer_len, ms);
}

struct member;
typedef void (*tct_body)(struct member *m);

struct member {
	uint32_t rank, size;
	const char *const *nodes;
	const uint8_t *key;
	tct_body body;
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
	struct vrdma_team *team;
	int create_err;
	int rc;				/* the body's verdict, 0 = fine */
	char msg[160];
	pthread_t th;
	void *arg;
};

#define M_FAIL(m, ...) do {						\
	snprintf((m)->msg, sizeof((m)->msg), __VA_ARGS__);		\
	(m)->rc = -1;							\
} while (0)

static void *member_main(void *arg)
{
	struct member *m = arg;
	struct vrdma_team_attr a = { .size = m->size, .rank = m->rank, .nodes = m->nodes };

	memcpy(a.key, m->key, sizeof(a.key));
	m->team = vrdma_team_create(m->pd, &a, T_MS);
	m->create_err = m->team ? 0 : errno;
	if (m->team || m->body)
		m->body(m);
	if (m->team)
		vrdma_team_destroy(m->team);
	return NULL;
}

/* Run @body in @size members on @nodes; every member's verdict checked
 * unless @lenient (a body that expects failures checks its own). */
static void run_team(uint32_t size, const char *const *nodes, tct_body body, void *arg)
{
	struct member m[TMAX];
	uint8_t key[VRDMA_TEAM_KEY_LEN];
	uint32_t r;

	ck_assert_uint_le(size, TMAX);
	ck_assert_int_eq(vrdma_team_key(key), 0);
	memset(m, 0, sizeof(m));
	for (r = 0; r < size; r++) {
		m[r] = (struct member){ .rank = r, .size = size, .nodes = nodes, .key = key,
					.body = body, .arg = arg };
		m[r].dev = open_dev();
		m[r].pd = vrdma_alloc_pd(m[r].dev);
		ck_assert_ptr_nonnull(m[r].pd);
	}
	for (r = 0; r < size; r++)
		ck_assert_int_eq(pthread_create(&m[r].th, NULL, member_main, &m[r]), 0);
	for (r = 0; r < size; r++)
		pthread_join(m[r].th, NULL);
	char all[TMAX * 180] = "";
	size_t used = 0;

	for (r = 0; r < size; r++) {
		if (m[r].rc)
			used += (size_t)snprintf(all + used, sizeof(all) - used, " [rank %u: %s]",
						 r, m[r].msg);
		vrdma_dealloc_pd(m[r].pd);
		vrdma_close(m[r].dev);
	}
	ck_assert_msg(!used, "%s", all);
}

/* ---- the reference: the documented order, with vcoll's kernels ---- */

static const char *const one_node[TMAX] = { "n", "n", "n", "n", "n", "n", "n", "n", "n" };
/* three nodes, interleaved ranks, uneven: a = {0, 3, 4}, b = {1, 5}, c = {2} */
static const char *const three_nodes[6] = { "a", "b", "c", "a", "a", "b" };

/* Member r's element i of a vector of type t: values that make float
 * sums order-sensitive, so a wrong grouping shows in the bits. */
static void fill(uint32_t type, uint32_t r, void *v, size_t n, uint32_t salt)
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

/* The team's result for members' vectors: P(node) folds, then nodes. */
static void *reference(uint32_t size, const char *const *nodes, uint32_t type, uint32_t op,
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

struct red_case {
	uint32_t type, op;
	size_t n;
	bool in_place;
	void *want;
};

static void body_allreduce(struct member *m)
{
	struct red_case *c = m->arg;
	size_t es = vcoll_type_size(c->type);
	void *s = malloc(c->n * es + 1), *d = malloc(c->n * es + 1);
	int rc;

	if (!m->team) {
		M_FAIL(m, "create: %s", strerror(m->create_err));
		goto out;
	}
	fill(c->type, m->rank, s, c->n, 7);
	if (c->in_place)
		memcpy(d, s, c->n * es);
	rc = vrdma_allreduce(m->team, c->in_place ? d : s, d, c->n, c->type, c->op, T_MS);
	if (rc)
		M_FAIL(m, "allreduce %s %s n=%zu: %s", vcoll_type_name(c->type),
		       vcoll_op_name(c->op), c->n, strerror(rc));
	else if (c->n && memcmp(d, c->want, c->n * es))
		M_FAIL(m, "allreduce %s %s n=%zu: not the documented order's bits",
		       vcoll_type_name(c->type), vcoll_op_name(c->op), c->n);
out:
	free(s);
	free(d);
}

static void allreduce_on(uint32_t size, const char *const *nodes, uint32_t type, uint32_t op,
			 size_t n, bool in_place)
{
	struct red_case c = { type, op, n, in_place, reference(size, nodes, type, op, n, 7) };

	run_team(size, nodes, body_allreduce, &c);
	free(c.want);
}

START_TEST(t_allreduce_types_ops)
{
	NEED_DAEMON();
	for (uint32_t t = VRDMA_COLL_INT32; t <= VRDMA_COLL_DOUBLE; t++)
		for (uint32_t o = VRDMA_COLL_SUM; o <= VRDMA_COLL_BXOR; o++) {
			if (vcoll_check(t, o, 1, NULL))
				continue;	/* bitwise on float */
			allreduce_on(4, one_node, t, o, 1001, false);
		}
}
END_TEST

START_TEST(t_allreduce_sizes)
{
	/* 0, 1, odd, a chunk and one, several chunks and an odd tail */
	static const size_t n[] = { 0, 1, 3, 32768, 32769, 3 * 16384 + 5 };

	NEED_DAEMON();
	for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++)
		allreduce_on(3, one_node, VRDMA_COLL_DOUBLE, VRDMA_COLL_SUM, n[i], i & 1);
}
END_TEST

START_TEST(t_allreduce_nodes)
{
	NEED_DAEMON();
	allreduce_on(6, three_nodes, VRDMA_COLL_FLOAT, VRDMA_COLL_SUM, 70001, false);
	allreduce_on(6, three_nodes, VRDMA_COLL_DOUBLE, VRDMA_COLL_PROD, 33, true);
	allreduce_on(6, three_nodes, VRDMA_COLL_INT64, VRDMA_COLL_MAX, 5, false);
	allreduce_on(1, one_node, VRDMA_COLL_DOUBLE, VRDMA_COLL_SUM, 9, false);
}
END_TEST

/* ---- bcast, reduce, allgather, barrier, non-blocking ---- */

static uint8_t pat(uint32_t r, size_t i)
{
	return (uint8_t)(i * 131 + r * 29 + (i >> 9));
}

#define BC_LEN		(3 * (128u << 10) + 7)
#define AG_LEN		((64u << 10) + 3)

static bool check_pat(struct member *m, const uint8_t *b, size_t len, uint32_t r,
		      const char *what)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != pat(r, i)) {
			M_FAIL(m, "%s: byte %zu of rank %u's data is %#x", what, i, r, b[i]);
			return false;
		}
	return true;
}

static void body_mixed(struct member *m)
{
	const uint32_t n = 1000;
	uint8_t *b = malloc(BC_LEN), *ag = malloc((size_t)AG_LEN * m->size);
	int32_t *s = malloc(n * 4), *d = malloc(n * 4), *want = m->arg;
	int32_t *nb_s[3], *nb_d[3];
	uint64_t seq[3];
	const char *what = "bcast";
	uint32_t r, i, flags;
	int rc = 0;

	if (!m->team) {
		M_FAIL(m, "create: %s", strerror(m->create_err));
		goto out;
	}
	for (r = 0; r < m->size && !m->rc; r++) {	/* every root */
		for (i = 0; i < BC_LEN; i++)
			b[i] = m->rank == r ? pat(r, i) : 0x5a;
		rc = vrdma_bcast(m->team, b, BC_LEN, r, T_MS);
		if (rc)
			goto fail;
		check_pat(m, b, BC_LEN, r, "bcast");
	}
	rc = vrdma_bcast(m->team, NULL, 0, 1, T_MS);
	if (rc)
		goto fail;

	what = "reduce";
	fill(VRDMA_COLL_INT32, m->rank, s, n, 7);
	memset(d, 0xaa, n * 4);
	rc = vrdma_reduce(m->team, s, m->rank == 2 ? d : NULL, n, VRDMA_COLL_INT32,
			  VRDMA_COLL_SUM, 2, T_MS);
	if (rc)
		goto fail;
	if (m->rank == 2 && memcmp(d, want, n * 4))
		M_FAIL(m, "reduce: the root's result is wrong");

	what = "allgather";
	for (i = 0; i < AG_LEN; i++)
		b[i] = pat(m->rank, i);
	memset(ag, 0, (size_t)AG_LEN * m->size);
	rc = vrdma_allgather(m->team, b, ag, AG_LEN, T_MS);
	if (rc)
		goto fail;
	for (r = 0; r < m->size && !m->rc; r++)
		check_pat(m, ag + (size_t)r * AG_LEN, AG_LEN, r, "allgather");
	/* in place: this member's block already where it goes */
	memset(ag, 0, (size_t)AG_LEN * m->size);
	for (i = 0; i < AG_LEN; i++)
		ag[(size_t)m->rank * AG_LEN + i] = pat(m->rank, i);
	rc = vrdma_allgather(m->team, ag + (size_t)m->rank * AG_LEN, ag, AG_LEN, T_MS);
	if (rc)
		goto fail;
	for (r = 0; r < m->size && !m->rc; r++)
		check_pat(m, ag + (size_t)r * AG_LEN, AG_LEN, r, "allgather in place");

	what = "barrier";
	for (i = 0; i < 3; i++) {
		rc = vrdma_barrier(m->team, T_MS);
		if (rc)
			goto fail;
	}

	what = "posted allreduce";
	/* three posted before any wait, waited for by the last */
	for (i = 0; i < 3; i++) {
		struct vrdma_coll_args a = {
			.kind = VRDMA_COLL_ALLREDUCE, .type = VRDMA_COLL_INT32,
			.op = VRDMA_COLL_SUM, .count = n,
		};

		nb_s[i] = malloc(n * 4);
		nb_d[i] = malloc(n * 4);
		fill(VRDMA_COLL_INT32, m->rank, nb_s[i], n, 7);
		a.sendbuf = nb_s[i];
		a.recvbuf = nb_d[i];
		rc = vrdma_coll_post(m->team, &a, &seq[i]);
		if (rc)
			goto fail;
	}
	rc = vrdma_coll_wait(m->team, seq[2], &flags, T_MS);
	if (rc)
		goto fail;
	for (i = 0; i < 3; i++) {
		if (memcmp(nb_d[i], want, n * 4))
			M_FAIL(m, "posted allreduce %u: wrong result", i);
		if (vrdma_coll_wait(m->team, seq[i], NULL, 0))
			M_FAIL(m, "posted allreduce %u: not done after a later one", i);
		free(nb_s[i]);
		free(nb_d[i]);
	}
	if (flags & VRDMA_COLL_OFFLOADED)
		M_FAIL(m, "the fallback said offloaded");
	goto out;
fail:
	M_FAIL(m, "%s: %s", what, strerror(rc));
out:
	free(b);
	free(ag);
	free(s);
	free(d);
}

START_TEST(t_mixed)
{
	const char *const *shape[2] = { one_node, three_nodes };
	uint32_t size[2] = { 4, 6 };

	NEED_DAEMON();
	for (int i = 0; i < 2; i++) {
		int32_t *want = reference(size[i], shape[i], VRDMA_COLL_INT32, VRDMA_COLL_SUM,
					  1000, 7);

		run_team(size[i], shape[i], body_mixed, want);
		free(want);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("test_coll_team");
	TCase *live = tlive_tcase();

	tcase_set_timeout(live, 300);
	tcase_add_test(live, t_allreduce_types_ops);
	tcase_add_test(live, t_allreduce_sizes);
	tcase_add_test(live, t_allreduce_nodes);
	tcase_add_test(live, t_mixed);
	suite_add_tcase(s, live);
	return tlive_main("test_coll_team", s);
}
