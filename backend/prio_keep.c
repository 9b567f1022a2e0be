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
 * or plain-host processes given one VRDMA_VM): the last to leave wins.
 */
#include <string.h>

#include "log.h"
#include "vbe.h"

/* The domain's name: "" when it has none (then nothing is remembered). */
static void vbe_keep_name(struct vbe_guest *g)
{
	char path[VPLAT_KEY_MAX], val[VPLAT_VAL_MAX];
	size_t i, len;

	g->vm[0] = '\0';
	snprintf(path, sizeof(path), "/local/domain/%u/name", g->domid);
	if (vplat_key_read(g->node->plat, path, val, sizeof(val)))
		return;
	len = strlen(val);
	if (!len || len >= sizeof(g->vm))
		return;
	for (i = 0; i < len; i++)	/* printed by get/logs: plain names only */
		if (val[i] < 0x21 || val[i] > 0x7e)
			return;
	memcpy(g->vm, val, len + 1);
}

/* A VM's device devid (Xen: a domain may have several). */
static struct vbe_keep *vbe_keep_find(struct vbe_node *n, const char *vm, uint32_t devid)
{
	unsigned i;

	for (i = 0; i < VBE_KEEP_MAX; i++)
		if (n->keep[i].vm[0] && n->keep[i].devid == devid &&
		    !strcmp(n->keep[i].vm, vm))
			return &n->keep[i];
	return NULL;
}

/* g leaves: remember its settings (defaults: forget the VM). */
void vbe_prio_keep(struct vbe_guest *g)
{
	struct vbe_node *n = g->node;
	struct vbe_keep *k;
	struct vbe_prio def;
	unsigned i;

	if (!g->vm[0])
		return;
	k = vbe_keep_find(n, g->vm, g->devid);
	vbe_prio_defaults(&def);
	if (!memcmp(&g->prio, &def, sizeof(def))) {
		if (k)
			k->vm[0] = '\0';
		return;
	}
	if (!k) {	/* a free entry, else the one unused the longest */
		k = &n->keep[0];
		for (i = 0; i < VBE_KEEP_MAX && k->vm[0]; i++)
			if (!n->keep[i].vm[0] || n->keep[i].stamp < k->stamp)
				k = &n->keep[i];
		strcpy(k->vm, g->vm);
		k->devid = g->devid;
	}
	k->prio = g->prio;
	k->stamp = ++n->keep_stamp;
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
