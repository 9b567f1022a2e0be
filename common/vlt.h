/* SPDX-License-Identifier: MIT */
/*
 * The per-hop latency trace: stamps taken at a few points of the data
 * path, on the clock a guest and its dom0 share, so that one round trip
 * splits into its hops (scripts/lat-trace.sh).  On x86 the clock is the
 * TSC: a Xen PV domU with tsc_mode native and dom0's vrdmad read the
 * same counter, as do processes of the plain host; elsewhere it is
 * CLOCK_MONOTONIC in nanoseconds.  Stamps of two nodes are never
 * compared with each other.
 *
 * libvrdma keeps one trace per process (env VRDMA_LAT_TRACE,
 * libvrdma/trace.c), vrdmad one (`vrdmactl trace lat N`,
 * backend/trace/).  A trace is an array armed with room for N stamps,
 * filled in order until full, then it stops: it holds the first N
 * stamps after arming.  A stamp is one atomic add and a store of 32
 * bytes, no lock, no allocation (the array is touched at arming, so no
 * page faults either); while a trace is off, a stamp site costs a load
 * of `on` and a branch.
 */
#ifndef VRDMA_VLT_H
#define VRDMA_VLT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define VLT_MAX		(1u << 20)	/* stamps in one trace (32 MiB) */
#define VLT_CAL_NS	50000000	/* the clock rate is measured over >= 50 ms */

struct vlt_rec {
	uint64_t t;		/* vlt_now() */
	uint64_t id;		/* a WR's wr_id, or the kind's own number */
	uint32_t qpn;		/* the QP number the guest sees, 0 = none */
	uint32_t aux;		/* the kind's own (status, peer QPN, count) */
	uint32_t dom;		/* dom0: the guest's domid */
	uint16_t kind;		/* the side's own codes */
	uint16_t done;		/* atomic, set last: the fields above are in */
};
_Static_assert(sizeof(struct vlt_rec) == 32, "a stamp is half a cache line");

struct vlt {
	uint8_t on;		/* atomic: stamps are taken */
	uint32_t cap;		/* room in rec */
	uint32_t n;		/* atomic: slots handed out; past cap: full */
	struct vlt_rec *rec;
	/* The clock and CLOCK_MONOTONIC at arming: vlt_rate() measures the
	 * clock's rate from there. */
	uint64_t t0;
	int64_t ns0;
};

/* The trace's clock: a few ns to read, never a system call. */
static inline uint64_t vlt_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* The number of stamps of "N" (decimal digits only): 0 with *n (0 too,
 * which callers take as "off"), -EINVAL if not a number, -ERANGE past
 * VLT_MAX. */
int  vlt_parse(const char *s, uint32_t *n);

/* Arm t for cap stamps (1..VLT_MAX), dropping what it held: 0, -EINVAL,
 * -ENOMEM (t stays as it was).  Not while other threads may stamp into t. */
int  vlt_arm(struct vlt *t, uint32_t cap);
/* Off and freed; nothing else may be stamping into t. */
void vlt_disarm(struct vlt *t);

/* One stamp, taken now (t->on was seen set).  Out of line: only a
 * tracing process pays its call. */
void vlt_put(struct vlt *t, unsigned kind, uint32_t qpn, uint64_t id, uint32_t aux,
	     uint32_t dom);

/* Stamps held (at most cap), and whether the trace filled up. */
uint32_t vlt_count(const struct vlt *t);
int  vlt_full(const struct vlt *t);

/*
 * The clock's rate in Hz, into *hz, and how it was found into how: the
 * TSC against CLOCK_MONOTONIC from arming until now (waiting, if need
 * be, until VLT_CAL_NS have passed), or "monotonic-ns" (1e9).  0, or
 * -EIO if the clocks made no sense.
 */
int  vlt_rate(const struct vlt *t, uint64_t *hz, char *how, size_t len);

#endif /* VRDMA_VLT_H */
