// SPDX-License-Identifier: MIT
/*
 * Xen, dom0 role (vrdmad in the control domain): guest grants mapped
 * through gntdev, guest channels bound interdomain through evtchn, keys
 * through xenstore.  The toolstack part (creating a guest's device nodes)
 * is the backend's, through vplat_key_perm(); guests come and go with
 * their xenstore directories, which xl removes when a domain dies.
 *
 * Liveness (docs/wire.md, dom0_live): the device area's mapping gets
 * gntdev's unmap-notify, as libxenvchan's client does with
 * xengnttab_map_grant_ref_notify() -- but on the existing multi-page
 * mapping, through libxengnttab's own gntdev fd: when vrdmad lets go of it
 * (unmap, exit, SIGKILL) the dom0 kernel clears the byte and signals the
 * guest's channel.
 */
#include <errno.h>
#include <stdint.h>	/* before xen/sys/gntdev.h, which needs it */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xen/sys/gntdev.h>

#include "log.h"
#include "xen_common.h"

#define XD_DOMID_MAX	0x7ff0u		/* DOMID_FIRST_RESERVED */
/* Mappings: each one is a VMA of vrdmad's, against vm.max_map_count,
 * which also counts vrdmad's libraries, stacks and device queues: half
 * of it, at most the plain host's 32768. */
#define XD_MAPS_MAX	32768u
/* Grant-mapped pages: dom0's maptrack holds 1024 frames by default
 * (gnttab_max_maptrack_frames) of 256 16-byte entries, 262144 mappings
 * for netback, blkback, QEMU and vrdma together; vrdma takes half unless
 * told otherwise. */
#define XD_PAGES_DEF	131072u
#define XD_PAGES_ENV	"VRDMA_XEN_MAP_PAGES"

struct xd_map {
	struct vplat_map base;
	struct xp *x;
	uint32_t n;
	int writable;
};

/* Linux's gntdev maps at most `limit` grants a request (65536 unless its
 * module parameter says otherwise): a bigger buffer is past dom0's room,
 * not a bad ref.  0 if it cannot be read. */
static uint32_t xd_gntdev_limit(void)
{
	FILE *f = fopen("/sys/module/xen_gntdev/parameters/limit", "re");
	unsigned long v = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%lu", &v) != 1 || v > UINT32_MAX)
		v = 0;
	fclose(f);
	return (uint32_t)v;
}

static int xd_map(struct vplat *p, uint32_t domid, const uint32_t *refs, uint32_t n,
		  int writable, struct vplat_map **out)
{
	struct xp *x = xp_of(p);
	struct xd_map *m;
	void *addr;
	int err;

	if (domid == VPLAT_DOM0 || domid >= XD_DOMID_MAX)
		return -EINVAL;
	if (x->maps >= x->lim.maps || n > x->lim.pages - x->pages)
		return -ENOMEM;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	/* gntdev maps all refs or none: a bad ref fails the whole call. */
	addr = xengnttab_map_domain_grant_refs(x->gtab, n, domid, (uint32_t *)refs,
					       PROT_READ | (writable ? PROT_WRITE : 0));
	if (!addr) {
		err = errno;
		free(m);
		vlog_dbg("platform: map %u refs of domain %u: %s", n, domid, strerror(err));
		/* Out of room in gntdev or our address space vs a bad ref. */
		if (err == ENOMEM || err == ENOSPC || err == E2BIG)
			return -ENOMEM;
		if (err == EINVAL && n > 65536 && n > xd_gntdev_limit()) {
			static struct vlog_lim lim;

			vlog_limited(&lim, VLOG_WARN, "platform: a buffer of %u pages of domain %u is"
				     " past gntdev's limit per map (xen_gntdev.limit)", n, domid);
			return -ENOMEM;
		}
		return -EFAULT;
	}
	m->base.ops = &vplat_xen_dom0_ops;
	m->base.addr = addr;
	m->base.cost = 1;
	x->maps++;
	x->pages += n;
	m->x = x;
	m->n = n;
	m->writable = writable;
	*out = &m->base;
	return 0;
}

static void xd_unmap(struct vplat_map *bm)
{
	struct xd_map *m = (struct xd_map *)bm;

	/* Still mapped when the unmap failed: still counted. */
	if (xengnttab_unmap(m->x->gtab, m->base.addr, m->n) < 0) {
		vlog_warn("platform: unmap of %u pages: %s", m->n, strerror(errno));
	} else {
		m->x->maps--;
		m->x->pages -= m->n;
	}
	free(m);
}

static void xd_map_limits(const struct vplat *p, struct vplat_map_limits *l)
{
	*l = xp_of((struct vplat *)p)->lim;
}

/* The budgets of vplat.h's vplat_map_limits, from vm.max_map_count and
 * XD_PAGES_ENV (an operator who raised dom0's maptrack raises it). */
static void xd_limits_init(struct xp *x)
{
	const char *env = getenv(XD_PAGES_ENV);
	unsigned long long v;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
	char *end;

	x->lim.maps = XD_MAPS_MAX;
	if (f) {
		if (fscanf(f, "%llu", &v) == 1 && v / 2 < x->lim.maps)
			x->lim.maps = v / 2;
		fclose(f);
	}
	x->lim.pages = XD_PAGES_DEF;
	if (env && *env) {
		errno = 0;
		v = strtoull(env, &end, 10);
		if (errno || *end || env[0] < '0' || env[0] > '9')
			vlog_warn("platform: %s='%.32s' is not a number of pages, %u kept",
				  XD_PAGES_ENV, env, XD_PAGES_DEF);
		else
			x->lim.pages = v;
	}
	vlog_info("platform: guests' mappings: at most %llu maps, %llu pages (%s)",
		  (unsigned long long)x->lim.maps, (unsigned long long)x->lim.pages,
		  XD_PAGES_ENV);
}

/* See the top of the file.  The notify holds a reference on the port, so
 * the guest still gets its signal if our channel was closed first. */
static int xd_map_live(struct vplat_map *bm, size_t off, struct vplat_chan *bc)
{
	struct xd_map *m = (struct xd_map *)bm;
	struct ioctl_gntdev_get_offset_for_vaddr where = {
		.vaddr = (uint64_t)(uintptr_t)m->base.addr,
	};
	struct ioctl_gntdev_unmap_notify op = {
		.action = UNMAP_NOTIFY_CLEAR_BYTE | UNMAP_NOTIFY_SEND_EVENT,
		.event_channel_port = ((struct xp_chan *)bc)->local,
	};
	int fd = xengnttab_fd(m->x->gtab);

	if (!m->writable || off >= (size_t)m->n * (size_t)sysconf(_SC_PAGESIZE))
		return -EINVAL;
	if (ioctl(fd, IOCTL_GNTDEV_GET_OFFSET_FOR_VADDR, &where) < 0)
		return -errno;
	op.index = where.offset + off;
	if (ioctl(fd, IOCTL_GNTDEV_SET_UNMAP_NOTIFY, &op) < 0)
		return -errno;
	return 0;
}

static int xd_chan_bind(struct vplat *p, uint32_t domid, uint32_t port,
			struct vplat_chan **out)
{
	xenevtchn_port_or_error_t local;
	struct xp_chan *c;
	int err;

	if (domid == VPLAT_DOM0 || domid >= XD_DOMID_MAX)
		return -EINVAL;
	err = xp_chan_new(xp_of(p), &vplat_xen_dom0_ops, &c);
	if (err)
		return err;
	local = xenevtchn_bind_interdomain(c->xce, domid, port);
	if (local < 0) {
		err = errno == EINVAL ? -ENOENT : -errno;	/* not an unbound port of theirs */
		xp_chan_free(c);
		return err;
	}
	c->local = (evtchn_port_t)local;
	*out = &c->base;
	return 0;
}

static int xd_open(const struct vplat_cfg *cfg, struct vplat **out)
{
	struct xp *x;
	int err;

	(void)cfg;
	err = xp_new(&vplat_xen_dom0_ops, &x);
	if (err)
		return err;
	x->base.domid = VPLAT_DOM0;
	x->gtab = xengnttab_open(NULL, 0);
	if (!x->gtab) {
		err = errno ? -errno : -ENODEV;
		vlog_err("platform: cannot open /dev/xen/gntdev (modprobe xen-gntdev): %s",
			 strerror(-err));
		xp_free(x);
		return err;
	}
	xd_limits_init(x);
	vlog_dbg("platform: xen dom0");
	*out = &x->base;
	return 0;
}

static void xd_close(struct vplat *p)
{
	struct xp *x = xp_of(p);

	/* Mappings still held stay valid: gntdev unmaps them with the vma. */
	xengnttab_close(x->gtab);
	xp_free(x);
}

const struct vplat_ops vplat_xen_dom0_ops = {
	.kind		= "xen",
	.open		= xd_open,
	.close		= xd_close,
	.fd		= xp_fd,
	.process	= xp_process,
	.map		= xd_map,
	.unmap		= xd_unmap,
	.map_live	= xd_map_live,
	.map_limits	= xd_map_limits,
	.chan_bind	= xd_chan_bind,
	.notify		= xp_notify,
	.chan_fd	= xp_chan_fd,
	.chan_ack	= xp_chan_ack,
	.chan_wait	= xp_chan_wait,
	.chan_close	= xp_chan_close,
	.key_write	= xp_key_write,
	.key_read	= xp_key_read,
	.key_rm		= xp_key_rm,
	.key_cas	= xp_key_cas,
	.key_list	= xp_key_list,
	.watch		= xp_watch,
	.unwatch	= xp_unwatch,
	.key_perm	= xp_key_perm,
	.tx_start	= xp_tx_start,
	.tx_end		= xp_tx_end,
};
