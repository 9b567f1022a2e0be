// SPDX-License-Identifier: MIT
/*
 * The seam's front door: pick an implementation at open, dispatch, and
 * the generic helpers built on the primitive calls (printf, u32 reads,
 * waiting for a key value).
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "vplat_impl.h"

/* Weak: each binary links only the roles it serves (see vplat_impl.h). */
extern const struct vplat_ops vplat_host_guest_ops __attribute__((weak, visibility("hidden")));
extern const struct vplat_ops vplat_host_dom0_ops __attribute__((weak, visibility("hidden")));
extern const struct vplat_ops vplat_xen_guest_ops __attribute__((weak, visibility("hidden")));
extern const struct vplat_ops vplat_xen_dom0_ops __attribute__((weak, visibility("hidden")));

static const struct {
	const char *kind;
	enum vplat_role role;
	const struct vplat_ops *ops;
} vplat_table[] = {
	{ "host", VPLAT_GUEST,     &vplat_host_guest_ops },
	{ "host", VPLAT_DOM0_ROLE, &vplat_host_dom0_ops },
	{ "xen",  VPLAT_GUEST,     &vplat_xen_guest_ops },
	{ "xen",  VPLAT_DOM0_ROLE, &vplat_xen_dom0_ops },
};

/* Does the first line-ish of `path` contain `word`?  0 if unreadable. */
static int vplat_file_has(const char *path, const char *word)
{
	char buf[256];
	size_t n;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, word) != NULL;
}

/*
 * No kind asked for: Xen when this domain has the devices the role needs
 * (a domU with gntalloc + evtchn; the control domain with gntdev), the
 * plain host otherwise.  Deliberately cheap checks: the open that follows
 * says clearly what is missing if they guessed wrong.
 */
static const char *vplat_auto_kind(enum vplat_role role)
{
	if (role == VPLAT_GUEST) {
		if ((access("/dev/xen/gntalloc", F_OK) == 0 &&
		     access("/dev/xen/evtchn", F_OK) == 0) ||
		    access("/proc/xen/capabilities", R_OK) == 0)
			return "xen";
		return "host";
	}
	if (vplat_file_has("/proc/xen/capabilities", "control_d") &&
	    access("/dev/xen/gntdev", F_OK) == 0)
		return "xen";
	return "host";
}

int vplat_open(const struct vplat_cfg *cfg, struct vplat **out)
{
	const char *kind = cfg->kind;
	int known = 0;
	size_t i;

	if (cfg->role != VPLAT_GUEST && cfg->role != VPLAT_DOM0_ROLE)
		return -EINVAL;
	if (!kind || !*kind)
		kind = getenv("VRDMA_PLATFORM");
	if (!kind || !*kind || strcmp(kind, "auto") == 0)
		kind = vplat_auto_kind(cfg->role);
	for (i = 0; i < sizeof(vplat_table) / sizeof(vplat_table[0]); i++) {
		if (strcmp(vplat_table[i].kind, kind) != 0)
			continue;
		known = 1;
		if (vplat_table[i].role == cfg->role && vplat_table[i].ops)
			return vplat_table[i].ops->open(cfg, out);
	}
	if (known)
		vlog_err("platform '%s': %s role not built into this program%s", kind,
			 cfg->role == VPLAT_GUEST ? "guest" : "dom0",
			 strcmp(kind, "xen") == 0 ? " (built without libxen-dev?)" : "");
	else
		vlog_err("unknown platform '%s' (VRDMA_PLATFORM): use 'host' or 'xen'", kind);
	return -EPROTONOSUPPORT;
}

void vplat_close(struct vplat *p)
{
	if (p)
		p->ops->close(p);
}

const char *vplat_kind(const struct vplat *p)
{
	return p->ops->kind;
}

uint32_t vplat_domid(const struct vplat *p)
{
	return p->domid;
}

int vplat_fd(const struct vplat *p)
{
	return p->ops->fd(p);
}

int vplat_process(struct vplat *p)
{
	return p->ops->process(p);
}

/* ---- grants and mappings ---- */

int vplat_share(struct vplat *p, uint32_t peer, uint32_t npages, int writable,
		struct vplat_share **out)
{
	if (!p->ops->share)
		return -EOPNOTSUPP;
	if (npages == 0)
		return -EINVAL;
	return p->ops->share(p, peer, npages, writable, out);
}

void *vplat_share_addr(const struct vplat_share *s)
{
	return s->addr;
}

const uint32_t *vplat_share_refs(const struct vplat_share *s)
{
	return s->refs;
}

uint32_t vplat_share_npages(const struct vplat_share *s)
{
	return s->npages;
}

void vplat_unshare(struct vplat_share *s)
{
	if (s)
		s->ops->unshare(s);
}

int vplat_map(struct vplat *p, uint32_t domid, const uint32_t *refs, uint32_t n,
	      int writable, struct vplat_map **out)
{
	if (!p->ops->map)
		return -EOPNOTSUPP;
	if (n == 0)
		return -EINVAL;
	return p->ops->map(p, domid, refs, n, writable, out);
}

void *vplat_map_addr(const struct vplat_map *m)
{
	return m->addr;
}

void vplat_unmap(struct vplat_map *m)
{
	if (m)
		m->ops->unmap(m);
}

void vplat_map_limits(const struct vplat *p, struct vplat_map_limits *l)
{
	l->maps = l->pages = UINT64_MAX;
	if (p->ops->map_limits)
		p->ops->map_limits(p, l);
}

uint32_t vplat_map_cost(const struct vplat_map *m)
{
	return m->cost;
}

int vplat_map_live(struct vplat_map *m, size_t off, struct vplat_chan *c)
{
	if (!m->ops->map_live)
		return -EOPNOTSUPP;
	return m->ops->map_live(m, off, c);
}

/* ---- channels ---- */

int vplat_chan_alloc(struct vplat *p, uint32_t peer, struct vplat_chan **out,
		     uint32_t *port)
{
	if (!p->ops->chan_alloc)
		return -EOPNOTSUPP;
	return p->ops->chan_alloc(p, peer, out, port);
}

int vplat_chan_bind(struct vplat *p, uint32_t domid, uint32_t port,
		    struct vplat_chan **out)
{
	if (!p->ops->chan_bind)
		return -EOPNOTSUPP;
	return p->ops->chan_bind(p, domid, port, out);
}

int vplat_notify(struct vplat_chan *c)
{
	return c->ops->notify(c);
}

int vplat_chan_fd(const struct vplat_chan *c)
{
	return c->ops->chan_fd(c);
}

int vplat_chan_ack(struct vplat_chan *c)
{
	return c->ops->chan_ack(c);
}

int vplat_chan_wait(struct vplat_chan *c, int timeout_ms)
{
	if (timeout_ms < 0)
		return -EINVAL;	/* every wait has a limit */
	return c->ops->chan_wait(c, timeout_ms);
}

void vplat_chan_close(struct vplat_chan *c)
{
	if (c)
		c->ops->chan_close(c);
}

/* ---- keys ---- */

/* Relative paths live in the own home, /local/domain/<domid>. */
static int vplat_abs(const struct vplat *p, const char *path, char *abs)
{
	int n;

	if (path[0] == '/')
		n = snprintf(abs, VPLAT_KEY_MAX, "%s", path);
	else
		n = snprintf(abs, VPLAT_KEY_MAX, "/local/domain/%u/%s", p->domid, path);
	if (n < 0 || n >= VPLAT_KEY_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int vplat_key_write(struct vplat *p, const char *path, const char *val)
{
	char abs[VPLAT_KEY_MAX];
	int r = vplat_abs(p, path, abs);

	if (r)
		return r;
	if (strnlen(val, VPLAT_VAL_MAX) >= VPLAT_VAL_MAX)
		return -E2BIG;
	return p->ops->key_write(p, abs, val);
}

int vplat_key_printf(struct vplat *p, const char *path, const char *fmt, ...)
{
	char val[VPLAT_VAL_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if (n >= (int)sizeof(val))
		return -E2BIG;
	return vplat_key_write(p, path, val);
}

int vplat_key_read(struct vplat *p, const char *path, char *buf, size_t len)
{
	char abs[VPLAT_KEY_MAX];
	int r = vplat_abs(p, path, abs);

	if (r)
		return r;
	if (len == 0)
		return -EINVAL;
	r = p->ops->key_read(p, abs, buf, len);
	return r < 0 ? r : 0;	/* the seam's contract: 0 or -errno */
}

int vplat_key_read_u32(struct vplat *p, const char *path, uint32_t *val)
{
	char buf[32];
	int r = vplat_key_read(p, path, buf, sizeof(buf));

	return r < 0 ? r : vplat_parse_u32(buf, val);
}

int vplat_key_rm(struct vplat *p, const char *path)
{
	char abs[VPLAT_KEY_MAX];
	int r = vplat_abs(p, path, abs);

	return r ? r : p->ops->key_rm(p, abs);
}

int vplat_key_cas(struct vplat *p, const char *path, const char *old, const char *val)
{
	char abs[VPLAT_KEY_MAX], cur[VPLAT_VAL_MAX];
	int r = vplat_abs(p, path, abs);

	if (r)
		return r;
	if (strnlen(val, VPLAT_VAL_MAX) >= VPLAT_VAL_MAX)
		return -E2BIG;
	if (p->ops->key_cas)
		return p->ops->key_cas(p, abs, old, val);
	r = p->ops->key_read(p, abs, cur, sizeof(cur));
	if (r < 0 && r != -ENOENT)
		return r;
	if (old ? r < 0 || strcmp(cur, old) : r >= 0)
		return -EEXIST;
	return p->ops->key_write(p, abs, val);
}

int vplat_key_list(struct vplat *p, const char *path, char *buf, size_t len,
		   unsigned *count)
{
	char abs[VPLAT_KEY_MAX];
	int r = vplat_abs(p, path, abs);

	if (r)
		return r;
	if (len == 0)
		return -E2BIG;
	return p->ops->key_list(p, abs, buf, len, count);
}

int vplat_key_perm(struct vplat *p, const char *path, uint32_t owner, uint32_t reader)
{
	char abs[VPLAT_KEY_MAX];
	int r = vplat_abs(p, path, abs);

	if (r)
		return r;
	return p->ops->key_perm ? p->ops->key_perm(p, abs, owner, reader) : 0;
}

/* Xen's special watch paths ("@...") are names, not keys: as they are. */
int vplat_watch(struct vplat *p, const char *path, vplat_watch_fn *cb, void *arg)
{
	char abs[VPLAT_KEY_MAX];
	int r;

	if (path[0] == '@')
		return p->ops->watch(p, path, cb, arg);
	r = vplat_abs(p, path, abs);
	return r ? r : p->ops->watch(p, abs, cb, arg);
}

void vplat_unwatch(struct vplat *p, const char *path, void *arg)
{
	char abs[VPLAT_KEY_MAX];

	if (path[0] == '@')
		p->ops->unwatch(p, path, arg);
	else if (vplat_abs(p, path, abs) == 0)
		p->ops->unwatch(p, abs, arg);
}

/* ---- toolstack duty ---- */

struct vplat_dev_key {
	int back;		/* in the backend dir, else the frontend dir */
	const char *key;
};

/* Per directory, the cross-link last: it is what the other side looks for. */
static const struct vplat_dev_key vplat_dev_keys[] = {
	{ 0, "backend-id" }, { 0, "state" }, { 0, "backend" },
	{ 1, "frontend-id" }, { 1, "online" }, { 1, "state" }, { 1, "frontend" },
};

static int vplat_dev_paths(const struct vplat *p, const char *type, uint32_t domid,
			   uint32_t devid, char *fe, char *be)
{
	int n = snprintf(fe, VPLAT_KEY_MAX, "/local/domain/%u/device/%s/%u", domid,
			 type, devid);
	int m = snprintf(be, VPLAT_KEY_MAX, "/local/domain/%u/backend/%s/%u/%u",
			 p->domid, type, domid, devid);

	if (!*type || strchr(type, '/') || domid == p->domid)
		return -EINVAL;
	if (n < 0 || m < 0 || n + 16 >= VPLAT_KEY_MAX || m + 16 >= VPLAT_KEY_MAX)
		return -ENAMETOOLONG;
	return 0;
}

#define VPLAT_TX_TRIES	16	/* transactions another writer got in between */

/*
 * The nodes of vplat_dev_attach, if domid still exists: its home's
 * `domid` key, written by the toolstack that made the domain (xl; the
 * plain host's at a guest's hello) and gone with the home when the domain
 * is destroyed.  Inside one transaction with the writes, so a domain
 * destroyed meanwhile makes the commit fail and the next try -ESRCH: the
 * nodes never outlive it (written after the home went, they would, for
 * nobody removes a dead domain's home twice).
 */
static int vplat_dev_make(struct vplat *p, const char *type, uint32_t domid,
			  const char *fe, const char *be)
{
	char k[VPLAT_KEY_MAX + 32], v[VPLAT_KEY_MAX], typedir[VPLAT_KEY_MAX];
	unsigned count = 0;
	size_t i;
	int r;

	snprintf(k, sizeof(k), "/local/domain/%u/domid", domid);
	r = vplat_key_read(p, k, v, sizeof(v));
	if (r == -ENOENT)
		return -ESRCH;
	if (r < 0)
		return r;
	/* A node (Xen) or anything below it (the host's flat store). */
	if (vplat_key_read(p, be, v, sizeof(v)) == 0 ||
	    (vplat_key_list(p, be, v, sizeof(v), &count) != -ENOENT && count))
		return -EEXIST;
	snprintf(typedir, sizeof(typedir), "/local/domain/%u/device/%s", domid, type);
	/* Directories first, with their owners: keys created below inherit. */
	r = vplat_key_write(p, fe, "");
	if (!r)
		r = vplat_key_perm(p, typedir, domid, p->domid);
	if (!r)
		r = vplat_key_perm(p, fe, domid, p->domid);
	if (!r)
		r = vplat_key_write(p, be, "");
	if (!r)
		r = vplat_key_perm(p, be, p->domid, domid);
	for (i = 0; !r && i < sizeof(vplat_dev_keys) / sizeof(vplat_dev_keys[0]); i++) {
		const struct vplat_dev_key *dk = &vplat_dev_keys[i];

		snprintf(k, sizeof(k), "%s/%s", dk->back ? be : fe, dk->key);
		if (!strcmp(dk->key, "backend"))
			r = vplat_key_write(p, k, be);
		else if (!strcmp(dk->key, "frontend"))
			r = vplat_key_write(p, k, fe);
		else if (!strcmp(dk->key, "backend-id"))
			r = vplat_key_printf(p, k, "%u", p->domid);
		else if (!strcmp(dk->key, "frontend-id"))
			r = vplat_key_printf(p, k, "%u", domid);
		else
			r = vplat_key_write(p, k, "1");	/* online, state Initialising */
		/* Explicit too: a node that existed keeps its old owner otherwise. */
		if (!r)
			r = dk->back ? vplat_key_perm(p, k, p->domid, domid) :
				       vplat_key_perm(p, k, domid, p->domid);
	}
	if (r && !p->ops->tx_start) {	/* a transaction discards them by itself */
		vplat_key_rm(p, be);
		vplat_key_rm(p, fe);
	}
	return r;
}

int vplat_dev_attach(struct vplat *p, const char *type, uint32_t domid, uint32_t devid)
{
	char fe[VPLAT_KEY_MAX], be[VPLAT_KEY_MAX];
	int r = vplat_dev_paths(p, type, domid, devid, fe, be), tries, e;

	if (r)
		return r;
	if (!p->ops->tx_start)
		r = vplat_dev_make(p, type, domid, fe, be);
	for (tries = 0; p->ops->tx_start && tries < VPLAT_TX_TRIES; tries++) {
		r = p->ops->tx_start(p);
		if (r)
			break;
		r = vplat_dev_make(p, type, domid, fe, be);
		e = p->ops->tx_end(p, r != 0);
		if (!r)
			r = e;
		if (r != -EAGAIN)
			break;
	}
	/* -EAGAIN: every try conflicted (a guest writing its own keys can do
	 * that); the caller tries again later, backing off, and says so. */
	if (r && r != -EEXIST && r != -ESRCH && r != -EAGAIN)
		vlog_err("attach %s %u/%u: %s", type, domid, devid, strerror(-r));
	return r;
}

int vplat_dev_detach(struct vplat *p, const char *type, uint32_t domid, uint32_t devid)
{
	char fe[VPLAT_KEY_MAX], be[VPLAT_KEY_MAX], list[64];
	unsigned count = 0;
	int r = vplat_dev_paths(p, type, domid, devid, fe, be), rb, rf;

	if (r)
		return r;
	rb = vplat_key_rm(p, be);
	rf = vplat_key_rm(p, fe);
	/* The per-domain backend dir goes with its last device. */
	snprintf(be, sizeof(be), "/local/domain/%u/backend/%s/%u", p->domid, type, domid);
	r = vplat_key_list(p, be, list, sizeof(list), &count);
	if ((r == 0 && count == 0) || r == -ENOENT)
		vplat_key_rm(p, be);
	if (rb == -ENOENT && rf == -ENOENT)
		return -ENOENT;
	if (rb && rb != -ENOENT)
		return rb;
	return rf == -ENOENT ? 0 : rf;
}

/* The watch only makes vplat_fd readable; the loop re-reads the key. */
static void vplat_kw_cb(struct vplat *p, const char *path, void *arg)
{
	(void)p;
	(void)path;
	(void)arg;
}

int vplat_key_wait(struct vplat *p, const char *path, const char *want,
		   const char *const *stop, int timeout_ms)
{
	int64_t deadline = vplat_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	char kw;	/* identifies our watch for vplat_unwatch */
	char val[VPLAT_VAL_MAX];
	int r;

	if (timeout_ms < 0)
		return -EINVAL;
	r = vplat_watch(p, path, vplat_kw_cb, &kw);
	if (r)
		return r;
	for (;;) {
		struct pollfd pfd = { .fd = vplat_fd(p), .events = POLLIN };
		int64_t left;
		size_t i;

		r = vplat_key_read(p, path, val, sizeof(val));
		if (r >= 0 && strcmp(val, want) == 0) {
			r = 0;
			break;
		}
		if (r >= 0 && stop) {
			for (i = 0; stop[i]; i++)
				if (strcmp(val, stop[i]) == 0)
					break;
			if (stop[i]) {
				r = -ECONNRESET;
				break;
			}
		}
		if (r < 0 && r != -ENOENT)
			break;
		left = deadline - vplat_now_ms();
		if (left <= 0) {
			r = -ETIMEDOUT;
			break;
		}
		r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		r = vplat_process(p);
		if (r < 0)
			break;
	}
	vplat_unwatch(p, path, &kw);
	return r;
}

int64_t vplat_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
