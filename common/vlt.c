// SPDX-License-Identifier: MIT
/* The per-hop latency trace's array and clock (vlt.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vlt.h"

int vlt_parse(const char *s, uint32_t *n)
{
	uint64_t v = 0;
	int big = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (!big)
			v = v * 10 + (uint64_t)(*s - '0');
		big = v > VLT_MAX;	/* the rest must still be digits */
	}
	if (big)
		return -ERANGE;
	*n = (uint32_t)v;
	return 0;
}

static int64_t vlt_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The clock and CLOCK_MONOTONIC at one moment: the closest pair of a few
 * tries (an interrupt between the two reads would skew one). */
static void vlt_pair(uint64_t *t, int64_t *ns)
{
	uint64_t a, b, best = UINT64_MAX;
	int64_t m;
	int i;

	for (i = 0; i < 8; i++) {
		a = vlt_now();
		m = vlt_mono_ns();
		b = vlt_now();
		if (b - a < best) {
			best = b - a;
			*t = a + (b - a) / 2;
			*ns = m;
		}
	}
}

int vlt_arm(struct vlt *t, uint32_t cap)
{
	struct vlt_rec *rec;

	if (cap < 1 || cap > VLT_MAX)
		return -EINVAL;
	rec = malloc((size_t)cap * sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	/* Touched now: a page fault would be a stamp's latency. */
	memset(rec, 0, (size_t)cap * sizeof(*rec));
	vlt_disarm(t);
	t->rec = rec;
	t->cap = cap;
	__atomic_store_n(&t->n, 0, __ATOMIC_RELAXED);
	vlt_pair(&t->t0, &t->ns0);
	/* Whoever sees `on` sees the array. */
	__atomic_store_n(&t->on, 1, __ATOMIC_RELEASE);
	return 0;
}

void vlt_disarm(struct vlt *t)
{
	__atomic_store_n(&t->on, 0, __ATOMIC_RELAXED);
	free(t->rec);
	t->rec = NULL;
	t->cap = 0;
	t->n = 0;
}

void vlt_put(struct vlt *t, unsigned kind, uint32_t qpn, uint64_t id, uint32_t aux,
	     uint32_t dom)
{
	uint64_t now = vlt_now();
	struct vlt_rec *r;
	uint32_t i;

	/* Acquire: pairs with vlt_arm's release of `on`. */
	if (!__atomic_load_n(&t->on, __ATOMIC_ACQUIRE))
		return;
	i = __atomic_fetch_add(&t->n, 1, __ATOMIC_RELAXED);
	if (i >= t->cap) {
		/* Full: the sites stop calling (n stays within a few of cap,
		 * one per thread that was already here). */
		__atomic_store_n(&t->on, 0, __ATOMIC_RELAXED);
		return;
	}
	r = &t->rec[i];
	r->t = now;
	r->id = id;
	r->qpn = qpn;
	r->aux = aux;
	r->dom = dom;
	r->kind = (uint16_t)kind;
	/* Release: a reader in another thread (libvrdma's flush at exit)
	 * that sees done sees the stamp whole; one it took a slot for but
	 * has not filled is skipped. */
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

uint32_t vlt_count(const struct vlt *t)
{
	uint32_t n = __atomic_load_n(&t->n, __ATOMIC_RELAXED);

	return n < t->cap ? n : t->cap;
}

int vlt_full(const struct vlt *t)
{
	return t->cap && __atomic_load_n(&t->n, __ATOMIC_RELAXED) >= t->cap;
}

int vlt_rate(const struct vlt *t, uint64_t *hz, char *how, size_t len)
{
#if defined(__x86_64__) || defined(__i386__)
	uint64_t t1;
	int64_t ns1, left;
	double r;

	left = t->ns0 + VLT_CAL_NS - vlt_mono_ns();
	if (left > 0) {
		struct timespec ts = { left / 1000000000, left % 1000000000 };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	vlt_pair(&t1, &ns1);
	if (ns1 <= t->ns0 || t1 <= t->t0)
		return -EIO;
	r = (double)(t1 - t->t0) * 1e9 / (double)(ns1 - t->ns0);
	*hz = (uint64_t)(r + 0.5);
	snprintf(how, len, "tsc/monotonic:%.3fs", (double)(ns1 - t->ns0) / 1e9);
#else
	(void)t;
	*hz = 1000000000;
	snprintf(how, len, "monotonic-ns");
#endif
	return 0;
}
