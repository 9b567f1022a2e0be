// SPDX-License-Identifier: MIT
/*
 * Plain host, dom0 role: each guest's grant table (memfds it shared, by
 * ref range) and the channels it allocated; dom0's mappings and bound
 * channels.  A mapping outlives the guest (mmap semantics); a bound
 * channel reports the guest gone with -EPIPE.  dom0 creates each channel
 * itself (host_chan.h): nothing a guest does to what it holds can make
 * dom0 wait (docs/platform.md "Never block on a guest").
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "host_dom0.h"
#include "host_chan.h"
#include "log.h"

struct hd_map {
	struct vplat_map base;
	size_t len;
	struct hd *d;
	uint32_t domid;
	int writable;
	uint8_t *live;			/* vplat_map_live's byte, NULL: none */
};

static size_t hd_page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/*
 * A share must be a shmem memfd sealed against shrinking: a page past a
 * shrunk end, or a hugetlb page the pool cannot supply, is SIGBUS in dom0
 * at whatever access first touches it.  Seals cannot be removed, so the
 * check holds for every later mapping of this share.  Anything else is a
 * protocol error: closing it may wait (host_reap_dom0.c), and a guest
 * that could keep sending such files would keep the reaper busy.
 * -EBADMSG (not a shmem memfd), -EINVAL (too small) or 0.
 */
static int hd_memfd_ok(int fd, uint32_t npages)
{
	struct statfs sf;
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(fd, &st) < 0 ||
	    !S_ISREG(st.st_mode) || fstatfs(fd, &sf) < 0 || sf.f_type != TMPFS_MAGIC)
		return -EBADMSG;
	return (uint64_t)st.st_size >= (uint64_t)npages * hd_page_size() ? 0 : -EINVAL;
}

static struct hd_share *hd_share_find(struct hd_guest *g, uint32_t ref)
{
	uint32_t i;

	for (i = 0; i < g->nshares; i++)
		if (ref - g->shares[i].first < g->shares[i].npages)
			return &g->shares[i];
	return NULL;
}

static int hd_share_msg(struct hd_guest *g, const struct vhp_hdr *h, int *fds, int *nfds)
{
	uint32_t first = h->arg[0], npages = h->arg[1], i;
	struct hd_share *s;
	int r;

	if (*nfds != 1 || npages == 0 || first > UINT32_MAX - npages || h->arg[2] > 1)
		return -EBADMSG;
	/* First: no other file is dropped with a polite answer. */
	r = hd_memfd_ok(fds[0], npages);
	if (r == -EBADMSG)
		return r;
	for (i = 0; i < g->nshares; i++) {
		s = &g->shares[i];
		if (first < s->first + s->npages && s->first < first + npages)
			return hd_reply(g, h, -EEXIST, NULL, 0, 0), 0;
	}
	if (g->pages + npages > g->d->max_pages)
		return hd_reply(g, h, -ENOMEM, NULL, 0, 0), 0;
	/* fds are numbered lowest free first: a high one means vrdmad is
	 * near EMFILE, which would break every guest's fd passing. */
	if (g->nshares >= g->d->max_shares || (uint64_t)fds[0] >= g->d->fd_limit)
		return hd_reply(g, h, -ENOSPC, NULL, 0, 0), 0;
	if (r)
		return hd_reply(g, h, r, NULL, 0, 0), 0;
	if (g->nshares == g->scap) {
		uint32_t ncap = g->scap ? g->scap * 2 : 16;
		struct hd_share *n = realloc(g->shares, ncap * sizeof(*n));

		if (!n)
			return hd_reply(g, h, -ENOMEM, NULL, 0, 0), 0;
		g->shares = n;
		g->scap = ncap;
	}
	s = &g->shares[g->nshares++];
	s->first = first;
	s->npages = npages;
	s->writable = h->arg[2];
	s->fd = fds[--*nfds];	/* kept */
	g->pages += npages;
	return hd_reply(g, h, 0, NULL, 0, 0), 0;
}

static int hd_unshare_msg(struct hd_guest *g, const struct vhp_hdr *h)
{
	struct hd_share *s = hd_share_find(g, h->arg[0]);

	if (!s || s->first != h->arg[0] || s->npages != h->arg[1])
		return -EBADMSG;
	close(s->fd);
	g->pages -= s->npages;
	*s = g->shares[--g->nshares];
	return 0;
}

static struct hd_gchan *hd_gchan_find(struct hd_guest *g, uint32_t port)
{
	uint32_t i;

	for (i = 0; i < g->nchans; i++)
		if (g->chans[i].port == port)
			return &g->chans[i];
	return NULL;
}

/*
 * A channel is made by dom0 (issue 12): a guest-made eventfd shares its
 * flags and counter with the guest, which cleared O_NONBLOCK and filled it
 * to leave dom0 in write(2) for ever.  Now dom0 only reads the shared
 * eventfd (RWF_NOWAIT) and writes to its own socket end, shut for reading
 * so the guest cannot queue fds there for dom0 to drop (a lingering
 * socket's release waits).  The reply carries the eventfd and the guest's
 * socket end.
 */
static int hd_chan_msg(struct hd_guest *g, const struct vhp_hdr *h, int *nfds)
{
	struct hd_gchan *c;
	int sv[2], efd, r;

	if (*nfds)
		return -EBADMSG;
	if (hd_gchan_find(g, h->arg[0]))
		return hd_reply(g, h, -EEXIST, NULL, 0, 0), 0;
	if (g->nchans >= g->d->max_chans)
		return hd_reply(g, h, -ENOSPC, NULL, 0, 0), 0;
	if (g->nchans == g->ccap) {
		uint32_t ncap = g->ccap ? g->ccap * 2 : 8;
		struct hd_gchan *n = realloc(g->chans, ncap * sizeof(*n));

		if (!n)
			return hd_reply(g, h, -ENOMEM, NULL, 0, 0), 0;
		g->chans = n;
		g->ccap = ncap;
	}
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (efd < 0)
		return hd_reply(g, h, -errno, NULL, 0, 0), 0;
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
		r = -errno;
		goto err_efd;
	}
	/* fds are numbered lowest free first: a high one means vrdmad is
	 * near EMFILE, which would break every guest's fd passing. */
	r = -ENOSPC;
	if ((uint64_t)sv[1] >= g->d->fd_limit)
		goto err_sv;
	if (shutdown(sv[0], SHUT_RD) < 0) {
		r = -errno;
		goto err_sv;
	}
	c = &g->chans[g->nchans++];
	c->port = h->arg[0];
	c->out_fd = sv[0];
	c->in_fd = fcntl(efd, F_DUPFD_CLOEXEC, 0);	/* ours; efd goes */
	if (c->in_fd < 0) {
		r = -errno;
		g->nchans--;
		goto err_sv;
	}
	/* Both go with the reply (closed here once sent): dom0 keeps the
	 * eventfd's dup and its own socket end. */
	hd_send_fds(g, &(struct vhp_hdr){ .type = VHP_REPLY, .seq = h->seq },
		    NULL, (int[]){ efd, sv[1] }, 2);
	return 0;

err_sv:
	hd_fd_drop(NULL, sv[1]);	/* unix sockets: see hd_gnt_release */
	hd_fd_drop(NULL, sv[0]);
err_efd:
	close(efd);
	return hd_reply(g, h, r, NULL, 0, 0), 0;
}

int hd_gnt_msg(struct hd_guest *g, const struct vhp_hdr *h, int *fds, int *nfds)
{
	struct hd_gchan *c;

	switch (h->type) {
	case VHP_SHARE:
		return hd_share_msg(g, h, fds, nfds);
	case VHP_CHAN:
		return hd_chan_msg(g, h, nfds);
	case VHP_UNSHARE:
		return *nfds ? -EBADMSG : hd_unshare_msg(g, h);
	default:	/* VHP_CHAN_CLOSE */
		c = hd_gchan_find(g, h->arg[0]);
		if (*nfds || !c)
			return -EBADMSG;
		close(c->in_fd);
		hd_fd_drop(NULL, c->out_fd);	/* see hd_gnt_release */
		*c = g->chans[--g->nchans];
		return 0;
	}
}

/* Kept memfds are shmem (hd_memfd_ok) and channels dom0's own: closing
 * them cannot wait, unlike a file the guest made up (hd_fd_drop).  dom0's
 * socket ends go to the reaper all the same: before Linux 6.1.147,
 * releasing any unix socket could run the unix GC in the caller. */
void hd_gnt_release(struct hd_guest *g)
{
	uint32_t i;

	for (i = 0; i < g->nshares; i++)
		close(g->shares[i].fd);
	for (i = 0; i < g->nchans; i++) {
		close(g->chans[i].in_fd);
		hd_fd_drop(NULL, g->chans[i].out_fd);
	}
	free(g->shares);
	free(g->chans);
	g->shares = NULL;
	g->chans = NULL;
	g->nshares = g->nchans = 0;
}

/* ---- mappings ---- */

int hd_map(struct vplat *p, uint32_t domid, const uint32_t *refs, uint32_t n,
	   int writable, struct vplat_map **out)
{
	struct hd_guest *g = hd_guest_find((struct hd *)p, domid);
	int prot = PROT_READ | (writable ? PROT_WRITE : 0);
	size_t pg = hd_page_size();
	struct hd_share *s = NULL;
	struct hd_map *m;
	uint32_t i, j, runs = 0;
	char *base;
	int flags, r;

	if (!g)
		return -ESRCH;
	if (n > g->d->max_pages)
		return -ENOMEM;
	/* Check every ref before touching anything: all or nothing.  Each
	 * run of contiguous refs costs one mmap: alternating refs must not
	 * push vrdmad past vm.max_map_count (review I1). */
	for (i = 0; i < n; i++) {
		if (!s || refs[i] - s->first >= s->npages)
			s = hd_share_find(g, refs[i]);
		if (!s)
			return -EFAULT;
		if (writable && !s->writable)
			return -EACCES;
		if (!i || refs[i] != refs[i - 1] + 1 || refs[i] == s->first)
			runs++;
	}
	if (runs > HD_MAX_RUNS - g->runs || runs > HD_NODE_RUNS - g->d->runs)
		return -ENOMEM;
	/* Rings are touched at once; a big buffer faults in as it is used
	 * rather than stalling the loop to populate it. */
	flags = MAP_FIXED | MAP_SHARED | (n <= HD_POPULATE_PAGES ? MAP_POPULATE : 0);
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->base.ops = p->ops;
	m->len = (size_t)n * pg;
	/* Reserve the whole range, then place each run of pages inside it. */
	base = mmap(NULL, m->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED) {
		free(m);
		return -ENOMEM;
	}
	for (i = 0; i < n; i = j) {
		s = hd_share_find(g, refs[i]);
		for (j = i + 1; j < n && refs[j] == refs[j - 1] + 1 &&
			       refs[j] - s->first < s->npages; j++)
			;
		if (mmap(base + (size_t)i * pg, (size_t)(j - i) * pg, prot, flags, s->fd,
			 (off_t)(refs[i] - s->first) * (off_t)pg) == MAP_FAILED) {
			r = errno == EPERM || errno == EACCES ? -EACCES : -ENOMEM;
			munmap(base, m->len);
			free(m);
			return r;
		}
	}
	m->base.addr = base;
	m->base.cost = runs;		/* against the guest's and node's caps */
	m->d = g->d;
	m->domid = domid;
	m->writable = writable;
	g->runs += runs;
	g->d->runs += runs;
	*out = &m->base;
	return 0;
}

void hd_unmap(struct vplat_map *bm)
{
	struct hd_map *m = (struct hd_map *)bm;
	struct hd_guest *g = hd_guest_find(m->d, m->domid);

	/* The guest may be gone already: its count went with it. */
	if (g && g->runs >= m->base.cost)
		g->runs -= m->base.cost;
	m->d->runs -= m->base.cost;
	/* As gntdev's unmap-notify does; dom0's death the guest sees itself. */
	if (m->live)
		__atomic_store_n(m->live, 0, __ATOMIC_RELEASE);
	munmap(m->base.addr, m->len);
	free(m);
}

/* Runs are the node's table; pages are the guests' own memfds, mapped
 * without filling any table of vrdmad's beyond the page tables. */
void hd_map_limits(const struct vplat *p, struct vplat_map_limits *l)
{
	(void)p;
	l->maps = HD_NODE_RUNS;
	l->pages = UINT64_MAX;
}

/*
 * No kernel clears a byte when vrdmad dies here: the guest's platform
 * does, when vrdmad's socket hangs up (host_guest.c).  We only clear it
 * at unmap, and the guest needs no kick: its waiters see the socket too.
 */
int hd_map_live(struct vplat_map *bm, size_t off, struct vplat_chan *c)
{
	struct hd_map *m = (struct hd_map *)bm;

	(void)c;
	if (!m->writable || off >= m->len)
		return -EINVAL;
	m->live = (uint8_t *)m->base.addr + off;
	return 0;
}

static uint64_t hd_clamp(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Per-guest fd caps from the fd limit vrdmad runs with (review I1):
 * a share holds one fd, a channel two (four once dom0 binds it). */
void hd_fd_caps(struct hd *d)
{
	struct rlimit rl;
	uint64_t nofile = 1024, per;

	if (!getrlimit(RLIMIT_NOFILE, &rl))
		nofile = rl.rlim_cur == RLIM_INFINITY ? 1u << 20 : rl.rlim_cur;
	per = nofile > 2 * HD_FD_RESERVE ? (nofile - HD_FD_RESERVE) / HD_MAX_GUESTS : 0;
	/* Floors keep a small setup usable; past them the fd_limit checks
	 * (accept, SHARE, CHAN) refuse politely instead of hitting EMFILE. */
	d->max_chans = (uint32_t)hd_clamp(per / 16, 4, HD_MAX_CHANS);
	/* A channel's four, and two more per reply waiting in its outbox
	 * (at most max_chans replies there: hd_send_fds). */
	per = per > 1 + 6ull * d->max_chans ? per - 1 - 6ull * d->max_chans : 0;
	d->max_shares = (uint32_t)hd_clamp(per, 64, HD_MAX_SHARES);
	/* Headroom past fd_limit > one message's fds (VHP_SCM_MAX_FD). */
	d->fd_limit = nofile > HD_FD_RESERVE ? nofile - HD_FD_RESERVE / 2 : nofile / 2;
}

/* ---- bound channels ---- */

#define hd_chan_of(c) ((struct hd_chan *)(c))

int hd_chan_bind(struct vplat *p, uint32_t domid, uint32_t port,
		 struct vplat_chan **out)
{
	struct hd *d = (struct hd *)p;
	struct hd_guest *g = hd_guest_find(d, domid);
	struct hd_gchan *gc;
	struct hd_chan *c;

	if (!g)
		return -ESRCH;
	gc = hd_gchan_find(g, port);
	if (!gc)
		return -ENOENT;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->base.ops = p->ops;
	c->domid = domid;
	c->guest_sock = g->sock;
	/* Our own copies: the guest may close the port or die meanwhile. */
	c->in_fd = fcntl(gc->in_fd, F_DUPFD_CLOEXEC, 0);
	c->out_fd = fcntl(gc->out_fd, F_DUPFD_CLOEXEC, 0);
	if (c->in_fd < 0 || c->out_fd < 0) {
		int r = -errno;

		if (c->in_fd >= 0)
			close(c->in_fd);
		if (c->out_fd >= 0)
			close(c->out_fd);
		free(c);
		return r;
	}
	c->next = d->chans;
	if (c->next)
		c->next->pprev = &c->next;
	c->pprev = &d->chans;
	d->chans = c;
	*out = &c->base;
	return 0;
}

int hd_notify(struct vplat_chan *bc)
{
	struct hd_chan *c = hd_chan_of(bc);

	if (c->dead)
		return -EPIPE;
	return hc_sock_notify(c->out_fd);
}

int hd_chan_fd(const struct vplat_chan *bc)
{
	return ((const struct hd_chan *)bc)->in_fd;
}

int hd_chan_ack(struct vplat_chan *bc)
{
	return hc_efd_ack(hd_chan_of(bc)->in_fd);
}

int hd_chan_wait(struct vplat_chan *bc, int timeout_ms)
{
	struct hd_chan *c = hd_chan_of(bc);

	if (c->dead)
		return hc_efd_ack(c->in_fd) > 0 ? 0 : -EPIPE;
	return hc_chan_wait(c->in_fd, hc_efd_ack, c->guest_sock, timeout_ms);
}

void hd_chan_close(struct vplat_chan *bc)
{
	struct hd_chan *c = hd_chan_of(bc);

	if (c->pprev) {
		*c->pprev = c->next;
		if (c->next)
			c->next->pprev = c->pprev;
	}
	close(c->in_fd);
	hd_fd_drop(NULL, c->out_fd);	/* see hd_gnt_release */
	free(c);
}
