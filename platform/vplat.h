/* SPDX-License-Identifier: MIT */
/*
 * The platform seam: the only place that knows whether vrdma runs on Xen
 * or on a plain Linux host.  Everything above it (frontend, backend,
 * vrdmad) speaks Xen's vocabulary: domains, grant references, event
 * channels, xenstore keys.
 *
 *   Xen (platform/xen_*.c)              plain host (platform/host_*.c)
 *   gntshr/gntalloc grants              memfd pages sent over a Unix socket
 *   gnttab/gntdev mappings              mmap of the received memfd
 *   event channels                      a pair of eventfds
 *   xenstore                            a key store served by vrdmad
 *
 * Calls return 0 or -errno.  Nothing here blocks without a time limit.
 * Not thread-safe: one handle per thread, or the caller serialises.
 */
#ifndef VRDMA_VPLAT_H
#define VRDMA_VPLAT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define VPLAT_DOM0		0u
#define VPLAT_KEY_MAX		256	/* path length */
#define VPLAT_VAL_MAX		1024	/* value length */

/*
 * Tenants (docs/tenants.md): who a guest belongs to, for quotas summed
 * over guests.  The plain host's toolstack writes `tenant` ("uid<N>") in
 * the guest's backend dir, where the guest cannot write; without it the
 * tenant is the domain ("dom<N>").  Limits are dom0-only keys
 * VPLAT_TENANT_ROOT/<tenant>/<limit>, VPLAT_TENANT_ROOT/default/<limit>
 * for every tenant without its own; absent: the built-in defaults.
 */
#define VPLAT_TENANT_ROOT	"/local/domain/0/vrdma-tenants"
#define VPLAT_TENANT_NAME	32	/* with its NUL */
#define VPLAT_TENANT_GUESTS	64	/* connected devices: a quarter of the
					 * plain host's 256 guest slots */

enum vplat_role {
	VPLAT_GUEST = 1,	/* frontend: grants pages, allocates channels */
	VPLAT_DOM0_ROLE = 2,	/* backend: maps grants, binds channels */
};

struct vplat;			/* one open platform instance */
struct vplat_share;		/* pages this side granted */
struct vplat_map;		/* peer pages this side mapped */
struct vplat_chan;		/* notification channel */

struct vplat_cfg {
	enum vplat_role role;
	const char *kind;	/* "host", "xen" or NULL = env VRDMA_PLATFORM, else
				 * auto: "xen" when the Xen devices are there */
	const char *run_dir;	/* host: socket dir; NULL = env VRDMA_RUN_DIR or /run/vrdma */
	/* dom0, host: a tenant's limit on guests where no key sets one
	 * (vrdmad.conf [limits]); NULL = VPLAT_TENANT_GUESTS. */
	const unsigned *tenant_guests;
};

/* Open / close.  A guest's open connects to its dom0 (host: vrdmad). */
int  vplat_open(const struct vplat_cfg *cfg, struct vplat **out);
void vplat_close(struct vplat *p);
const char *vplat_kind(const struct vplat *p);
uint32_t vplat_domid(const struct vplat *p);	/* own domain id */

/*
 * One pollable fd for key watches and (dom0) guest arrivals/departures;
 * when readable, call vplat_process(), which runs watch callbacks.
 */
int  vplat_fd(const struct vplat *p);
int  vplat_process(struct vplat *p);

/* ---- grants (guest side) ---- */
/* Allocate npages zeroed pages shared with domain `peer`; refs[i] names
 * page i.  Refs are usable by the peer when this returns. */
int  vplat_share(struct vplat *p, uint32_t peer, uint32_t npages, int writable,
		 struct vplat_share **out);
void *vplat_share_addr(const struct vplat_share *s);
const uint32_t *vplat_share_refs(const struct vplat_share *s);
uint32_t vplat_share_npages(const struct vplat_share *s);
void vplat_unshare(struct vplat_share *s);
/*
 * Registering memory the process allocated itself (libvrdma/pin.c)
 * (platform/move_guest.c, one implementation: both platforms map shares
 * with mmap).  vplat_move_pages moves the len bytes of pages mapped at
 * `from` onto `to`, replacing whatever was mapped there, with the raw
 * mremap system call (no library's hook on mremap() sees it).  0 once the
 * pages are at `to`; else -errno, or -EFAULT if they landed anywhere else:
 * then they are moved back to `from` (failing that, unmapped and `from`
 * kept reserved), and `to` is as it was.  All page aligned (-EINVAL).
 * vplat_share_move moves the share's mapping so; vplat_share_addr() is
 * addr from then on.
 */
int  vplat_move_pages(void *from, void *to, size_t len);
int  vplat_share_move(struct vplat_share *s, void *addr);
/* Another mapping was moved over the share's: unshare must not unmap it. */
void vplat_share_disown(struct vplat_share *s);

/* ---- mappings (dom0 side) ---- */
/* Map the peer's pages refs[0..n) contiguously.  Fails whole (-EFAULT for
 * a bad ref, -ENOMEM past limits); never a partial mapping. */
int  vplat_map(struct vplat *p, uint32_t domid, const uint32_t *refs, uint32_t n,
	       int writable, struct vplat_map **out);
void *vplat_map_addr(const struct vplat_map *m);
void vplat_unmap(struct vplat_map *m);
/*
 * What dom0's mappings of guests' pages spend of the node (docs/tenants.md,
 * "Node tables"): kernel mappings (VMAs, which vm.max_map_count bounds for
 * the whole of vrdmad) and mapped pages (Xen: entries of dom0's maptrack
 * table, which netback and blkback share).  vplat_map_limits gives the
 * node's budget for all guests together, UINT64_MAX where there is no such
 * table (the plain host maps the guests' own memfds: no page table of
 * dom0's fills).  vplat_map_cost is what one mapping takes of `maps`: one
 * per run of contiguous refs of one share on the plain host, 1 on Xen
 * (gntdev maps any refs into one VMA).  The platform refuses a map past
 * its budget itself (-ENOMEM); the backend shares the budget out.
 */
struct vplat_map_limits {
	uint64_t maps;
	uint64_t pages;
};
void vplat_map_limits(const struct vplat *p, struct vplat_map_limits *l);
uint32_t vplat_map_cost(const struct vplat_map *m);
/*
 * Our liveness, seen by the peer (docs/wire.md, dom0_live): once armed,
 * when this process lets go of the mapping -- vplat_unmap, exit, a crash,
 * SIGKILL -- the byte at offset `off` of it becomes 0 and the peer is
 * notified on `c`.  The caller sets the byte afterwards.  Xen: gntdev's
 * unmap-notify, done by the dom0 kernel.  Plain host: the guest's
 * platform clears the byte in the page 0 of its device area itself when
 * vrdmad's socket hangs up; vplat_unmap clears it here.  Writable
 * mappings only (-EINVAL); -EOPNOTSUPP where nothing can be armed.
 */
int  vplat_map_live(struct vplat_map *m, size_t off, struct vplat_chan *c);

/* ---- notification channels ---- */
/* Guest: allocate an unbound channel to `peer`, *port to publish. */
int  vplat_chan_alloc(struct vplat *p, uint32_t peer, struct vplat_chan **out,
		      uint32_t *port);
/* dom0: bind to the guest's published port. */
int  vplat_chan_bind(struct vplat *p, uint32_t domid, uint32_t port,
		     struct vplat_chan **out);
int  vplat_notify(struct vplat_chan *c);
int  vplat_chan_fd(const struct vplat_chan *c);	/* readable when notified */
/* Consume pending notifications; 1 if there were any, 0 if none. */
int  vplat_chan_ack(struct vplat_chan *c);
/* Wait up to timeout_ms (-1 is not allowed) for a notification: 0 when
 * notified (and acked), -ETIMEDOUT, or -EPIPE if the peer is gone. */
int  vplat_chan_wait(struct vplat_chan *c, int timeout_ms);
void vplat_chan_close(struct vplat_chan *c);

/* ---- control keys (xenstore) ----
 * Paths not starting with '/' are relative to the own domain's home,
 * /local/domain/<domid>.  A guest may write only below its home and read
 * its home and its backend directory. */
int  vplat_key_write(struct vplat *p, const char *path, const char *val);
int  vplat_key_printf(struct vplat *p, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Read into buf (NUL-terminated); -ENOENT if absent. */
int  vplat_key_read(struct vplat *p, const char *path, char *buf, size_t len);
int  vplat_key_read_u32(struct vplat *p, const char *path, uint32_t *val);
/* vplat_key_read_u32's parser, which the tests' stub platform shares:
 * 0, or -EINVAL for anything but decimal digits up to UINT32_MAX
 * (docs/wire.md; "010" is ten, "0x10" nothing, as xenbus reads them). */
static inline int vplat_parse_u32(const char *s, uint32_t *val)
{
	unsigned long v;
	char *end;

	/* strtoul accepts leading space and '-'; a key from a peer must be plain digits. */
	if (s[0] < '0' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return -EINVAL;
	*val = (uint32_t)v;
	return 0;
}
int  vplat_key_rm(struct vplat *p, const char *path);	/* subtree */
/*
 * Compare and swap: write val only if the key holds old (old NULL: only
 * if it is absent), atomically against other writers (Xen: a xenstore
 * transaction).  0, -EEXIST when the key held something else, -errno.
 * The plain host has one writer per home and compares without a lock.
 */
int  vplat_key_cas(struct vplat *p, const char *path, const char *old, const char *val);
/* Child names of path as one buffer "a\0b\0\0"; *count set. */
int  vplat_key_list(struct vplat *p, const char *path, char *buf, size_t len,
		    unsigned *count);
/*
 * Toolstack duty (dom0): path is owned by domain `owner` (who may write
 * it), domain `reader` may read it, nobody else may (xenstore
 * permissions; children created later inherit them).  The plain host
 * enforces its fixed path rules instead and accepts this as a no-op.
 */
int  vplat_key_perm(struct vplat *p, const char *path, uint32_t owner,
		    uint32_t reader);
/*
 * Toolstack duty (dom0), the way xl adds a vif: create device `devid` of
 * `type` for domain `domid`, backed by this domain --
 *   /local/domain/<domid>/device/<type>/<devid>   owned by the domU, we read:
 *       backend, backend-id, state = 1
 *   /local/domain/<self>/backend/<type>/<domid>/<devid>   ours, domU reads:
 *       frontend, frontend-id, online = 1, state = 1
 * -EEXIST if the backend directory exists, -ESRCH if the domain does not
 * (its home's `domid` key, which the toolstack that made it wrote): the
 * check and the writes are one xenstore transaction, so the nodes never
 * outlive a domain destroyed meanwhile; -EAGAIN when every one of its
 * few tries conflicted with another writer (not logged: try again later).
 * Detach removes both (backend
 * first, so the backend drops the guest before its frontend vanishes);
 * -ENOENT if neither existed.
 */
int  vplat_dev_attach(struct vplat *p, const char *type, uint32_t domid,
		      uint32_t devid);
int  vplat_dev_detach(struct vplat *p, const char *type, uint32_t domid,
		      uint32_t devid);

/* Watch path and its subtree: cb runs from vplat_process() once after
 * registration and after every change (like xenstore watches).  dom0 may
 * also watch Xen's two special paths: a domain was introduced to xenstore
 * (xl create) / released (it shut down or died); cb gets no more than
 * that, the caller lists /local/domain.  The plain host has no domains to
 * introduce: -EOPNOTSUPP there. */
#define VPLAT_WATCH_INTRODUCE	"@introduceDomain"
#define VPLAT_WATCH_RELEASE	"@releaseDomain"
typedef void vplat_watch_fn(struct vplat *p, const char *path, void *arg);
int  vplat_watch(struct vplat *p, const char *path, vplat_watch_fn *cb, void *arg);
void vplat_unwatch(struct vplat *p, const char *path, void *arg);

/* Wait until key == want (or until it holds one of the "stop" values if
 * stop != NULL, returned as -ECONNRESET), up to timeout_ms. */
int  vplat_key_wait(struct vplat *p, const char *path, const char *want,
		    const char *const *stop, int timeout_ms);

/* Monotonic milliseconds, for deadlines. */
int64_t vplat_now_ms(void);

#endif /* VRDMA_VPLAT_H */
