/* SPDX-License-Identifier: MIT */
/*
 * Inside the seam: each implementation (host guest, host dom0, xen guest,
 * xen dom0) is one ops table.  vplat.c picks one at open and
 * dispatches; objects start with a common head so accessors stay generic.
 * Key paths reach the ops already absolute ("/local/domain/<d>/..." for
 * relative ones) and length-checked.
 */
#ifndef VRDMA_VPLAT_IMPL_H
#define VRDMA_VPLAT_IMPL_H

#include "vplat.h"

struct vplat_ops {
	const char *kind;
	int  (*open)(const struct vplat_cfg *cfg, struct vplat **out);
	void (*close)(struct vplat *p);
	int  (*fd)(const struct vplat *p);
	int  (*process)(struct vplat *p);

	/* Role-specific entries may be NULL: -EOPNOTSUPP. */
	int  (*share)(struct vplat *p, uint32_t peer, uint32_t npages, int writable,
		      struct vplat_share **out);
	void (*unshare)(struct vplat_share *s);
	int  (*map)(struct vplat *p, uint32_t domid, const uint32_t *refs, uint32_t n,
		    int writable, struct vplat_map **out);
	void (*unmap)(struct vplat_map *m);
	int  (*map_live)(struct vplat_map *m, size_t off, struct vplat_chan *c);
	/* NULL: no budget (UINT64_MAX both). */
	void (*map_limits)(const struct vplat *p, struct vplat_map_limits *l);

	int  (*chan_alloc)(struct vplat *p, uint32_t peer, struct vplat_chan **out,
			   uint32_t *port);
	int  (*chan_bind)(struct vplat *p, uint32_t domid, uint32_t port,
			  struct vplat_chan **out);
	int  (*notify)(struct vplat_chan *c);
	int  (*chan_fd)(const struct vplat_chan *c);
	int  (*chan_ack)(struct vplat_chan *c);
	int  (*chan_wait)(struct vplat_chan *c, int timeout_ms);
	void (*chan_close)(struct vplat_chan *c);

	int  (*key_write)(struct vplat *p, const char *path, const char *val);
	int  (*key_read)(struct vplat *p, const char *path, char *buf, size_t len);
	int  (*key_rm)(struct vplat *p, const char *path);
	/* NULL: vplat.c reads, compares and writes (one writer per home). */
	int  (*key_cas)(struct vplat *p, const char *path, const char *old,
			const char *val);
	int  (*key_list)(struct vplat *p, const char *path, char *buf, size_t len,
			 unsigned *count);
	int  (*watch)(struct vplat *p, const char *path, vplat_watch_fn *cb, void *arg);
	void (*unwatch)(struct vplat *p, const char *path, void *arg);
	/* NULL: the platform has fixed permissions, accept as a no-op. */
	int  (*key_perm)(struct vplat *p, const char *path, uint32_t owner,
			 uint32_t reader);
	/*
	 * One transaction around the key calls between them (Xen: xenstore's;
	 * key_cas keeps its own and is not called inside).  end commits, or
	 * discards every write when abort; -EAGAIN: another writer got in
	 * between, start again.  NULL: the store is the caller's alone (the
	 * plain host's lives in vrdmad, one thread), nothing comes in between.
	 */
	int  (*tx_start)(struct vplat *p);
	int  (*tx_end)(struct vplat *p, int abort);
};

/* Common heads; implementations embed them first. */
struct vplat {
	const struct vplat_ops *ops;
	uint32_t domid;
};

struct vplat_share {
	const struct vplat_ops *ops;
	void *addr;
	uint32_t *refs;
	uint32_t npages;
};

struct vplat_map {
	const struct vplat_ops *ops;
	void *addr;
	uint32_t cost;			/* vplat_map_cost: set by the map op */
};

struct vplat_chan {
	const struct vplat_ops *ops;
};

/*
 * The tables.  vplat.c references them weakly: the guest library links
 * only *_guest.c and vrdmad only *_dom0.c, and a missing table just means
 * "this role is not built into this binary".
 */
extern const struct vplat_ops vplat_host_guest_ops;
extern const struct vplat_ops vplat_host_dom0_ops;
extern const struct vplat_ops vplat_xen_guest_ops;
extern const struct vplat_ops vplat_xen_dom0_ops;

#endif /* VRDMA_VPLAT_IMPL_H */
