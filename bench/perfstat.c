// SPDX-License-Identifier: MIT
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "perfstat.h"

static int ps_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int ps_lat_compute(struct ps_lat *r, size_t size, uint64_t *rtt_ns, uint64_t n)
{
	double sum = 0, sq = 0;
	uint64_t i;

	if (!n)
		return -EINVAL;
	qsort(rtt_ns, n, sizeof(*rtt_ns), ps_cmp_u64);
	for (i = 0; i < n; i++)
		sum += (double)rtt_ns[i] / 2000.0;
	r->avg = sum / (double)n;
	for (i = 0; i < n; i++) {
		double d = (double)rtt_ns[i] / 2000.0 - r->avg;

		sq += d * d;
	}
	r->size = size;
	r->iters = n;
	r->stdev = sqrt(sq / (double)n);
	r->min = (double)rtt_ns[0] / 2000.0;
	r->max = (double)rtt_ns[n - 1] / 2000.0;
	r->typical = (double)rtt_ns[n / 2] / 2000.0;
	r->p99 = (double)rtt_ns[n * 99 / 100] / 2000.0;
	r->p999 = (double)rtt_ns[n * 999 / 1000] / 2000.0;
	return 0;
}
