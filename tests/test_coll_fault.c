// SPDX-License-Identifier: MIT
/*
 * Teams that go wrong (libvrdma/coll/, vrdma/coll.h's error model) through
 * a live vrdmad, members as threads (tcoll.h) or as child processes where
 * a member must die.  Every case ends in a clear error within a bounded
 * time, never a hang: members that must fail get short limits (C_MS,
 * W_MS), members that must not wait T_MS, and a case that waited that
 * long fails on its error code, not on a clock.
 *
 *   a member never joins               ETIMEDOUT at create, everywhere
 *   node lists or sizes differ         EPROTO where seen, else ETIMEDOUT
 *   a member dies in an allreduce      ECONNRESET, a new team still works
 *   a member posts late                wait's ETIMEDOUT, then the result
 *   a blocking call times out          ETIMEDOUT there and later, others
 *                                      ECONNRESET
 *   arguments disagree                 EPROTO where seen, ECONNRESET else
 *   a stranger connects, wrong key     refused; the team comes up
 *
 * Misuse by one caller is test_coll_misuse's.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcoll.h"
#include "tlive.h"
#include "../common/coll/vcoll_reduce.h"

#define C_MS		1500	/* a create that must fail */
/* A create that must see a mismatch: room to retry a join that the
 * leader's libvrdma dropped (a CONN_REQUEST in the same batch of events
 * as the answer to its LISTEN finds no listener yet; team.c retries a
 * join after 2 s) */
#define M_MS		5000
#define W_MS		300	/* a wait that must time out */
#define N		(100000u)	/* int32s: four steps of the engine */

static const char *const two_b[6] = { "a", "b", "c", "a", "b", "b" };
static const char *const n_n_m[3] = { "n", "n", "m" };

static const char *const *const shapes[] = { one_node, three_nodes };
static const uint32_t shape_size[] = { 3, 6 };

/* Wait on @s at most 30 s: a member that waits for another never hangs. */
static int sem_wait_30s(sem_t *s)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	while (sem_timedwait(s, &ts))
		if (errno != EINTR)
			return -1;
	return 0;
}

static bool is_one_of(int rc, int a, int b)
{
	return rc == a || rc == b;
}

/* ---- creation: a member missing, members that disagree on the team ---- */

static void body_no_team(struct member *m)
{
	int *want = m->arg;

	if (m->team)
		M_FAIL(m, "create succeeded; wanted it to fail");
	else if (!is_one_of(m->create_err, want[0], want[1]))
		M_FAIL(m, "create: %s", strerror(m->create_err));
}

START_TEST(t_never_joins)
{
	/* the absent one: a member, a leader both nodes wait for, node 0 */
	static const struct { uint32_t s, absent; } c[] = { { 0, 2 }, { 1, 1 }, { 1, 0 } };
	int want[2] = { ETIMEDOUT, ETIMEDOUT };
	struct tc_team tt;

	NEED_DAEMON();
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		tc_init(&tt, shape_size[c[i].s], shapes[c[i].s], body_no_team, want);
		for (uint32_t r = 0; r < tt.size; r++)
			tt.m[r].create_ms = C_MS;
		tt.m[c[i].absent].absent = true;
		tc_run(&tt);
		tc_done(&tt);
	}
}
END_TEST

struct mismatch {
	uint32_t s, rank;		/* shape, the member that differs */
	uint32_t size;			/* its size (0: the team's) */
	const char *const *nodes;	/* its list (NULL: the team's) */
	bool seen;			/* a leader waits for its join */
};

START_TEST(t_mismatch)
{
	static const struct mismatch c[] = {
		{ 0, 2, 0, n_n_m, true },	/* one member alone on a node */
		{ 0, 1, 4, NULL, true },	/* one member counts four */
		{ 0, 0, 2, NULL, true },	/* the leader counts two */
		{ 1, 2, 5, NULL, true },	/* the last leader counts five */
		/* rank 4 on b, not a: it joins b's leader, which may have had
		 * every join it waits for already, and a's never sees it */
		{ 1, 4, 0, two_b, false },
	};
	int want[2] = { EPROTO, ETIMEDOUT };
	struct tc_team tt;

	NEED_DAEMON();
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct member *odd;
		uint32_t r, eproto = 0;

		tc_init(&tt, shape_size[c[i].s], shapes[c[i].s], body_no_team, want);
		for (r = 0; r < tt.size; r++) {
			tt.m[r].create_ms = M_MS;
			tt.m[r].hold = true;
		}
		odd = &tt.m[c[i].rank];
		if (c[i].size)
			odd->size = c[i].size;
		if (c[i].nodes)
			odd->nodes = c[i].nodes;
		tc_run(&tt);
		for (r = 0; r < tt.size; r++)
			eproto += tt.m[r].create_err == EPROTO;
		tc_done(&tt);
		ck_assert_msg(eproto >= 1 || !c[i].seen, "case %zu: no member saw EPROTO", i);
	}
}
END_TEST

/* ---- a member that dies: a child process, killed in an allreduce ---- */

struct death {
	uint32_t size, victim;
	const char *const *nodes;
	uint8_t key_team[VRDMA_TEAM_KEY_LEN];	/* the team it dies in */
	uint8_t key2[VRDMA_TEAM_KEY_LEN];	/* the team made afterwards */
	int32_t *want1, *want2;
	pid_t dying, heir;
	int ready[2], go[2];		/* dying -> parent; parent -> heir */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint32_t waiting;		/* survivors in the second allreduce */
	pthread_barrier_t failed;	/* survivors that saw it fail */
	char why[120];			/* the killer's complaint */
};

static struct vrdma_team *join_alone(const uint8_t *key, const struct death *d,
				     struct vrdma_device **dev)
{
	struct vrdma_team_attr a = { .size = d->size, .rank = d->victim, .nodes = d->nodes };
	struct vrdma_pd *pd;
	int64_t end = now_ms() + T_OPEN_MS;

	memcpy(a.key, key, sizeof(a.key));
	while (!(*dev = vrdma_open(NULL, T_OPEN_MS)) && now_ms() < end)
		usleep(20000);
	pd = *dev ? vrdma_alloc_pd(*dev) : NULL;
	return pd ? vrdma_team_create(pd, &a, T_MS) : NULL;
}

/* The child's allreduce, checked: 0 or an exit code that says which. */
static int child_allreduce(struct vrdma_team *t, const struct death *d, const int32_t *want)
{
	int32_t *s = malloc(N * 4), *r = malloc(N * 4);
	int rc;

	fill(VRDMA_COLL_INT32, d->victim, s, N, 7);
	rc = vrdma_allreduce(t, s, r, N, VRDMA_COLL_INT32, VRDMA_COLL_SUM, T_MS);
	rc = rc ? 12 : memcmp(r, want, N * 4) ? 13 : 0;
	free(s);
	free(r);
	return rc;
}

/* Fork one member before this process opens any device: the dying one
 * joins, does one allreduce, says so and waits to be killed; the heir
 * waits for its go, then joins the second team and does its allreduce. */
static pid_t fork_member(struct death *d, bool heir)
{
	struct vrdma_device *dev;
	struct vrdma_team *t;
	pid_t pid = fork();
	char b = 0;

	ck_assert_int_ge(pid, 0);
	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (heir && read(d->go[0], &b, 1) != 1)
		_exit(10);			/* the parent gave up */
	t = join_alone(heir ? d->key2 : d->key_team, d, &dev);
	if (!t)
		_exit(11);
	if (heir)
		_exit(child_allreduce(t, d, d->want2));
	if (child_allreduce(t, d, d->want1) || write(d->ready[1], &b, 1) != 1)
		_exit(14);
	for (;;)
		pause();			/* posts nothing more: dies in it */
}

static void body_survive(struct member *m)
{
	struct death *d = m->arg;
	struct vrdma_team_attr a = { .size = m->size, .rank = m->rank, .nodes = m->nodes };
	int32_t *s = malloc(N * 4), *r = malloc(N * 4);
	int rc;

	fill(VRDMA_COLL_INT32, m->rank, s, N, 7);
	if (!m->team) {
		M_FAIL(m, "create: %s", strerror(m->create_err));
		pthread_barrier_wait(&d->failed);
		goto out;
	}
	rc = vrdma_allreduce(m->team, s, r, N, VRDMA_COLL_INT32, VRDMA_COLL_SUM, T_MS);
	if (rc || memcmp(r, d->want1, N * 4))
		M_FAIL(m, "first allreduce: %s", rc ? strerror(rc) : "wrong result");
	pthread_mutex_lock(&d->lock);
	d->waiting++;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	rc = vrdma_allreduce(m->team, s, r, N, VRDMA_COLL_INT32, VRDMA_COLL_SUM, T_MS);
	if (rc != ECONNRESET && !m->rc)
		M_FAIL(m, "allreduce with a dead member: %s", strerror(rc));
	/* every survivor learnt it before any leaves the team */
	pthread_barrier_wait(&d->failed);
	vrdma_team_destroy(m->team);

	memcpy(a.key, d->key2, sizeof(a.key));
	m->team = vrdma_team_create(m->pd, &a, T_MS);
	if (!m->team) {
		M_FAIL(m, "second create: %s", strerror(errno));
		goto out;
	}
	rc = vrdma_allreduce(m->team, s, r, N, VRDMA_COLL_INT32, VRDMA_COLL_SUM, T_MS);
	if ((rc || memcmp(r, d->want2, N * 4)) && !m->rc)
		M_FAIL(m, "second team's allreduce: %s", rc ? strerror(rc) : "wrong result");
out:
	free(s);
	free(r);
}

/* Once the dying member is ready and the survivors are in (or about to
 * be in) the allreduce it never posts, kill it; then start its heir. */
static void *killer(void *arg)
{
	struct death *d = arg;
	struct pollfd p = { .fd = d->ready[0], .events = POLLIN };
	struct timespec ts;
	char b = 0;
	int st;

	if (poll(&p, 1, T_MS) != 1 || read(d->ready[0], &b, 1) != 1)
		snprintf(d->why, sizeof(d->why), "the dying member never got ready");
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	pthread_mutex_lock(&d->lock);
	while (d->waiting + 1 < d->size &&
	       !pthread_cond_timedwait(&d->cond, &d->lock, &ts))
		;
	pthread_mutex_unlock(&d->lock);
	usleep(50000);		/* let them sleep in it; not needed for the verdict */
	kill(d->dying, SIGKILL);
	waitpid(d->dying, &st, 0);
	if (write(d->go[1], &b, 1) != 1)
		snprintf(d->why, sizeof(d->why), "the heir cannot be started");
	return NULL;
}

static void die_in(uint32_t size, const char *const *nodes, uint32_t victim)
{
	struct death d = { .size = size, .victim = victim, .nodes = nodes };
	int64_t end = now_ms() + 2 * T_MS;
	struct tc_team tt;
	pthread_t kt;
	int st = -1;

	tc_init(&tt, size, nodes, body_survive, &d);
	tt.m[victim].absent = true;
	memcpy(d.key_team, tt.key, sizeof(d.key_team));
	ck_assert_int_eq(vrdma_team_key(d.key2), 0);
	d.want1 = reference(size, nodes, VRDMA_COLL_INT32, VRDMA_COLL_SUM, N, 7);
	d.want2 = d.want1;		/* same members, same vectors */
	ck_assert_int_eq(pipe(d.ready), 0);
	ck_assert_int_eq(pipe(d.go), 0);
	pthread_mutex_init(&d.lock, NULL);
	pthread_cond_init(&d.cond, NULL);
	pthread_barrier_init(&d.failed, NULL, size - 1);
	d.dying = fork_member(&d, false);
	d.heir = fork_member(&d, true);

	ck_assert_int_eq(pthread_create(&kt, NULL, killer, &d), 0);
	tc_run(&tt);
	pthread_join(kt, NULL);
	while (now_ms() < end && waitpid(d.heir, &st, WNOHANG) == 0)
		usleep(10000);
	if (st == -1) {
		kill(d.heir, SIGKILL);
		waitpid(d.heir, &st, 0);
	}
	tc_done(&tt);
	ck_assert_msg(!d.why[0], "%s", d.why);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "the heir (rank %u of the second team) failed: status %#x", victim, st);
	free(d.want1);
	close(d.ready[0]);
	close(d.ready[1]);
	close(d.go[0]);
	close(d.go[1]);
	pthread_barrier_destroy(&d.failed);
}

START_TEST(t_member_dies)
{
	NEED_DAEMON();
	die_in(3, one_node, 2);		/* a member */
	die_in(3, one_node, 0);		/* its leader */
	die_in(6, three_nodes, 1);	/* a leader in the middle of the chain */
}
END_TEST

/* ---- a member that posts late ---- */

struct late {
	uint32_t late;			/* the rank that posts late */
	bool blocking;
	sem_t go;			/* one post per member that waited */
	int32_t *want;
	int rc[TMAX];			/* blocking: what each member's call gave */
};

static void body_late(struct member *m)
{
	struct late *c = m->arg;
	int32_t *s = malloc(N * 4), *r = malloc(N * 4);
	struct vrdma_coll_args a = {
		.kind = VRDMA_COLL_ALLREDUCE, .type = VRDMA_COLL_INT32, .op = VRDMA_COLL_SUM,
		.sendbuf = s, .recvbuf = r, .count = N,
	};
	uint64_t seq = 0;
	uint32_t i;
	int rc;

	fill(VRDMA_COLL_INT32, m->rank, s, N, 7);
	if (!m->team) {
		M_FAIL(m, "create: %s", strerror(m->create_err));
		goto out;
	}
	if (m->rank == c->late)
		for (i = 0; i + 1 < m->size; i++)
			if (sem_wait_30s(&c->go))
				M_FAIL(m, "the others never said go");
	if (c->blocking) {
		rc = vrdma_allreduce(m->team, s, r, N, VRDMA_COLL_INT32, VRDMA_COLL_SUM,
				     m->rank == c->late ? T_MS : W_MS);
		c->rc[m->rank] = rc;
		if (m->rank != c->late)
			sem_post(&c->go);
		if (m->rank == c->late ? rc != ECONNRESET : !is_one_of(rc, ETIMEDOUT, ECONNRESET)) {
			M_FAIL(m, "allreduce: %s", strerror(rc));
			goto out;
		}
		/* broken: every later call gives the same error */
		if (vrdma_barrier(m->team, T_MS) != rc || vrdma_coll_post(m->team, &a, &seq) != rc ||
		    vrdma_coll_wait(m->team, 1, NULL, T_MS) != rc)
			M_FAIL(m, "a broken team's later calls did not fail with %s", strerror(rc));
		goto out;
	}
	rc = vrdma_coll_post(m->team, &a, &seq);
	if (rc) {
		M_FAIL(m, "post: %s", strerror(rc));
		goto out;
	}
	if (m->rank != c->late) {
		rc = vrdma_coll_wait(m->team, seq, NULL, W_MS);
		if (rc != ETIMEDOUT)
			M_FAIL(m, "wait before the late one posted: %s", strerror(rc));
		rc = vrdma_coll_wait(m->team, seq, NULL, 0);
		if (rc != EAGAIN)
			M_FAIL(m, "test before the late one posted: %s", strerror(rc));
		sem_post(&c->go);
	}
	rc = vrdma_coll_wait(m->team, seq, NULL, T_MS);
	if (rc || memcmp(r, c->want, N * 4))
		M_FAIL(m, "wait after the late one posted: %s", rc ? strerror(rc) : "wrong result");
	else if (vrdma_barrier(m->team, T_MS))
		M_FAIL(m, "the team did not go on after a late member");
out:
	free(s);
	free(r);
}

static void late_in(uint32_t s, uint32_t late, bool blocking)
{
	struct late c = { .late = late, .blocking = blocking };
	struct tc_team tt;
	uint32_t r, timedout = 0;

	c.want = reference(shape_size[s], shapes[s], VRDMA_COLL_INT32, VRDMA_COLL_SUM, N, 7);
	ck_assert_int_eq(sem_init(&c.go, 0, 0), 0);
	tc_init(&tt, shape_size[s], shapes[s], body_late, &c);
	for (r = 0; r < tt.size; r++)
		tt.m[r].hold = true;
	tc_run(&tt);
	for (r = 0; r < tt.size; r++)
		timedout += c.rc[r] == ETIMEDOUT;
	tc_done(&tt);
	/* the first to give up cannot have been told by anyone else */
	ck_assert_msg(!blocking || timedout, "no member timed out");
	sem_destroy(&c.go);
	free(c.want);
}

START_TEST(t_late_wait)
{
	NEED_DAEMON();
	late_in(0, 2, false);		/* a member */
	late_in(1, 2, false);		/* the last leader */
	late_in(1, 5, false);		/* a member of another node */
}
END_TEST

START_TEST(t_late_blocking)
{
	NEED_DAEMON();
	late_in(0, 2, true);
	late_in(1, 2, true);
	late_in(1, 0, true);		/* node 0's leader */
}
END_TEST

/* ---- arguments that disagree ---- */

struct disagree {
	uint32_t odd;			/* the rank whose arguments differ */
	char what;			/* c)ount t)ype o)p r)oot k)ind */
	int rc[TMAX];
};

static void body_disagree(struct member *m)
{
	struct disagree *c = m->arg;
	bool odd = m->rank == c->odd;
	int32_t *s = malloc((N + 1) * 4), *r = malloc((N + 1) * 4);
	struct vrdma_coll_args a = {
		.kind = VRDMA_COLL_REDUCE, .type = VRDMA_COLL_INT32, .op = VRDMA_COLL_SUM,
		.root = 1, .sendbuf = s, .recvbuf = r, .count = N,
	};
	uint64_t seq;
	int rc;

	if (!m->team) {
		M_FAIL(m, "create: %s", strerror(m->create_err));
		goto out;
	}
	fill(VRDMA_COLL_INT32, m->rank, s, N + 1, 7);
	if (odd) {
		switch (c->what) {
		case 'c': a.count = N + 1; break;
		case 't': a.type = VRDMA_COLL_UINT32; break;
		case 'o': a.op = VRDMA_COLL_BXOR; break;
		case 'r': a.root = 0; break;
		case 'k': a.kind = VRDMA_COLL_ALLREDUCE; a.root = 0; break;
		}
	}
	rc = vrdma_coll_post(m->team, &a, &seq);
	if (!rc)
		rc = vrdma_coll_wait(m->team, seq, NULL, T_MS);
	c->rc[m->rank] = rc;
	if (!is_one_of(rc, EPROTO, ECONNRESET))
		M_FAIL(m, "%c differs in rank %u: %s", c->what, c->odd,
		       rc ? strerror(rc) : "succeeded");
out:
	free(s);
	free(r);
}

START_TEST(t_disagree)
{
	static const struct { uint32_t s, odd; } who[] = { { 0, 2 }, { 0, 0 }, { 1, 2 }, { 1, 4 } };
	static const char what[] = "ctork";
	struct tc_team tt;

	NEED_DAEMON();
	for (size_t w = 0; w < sizeof(who) / sizeof(who[0]); w++)
		for (size_t i = 0; what[i]; i++) {
			struct disagree c = { .odd = who[w].odd, .what = what[i] };
			uint32_t r, eproto = 0;

			tc_init(&tt, shape_size[who[w].s], shapes[who[w].s], body_disagree, &c);
			for (r = 0; r < tt.size; r++)
				tt.m[r].hold = true;
			tc_run(&tt);
			for (r = 0; r < tt.size; r++)
				eproto += c.rc[r] == EPROTO;
			tc_done(&tt);
			ck_assert_msg(eproto, "%c differs in rank %u: nobody saw EPROTO",
				      what[i], who[w].odd);
		}
}
END_TEST

/* ---- a stranger at a leader's door ---- */

/* What team.c's joins carry (private data), as a stranger would forge it. */
struct join {
	uint8_t key[VRDMA_TEAM_KEY_LEN];
	uint32_t rank, hash;
	uint8_t role, pad[3];
};

static struct stranger {
	const uint8_t *key;
	char svc[VRDMA_MAX_NAME + 1];	/* rank 0's: where it listens */
	sem_t listening, done;
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	int rc[3];			/* wrong key, wrong length, after */
} st;

/* A member got through to rank 0: it listens, and waits for rank 2. */
static void seen_connect(const char *service, int rc)
{
	if (!rc && !strcmp(service, st.svc))
		sem_post(&st.listening);
}

static int stranger_try(const void *pd, size_t len)
{
	struct vrdma_qp_init_attr qa = {
		.send_cq = st.cq, .recv_cq = st.cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct vrdma_qp *qp = vrdma_create_qp(st.pd, &qa);
	int rc;

	if (!qp)
		return errno;
	rc = vrdma_connect(qp, "", st.svc, pd, len, NULL, NULL, T_MS);
	vrdma_destroy_qp(qp);
	return rc;
}

static void *stranger_main(void *arg)
{
	struct join j = { .rank = 2, .role = 1 };

	(void)arg;
	st.rc[0] = st.rc[1] = -1;
	if (!sem_wait_30s(&st.listening)) {
		ck_assert_int_eq(vrdma_team_key(j.key), 0);
		st.rc[0] = stranger_try(&j, sizeof(j));
		st.rc[1] = stranger_try(&j, 3);
	}
	sem_post(&st.done);
	return NULL;
}

static void before_stranger(struct member *m)
{
	if (m->rank == 2 && sem_wait_30s(&st.done))
		M_FAIL(m, "the stranger never finished");
}

static void body_after_stranger(struct member *m)
{
	int32_t *s = malloc(N * 4), *r = malloc(N * 4);
	int rc;

	fill(VRDMA_COLL_INT32, m->rank, s, N, 7);
	if (!m->team) {
		M_FAIL(m, "create: %s", strerror(m->create_err));
	} else {
		rc = vrdma_allreduce(m->team, s, r, N, VRDMA_COLL_INT32, VRDMA_COLL_SUM, T_MS);
		if (rc || memcmp(r, m->arg, N * 4))
			M_FAIL(m, "allreduce: %s", rc ? strerror(rc) : "wrong result");
	}
	free(s);
	free(r);
}

START_TEST(t_stranger)
{
	void *want = reference(3, one_node, VRDMA_COLL_INT32, VRDMA_COLL_SUM, N, 7);
	struct tc_team tt;
	pthread_t th;
	uint64_t k;

	NEED_DAEMON();
	tc_init(&tt, 3, one_node, body_after_stranger, want);
	memcpy(&k, tt.key, sizeof(k));
	snprintf(st.svc, sizeof(st.svc), "vct-%016llx-0", (unsigned long long)k);
	ck_assert_int_eq(sem_init(&st.listening, 0, 0), 0);
	ck_assert_int_eq(sem_init(&st.done, 0, 0), 0);
	st.dev = open_dev();
	st.pd = vrdma_alloc_pd(st.dev);
	st.cq = vrdma_create_cq(st.dev, 4, NULL);
	ck_assert_ptr_nonnull(st.cq);
	tt.m[2].before = before_stranger;
	tct_connected = seen_connect;
	ck_assert_int_eq(pthread_create(&th, NULL, stranger_main, NULL), 0);
	tc_run(&tt);
	pthread_join(th, NULL);
	tct_connected = NULL;
	st.rc[2] = stranger_try(NULL, 0);	/* the team made: nobody listens */
	tc_done(&tt);
	ck_assert_msg(st.rc[0] == ECONNREFUSED, "wrong key: %s", strerror(st.rc[0]));
	ck_assert_msg(st.rc[1] == ECONNREFUSED, "wrong length: %s", strerror(st.rc[1]));
	ck_assert_msg(st.rc[2] == ECONNREFUSED, "after: %s", strerror(st.rc[2]));
	vrdma_close(st.dev);
	free(want);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("test_coll_fault");
	TCase *live = tlive_tcase();

	tcase_set_timeout(live, 120);
	tcase_add_test(live, t_never_joins);
	tcase_add_test(live, t_mismatch);
	tcase_add_test(live, t_member_dies);
	tcase_add_test(live, t_late_wait);
	tcase_add_test(live, t_late_blocking);
	tcase_add_test(live, t_disagree);
	tcase_add_test(live, t_stranger);
	suite_add_tcase(s, live);
	return tlive_main("test_coll_fault", s);
}
