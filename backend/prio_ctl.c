// SPDX-License-Identifier: MIT
/*
 * `vrdmactl set` / `get` (issue 5): find the guest, check every value,
 * store them as keys in its backend directory (the watch applies them;
 * we apply at once too, so a `get` right after a `set` agrees).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "vbe.h"

/* "5", "5/1" or a guest name ("dom5/0"); vbe_prio_find also takes the
 * name of a VM (the domain's `name`) that has exactly one guest. */
struct vbe_guest *vbe_prio_guest(struct vbe_node *n, const char *vm)
{
	unsigned long dom, dev = 0;
	struct vbe_guest *g;
	char *e;

	if (*vm >= '0' && *vm <= '9') {
		errno = 0;
		dom = strtoul(vm, &e, 10);
		if (*e == '/' && e[1] >= '0' && e[1] <= '9')
			dev = strtoul(e + 1, &e, 10);
		if (!errno && !*e && dom <= UINT32_MAX && dev <= UINT32_MAX)
			return vbe_node_guest(n, (uint32_t)dom, (uint32_t)dev);
	}
	for (g = n->guests; g; g = g->next)
		if (!strcmp(g->name, vm))
			return g;
	return NULL;
}

/* The one guest of VM vm; *many = how many there are. */
static struct vbe_guest *vbe_prio_vm(struct vbe_node *n, const char *vm, unsigned *many)
{
	struct vbe_guest *g, *found = NULL;

	*many = 0;
	for (g = n->guests; g; g = g->next)
		if (g->vm[0] && !strcmp(g->vm, vm)) {
			found = g;
			(*many)++;
		}
	return *many == 1 ? found : NULL;
}

static struct vbe_guest *vbe_prio_find(struct vbe_node *n, const char *vm, FILE *out)
{
	struct vbe_guest *g = vbe_prio_guest(n, vm);
	unsigned many;

	if (!g)
		g = vbe_prio_vm(n, vm, &many);
	if (!g && many)
		fprintf(out, "error: VM '%.64s' has %u guests now: name one as "
			"domid/devid (see 'vrdmactl list')\n", vm, many);
	else if (!g)
		fprintf(out, "error: no guest '%.64s' (a domid, domid/devid, a name "
			"from 'vrdmactl list' or a VM name)\n", vm);
	return g;
}

static void vbe_prio_print(struct vbe_guest *g, FILE *out)
{
	char val[64];
	unsigned i;

	fprintf(out, "%u/%u %s", g->domid, g->devid, g->name);
	if (g->vm[0])
		fprintf(out, " vm=%s", g->vm);
	for (i = 0; vbe_prio_keys[i]; i++) {
		vbe_prio_format(&g->prio, vbe_prio_keys[i], val, sizeof(val));
		fprintf(out, " %s=%s", vbe_prio_keys[i], val);
	}
	fputc('\n', out);
}

int vbe_node_prio_get(struct vbe_node *n, const char *vm, FILE *out)
{
	struct vbe_guest *g;

	if (!strcmp(vm, "tenants"))
		return vbe_tenant_get(n, NULL, out);
	if (!strncmp(vm, "tenant:", 7))
		return vbe_tenant_get(n, vm + 7, out);
	g = vbe_prio_find(n, vm, out);
	if (!g)
		return -ENOENT;
	vbe_prio_print(g, out);
	return 0;
}

int vbe_node_prio_set(struct vbe_node *n, const char *vm, int nkv, char **kv, FILE *out)
{
	char path[VPLAT_KEY_MAX], key[16], val[64];
	const char *allowed, *eq;
	struct vbe_guest *g;
	struct vbe_prio p;
	size_t klen;
	int i, err;

	if (!strncmp(vm, "tenant:", 7))
		return vbe_tenant_set(n, vm + 7, nkv, kv, out);
	g = vbe_prio_find(n, vm, out);
	if (!g)
		return -ENOENT;
	if (nkv < 1) {
		fprintf(out, "error: set %s: nothing to set (weight=N class=high|normal|low "
			"rate=BYTES/s[,burst] qps=N mem=BYTES wrs=N credits=N)\n", vm);
		return -EINVAL;
	}
	/* All or nothing: every word checked before one key is written. */
	p = g->prio;
	for (i = 0; i < nkv; i++) {
		eq = strchr(kv[i], '=');
		klen = eq ? (size_t)(eq - kv[i]) : 0;
		if (!eq || !klen || klen >= sizeof(key)) {
			fprintf(out, "error: set: '%.64s' is not key=value\n", kv[i]);
			return -EINVAL;
		}
		memcpy(key, kv[i], klen);
		key[klen] = '\0';
		err = vbe_prio_parse(key, eq + 1, &p, &allowed);
		if (err == -ENOENT) {
			fprintf(out, "error: set: unknown key '%s' (allowed: %s)\n", key, allowed);
			return err;
		}
		if (err) {
			fprintf(out, "error: set: bad %s '%.64s' (allowed: %s)\n", key, eq + 1,
				allowed);
			return err;
		}
	}
	for (i = 0; i < nkv; i++) {
		klen = (size_t)(strchr(kv[i], '=') - kv[i]);
		memcpy(key, kv[i], klen);
		key[klen] = '\0';
		vbe_prio_format(&p, key, val, sizeof(val));
		snprintf(path, sizeof(path), "%s/%s", g->bdir, key);
		err = vplat_key_write(n->plat, path, val);
		if (err) {
			fprintf(out, "error: set: writing %s: %s\n", path, strerror(-err));
			return err;
		}
	}
	vbe_prio_apply(g, &p);
	vbe_prio_print(g, out);
	return 0;
}
