// SPDX-License-Identifier: MIT
/*
 * vrdma-refbench shmlat: two processes ping-pong an 8-byte counter through
 * a MAP_SHARED page, spinning.  The floor for any shared-memory transport
 * on this machine, so vrdma-lat has something to be compared with.
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

/* ping and pong on separate cache lines so each has one writer. */
struct rb_shm {
	uint64_t ping __attribute__((aligned(64)));
	uint64_t pong __attribute__((aligned(64)));
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

static void rb_ponger(struct rb_shm *s, uint64_t deadline)
{
	uint64_t i;

	for (i = 1;; i++) {
		int ret = rb_spin(&s->ping, i, deadline);

		if (ret)
			_exit(ret == -ECANCELED ? 0 : 1);
		__atomic_store_n(&s->pong, i, __ATOMIC_RELEASE);
	}
}

int rb_run_shmlat(const struct rb_opts *o)
{
	uint64_t n = o->iters ? o->iters : 100000;
	uint64_t deadline = rb_now_ns() + (uint64_t)o->timeout_s * 1000000000u;
	uint64_t i, *d;
	struct rb_shm *s;
	struct ps_lat r;
	pid_t pid;
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
		rb_ponger(s, deadline);
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
	if (ret)
		kill(pid, SIGKILL);
	/* The ponger exits as soon as it sees RB_STOP (or its alarm fires). */
	if (waitpid(pid, &st, 0) == pid && !ret &&
	    !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		ret = -EPIPE;
	if (!ret) {
		ps_lat_compute(&r, sizeof(s->ping), d, n);
		rb_print_lat(o, "shmlat", &r);
	}
out_unmap:
	munmap(s, 4096);
out_free:
	free(d);
	if (ret)
		fprintf(stderr, "refbench shmlat: %s\n", strerror(-ret));
	return ret;
}
