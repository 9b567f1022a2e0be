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
#include "../vbe.h"

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

static void vbe_prio_jprint(const struct vbe_prio *p, struct vout *o);

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
	vbe_prio_jprint(p, o);
}

static void vbe_prio_jprint(const struct vbe_prio *p, struct vout *o)
{
	char val[64];

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
	vout_jstr(o, "coll", p->coll_off ? "off" : "on");
}

/*
 * A VM with no guest now (issue 13): its stored settings, one line per
 * device, "vm=NAME devid=N stored=yes key=value...".  JSON: "stored", an
 * array of {vm, devid, weight...}.
 */
static void vbe_prio_print_kept(struct vbe_node *n, const char *vm, struct vout *o)
{
	struct vbe_keep *k;
	char val[64];
	unsigned i, j;

	vout_arr(o, "stored");
	for (i = 0; i < VBE_KEEP_MAX; i++) {
		k = &n->keep[i];
		if (!k->vm[0] || strcmp(k->vm, vm))
			continue;
		vout_obj(o, NULL);
		vout_str(o, "vm", k->vm, "vm=%s", k->vm);
		vout_u64(o, "devid", k->devid, " devid=%u stored=yes", k->devid);
		for (j = 0; vbe_prio_keys[j]; j++) {
			vbe_prio_format(&k->prio, vbe_prio_keys[j], val, sizeof(val));
			vout_text(o, " %s=%s", vbe_prio_keys[j], val);
		}
		vout_text(o, "\n");
		vbe_prio_jprint(&k->prio, o);
		vout_end(o);
	}
	vout_end(o);
}

/* A name `set` may store settings under without a guest: a VM name that
 * is no domid (N or N/N: those name guests only). */
static bool vbe_prio_vm_name(const char *vm)
{
	size_t d = strspn(vm, "0123456789");

	if (d && (!vm[d] || (vm[d] == '/' && vm[d + 1] &&
			     !vm[d + 1 + strspn(vm + d + 1, "0123456789")])))
		return false;
	return vbe_keep_name_ok(vm);
}

/* Every word checked into *p; -errno with the answer written. */
static int vbe_prio_words(const char *vm, int nkv, char **kv, struct vbe_prio *p,
			  struct vout *o)
{
	const char *allowed, *eq;
	char key[16];
	size_t klen;
	int i, err;

	if (nkv < 1)
		return vout_err(o, -EINVAL, "set %.64s: nothing to set (weight=N "
				"class=high|normal|low rate=BYTES/s[,burst] qps=N mem=BYTES "
				"wrs=N credits=N cmds=N coll=on|off)", vm);
	for (i = 0; i < nkv; i++) {
		eq = strchr(kv[i], '=');
		klen = eq ? (size_t)(eq - kv[i]) : 0;
		if (!eq || !klen || klen >= sizeof(key))
			return vout_err(o, -EINVAL, "set: '%.64s' is not key=value", kv[i]);
		memcpy(key, kv[i], klen);
		key[klen] = '\0';
		err = vbe_prio_parse(key, eq + 1, p, &allowed);
		if (err == -ENOENT)
			return vout_err(o, err, "set: unknown key '%s' (allowed: %s)", key,
					allowed);
		if (err)
			return vout_err(o, err, "set: bad %s '%.64s' (allowed: %s)", key, eq + 1,
					allowed);
	}
	return 0;
}

/*
 * `set` on a VM with no guest: change what is stored for each of its
 * devices (device 0 if nothing is), on disk before the answer, all or
 * nothing.  Its next guest gets them (vbe_prio_recall).
 */
static int vbe_prio_set_kept(struct vbe_node *n, const char *vm, int nkv, char **kv,
			     struct vout *o)
{
	struct vbe_keep old[VBE_KEEP_MAX];
	uint32_t devs[VBE_KEEP_MAX];
	struct vbe_prio p[VBE_KEEP_MAX];
	uint64_t stamp = n->keep_stamp;
	unsigned i, nd = 0;
	int err;

	for (i = 0; i < VBE_KEEP_MAX; i++)
		if (n->keep[i].vm[0] && !strcmp(n->keep[i].vm, vm)) {
			devs[nd] = n->keep[i].devid;
			p[nd++] = n->keep[i].prio;
		}
	if (!nd) {
		devs[0] = 0;
		vbe_prio_defaults(&p[nd++]);
	}
	for (i = 0; i < nd; i++) {
		err = vbe_prio_words(vm, nkv, kv, &p[i], o);
		if (err)
			return err;
	}
	memcpy(old, n->keep, sizeof(old));
	for (i = 0; i < nd; i++)
		vbe_keep_put(n, vm, devs[i], &p[i]);
	err = vbe_store_save(n);
	if (err) {
		memcpy(n->keep, old, sizeof(old));
		n->keep_stamp = stamp;
		return vout_err(o, err, "set: cannot store the settings of VM '%s' in %s: %s",
				vm, n->state_dir, strerror(-err));
	}
	vlog_info("settings of VM '%s' stored (no guest now)", vm);
	if (vbe_keep_first(n, vm))
		vout_text(o, "VM '%s' has no guest now: stored for its next one\n", vm);
	else
		vout_text(o, "VM '%s' has no guest now and its settings are the defaults: "
			  "nothing stored\n", vm);
	vbe_prio_print_kept(n, vm, o);
	return 0;
}

int vbe_node_prio_get(struct vbe_node *n, const char *vm, struct vout *o)
{
	struct vbe_guest *g;
	unsigned many;

	if (!strcmp(vm, "tenants"))
		return vbe_tenant_get(n, NULL, o);
	if (!strncmp(vm, "tenant:", 7))
		return vbe_tenant_get(n, vm + 7, o);
	g = vbe_prio_guest(n, vm);
	if (!g && !vbe_prio_vm(n, vm, &many) && !many && vbe_prio_vm_name(vm) &&
	    vbe_keep_first(n, vm)) {
		vbe_prio_print_kept(n, vm, o);
		return 0;
	}
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
	struct vbe_guest *g;
	struct vbe_prio p;
	unsigned many;
	size_t klen;
	int i, err;

	if (!strncmp(vm, "tenant:", 7))
		return vbe_tenant_set(n, vm + 7, nkv, kv, o);
	g = vbe_prio_guest(n, vm);
	if (!g && !vbe_prio_vm(n, vm, &many) && !many && vbe_prio_vm_name(vm))
		return vbe_prio_set_kept(n, vm, nkv, kv, o);
	g = vbe_prio_find(n, vm, o);
	if (!g)
		return -ENOENT;
	/* All or nothing: every word checked before one key is written. */
	p = g->prio;
	err = vbe_prio_words(vm, nkv, kv, &p, o);
	if (err)
		return err;
	/* On disk before the answer (issue 13); a guest with no VM name has
	 * nothing to be remembered by. */
	if (g->vm[0]) {
		err = vbe_keep_store(n, g->vm, g->devid, &p);
		if (err)
			return vout_err(o, err, "set: cannot store the settings of VM '%s' in "
					"%s: %s", g->vm, n->state_dir, strerror(-err));
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
