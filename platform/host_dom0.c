// SPDX-License-Identifier: MIT
/*
 * Plain host, dom0 role: vrdmad's "hypervisor".  Listens on
 * <run_dir>/guest.sock, gives each connecting guest a domain id, plays
 * toolstack (creates its device keys), serves its key requests with
 * xenstore permissions, and cleans up when it goes away -- removing its
 * keys fires the watches that tell the backend, as xenstore does when a
 * domain dies.  A guest that breaks the protocol is disconnected; dom0
 * never trusts a byte it receives.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "host_chan.h"
#include "host_dom0.h"
#include "keystore.h"
#include "log.h"

#define HD_MSGS_PER_GUEST	16	/* per vplat_process(), for fairness */
#define HD_DELIVER_MAX		1024
/* A guest's unsent messages: a busy guest gets its replies late, one that
 * let this much pile up is not reading at all (a watch event repeated
 * before the first went out is not queued twice). */
#define HD_OUT_MAX		(1u << 20)
/* Guests' sockets are not read while fewer fds than this are free: a
 * message installs up to VHP_SCM_MAX_FD, and the kernel drops (closes, in
 * vrdmad) what finds no free fd. */
#define HD_FDS_LOW		(VHP_SCM_MAX_FD + 32)

struct hd_out {
	struct hd_out *next;
	int fds[VHP_MAX_FDS], nfds;	/* dom0's, to pass along */
	struct vhp_hdr h;
	char payload[];
};

struct hd_lwatch {			/* a watch of dom0 itself */
	struct hd_lwatch *next;
	uint64_t id;
	vplat_watch_fn *cb;
	void *arg;
	char path[];
};

struct hd_levt {
	struct hd_levt *next;
	uint64_t id;
	char path[];
};

#define hd_of(p) ((struct hd *)(p))

static void hd_signal(struct hd *d)
{
	uint64_t one = 1;

	if (write(d->evfd, &one, sizeof(one)) < 0)
		vlog_dbg("platform: local event signal: %s", strerror(errno));
}

/* Key store watch fired: dom0's own go to the local queue, guests' out. */
static void hd_fire(void *arg, void *owner, uint64_t token, const char *path)
{
	struct hd *d = arg;
	struct hd_guest *g = owner;
	struct vhp_hdr h = { .type = VHP_EVENT, .arg = { (uint32_t)token } };
	size_t n = strlen(path) + 1;

	if (!g) {
		struct hd_levt *e = malloc(sizeof(*e) + n);

		if (!e) {
			vlog_err("platform: out of memory, watch event for %s lost", path);
			return;
		}
		e->next = NULL;
		e->id = token;
		memcpy(e->path, path, n);
		*d->levq_tail = e;
		d->levq_tail = &e->next;
		hd_signal(d);
		return;
	}
	if (g->dead)
		return;
	h.len = (uint32_t)n;
	hd_send(g, &h, path);
}

struct hd_guest *hd_guest_find(struct hd *d, uint32_t domid)
{
	struct hd_guest *g;

	for (g = d->guests; g; g = g->next)
		if (g->domid == domid && domid && !g->dead)
			return g;
	return NULL;
}

/* Mark dead now (nothing more is read or sent), free at reap time.  A
 * refused connection's end is not logged: its refusal was (refuse_lim). */
void hd_guest_kill(struct hd_guest *g, const char *why)
{
	if (g->dead)
		return;
	if (g->quiet)
		vlog_dbg("platform: disconnecting domain %u: %s", g->domid, why ? why : "gone");
	else if (why)
		vlog_warn("platform: disconnecting domain %u (%s): %s", g->domid,
			  g->name[0] ? g->name : "?", why);
	else
		vlog_info("platform: domain %u (%s) went away", g->domid, g->name);
	g->dead = 1;
	epoll_ctl(g->d->epfd, EPOLL_CTL_DEL, g->sock, NULL);
}

static void hd_out_poll(struct hd_guest *g, bool out)
{
	struct epoll_event ev = {
		.events = (g->d->fds_low ? 0 : EPOLLIN) | (out ? EPOLLOUT : 0), .data.ptr = g,
	};

	epoll_ctl(g->d->epfd, EPOLL_CTL_MOD, g->sock, &ev);
}

/* dom0's own fds, closed on the reaper all the same: before Linux 6.1.147
 * releasing a unix socket could run the unix GC in the caller. */
static void hd_out_free(struct hd_guest *g, struct hd_out *o)
{
	g->out_fds -= (uint32_t)o->nfds;
	hd_fds_drop(NULL, o->fds, &o->nfds);
	free(o);
}

/* Send what waits, oldest first, until the socket is full again. */
static void hd_out_flush(struct hd_guest *g)
{
	struct hd_out *o;
	int r;

	while ((o = g->out) && !g->dead) {
		r = vhp_send(g->sock, &o->h, o->payload, o->fds, o->nfds, MSG_DONTWAIT);
		if (r == -EAGAIN)
			return;
		if (r) {
			hd_guest_kill(g, "its socket failed");
			return;
		}
		g->out = o->next;
		g->out_bytes -= sizeof(*o) + o->h.len;
		hd_out_free(g, o);
	}
	if (!g->out) {
		g->out_tail = &g->out;
		if (!g->dead)
			hd_out_poll(g, false);
	}
}

static bool hd_out_has(const struct hd_guest *g, const struct vhp_hdr *h, const void *p)
{
	const struct hd_out *o;

	for (o = g->out; o; o = o->next)
		if (o->h.type == h->type && o->h.arg[0] == h->arg[0] && o->h.len == h->len &&
		    !memcmp(o->payload, p, h->len))
			return true;
	return false;
}

/*
 * One message to g without ever waiting for it: straight out if nothing
 * is queued and the socket has room, else behind what is queued.
 */
int hd_send_fds(struct hd_guest *g, const struct vhp_hdr *h, const void *payload,
		const int *fds, int nfds)
{
	struct hd_out *o;
	int r, i;

	if (g->dead) {
		r = -EPIPE;
		goto out_close;
	}
	if (!g->out) {
		r = vhp_send(g->sock, (struct vhp_hdr *)h, payload, fds, nfds, MSG_DONTWAIT);
		if (r != -EAGAIN) {
			if (r)
				hd_guest_kill(g, "its socket failed");
			goto out_close;
		}
	}
	if (h->type == VHP_EVENT && hd_out_has(g, h, payload))
		return 0;	/* the same event is still on its way */
	if (g->out_bytes + sizeof(*o) + h->len > HD_OUT_MAX) {
		hd_guest_kill(g, "not reading its socket (1 MiB of messages waiting)");
		r = -EPIPE;
		goto out_close;
	}
	/* Each queued CHAN reply holds two fds no other cap counts. */
	if (g->out_fds + (uint32_t)nfds > 2 * g->d->max_chans) {
		hd_guest_kill(g, "not reading its socket (channel replies waiting)");
		r = -EPIPE;
		goto out_close;
	}
	o = malloc(sizeof(*o) + h->len);
	if (!o) {
		hd_guest_kill(g, "out of memory for its messages");
		r = -ENOMEM;
		goto out_close;
	}
	o->next = NULL;
	o->nfds = nfds;
	if (nfds)
		memcpy(o->fds, fds, sizeof(int) * (size_t)nfds);
	g->out_fds += (uint32_t)nfds;
	o->h = *h;
	if (h->len)
		memcpy(o->payload, payload, h->len);
	if (!g->out)
		hd_out_poll(g, true);
	*g->out_tail = o;
	g->out_tail = &o->next;
	g->out_bytes += sizeof(*o) + h->len;
	return 0;

out_close:
	for (i = 0; i < nfds; i++)	/* sent (the guest has its own) or never will be */
		hd_fd_drop(NULL, fds[i]);	/* see hd_out_free */
	return r;
}

int hd_send(struct hd_guest *g, const struct vhp_hdr *h, const void *payload)
{
	return hd_send_fds(g, h, payload, NULL, 0);
}

int hd_reply(struct hd_guest *g, const struct vhp_hdr *req, int err,
	     const void *payload, uint32_t len, uint32_t arg0)
{
	struct vhp_hdr h = {
		.type = req->type == VHP_HELLO ? VHP_WELCOME : VHP_REPLY,
		.seq = req->seq, .err = err, .len = len, .arg = { arg0 },
	};

	return hd_send(g, &h, payload);
}

static void hd_guest_free(struct hd *d, struct hd_guest *g)
{
	struct hd_chan *c;

	ks_unwatch_owner(d->ks, g);
	if (g->domid) {
		hd_toolstack_remove(d, g->domid);
		for (c = d->chans; c; c = c->next)
			if (c->domid == g->domid)
				c->dead = 1;
	}
	hd_gnt_release(g);
	/* Unread messages may hold its files: purging them can wait. */
	hd_fd_drop(g->reap, g->sock);
	while (g->out) {
		struct hd_out *o = g->out;

		g->out = o->next;
		hd_out_free(g, o);
	}
	hd_reap_put(g->reap);
	if (g->refused)
		d->nrefused--;
	else
		d->nguests--;
	free(g);
}

static void hd_reap(struct hd *d)
{
	struct hd_guest **pg = &d->guests, *g;

	while ((g = *pg)) {
		if (!g->dead) {
			pg = &g->next;
			continue;
		}
		*pg = g->next;
		hd_guest_free(d, g);
	}
}

/* The drop callback of hd_recv: counts what a message installed. */
struct hd_rx {
	struct hd_reap *reap;
	unsigned nfds;
};

static void hd_rx_drop(void *arg, int fd)
{
	struct hd_rx *x = arg;

	x->nfds++;
	hd_fd_drop(x->reap, fd);
}

/*
 * vhp_recv_drop has room for every fd a message can carry (the kernel
 * would drop what does not fit right here, and dropping a guest's file
 * can wait); every fd beyond VHP_MAX_FDS goes to the reaper and makes the
 * message malformed.  *installed: fds the message put in vrdmad's table.
 */
static int hd_recv(struct hd_guest *g, struct vhp_hdr *h, int *fds, int *nfds,
		   unsigned *installed)
{
	struct hd_rx x = { .reap = g->reap };
	int r;

	r = vhp_recv_drop(g->sock, h, g->d->rbuf, VHP_PAYLOAD_MAX, fds, nfds,
			  MSG_DONTWAIT, hd_rx_drop, &x);
	*installed = x.nfds + (unsigned)*nfds;
	return r;
}

/* Free fds, counted (/proc/self/fd) once per round that reads guests. */
static long hd_fds_free(void)
{
	struct rlimit rl;
	struct dirent *e;
	long n = 0;
	DIR *dir;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	dir = opendir("/proc/self/fd");
	if (!dir && (errno == EMFILE || errno == ENFILE))
		return 0;	/* out of fds indeed */
	if (!dir)
		return 1l << 30;	/* no /proc: fd_limit checks only */
	while ((e = readdir(dir)))
		n += e->d_name[0] != '.';
	closedir(dir);
	n--;			/* the directory's own */
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 30))
		return 1l << 30;
	return (long)rl.rlim_cur - n;
}

/* Stop or resume reading every guest's socket (EPOLLIN), sends go on. */
static void hd_fds_pause(struct hd *d, int low)
{
	struct hd_guest *g;

	if (d->fds_low == low)
		return;
	d->fds_low = low;
	if (low)
		vlog_warn("platform: fewer than %d fds free: guests' messages wait",
			  HD_FDS_LOW);
	else
		vlog_info("platform: fds free again: reading guests' messages");
	/* Each close on the reaper wakes the loop to look again. */
	hd_reap_wake_fd(low ? d->evfd : -1);
	for (g = d->guests; g; g = g->next)
		if (!g->dead)
			hd_out_poll(g, g->out != NULL);
}

/* *fds_free: an estimate, less what each message installs. */
static void hd_guest_readable(struct hd_guest *g, long *fds_free)
{
	int fds[VHP_MAX_FDS], nfds, i, r;
	char *rbuf = g->d->rbuf;
	struct vhp_hdr h;
	unsigned got;

	for (i = 0; i < HD_MSGS_PER_GUEST && !g->dead; i++) {
		if (*fds_free < HD_FDS_LOW) {
			hd_fds_pause(g->d, 1);
			return;
		}
		r = hd_recv(g, &h, fds, &nfds, &got);
		*fds_free -= got;
		if (r == -EAGAIN)
			return;
		if (r == -EPIPE || r == -ECONNRESET) {
			hd_guest_kill(g, NULL);
			return;
		}
		if (r == -EBADMSG) {
			hd_guest_kill(g, "malformed message (size)");
			return;
		}
		if (r) {
			hd_guest_kill(g, strerror(-r));
			return;
		}
		rbuf[h.len] = '\0';
		r = hd_req_msg(g, &h, rbuf, fds, &nfds);
		/* Whatever the handler did not keep (a refused SHARE's memfd:
		 * anything else was a protocol error) adds to its count. */
		if (!r && nfds) {
			hd_fds_drop(g->reap, fds, &nfds);
			if (hd_reap_over(g->reap))
				hd_guest_kill(g, "too many of its files waiting to be closed");
		}
		hd_fds_drop(g->reap, fds, &nfds);
		if (r) {
			char why[64];

			snprintf(why, sizeof(why), "malformed message (type %u)", h.type);
			hd_guest_kill(g, why);
		}
	}
}

/* dir's `guests` key (a tenant, or "default"); -1 when absent or not a
 * number in range, which the backend ignores too (vbe_tenant_parse). */
static long hd_tenant_key(struct hd *d, const char *dir)
{
	char path[VPLAT_KEY_MAX], val[16], *e;
	unsigned long v;

	snprintf(path, sizeof(path), VPLAT_TENANT_ROOT "/%s/guests", dir);
	if (ks_read(d->ks, path, val, sizeof(val)) < 0 || val[0] < '0' || val[0] > '9')
		return -1;
	errno = 0;
	v = strtoul(val, &e, 10);
	return *e || errno || v > HD_MAX_GUESTS ? -1 : (long)v;
}

/* A tenant's limit on connected guests: its own key, the default key, or
 * the node's default (vrdmad.conf [limits], else VPLAT_TENANT_GUESTS;
 * docs/tenants.md); a key that is not valid is skipped, as the backend
 * does, so both count the same limit. */
static unsigned hd_tenant_max(struct hd *d, const char *tenant)
{
	long v = hd_tenant_key(d, tenant);

	if (v < 0)
		v = hd_tenant_key(d, "default");
	return v < 0 ? d->tenant_guests : (unsigned)v;
}

/*
 * Over a quota: keep the connection, uncounted, until its HELLO, so the
 * guest hears why (-EUSERS) instead of a closed socket.  Only
 * HD_MAX_REFUSED wait, a quarter of them a tenant's: a new one replaces
 * its tenant's oldest once the tenant has its quarter, else the node's
 * oldest when all are taken -- one tenant's hammering never silences
 * another's refusals.  g is first on d->guests.
 */
static void hd_refuse(struct hd *d, struct hd_guest *g, int err)
{
	struct hd_guest *x, *oldest = NULL, *own = NULL;
	unsigned mine = 0, live = 0;

	g->refused = err;
	g->quiet = 1;		/* hd_accept logged why, once a second at most */
	/* Those still waiting (nrefused counts the killed until they are
	 * freed, at the end of the round). */
	for (x = g->next; x; x = x->next) {	/* newest first */
		if (!x->refused || x->dead)
			continue;
		oldest = x;
		live++;
		if (!strcmp(x->tenant, g->tenant)) {
			own = x;
			mine++;
		}
	}
	if (mine >= HD_MAX_REFUSED / 4)
		hd_guest_kill(own, "refused, and more of its tenant refused since");
	else if (live >= HD_MAX_REFUSED && oldest)
		hd_guest_kill(oldest, "refused, and others refused since");
	d->nrefused++;
}

/* One connection: 1 if one was there (taken or refused), 0 if none. */
static int hd_accept(struct hd *d)
{
	struct epoll_event ev = { .events = d->fds_low ? 0 : EPOLLIN };
	struct ucred cr = { .uid = (uid_t)-1 };
	socklen_t crl = sizeof(cr);
	struct hd_guest *g, *x;
	unsigned mine = 0, max;
	struct hd_reap *a;
	int s;

	s = accept4(d->lsock, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (s < 0) {
		if (errno != EAGAIN && errno != EINTR)
			vlog_warn("platform: accept: %s", strerror(errno));
		return 0;
	}
	/* Whose it is: fds waiting to be closed are counted per uid too
	 * (the credentials the kernel stored at connect; no lock a guest
	 * holds). */
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &crl) < 0 || crl != sizeof(cr)) {
		vlog_warn("platform: refusing a guest: SO_PEERCRED: %s", strerror(errno));
		hd_fd_drop(NULL, s);
		return 1;
	}
	a = hd_reap_new(cr.uid);
	if (!a || hd_reap_over(a)) {
		vlog_warn("platform: refusing a guest of uid %d: %s", (int)cr.uid,
			  a ? "too many of its files waiting to be closed" : "out of memory");
		goto err_drop;	/* it may have sent files already */
	}
	/* fds are allocated lowest first: a high number means few are left,
	 * and running out would break every guest's fd passing (review I1). */
	if ((uint64_t)s + HD_FD_RESERVE / 4 >= d->fd_limit) {
		vlog_warn("platform: refusing a guest: file descriptors running low");
		goto err_drop;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		goto err_drop;
	g->d = d;
	g->sock = s;
	g->reap = a;
	g->out_tail = &g->out;
	/* The tenant: the peer's uid (docs/tenants.md). */
	snprintf(g->tenant, sizeof(g->tenant), "uid%u", (unsigned)cr.uid);
	ev.data.ptr = g;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, s, &ev) < 0) {
		vlog_warn("platform: epoll: %s", strerror(errno));
		free(g);
		goto err_drop;
	}
	/* Connections count from accept, HELLO or not: a tenant cannot take
	 * the node's slots with connections that never say hello. */
	for (x = d->guests; x; x = x->next)
		mine += !x->dead && !x->refused && !strcmp(x->tenant, g->tenant);
	max = hd_tenant_max(d, g->tenant);
	g->next = d->guests;
	d->guests = g;
	if (d->nguests >= HD_MAX_GUESTS) {
		vlog_limited(&d->refuse_lim, VLOG_WARN, "platform: refusing a guest of tenant "
			     "%s: %u guests is the limit", g->tenant, HD_MAX_GUESTS);
		hd_refuse(d, g, -EUSERS);
	} else if (mine >= max) {
		vlog_limited(&d->refuse_lim, VLOG_WARN, "platform: refusing a guest of tenant "
			     "%s: %u guests is its limit", g->tenant, max);
		hd_refuse(d, g, -EUSERS);
	} else {
		d->nguests++;
	}
	return 1;

err_drop:
	hd_fd_drop(a, s);
	hd_reap_put(a);
	return 1;
}

/* ---- the instance ---- */

/* Refuse to steal the socket of a live vrdmad; remove a stale one. */
static int hd_listen(struct hd *d, const char *run_dir)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n, s;

	if (mkdir(run_dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", run_dir, VHP_SOCK_NAME);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(d->sock_path, sa.sun_path, sizeof(d->sock_path));
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return -errno;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(s);
		vlog_err("platform: %s is in use by another vrdmad", sa.sun_path);
		return -EADDRINUSE;
	}
	unlink(sa.sun_path);
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(s, 64) < 0) {
		n = -errno;
		vlog_err("platform: cannot listen on %s: %s", sa.sun_path, strerror(-n));
		close(s);
		return n;
	}
	d->lsock = s;
	return 0;
}

static int hd_open(const struct vplat_cfg *cfg, struct vplat **out)
{
	struct epoll_event ev = { .events = EPOLLIN };
	const char *run_dir = cfg->run_dir, *e;
	struct hd *d;
	int r;

	if (!run_dir)
		run_dir = getenv("VRDMA_RUN_DIR");
	if (!run_dir || !*run_dir)
		run_dir = "/run/vrdma";
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->base.ops = &vplat_host_dom0_ops;
	d->base.domid = VPLAT_DOM0;
	d->lsock = -1;
	d->next_domid = 1;
	d->levq_tail = &d->levq;
	d->max_pages = HD_MAX_PAGES;
	d->tenant_guests = VPLAT_TENANT_GUESTS;
	if (cfg->tenant_guests && *cfg->tenant_guests <= HD_MAX_GUESTS)
		d->tenant_guests = *cfg->tenant_guests;
	hd_fd_caps(d);
	e = getenv("VRDMA_MAX_GUEST_PAGES");
	if (e && *e)
		d->max_pages = strtoull(e, NULL, 0);
	r = ks_new(hd_fire, d, &d->ks);
	if (r)
		goto err_free;
	d->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (d->evfd < 0) {
		r = -errno;
		goto err_ks;
	}
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epfd < 0) {
		r = -errno;
		goto err_evfd;
	}
	r = hd_listen(d, run_dir);
	if (r)
		goto err_epfd;
	ev.data.ptr = &d->lsock;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->lsock, &ev) < 0)
		goto err_errno;
	ev.data.ptr = &d->evfd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->evfd, &ev) < 0)
		goto err_errno;
	if (!hc_efd_nowait_ok())
		vlog_err("platform: this kernel cannot read an eventfd without waiting "
			 "whatever its flags (RWF_NOWAIT, Linux 5.12): a hostile guest "
			 "can stall vrdmad");
	vlog_dbg("platform: dom0 listening on %s", d->sock_path);
	*out = &d->base;
	return 0;

err_errno:
	r = -errno;
	close(d->lsock);
	unlink(d->sock_path);
err_epfd:
	close(d->epfd);
err_evfd:
	close(d->evfd);
err_ks:
	ks_free(d->ks);
err_free:
	free(d);
	return r;
}

static void hd_close(struct vplat *p)
{
	struct hd *d = hd_of(p);
	struct hd_guest *g;
	struct hd_chan *c;

	for (g = d->guests; g; g = g->next)
		g->dead = 1;
	hd_reap(d);
	/* Channels the caller still holds keep their own fds; just orphan them. */
	for (c = d->chans; c; c = c->next) {
		c->dead = 1;
		c->pprev = NULL;
	}
	while (d->lwatches) {
		struct hd_lwatch *w = d->lwatches;

		d->lwatches = w->next;
		free(w);
	}
	while (d->levq) {
		struct hd_levt *e = d->levq;

		d->levq = e->next;
		free(e);
	}
	ks_free(d->ks);
	close(d->lsock);
	unlink(d->sock_path);
	close(d->epfd);
	if (d->fds_low)
		hd_reap_wake_fd(-1);
	close(d->evfd);
	free(d);
}

static int hd_fd(const struct vplat *p)
{
	return hd_of(p)->epfd;
}

static void hd_deliver(struct hd *d)
{
	unsigned n = 0;
	uint64_t cnt;

	if (read(d->evfd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		vlog_dbg("platform: local event drain: %s", strerror(errno));
	while (d->levq && n++ < HD_DELIVER_MAX) {
		struct hd_levt *e = d->levq;
		struct hd_lwatch *w;

		d->levq = e->next;
		if (!d->levq)
			d->levq_tail = &d->levq;
		/* Looked up per event: a callback may have unwatched it. */
		for (w = d->lwatches; w; w = w->next)
			if (w->id == e->id)
				break;
		if (w)
			w->cb(&d->base, e->path, w->arg);
		free(e);
	}
	if (d->levq)
		hd_signal(d);
}

static int hd_process(struct vplat *p)
{
	struct hd *d = hd_of(p);
	struct epoll_event evs[32];
	long fds_free = -1;
	int n, i, j;

	hd_reap_tick();
	if (d->fds_low) {
		fds_free = hd_fds_free();
		if (fds_free >= HD_FDS_LOW)
			hd_fds_pause(d, 0);
	}
	n = epoll_wait(d->epfd, evs, 32, 0);
	if (n < 0 && errno != EINTR)
		return -errno;
	for (i = 0; i < n; i++) {
		void *ptr = evs[i].data.ptr;
		struct hd_guest *g = ptr;

		if (ptr == &d->lsock) {
			/* The kernel's backlog is everyone's: drain it, a
			 * bounded number a round, so one uid's connect
			 * flood does not keep others' connects waiting. */
			for (j = 0; j < HD_ACCEPTS_PER_ROUND && hd_accept(d); j++)
				;
		} else if (ptr != &d->evfd && !g->dead) {
			if (evs[i].events & EPOLLOUT)
				hd_out_flush(g);
			if (g->dead)
				continue;
			if (d->fds_low) {
				/* Not read (EPOLLIN is off); a hang-up would
				 * be reported for ever: it is gone anyway. */
				if (evs[i].events & (EPOLLHUP | EPOLLERR))
					hd_guest_kill(g, NULL);
				continue;
			}
			if (fds_free < 0)
				fds_free = hd_fds_free();
			hd_guest_readable(g, &fds_free);
		}
	}
	hd_reap(d);
	hd_deliver(d);
	return 0;
}

/* ---- dom0's own keys: no permission checks ---- */

static int hd_key_write(struct vplat *p, const char *path, const char *val)
{
	return ks_write(hd_of(p)->ks, path, val, 0, 0);
}

static int hd_key_read(struct vplat *p, const char *path, char *buf, size_t len)
{
	return ks_path_ok(path) ? ks_read(hd_of(p)->ks, path, buf, len) : -EINVAL;
}

static int hd_key_rm(struct vplat *p, const char *path)
{
	return ks_path_ok(path) ? ks_rm(hd_of(p)->ks, path) : -EINVAL;
}

static int hd_key_list(struct vplat *p, const char *path, char *buf, size_t len,
		       unsigned *count)
{
	int r;

	if (!ks_path_ok(path))
		return -EINVAL;
	r = ks_list(hd_of(p)->ks, path, buf, len - 1, count);
	if (r < 0)
		return r;
	buf[r] = '\0';
	return 0;
}

static int hd_watch(struct vplat *p, const char *path, vplat_watch_fn *cb, void *arg)
{
	struct hd *d = hd_of(p);
	size_t n = strlen(path) + 1;
	struct hd_lwatch *w;
	int r;

	if (path[0] == '@')
		return -EOPNOTSUPP;	/* no domains: guests come with their sockets */
	if (!ks_path_ok(path))
		return -EINVAL;
	w = malloc(sizeof(*w) + n);
	if (!w)
		return -ENOMEM;
	w->id = ++d->next_lw_id;
	w->cb = cb;
	w->arg = arg;
	memcpy(w->path, path, n);
	r = ks_watch(d->ks, path, NULL, w->id);
	if (r) {
		free(w);
		return r;
	}
	w->next = d->lwatches;
	d->lwatches = w;
	return 0;
}

static void hd_unwatch(struct vplat *p, const char *path, void *arg)
{
	struct hd *d = hd_of(p);
	struct hd_lwatch **pw, *w;

	for (pw = &d->lwatches; (w = *pw); pw = &w->next)
		if (w->arg == arg && strcmp(w->path, path) == 0)
			break;
	if (!w)
		return;
	*pw = w->next;
	ks_unwatch(d->ks, NULL, w->id);
	free(w);
}

const struct vplat_ops vplat_host_dom0_ops = {
	.kind		= "host",
	.open		= hd_open,
	.close		= hd_close,
	.fd		= hd_fd,
	.process	= hd_process,
	.map		= hd_map,
	.unmap		= hd_unmap,
	.map_live	= hd_map_live,
	.map_limits	= hd_map_limits,
	.chan_bind	= hd_chan_bind,
	.notify		= hd_notify,
	.chan_fd	= hd_chan_fd,
	.chan_ack	= hd_chan_ack,
	.chan_wait	= hd_chan_wait,
	.chan_close	= hd_chan_close,
	.key_write	= hd_key_write,
	.key_read	= hd_key_read,
	.key_rm		= hd_key_rm,
	.key_list	= hd_key_list,
	.watch		= hd_watch,
	.unwatch	= hd_unwatch,
};
