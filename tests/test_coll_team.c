// SPDX-License-Identifier: MIT
/*
 * Teams and their collectives in the guests (libvrdma/coll/) through a
 * live vrdmad: every member is a thread with a device of its own.  Each
 * result is checked against the documented order computed here with the
 * same kernels: a node's members in rank order, then the nodes in the
 * order of their lowest rank.  Several nodes on one host: tcoll.h.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tcoll.h"
#include "tlive.h"
#include "../common/coll/vcoll_reduce.h"

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
