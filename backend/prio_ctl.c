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

static struct vbe_guest *vbe_prio_find(struct vbe_node *n, const char *vm, struct vout *o)
{
	struct vbe_guest *g = vbe_prio_guest(n, vm);
	unsigned many;

	if (!g)
		g = vbe_prio_vm(n, vm, &many);
	if (!g && many)
		vout_err(o, -ENOENT, "VM '%.64s' has %u guests now: name one as "
			 "domid/devid (see 'vrdmactl list')", vm, many);
	else if (!g)
		vout_err(o, -ENOENT, "no guest '%.64s' (a domid, domid/devid, a name "
			 "from 'vrdmactl list' or a VM name)", vm);
	return g;
}

/* Text: the words `set` takes (scripts read them); JSON: typed values. */
static void vbe_prio_print(struct vbe_guest *g, struct vout *o)
{
	const struct vbe_prio *p = &g->prio;
	char val[64];
	unsigned i;

	vout_u64(o, "domid", g->domid, "%u", g->domid);
	vout_u64(o, "devid", g->devid, "/%u", g->devid);
	vout_str(o, "name", g->name, " %s", g->name);
	vout_str(o, "vm", g->vm[0] ? g->vm : NULL, g->vm[0] ? " vm=%s" : "%s",
		 g->vm[0] ? g->vm : "");
	vout_jstr(o, "tenant", g->tenant);
	for (i = 0; vbe_prio_keys[i]; i++) {
		vbe_prio_format(p, vbe_prio_keys[i], val, sizeof(val));
		vout_text(o, " %s=%s", vbe_prio_keys[i], val);
	}
	vout_text(o, "\n");
	vout_ju64(o, "weight", p->weight);
	vbe_prio_format(p, "class", val, sizeof(val));
	vout_jstr(o, "class", val);
	vout_ju64(o, "rate", p->rate);
	vout_ju64(o, "burst", p->burst);
	vout_ju64(o, "qps", p->qps);
	vout_ju64(o, "mem", p->mem);
	vout_ju64(o, "wrs", p->wrs);
	vout_ju64(o, "credits", p->credits);
	vout_ju64(o, "cmds", p->cmds);
}

int vbe_node_prio_get(struct vbe_node *n, const char *vm, struct vout *o)
{
	struct vbe_guest *g;

	if (!strcmp(vm, "tenants"))
		return vbe_tenant_get(n, NULL, o);
	if (!strncmp(vm, "tenant:", 7))
		return vbe_tenant_get(n, vm + 7, o);
	g = vbe_prio_find(n, vm, o);
	if (!g)
		return -ENOENT;
	vbe_prio_print(g, o);
	return 0;
}

int vbe_node_prio_set(struct vbe_node *n, const char *vm, int nkv, char **kv,
		      struct vout *o)
{
	char path[VPLAT_KEY_MAX], key[16], val[64];
	const char *allowed, *eq;
	struct vbe_guest *g;
	struct vbe_prio p;
	size_t klen;
	int i, err;

	if (!strncmp(vm, "tenant:", 7))
		return vbe_tenant_set(n, vm + 7, nkv, kv, o);
	g = vbe_prio_find(n, vm, o);
	if (!g)
		return -ENOENT;
	if (nkv < 1)
		return vout_err(o, -EINVAL, "set %.64s: nothing to set (weight=N "
				"class=high|normal|low rate=BYTES/s[,burst] qps=N mem=BYTES "
				"wrs=N credits=N cmds=N)", vm);
	/* All or nothing: every word checked before one key is written. */
	p = g->prio;
	for (i = 0; i < nkv; i++) {
		eq = strchr(kv[i], '=');
		klen = eq ? (size_t)(eq - kv[i]) : 0;
		if (!eq || !klen || klen >= sizeof(key))
			return vout_err(o, -EINVAL, "set: '%.64s' is not key=value", kv[i]);
		memcpy(key, kv[i], klen);
		key[klen] = '\0';
		err = vbe_prio_parse(key, eq + 1, &p, &allowed);
		if (err == -ENOENT)
			return vout_err(o, err, "set: unknown key '%s' (allowed: %s)", key,
					allowed);
		if (err)
			return vout_err(o, err, "set: bad %s '%.64s' (allowed: %s)", key, eq + 1,
					allowed);
	}
	for (i = 0; i < nkv; i++) {
		klen = (size_t)(strchr(kv[i], '=') - kv[i]);
		memcpy(key, kv[i], klen);
		key[klen] = '\0';
		vbe_prio_format(&p, key, val, sizeof(val));
		snprintf(path, sizeof(path), "%s/%s", g->bdir, key);
		err = vplat_key_write(n->plat, path, val);
		if (err)
			return vout_err(o, err, "set: writing %s: %s", path, strerror(-err));
	}
	vbe_prio_apply(g, &p);
	vbe_prio_print(g, o);
	return 0;
}
