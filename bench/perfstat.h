/* SPDX-License-Identifier: MIT */
/* Statistics shared by the guest tests and the reference benchmarks, so
 * both report latency the same way (perftest's columns). */
#ifndef VRDMA_PERFSTAT_H
#define VRDMA_PERFSTAT_H

#include <stddef.h>
#include <stdint.h>

struct ps_lat {
	size_t size;
	uint64_t iters;
	double min, max, typical, avg, stdev, p99, p999;	/* usec */
};

/* rtt_ns: n round trips, sorted in place; latency is half a round trip. */
int ps_lat_compute(struct ps_lat *r, size_t size, uint64_t *rtt_ns, uint64_t n);

#endif /* VRDMA_PERFSTAT_H */
