// SPDX-License-Identifier: MIT
/*
 * Plain host, guest role: grants are pages of a sealed memfd handed to
 * vrdmad with SCM_RIGHTS (refs name pages); a channel is an eventfd we
 * write and our end of a datagram socketpair we read, both made by vrdmad
 * and handed to us the same way (host_chan.h).  Blocking or not on them
 * is our business: dom0 never waits on either.
 *
 * dom0's liveness (docs/wire.md, dom0_live): on Xen the dom0 kernel clears
 * the byte when vrdmad dies; here nothing would, so when the frontend
 * allocates its channel -- right after sharing and filling its device
 * area, as on Xen (xen_guest.c) -- we remember the area's byte and start
 * one thread that sleeps in poll() on our socket to vrdmad, asking for no
 * events: it wakes only when the socket hangs up (vrdmad died or cut us
 * off) and then clears the byte.  A program that only polls its CQs then
 * sees dom0 gone with one load, and nothing is added to any call.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "host_guest.h"
#include "host_chan.h"
#include "log.h"
#include "vrdma/wire.h"

struct hg_share {
	struct vplat_share base;
	struct hg *g;
	size_t len;
};

struct hg_chan {
	struct vplat_chan base;
	struct hg *g;
	int to_dom0;			/* eventfd we write */
	int to_guest;			/* our socket end, dom0 sends to it */
	uint32_t port;
};

/* ---- grants ---- */

int hg_share(struct vplat *p, uint32_t peer, uint32_t npages, int writable,
		    struct vplat_share **out)
{
	unsigned seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	struct hg *g = hg_of(p);
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct hg_share *s;
	uint32_t args[4], i;
	int fd, r;

	if (peer != VPLAT_DOM0)
		return -EINVAL;	/* the host platform only shares with dom0 */
	if (npages > UINT32_MAX - g->next_ref || npages > SIZE_MAX / pg)
		return -ENOSPC;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->base.ops = &vplat_host_guest_ops;
	s->g = g;
	s->len = (size_t)npages * pg;
	s->base.npages = npages;
	s->base.refs = malloc(sizeof(uint32_t) * npages);
	if (!s->base.refs) {
		r = -ENOMEM;
		goto err_free;
	}
	fd = memfd_create("vrdma-share", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		r = -errno;
		goto err_free;
	}
	if (ftruncate(fd, (off_t)s->len) < 0) {
		r = -errno;
		goto err_close;
	}
	s->base.addr = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s->base.addr == MAP_FAILED) {
		r = -errno;
		goto err_close;
	}
	/*
	 * Seals are what dom0 relies on: the size never changes under its
	 * mapping (no SIGBUS), and a read-only grant cannot be mapped
	 * writable by anyone later; our own mapping stays writable.
	 */
	if (!writable)
		seals |= F_SEAL_FUTURE_WRITE;
	if (fcntl(fd, F_ADD_SEALS, seals) < 0) {
		r = -errno;
		goto err_unmap;
	}
	args[0] = g->next_ref;
	args[1] = npages;
	args[2] = !!writable;
	args[3] = 0;
	r = hg_rpc(g, VHP_SHARE, args, NULL, 0, &fd, 1);
	if (r)
		goto err_unmap;
	close(fd);
	for (i = 0; i < npages; i++)
		s->base.refs[i] = g->next_ref + i;
	g->next_ref += npages;
	g->newest = &s->base;
	*out = &s->base;
	return 0;

err_unmap:
	munmap(s->base.addr, s->len);
err_close:
	close(fd);
err_free:
	free(s->base.refs);
	free(s);
	return r;
}

void hg_unshare(struct vplat_share *bs)
{
	struct hg_share *s = (struct hg_share *)bs;
	struct hg *g = s->g;

	if (g->newest == bs)
		g->newest = NULL;
	/* Before the munmap: the thread must not write into it after. */
	pthread_mutex_lock(&g->live_lock);
	if (g->live_share == bs) {
		g->live_share = NULL;
		g->live = NULL;
	}
	pthread_mutex_unlock(&g->live_lock);
	if (s->base.addr)	/* NULL: disowned (vplat_share_disown) */
		munmap(s->base.addr, s->len);
	hg_post(s->g, VHP_UNSHARE, s->base.refs[0], s->base.npages);
	free(s->base.refs);
	free(s);
}

/* ---- dom0's liveness ---- */

static void *hg_live_main(void *arg)
{
	struct hg *g = arg;
	struct pollfd pfd[2] = {
		{ .fd = g->sock, .events = 0 },		/* POLLHUP, POLLERR only */
		{ .fd = g->live_stop, .events = POLLIN },
	};

	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			vlog_warn("platform: dom0 watch: %s", strerror(errno));
			return NULL;
		}
		if (pfd[1].revents)
			return NULL;
		if (pfd[0].revents)
			break;
	}
	pthread_mutex_lock(&g->live_lock);
	if (g->live)
		__atomic_store_n(g->live, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&g->live_lock);
	return NULL;
}

/* The newest share is the device area when its page 0 says so. */
static void hg_live_arm(struct hg *g)
{
	const struct vrdma_sring *sr;
	sigset_t all, old;
	int err;

	if (!g->newest || g->live_share || !g->newest->addr)
		return;
	sr = g->newest->addr;
	if (sr->magic != VRDMA_WIRE_MAGIC || sr->version != VRDMA_WIRE_VERSION)
		return;
	pthread_mutex_lock(&g->live_lock);
	g->live_share = g->newest;
	g->live = (uint8_t *)g->newest->addr + offsetof(struct vrdma_sring, dom0_live);
	pthread_mutex_unlock(&g->live_lock);
	if (g->live_pid)
		return;
	g->live_stop = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (g->live_stop < 0) {
		err = errno;
		goto err_warn;
	}
	/* The program's signals are not for our thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&g->live_thr, NULL, hg_live_main, g);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		close(g->live_stop);
		g->live_stop = -1;
		goto err_warn;
	}
	g->live_pid = getpid();
	return;

err_warn:
	vlog_warn("platform: cannot watch dom0 (a poller will not see it die): %s",
		  strerror(err));
}

void hg_live_stop(struct hg *g)
{
	uint64_t one = 1;

	/* A forked child has no such thread: only its starter joins it. */
	if (g->live_pid && g->live_pid == getpid()) {
		if (write(g->live_stop, &one, sizeof(one)) < 0)
			vlog_warn("platform: dom0 watch stop: %s", strerror(errno));
		pthread_join(g->live_thr, NULL);
	}
	if (g->live_stop >= 0)
		close(g->live_stop);
	g->live_stop = -1;
	g->live_pid = 0;
}

/* ---- channels ---- */

int hg_chan_alloc(struct vplat *p, uint32_t peer, struct vplat_chan **out,
			 uint32_t *port)
{
	struct hg *g = hg_of(p);
	struct hg_chan *c;
	uint32_t args[4] = { 0 };
	socklen_t len = sizeof(int);
	int type = 0, r;

	if (peer != VPLAT_DOM0)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->base.ops = &vplat_host_guest_ops;
	c->g = g;
	/* A port is never asked for twice, even after a timed-out request
	 * dom0 may have granted late. */
	c->port = g->next_port++;
	args[0] = c->port;
	r = hg_rpc(g, VHP_CHAN, args, NULL, 0, NULL, 0);
	if (r)
		goto err_free;
	c->to_dom0 = g->rfd[0];
	c->to_guest = g->rfd[1];
	g->rfd[0] = g->rfd[1] = -1;
	/* What dom0 says it made: the guest writes to_dom0 (an eventfd:
	 * anything else could be a file whose write waits on someone) and
	 * reads to_guest, which then refuses fds from dom0. */
	if (c->to_dom0 < 0 || c->to_guest < 0 || !hc_is_eventfd(c->to_dom0) ||
	    getsockopt(c->to_guest, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
	    type != SOCK_DGRAM || hc_no_rights(c->to_guest) < 0) {
		r = -EIO;	/* dom0 is not making sense */
		goto err_close;
	}
	hg_live_arm(g);
	*port = c->port;
	*out = &c->base;
	return 0;

err_close:
	if (c->to_dom0 >= 0)
		vhp_drop_close(NULL, c->to_dom0);
	if (c->to_guest >= 0)
		vhp_drop_close(NULL, c->to_guest);
err_free:
	free(c);
	return r;
}

int hg_notify(struct vplat_chan *bc)
{
	struct hg_chan *c = (struct hg_chan *)bc;

	if (c->g->dead)
		return -EPIPE;
	return hc_efd_notify(c->to_dom0);
}

int hg_chan_fd(const struct vplat_chan *bc)
{
	return ((const struct hg_chan *)bc)->to_guest;
}

int hg_chan_ack(struct vplat_chan *bc)
{
	return hc_sock_ack(((struct hg_chan *)bc)->to_guest);
}

int hg_chan_wait(struct vplat_chan *bc, int timeout_ms)
{
	struct hg_chan *c = (struct hg_chan *)bc;
	int err;

	if (c->g->dead)
		return hc_sock_ack(c->to_guest) > 0 ? 0 : -EPIPE;
	err = hc_chan_wait(c->to_guest, hc_sock_ack, c->g->sock, timeout_ms);
	if (err == -EPIPE)
		c->g->dead = 1;
	return err;
}

void hg_chan_close(struct vplat_chan *bc)
{
	struct hg_chan *c = (struct hg_chan *)bc;

	hg_post(c->g, VHP_CHAN_CLOSE, c->port, 0);
	close(c->to_dom0);
	close(c->to_guest);
	free(c);
}
