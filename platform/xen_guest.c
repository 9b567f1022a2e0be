// SPDX-License-Identifier: MIT
/*
 * Xen, guest role (a domU process): grants through gntalloc, channels
 * through evtchn, keys through xenstore.
 *
 * Grants use the gntalloc ioctls on libxengntshr's own fd rather than
 * xengntshr_share_pages(), for two reasons: a share must fail whole with a
 * clear word about gntalloc's limit, and the device area's unmap-notify
 * can only be armed once its event channel exists -- after the share,
 * which libxengntshr cannot do (it drops the gref from the file at once).
 *
 * Liveness (docs/wire.md): when the frontend allocates its channel, the
 * newest share to that peer is its device area (page 0 already carries
 * VRDMA_WIRE_MAGIC).  We set sring.guest_live and arm gntalloc's
 * unmap-notify on it: when this process lets go of the area -- unshare,
 * exit or crash -- the kernel clears the byte and signals the channel, so
 * dom0 learns at once that nobody is left on this side.
 */
#include <errno.h>
#include <stdint.h>	/* before xen/sys/gntalloc.h, which needs it */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xen/sys/gntalloc.h>
#include <xenstore.h>

#include "log.h"
#include "vrdma/wire.h"
#include "xen_common.h"

#define XG_LIMIT_PARAM	"/sys/module/xen_gntalloc/parameters/limit"
#define XG_DOMID_MAX	0x7ff0u		/* DOMID_FIRST_RESERVED */

struct xp_gshare {
	struct vplat_share base;
	struct xp *x;
	struct xp_gshare *next;
	uint64_t index;			/* gntalloc mmap offset */
	uint32_t peer;
	int writable;
	int armed;			/* unmap-notify set */
};

/* gntalloc's module parameter: grants of the whole domain; 0 if unknown. */
static uint64_t xg_limit(void)
{
	unsigned long long v = 0;
	FILE *f = fopen(XG_LIMIT_PARAM, "re");

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static void xg_log_limit(uint32_t npages, uint64_t mine)
{
	uint64_t lim = xg_limit();

	vlog_err("platform: cannot share %u pages (this process shares %llu): "
		 "the domain's grants are used up -- gntalloc limit=%llu pages (%s; "
		 "raise with 'modprobe xen-gntalloc limit=N') or the grant table "
		 "(max_grant_frames in xl.cfg); see docs/xen.md",
		 npages, (unsigned long long)mine, (unsigned long long)lim, XG_LIMIT_PARAM);
}

static int xg_share(struct vplat *p, uint32_t peer, uint32_t npages, int writable,
		    struct vplat_share **out)
{
	struct xp *x = xp_of(p);
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct ioctl_gntalloc_dealloc_gref dop;
	struct ioctl_gntalloc_alloc_gref *op;
	struct xp_gshare *s;
	uint64_t lim = xg_limit();
	size_t oplen;
	int err;

	if (peer >= XG_DOMID_MAX || peer == x->base.domid)
		return -EINVAL;
	/* Known too big before asking: refuse whole, say which limit. */
	if ((lim && x->shared_pages + npages > lim) || npages > SIZE_MAX / pg) {
		xg_log_limit(npages, x->shared_pages);
		return -ENOSPC;
	}
	s = calloc(1, sizeof(*s));
	oplen = sizeof(*op) + sizeof(op->gref_ids[0]) * (size_t)npages;
	op = calloc(1, oplen);
	if (s)
		s->base.refs = malloc(sizeof(uint32_t) * (size_t)npages);
	if (!s || !op || !s->base.refs) {
		err = -ENOMEM;
		goto err_free;
	}
	op->domid = (uint16_t)peer;
	op->flags = writable ? GNTALLOC_FLAG_WRITABLE : 0;
	op->count = npages;
	/* The kernel grants all pages or none (it undoes a partial grant). */
	if (ioctl(x->gfd, IOCTL_GNTALLOC_ALLOC_GREF, op) < 0) {
		err = -errno;
		if (err == -ENOSPC)	/* gntalloc's limit or the grant table */
			xg_log_limit(npages, x->shared_pages);
		goto err_free;
	}
	s->base.addr = mmap(NULL, (size_t)npages * pg, PROT_READ | PROT_WRITE,
			    MAP_SHARED, x->gfd, (off_t)op->index);
	if (s->base.addr == MAP_FAILED) {
		err = -errno;
		goto err_dealloc;
	}
	s->base.ops = x->base.ops;
	s->base.npages = npages;
	memcpy(s->base.refs, op->gref_ids, sizeof(uint32_t) * (size_t)npages);
	s->x = x;
	s->index = op->index;
	s->peer = peer;
	s->writable = !!writable;
	s->next = x->shares;
	x->shares = s;
	x->shared_pages += npages;
	free(op);
	*out = &s->base;
	return 0;

err_dealloc:
	dop.index = op->index;
	dop.count = npages;
	ioctl(x->gfd, IOCTL_GNTALLOC_DEALLOC_GREF, &dop);
err_free:
	if (s)
		free(s->base.refs);
	free(s);
	free(op);
	return err;
}

static void xg_unshare(struct vplat_share *bs)
{
	struct xp_gshare *s = (struct xp_gshare *)bs, **ps;
	struct ioctl_gntalloc_dealloc_gref dop = { .index = s->index, .count = s->base.npages };
	struct xp *x = s->x;

	for (ps = &x->shares; *ps; ps = &(*ps)->next)
		if (*ps == s) {
			*ps = s->next;
			break;
		}
	/* The grant ends when dom0 unmaps too; the kernel keeps the page till then. */
	if (s->base.addr)	/* NULL: disowned (vplat_share_disown) */
		munmap(s->base.addr, (size_t)s->base.npages * (size_t)sysconf(_SC_PAGESIZE));
	if (ioctl(x->gfd, IOCTL_GNTALLOC_DEALLOC_GREF, &dop) < 0)
		vlog_warn("platform: gntalloc dealloc of %u pages: %s", s->base.npages,
			  strerror(errno));
	x->shared_pages -= s->base.npages;
	free(s->base.refs);
	free(s);
}

/* See the top of the file: the device area's liveness byte. */
static void xg_arm_live(struct xp *x, uint32_t peer, struct xp_chan *c)
{
	struct ioctl_gntalloc_unmap_notify op = {
		.action = UNMAP_NOTIFY_CLEAR_BYTE | UNMAP_NOTIFY_SEND_EVENT,
		.event_channel_port = c->local,
	};
	struct vrdma_sring *sr;
	struct xp_gshare *s;

	for (s = x->shares; s; s = s->next)
		if (s->peer == peer)
			break;
	if (!s || s->armed || !s->writable)
		return;
	sr = s->base.addr;
	if (sr->magic != VRDMA_WIRE_MAGIC || sr->version != VRDMA_WIRE_VERSION)
		return;
	op.index = s->index + offsetof(struct vrdma_sring, guest_live);
	if (ioctl(x->gfd, IOCTL_GNTALLOC_SET_UNMAP_NOTIFY, &op) < 0) {
		vlog_warn("platform: cannot arm the unmap-notify (dom0 will not see us die): %s",
			  strerror(errno));
		return;
	}
	__atomic_store_n(&sr->guest_live, (uint8_t)VRDMA_SRING_LIVE, __ATOMIC_RELEASE);
	s->armed = 1;
}

static int xg_chan_alloc(struct vplat *p, uint32_t peer, struct vplat_chan **out,
			 uint32_t *port)
{
	struct xp *x = xp_of(p);
	xenevtchn_port_or_error_t local;
	struct xp_chan *c;
	int err;

	if (peer >= XG_DOMID_MAX)
		return -EINVAL;
	err = xp_chan_new(x, &vplat_xen_guest_ops, &c);
	if (err)
		return err;
	local = xenevtchn_bind_unbound_port(c->xce, peer);
	if (local < 0) {
		err = -errno;
		xp_chan_free(c);
		return err;
	}
	c->local = (evtchn_port_t)local;
	xg_arm_live(x, peer, c);
	*port = c->local;
	*out = &c->base;
	return 0;
}

static int xg_open(const struct vplat_cfg *cfg, struct vplat **out)
{
	struct xp *x;
	unsigned n;
	char *v;
	int err;

	(void)cfg;
	err = xp_new(&vplat_xen_guest_ops, &x);
	if (err)
		return err;
	/* Relative: our home.  Also tells us the xenstore connection works. */
	v = xs_read(x->xs, XBT_NULL, "domid", &n);
	if (!v || n == 0 || n > 5 || strspn(v, "0123456789") != n) {
		err = v ? -EIO : (errno ? -errno : -EIO);
		vlog_err("platform: cannot read our domid from xenstore: %s", strerror(-err));
		free(v);
		goto err_xp;
	}
	x->base.domid = (uint32_t)strtoul(v, NULL, 10);
	free(v);
	x->gsh = xengntshr_open(NULL, 0);
	if (!x->gsh) {
		err = errno ? -errno : -ENODEV;
		vlog_err("platform: cannot open /dev/xen/gntalloc (modprobe xen-gntalloc): %s",
			 strerror(-err));
		goto err_xp;
	}
	x->gfd = xengntshr_fd(x->gsh);
	vlog_dbg("platform: xen guest, domain %u", x->base.domid);
	*out = &x->base;
	return 0;

err_xp:
	xp_free(x);
	return err;
}

static void xg_close(struct vplat *p)
{
	struct xp *x = xp_of(p);

	/* Shares still held keep their mappings; the grants end with the fd. */
	if (x->gsh)
		xengntshr_close(x->gsh);
	xp_free(x);
}

const struct vplat_ops vplat_xen_guest_ops = {
	.kind		= "xen",
	.open		= xg_open,
	.close		= xg_close,
	.fd		= xp_fd,
	.process	= xp_process,
	.share		= xg_share,
	.unshare	= xg_unshare,
	.chan_alloc	= xg_chan_alloc,
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
};
