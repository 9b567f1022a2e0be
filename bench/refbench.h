/* SPDX-License-Identifier: MIT */
/*
 * vrdma-refbench: reference numbers for this machine without vrdma
 * (memcpy, TCP loopback, shared-memory ping-pong), printed in the same
 * perftest columns as vrdma-bw / vrdma-lat so they can sit side by side.
 */
#ifndef VRDMA_REFBENCH_H
#define VRDMA_REFBENCH_H

#include <stddef.h>
#include <stdint.h>

#include "perfstat.h"

enum rb_fmt { RB_FMT_TEXT, RB_FMT_CSV, RB_FMT_JSON };

struct rb_opts {
	size_t size;		/* message size in bytes */
	size_t window;		/* memcpy: rotate over this many bytes (0: size) */
	uint64_t iters;		/* 0: pick a default per test */
	int timeout_s;		/* limit for the whole run */
	enum rb_fmt fmt;
};

/* One bandwidth result: bytes moved and time taken, plus best interval. */
struct rb_bw {
	size_t size;
	uint64_t iters;
	double peak_mib;
	double avg_mib;
	double mpps;
};


uint64_t rb_now_ns(void);
void rb_bw_from_samples(struct rb_bw *r, size_t size, uint64_t batch,
			const uint64_t *t_ns, uint64_t n);
void rb_print_bw(const struct rb_opts *o, const char *test, const struct rb_bw *r);
void rb_print_lat(const struct rb_opts *o, const char *test, const struct ps_lat *r);

int rb_run_memcpy(const struct rb_opts *o);
int rb_run_tcp(const struct rb_opts *o);
int rb_run_shmlat(const struct rb_opts *o);
int rb_run_shmrelay(const struct rb_opts *o);

#endif /* VRDMA_REFBENCH_H */
