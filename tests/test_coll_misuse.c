// SPDX-License-Identifier: MIT
/*
 * vrdma/coll.h misused, through a live vrdmad: every bad argument gets
 * its documented error (EINVAL, EOVERFLOW, ENOSPC), never a crash, and a
 * refused call starts nothing: the team works on afterwards.  The calls
 * are checked before either mode's engine sees them (ops.c), so teams of
 * one do: one named after another node (through tcoll.h's connect seam)
 * and one on the device's own node, which passes the offload's choice
 * (a team of one stays in the guest).
 */
#include <check.h>
#include <errno.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tcoll.h"
#include "tlive.h"

#define GIB		(1ull << 30)

static struct vrdma_team *team_of_one(struct vrdma_pd *pd, const char *node, uint32_t flags)
{
	const char *nodes[1] = { node };
	struct vrdma_team_attr a = { .size = 1, .nodes = nodes, .flags = flags };
	struct vrdma_team *t;

	ck_assert_int_eq(vrdma_team_key(a.key), 0);
	t = vrdma_team_create(pd, &a, T_MS);
	ck_assert_msg(t != NULL, "a team of one on '%s': %s", node, strerror(errno));
	return t;
}

/* The team still reduces after the refusals: nothing was started. */
static void still_works(struct vrdma_team *t)
{
	double s[3] = { 1.5, -2, 4 }, r[3] = { 0 };
	struct vrdma_team_info info;

	ck_assert_int_eq(vrdma_allreduce(t, s, r, 3, VRDMA_COLL_DOUBLE, VRDMA_COLL_SUM, T_MS), 0);
	ck_assert(!memcmp(s, r, sizeof(s)));
	ck_assert_int_eq(vrdma_barrier(t, T_MS), 0);
	ck_assert_int_eq(vrdma_team_query(t, &info), 0);
	ck_assert_uint_eq(info.ops, 2);
}

#define NO_TEAM(pd, attr, ms) do {					\
	errno = 0;							\
	ck_assert_ptr_null(vrdma_team_create(pd, attr, ms));		\
	ck_assert_int_eq(errno, EINVAL);				\
} while (0)

START_TEST(t_create_args)
{
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
	const char *nodes[2] = { "n", "n" };
	char long_name[VRDMA_MAX_NAME + 2];
	struct vrdma_team_attr a = { .size = 2, .rank = 0, .nodes = nodes };
	struct vrdma_team_attr b;
	struct vrdma_team *t;

	NEED_DAEMON();
	dev = open_dev();
	pd = vrdma_alloc_pd(dev);
	ck_assert_ptr_nonnull(pd);
	ck_assert_int_eq(vrdma_team_key(NULL), EINVAL);
	ck_assert_int_eq(vrdma_team_key(a.key), 0);

	NO_TEAM(NULL, &a, T_MS);
	NO_TEAM(pd, NULL, T_MS);
	NO_TEAM(pd, &a, -1);
	b = a, b.nodes = NULL;
	NO_TEAM(pd, &b, T_MS);
	b = a, b.size = 0;
	NO_TEAM(pd, &b, T_MS);
	b = a, b.size = VRDMA_TEAM_MAX_SIZE + 1;
	NO_TEAM(pd, &b, T_MS);
	b = a, b.rank = 2;
	NO_TEAM(pd, &b, T_MS);
	b = a, b.rank = UINT32_MAX;
	NO_TEAM(pd, &b, T_MS);
	b = a, b.flags = VRDMA_TEAM_NO_OFFLOAD << 1;
	NO_TEAM(pd, &b, T_MS);
	b = a, b.reserved = 1;
	NO_TEAM(pd, &b, T_MS);
	nodes[1] = NULL;
	NO_TEAM(pd, &a, T_MS);
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';	/* VRDMA_MAX_NAME + 1 */
	nodes[1] = long_name;
	NO_TEAM(pd, &a, T_MS);

	/* the longest name and the flag that exists are fine */
	long_name[VRDMA_MAX_NAME] = '\0';
	t = team_of_one(pd, long_name, VRDMA_TEAM_NO_OFFLOAD);
	still_works(t);
	ck_assert_int_eq(vrdma_team_destroy(t), 0);

	ck_assert_int_eq(vrdma_team_destroy(NULL), EINVAL);
	vrdma_dealloc_pd(pd);
	vrdma_close(dev);
}
END_TEST

static void misuse_calls(struct vrdma_team *t)
{
	struct vrdma_coll_args a = { .kind = VRDMA_COLL_ALLREDUCE, .type = VRDMA_COLL_INT32,
				     .op = VRDMA_COLL_SUM, .count = 1 };
	struct vrdma_coll_args b;
	struct vrdma_team_info info;
	uint64_t big = 0, seq = 7;	/* never touched: refused before */
	int32_t x[4] = { 0 };
	void *p = &big;

	ck_assert_int_eq(vrdma_team_query(NULL, &info), EINVAL);
	ck_assert_int_eq(vrdma_team_query(t, NULL), EINVAL);
	ck_assert_int_eq(vrdma_coll_post(NULL, &a, &seq), EINVAL);
	ck_assert_int_eq(vrdma_coll_post(t, NULL, &seq), EINVAL);
	ck_assert_uint_eq(seq, 7);

	/* kinds, types, ops */
	b = a, b.kind = 0;
	ck_assert_int_eq(vrdma_coll_post(t, &b, NULL), EINVAL);
	b = a, b.kind = VRDMA_COLL_ALLGATHER + 1;
	ck_assert_int_eq(vrdma_coll_post(t, &b, NULL), EINVAL);
	b = a, b.type = 0, b.sendbuf = x, b.recvbuf = x;
	ck_assert_int_eq(vrdma_coll_post(t, &b, NULL), EINVAL);
	b.type = VRDMA_COLL_DOUBLE + 1;
	ck_assert_int_eq(vrdma_coll_post(t, &b, NULL), EINVAL);
	b = a, b.op = 0, b.sendbuf = x, b.recvbuf = x;
	ck_assert_int_eq(vrdma_coll_post(t, &b, NULL), EINVAL);
	b.op = VRDMA_COLL_BXOR + 1;
	ck_assert_int_eq(vrdma_coll_post(t, &b, NULL), EINVAL);
	for (uint32_t op = VRDMA_COLL_BAND; op <= VRDMA_COLL_BXOR; op++) {
		ck_assert_int_eq(vrdma_allreduce(t, x, x, 1, VRDMA_COLL_FLOAT, op, T_MS), EINVAL);
		ck_assert_int_eq(vrdma_allreduce(t, x, x, 1, VRDMA_COLL_DOUBLE, op, T_MS), EINVAL);
	}

	/* buffers */
	ck_assert_int_eq(vrdma_allreduce(t, NULL, x, 1, VRDMA_COLL_INT32, VRDMA_COLL_SUM, T_MS),
			 EINVAL);
	ck_assert_int_eq(vrdma_allreduce(t, x, NULL, 1, VRDMA_COLL_INT32, VRDMA_COLL_SUM, T_MS),
			 EINVAL);
	ck_assert_int_eq(vrdma_reduce(t, x, NULL, 1, VRDMA_COLL_INT32, VRDMA_COLL_SUM, 0, T_MS),
			 EINVAL);	/* rank 0 is the root: it needs one */
	ck_assert_int_eq(vrdma_bcast(t, NULL, 1, 0, T_MS), EINVAL);
	ck_assert_int_eq(vrdma_allgather(t, NULL, x, 1, T_MS), EINVAL);
	ck_assert_int_eq(vrdma_allgather(t, x, NULL, 1, T_MS), EINVAL);

	/* roots, and fields a kind does not take */
	ck_assert_int_eq(vrdma_reduce(t, x, x, 1, VRDMA_COLL_INT32, VRDMA_COLL_SUM, 1, T_MS),
			 EINVAL);
	ck_assert_int_eq(vrdma_reduce(t, x, x, 0, VRDMA_COLL_INT32, VRDMA_COLL_SUM, UINT32_MAX,
				      T_MS), EINVAL);
	ck_assert_int_eq(vrdma_bcast(t, x, 4, 1, T_MS), EINVAL);
	b = (struct vrdma_coll_args){ .kind = VRDMA_COLL_BCAST, .recvbuf = x, .count = 4,
				      .type = VRDMA_COLL_INT32 };
	ck_assert_int_eq(vrdma_coll_post(t, &b, NULL), EINVAL);
	b = (struct vrdma_coll_args){ .kind = VRDMA_COLL_BARRIER, .count = 1 };
	ck_assert_int_eq(vrdma_coll_post(t, &b, NULL), EINVAL);
	b = (struct vrdma_coll_args){ .kind = VRDMA_COLL_BARRIER, .root = 1 };
	ck_assert_int_eq(vrdma_coll_post(t, &b, NULL), EINVAL);
	b = (struct vrdma_coll_args){ .kind = VRDMA_COLL_ALLGATHER, .sendbuf = x, .recvbuf = x,
				      .count = 4, .op = VRDMA_COLL_SUM };
	ck_assert_int_eq(vrdma_coll_post(t, &b, NULL), EINVAL);

	/* vectors over 1 GiB: refused before a byte is read */
	ck_assert_int_eq(vrdma_allreduce(t, p, p, GIB / 4 + 1, VRDMA_COLL_INT32, VRDMA_COLL_SUM,
					 T_MS), EOVERFLOW);
	ck_assert_int_eq(vrdma_allreduce(t, p, p, GIB / 8 + 1, VRDMA_COLL_DOUBLE, VRDMA_COLL_MAX,
					 T_MS), EOVERFLOW);
	ck_assert_int_eq(vrdma_allreduce(t, p, p, SIZE_MAX, VRDMA_COLL_INT64, VRDMA_COLL_SUM,
					 T_MS), EOVERFLOW);
	ck_assert_int_eq(vrdma_reduce(t, p, p, SIZE_MAX / 2, VRDMA_COLL_UINT32, VRDMA_COLL_BOR, 0,
				      T_MS), EOVERFLOW);
	ck_assert_int_eq(vrdma_bcast(t, p, GIB + 1, 0, T_MS), EOVERFLOW);
	ck_assert_int_eq(vrdma_bcast(t, p, SIZE_MAX, 0, T_MS), EOVERFLOW);
	ck_assert_int_eq(vrdma_allgather(t, p, p, GIB + 1, T_MS), EOVERFLOW);
	ck_assert_int_eq(vrdma_allgather(t, p, p, SIZE_MAX, T_MS), EOVERFLOW);

	/* waits and timeouts */
	ck_assert_int_eq(vrdma_coll_wait(NULL, 1, NULL, 0), EINVAL);
	ck_assert_int_eq(vrdma_coll_wait(t, 0, NULL, 0), EINVAL);
	ck_assert_int_eq(vrdma_coll_wait(t, 1, NULL, 0), EINVAL);	/* never posted */
	ck_assert_int_eq(vrdma_coll_wait(t, UINT64_MAX, NULL, T_MS), EINVAL);
	ck_assert_int_eq(vrdma_allreduce(t, x, x, 1, VRDMA_COLL_INT32, VRDMA_COLL_SUM, -1),
			 EINVAL);
	ck_assert_int_eq(vrdma_barrier(t, -1), EINVAL);
	ck_assert_int_eq(vrdma_barrier(NULL, T_MS), EINVAL);
	ck_assert_int_eq(vrdma_allreduce(NULL, x, x, 1, VRDMA_COLL_INT32, VRDMA_COLL_SUM, T_MS),
			 EINVAL);

	still_works(t);
	/* the operations done: a wait for them is a test that succeeds,
	 * one past them is still never posted, a negative limit refused */
	ck_assert_int_eq(vrdma_coll_wait(t, 2, NULL, 0), 0);
	ck_assert_int_eq(vrdma_coll_wait(t, 3, NULL, 0), EINVAL);
	ck_assert_int_eq(vrdma_coll_wait(t, 2, NULL, -1), EINVAL);
}

START_TEST(t_call_args)
{
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
	struct vrdma_team *t;
	struct vrdma_team_info info;

	NEED_DAEMON();
	dev = open_dev();
	pd = vrdma_alloc_pd(dev);
	ck_assert_ptr_nonnull(pd);
	/* another node's name: the members run it */
	t = team_of_one(pd, "n", 0);
	ck_assert_int_eq(vrdma_team_query(t, &info), 0);
	ck_assert_uint_eq(info.mode, VRDMA_TEAM_FALLBACK);
	misuse_calls(t);
	ck_assert_int_eq(vrdma_team_destroy(t), 0);
	/* this device's node: past the offload's choice */
	t = team_of_one(pd, vrdma_node_name(dev), 0);
	misuse_calls(t);
	ck_assert_int_eq(vrdma_team_destroy(t), 0);
	vrdma_dealloc_pd(pd);
	vrdma_close(dev);
}
END_TEST

/* ---- 64 pending: rank 0 posts while rank 1 holds back ---- */

static void body_pending(struct member *m)
{
	sem_t *go = m->arg;
	struct vrdma_coll_args a = { .kind = VRDMA_COLL_BARRIER };
	uint64_t seq = 0, s;
	int i, rc;

	if (!m->team) {
		M_FAIL(m, "create: %s", strerror(m->create_err));
		sem_post(go);
		return;
	}
	if (m->rank == 1) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 30;
		while (sem_timedwait(go, &ts) && errno == EINTR)
			;
	}
	for (i = 0; i < 64; i++)
		if ((rc = vrdma_coll_post(m->team, &a, &seq))) {
			M_FAIL(m, "post %d: %s", i + 1, strerror(rc));
			goto out;
		}
	if (m->rank == 0) {
		s = seq;
		if ((rc = vrdma_coll_post(m->team, &a, &s)) != ENOSPC || s != seq)
			M_FAIL(m, "a 65th pending: %s", strerror(rc));
		else if ((rc = vrdma_coll_wait(m->team, seq + 1, NULL, 0)) != EINVAL)
			M_FAIL(m, "wait for the refused one: %s", strerror(rc));
		else if ((rc = vrdma_coll_wait(m->team, seq, NULL, 0)) != EAGAIN)
			M_FAIL(m, "test, the other not there: %s", strerror(rc));
	}
out:
	if (m->rank == 0)
		sem_post(go);
	if (!m->rc && (rc = vrdma_coll_wait(m->team, seq, NULL, T_MS)))
		M_FAIL(m, "wait for the 64th: %s", strerror(rc));
	/* room again: the team goes on */
	if (!m->rc && (rc = vrdma_barrier(m->team, T_MS)))
		M_FAIL(m, "a barrier after: %s", strerror(rc));
}

START_TEST(t_pending_limit)
{
	sem_t go;

	NEED_DAEMON();
	ck_assert_int_eq(sem_init(&go, 0, 0), 0);
	run_team(2, one_node, body_pending, &go);
	sem_destroy(&go);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("test_coll_misuse");
	TCase *live = tlive_tcase();

	tcase_add_test(live, t_create_args);
	tcase_add_test(live, t_call_args);
	tcase_add_test(live, t_pending_limit);
	suite_add_tcase(s, live);
	return tlive_main("test_coll_misuse", s);
}
