// SPDX-License-Identifier: MIT
/*
 * Check suite for backend/device/verbs_reap.c, the device teardown threads, with
 * the device calls stubbed so a test decides when each one returns (a
 * device that holds an MR, a peer that takes seconds to answer a DREQ):
 *
 * - an MR's number is done only once ibv_dereg_mr has returned, and the
 *   eventfd says so (DEREG_MR's answer waits for it, cmd.c);
 * - a DEREG_MR's MR never waits behind a slow QP teardown (its own
 *   lane); a dropped buffer's does, behind the QPs that may use it;
 * - a guest's PD goes only after the MRs dropped before it;
 * - a buffer unmap waits for both lanes; stop runs everything queued;
 * - the MR lane serves tenants in turn: one tenant's queued DEREG_MRs
 *   delay another's by one job, and a job is done when it ran, whatever
 *   ran before it.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <poll.h>
#include <unistd.h>

#include "../backend/device/verbs.h"
#include "ck_run.h"

/* ---- the device, stubbed: each call logs itself and may wait on a gate */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool gate_mr, gate_qp;		/* closed: the call waits */
static bool gate_a2;			/* closed: tenant a's second MR waits */
static struct ibv_mr mr_a[3], mr_b, mr_c;	/* logged a, b, c */
static unsigned entered;		/* ibv_dereg_mr calls begun */
static char trail[256];			/* calls in the order they ran */
static unsigned unmaps;

static void step(const char *what, bool *gate)
{
	pthread_mutex_lock(&mu);
	while (gate && *gate)
		pthread_cond_wait(&cv, &mu);
	strncat(trail, what, sizeof(trail) - strlen(trail) - 1);
	pthread_mutex_unlock(&mu);
}

static void open_gate(bool *gate)
{
	pthread_mutex_lock(&mu);
	*gate = false;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	pthread_mutex_lock(&mu);
	entered++;
	pthread_mutex_unlock(&mu);
	if (mr == &mr_a[1])
		step("", &gate_a2);
	if (mr >= &mr_a[0] && mr <= &mr_a[2])
		step("a", &gate_mr);
	else
		step(mr == &mr_b ? "b" : mr == &mr_c ? "c" : mr ? "M" : "?", &gate_mr);
	return 0;
}

static void close_gate(bool *gate)
{
	pthread_mutex_lock(&mu);
	*gate = true;
	pthread_mutex_unlock(&mu);
}

/* Wait (at most 5 s) until n ibv_dereg_mr calls have begun. */
static bool entered_is(unsigned n)
{
	unsigned e = 0;
	int i;

	for (i = 0; i < 500; i++) {
		pthread_mutex_lock(&mu);
		e = entered;
		pthread_mutex_unlock(&mu);
		if (e == n)
			return true;
		usleep(10000);
	}
	return false;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	(void)id;
	step("Q", &gate_qp);
	return 0;
}

int rdma_disconnect(struct rdma_cm_id *id) { (void)id; return 0; }
void rdma_destroy_qp(struct rdma_cm_id *id) { (void)id; }
void ibv_ack_cq_events(struct ibv_cq *cq, unsigned n) { (void)cq; (void)n; }
int ibv_destroy_cq(struct ibv_cq *cq) { (void)cq; return 0; }
int ibv_destroy_srq(struct ibv_srq *srq) { (void)srq; step("S", NULL); return 0; }
int ibv_dealloc_pd(struct ibv_pd *pd) { (void)pd; step("P", NULL); return 0; }
void vbe_unmap_node(struct vbe_node *n, struct vplat_map *m, uint32_t npages)
{
	(void)n; (void)m; (void)npages;
	unmaps++;
}
uint32_t vplat_map_cost(const struct vplat_map *m) { (void)m; return 1; }
int64_t vplat_now_ms(void) { return 0; }
void vbe_tenant_late(struct vbe_node *n, struct vbe_tenant *t, uint32_t npages, uint32_t maps,
		     bool add)
{
	(void)n; (void)t; (void)npages; (void)maps; (void)add;
}

static const char *trail_now(void)
{
	static char copy[256];

	pthread_mutex_lock(&mu);
	memcpy(copy, trail, sizeof(copy));
	pthread_mutex_unlock(&mu);
	return copy;
}

static struct vbe_vx vx;
static struct ibv_mr fake_mr;
static struct rdma_cm_id fake_id;

/* A lane counts a job done just after its call returns: wait (at most
 * 5 s) for what the loop thread would see next. */
static bool mr_done(uint64_t seq)
{
	int i;

	for (i = 0; i < 500 && !vbe_reap_mr_done(&vx, seq, "t"); i++)
		usleep(10000);
	return vbe_reap_mr_done(&vx, seq, "t");
}

/* mr_done for a tenant of the test's. */
static bool mr_done_of(uint64_t seq, const char *ten)
{
	int i;

	for (i = 0; i < 500 && !vbe_reap_mr_done(&vx, seq, ten); i++)
		usleep(10000);
	return vbe_reap_mr_done(&vx, seq, ten);
}

static bool pending_is(unsigned n)
{
	int i;

	for (i = 0; i < 500 && vbe_reap_pending(&vx) != n; i++)
		usleep(10000);
	return vbe_reap_pending(&vx) == n;
}

/* Wait (at most 5 s) until the trail reads want. */
static bool trail_is(const char *want)
{
	int i;

	for (i = 0; i < 500; i++) {
		if (!strcmp(trail_now(), want))
			return true;
		usleep(10000);
	}
	return false;
}

static void setup(void)
{
	memset(&vx, 0, sizeof(vx));
	trail[0] = 0;
	unmaps = 0;
	gate_mr = gate_qp = gate_a2 = false;
	entered = 0;
	ck_assert_int_eq(vbe_reap_start(&vx), 0);
}

static void teardown(void)
{
	open_gate(&gate_mr);
	open_gate(&gate_qp);
	open_gate(&gate_a2);
	vbe_reap_stop(&vx);
	ck_assert_ptr_null(vx.reap);
}

static bool fd_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

START_TEST(test_mr_done_after_dereg)
{
	uint64_t seq;

	gate_mr = true;
	seq = vbe_reap_mr(&vx, &fake_mr, "t");
	ck_assert_uint_gt(seq, 0);
	usleep(50000);
	ck_assert(!vbe_reap_mr_done(&vx, seq, "t"));	/* the device holds it */
	ck_assert_uint_eq(vbe_reap_pending(&vx), 1);
	open_gate(&gate_mr);
	ck_assert(fd_readable(vbe_reap_fd(&vx), 5000));	/* wakes the loop */
	ck_assert(trail_is("M"));
	ck_assert(vbe_reap_mr_done(&vx, seq, "t"));
	vbe_reap_poll(&vx);				/* reads the eventfd */
	ck_assert(!fd_readable(vbe_reap_fd(&vx), 0));
	ck_assert_uint_eq(vbe_reap_pending(&vx), 0);
}
END_TEST

START_TEST(test_mr_not_behind_qp)
{
	uint64_t seq;

	gate_qp = true;				/* a DREQ to a peer that went */
	vbe_reap_qp(&vx, &fake_id, true, NULL, 0);
	seq = vbe_reap_mr(&vx, &fake_mr, "t");
	ck_assert(trail_is("M"));
	ck_assert(mr_done(seq));
	ck_assert(pending_is(1));		/* the QP still */
	open_gate(&gate_qp);
	ck_assert(trail_is("MQ"));
}
END_TEST

/* A dropped buffer's MR goes behind the QPs queued before it (they may
 * still reference it), on the teardown lane: it keeps the MR lane for
 * DEREG_MRs, at most one a guest. */
START_TEST(test_buffer_mr_behind_qp)
{
	gate_qp = true;
	vbe_reap_qp(&vx, &fake_id, false, NULL, 0);
	ck_assert_uint_eq(vbe_reap_mr(&vx, &fake_mr, NULL), 0);
	usleep(50000);
	ck_assert_str_eq(trail_now(), "");
	open_gate(&gate_qp);
	ck_assert(trail_is("QM"));
	ck_assert(pending_is(0));
}
END_TEST

START_TEST(test_pd_after_dropped_mrs)
{
	struct vbe_vguest *vg = calloc(1, sizeof(*vg));

	ck_assert_ptr_nonnull(vg);
	strcpy(vg->ten, "t");			/* its MRs' tenant */
	vg->pd = (struct ibv_pd *)&fake_mr;	/* never dereferenced */
	gate_mr = true;
	vbe_reap_mr(&vx, &fake_mr, "t");
	vbe_reap_guest(&vx, vg);		/* frees vg */
	usleep(50000);
	ck_assert_str_eq(trail_now(), "");	/* the PD waits for the MR */
	open_gate(&gate_mr);
	ck_assert(trail_is("MP"));
}
END_TEST

START_TEST(test_unmap_waits_for_both)
{
	struct vplat_map *m = (struct vplat_map *)&fake_id;

	ck_assert_int_eq(vbe_reap_defer_unmap(&vx, m, NULL, "t", 0), 0);	/* nothing queued */
	ck_assert_uint_eq(unmaps, 0);
	gate_mr = gate_qp = true;
	vbe_reap_qp(&vx, &fake_id, false, NULL, 0);
	vbe_reap_mr(&vx, &fake_mr, "t");
	ck_assert_int_eq(vbe_reap_defer_unmap(&vx, m, NULL, "t", 0), 1);
	open_gate(&gate_qp);
	ck_assert(trail_is("Q"));
	ck_assert(pending_is(2));		/* the MR, the unmap */
	vbe_reap_poll(&vx);
	ck_assert_uint_eq(unmaps, 0);		/* the MR may still pin it */
	open_gate(&gate_mr);
	ck_assert(trail_is("QM"));
	ck_assert(pending_is(1));		/* the unmap */
	vbe_reap_poll(&vx);
	ck_assert_uint_eq(unmaps, 1);
	ck_assert_uint_eq(vbe_reap_pending(&vx), 0);
}
END_TEST

START_TEST(test_stop_runs_all)
{
	struct vplat_map *m = (struct vplat_map *)&fake_id;
	struct vbe_vguest *vg = calloc(1, sizeof(*vg));

	ck_assert_ptr_nonnull(vg);
	strcpy(vg->ten, "t");			/* its MRs' tenant */
	vg->pd = (struct ibv_pd *)&fake_mr;
	gate_mr = true;
	vbe_reap_qp(&vx, &fake_id, false, NULL, 0);
	vbe_reap_mr(&vx, &fake_mr, "t");
	vbe_reap_guest(&vx, vg);
	ck_assert_int_eq(vbe_reap_defer_unmap(&vx, m, NULL, "t", 0), 1);
	ck_assert(trail_is("Q"));
	open_gate(&gate_mr);
	vbe_reap_stop(&vx);
	ck_assert_str_eq(trail_now(), "QMP");
	ck_assert_uint_eq(unmaps, 1);
	ck_assert_int_eq(vbe_reap_start(&vx), 0);	/* for teardown */
}
END_TEST

/* Tenant a's three DEREG_MRs (three guests) queued before tenant b's,
 * while tenant c's runs: b's runs second, not last; it is done while a's
 * second still waits in the device, which keeps `mark` (and a buffer of
 * a's unmapped after it) waiting, while one of b's is unmapped at once. */
START_TEST(test_mr_tenants_in_turn)
{
	uint64_t a0, a1, a2, b0;
	struct vplat_map *m = (struct vplat_map *)&fake_id;

	gate_mr = true;
	vbe_reap_mr(&vx, &mr_c, "tc");
	ck_assert(entered_is(1));		/* the lane holds c's: the rest queue */
	a0 = vbe_reap_mr(&vx, &mr_a[0], "ta");
	a1 = vbe_reap_mr(&vx, &mr_a[1], "ta");
	a2 = vbe_reap_mr(&vx, &mr_a[2], "ta");
	b0 = vbe_reap_mr(&vx, &mr_b, "tb");
	ck_assert_int_eq(vbe_reap_defer_unmap(&vx, m, NULL, "ta", 0), 1);
	close_gate(&gate_a2);
	open_gate(&gate_mr);
	ck_assert(trail_is("cab"));		/* then a's second waits */
	ck_assert(mr_done_of(b0, "tb"));
	ck_assert(vbe_reap_mr_done(&vx, a0, "ta"));
	ck_assert(!vbe_reap_mr_done(&vx, a1, "ta"));
	ck_assert(!vbe_reap_mr_done(&vx, a2, "ta"));
	ck_assert_int_eq(vbe_reap_defer_unmap(&vx, m, NULL, "tb", 0), 1);
	vbe_reap_poll(&vx);
	ck_assert_uint_eq(unmaps, 1);		/* b's: none of b's jobs is left */
	open_gate(&gate_a2);
	ck_assert(trail_is("cabaa"));
	ck_assert(mr_done_of(a2, "ta"));
	ck_assert(vbe_reap_mr_done(&vx, a1, "ta"));
	ck_assert(pending_is(1));		/* a's unmap, until the loop looks */
	vbe_reap_poll(&vx);
	ck_assert_uint_eq(unmaps, 2);
	ck_assert(pending_is(0));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reap");
	TCase *tc = tcase_create("lanes");
	SRunner *sr;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_mr_done_after_dereg);
	tcase_add_test(tc, test_mr_not_behind_qp);
	tcase_add_test(tc, test_buffer_mr_behind_qp);
	tcase_add_test(tc, test_pd_after_dropped_mrs);
	tcase_add_test(tc, test_unmap_waits_for_both);
	tcase_add_test(tc, test_stop_runs_all);
	tcase_add_test(tc, test_mr_tenants_in_turn);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	return ck_run(sr);
}
