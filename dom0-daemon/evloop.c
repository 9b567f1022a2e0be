// SPDX-License-Identifier: MIT
/*
 * vrdmad's event loop: epoll, a short timer list and the busy-poll hooks.
 * See evloop.h for the spin-then-sleep rule.
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "evloop.h"
#include "log.h"

#define VEV_BATCH	64

struct vev_fd {
	vev_fd_fn *cb;
	void *arg;
	unsigned mask;		/* 0 = free slot */
	uint32_t gen;		/* stale epoll events carry an older gen */
};

struct vev_timer {
	struct vev_timer *next;
	uint64_t id;
	int64_t when_ms;
	vev_timer_fn *cb;
	void *arg;
	bool dead;		/* freed by the next sweep, never mid-walk */
};

struct vev_loop {
	int epfd;
	struct vev_fd *fds;	/* indexed by fd */
	unsigned nfds_alloc;
	unsigned nfds_used;
	struct vev_timer *timers;
	uint64_t next_timer_id;
	struct vev_busy_ops busy;
	void *busy_arg;
	int64_t spin_us;
	int64_t last_work_us;
	bool armed;
	bool stop;
	struct vev_stats st;
};

static int64_t vev_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/*
 * A callback that held the loop past VEV_STALL_MS delayed every guest and
 * every vrdmactl request behind it: say which one, so a slow dom0 (a
 * busy xenstored, a device call that waited) is seen where it happened.
 */
static void vev_stall_since(struct vev_loop *l, int64_t t0, int64_t t1, const char *what,
			    int id)
{
	int64_t ms = (t1 - t0) / 1000;

	if (ms < VEV_STALL_MS)
		return;
	l->st.stalls++;
	vlog_warn("loop: %s %d held the loop %lld ms", what, id, (long long)ms);
}

static void vev_stall_check(struct vev_loop *l, int64_t t0, const char *what, int id)
{
	vev_stall_since(l, t0, vev_now_us(), what, id);
}

int64_t vev_now_ms(void)
{
	return vev_now_us() / 1000;
}

int vev_loop_new(struct vev_loop **out)
{
	struct vev_loop *l;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		int err = -errno;

		free(l);
		return err;
	}
	l->next_timer_id = 1;
	l->spin_us = VEV_SPIN_US_DEF;
	/* Start idle: the first iteration arms and sleeps. */
	l->last_work_us = INT64_MIN / 2;
	*out = l;
	return 0;
}

void vev_loop_free(struct vev_loop *l)
{
	struct vev_timer *t, *next;

	if (!l)
		return;
	for (t = l->timers; t; t = next) {
		next = t->next;
		free(t);
	}
	close(l->epfd);
	free(l->fds);
	free(l);
}

static uint32_t vev_to_epoll(unsigned mask)
{
	uint32_t ev = 0;

	if (mask & VEV_READ)
		ev |= EPOLLIN;
	if (mask & VEV_WRITE)
		ev |= EPOLLOUT;
	return ev;
}

static int vev_fd_grow(struct vev_loop *l, int fd)
{
	unsigned n = l->nfds_alloc ? l->nfds_alloc : 64;
	struct vev_fd *fds;

	while (n <= (unsigned)fd)
		n *= 2;
	fds = realloc(l->fds, n * sizeof(*fds));
	if (!fds)
		return -ENOMEM;
	memset(fds + l->nfds_alloc, 0, (n - l->nfds_alloc) * sizeof(*fds));
	l->fds = fds;
	l->nfds_alloc = n;
	return 0;
}

int vev_fd_add(struct vev_loop *l, int fd, unsigned mask, vev_fd_fn *cb, void *arg)
{
	struct epoll_event ev = { 0 };
	struct vev_fd *f;
	int err;

	if (fd < 0 || !cb || !(mask & (VEV_READ | VEV_WRITE)))
		return -EINVAL;
	if ((unsigned)fd >= l->nfds_alloc) {
		err = vev_fd_grow(l, fd);
		if (err)
			return err;
	}
	f = &l->fds[fd];
	if (f->mask)
		return -EEXIST;
	f->gen++;
	ev.events = vev_to_epoll(mask);
	ev.data.u64 = (uint64_t)f->gen << 32 | (uint32_t)fd;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	f->cb = cb;
	f->arg = arg;
	f->mask = mask & (VEV_READ | VEV_WRITE);
	l->nfds_used++;
	return 0;
}

int vev_fd_mod(struct vev_loop *l, int fd, unsigned mask)
{
	struct epoll_event ev = { 0 };
	struct vev_fd *f;

	if (fd < 0 || (unsigned)fd >= l->nfds_alloc || !l->fds[fd].mask)
		return -ENOENT;
	if (!(mask & (VEV_READ | VEV_WRITE)))
		return -EINVAL;
	f = &l->fds[fd];
	ev.events = vev_to_epoll(mask);
	ev.data.u64 = (uint64_t)f->gen << 32 | (uint32_t)fd;
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -errno;
	f->mask = mask & (VEV_READ | VEV_WRITE);
	return 0;
}

int vev_fd_del(struct vev_loop *l, int fd)
{
	struct vev_fd *f;

	if (fd < 0 || (unsigned)fd >= l->nfds_alloc || !l->fds[fd].mask)
		return -ENOENT;
	f = &l->fds[fd];
	/* The fd may already be closed; the slot is what matters. */
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	f->mask = 0;
	f->cb = NULL;
	f->arg = NULL;
	f->gen++;
	l->nfds_used--;
	return 0;
}

unsigned vev_fd_count(const struct vev_loop *l)
{
	return l->nfds_used;
}

int vev_timer_add(struct vev_loop *l, int64_t after_ms, vev_timer_fn *cb,
		  void *arg, uint64_t *id)
{
	struct vev_timer *t;

	if (!cb || after_ms < 0)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->id = l->next_timer_id++;
	t->when_ms = vev_now_ms() + after_ms;
	t->cb = cb;
	t->arg = arg;
	t->next = l->timers;
	l->timers = t;
	if (id)
		*id = t->id;
	return 0;
}

int vev_timer_del(struct vev_loop *l, uint64_t id)
{
	struct vev_timer *t;

	for (t = l->timers; t; t = t->next) {
		if (t->id == id && !t->dead) {
			t->dead = true;
			return 0;
		}
	}
	return -ENOENT;
}

static void vev_timer_sweep(struct vev_loop *l)
{
	struct vev_timer **pp = &l->timers, *t;

	while ((t = *pp)) {
		if (t->dead) {
			*pp = t->next;
			free(t);
		} else {
			pp = &t->next;
		}
	}
}

/* Milliseconds until the next live timer, capped: no unbounded sleep. */
static int vev_timer_wait_ms(struct vev_loop *l)
{
	int64_t now = vev_now_ms(), best = VEV_MAX_SLEEP_MS;
	struct vev_timer *t;

	for (t = l->timers; t; t = t->next) {
		if (t->dead)
			continue;
		if (t->when_ms - now < best)
			best = t->when_ms - now;
	}
	return best < 0 ? 0 : (int)best;
}

static void vev_timer_run(struct vev_loop *l)
{
	/* Timers added by a callback wait for the next iteration. */
	uint64_t max_id = l->next_timer_id - 1;
	int64_t now = vev_now_ms();
	struct vev_timer *t;
	int64_t t0;
	int r;

	vev_timer_sweep(l);
	for (t = l->timers; t; t = t->next) {
		if (t->dead || t->id > max_id || t->when_ms > now)
			continue;
		t0 = vev_now_us();
		l->st.timer_runs++;
		r = t->cb(l, t->id, t->arg);
		vev_stall_check(l, t0, "timer", (int)t->id);
		if (r < 0)
			t->dead = true;
		else
			t->when_ms = vev_now_ms() + r;
	}
}

void vev_set_busy(struct vev_loop *l, const struct vev_busy_ops *ops, void *arg,
		  unsigned spin_us)
{
	if (ops)
		l->busy = *ops;
	else
		memset(&l->busy, 0, sizeof(l->busy));
	l->busy_arg = arg;
	l->spin_us = spin_us;
	l->last_work_us = INT64_MIN / 2;
	/* Unknown notify state: the first spin disarms explicitly. */
	l->armed = true;
}

/* Returns true to keep polling (epoll timeout 0), false to sleep. */
static bool vev_busy_step(struct vev_loop *l)
{
	int64_t t0, now;
	int n;

	if (!l->busy.poll)
		return false;
	t0 = vev_now_us();
	n = l->busy.poll(l->busy_arg);
	l->st.polls++;
	now = vev_now_us();
	vev_stall_since(l, t0, now, "poll", 0);
	if (n > 0) {
		l->last_work_us = now;
	} else if (now - l->last_work_us >= l->spin_us) {
		/* Idle past the window: turn notifications on, re-check. */
		l->st.arms++;
		l->armed = true;
		if (!l->busy.arm || l->busy.arm(l->busy_arg) != 1)
			return false;
		/* Work slipped in between poll and arm: a new window. */
		l->last_work_us = now;
	}
	if (l->armed) {
		if (l->busy.disarm)
			l->busy.disarm(l->busy_arg);
		l->armed = false;
		l->st.disarms++;
	}
	/* An empty poll inside the window gives the core away: a guest that
	 * shares it (a 2-core host) is who would bring the next work, and
	 * spinning over it cost a poster 50 us per doorbell (4 KiB
	 * ib_write_bw: 80 MB/s; with the yield, GB/s). */
	if (n <= 0)
		sched_yield();
	return true;
}

static void vev_dispatch(struct vev_loop *l, const struct epoll_event *ev)
{
	int fd = (int)(uint32_t)ev->data.u64;
	uint32_t gen = (uint32_t)(ev->data.u64 >> 32);
	unsigned events = 0;
	struct vev_fd *f;
	int64_t t0;

	if ((unsigned)fd >= l->nfds_alloc)
		return;
	f = &l->fds[fd];
	/* Deleted (or deleted and re-added) by an earlier callback. */
	if (!f->mask || f->gen != gen)
		return;
	if (ev->events & EPOLLIN)
		events |= VEV_READ;
	if (ev->events & EPOLLOUT)
		events |= VEV_WRITE;
	if (ev->events & (EPOLLERR | EPOLLHUP))
		events |= VEV_ERROR;
	t0 = vev_now_us();
	l->st.fd_events++;
	f->cb(l, fd, events, f->arg);
	vev_stall_check(l, t0, "fd", fd);
}

int vev_run_once(struct vev_loop *l)
{
	struct epoll_event evs[VEV_BATCH];
	int timeout = 0, n, i;

	l->st.iters++;
	if (!vev_busy_step(l))
		timeout = vev_timer_wait_ms(l);
	if (timeout)
		l->st.sleeps++;
	else
		l->st.spins++;
	n = epoll_wait(l->epfd, evs, VEV_BATCH, timeout);
	if (n < 0) {
		if (errno != EINTR)
			return -errno;
		n = 0;
	}
	for (i = 0; i < n; i++)
		vev_dispatch(l, &evs[i]);
	vev_timer_run(l);
	return 0;
}

int vev_run(struct vev_loop *l)
{
	int err;

	l->stop = false;
	while (!l->stop) {
		err = vev_run_once(l);
		if (err)
			return err;
	}
	return 0;
}

void vev_stop(struct vev_loop *l)
{
	l->stop = true;
}

void vev_get_stats(const struct vev_loop *l, struct vev_stats *st)
{
	*st = l->st;
}
