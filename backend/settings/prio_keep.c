// SPDX-License-Identifier: MIT
/*
 * A VM's settings outlive its guest's connection (issue 5, docs/prio.md).
 * Settings are keys in the guest's backend dir.  On Xen that dir lives as
 * long as the device stays attached, but a guest that leaves takes its
 * dir along: on the plain host every process is a guest of its own (a new
 * domid), on Xen a re-created domain gets a new domid.  So the node
 * remembers each VM's last settings by the VM's name (the domain's `name`
 * key: the xl name on Xen, the process's name on the plain host, which
 * VRDMA_VM sets) and device number, and writes them into the dir of the
 * next guest of that VM and device, unless that dir has settings of its
 * own.  Several live guests may share a VM name (devices of one domain,
 * or plain-host processes given one VRDMA_VM): the last change wins.
 *
 * Issue 13: the table holds every VM's settings, running or not (a
 * change to a live guest's is written through), and prio_store.c keeps
 * it on disk, so it outlives vrdmad too; `vrdmactl set` on a VM with no
 * guest changes it alone.  The VMs the operator detached are kept
 * there too, by name (vbe_node_detached_set).
 */
#include <errno.h>
#include <string.h>

#include "log.h"
#include "../vbe.h"
#include "../vout.h"

/* The domain's name: "" when it has none (then nothing is remembered). */
static void vbe_keep_name(struct vbe_guest *g)
{
	char path[VPLAT_KEY_MAX], val[VPLAT_VAL_MAX];

	g->vm[0] = '\0';
	snprintf(path, sizeof(path), "/local/domain/%u/name", g->domid);
	if (vplat_key_read(g->node->plat, path, val, sizeof(val)))
		return;
	if (vbe_keep_name_ok(val))	/* plain names only: one word everywhere */
		strcpy(g->vm, val);
}

/* A VM's device devid (Xen: a domain may have several). */
struct vbe_keep *vbe_keep_find(struct vbe_node *n, const char *vm, uint32_t devid)
{
	unsigned i;

	for (i = 0; i < VBE_KEEP_MAX; i++)
		if (n->keep[i].vm[0] && n->keep[i].devid == devid &&
		    !strcmp(n->keep[i].vm, vm))
			return &n->keep[i];
	return NULL;
}

/* Any device of VM vm, or NULL. */
struct vbe_keep *vbe_keep_first(struct vbe_node *n, const char *vm)
{
	unsigned i;

	for (i = 0; i < VBE_KEEP_MAX; i++)
		if (n->keep[i].vm[0] && !strcmp(n->keep[i].vm, vm))
			return &n->keep[i];
	return NULL;
}

/*
 * VM vm's device devid has settings p now (defaults: forget it).  Returns
 * 1 if that changed the table, 0 if it held them already.
 */
int vbe_keep_put(struct vbe_node *n, const char *vm, uint32_t devid,
		 const struct vbe_prio *p)
{
	struct vbe_keep *k = vbe_keep_find(n, vm, devid);
	struct vbe_prio def;
	unsigned i;

	vbe_prio_defaults(&def);
	if (vbe_prio_same(p, &def)) {
		if (!k)
			return 0;
		k->vm[0] = '\0';
		return 1;
	}
	if (k && vbe_prio_same(&k->prio, p))
		return 0;
	if (!k) {	/* a free entry, else the one unused the longest */
		k = &n->keep[0];
		for (i = 0; i < VBE_KEEP_MAX && k->vm[0]; i++)
			if (!n->keep[i].vm[0] || n->keep[i].stamp < k->stamp)
				k = &n->keep[i];
		if (k->vm[0])
			vlog_warn("settings: %u VMs remembered: forgetting VM '%s' device %u",
				  VBE_KEEP_MAX, k->vm, k->devid);
		strcpy(k->vm, vm);
		k->devid = devid;
	}
	k->prio = *p;
	k->stamp = ++n->keep_stamp;
	return 1;
}

/*
 * vbe_keep_put, then the file (prio_store.c): 0 once the change is on
 * disk (or the node keeps no file); -errno with the table as it was.
 */
int vbe_keep_store(struct vbe_node *n, const char *vm, uint32_t devid,
		   const struct vbe_prio *p)
{
	struct vbe_keep old[VBE_KEEP_MAX];
	uint64_t stamp = n->keep_stamp;
	int err;

	memcpy(old, n->keep, sizeof(old));
	/* The table may hold it already but not the disk (a key written by
	 * hand, saved at the next tick): the answer waits for the disk. */
	if (!vbe_keep_put(n, vm, devid, p))
		return n->store_dirty ? vbe_store_save(n) : 0;
	err = vbe_store_save(n);
	if (err) {
		memcpy(n->keep, old, sizeof(old));
		n->keep_stamp = stamp;
	}
	return err;
}

/* g's settings changed (a watch, its departure): the VM's now, in
 * memory at once, on disk at the next tick (one write for every guest
 * that left in one rescan). */
void vbe_prio_keep(struct vbe_guest *g)
{
	if (g->vm[0] && vbe_keep_put(g->node, g->vm, g->devid, &g->prio))
		vbe_store_later(g->node);
}

/*
 * g arrived: learn its VM name; if that VM left settings and g's dir has
 * none, write them there (vbe_prio_load then reads them like any key).
 */
void vbe_prio_recall(struct vbe_guest *g)
{
	char path[VPLAT_KEY_MAX], val[VPLAT_VAL_MAX];
	struct vbe_keep *k;
	unsigned i;

	vbe_keep_name(g);
	k = g->vm[0] ? vbe_keep_find(g->node, g->vm, g->devid) : NULL;
	if (!k)
		return;
	for (i = 0; vbe_prio_keys[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", g->bdir, vbe_prio_keys[i]);
		if (vplat_key_read(g->node->plat, path, val, sizeof(val)) >= 0)
			return;		/* set for this guest already: it wins */
	}
	k->stamp = ++g->node->keep_stamp;
	for (i = 0; vbe_prio_keys[i]; i++) {
		vbe_prio_format(&k->prio, vbe_prio_keys[i], val, sizeof(val));
		snprintf(path, sizeof(path), "%s/%s", g->bdir, vbe_prio_keys[i]);
		if (vplat_key_write(g->node->plat, path, val))
			vlog_warn("guest %u device %u: cannot restore %s of VM '%s'",
				  g->domid, g->devid, vbe_prio_keys[i], g->vm);
	}
	vlog_info("guest %u device %u: settings of VM '%s' restored", g->domid,
		  g->devid, g->vm);
}

/* ---- VMs the operator detached (issue 13) ---- */

static int vbe_detached_find(const struct vbe_node *n, const char *vm)
{
	unsigned i;

	for (i = 0; i < VBE_DETACHED_MAX; i++)
		if (n->detached[i][0] && !strcmp(n->detached[i], vm))
			return (int)i;
	return -1;
}

int vbe_detached_put(struct vbe_node *n, const char *vm, bool on)
{
	int i = vbe_detached_find(n, vm);

	if (!on || i >= 0) {
		if (i >= 0 && !on)
			n->detached[i][0] = '\0';
		return (i >= 0) != on;
	}
	for (i = 0; i < VBE_DETACHED_MAX && n->detached[i][0]; i++)
		;
	if (i == VBE_DETACHED_MAX)	/* `vrdmactl attach-policy forget` makes room */
		return -ENOSPC;	/* not the oldest forgotten: each is a decision */
	strcpy(n->detached[i], vm);
	return 1;
}

bool vbe_node_detached(const struct vbe_node *n, const char *vm)
{
	return vbe_detached_find(n, vm) >= 0;
}

bool vbe_node_keeps_state(const struct vbe_node *n)
{
	return n->state_dir[0] != '\0';
}

int vbe_node_detached_set(struct vbe_node *n, const char *vm, bool on)
{
	int r, err;

	if (!vbe_keep_name_ok(vm))
		return -EINVAL;
	r = vbe_detached_put(n, vm, on);
	if (r <= 0)
		return r;
	err = vbe_store_save(n);
	if (err)
		vbe_detached_put(n, vm, !on);	/* as it was; room is there */
	return err;
}

void vbe_node_detached_show(const struct vbe_node *n, struct vout *o)
{
	unsigned i, k = 0;

	vout_arr(o, "detached_vms");
	for (i = 0; i < VBE_DETACHED_MAX; i++) {
		if (!n->detached[i][0])
			continue;
		vout_str(o, NULL, n->detached[i], "%s%s", k++ ? " " : "VMs detached by the "
			 "operator (kept until vrdmactl attach): ", n->detached[i]);
	}
	vout_end(o);
	if (k)
		vout_text(o, "\n");
}
