// SPDX-License-Identifier: MIT
/*
 * vrdma-refbench shmlat: two processes ping-pong an 8-byte counter through
 * a MAP_SHARED page, spinning.  The floor for any shared-memory transport
 * on this machine, so vrdma-lat has something to be compared with.
 *
 * shmrelay: the same with a third process in the middle, the shape of the
 * split driver (guest -> vrdmad -> guest and back): client -> relay ->
 * server -> relay -> client, all spinning.  On two cores three spinners
 * share two CPUs, as vrdma-lat's client, vrdmad and server do.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "refbench.h"

#define RB_WARMUP	1000u
#define RB_STOP		UINT64_MAX

/* Each word on its own cache line so each has one writer.  Two
 * processes use ping/pong; the relay also fwd (to the server) and back. */
struct rb_shm {
	uint64_t ping __attribute__((aligned(64)));
	uint64_t pong __attribute__((aligned(64)));
	uint64_t fwd __attribute__((aligned(64)));
	uint64_t back __attribute__((aligned(64)));
};

/*
 * Spin until *p == want (or RB_STOP).  Every few thousand spins check the
 * clock, and yield so a machine with fewer cores than spinners still makes
 * progress.  0, or -ETIMEDOUT, or -ECANCELED on RB_STOP.
 */
static int rb_spin(const uint64_t *p, uint64_t want, uint64_t deadline)
{
	unsigned int spins = 0;

	for (;;) {
		uint64_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);

		if (v == want)
			return 0;
		if (v == RB_STOP)
			return -ECANCELED;
		if (++spins % 4096 == 0) {
			if (rb_now_ns() > deadline)
				return -ETIMEDOUT;
			if (spins % (1u << 16) == 0)
				sched_yield();
		}
	}
}

/* Wait for i on `in`, write it to `out`; pass RB_STOP on, then leave. */
static void rb_ponger(uint64_t *in, uint64_t *out, uint64_t deadline)
{
	uint64_t i;

	for (i = 1;; i++) {
		int ret = rb_spin(in, i, deadline);

		if (ret) {
			__atomic_store_n(out, RB_STOP, __ATOMIC_RELEASE);
			_exit(ret == -ECANCELED ? 0 : 1);
		}
		__atomic_store_n(out, i, __ATOMIC_RELEASE);
	}
}

/* The relay: ping -> fwd, back -> pong. */
static void rb_relay(struct rb_shm *s, uint64_t deadline)
{
	uint64_t i;

	for (i = 1;; i++) {
		int ret = rb_spin(&s->ping, i, deadline);

		if (!ret) {
			__atomic_store_n(&s->fwd, i, __ATOMIC_RELEASE);
			ret = rb_spin(&s->back, i, deadline);
		}
		if (ret) {
			__atomic_store_n(&s->fwd, RB_STOP, __ATOMIC_RELEASE);
			_exit(ret == -ECANCELED ? 0 : 1);
		}
		__atomic_store_n(&s->pong, i, __ATOMIC_RELEASE);
	}
}

static int rb_run_shm(const struct rb_opts *o, int relay)
{
	uint64_t n = o->iters ? o->iters : 100000;
	uint64_t deadline = rb_now_ns() + (uint64_t)o->timeout_s * 1000000000u;
	uint64_t i, *d;
	struct rb_shm *s;
	struct ps_lat r;
	pid_t pid, pid2 = -1;
	int ret = 0, st;

	d = calloc(n, sizeof(*d));
	if (!d)
		return -ENOMEM;
	s = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED) {
		ret = -errno;
		goto out_free;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		goto out_unmap;
	}
	if (pid == 0) {
		alarm((unsigned int)o->timeout_s + 1);
		if (relay)
			rb_relay(s, deadline);
		rb_ponger(&s->ping, &s->pong, deadline);
	}
	if (relay) {
		pid2 = fork();
		if (pid2 < 0) {
			ret = -errno;
			__atomic_store_n(&s->ping, RB_STOP, __ATOMIC_RELEASE);
			waitpid(pid, &st, 0);
			goto out_unmap;
		}
		if (pid2 == 0) {
			alarm((unsigned int)o->timeout_s + 1);
			rb_ponger(&s->fwd, &s->back, deadline);
		}
	}
	for (i = 1; i <= RB_WARMUP + n; i++) {
		uint64_t t0 = rb_now_ns();

		__atomic_store_n(&s->ping, i, __ATOMIC_RELEASE);
		ret = rb_spin(&s->pong, i, deadline);
		if (ret)
			break;
		if (i > RB_WARMUP)
			d[i - RB_WARMUP - 1] = rb_now_ns() - t0;
	}
	__atomic_store_n(&s->ping, RB_STOP, __ATOMIC_RELEASE);
	if (ret) {
		kill(pid, SIGKILL);
		if (pid2 > 0)
			kill(pid2, SIGKILL);
	}
	/* The others exit as soon as they see RB_STOP (or their alarm fires). */
	if (waitpid(pid, &st, 0) == pid && !ret &&
	    !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		ret = -EPIPE;
	if (pid2 > 0 && waitpid(pid2, &st, 0) == pid2 && !ret &&
	    !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		ret = -EPIPE;
	if (!ret) {
		ps_lat_compute(&r, sizeof(s->ping), d, n);
		rb_print_lat(o, relay ? "shmrelay" : "shmlat", &r);
	}
out_unmap:
	munmap(s, 4096);
out_free:
	free(d);
	if (ret)
		fprintf(stderr, "refbench %s: %s\n", relay ? "shmrelay" : "shmlat", strerror(-ret));
	return ret;
}

int rb_run_shmlat(const struct rb_opts *o)
{
	return rb_run_shm(o, 0);
}

int rb_run_shmrelay(const struct rb_opts *o)
{
	return rb_run_shm(o, 1);
}
