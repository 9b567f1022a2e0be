// SPDX-License-Identifier: MIT
/* Command line of vrdma-bw and vrdma-lat (perftest-like options). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_common.h"
#include "version.h"

/* long-only options: codes beyond any character */
enum { GT_OPT_VERIFY = 256, GT_OPT_CSV, GT_OPT_JSON };

static void gt_usage(FILE *f, const struct gt_opts *o)
{
	int bw = o->test == GT_BW;

	fprintf(f,
		"Usage: %s [options]          server: wait for one client\n"
		"       %s [options] NODE     client: NODE is the server's node name,\n"
		"                                   \"\", local or localhost for this node\n"
		"Options:\n"
		"  -p, --service NAME    service to listen on / connect to (default %s)\n"
		"  -s, --size BYTES      message size, K/M suffix ok (default 65536, max 8M)\n"
		"  -a, --all             sweep sizes 2 B .. 8 MiB, powers of two\n"
		"  -n, --iters N         iterations per size (default 1000)\n"
		"  -w, --warmup N        untimed iterations first (default %s)\n"
		"  -m, --mode MODE       %s (default write)\n"
		"%s"
		"      --verify          fill a per-iteration pattern; the receiver checks every byte\n"
		"  -T, --timeout SEC     limit for every wait (default 30)\n"
		"      --csv, --json     machine-readable output\n"
		"  -D, --device SPEC     device spec for vrdma_open (host, xen; default auto)\n"
		"  -V, --version         print the version\n"
		"  -h, --help            this text\n"
		"Client parameters rule: the server follows what the client asks for.\n"
		"Exit: 0 success, 1 failed completion / timeout / verify, 2 bad options.\n",
		o->prog, o->prog, bw ? "vrdma-bw" : "vrdma-lat",
		bw ? "2 x tx-depth" : "100",
		bw ? "write | read | send" : "write | send",
		bw ? "  -t, --tx-depth N      outstanding work requests (default 64)\n" : "");
}

static int gt_parse_size(const char *s, size_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (*end || v == 0 || v > GT_MAX_SIZE)
		return -EINVAL;
	*out = (size_t)v;
	return 0;
}

static int gt_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* 0 to run, 1 after -h or -V (exit 0), -EINVAL on a bad command line (exit 2). */
int gt_parse_opts(struct gt_opts *o, enum gt_test test, int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "service", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "mode", required_argument, NULL, 'm' },
		{ "tx-depth", required_argument, NULL, 't' },
		{ "verify", no_argument, NULL, GT_OPT_VERIFY },
		{ "timeout", required_argument, NULL, 'T' },
		{ "csv", no_argument, NULL, GT_OPT_CSV },
		{ "json", no_argument, NULL, GT_OPT_JSON },
		{ "device", required_argument, NULL, 'D' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	uint32_t v;
	int c;

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
	o->fmt = GT_FMT_TEXT;

	while ((c = getopt_long(argc, argv, "p:s:an:w:m:t:T:D:Vh", lopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!*optarg || strlen(optarg) > VRDMA_MAX_NAME)
				goto bad;
			o->service = optarg;
			break;
		case 's':
			if (gt_parse_size(optarg, &o->size))
				goto bad;
			break;
		case 'a':
			o->all = 1;
			break;
		case 'n':
			if (gt_parse_u32(optarg, 1, 100000000, &o->iters))
				goto bad;
			break;
		case 'w':
			if (gt_parse_u32(optarg, 0, 1000000, &v))
				goto bad;
			o->warmup = v;
			break;
		case 'm':
			if (!strcmp(optarg, "write"))
				o->mode = GT_MODE_WRITE;
			else if (!strcmp(optarg, "send"))
				o->mode = GT_MODE_SEND;
			else if (!strcmp(optarg, "read") && test == GT_BW)
				o->mode = GT_MODE_READ;
			else
				goto bad;
			break;
		case 't':
			if (test != GT_BW || gt_parse_u32(optarg, 1, 1024, &o->tx_depth))
				goto bad;
			break;
		case GT_OPT_VERIFY:
			o->verify = 1;
			break;
		case 'T':
			if (gt_parse_u32(optarg, 1, 3600, &v))
				goto bad;
			o->timeout_s = (int)v;
			break;
		case GT_OPT_CSV:
			o->fmt = GT_FMT_CSV;
			break;
		case GT_OPT_JSON:
			o->fmt = GT_FMT_JSON;
			break;
		case 'D':
			o->dev_spec = optarg;
			break;
		case 'V':
			printf("%s (vrdma) %s\n", o->prog, VRDMA_VERSION);
			return 1;
		case 'h':
			gt_usage(stdout, o);
			return 1;
		default:
			goto bad;
		}
	}
	if (optind < argc - 1)
		goto bad;
	if (optind == argc - 1) {
		const char *n = argv[optind];

		if (strlen(n) > VRDMA_MAX_NAME)
			goto bad;
		o->node = (!strcmp(n, "local") || !strcmp(n, "localhost")) ? "" : n;
	}
	return 0;
bad:
	gt_usage(stderr, o);
	return -EINVAL;
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
