// SPDX-License-Identifier: MIT
/* Time, data patterns, statistics and perftest-style output. */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gt_common.h"

#define GT_MIB		(1024.0 * 1024.0)
#define GT_RULE		"---------------------------------------------------------------------------------------"
#define GT_BW_HDR	" #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]"
#define GT_BW_HDR_G	" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
#define GT_LAT_DUR_HDR	" #bytes        #iterations       t_avg[usec]    tps average"
#define GT_LAT_HDR	" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]"

static int gt_rows;	/* rows printed so far (JSON commas) */

uint64_t gt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t gt_deadline(const struct gt_ctx *c)
{
	return gt_now_ns() + (uint64_t)c->o->timeout_s * 1000000000u;
}

/* Milliseconds until deadline, at least 1 while any time is left. */
int gt_ms_left(uint64_t deadline)
{
	uint64_t now = gt_now_ns();

	uint64_t ms;

	if (now >= deadline)
		return 0;
	ms = (deadline - now + 999999) / 1000000;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* The pattern of message idx: 64-bit words from a per-message start. */
static uint64_t gt_word(uint32_t seed, uint64_t idx, size_t k)
{
	uint64_t x = ((uint64_t)seed << 32 ^ idx) * 0x9e3779b97f4a7c15ull;

	x ^= x >> 29;
	return htole64(x + (uint64_t)k * 0xbf58476d1ce4e5b9ull);
}

void gt_fill(uint8_t *p, size_t len, uint32_t seed, uint64_t idx)
{
	size_t k;

	for (k = 0; k < len / 8; k++) {
		uint64_t w = gt_word(seed, idx, k);

		memcpy(p + k * 8, &w, 8);
	}
	if (len % 8) {
		uint64_t w = gt_word(seed, idx, k);

		memcpy(p + k * 8, &w, len % 8);
	}
}

/* 0 if p holds exactly the pattern gt_fill() wrote, else -EBADMSG. */
int gt_check(const uint8_t *p, size_t len, uint32_t seed, uint64_t idx)
{
	size_t k;

	for (k = 0; k < len / 8; k++) {
		uint64_t w = gt_word(seed, idx, k);

		if (memcmp(p + k * 8, &w, 8))
			return -EBADMSG;
	}
	if (len % 8) {
		uint64_t w = gt_word(seed, idx, k);

		if (memcmp(p + k * 8, &w, len % 8))
			return -EBADMSG;
	}
	return 0;
}

/*
 * Samples (t_ns[i], cnt[i]): cnt[i] messages done at t_ns[i]; sample 0 is
 * the start.  Average over the whole run; peak over the best window of at
 * least iters/16 messages (shorter windows measure completion batching).
 */
void gt_bw_compute(struct gt_bw_res *r, size_t size, uint64_t iters,
		   const uint64_t *t_ns, const uint64_t *cnt, uint32_t n)
{
	uint64_t w = iters / 16 ? iters / 16 : 1;
	double total = n > 1 ? (double)(t_ns[n - 1] - t_ns[0]) / 1e9 : 0;
	double best = 0;
	uint32_t i, j = 0;

	if (total <= 0)
		total = 1e-9;
	r->size = size;
	r->iters = iters;
	r->ns = n > 1 ? t_ns[n - 1] - t_ns[0] : 0;
	r->avg_mib = (double)size * (double)iters / GT_MIB / total;
	r->mpps = (double)iters / total / 1e6;
	for (i = 0; i < n; i++) {
		double dt, bw;

		if (j < i)
			j = i;
		while (j < n && cnt[j] - cnt[i] < w)
			j++;
		if (j == n)
			break;
		dt = (double)(t_ns[j] - t_ns[i]) / 1e9;
		bw = (double)size * (double)(cnt[j] - cnt[i]) / GT_MIB / (dt > 0 ? dt : 1e-9);
		if (bw > best)
			best = bw;
	}
	r->peak_mib = best > r->avg_mib ? best : r->avg_mib;
}

/* -b: perftest's row is the sum of both sides; #iterations stays ours. */
void gt_bw_add(struct gt_bw_res *r, const struct gt_bw_res *peer)
{
	r->peak_mib += peer->peak_mib;
	r->avg_mib += peer->avg_mib;
	r->mpps += peer->mpps;
}

const char *gt_mode_name(enum gt_mode m)
{
	return m == GT_MODE_READ ? "read" : m == GT_MODE_SEND ? "send" : "write";
}

/* --report_gbits: perftest's Gb/s (10^9 bits) instead of MiB/s. */
static double gt_bw_unit(const struct gt_opts *o, double mib)
{
	return o->gbits ? mib * GT_MIB * 8 / 1e9 : mib;
}

void gt_report_begin(const struct gt_opts *o)
{
	int bw = o->test == GT_BW;
	const char *u = o->gbits ? "gbps" : "mib";

	gt_rows = 0;
	if (o->output != GT_OUT_FULL)
		return;		/* perftest's --output: the numbers alone */
	switch (o->fmt) {
	case GT_FMT_CSV:
		if (bw)
			printf("test,mode,bytes,iterations,bw_peak_%s,bw_avg_%s,msg_rate_mpps,"
			       "qps,bidirectional\n", u, u);
		else if (o->duration_s)
			printf("test,mode,bytes,iterations,t_avg_us,tps\n");
		else
			printf("test,mode,bytes,iterations,t_min_us,t_max_us,t_typical_us,t_avg_us,t_stdev_us,p99_us,p999_us\n");
		break;
	case GT_FMT_JSON:
		printf("{\"test\":\"%s\",\"mode\":\"%s\",", bw ? "bw" : "lat",
		       gt_mode_name(o->mode));
		/* -q, -b: the rows are totals over the QPs and both sides */
		if (bw)
			printf("\"qps\":%u,\"bidirectional\":%s,", o->nqps,
			       o->bidir ? "true" : "false");
		printf("\"results\":[");
		break;
	default:
		printf("%s\n%s\n", GT_RULE, bw ? (o->gbits ? GT_BW_HDR_G : GT_BW_HDR) :
		       o->duration_s ? GT_LAT_DUR_HDR : GT_LAT_HDR);
	}
	fflush(stdout);
}

void gt_report_bw(const struct gt_opts *o, const struct gt_bw_res *r)
{
	double peak = gt_bw_unit(o, r->peak_mib), avg = gt_bw_unit(o, r->avg_mib);
	const char *u = o->gbits ? "gbps" : "mib";

	if (o->output == GT_OUT_BW)
		printf("%f\n", avg);
	else if (o->output == GT_OUT_MSG_RATE)
		printf("%f\n", r->mpps);
	else if (o->fmt == GT_FMT_CSV)
		printf("bw,%s,%zu,%" PRIu64 ",%.2f,%.2f,%.6f,%u,%d\n", gt_mode_name(o->mode),
		       r->size, r->iters, peak, avg, r->mpps, o->nqps, o->bidir);
	else if (o->fmt == GT_FMT_JSON)
		printf("%s\n{\"bytes\":%zu,\"iterations\":%" PRIu64 ",\"bw_peak_%s\":%.2f,"
		       "\"bw_avg_%s\":%.2f,\"msg_rate_mpps\":%.6f}", gt_rows ? "," : "",
		       r->size, r->iters, u, peak, u, avg, r->mpps);
	else
		printf(" %-7zu    %-10" PRIu64 "       %-7.2f            %-7.2f\t\t   %-7.6f\n",
		       r->size, r->iters, peak, avg, r->mpps);
	gt_rows++;
	fflush(stdout);
}

void gt_report_lat(const struct gt_opts *o, const struct ps_lat *r)
{
	if (o->output == GT_OUT_LAT) {
		printf("%f\n", r->avg);
		gt_rows++;
		fflush(stdout);
		return;
	}
	switch (o->fmt) {
	case GT_FMT_CSV:
		printf("lat,%s,%zu,%" PRIu64 ",%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f\n",
		       gt_mode_name(o->mode), r->size, r->iters, r->min, r->max,
		       r->typical, r->avg, r->stdev, r->p99, r->p999);
		break;
	case GT_FMT_JSON:
		printf("%s\n{\"bytes\":%zu,\"iterations\":%" PRIu64 ",\"t_min_us\":%.2f,"
		       "\"t_max_us\":%.2f,\"t_typical_us\":%.2f,\"t_avg_us\":%.2f,"
		       "\"t_stdev_us\":%.2f,\"p99_us\":%.2f,\"p999_us\":%.2f}",
		       gt_rows ? "," : "", r->size, r->iters, r->min, r->max,
		       r->typical, r->avg, r->stdev, r->p99, r->p999);
		break;
	default:
		printf(" %-7zu %-10" PRIu64 "      %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
		       r->size, r->iters, r->min, r->max, r->typical, r->avg,
		       r->stdev, r->p99, r->p999);
	}
	gt_rows++;
	fflush(stdout);
}

/* perftest's duration row: t_avg is half the mean round trip, tps the
 * round trips per second of the timed pings. */
void gt_report_lat_dur(const struct gt_opts *o, const struct gt_lat_dur *r)
{
	if (o->output == GT_OUT_LAT)
		printf("%f\n", r->avg_us);
	else if (o->fmt == GT_FMT_CSV)
		printf("lat,%s,%zu,%" PRIu64 ",%.2f,%.2f\n", gt_mode_name(o->mode),
		       r->size, r->iters, r->avg_us, r->tps);
	else if (o->fmt == GT_FMT_JSON)
		printf("%s\n{\"bytes\":%zu,\"iterations\":%" PRIu64 ",\"t_avg_us\":%.2f,"
		       "\"tps\":%.2f}", gt_rows ? "," : "", r->size, r->iters, r->avg_us, r->tps);
	else
		printf(" %-7zu       %-10" PRIu64 "        %-7.2f        %-7.2f\n",
		       r->size, r->iters, r->avg_us, r->tps);
	gt_rows++;
	fflush(stdout);
}

/* ok: the run succeeded; verified: 1 data checked out, 0 it did not,
 * -1 the run ended before a verdict. */
void gt_report_end(const struct gt_opts *o, int ok, int verified)
{
	const char *v = !o->verify ? "off" : verified > 0 ? "OK" :
			verified == 0 ? "FAILED" : "incomplete";

	if (o->output != GT_OUT_FULL)
		return;		/* a failed verify said so on stderr; exit 1 */
	switch (o->fmt) {
	case GT_FMT_CSV:
		if (o->verify)
			printf("# verify: %s\n", v);
		break;
	case GT_FMT_JSON:
		printf("\n],\"verify\":\"%s\",\"ok\":%s}\n", v, ok ? "true" : "false");
		break;
	default:
		printf("%s\n", GT_RULE);
		if (o->verify)
			printf("verify: %s\n", v);
	}
	fflush(stdout);
}
