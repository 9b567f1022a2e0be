// SPDX-License-Identifier: MIT
/*
 * The node's settings on disk (issue 13): every VM's settings by VM name
 * and device (the keep table of prio_keep.c) and every tenant's limits
 * (the keys below VPLAT_TENANT_ROOT), in one file, STATE_DIR/settings,
 * so a restarted vrdmad -- or one on a rebooted host -- applies them
 * again.  Written whole (filesave.c: a temporary beside it, fsync,
 * rename, fsync of the directory, as the policy file): at a `vrdmactl
 * set`, before it answers; for changes no one waits for (guests
 * leaving), at most once per tick.  Loaded once, at start.
 *
 * One line per VM device, tenant or detached VM, words split by blanks:
 *
 *     version 3                         first and once, when a line below needs it
 *     vm NAME DEVID key=value...        keys of vbe_prio_keys, defaults left out
 *                                       (coll=off: v3)
 *     tenant NAME key=value...          keys of vbe_tenant_keys
 *     detached NAME                     `vrdmactl detach` of its device 0 (v2)
 *
 * No version line is version 1 (vm and tenant lines), which is what is
 * written while no VM is detached or has coll=off, so any vrdmad reads
 * such a file; 1.0 reads up to version 2.  A version above
 * VBE_STORE_VERSION (or too big a number) is refused, naming it: an
 * older vrdmad stops on a newer file rather than drop what it cannot
 * hold.  The lowest version that holds the lines is written.
 * VM names are what vbe_keep_name accepts (printable ASCII, no blank,
 * under VBE_VM_NAME) and tenant names what vbe_tenant_name_ok accepts, so
 * no word needs quoting; a file with anything else is refused whole, with
 * file:line, as a bad policy file is.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "log.h"
#include "../vbe.h"

#define VBE_STORE_WORDS	(2 + 16)
#define VBE_STORE_VERSION	3	/* the highest this vrdmad reads */

bool vbe_keep_name_ok(const char *s)
{
	size_t i, len = strnlen(s, VBE_VM_NAME);

	if (!len || len >= VBE_VM_NAME)
		return false;
	for (i = 0; i < len; i++)	/* printed by get/logs, one word in the file */
		if (s[i] < 0x21 || s[i] > 0x7e)
			return false;
	return true;
}

/* ---- save ---- */

static void vbe_store_vms(const struct vbe_node *n, FILE *f)
{
	const struct vbe_keep *k;
	struct vbe_prio def;
	char v[64], d[64];
	unsigned i, j;

	vbe_prio_defaults(&def);
	for (i = 0; i < VBE_KEEP_MAX; i++) {
		k = &n->keep[i];
		if (!k->vm[0])
			continue;
		fprintf(f, "vm %s %u", k->vm, k->devid);
		for (j = 0; vbe_prio_keys[j]; j++) {
			vbe_prio_format(&k->prio, vbe_prio_keys[j], v, sizeof(v));
			vbe_prio_format(&def, vbe_prio_keys[j], d, sizeof(d));
			if (strcmp(v, d))
				fprintf(f, " %s=%s", vbe_prio_keys[j], v);
		}
		fputc('\n', f);
	}
}

/* Each tenant's own keys, as the key store holds them now; -errno if the
 * store cannot list them (then nothing is written: a file without them
 * would lose them at the next start). */
#define VBE_STORE_LIST	(64u << 10)	/* 2000 tenants of 32 bytes */

static int vbe_store_tenants(const struct vbe_node *n, FILE *f)
{
	char keys[1024], path[VPLAT_KEY_MAX], val[64], *names;
	const char *t, *k;
	unsigned count, q;
	uint64_t v;
	bool any;
	int err;

	names = malloc(VBE_STORE_LIST);
	if (!names)
		return -ENOMEM;
	err = vplat_key_list(n->plat, VPLAT_TENANT_ROOT, names, VBE_STORE_LIST, &count);
	if (err) {
		free(names);
		return err == -ENOENT ? 0 : err;
	}
	for (t = names; *t; t += strlen(t) + 1) {
		snprintf(path, sizeof(path), VPLAT_TENANT_ROOT "/%.32s", t);
		if (!vbe_tenant_name_ok(t))
			continue;
		err = vplat_key_list(n->plat, path, keys, sizeof(keys), &count);
		if (err == -ENOENT) {	/* removed meanwhile: nothing of it to keep */
			err = 0;
			continue;
		}
		if (err)
			break;
		any = false;
		for (k = keys; *k; k += strlen(k) + 1) {
			for (q = 0; q < VBE_TQ_N && strcmp(k, vbe_tenant_keys[q]); q++)
				;
			snprintf(path, sizeof(path), VPLAT_TENANT_ROOT "/%.32s/%.32s", t, k);
			if (q == VBE_TQ_N || vplat_key_read(n->plat, path, val, sizeof(val)))
				continue;
			/* A value the node ignores (an operator's xenstore-write)
			 * is not written: the loader would refuse the file. */
			if (vbe_tenant_parse(q, val, &v)) {
				vlog_warn("settings: %s is '%.32s': not kept", path, val);
				continue;
			}
			if (!any)
				fprintf(f, "tenant %s", t);
			any = true;
			fprintf(f, " %s=%llu", k, (unsigned long long)v);
		}
		if (any)
			fputc('\n', f);
	}
	free(names);
	return err;
}

static void vbe_store_detached(const struct vbe_node *n, FILE *f)
{
	unsigned i;

	for (i = 0; i < VBE_DETACHED_MAX; i++)
		if (n->detached[i][0])
			fprintf(f, "detached %s\n", n->detached[i]);
}

/* The lowest version whose lines hold n's settings. */
static unsigned vbe_store_need(const struct vbe_node *n)
{
	unsigned i;

	for (i = 0; i < VBE_KEEP_MAX; i++)
		if (n->keep[i].vm[0] && n->keep[i].prio.coll_off)
			return 3;
	for (i = 0; i < VBE_DETACHED_MAX; i++)
		if (n->detached[i][0])
			return 2;
	return 1;
}

static int vbe_store_fill(FILE *f, void *arg)
{
	struct vbe_node *n = arg;
	unsigned v = vbe_store_need(n);

	fputs("# vrdma settings: written by vrdmad (vrdmactl set), loaded at its start\n", f);
	if (v > 1)	/* else version 1: every vrdmad reads it */
		fprintf(f, "version %u\n", v);
	vbe_store_vms(n, f);
	vbe_store_detached(n, f);
	return vbe_store_tenants(n, f);
}

/* Write the whole file; 0 also when the node keeps no state (no dir). */
int vbe_store_save(struct vbe_node *n)
{
	char path[sizeof(n->state_dir) + 16];
	int err;

	if (!n->state_dir[0])
		return 0;
	snprintf(path, sizeof(path), "%s/" VBE_STORE_NAME, n->state_dir);
	err = vbe_file_replace(path, "settings", vbe_store_fill, n);
	if (err) {
		vlog_err("settings: cannot write %s: %s", path, strerror(-err));
		return err;
	}
	n->store_dirty = false;	/* the whole table went: pending changes too */
	n->store_writes++;
	return 0;
}

/*
 * A change nobody waits for (a guest leaving, an operator's key write):
 * the file is written at the next tick, once however many came, since
 * each write is an fsync of the file and of its directory.  `vrdmactl
 * set` calls vbe_store_save itself: its answer waits for the disk.
 */
void vbe_store_later(struct vbe_node *n)
{
	if (n->state_dir[0])
		n->store_dirty = true;
}

#define VBE_STORE_RETRY_MS	1000	/* a failing disk: one try (and log) a second */

void vbe_store_tick(struct vbe_node *n)
{
	if (!n->store_dirty || n->now_ms < n->store_retry_ms)
		return;
	if (vbe_store_save(n))
		n->store_retry_ms = n->now_ms + VBE_STORE_RETRY_MS;
}

/* ---- load ---- */

static int vbe_store_vm(struct vbe_node *n, int argc, char **argv, const char **why)
{
	struct vbe_prio p;
	unsigned long devid;
	const char *allowed;
	char *e, *eq;
	int i;

	if (argc < 3 || !vbe_keep_name_ok(argv[1])) {
		*why = "want: vm NAME DEVID key=value... (NAME printable, no blank, "
		       "under 64 bytes)";
		return -EINVAL;
	}
	errno = 0;
	devid = strtoul(argv[2], &e, 10);
	if (errno || e == argv[2] || *e || devid > UINT32_MAX) {
		*why = "bad device number";
		return -EINVAL;
	}
	vbe_prio_defaults(&p);
	for (i = 3; i < argc; i++) {
		eq = strchr(argv[i], '=');
		if (!eq) {
			*why = "a word that is not key=value";
			return -EINVAL;
		}
		*eq = '\0';
		if (vbe_prio_parse(argv[i], eq + 1, &p, &allowed)) {
			static char buf[256];	/* at start, one thread */

			snprintf(buf, sizeof(buf), "%.16s=%.32s: allowed: %s", argv[i], eq + 1,
				 allowed);
			*why = buf;
			return -EINVAL;
		}
	}
	if (vbe_keep_find(n, argv[1], (uint32_t)devid)) {
		*why = "that VM device is given twice";
		return -EINVAL;
	}
	vbe_keep_put(n, argv[1], (uint32_t)devid, &p);
	return 0;
}

/* A tenant's limits go into the key store unless it has them already:
 * on Xen xenstore outlives a restarted vrdmad, and an operator's
 * xenstore-write made since the last save is the newer value. */
static int vbe_store_tenant(struct vbe_node *n, int argc, char **argv, const char **why)
{
	char path[VPLAT_KEY_MAX], val[64];
	unsigned q;
	uint64_t x;
	char *eq;
	int i, err;

	if (argc < 2 || !vbe_tenant_name_ok(argv[1])) {
		*why = "want: tenant NAME key=value... (NAME: letters, digits, _-.@)";
		return -EINVAL;
	}
	for (i = 2; i < argc; i++) {
		eq = strchr(argv[i], '=');
		if (eq)
			*eq = '\0';
		for (q = 0; eq && q < VBE_TQ_N && strcmp(argv[i], vbe_tenant_keys[q]); q++)
			;
		if (!eq || q == VBE_TQ_N || vbe_tenant_parse(q, eq + 1, &x)) {
			*why = "bad tenant limit (guests listeners conns qps mem cqs mrs pages "
			       "cmds, each a number in range)";
			return -EINVAL;
		}
	}
	for (i = 2; i < argc; i++) {
		eq = argv[i] + strlen(argv[i]);	/* the '=' became a NUL */
		snprintf(path, sizeof(path), VPLAT_TENANT_ROOT "/%s/%s", argv[1], argv[i]);
		if (vplat_key_read(n->plat, path, val, sizeof(val)) == -ENOENT) {
			err = vplat_key_write(n->plat, path, eq + 1);
			if (err) {
				*why = "cannot write the key store";
				return err;
			}
		}
	}
	return 0;
}

/* Digits only (strtoul takes "-1" and " 2"); a number too big for us
 * is a version too new for us too. */
static int vbe_store_version(int argc, char **argv, const char **why)
{
	static char buf[128];	/* at start, one thread */
	unsigned long v;
	size_t len;

	len = argc == 2 ? strspn(argv[1], "0123456789") : 0;
	if (argc != 2 || !len || argv[1][len]) {
		*why = "want: version N";
		return -EINVAL;
	}
	errno = 0;
	v = strtoul(argv[1], NULL, 10);
	if (!errno && !v) {
		*why = "want: version N (N from 1)";
		return -EINVAL;
	}
	if (errno || v > VBE_STORE_VERSION) {
		snprintf(buf, sizeof(buf), "version %.24s%s: written by a newer vrdmad (this "
			 "one reads versions 1 to %d)", argv[1], len > 24 ? "..." : "",
			 VBE_STORE_VERSION);
		*why = buf;
		return -EPROTONOSUPPORT;
	}
	return 0;
}

static int vbe_store_detached_vm(struct vbe_node *n, int argc, char **argv,
				 const char **why)
{
	int r;

	if (argc != 2 || !vbe_keep_name_ok(argv[1])) {
		*why = "want: detached NAME (NAME printable, no blank, under 64 bytes)";
		return -EINVAL;
	}
	r = vbe_detached_put(n, argv[1], true);
	if (r == 0)
		*why = "that VM is given twice";
	else if (r < 0)
		*why = "more detached VMs than vrdmad keeps (256)";
	return r > 0 ? 0 : r ? r : -EINVAL;
}

/* bool *any: a line with words came before (the version line is first,
 * once, or absent). */
static int vbe_store_line(struct vbe_node *n, char *line, bool *any, const char **why)
{
	char *argv[VBE_STORE_WORDS], *save = NULL, *tok;
	bool first = !*any;
	int argc = 0;

	for (tok = strtok_r(line, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (argc == VBE_STORE_WORDS) {
			*why = "too many words";
			return -EINVAL;
		}
		argv[argc++] = tok;
	}
	if (!argc || argv[0][0] == '#')
		return 0;
	*any = true;
	if (!strcmp(argv[0], "version") && !first) {
		*why = "the version line comes first, once";
		return -EINVAL;
	}
	if (!strcmp(argv[0], "vm"))
		return vbe_store_vm(n, argc, argv, why);
	if (!strcmp(argv[0], "tenant"))
		return vbe_store_tenant(n, argc, argv, why);
	if (!strcmp(argv[0], "detached"))
		return vbe_store_detached_vm(n, argc, argv, why);
	if (!strcmp(argv[0], "version"))
		return vbe_store_version(argc, argv, why);
	*why = "a line starts with version, vm, tenant or detached";
	return -EINVAL;
}

/*
 * At start: remember dir (NULL or "": settings live in memory only) and
 * load its file.  A missing file is an empty one; a bad one is refused.
 */
int vbe_store_open(struct vbe_node *n, const char *dir)
{
	char path[sizeof(n->state_dir) + 16], line[2048];
	const char *why = NULL;
	unsigned lineno = 0, nvm = 0, ndet = 0, i;
	bool any = false;
	int err = 0;
	FILE *f;

	if (!dir || !*dir)
		return 0;
	if (strlen(dir) >= sizeof(n->state_dir))
		return -ENAMETOOLONG;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {	/* as the run dir */
		err = -errno;
		vlog_err("settings: cannot create %s: %s", dir, strerror(-err));
		return err;
	}
	strcpy(n->state_dir, dir);
	snprintf(path, sizeof(path), "%s/" VBE_STORE_NAME, dir);
	f = fopen(path, "re");
	if (!f) {
		if (errno != ENOENT) {
			err = -errno;
			vlog_err("settings: cannot read %s: %s", path, strerror(-err));
			return err;
		}
		vlog_info("settings: %s does not exist yet: none stored", path);
		return 0;
	}
	while (!err && fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			why = "line too long";
			err = -EINVAL;
			break;
		}
		err = vbe_store_line(n, line, &any, &why);
	}
	if (!err && ferror(f))
		err = -EIO;
	fclose(f);
	if (err) {
		vlog_err("settings: %s:%u: %s", path, lineno, why ? why : strerror(-err));
		return err;
	}
	for (i = 0; i < VBE_KEEP_MAX; i++)
		nvm += !!n->keep[i].vm[0];
	for (i = 0; i < VBE_DETACHED_MAX; i++)
		ndet += !!n->detached[i][0];
	vlog_info("settings: %s: %u VM devices, %u VMs detached", path, nvm, ndet);
	return 0;
}
