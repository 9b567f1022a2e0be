// SPDX-License-Identifier: MIT
/*
 * vrdma-refbench: what this machine does without vrdma.
 *   memcpy  single-thread copy between two pre-faulted buffers
 *   tcp     two processes streaming over TCP loopback
 *   shmlat  two processes ping-ponging a counter in a MAP_SHARED page
 *   shmrelay  the same through a third process in the middle
 * Output uses the perftest columns of vrdma-bw / vrdma-lat.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "refbench.h"

#define RB_BW_HDR " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]"
#define RB_LAT_HDR " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]"
#define RB_RULE "---------------------------------------------------------------------------------------"
#define RB_MIB (1024.0 * 1024.0)

uint64_t rb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * t_ns[0] is the start, t_ns[i] the time batch i (of `batch` messages) was
 * done; timing every message would cost more than a small memcpy.  The
 * peak is the best window of n/16 batches: one-batch windows only measure
 * how two completions happened to be grouped.
 */
void rb_bw_from_samples(struct rb_bw *r, size_t size, uint64_t batch,
			const uint64_t *t_ns, uint64_t n)
{
	uint64_t w = n / 16 ? n / 16 : 1;
	double total = (double)(t_ns[n] - t_ns[0]) / 1e9;
	double bytes = (double)size * (double)batch;
	double best = 0;
	uint64_t i;

	r->size = size;
	r->iters = n * batch;
	if (total <= 0)
		total = 1e-9;
	r->avg_mib = bytes * (double)n / RB_MIB / total;
	r->mpps = (double)r->iters / total / 1e6;
	for (i = 0; i + w <= n; i++) {
		double dt = (double)(t_ns[i + w] - t_ns[i]) / 1e9;
		double bw = bytes * (double)w / RB_MIB / (dt > 0 ? dt : 1e-9);

		if (bw > best)
			best = bw;
	}
	r->peak_mib = best > r->avg_mib ? best : r->avg_mib;
}

void rb_print_bw(const struct rb_opts *o, const char *test, const struct rb_bw *r)
{
	switch (o->fmt) {
	case RB_FMT_CSV:
		printf("test,bytes,iterations,bw_peak_mib,bw_avg_mib,msg_rate_mpps\n");
		printf("%s,%zu,%" PRIu64 ",%.2f,%.2f,%.6f\n", test, r->size,
		       r->iters, r->peak_mib, r->avg_mib, r->mpps);
		break;
	case RB_FMT_JSON:
		printf("{\"test\":\"%s\",\"bytes\":%zu,\"iterations\":%" PRIu64
		       ",\"bw_peak_mib\":%.2f,\"bw_avg_mib\":%.2f,\"msg_rate_mpps\":%.6f}\n",
		       test, r->size, r->iters, r->peak_mib, r->avg_mib, r->mpps);
		break;
	default:
		printf("%s\n%s\n", RB_RULE, RB_BW_HDR);
		printf(" %-7zu    %-10" PRIu64 "       %-7.2f            %-7.2f\t\t   %-7.6f\n",
		       r->size, r->iters, r->peak_mib, r->avg_mib, r->mpps);
		printf("%s\n", RB_RULE);
	}
}

void rb_print_lat(const struct rb_opts *o, const char *test, const struct ps_lat *r)
{
	switch (o->fmt) {
	case RB_FMT_CSV:
		printf("test,bytes,iterations,t_min_us,t_max_us,t_typical_us,t_avg_us,t_stdev_us,p99_us,p999_us\n");
		printf("%s,%zu,%" PRIu64 ",%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f\n",
		       test, r->size, r->iters, r->min, r->max, r->typical,
		       r->avg, r->stdev, r->p99, r->p999);
		break;
	case RB_FMT_JSON:
		printf("{\"test\":\"%s\",\"bytes\":%zu,\"iterations\":%" PRIu64
		       ",\"t_min_us\":%.2f,\"t_max_us\":%.2f,\"t_typical_us\":%.2f"
		       ",\"t_avg_us\":%.2f,\"t_stdev_us\":%.2f,\"p99_us\":%.2f,\"p999_us\":%.2f}\n",
		       test, r->size, r->iters, r->min, r->max, r->typical,
		       r->avg, r->stdev, r->p99, r->p999);
		break;
	default:
		printf("%s\n%s\n", RB_RULE, RB_LAT_HDR);
		printf(" %-7zu %-10" PRIu64 "      %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
		       r->size, r->iters, r->min, r->max, r->typical, r->avg,
		       r->stdev, r->p99, r->p999);
		printf("%s\n", RB_RULE);
	}
}

static const struct {
	const char *name;
	int (*run)(const struct rb_opts *o);
	const char *help;
} rb_tests[] = {
	{ "memcpy", rb_run_memcpy, "single-thread memcpy between two buffers (MiB/s)" },
	{ "tcp",    rb_run_tcp,    "two processes over TCP 127.0.0.1 (MiB/s received)" },
	{ "shmlat", rb_run_shmlat, "ping-pong through a shared page (half round trip)" },
	{ "shmrelay", rb_run_shmrelay, "the same through a relay process (client -> relay -> server)" },
};

static void rb_usage(FILE *f, const char *prog)
{
	size_t i;

	fprintf(f, "Usage: %s TEST [-s SIZE] [-w WINDOW] [-n ITERS] [-T SEC] [--csv|--json]\n"
		"Tests:\n", prog);
	for (i = 0; i < sizeof(rb_tests) / sizeof(rb_tests[0]); i++)
		fprintf(f, "  %-8s %s\n", rb_tests[i].name, rb_tests[i].help);
	fprintf(f, "Options:\n"
		"  -s, --size SIZE     message size in bytes (K/M suffix ok; default 65536, shmlat 8)\n"
		"  -w, --window SIZE   memcpy: rotate over this many bytes (default: SIZE)\n"
		"  -n, --iters N       iterations (default: about one second of work)\n"
		"  -T, --timeout SEC   limit for the whole run (default 30)\n"
		"      --csv, --json   machine-readable output\n");
}

static int rb_parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (*end || v == 0 || v > (1ull << 30))
		return -EINVAL;
	*out = (size_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "window", required_argument, NULL, 'w' },
		{ "iters", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "csv", no_argument, NULL, 'C' },
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct rb_opts o = { .size = 0, .iters = 0, .timeout_s = 30, .fmt = RB_FMT_TEXT };
	const char *test;
	char *end;
	size_t i;
	int c;

	while ((c = getopt_long(argc, argv, "s:w:n:T:h", lopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (rb_parse_size(optarg, &o.size))
				goto bad;
			break;
		case 'w':
			if (rb_parse_size(optarg, &o.window))
				goto bad;
			break;
		case 'n':
			o.iters = strtoull(optarg, &end, 10);
			if (*end || !o.iters || *optarg == '-')
				goto bad;
			break;
		case 'T':
			o.timeout_s = (int)strtol(optarg, &end, 10);
			if (*end || o.timeout_s <= 0 || o.timeout_s > 3600)
				goto bad;
			break;
		case 'C':
			o.fmt = RB_FMT_CSV;
			break;
		case 'J':
			o.fmt = RB_FMT_JSON;
			break;
		case 'h':
			rb_usage(stdout, argv[0]);
			return 0;
		default:
			goto bad;
		}
	}
	if (optind != argc - 1)
		goto bad;
	test = argv[optind];
	for (i = 0; i < sizeof(rb_tests) / sizeof(rb_tests[0]); i++) {
		if (strcmp(test, rb_tests[i].name))
			continue;
		if (!o.size)
			o.size = strncmp(test, "shm", 3) ? 65536 : 8;
		return rb_tests[i].run(&o) ? 1 : 0;
	}
bad:
	rb_usage(stderr, argv[0]);
	return 2;
}
