// SPDX-License-Identifier: MIT
/*
 * vrdma-coll-bench: what the collectives' reduction kernels
 * (common/coll/vcoll_reduce.c) cost on this machine.
 *
 *   vrdma-coll-bench [-s BYTES]... [--csv]
 *       vcoll_fold sum of two sources of BYTES each (default 64K, 1M, 16M),
 *       int32 and double, beside memcpy of the same BYTES: MiB of result
 *       per second, median of 7 rounds, and the ratio to memcpy.  A fold
 *       reads two vectors and writes one, memcpy reads one and writes one,
 *       so a memory-bound fold is at about 2/3 of memcpy.
 *   vrdma-coll-bench cost TYPE [REPS]
 *       REPS folds (default 8) of two 1 MiB sources of TYPE (int32 or
 *       double), untimed: scripts/bench-cost.sh counts their instructions
 *       under callgrind (--toggle-collect=vcoll_fold).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/vcoll_reduce.h"

#define CB_ROUNDS 7
#define CB_MIB (1024.0 * 1024.0)
#define CB_COST_BYTES (1u << 20)

static volatile uint8_t cb_sink;

static uint64_t cb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cb_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Three buffers of bytes, touched (no page faults in the timed part). */
static int cb_alloc(uint8_t *buf[3], size_t bytes)
{
	for (int i = 0; i < 3; i++) {
		buf[i] = aligned_alloc(64, (bytes + 63) / 64 * 64);
		if (!buf[i]) {
			while (i--)
				free(buf[i]);
			return -ENOMEM;
		}
		/* small values: sums of doubles and int32 stay ordinary */
		for (size_t k = 0; k < bytes; k++)
			buf[i][k] = (uint8_t)(k % 61 == 0 ? 0x3f : 0);
	}
	return 0;
}

static void cb_free(uint8_t *buf[3])
{
	for (int i = 0; i < 3; i++)
		free(buf[i]);
}

static int cb_cost(const char *tname, const char *reps_s)
{
	uint32_t t = strcmp(tname, "int32") == 0 ? VCOLL_INT32 :
		     strcmp(tname, "double") == 0 ? VCOLL_DOUBLE : 0;
	long reps = reps_s ? strtol(reps_s, NULL, 10) : 8;
	size_t n = t ? CB_COST_BYTES / vcoll_type_size(t) : 0;
	uint8_t *buf[3];
	const void *src[2];

	if (!t || reps < 1) {
		fprintf(stderr, "vrdma-coll-bench cost: TYPE int32 or double, REPS >= 1\n");
		return 2;
	}
	if (cb_alloc(buf, CB_COST_BYTES)) {
		perror("vrdma-coll-bench");
		return 1;
	}
	src[0] = buf[0];
	src[1] = buf[1];
	for (long r = 0; r < reps; r++)
		if (vcoll_fold(t, VCOLL_SUM, buf[2], src, 2, n)) {
			fprintf(stderr, "vrdma-coll-bench: vcoll_fold failed\n");
			cb_free(buf);
			return 1;
		}
	cb_sink = buf[2][0];
	printf("cost: %s sum, 2 sources, %zu elements x %ld folds\n", tname, n, reps);
	cb_free(buf);
	return 0;
}

/* One size, one type: median MiB/s of fold and of memcpy, interleaved. */
static int cb_run(uint32_t t, size_t bytes, int csv)
{
	size_t n = bytes / vcoll_type_size(t);
	uint64_t iters = 256 * CB_MIB / (double)bytes + 1;
	double fold[CB_ROUNDS], copy[CB_ROUNDS];
	uint8_t *buf[3];
	const void *src[2];

	if (cb_alloc(buf, bytes))
		return -ENOMEM;
	src[0] = buf[0];
	src[1] = buf[1];
	for (int r = -1; r < CB_ROUNDS; r++) {	/* round -1 warms up */
		uint64_t t0 = cb_now_ns(), t1, t2;

		for (uint64_t i = 0; i < iters; i++)
			if (vcoll_fold(t, VCOLL_SUM, buf[2], src, 2, n)) {
				cb_free(buf);
				return -EINVAL;
			}
		t1 = cb_now_ns();
		for (uint64_t i = 0; i < iters; i++) {
			memcpy(buf[2], buf[i & 1], bytes);
			cb_sink = buf[2][i % bytes];
		}
		t2 = cb_now_ns();
		if (r < 0)
			continue;
		fold[r] = (double)bytes * (double)iters / CB_MIB / ((double)(t1 - t0) / 1e9);
		copy[r] = (double)bytes * (double)iters / CB_MIB / ((double)(t2 - t1) / 1e9);
	}
	cb_free(buf);
	qsort(fold, CB_ROUNDS, sizeof(double), cb_cmp);
	qsort(copy, CB_ROUNDS, sizeof(double), cb_cmp);
	if (csv)
		printf("coll_fold,%s,sum,%zu,%llu,%.1f,%.1f,%.3f\n", vcoll_type_name(t), bytes,
		       (unsigned long long)iters, fold[CB_ROUNDS / 2], copy[CB_ROUNDS / 2],
		       fold[CB_ROUNDS / 2] / copy[CB_ROUNDS / 2]);
	else
		printf(" %-7s %-4s %10zu %10llu %14.1f %14.1f %8.3f\n", vcoll_type_name(t), "sum",
		       bytes, (unsigned long long)iters, fold[CB_ROUNDS / 2], copy[CB_ROUNDS / 2],
		       fold[CB_ROUNDS / 2] / copy[CB_ROUNDS / 2]);
	return 0;
}

static size_t cb_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s)
		return 0;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end || v > (1ull << 32))
		return 0;
	return (size_t)v;
}

int main(int argc, char **argv)
{
	size_t sizes[16] = { 64 << 10, 1 << 20, 16 << 20 };
	int nsizes = 3, given = 0, csv = 0;

	if (argc >= 3 && strcmp(argv[1], "cost") == 0)
		return cb_cost(argv[2], argc > 3 ? argv[3] : NULL);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--csv") == 0) {
			csv = 1;
		} else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc && given < 16 &&
			   cb_size(argv[i + 1]) >= 8) {
			sizes[given++] = cb_size(argv[++i]);
			nsizes = given;
		} else {
			fprintf(stderr, "usage: vrdma-coll-bench [-s BYTES]... [--csv]\n"
					"       vrdma-coll-bench cost int32|double [REPS]\n");
			return 2;
		}
	}
	if (csv)
		printf("test,type,op,bytes,iterations,fold_mib,memcpy_mib,fold_per_memcpy\n");
	else
		printf(" vcoll_fold of 2 sources vs memcpy, MiB of result per second (median of %d)\n"
		       " %-7s %-4s %10s %10s %14s %14s %8s\n", CB_ROUNDS, "#type", "op", "#bytes",
		       "#iters", "fold[MiB/s]", "memcpy[MiB/s]", "ratio");
	for (int i = 0; i < nsizes; i++)
		for (uint32_t t = VCOLL_INT32; t <= VCOLL_DOUBLE; t += VCOLL_DOUBLE - VCOLL_INT32)
			if (cb_run(t, sizes[i], csv)) {
				fprintf(stderr, "vrdma-coll-bench: %zu bytes failed\n", sizes[i]);
				return 1;
			}
	return 0;
}
