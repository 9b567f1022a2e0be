// SPDX-License-Identifier: MIT
/*
 * Attach policy (attach.h): parse, match, and the watches that apply it.
 *
 * A @introduceDomain or @releaseDomain event only marks the domain list
 * dirty; vd_auto_run, once per event-loop pass, lists /local/domain:
 * domains not seen before are decided, domains gone are forgotten (their
 * devices are the backend's business: it tears a guest down when its
 * frontend dir goes).  Domains are indexed by domid (a table of 256-domid
 * chunks), so a listing costs one lookup a domain, and one read of its
 * `vm` key (its identity: a domid may be reused between two listings).
 * libxl writes a domain's home, `vm` and `name` first
 * (libxl__domain_make) and its `domid` last (libxl__build_post, just
 * before it introduces the domain): a domain listed in between (another
 * domain's event, a vrdmad starting) is not built yet and waits,
 * undecided, for a later listing.  A name still missing is looked for
 * again on each listing and tick, for VD_ATTACH_NAME_WAIT_MS.  Under
 * `marker`, a domain whose marker is not "1" gets a watch on the marker
 * key until it is, or the domain goes.  xenstore too busy to commit an
 * attach, and a listing that failed, are tried again from the tick.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backend/vout.h"
#include "attach.h"
#include "log.h"
#include "vplat.h"

#define VD_AUTO_LIST_MIN	16384		/* /local/domain listing, bytes */
#define VD_AUTO_LIST_MAX	(256u << 10)	/* 32752 domids of 5 digits fit */
#define VD_AUTO_DOMID_MAX	0x7ff0u		/* DOMID_FIRST_RESERVED */
#define VD_AUTO_NAME		64		/* shown, with its NUL */
#define VD_AUTO_VM		64		/* libxl's /vm/<uuid>[-N], with its NUL */
#define VD_AUTO_BUSY_MIN_MS	100		/* xenstore busy: first retry */
#define VD_AUTO_BUSY_MAX_MS	5000		/* ... doubling up to */
#define VD_AUTO_LIST_RETRY_MS	1000		/* a failed listing, from the tick */
#define VD_AUTO_WARN_MS		10000		/* one warning line per kind */
#define VD_AUTO_CHUNK		256		/* domids per index chunk */
#define VD_AUTO_CHUNKS		((VD_AUTO_DOMID_MAX + VD_AUTO_CHUNK - 1) / VD_AUTO_CHUNK)

enum vd_dom_state {
	VD_DOM_WAIT,		/* domid, name or marker not there yet */
	VD_DOM_ATTACHED,	/* device 0 attached: by us, or by hand */
	VD_DOM_HAD,		/* it had device 0 already (vrdmactl, an earlier vrdmad) */
	VD_DOM_REFUSED,		/* attach failed: logged, not retried */
	VD_DOM_NO,		/* the policy says no */
	VD_DOM_NONAME,		/* no name within VD_ATTACH_NAME_WAIT_MS */
	VD_DOM_DETACHED,	/* the operator detached device 0 (now or kept) */
};

static const char *const vd_dom_states[] = {
	[VD_DOM_WAIT] = "waiting", [VD_DOM_ATTACHED] = "attached",
	[VD_DOM_HAD] = "had-device", [VD_DOM_REFUSED] = "refused",
	[VD_DOM_NO] = "not-matched", [VD_DOM_NONAME] = "no-name",
	[VD_DOM_DETACHED] = "detached",
};

struct vd_dom {
	struct vd_auto *a;	/* for the marker watch's callback */
	uint32_t domid;
	enum vd_dom_state state;
	uint32_t gen;		/* the last listing that had it */
	bool marker_watch;
	bool watch_failed;	/* not tried again before introduce event... */
	uint32_t watch_failed_intro;	/* ...number this + 1 */
	int64_t since_ms;	/* first seen, or built */
	int64_t busy_ms;	/* xenstore was busy: tried again from then on */
	unsigned busy_wait_ms;	/* the last wait, doubled at each busy try */
	char name[VD_AUTO_NAME];
	char vm[VD_AUTO_VM];	/* its identity: the domid may be reused */
	bool vm_known;		/* vm read (a failed read is no identity) */
};

struct vd_chunk {
	unsigned n;		/* domains in it: freed at 0 */
	struct vd_dom *d[VD_AUTO_CHUNK];
};

struct vd_auto {
	struct vd_attach pol;
	struct vplat *p;
	struct vd_attach_ops ops;
	void *arg;
	struct vd_chunk *idx[VD_AUTO_CHUNKS];	/* by domid */
	unsigned ndoms;
	uint32_t gen;		/* listings so far */
	uint32_t intro;		/* @introduceDomain events so far */
	bool dirty;		/* a domain event since the last listing */
	bool released;		/* a @releaseDomain since then: a domid may
				 * have been reused, identities read again */
	int64_t list_ms;	/* a failed listing: not again before */
	char *list;
	size_t list_len;
	unsigned watches;	/* 0, or 2 while introduce + release are watched */
	char pol_str[VD_ATTACH_GLOB_MAX + 8];
	struct vd_auto_lim {
		bool any;
		int64_t ms;	/* the last line logged */
		unsigned quiet;	/* not logged since */
	} lim_list, lim_watch;
};

/* ---- the policy ---- */

int vd_attach_policy_parse(const char *s, struct vd_attach *out, const char **why)
{
	struct vd_attach a = { .kind = VD_ATTACH_NONE };
	const char *w = NULL, *g;

	if (!strcmp(s, "none")) {
		a.kind = VD_ATTACH_NONE;
	} else if (!strcmp(s, "all")) {
		a.kind = VD_ATTACH_ALL;
	} else if (!strcmp(s, "marker")) {
		a.kind = VD_ATTACH_MARKER;
	} else if (!strncmp(s, "name:", 5)) {
		a.kind = VD_ATTACH_NAME;
		g = s + 5;
		if (!*g)
			w = "name: needs a pattern (name:GLOB, e.g. name:rdma-*)";
		else if (strlen(g) >= sizeof(a.glob))
			w = "the name pattern is longer than 127 bytes";
		for (; !w && *g; g++)
			if ((unsigned char)*g < 0x20 || *g == 0x7f || *g == '/')
				w = "the name pattern has a control character or '/'";
		if (!w)
			snprintf(a.glob, sizeof(a.glob), "%s", s + 5);
	} else {
		w = "not one of " VD_ATTACH_VALUES;
	}
	if (w) {
		if (why)
			*why = w;
		return -EINVAL;
	}
	*out = a;
	return 0;
}

const char *vd_attach_policy_str(const struct vd_attach *a, char *buf, size_t len)
{
	switch (a->kind) {
	case VD_ATTACH_ALL:
		snprintf(buf, len, "all");
		break;
	case VD_ATTACH_NAME:
		snprintf(buf, len, "name:%s", a->glob);
		break;
	case VD_ATTACH_MARKER:
		snprintf(buf, len, "marker");
		break;
	default:
		snprintf(buf, len, "none");
		break;
	}
	return buf;
}

int vd_attach_match(const struct vd_attach *a, uint32_t domid, const char *name,
		    const char *marker)
{
	if (domid == VPLAT_DOM0)
		return 0;
	switch (a->kind) {
	case VD_ATTACH_ALL:
		return 1;
	case VD_ATTACH_NAME:
		if (!name)
			return -EAGAIN;
		return fnmatch(a->glob, name, 0) == 0;
	case VD_ATTACH_MARKER:
		/* Not final: dom0 may write "1" later (xl create -p, then the
		 * marker, then xl unpause; or a value first and "1" after). */
		return marker && !strcmp(marker, "1") ? 1 : -EAGAIN;
	default:
		return 0;
	}
}

/* ---- the domain index ---- */

static struct vd_dom *vd_auto_find(const struct vd_auto *a, uint32_t domid)
{
	const struct vd_chunk *c;

	if (domid >= VD_AUTO_DOMID_MAX)
		return NULL;
	c = a->idx[domid / VD_AUTO_CHUNK];
	return c ? c->d[domid % VD_AUTO_CHUNK] : NULL;
}

/* The first domain from domid *pos on, *pos moved past it; NULL at the end. */
static struct vd_dom *vd_auto_next(const struct vd_auto *a, uint32_t *pos)
{
	const struct vd_chunk *c;
	uint32_t i;

	for (i = *pos; i < VD_AUTO_DOMID_MAX; i++) {
		c = a->idx[i / VD_AUTO_CHUNK];
		if (!c) {
			i |= VD_AUTO_CHUNK - 1;		/* the next chunk */
			continue;
		}
		if (c->d[i % VD_AUTO_CHUNK]) {
			*pos = i + 1;
			return c->d[i % VD_AUTO_CHUNK];
		}
	}
	*pos = VD_AUTO_DOMID_MAX;
	return NULL;
}

static struct vd_dom *vd_auto_add(struct vd_auto *a, uint32_t domid, int64_t now)
{
	struct vd_chunk **pc = &a->idx[domid / VD_AUTO_CHUNK];
	struct vd_dom *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	if (!*pc) {
		*pc = calloc(1, sizeof(**pc));
		if (!*pc) {
			free(d);
			return NULL;
		}
	}
	d->a = a;
	d->domid = domid;
	d->state = VD_DOM_WAIT;
	d->since_ms = now;
	snprintf(d->name, sizeof(d->name), "?");
	(*pc)->d[domid % VD_AUTO_CHUNK] = d;
	(*pc)->n++;
	a->ndoms++;
	return d;
}

static void vd_auto_unwatch_marker(struct vd_auto *a, struct vd_dom *d);

static void vd_auto_del(struct vd_auto *a, struct vd_dom *d)
{
	struct vd_chunk **pc = &a->idx[d->domid / VD_AUTO_CHUNK];

	vd_auto_unwatch_marker(a, d);
	(*pc)->d[d->domid % VD_AUTO_CHUNK] = NULL;
	if (!--(*pc)->n) {
		free(*pc);
		*pc = NULL;
	}
	a->ndoms--;
	free(d);
}

/* ---- applying it ---- */

/* A warning that may come for every listing (xenstore refusing): one
 * line per VD_AUTO_WARN_MS, the rest at debug level and counted. */
static void vd_auto_warn(struct vd_auto_lim *l, int64_t now, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void vd_auto_warn(struct vd_auto_lim *l, int64_t now, const char *fmt, ...)
{
	char buf[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (l->any && now - l->ms < VD_AUTO_WARN_MS) {
		l->quiet++;
		vlog_dbg("%s", buf);
		return;
	}
	if (l->quiet)
		vlog_warn("%s (%u such lines not logged)", buf, l->quiet);
	else
		vlog_warn("%s", buf);
	l->any = true;
	l->ms = now;
	l->quiet = 0;
}

static void vd_auto_marker_path(const struct vd_dom *d, char *buf, size_t len)
{
	snprintf(buf, len, "/local/domain/%u/" VD_ATTACH_MARKER_KEY, d->domid);
}

static void vd_auto_unwatch_marker(struct vd_auto *a, struct vd_dom *d)
{
	char path[VPLAT_KEY_MAX];

	if (!d->marker_watch)
		return;
	vd_auto_marker_path(d, path, sizeof(path));
	vplat_unwatch(a->p, path, d);
	d->marker_watch = false;
}

static void vd_auto_attach(struct vd_auto *a, struct vd_dom *d, int64_t now)
{
	struct vout o = { 0 };
	int err;

	err = a->ops.attach(a->arg, d->domid, 0, &o);
	if (!err) {
		d->state = VD_DOM_ATTACHED;
		vlog_info("attach: domain %u (%s) device 0 attached (policy %s)", d->domid,
			  d->name, a->pol_str);
	} else if (err == -EEXIST) {
		d->state = VD_DOM_HAD;
		vlog_info("attach: domain %u (%s) has device 0 already", d->domid, d->name);
	} else if (err == -EAGAIN) {
		/* Every commit conflicted (a busy or hostile guest writing its
		 * own keys does that to oxenstored): not its fault, so no
		 * refusal; waiting, tried again from the tick, backing off. */
		d->busy_wait_ms = !d->busy_wait_ms ? VD_AUTO_BUSY_MIN_MS :
				  d->busy_wait_ms >= VD_AUTO_BUSY_MAX_MS / 2 ?
				  VD_AUTO_BUSY_MAX_MS : d->busy_wait_ms * 2;
		d->busy_ms = now + d->busy_wait_ms;
		if (d->busy_wait_ms == VD_AUTO_BUSY_MIN_MS)
			vlog_info("attach: domain %u (%s): xenstore busy, tried again from the "
				  "tick (up to every %d s)", d->domid, d->name,
				  VD_AUTO_BUSY_MAX_MS / 1000);
	} else if (err == -ESRCH) {
		/* Its `domid` went since vd_auto_try read it: destroyed, and
		 * nothing was written.  Undecided: the release event's listing
		 * forgets it, and a domain still there is tried again. */
		vlog_dbg("attach: domain %u (%s) has no domid now: not attached yet",
			 d->domid, d->name);
	} else {
		d->state = VD_DOM_REFUSED;
		vlog_warn("attach: domain %u (%s) device 0 not attached: %s (not retried; "
			  "vrdmactl attach %u)", d->domid, d->name,
			  o.err ? o.msg : strerror(-err), d->domid);
	}
	vout_fini(&o);
}

static void vd_auto_marker_cb(struct vplat *p, const char *path, void *arg);

/* Decide d if its name (name:) or marker (marker) is there by now. */
static void vd_auto_try(struct vd_auto *a, struct vd_dom *d, int64_t now)
{
	char path[VPLAT_KEY_MAX], name[VPLAT_VAL_MAX], marker[16];
	const char *nm = NULL, *mk = NULL;
	int r;

	if (d->state != VD_DOM_WAIT || (d->busy_ms && now < d->busy_ms))
		return;
	d->busy_ms = 0;		/* this is its try: set again if still busy */
	/* Not built yet (libxl writes `domid` last): its introduce event
	 * lists it again.  The name wait starts once it is built. */
	snprintf(path, sizeof(path), "/local/domain/%u/domid", d->domid);
	if (vplat_key_read(a->p, path, marker, sizeof(marker))) {
		d->since_ms = now;
		return;
	}
	snprintf(path, sizeof(path), "/local/domain/%u/name", d->domid);
	if (!vplat_key_read(a->p, path, name, sizeof(name))) {
		size_t n = strnlen(name, sizeof(d->name) - 1);	/* shown cut */

		nm = name;
		memcpy(d->name, name, n);
		d->name[n] = '\0';
	}
	/* A device model's stub domain (it has a `target`) and the xenstore
	 * domain are parts of the toolstack, not guests: no device, whatever
	 * the policy (vrdmactl attach still can). */
	snprintf(path, sizeof(path), "/local/domain/%u/target", d->domid);
	if (!vplat_key_read(a->p, path, marker, sizeof(marker)) ||
	    (nm && !strcmp(nm, "Xenstore"))) {
		vd_auto_unwatch_marker(a, d);
		d->state = VD_DOM_NO;
		vlog_info("attach: domain %u (%s) not attached: a stub or xenstore domain",
			  d->domid, d->name);
		return;
	}
	/* The operator's detach stands across restarts, by the VM's name. */
	if (nm && a->ops.detached && a->ops.detached(a->arg, nm)) {
		vd_auto_unwatch_marker(a, d);
		d->state = VD_DOM_DETACHED;
		vlog_info("attach: domain %u (%s) not attached: the operator detached VM "
			  "'%s' (vrdmactl attach %u undoes it)", d->domid, d->name, nm, d->domid);
		return;
	}
	if (a->pol.kind == VD_ATTACH_MARKER) {
		vd_auto_marker_path(d, path, sizeof(path));
		if (!vplat_key_read(a->p, path, marker, sizeof(marker)))
			mk = marker;
	}
	r = vd_attach_match(&a->pol, d->domid, nm, mk);
	if (r == -EAGAIN && a->pol.kind == VD_ATTACH_MARKER) {
		/* No time limit: nothing waits, the watch tells us.  One that
		 * failed is tried again at the next domain introduced, not at
		 * every listing (each listing reads the marker meanwhile). */
		if (!d->marker_watch &&
		    !(d->watch_failed && d->watch_failed_intro == a->intro)) {
			r = vplat_watch(a->p, path, vd_auto_marker_cb, d);
			d->marker_watch = !r;
			d->watch_failed = r != 0;
			d->watch_failed_intro = a->intro;
			if (r)
				vd_auto_warn(&a->lim_watch, now, "attach: cannot watch %s: %s "
					     "(tried again when a domain is introduced)", path,
					     strerror(-r));
		}
		return;
	}
	if (r == -EAGAIN) {
		if (now - d->since_ms < VD_ATTACH_NAME_WAIT_MS)
			return;		/* the next listing or tick looks again */
		d->state = VD_DOM_NONAME;
		vlog_warn("attach: domain %u has no name after %d s: not attached (vrdmactl "
			  "attach %u)", d->domid, VD_ATTACH_NAME_WAIT_MS / 1000, d->domid);
		return;
	}
	vd_auto_unwatch_marker(a, d);
	if (r) {
		vd_auto_attach(a, d, now);
		return;
	}
	d->state = VD_DOM_NO;
	vlog_info("attach: domain %u (%s) not attached: policy %s", d->domid, d->name,
		  a->pol_str);
}

static void vd_auto_marker_cb(struct vplat *p, const char *path, void *arg)
{
	struct vd_dom *d = arg;

	(void)p;
	(void)path;
	vd_auto_try(d->a, d, vplat_now_ms());
}

/* /local/domain into a->list; its entry count, or -errno. */
static int vd_auto_list(struct vd_auto *a)
{
	unsigned count = 0;
	size_t len;
	char *b;
	int r;

	for (;;) {
		r = vplat_key_list(a->p, "/local/domain", a->list, a->list_len, &count);
		if ((r != -E2BIG && r != -ERANGE) || a->list_len >= VD_AUTO_LIST_MAX)
			return r ? r : (int)count;
		len = a->list_len * 2;
		b = realloc(a->list, len);
		if (!b)
			return -ENOMEM;
		a->list = b;
		a->list_len = len;
	}
}

/*
 * Domain domid's identity into vm: its `vm` key (libxl writes /vm/<uuid>
 * with its name, before its domid); -errno without one or when it cannot
 * be read now (then it is not compared: a domain with none is never
 * called replaced).  A VM made again with the same
 * uuid and domid between two listings is not told apart: it is the same
 * VM, and a decision about it stands.
 */
static int vd_auto_ident(struct vd_auto *a, uint32_t domid, char *vm)
{
	char path[64], v[VPLAT_VAL_MAX];
	size_t n;
	int r;

	snprintf(path, sizeof(path), "/local/domain/%u/vm", domid);
	r = vplat_key_read(a->p, path, v, sizeof(v));
	if (r < 0)
		return r;	/* none (yet): nothing to compare */
	n = strnlen(v, VD_AUTO_VM - 1);
	memcpy(vm, v, n);
	vm[n] = '\0';
	return 0;
}

/* Domains new to us decided, domains gone forgotten: one listing.
 * 0, or -errno when /local/domain cannot be listed. */
static int vd_auto_sync(struct vd_auto *a, int64_t now)
{
	char vm[VD_AUTO_VM];
	uint32_t domid, pos;
	struct vd_dom *d;
	const char *e;
	bool reread;
	int r;

	r = vd_auto_list(a);
	if (r < 0) {
		vd_auto_warn(&a->lim_list, now, "attach: cannot list /local/domain: %s (tried "
			     "again every %d s)", strerror(-r), VD_AUTO_LIST_RETRY_MS / 1000);
		return r;
	}
	a->gen++;
	/* A domid is reused only after a release: identities are read for
	 * new domains, and for all only after one (200 domains cost 200
	 * reads a listing otherwise, and every introduce lists). */
	reread = a->released;
	a->released = false;
	for (e = a->list; *e; e += strlen(e) + 1) {
		if (vplat_parse_u32(e, &domid) || domid >= VD_AUTO_DOMID_MAX ||
		    domid == VPLAT_DOM0 || domid == vplat_domid(a->p))
			continue;
		d = vd_auto_find(a, domid);
		r = !d || reread || !d->vm_known ? vd_auto_ident(a, domid, vm) : -EAGAIN;
		if (d && !r && !d->vm_known) {
			memcpy(d->vm, vm, sizeof(vm));
			d->vm_known = true;
		} else if (d && !r && strcmp(d->vm, vm)) {
			/* Destroyed and made again since the last listing (xl's
			 * domid_policy="random", an explicit domid): a new
			 * domain, decided again. */
			vlog_dbg("attach: domain %u (%s) replaced by another", domid, d->name);
			vd_auto_del(a, d);
			d = NULL;
		}
		if (!d) {
			d = vd_auto_add(a, domid, now);
			if (!d) {
				vlog_err("attach: out of memory, domain %u not looked at", domid);
				continue;
			}
			if (!r) {
				memcpy(d->vm, vm, sizeof(vm));
				d->vm_known = true;
			}
			vlog_dbg("attach: domain %u appeared", domid);
		}
		d->gen = a->gen;
	}
	for (pos = 0; (d = vd_auto_next(a, &pos));) {
		if (d->gen == a->gen) {
			vd_auto_try(a, d, now);
			continue;
		}
		vlog_dbg("attach: domain %u (%s) gone", d->domid, d->name);
		vd_auto_del(a, d);
	}
	return 0;
}

/* Many events may be queued (xl creating or destroying many domains):
 * each only marks the list, vd_auto_run lists it once. */
static void vd_auto_event_cb(struct vplat *p, const char *path, void *arg)
{
	struct vd_auto *a = arg;

	(void)p;
	if (path && !strcmp(path, VPLAT_WATCH_INTRODUCE))
		a->intro++;
	else
		a->released = true;	/* or the first firing: read them all */
	a->dirty = true;
}

/* A listing that failed stays due: tried again from the tick, for a
 * quiet host may send no other event. */
static void vd_auto_run_at(struct vd_auto *a, int64_t now)
{
	if (now < a->list_ms)
		return;
	a->dirty = false;
	if (vd_auto_sync(a, now) < 0) {
		a->dirty = true;
		a->list_ms = now + VD_AUTO_LIST_RETRY_MS;
	} else {
		a->list_ms = 0;
	}
}

void vd_auto_run(struct vd_auto *a)
{
	if (a && a->dirty)
		vd_auto_run_at(a, vplat_now_ms());
}

int vd_auto_start(struct vplat *p, const struct vd_attach *pol,
		  const struct vd_attach_ops *ops, void *arg, struct vd_auto **out)
{
	struct vd_auto *a = calloc(1, sizeof(*a));
	int r;

	if (!a)
		return -ENOMEM;
	a->pol = *pol;
	a->p = p;
	a->ops = *ops;
	a->arg = arg;
	vd_attach_policy_str(pol, a->pol_str, sizeof(a->pol_str));
	*out = a;
	if (pol->kind == VD_ATTACH_NONE)
		return 0;
	a->list_len = VD_AUTO_LIST_MIN;
	a->list = malloc(a->list_len);
	if (!a->list) {
		vd_auto_stop(a);
		*out = NULL;
		return -ENOMEM;
	}
	/* Each fires once at once: the domains already there are decided too. */
	r = vplat_watch(p, VPLAT_WATCH_INTRODUCE, vd_auto_event_cb, a);
	if (r == -EOPNOTSUPP) {
		vlog_info("attach policy %s: no domains on the %s platform (a guest process "
			  "that connects gets its device)", a->pol_str, vplat_kind(p));
		return 0;
	}
	if (!r) {
		a->watches = 1;
		r = vplat_watch(p, VPLAT_WATCH_RELEASE, vd_auto_event_cb, a);
	}
	if (r) {
		vlog_err("attach policy %s: cannot watch xenstore's %s: %s", a->pol_str,
			 a->watches ? VPLAT_WATCH_RELEASE : VPLAT_WATCH_INTRODUCE,
			 strerror(-r));
		vd_auto_stop(a);
		*out = NULL;
		return r;
	}
	a->watches = 2;
	vlog_info("attach policy %s: domains get device 0 when they appear", a->pol_str);
	return 0;
}

void vd_auto_tick(struct vd_auto *a, int64_t now_ms)
{
	struct vd_dom *d;
	uint32_t pos;

	if (!a || !a->watches)
		return;
	if (a->dirty)
		vd_auto_run_at(a, now_ms);
	/* The name wait's deadline, and domains xenstore was too busy for. */
	for (pos = 0; (d = vd_auto_next(a, &pos));)
		if (d->state == VD_DOM_WAIT &&
		    (a->pol.kind == VD_ATTACH_NAME || (d->busy_ms && now_ms >= d->busy_ms)))
			vd_auto_try(a, d, now_ms);
}

void vd_auto_note(struct vd_auto *a, uint32_t domid, bool attached)
{
	struct vd_dom *d = a ? vd_auto_find(a, domid) : NULL;

	if (!d)
		return;		/* not seen (yet): a kept detach is found by name */
	vd_auto_unwatch_marker(a, d);
	d->state = attached ? VD_DOM_ATTACHED : VD_DOM_DETACHED;
}

void vd_auto_stop(struct vd_auto *a)
{
	struct vd_dom *d;
	uint32_t pos;

	if (!a)
		return;
	if (a->watches > 0)
		vplat_unwatch(a->p, VPLAT_WATCH_INTRODUCE, a);
	if (a->watches > 1)
		vplat_unwatch(a->p, VPLAT_WATCH_RELEASE, a);
	for (pos = 0; (d = vd_auto_next(a, &pos));)
		vd_auto_del(a, d);
	free(a->list);
	free(a);
}

void vd_auto_show(const struct vd_auto *a, struct vout *o)
{
	const struct vd_dom *d;
	uint32_t pos = 0;

	vout_str(o, "policy", a ? a->pol_str : "none", "attach policy: %s",
		 a ? a->pol_str : "none");
	vout_bool(o, "active", a && a->watches, " (%s)\n",
		  a && a->watches ? "watching xenstore for domains" :
		  a && a->pol.kind != VD_ATTACH_NONE ? "no domains on this platform" :
		  "vrdmactl attach only");
	if (a && a->pol.kind == VD_ATTACH_MARKER) {
		vout_jstr(o, "marker", "/local/domain/<domid>/" VD_ATTACH_MARKER_KEY);
		vout_text(o, "marker: /local/domain/<domid>/" VD_ATTACH_MARKER_KEY " = 1\n");
	}
	vout_arr(o, "domains");
	while (a && (d = vd_auto_next(a, &pos))) {
		vout_obj(o, NULL);
		vout_u64(o, "domid", d->domid, "domain %u", d->domid);
		vout_str(o, "name", d->name, " name=%s", d->name);
		vout_str(o, "state", vd_dom_states[d->state], " %s\n", vd_dom_states[d->state]);
		vout_end(o);
	}
	vout_end(o);
}
