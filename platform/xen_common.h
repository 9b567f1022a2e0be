/* SPDX-License-Identifier: MIT */
/*
 * Xen, both roles, internal: the instance, xenstore keys and watches
 * (libxenstore) and event channels (libxenevtchn, one handle per channel
 * so each channel has its own fd).  xen_guest.c adds grants through
 * gntalloc, xen_dom0.c mappings through gntdev.
 */
#ifndef VRDMA_XEN_COMMON_H
#define VRDMA_XEN_COMMON_H

#include <stdint.h>
#include <xenevtchn.h>
#include <xengnttab.h>

#include "vplat_impl.h"

struct xs_handle;
struct xp_watch;
struct xp_gshare;

struct xp {
	struct vplat base;
	struct xs_handle *xs;
	struct xp_watch *watches;
	uint64_t next_token;
	uint32_t tx;			/* xs_transaction_t the key calls use, 0: none */
	/* guest role (xen_guest.c) */
	xengntshr_handle *gsh;
	int gfd;			/* its gntalloc fd */
	struct xp_gshare *shares;	/* live shares, newest first */
	uint64_t shared_pages;		/* ours, against gntalloc's limit */
	/* dom0 role (xen_dom0.c) */
	xengnttab_handle *gtab;
	struct vplat_map_limits lim;	/* the node's, read at open */
	uint64_t maps, pages;		/* held now, against lim */
};

struct xp_chan {
	struct vplat_chan base;
	struct xp *x;
	xenevtchn_handle *xce;
	evtchn_port_t local;
	int fd;
};

#define xp_of(p) ((struct xp *)(p))

/* Instance: xenstore connection (domid read by the caller). */
int  xp_new(const struct vplat_ops *ops, struct xp **out);
void xp_free(struct xp *x);

int  xp_fd(const struct vplat *p);
int  xp_process(struct vplat *p);

int  xp_key_write(struct vplat *p, const char *path, const char *val);
int  xp_key_read(struct vplat *p, const char *path, char *buf, size_t len);
int  xp_key_rm(struct vplat *p, const char *path);
int  xp_key_cas(struct vplat *p, const char *path, const char *old, const char *val);
int  xp_key_list(struct vplat *p, const char *path, char *buf, size_t len,
		 unsigned *count);
int  xp_key_perm(struct vplat *p, const char *path, uint32_t owner, uint32_t reader);
int  xp_tx_start(struct vplat *p);
int  xp_tx_end(struct vplat *p, int abort);
int  xp_watch(struct vplat *p, const char *path, vplat_watch_fn *cb, void *arg);
void xp_unwatch(struct vplat *p, const char *path, void *arg);

/* Channels: a fresh handle, non-blocking fd; the caller binds c->local. */
int  xp_chan_new(struct xp *x, const struct vplat_ops *ops, struct xp_chan **out);
void xp_chan_free(struct xp_chan *c);	/* no unbind: for failed binds */
int  xp_notify(struct vplat_chan *c);
int  xp_chan_fd(const struct vplat_chan *c);
int  xp_chan_ack(struct vplat_chan *c);
int  xp_chan_wait(struct vplat_chan *c, int timeout_ms);
void xp_chan_close(struct vplat_chan *c);

#endif /* VRDMA_XEN_COMMON_H */
