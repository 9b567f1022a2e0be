// SPDX-License-Identifier: MIT
/*
 * Command line of vrdma-bw and vrdma-lat.  A letter means what it means in
 * perftest (ib_write_bw, ib_send_lat ...); perftest's letters vrdma cannot
 * honour are refused by name with the reason, never ignored (except -F,
 * which has no effect here anyway).  vrdma's own options are long only.
 * Every bad value names itself and its option; exit 2, not the usage text.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_common.h"
#include "version.h"

#define GT_MAX_ITERS	100000000u
#define GT_MAX_DEPTH	1024u

/* long-only options: codes beyond any character */
enum {
	GT_OPT_VERIFY = 256, GT_OPT_CSV, GT_OPT_JSON, GT_OPT_TIMEOUT,
	GT_OPT_MODE, GT_OPT_WARMUP, GT_OPT_GBITS, GT_OPT_OUTPUT,
	GT_OPT_SERVICE, GT_OPT_DEVICE,
};

static const struct option gt_lopts[] = {
	/* perftest's meaning */
	{ "all", no_argument, NULL, 'a' },
	{ "bidirectional", no_argument, NULL, 'b' },
	{ "connection", required_argument, NULL, 'c' },
	{ "report-cycles", no_argument, NULL, 'C' },
	{ "ib-dev", required_argument, NULL, 'd' },
	{ "duration", required_argument, NULL, 'D' },
	{ "events", no_argument, NULL, 'e' },
	{ "CPU-freq", no_argument, NULL, 'F' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ "report-histogram", no_argument, NULL, 'H' },
	{ "ib-port", required_argument, NULL, 'i' },
	{ "inline_size", required_argument, NULL, 'I' },
	{ "post_list", required_argument, NULL, 'l' },
	{ "mtu", required_argument, NULL, 'm' },
	{ "iters", required_argument, NULL, 'n' },
	{ "port", required_argument, NULL, 'p' },
	{ "qp", required_argument, NULL, 'q' },
	{ "cq-mod", required_argument, NULL, 'Q' },
	{ "rx-depth", required_argument, NULL, 'r' },
	{ "rdma_cm", no_argument, NULL, 'R' },
	{ "size", required_argument, NULL, 's' },
	{ "sl", required_argument, NULL, 'S' },
	{ "tx-depth", required_argument, NULL, 't' },
	{ "tos", required_argument, NULL, 'T' },
	{ "qp-timeout", required_argument, NULL, 'u' },
	{ "limit_bw", required_argument, NULL, 'w' },
	{ "gid-index", required_argument, NULL, 'x' },
	{ "limit_msgrate", required_argument, NULL, 'y' },
	{ "report_gbits", no_argument, NULL, GT_OPT_GBITS },
	{ "output", required_argument, NULL, GT_OPT_OUTPUT },
	/* vrdma's own */
	{ "service", required_argument, NULL, GT_OPT_SERVICE },
	{ "device", required_argument, NULL, GT_OPT_DEVICE },
	{ "mode", required_argument, NULL, GT_OPT_MODE },
	{ "warmup", required_argument, NULL, GT_OPT_WARMUP },
	{ "timeout", required_argument, NULL, GT_OPT_TIMEOUT },
	{ "verify", no_argument, NULL, GT_OPT_VERIFY },
	{ "csv", no_argument, NULL, GT_OPT_CSV },
	{ "json", no_argument, NULL, GT_OPT_JSON },
	{ NULL, 0, NULL, 0 }
};
#define GT_SHORT	":abc:Cd:D:eFhHi:I:l:m:n:p:q:Q:r:Rs:S:t:T:u:Vw:x:y:"

static void gt_usage(FILE *f, const struct gt_opts *o)
{
	int bw = o->test == GT_BW;

	fprintf(f,
		"Usage: %s [options]          server: wait for one client\n"
		"       %s [options] NODE     client: NODE is the server's node name,\n"
		"                                   \"\", local or localhost for this node\n"
		"Options (as in perftest's %s):\n"
		"  -s, --size=BYTES      message size, K/M suffix ok (default 65536, max 8M)\n"
		"  -a, --all             sizes 2 B .. 8 MiB, powers of two\n"
		"  -n, --iters=N         measured iterations per size (default 1000)\n"
		"  -D, --duration=SEC    measure for SEC seconds instead of -n\n"
		"  -p, --port=NAME       service to listen on / connect to (default %s)\n"
		"  -d, --ib-dev=SPEC     device spec for vrdma_open (host, xen; default auto)\n"
		"%s"
		"  -e, --events          sleep on the CQ's event channel at once (no spinning)\n"
		"  -F, --CPU-freq        accepted: vrdma's clock never depends on cpufreq\n"
		"  -R, --rdma_cm         accepted: vrdma always connects through its CM\n"
		"%s"
		"  -c RC, -i 1, -x 0     accepted; other values are refused\n"
		"      --output=%s\n"
		"                        print only that number, one per size\n"
		"%s"
		"  -h, --help            this text\n"
		"  -V, --version         print the version\n"
		"vrdma options:\n"
		"      --mode=MODE       %s (default write)\n"
		"      --warmup=N        untimed iterations first (default %s)\n"
		"      --verify          fill a per-iteration pattern; the receiver checks every byte\n"
		"      --timeout=SEC     limit for every wait (default 30); the peer's\n"
		"                        messages restart it, -D adds to it\n"
		"      --csv, --json     machine-readable output\n"
		"      --service, --device  the same as -p, -d\n"
		"Refused with the reason: -l, -m, -r, -T, -w, -y and perftest's other\n"
		"letters vrdma cannot honour.  The client's parameters rule: the server\n"
		"follows what the client asks for%s.\n"
		"Exit: 0 success, 1 failed completion / timeout / verify, 2 bad options.\n",
		o->prog, o->prog, bw ? "ib_write_bw" : "ib_write_lat",
		bw ? "vrdma-bw" : "vrdma-lat",
		bw ? "  -t, --tx-depth=N      outstanding work requests per QP (default 64)\n"
		     "  -Q, --cq-mod=N        signal every N-th work request (default tx-depth/2)\n" : "",
		bw ? "  -q, --qp=N            N QPs to the server, work round-robin over them;\n"
		     "                        -n is per QP, the row is the total (default 1)\n"
		     "  -b, --bidirectional   both sides stream at once; the row is the sum\n"
		   : "  -q 1                  accepted; more QPs are vrdma-bw's\n",
		bw ? "bandwidth|message_rate" : "latency",
		bw ? "      --report_gbits    bandwidth in Gb/s (10^9 bit) instead of MiB/s\n" : "",
		bw ? "write | read | send" : "write | send",
		bw ? "2 x tx-depth per QP" : "100",
		bw ? " (a server given -q or -b\n"
		     "refuses a client whose -q or -b differ)" : "");
}

/* "-s/--size" or "--verify": the option as the user may have spelt it. */
static void gt_optname(int c, char *buf, size_t len)
{
	const struct option *l;

	for (l = gt_lopts; l->name; l++)
		if (l->val == c)
			break;
	if (c < 256 && l->name)
		snprintf(buf, len, "-%c/--%s", c, l->name);
	else if (l->name)
		snprintf(buf, len, "--%s", l->name);
	else
		snprintf(buf, len, "-%c", c);
}

static int gt_bad(const struct gt_opts *o, int c, const char *val, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* "vrdma-bw: bad value 'abc' for -s/--size: not a number" */
static int gt_bad(const struct gt_opts *o, int c, const char *val, const char *fmt, ...)
{
	char name[48];
	va_list ap;

	gt_optname(c, name, sizeof(name));
	fprintf(stderr, "%s: bad value '%s' for %s: ", o->prog, val, name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -EINVAL;
}

/* "vrdma-bw: -m/--mtu is not supported: WHY" */
static int gt_refuse(const struct gt_opts *o, int c, const char *why)
{
	char name[48];

	gt_optname(c, name, sizeof(name));
	fprintf(stderr, "%s: %s is not supported: %s\n", o->prog, name, why);
	return -EINVAL;
}

/* Decimal digits only (no sign, space, base prefix or trailing junk),
 * then a K or M suffix if shift_ok, then lo..hi. */
static int gt_num(const struct gt_opts *o, int c, const char *s, int shift_ok,
		  uint64_t lo, uint64_t hi, uint64_t *out)
{
	const char *p = s;
	uint64_t v = 0;

	if (!*s)
		return gt_bad(o, c, s, "empty");
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return gt_bad(o, c, s, "out of range %" PRIu64 "..%" PRIu64, lo, hi);
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p == s)
		return gt_bad(o, c, s, "not a number");
	if (shift_ok && p[1] == '\0' && (*p == 'K' || *p == 'k' || *p == 'M' || *p == 'm')) {
		int sh = *p == 'K' || *p == 'k' ? 10 : 20;

		if (v > UINT64_MAX >> sh)
			return gt_bad(o, c, s, "out of range %" PRIu64 "..%" PRIu64, lo, hi);
		v <<= sh;
		p++;
	}
	if (*p)
		return gt_bad(o, c, s, "not a number (junk after the digits)");
	if (v < lo || v > hi)
		return gt_bad(o, c, s, "%" PRIu64 " is out of range %" PRIu64 "..%" PRIu64,
			      v, lo, hi);
	*out = v;
	return 0;
}

static int gt_u32(const struct gt_opts *o, int c, const char *s, uint32_t lo,
		  uint32_t hi, uint32_t *out)
{
	uint64_t v;
	int ret = gt_num(o, c, s, 0, lo, hi, &v);

	if (!ret)
		*out = (uint32_t)v;
	return ret;
}

static int gt_name(const struct gt_opts *o, int c, const char *s, const char **out)
{
	if (!*s)
		return gt_bad(o, c, s, "empty");
	if (strlen(s) > VRDMA_MAX_NAME)
		return gt_bad(o, c, s, "longer than %d characters", VRDMA_MAX_NAME);
	*out = s;
	return 0;
}

/* A perftest letter that belongs to the bandwidth tests only. */
static int gt_bw_only(const struct gt_opts *o, int c)
{
	char name[48];

	if (o->test == GT_BW)
		return 0;
	gt_optname(c, name, sizeof(name));
	fprintf(stderr, "%s: %s is an option of vrdma-bw (perftest's *_bw), not of %s\n",
		o->prog, name, o->prog);
	return -EINVAL;
}

/* Letters of perftest that take a number vrdma has nothing to apply to:
 * the value is still checked first, so a typo is named as one. */
static int gt_refuse_num(const struct gt_opts *o, int c, const char *s,
			 uint64_t lo, uint64_t hi, const char *why)
{
	uint64_t v;

	return gt_num(o, c, s, 0, lo, hi, &v) ? -EINVAL : gt_refuse(o, c, why);
}

/* One option; 0, or -EINVAL after the message. */
static int gt_opt(struct gt_opts *o, int c, const char *arg, int *iters_set)
{
	uint64_t v64;
	uint32_t v;

	switch (c) {
	case 'a':
		o->all = 1;
		return 0;
	case 'b':
		if (gt_bw_only(o, c))
			return -EINVAL;
		o->bidir = 1;
		return 0;
	case 'c':
		if (!strcmp(arg, "RC"))
			return 0;
		if (!strcmp(arg, "UC") || !strcmp(arg, "UD") || !strcmp(arg, "XRC") ||
		    !strcmp(arg, "DC") || !strcmp(arg, "SRD"))
			return gt_refuse(o, c, "vrdma has reliable connected (RC) queue pairs only");
		return gt_bad(o, c, arg, "not one of RC, UC, UD, XRC, DC, SRD");
	case 'C':
		return gt_refuse(o, c, "times are reported in microseconds only");
	case 'd':
	case GT_OPT_DEVICE:
		if (!*arg)
			return gt_bad(o, c, arg, "empty");
		o->dev_spec = arg;
		return 0;
	case 'D':
		if (gt_u32(o, c, arg, 1, GT_MAX_DURATION, &o->duration_s)) {
			if (*arg < '0' || *arg > '9')
				fprintf(stderr, "%s: (-D is perftest's duration; the device is -d/--ib-dev)\n",
					o->prog);
			return -EINVAL;
		}
		return 0;
	case 'e':
		o->events = 1;
		return 0;
	case 'F':
		return 0;	/* no cpufreq warning to silence: CLOCK_MONOTONIC */
	case 'H':
		return gt_refuse(o, c, "vrdma-lat prints the summary row only (use --csv per size)");
	case 'i':
		if (gt_u32(o, c, arg, 1, 255, &v))
			return -EINVAL;
		return v == 1 ? 0 : gt_refuse(o, c, "a vrdma device has one port, port 1");
	case 'I':
		return gt_refuse_num(o, c, arg, 0, UINT32_MAX,
				     "vrdma has no inline sends (dom0 copies every message)");
	case 'l':
		if (gt_bw_only(o, c))
			return -EINVAL;
		return gt_refuse_num(o, c, arg, 1, GT_MAX_DEPTH,
				     "vrdma-bw posts one work request per call");
	case 'm':
		if (gt_u32(o, c, arg, 0, UINT32_MAX, &v)) {
			if (*arg < '0' || *arg > '9')
				fprintf(stderr, "%s: (-m is perftest's MTU; the mode is --mode %s)\n",
					o->prog, arg);
			return -EINVAL;
		}
		if (v != 256 && v != 512 && v != 1024 && v != 2048 && v != 4096)
			return gt_bad(o, c, arg, "not one of 256, 512, 1024, 2048, 4096");
		return gt_refuse(o, c, "vrdma sets no path MTU: dom0 moves whole messages, "
				 "across nodes its RDMA device uses its port's MTU "
				 "(the mode is --mode write|read|send)");
	case 'n':
		if (gt_u32(o, c, arg, 1, GT_MAX_ITERS, &o->iters))
			return -EINVAL;
		*iters_set = 1;
		return 0;
	case 'p':
	case GT_OPT_SERVICE:
		return gt_name(o, c, arg, &o->service);
	case 'q':
		if (gt_u32(o, c, arg, 1, GT_MAX_QPS, &v))
			return -EINVAL;
		if (v > 1 && gt_bw_only(o, c))
			return -EINVAL;
		o->nqps = v;
		o->nqps_set = 1;
		return 0;
	case 'Q':
		if (gt_bw_only(o, c))
			return -EINVAL;
		return gt_u32(o, c, arg, 1, GT_MAX_DEPTH, &o->cq_mod);
	case 'r':
		return gt_refuse_num(o, c, arg, 1, UINT32_MAX,
				     "receive queues are sized by the programs (the client's -t)");
	case 'R':
		return 0;	/* vrdma_connect/vrdma_listen are its CM */
	case 's':
		if (gt_num(o, c, arg, 1, 1, GT_MAX_SIZE, &v64))
			return -EINVAL;
		o->size = (size_t)v64;
		return 0;
	case 'S':
		return gt_refuse_num(o, c, arg, 0, 15, "vrdma has no service levels "
				     "(per-guest priority is vrdmactl set class=)");
	case 't':
		if (gt_bw_only(o, c))
			return -EINVAL;
		return gt_u32(o, c, arg, 1, GT_MAX_DEPTH, &o->tx_depth);
	case 'T':
		return gt_refuse_num(o, c, arg, 0, 256, "vrdma sets no type of service "
				     "(the wait limit is --timeout SEC)");
	case 'u':
		return gt_refuse_num(o, c, arg, 0, 31, "vrdma has no transport retry timer to set "
				     "(the wait limit is --timeout SEC)");
	case 'w':
	case 'y':
		if (gt_bw_only(o, c))
			return -EINVAL;
		return gt_refuse(o, c, "no pass/fail limit on the result "
				 "(the warm-up count is --warmup N)");
	case 'x':
		if (gt_u32(o, c, arg, 0, 255, &v))
			return -EINVAL;
		return v == 0 ? 0 : gt_refuse(o, c, "a vrdma device has one GID, index 0");
	case GT_OPT_GBITS:
		if (gt_bw_only(o, c))
			return -EINVAL;
		o->gbits = 1;
		return 0;
	case GT_OPT_OUTPUT:
		if (!strcmp(arg, "bandwidth") || !strcmp(arg, "message_rate")) {
			if (o->test != GT_BW)
				return gt_bad(o, c, arg, "%s prints latency only", o->prog);
			o->output = arg[0] == 'b' ? GT_OUT_BW : GT_OUT_MSG_RATE;
			return 0;
		}
		if (!strcmp(arg, "latency")) {
			if (o->test != GT_LAT)
				return gt_bad(o, c, arg, "%s prints bandwidth or message_rate",
					      o->prog);
			o->output = GT_OUT_LAT;
			return 0;
		}
		return gt_bad(o, c, arg, "not one of bandwidth, message_rate, latency");
	case GT_OPT_MODE:
		if (!strcmp(arg, "write"))
			o->mode = GT_MODE_WRITE;
		else if (!strcmp(arg, "send"))
			o->mode = GT_MODE_SEND;
		else if (!strcmp(arg, "read") && o->test == GT_BW)
			o->mode = GT_MODE_READ;
		else
			return gt_bad(o, c, arg, "not one of %s",
				      o->test == GT_BW ? "write, read, send" : "write, send");
		return 0;
	case GT_OPT_WARMUP:
		if (gt_u32(o, c, arg, 0, 1000000, &v))
			return -EINVAL;
		o->warmup = v;
		return 0;
	case GT_OPT_TIMEOUT:
		if (gt_u32(o, c, arg, 1, 3600, &v))
			return -EINVAL;
		o->timeout_s = (int)v;
		return 0;
	case GT_OPT_VERIFY:
		o->verify = 1;
		return 0;
	case GT_OPT_CSV:
		o->fmt = GT_FMT_CSV;
		return 0;
	case GT_OPT_JSON:
		o->fmt = GT_FMT_JSON;
		return 0;
	}
	return -EINVAL;
}

/* Options that do not go together, after all were read. */
static int gt_check_opts(const struct gt_opts *o, int iters_set)
{
	const char *why = NULL;

	if (o->duration_s && iters_set)
		why = "-D/--duration and -n/--iters exclude each other";
	else if (o->duration_s && o->all)
		why = "-D/--duration runs one size, not -a/--all (as perftest)";
	else if (!o->duration_s && (uint64_t)o->iters * o->nqps > GT_MAX_ITERS)
		why = "-n/--iters is per QP (as perftest): -n x -q is more than "
		      "100000000 iterations";
	else if (o->output != GT_OUT_FULL && o->fmt != GT_FMT_TEXT)
		why = "--output prints one number: not with --csv or --json";
	else if (o->events && o->test == GT_LAT && o->mode == GT_MODE_WRITE)
		why = "-e/--events: RDMA WRITE latency polls memory, not the CQ (--mode send does)";
	if (why) {
		fprintf(stderr, "%s: %s\n", o->prog, why);
		return -EINVAL;
	}
	/* The client decides: it can tell now whether both sides fit. */
	return o->node && o->test == GT_BW ? gt_check_fit(o) : 0;
}

/* 0 to run, 1 after -h (exit 0), -EINVAL on a bad command line (exit 2). */
int gt_parse_opts(struct gt_opts *o, enum gt_test test, int argc, char **argv)
{
	int c, iters_set = 0;

	memset(o, 0, sizeof(*o));
	o->test = test;
	o->prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	o->service = test == GT_BW ? "vrdma-bw" : "vrdma-lat";
	o->size = 65536;
	o->iters = 1000;
	o->warmup = -1;
	o->mode = GT_MODE_WRITE;
	o->tx_depth = test == GT_BW ? 64 : 1;
	o->timeout_s = 30;
	o->nqps = 1;
	o->fmt = GT_FMT_TEXT;
	o->output = GT_OUT_FULL;

	opterr = 0;
	while ((c = getopt_long(argc, argv, GT_SHORT, gt_lopts, NULL)) != -1) {
		char name[48];

		switch (c) {
		case 'h':
			gt_usage(stdout, o);
			return 1;
		case 'V':
			printf("%s (vrdma) %s\n", o->prog, VRDMA_VERSION);
			return 1;
		case ':':
			gt_optname(optopt, name, sizeof(name));
			fprintf(stderr, "%s: %s needs a value (%s --help)\n", o->prog, name, o->prog);
			return -EINVAL;
		case '?':
			if (optopt)
				fprintf(stderr, "%s: unknown option '-%c' (%s --help)\n",
					o->prog, optopt, o->prog);
			else
				fprintf(stderr, "%s: unknown option '%s' (%s --help)\n",
					o->prog, argv[optind - 1], o->prog);
			return -EINVAL;
		default:
			if (gt_opt(o, c, optarg, &iters_set))
				return -EINVAL;
		}
	}
	if (optind < argc - 1) {
		fprintf(stderr, "%s: one NODE at most, not also '%s'\n", o->prog, argv[optind + 1]);
		return -EINVAL;
	}
	if (optind == argc - 1) {
		const char *n = argv[optind];

		if (strlen(n) > VRDMA_MAX_NAME) {
			fprintf(stderr, "%s: bad NODE '%s': longer than %d characters\n",
				o->prog, n, VRDMA_MAX_NAME);
			return -EINVAL;
		}
		o->node = (!strcmp(n, "local") || !strcmp(n, "localhost")) ? "" : n;
	}
	return gt_check_opts(o, iters_set);
}

/* Iterate the sizes to run: *size 0 starts; returns 0 when done. */
int gt_next_size(const struct gt_opts *o, size_t *size)
{
	if (!o->all) {
		if (*size)
			return 0;
		*size = o->size;
		return 1;
	}
	*size = *size ? *size * 2 : 2;
	return *size <= GT_MAX_SIZE;
}
