// SPDX-License-Identifier: MIT
/*
 * vrdmad control commands: one request line in, one response out.  A
 * response that starts with "error:" is a failure (vrdmactl exits 1).
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../backend/backend.h"
#include "vplat.h"
#include "vrdmad.h"

#define VD_CMD_MAX_ARGS	12

struct vd_cmd {
	const char *name;
	void (*fn)(struct vd_daemon *d, int argc, char **argv, FILE *out);
};

/* Open fds of this process, for leak checks; -1 if /proc is unreadable. */
static int vd_cmd_count_fds(void)
{
	struct dirent *de;
	int n = 0;
	DIR *dir;

	dir = opendir("/proc/self/fd");
	if (!dir)
		return -1;
	while ((de = readdir(dir)))
		if (de->d_name[0] != '.')
			n++;
	closedir(dir);
	return n - 1;		/* not the directory's own fd */
}

static void vd_cmd_ping(struct vd_daemon *d, int argc, char **argv, FILE *out)
{
	(void)d;
	(void)argc;
	(void)argv;
	fputs("pong\n", out);
}

static void vd_cmd_list(struct vd_daemon *d, int argc, char **argv, FILE *out)
{
	int json = 0, i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-j") && strcmp(argv[i], "--json")) {
			fprintf(out, "error: list: unknown option '%s' (try: list [-j])\n",
				argv[i]);
			return;
		}
		json = 1;
	}
	vbe_node_dump(d->node, out, json);
}

static void vd_cmd_census(struct vd_daemon *d, int argc, char **argv, FILE *out)
{
	struct vbe_census c = { 0 };

	(void)argc;
	(void)argv;
	vbe_node_census(d->node, &c);
	fprintf(out, "{\"guests\":%u,\"maps\":%u,\"chans\":%u,\"qps\":%u,\"mrs\":%u,"
		"\"cqs\":%u,\"pds\":%u,\"bufs\":%u,\"listeners\":%u,\"credits\":%u,"
		"\"dev_bytes\":%llu,\"fds\":%d}\n",
		c.guests, c.maps, c.chans, c.qps, c.mrs, c.cqs, c.pds, c.bufs,
		c.listeners, c.credits, c.dev_bytes, vd_cmd_count_fds());
}

/* "<domid> [devid]": plain decimal numbers, devid 0 by default. */
static int vd_cmd_dev_args(int argc, char **argv, uint32_t *domid, uint32_t *devid,
			   FILE *out)
{
	unsigned long v[2] = { 0, 0 };
	char *end;
	int i;

	if (argc < 2 || argc > 3) {
		fprintf(out, "error: usage: %s <domid> [devid]\n", argv[0]);
		return -1;
	}
	for (i = 1; i < argc; i++) {
		errno = 0;
		v[i - 1] = strtoul(argv[i], &end, 10);
		if (argv[i][0] < '0' || argv[i][0] > '9' || *end || errno ||
		    v[i - 1] > UINT16_MAX) {
			fprintf(out, "error: %s: bad number '%.32s'\n", argv[0], argv[i]);
			return -1;
		}
	}
	*domid = (uint32_t)v[0];
	*devid = (uint32_t)v[1];
	return 0;
}

/* Toolstack duty: the guest's device nodes; the backend follows its watch. */
static void vd_cmd_attach(struct vd_daemon *d, int argc, char **argv, FILE *out)
{
	uint32_t domid, devid;
	int err;

	if (vd_cmd_dev_args(argc, argv, &domid, &devid, out))
		return;
	if (vbe_node_attach_ok(d->node, domid, devid, out))
		return;
	err = vplat_dev_attach(d->plat, "vrdma", domid, devid);
	if (err)
		fprintf(out, "error: attach %u/%u: %s\n", domid, devid, strerror(-err));
	else
		fprintf(out, "attached domain %u device %u\n", domid, devid);
}

static void vd_cmd_detach(struct vd_daemon *d, int argc, char **argv, FILE *out)
{
	uint32_t domid, devid;
	int err;

	if (vd_cmd_dev_args(argc, argv, &domid, &devid, out))
		return;
	err = vplat_dev_detach(d->plat, "vrdma", domid, devid);
	if (err)
		fprintf(out, "error: detach %u/%u: %s\n", domid, devid, strerror(-err));
	else
		fprintf(out, "detached domain %u device %u\n", domid, devid);
}

/* Issue 5: set <vm> key=value...; get <vm>; stats [-j] (`top` polls stats). */
static void vd_cmd_set(struct vd_daemon *d, int argc, char **argv, FILE *out)
{
	if (argc < 3) {
		fputs("error: usage: set <vm> weight=N class=high|normal|low "
		      "rate=BYTES/s[,burst] qps=N mem=BYTES [wrs=N] [credits=N]\n", out);
		return;
	}
	vbe_node_prio_set(d->node, argv[1], argc - 2, argv + 2, out);
}

static void vd_cmd_get(struct vd_daemon *d, int argc, char **argv, FILE *out)
{
	if (argc != 2) {
		fputs("error: usage: get <vm>\n", out);
		return;
	}
	vbe_node_prio_get(d->node, argv[1], out);
}

static void vd_cmd_stats(struct vd_daemon *d, int argc, char **argv, FILE *out)
{
	int json = 0, i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-j") && strcmp(argv[i], "--json")) {
			fprintf(out, "error: stats: unknown option '%s' (try: stats [-j])\n",
				argv[i]);
			return;
		}
		json = 1;
	}
	vbe_node_stats(d->node, out, json);
}

/* Issue 12: policy [show | check FROM TO | change...] (docs/tenants.md). */
static void vd_cmd_policy(struct vd_daemon *d, int argc, char **argv, FILE *out)
{
	vbe_node_policy(d->node, argc - 1, argv + 1, out);
}

static const struct vd_cmd vd_cmds[] = {
	{ "set", vd_cmd_set },
	{ "get", vd_cmd_get },
	{ "stats", vd_cmd_stats },
	{ "list", vd_cmd_list },
	{ "census", vd_cmd_census },
	{ "ping", vd_cmd_ping },
	{ "attach", vd_cmd_attach },
	{ "detach", vd_cmd_detach },
	{ "policy", vd_cmd_policy },
};

void vd_cmd_handle(void *arg, const char *line, FILE *out)
{
	char buf[256], *argv[VD_CMD_MAX_ARGS], *save = NULL, *tok;
	struct vd_daemon *d = arg;
	int argc = 0;
	size_t i;

	snprintf(buf, sizeof(buf), "%s", line);
	for (tok = strtok_r(buf, " \t", &save); tok && argc < VD_CMD_MAX_ARGS;
	     tok = strtok_r(NULL, " \t", &save))
		argv[argc++] = tok;
	if (tok) {
		fprintf(out, "error: more than %d words in one request\n", VD_CMD_MAX_ARGS);
		return;
	}
	if (argc == 0) {
		fputs("error: empty request (try: list, census, ping)\n", out);
		return;
	}
	for (i = 0; i < sizeof(vd_cmds) / sizeof(vd_cmds[0]); i++) {
		if (strcmp(argv[0], vd_cmds[i].name))
			continue;
		if (!d->node) {
			fputs("error: backend not ready\n", out);
			return;
		}
		vd_cmds[i].fn(d, argc, argv, out);
		return;
	}
	fprintf(out, "error: unknown command '%.64s' (try: list, census, ping)\n", argv[0]);
}
