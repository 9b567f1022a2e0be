// SPDX-License-Identifier: MIT
/*
 * vrdmad control commands: one request line in, one response out, text
 * or (after -j) JSON, written once through vout.h.  A response that
 * starts with "error:" is a failure (vrdmactl exits 1).
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../backend/backend.h"
#include "../backend/vout.h"
#include "attach.h"
#include "log.h"
#include "vplat.h"
#include "vrdmad.h"

#define VD_CMD_MAX_ARGS	12	/* a command's words, "-j" aside */

struct vd_cmd {
	const char *name;
	int (*fn)(struct vd_daemon *d, int argc, char **argv, struct vout *o);
	bool words;		/* takes names: "-j" only first (a tenant may be "-j") */
};

static bool vd_cmd_is_json(const char *w)
{
	return !strcmp(w, "-j") || !strcmp(w, "--json");
}

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

static int vd_cmd_no_args(int argc, char **argv, struct vout *o)
{
	if (argc > 1)
		return vout_err(o, -EINVAL, "%s: unexpected '%.32s' (try: [-j] %s)", argv[0],
				argv[1], argv[0]);
	return 0;
}

static int vd_cmd_ping(struct vd_daemon *d, int argc, char **argv, struct vout *o)
{
	if (vd_cmd_no_args(argc, argv, o))
		return -EINVAL;
	vout_bool(o, "pong", true, "pong\n");
	vout_jstr(o, "node", d->node_name);
	vout_ji64(o, "pid", getpid());
	return 0;
}

static int vd_cmd_list(struct vd_daemon *d, int argc, char **argv, struct vout *o)
{
	if (vd_cmd_no_args(argc, argv, o))
		return -EINVAL;
	vbe_node_dump(d->node, o);
	return 0;
}

/* JSON keys are what leak checks in the rigs read: keep them. */
static int vd_cmd_census(struct vd_daemon *d, int argc, char **argv, struct vout *o)
{
	struct vbe_census c = { 0 };

	if (vd_cmd_no_args(argc, argv, o))
		return -EINVAL;
	vbe_node_census(d->node, &c);
	vout_u64(o, "guests", c.guests, "guests=%u", c.guests);
	vout_u64(o, "maps", c.maps, " maps=%u", c.maps);
	vout_u64(o, "chans", c.chans, " chans=%u", c.chans);
	vout_u64(o, "qps", c.qps, " qps=%u", c.qps);
	vout_u64(o, "mrs", c.mrs, " mrs=%u", c.mrs);
	vout_u64(o, "cqs", c.cqs, " cqs=%u", c.cqs);
	vout_u64(o, "pds", c.pds, " pds=%u", c.pds);
	vout_u64(o, "bufs", c.bufs, " bufs=%u", c.bufs);
	vout_u64(o, "listeners", c.listeners, " listeners=%u", c.listeners);
	vout_u64(o, "credits", c.credits, " credits=%u", c.credits);
	vout_u64(o, "dev_bytes", c.dev_bytes, " dev_bytes=%llu", c.dev_bytes);
	vout_i64(o, "fds", vd_cmd_count_fds(), " fds=%d\n", vd_cmd_count_fds());
	return 0;
}

/* "<domid> [devid]": plain decimal numbers, devid 0 by default. */
static int vd_cmd_dev_args(int argc, char **argv, uint32_t *domid, uint32_t *devid,
			   struct vout *o)
{
	unsigned long v[2] = { 0, 0 };
	char *end;
	int i;

	if (argc < 2 || argc > 3)
		return vout_err(o, -EINVAL, "usage: %s <domid> [devid]", argv[0]);
	for (i = 1; i < argc; i++) {
		errno = 0;
		v[i - 1] = strtoul(argv[i], &end, 10);
		if (argv[i][0] < '0' || argv[i][0] > '9' || *end || errno ||
		    v[i - 1] > UINT16_MAX)
			return vout_err(o, -EINVAL, "%s: bad number '%.32s'", argv[0], argv[i]);
	}
	*domid = (uint32_t)v[0];
	*devid = (uint32_t)v[1];
	return 0;
}

/*
 * Toolstack duty: the guest's device nodes; the backend follows its watch.
 * `vrdmactl attach` and the attach policy (attach.c) both come here.
 */
static int vd_attach_dev(void *arg, uint32_t domid, uint32_t devid, struct vout *o)
{
	struct vd_daemon *d = arg;
	int err;

	err = vbe_node_attach_ok(d->node, domid, devid, o);
	if (err)
		return err;
	err = vplat_dev_attach(d->plat, "vrdma", domid, devid);
	if (err == -ESRCH)
		return vout_err(o, err, "attach %u/%u: no domain %u", domid, devid, domid);
	if (err == -EAGAIN)
		return vout_err(o, err, "attach %u/%u: xenstore busy (other writers kept "
				"conflicting), try again", domid, devid);
	if (err)
		return vout_err(o, err, "attach %u/%u: %s", domid, devid, strerror(-err));
	return 0;
}

static bool vd_detached(void *arg, const char *name)
{
	struct vd_daemon *d = arg;

	return vbe_node_detached(d->node, name);
}

const struct vd_attach_ops vd_attach_ops = {
	.attach = vd_attach_dev,
	.detached = vd_detached,
};

/* Domain domid's VM name into buf, "" when it has none. */
static void vd_cmd_vm(struct vd_daemon *d, uint32_t domid, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/local/domain/%u/name", domid);
	if (vplat_key_read(d->plat, path, buf, len) < 0)
		buf[0] = '\0';
}

/*
 * Device 0 is the one the attach policy makes: attaching it by hand
 * undoes the operator's kept detach of the VM, first on disk (a change
 * that cannot be kept is refused, as `set`'s), then in xenstore; a
 * failed attach puts the detach back.
 */
static int vd_cmd_attach(struct vd_daemon *d, int argc, char **argv, struct vout *o)
{
	char vm[VPLAT_VAL_MAX] = "";
	uint32_t domid, devid;
	bool undo = false;
	int err;

	err = vd_cmd_dev_args(argc, argv, &domid, &devid, o);
	if (err)
		return err;
	if (devid == 0)
		vd_cmd_vm(d, domid, vm, sizeof(vm));
	if (vm[0] && vbe_node_detached(d->node, vm)) {
		err = vbe_node_detached_set(d->node, vm, false);
		if (err)
			return vout_err(o, err, "attach %u/0: cannot store that VM '%s' is no "
					"longer detached: %s", domid, vm, strerror(-err));
		undo = true;
	}
	err = vd_attach_dev(d, domid, devid, o);
	if (err) {
		if (undo && vbe_node_detached_set(d->node, vm, true))
			vlog_warn("attach %u/0 failed and VM '%s' is no longer kept detached",
				  domid, vm);
		return err;
	}
	if (devid == 0)
		vd_auto_note(d->autoattach, domid, true);
	vout_text(o, "attached domain %u device %u\n", domid, devid);
	vout_jbool(o, "attached", true);
	vout_ju64(o, "domid", domid);
	vout_ju64(o, "devid", devid);
	return 0;
}

/*
 * A detach of device 0 is kept by VM name (vd_cmd_attach's converse):
 * the policy does not attach the VM again, nor after a restart.  On disk
 * before the device goes: a crash in between leaves the VM kept detached
 * with its device still there, the safe side (nothing attaches it again,
 * a second detach removes it).  A domain with no device 0 yet (the policy
 * waits for its marker or name) is recorded all the same, so the operator
 * can stop a VM before the policy attaches it.  A detach that cannot be
 * kept (no name the file holds, no state dir, the table full) still
 * happens and the answer says why; a failing disk refuses it, as `set`.
 */
static int vd_cmd_detach(struct vd_daemon *d, int argc, char **argv, struct vout *o)
{
	char vm[VPLAT_VAL_MAX] = "";
	const char *why = NULL;	/* not kept across a restart of vrdmad */
	uint32_t domid, devid;
	bool undo = false, nodev = false;
	int err;

	err = vd_cmd_dev_args(argc, argv, &domid, &devid, o);
	if (err)
		return err;
	if (devid == 0) {
		vd_cmd_vm(d, domid, vm, sizeof(vm));
		if (!vm[0])
			why = "the domain has no name";
	}
	if (vm[0] && !vbe_node_detached(d->node, vm)) {
		err = vbe_node_detached_set(d->node, vm, true);
		if (err == -EINVAL)
			why = "its VM name is not one the settings file holds (blank, not "
			      "printable ASCII, or 64 bytes or more)";
		else if (err == -ENOSPC)
			why = "256 VMs are kept detached already (vrdmactl attach-policy "
			      "forget VM makes room)";
		else if (err)
			return vout_err(o, err, "detach %u/0: cannot store that VM '%s' is "
					"detached: %s", domid, vm, strerror(-err));
		undo = !err;
	}
	if (!why && vm[0] && !vbe_node_keeps_state(d->node))
		why = "vrdmad keeps no settings file (--state-dir none)";
	err = vplat_dev_detach(d->plat, "vrdma", domid, devid);
	if (err == -ENOENT && devid == 0 && vm[0]) {
		nodev = true;	/* a domain (it has a name) not given device 0 yet */
		err = 0;
	}
	if (err) {
		if (undo && vbe_node_detached_set(d->node, vm, false))
			vlog_warn("detach %u/0 failed and VM '%s' stays kept detached", domid, vm);
		return vout_err(o, err, "detach %u/%u: %s", domid, devid, strerror(-err));
	}
	if (devid == 0) {
		vd_auto_note(d->autoattach, domid, false);
		if (why)
			vlog_warn("detach %u/0: not kept across a restart of vrdmad: %s", domid,
				  why);
	}
	if (nodev)
		vout_text(o, "domain %u has no device 0: VM '%s' recorded as detached, the "
			  "attach policy will not attach it\n", domid, vm);
	else
		vout_text(o, "detached domain %u device %u\n", domid, devid);
	if (why)
		vout_text(o, "warning: this detach is not kept across a restart of vrdmad: "
			  "%s\n", why);
	vout_jbool(o, "detached", true);
	vout_ju64(o, "domid", domid);
	vout_ju64(o, "devid", devid);
	if (devid == 0) {
		vout_jbool(o, "device", !nodev);
		vout_jbool(o, "kept", !why);
		if (why)
			vout_jstr(o, "not_kept", why);
	}
	return 0;
}

/* Issue 13: the attach policy and what it decided for each domain;
 * `forget VM` drops a VM kept detached without a domain of it running
 * (a VM deleted for good: the table holds 256). */
static int vd_cmd_attach_policy(struct vd_daemon *d, int argc, char **argv, struct vout *o)
{
	int err;

	if (argc == 3 && !strcmp(argv[1], "forget")) {
		if (!vbe_node_detached(d->node, argv[2]))
			return vout_err(o, -ENOENT, "attach-policy forget: VM '%.64s' is not "
					"kept detached", argv[2]);
		err = vbe_node_detached_set(d->node, argv[2], false);
		if (err)
			return vout_err(o, err, "attach-policy forget: cannot store that VM "
					"'%s' is no longer detached: %s", argv[2], strerror(-err));
		vlog_info("VM '%s' no longer kept detached (attach-policy forget)", argv[2]);
		vout_text(o, "VM '%s' is no longer kept detached: the attach policy decides "
			  "it when a domain of it appears\n", argv[2]);
		vout_jstr(o, "forgot", argv[2]);
		return 0;
	}
	if (argc > 1)
		return vout_err(o, -EINVAL, "attach-policy: unexpected '%.32s' (try: [-j] "
				"attach-policy [forget VM])", argv[1]);
	vd_auto_show(d->autoattach, o);
	vbe_node_detached_show(d->node, o);
	return 0;
}

/* Issue 5: set <vm> key=value...; get <vm>; stats [-s key] (`top` polls stats). */
static int vd_cmd_set(struct vd_daemon *d, int argc, char **argv, struct vout *o)
{
	if (argc < 3)
		return vout_err(o, -EINVAL, "usage: set <vm> weight=N class=high|normal|low "
				"rate=BYTES/s[,burst] qps=N mem=BYTES [wrs=N] [credits=N] [cmds=N] "
				"[coll=on|off]");
	return vbe_node_prio_set(d->node, argv[1], argc - 2, argv + 2, o);
}

static int vd_cmd_get(struct vd_daemon *d, int argc, char **argv, struct vout *o)
{
	if (argc != 2)
		return vout_err(o, -EINVAL, "usage: get <vm>|tenant:<name>|tenants");
	return vbe_node_prio_get(d->node, argv[1], o);
}

static int vd_cmd_stats(struct vd_daemon *d, int argc, char **argv, struct vout *o)
{
	const char *sort = NULL;
	int i;

	for (i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "-s") || !strcmp(argv[i], "--sort")) && i + 1 < argc)
			sort = argv[++i];
		else
			return vout_err(o, -EINVAL, "stats: unexpected '%.32s' (try: stats "
					"[-j] [-s key])", argv[i]);
	}
	return vbe_node_stats(d->node, o, sort);
}

/* Issue 12: policy [show | check FROM TO | change...] (docs/tenants.md). */
static int vd_cmd_policy(struct vd_daemon *d, int argc, char **argv, struct vout *o)
{
	return vbe_node_policy(d->node, argc - 1, argv + 1, o);
}

/* teams: the teams dom0 runs or was asked to (backend/coll/). */
static int vd_cmd_teams(struct vd_daemon *d, int argc, char **argv, struct vout *o)
{
	if (argc > 1)
		return vout_err(o, -EINVAL, "teams: unexpected '%.32s' (try: teams [-j])", argv[1]);
	return vbe_node_teams(d->node, o);
}

/* trace [lat N | dump | off]: the data path's per-hop latency trace. */
static int vd_cmd_trace(struct vd_daemon *d, int argc, char **argv, struct vout *o)
{
	return vbe_node_trace(d->node, argc - 1, argv + 1, o);
}

static const struct vd_cmd vd_cmds[] = {
	{ "set", vd_cmd_set, true },
	{ "get", vd_cmd_get, true },
	{ "stats", vd_cmd_stats, false },
	{ "list", vd_cmd_list, false },
	{ "census", vd_cmd_census, false },
	{ "ping", vd_cmd_ping, false },
	{ "attach", vd_cmd_attach, false },
	{ "detach", vd_cmd_detach, false },
	{ "attach-policy", vd_cmd_attach_policy, false },
	{ "policy", vd_cmd_policy, true },
	{ "trace", vd_cmd_trace, false },
	{ "teams", vd_cmd_teams, false },
};

/*
 * "[-j] command words...": -j answers in JSON (vrdmactl puts it first);
 * commands that take no names also take it among their words ("list -j").
 */
void vd_cmd_handle(void *arg, const char *line, FILE *out)
{
	char buf[256], *argv[VD_CMD_MAX_ARGS], *save = NULL, *tok;
	const struct vd_cmd *c = NULL;
	struct vd_daemon *d = arg;
	int argc = 0, i, j;
	bool json = false;
	struct vout o;
	size_t k;

	snprintf(buf, sizeof(buf), "%s", line);
	tok = strtok_r(buf, " \t", &save);
	if (tok && vd_cmd_is_json(tok)) {
		json = true;
		tok = strtok_r(NULL, " \t", &save);
	}
	for (; tok && argc < VD_CMD_MAX_ARGS; tok = strtok_r(NULL, " \t", &save))
		argv[argc++] = tok;
	if (tok) {
		fprintf(out, "error: more than %d words in one request\n", VD_CMD_MAX_ARGS);
		return;
	}
	if (argc == 0) {
		fputs("error: empty request (try: list, census, ping)\n", out);
		return;
	}
	for (k = 0; k < sizeof(vd_cmds) / sizeof(vd_cmds[0]) && !c; k++)
		if (!strcmp(argv[0], vd_cmds[k].name))
			c = &vd_cmds[k];
	if (!c) {
		fprintf(out, "error: unknown command '%.64s' (try: list, census, ping)\n",
			argv[0]);
		return;
	}
	for (i = j = 1; i < argc; i++) {
		if (!c->words && vd_cmd_is_json(argv[i]))
			json = true;
		else
			argv[j++] = argv[i];
	}
	argc = j;
	if (!d->node) {
		fputs("error: backend not ready\n", out);
		return;
	}
	if (vout_init(&o, json)) {
		fputs("error: out of memory\n", out);
		return;
	}
	c->fn(d, argc, argv, &o);
	vout_finish(&o, out);
}
