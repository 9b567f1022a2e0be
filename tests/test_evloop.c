// SPDX-License-Identifier: MIT
/*
 * vrdmad's event loop.  Behaviour, never
 * timings: counts of polls, arms and sleeps, not microseconds.  Every
 * loop run has a stop timer, every client wait a deadline.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "../dom0-daemon/evloop.h"
#include "ck_run.h"

#define GUARD_MS	10000	/* a stuck test fails instead of hanging */

static int stop_cb(struct vev_loop *l, uint64_t id, void *arg)
{
	(void)id;
	(void)arg;
	vev_stop(l);
	return VEV_TIMER_DONE;
}

static void run_until_stop(struct vev_loop *l, int64_t after_ms)
{
	ck_assert_int_eq(vev_timer_add(l, after_ms, stop_cb, NULL, NULL), 0);
	ck_assert_int_eq(vev_run(l), 0);
}

/* ---- fds ---- */

struct fd_seen {
	int calls;
	unsigned events;
	int other_fd;
};

static void fd_cb(struct vev_loop *l, int fd, unsigned events, void *arg)
{
	struct fd_seen *s = arg;
	uint64_t v;

	s->calls++;
	s->events = events;
	if (read(fd, &v, sizeof(v)) < 0)
		v = 0;
	if (s->other_fd >= 0)
		vev_fd_del(l, s->other_fd);
	vev_stop(l);
}

START_TEST(test_fd_basic)
{
	struct fd_seen s = { .other_fd = -1 };
	struct vev_loop *l;
	uint64_t one = 1;
	int efd;

	ck_assert_int_eq(vev_loop_new(&l), 0);
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ck_assert_int_ge(efd, 0);
	ck_assert_int_eq(vev_fd_add(l, efd, VEV_READ, fd_cb, &s), 0);
	ck_assert_int_eq(vev_fd_add(l, efd, VEV_READ, fd_cb, &s), -EEXIST);
	ck_assert_int_eq(vev_fd_add(l, efd, 0, fd_cb, &s), -EINVAL);
	ck_assert_int_eq(vev_fd_add(l, -1, VEV_READ, fd_cb, &s), -EINVAL);
	ck_assert_uint_eq(vev_fd_count(l), 1);

	/* Nothing ready: the loop sleeps until the guard, no callback. */
	ck_assert_int_eq(vev_timer_add(l, 20, stop_cb, NULL, NULL), 0);
	ck_assert_int_eq(vev_run(l), 0);
	ck_assert_int_eq(s.calls, 0);

	ck_assert_int_eq(write(efd, &one, sizeof(one)), sizeof(one));
	run_until_stop(l, GUARD_MS);
	ck_assert_int_eq(s.calls, 1);
	ck_assert_uint_eq(s.events & VEV_READ, VEV_READ);

	ck_assert_int_eq(vev_fd_del(l, efd), 0);
	ck_assert_int_eq(vev_fd_del(l, efd), -ENOENT);
	ck_assert_int_eq(vev_fd_mod(l, efd, VEV_READ), -ENOENT);
	ck_assert_uint_eq(vev_fd_count(l), 0);
	/* A large fd number grows the table. */
	ck_assert_int_eq(dup2(efd, 700), 700);
	ck_assert_int_eq(vev_fd_add(l, 700, VEV_WRITE, fd_cb, &s), 0);
	run_until_stop(l, GUARD_MS);
	ck_assert_int_eq(s.calls, 2);
	ck_assert_uint_eq(s.events & VEV_WRITE, VEV_WRITE);
	ck_assert_int_eq(vev_fd_del(l, 700), 0);
	close(700);
	close(efd);
	vev_loop_free(l);
}
END_TEST

/* Two fds ready in one batch; whichever runs first deletes the other. */
START_TEST(test_fd_del_from_callback)
{
	struct fd_seen a = { 0 }, b = { 0 };
	struct vev_loop *l;
	uint64_t one = 1;
	int fa, fb;

	ck_assert_int_eq(vev_loop_new(&l), 0);
	fa = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	fb = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	a.other_fd = fb;
	b.other_fd = fa;
	ck_assert_int_eq(vev_fd_add(l, fa, VEV_READ, fd_cb, &a), 0);
	ck_assert_int_eq(vev_fd_add(l, fb, VEV_READ, fd_cb, &b), 0);
	ck_assert_int_eq(write(fa, &one, sizeof(one)), sizeof(one));
	ck_assert_int_eq(write(fb, &one, sizeof(one)), sizeof(one));
	run_until_stop(l, GUARD_MS);
	ck_assert_int_eq(a.calls + b.calls, 1);
	ck_assert_uint_eq(vev_fd_count(l), 1);
	vev_fd_del(l, fa);
	vev_fd_del(l, fb);
	close(fa);
	close(fb);
	vev_loop_free(l);
}
END_TEST

/* ---- timers ---- */

struct tm_seen {
	struct vev_loop *l;
	int calls;
	int rearm;		/* times to return 0 (rearm now) */
	int added_calls;
};

static int added_cb(struct vev_loop *l, uint64_t id, void *arg)
{
	struct tm_seen *s = arg;

	(void)l;
	(void)id;
	s->added_calls++;
	return VEV_TIMER_DONE;
}

static int count_cb(struct vev_loop *l, uint64_t id, void *arg)
{
	struct tm_seen *s = arg;

	(void)id;
	s->calls++;
	if (s->calls == 1) {
		/* Added mid-pass with 0 ms: must wait for the next pass. */
		ck_assert_int_eq(vev_timer_add(l, 0, added_cb, s, NULL), 0);
		ck_assert_int_eq(s->added_calls, 0);
	}
	if (s->rearm-- > 0)
		return 0;
	return VEV_TIMER_DONE;
}

START_TEST(test_timers)
{
	struct tm_seen s = { .rearm = 4 }, never = { 0 };
	struct vev_loop *l;
	uint64_t id;

	ck_assert_int_eq(vev_loop_new(&l), 0);
	ck_assert_int_eq(vev_timer_add(l, 0, count_cb, &s, NULL), 0);
	ck_assert_int_eq(vev_timer_add(l, 0, count_cb, &never, &id), 0);
	ck_assert_int_eq(vev_timer_del(l, id), 0);
	ck_assert_int_eq(vev_timer_del(l, id), -ENOENT);
	ck_assert_int_eq(vev_timer_add(l, -1, count_cb, &s, NULL), -EINVAL);
	run_until_stop(l, 100);
	ck_assert_int_eq(s.calls, 5);	/* first run + 4 rearms */
	ck_assert_int_eq(s.added_calls, 1);
	ck_assert_int_eq(never.calls, 0);
	vev_loop_free(l);
}
END_TEST

/* ---- busy mode ---- */

struct busy {
	struct vev_loop *l;
	int work_left;		/* poll reports work while > 0 */
	int arm_ret_once;	/* first arm returns 1 */
	int polls, arms, disarms;
	int polls_at_first_arm;
	uint64_t sleeps_at_arm[4];
	int efd;
};

static int busy_poll(void *arg)
{
	struct busy *b = arg;

	b->polls++;
	if (b->work_left > 0) {
		b->work_left--;
		return 1;
	}
	return 0;
}

static int busy_arm(void *arg)
{
	struct busy *b = arg;
	struct vev_stats st;

	vev_get_stats(b->l, &st);
	if (b->arms < 4)
		b->sleeps_at_arm[b->arms] = st.sleeps;
	if (b->arms++ == 0)
		b->polls_at_first_arm = b->polls;
	if (b->arm_ret_once) {
		b->arm_ret_once = 0;
		return 1;
	}
	return 0;
}

static void busy_disarm(void *arg)
{
	struct busy *b = arg;

	b->disarms++;
}

static const struct vev_busy_ops busy_ops = {
	.poll = busy_poll, .arm = busy_arm, .disarm = busy_disarm,
};

START_TEST(test_busy_spin_then_sleep)
{
	struct busy b = { .work_left = 3 };
	struct vev_stats st;

	ck_assert_int_eq(vev_loop_new(&b.l), 0);
	vev_set_busy(b.l, &busy_ops, &b, VEV_SPIN_US_DEF);
	run_until_stop(b.l, 200);
	vev_get_stats(b.l, &st);
	/* Polled through the work and the window without sleeping... */
	ck_assert_int_ge(b.polls_at_first_arm, 4);
	ck_assert_uint_eq(b.sleeps_at_arm[0], 0);
	ck_assert_int_eq(b.disarms, 1);
	/* ...then armed and slept: no tight polling afterwards. */
	ck_assert_int_ge(b.arms, 1);
	ck_assert_uint_ge(st.sleeps, 1);
	ck_assert_uint_le(b.polls - b.polls_at_first_arm, st.sleeps);
	ck_assert_uint_eq(st.polls, (uint64_t)b.polls);
	vev_loop_free(b.l);
}
END_TEST

START_TEST(test_busy_arm_finds_work)
{
	struct busy b = { .work_left = 0, .arm_ret_once = 1 };

	ck_assert_int_eq(vev_loop_new(&b.l), 0);
	vev_set_busy(b.l, &busy_ops, &b, VEV_SPIN_US_DEF);
	run_until_stop(b.l, 200);
	/* Arm said "work slipped in": polled again, not slept, re-armed. */
	ck_assert_int_ge(b.arms, 2);
	ck_assert_uint_eq(b.sleeps_at_arm[0], 0);
	ck_assert_uint_eq(b.sleeps_at_arm[1], 0);
	ck_assert_int_ge(b.disarms, 1);
	vev_loop_free(b.l);
}
END_TEST

static void wake_fd_cb(struct vev_loop *l, int fd, unsigned events, void *arg)
{
	struct busy *b = arg;
	uint64_t v;

	(void)l;
	(void)events;
	if (read(fd, &v, sizeof(v)) == sizeof(v))
		b->work_left += 5;	/* a guest notified: its ring has work */
}

static int kick_cb(struct vev_loop *l, uint64_t id, void *arg)
{
	struct busy *b = arg;
	uint64_t one = 1;

	(void)l;
	(void)id;
	ck_assert_int_eq(write(b->efd, &one, sizeof(one)), sizeof(one));
	return VEV_TIMER_DONE;
}

START_TEST(test_busy_wakeup_by_fd)
{
	struct busy b = { 0 };
	struct vev_stats st;

	ck_assert_int_eq(vev_loop_new(&b.l), 0);
	b.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ck_assert_int_eq(vev_fd_add(b.l, b.efd, VEV_READ, wake_fd_cb, &b), 0);
	vev_set_busy(b.l, &busy_ops, &b, VEV_SPIN_US_DEF);
	ck_assert_int_eq(vev_timer_add(b.l, 30, kick_cb, &b, NULL), 0);
	run_until_stop(b.l, 300);
	vev_get_stats(b.l, &st);
	ck_assert_int_eq(b.work_left, 0);	/* all work polled */
	ck_assert_int_eq(b.disarms, 1);		/* spun once, after the kick */
	ck_assert_int_ge(b.arms, 2);		/* slept before and after */
	ck_assert_uint_ge(st.sleeps, 2);
	vev_fd_del(b.l, b.efd);
	close(b.efd);
	vev_loop_free(b.l);
}
END_TEST

static void fd_noop_cb(struct vev_loop *l, int fd, unsigned events, void *arg)
{
	(void)l;
	(void)fd;
	(void)events;
	(void)arg;
}

/* Window 0: never spin on an idle poll, even with an fd always ready. */
START_TEST(test_busy_no_window)
{
	struct busy b = { 0 };
	struct vev_stats st;
	uint64_t one = 1;
	int i;

	ck_assert_int_eq(vev_loop_new(&b.l), 0);
	b.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ck_assert_int_eq(write(b.efd, &one, sizeof(one)), sizeof(one));
	/* Level-triggered and never drained: every epoll_wait returns. */
	ck_assert_int_eq(vev_fd_add(b.l, b.efd, VEV_READ, fd_noop_cb, NULL), 0);
	vev_set_busy(b.l, &busy_ops, &b, 0);
	for (i = 0; i < 100; i++)
		ck_assert_int_eq(vev_run_once(b.l), 0);
	vev_get_stats(b.l, &st);
	ck_assert_uint_eq(st.iters, 100);
	ck_assert_uint_eq(st.sleeps, 100);
	ck_assert_uint_eq(st.spins, 0);
	ck_assert_int_eq(b.arms, 100);
	ck_assert_int_eq(b.disarms, 0);
	ck_assert_uint_eq(st.fd_events, 100);

	/* A huge window: one unit of work keeps the loop polling. */
	vev_set_busy(b.l, &busy_ops, &b, 100000000u);
	b.work_left = 1;
	for (i = 0; i < 50; i++)
		ck_assert_int_eq(vev_run_once(b.l), 0);
	vev_get_stats(b.l, &st);
	ck_assert_uint_eq(st.spins, 50);
	ck_assert_int_eq(b.arms, 100);
	ck_assert_int_eq(b.disarms, 1);
	vev_fd_del(b.l, b.efd);
	close(b.efd);
	vev_loop_free(b.l);
}
END_TEST

static Suite *evloop_suite(void)
{
	Suite *s = suite_create("evloop");
	TCase *tc = tcase_create("loop");

	tcase_add_test(tc, test_fd_basic);
	tcase_add_test(tc, test_fd_del_from_callback);
	tcase_add_test(tc, test_timers);
	tcase_add_test(tc, test_busy_spin_then_sleep);
	tcase_add_test(tc, test_busy_arm_finds_work);
	tcase_add_test(tc, test_busy_wakeup_by_fd);
	tcase_add_test(tc, test_busy_no_window);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(evloop_suite());

	return ck_run(sr);
}
