// SPDX-License-Identifier: MIT
/*
 * Xen, both roles: xenstore keys and watches through libxenstore, event
 * channels through libxenevtchn.  Watches are delivered from
 * vplat_process(): xs_fileno() is readable while events are queued and
 * xs_check_watch() hands them out one at a time without blocking.  Every
 * watch has its own token, so (path, cb, arg) triples never collide and a
 * late event for a removed watch is simply dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xenstore.h>

#include "log.h"
#include "xen_common.h"

#define XP_DELIVER_MAX		1024	/* watch events per vplat_process() */
#define XP_TOKEN_MAX		32

struct xp_watch {
	struct xp_watch *next;
	vplat_watch_fn *cb;
	void *arg;
	char token[XP_TOKEN_MAX];
	char path[];
};

int xp_new(const struct vplat_ops *ops, struct xp **out)
{
	struct xp *x = calloc(1, sizeof(*x));
	int err;

	if (!x)
		return -ENOMEM;
	x->base.ops = ops;
	x->gfd = -1;
	x->xs = xs_open(0);
	if (!x->xs) {
		err = errno ? -errno : -ENODEV;
		vlog_err("platform: cannot open xenstore (xenbus device or xenstored socket): %s",
			 strerror(-err));
		free(x);
		return err;
	}
	*out = x;
	return 0;
}

void xp_free(struct xp *x)
{
	while (x->watches) {
		struct xp_watch *w = x->watches;

		x->watches = w->next;
		xs_unwatch(x->xs, w->path, w->token);
		free(w);
	}
	xs_close(x->xs);
	free(x);
}

int xp_fd(const struct vplat *p)
{
	return xs_fileno(xp_of(p)->xs);
}

int xp_process(struct vplat *p)
{
	struct xp *x = xp_of(p);
	unsigned n;

	for (n = 0; n < XP_DELIVER_MAX; n++) {
		char **vec = xs_check_watch(x->xs);
		struct xp_watch *w;

		if (!vec)
			return errno == EAGAIN ? 0 : -errno;
		/* Looked up per event: a callback may have unwatched it. */
		for (w = x->watches; w; w = w->next)
			if (strcmp(w->token, vec[XS_WATCH_TOKEN]) == 0)
				break;
		if (w)
			w->cb(p, vec[XS_WATCH_PATH], w->arg);
		free(vec);
	}
	return 0;	/* more queued: the fd stays readable */
}

/* ---- keys ---- */

int xp_key_write(struct vplat *p, const char *path, const char *val)
{
	struct xp *x = xp_of(p);

	if (!xs_write(x->xs, x->tx, path, val, (unsigned)strlen(val)))
		return -errno;
	return 0;
}

int xp_key_read(struct vplat *p, const char *path, char *buf, size_t len)
{
	struct xp *x = xp_of(p);
	unsigned n;
	char *v = xs_read(x->xs, x->tx, path, &n);
	int err = 0;

	if (!v)
		return -errno;
	/* Written by anyone with access: a value is text, one string. */
	if (memchr(v, '\0', n))
		err = -EINVAL;
	else if (n >= VPLAT_VAL_MAX || n + 1 > len)
		err = -E2BIG;
	else
		memcpy(buf, v, n + 1);
	free(v);
	return err ? err : (int)n;
}

int xp_key_rm(struct vplat *p, const char *path)
{
	struct xp *x = xp_of(p);
	unsigned n;
	char *v;

	/* xenstored accepts removing an absent child; the seam says -ENOENT. */
	v = xs_read(x->xs, x->tx, path, &n);
	if (!v)
		return -errno;
	free(v);
	if (!xs_rm(x->xs, x->tx, path))
		return -errno;
	return 0;
}

/* One transaction: read, compare, write; retried while xenstored says
 * another transaction got in between (EAGAIN), a bounded number of times. */
int xp_key_cas(struct vplat *p, const char *path, const char *old, const char *val)
{
	struct xp *x = xp_of(p);
	int tries, err = -EAGAIN;

	for (tries = 0; tries < 16 && err == -EAGAIN; tries++) {
		xs_transaction_t t = xs_transaction_start(x->xs);
		unsigned n;
		char *v;

		if (t == XBT_NULL)
			return -errno;
		v = xs_read(x->xs, t, path, &n);
		if (old ? !v || n != strlen(old) || memcmp(v, old, n) : v != NULL) {
			free(v);
			xs_transaction_end(x->xs, t, true);
			return -EEXIST;
		}
		free(v);
		if (!xs_write(x->xs, t, path, val, (unsigned)strlen(val))) {
			err = -errno;
			xs_transaction_end(x->xs, t, true);
			return err;
		}
		err = xs_transaction_end(x->xs, t, false) ? 0 : -errno;
	}
	return err;
}

int xp_key_list(struct vplat *p, const char *path, char *buf, size_t len,
		unsigned *count)
{
	struct xp *x = xp_of(p);
	unsigned num, i;
	size_t used = 0;
	char **names = xs_directory(x->xs, x->tx, path, &num);

	if (!names)
		return -errno;
	for (i = 0; i < num; i++) {
		size_t n = strlen(names[i]) + 1;

		if (used + n + 1 > len) {
			free(names);
			return -E2BIG;
		}
		memcpy(buf + used, names[i], n);
		used += n;
	}
	buf[used] = '\0';
	*count = num;
	free(names);
	return 0;
}

int xp_key_perm(struct vplat *p, const char *path, uint32_t owner, uint32_t reader)
{
	/* First entry: the owner (and the default for everyone else: none). */
	struct xs_permissions perms[2] = {
		{ .id = owner, .perms = XS_PERM_NONE },
		{ .id = reader, .perms = XS_PERM_READ },
	};

	struct xp *x = xp_of(p);

	if (!xs_set_permissions(x->xs, x->tx, path, perms, reader == owner ? 1 : 2))
		return -errno;
	return 0;
}

/* A batch of key calls as one transaction (vplat_dev_attach); not nested. */
int xp_tx_start(struct vplat *p)
{
	struct xp *x = xp_of(p);
	xs_transaction_t t;

	if (x->tx != XBT_NULL)
		return -EBUSY;
	t = xs_transaction_start(x->xs);
	if (t == XBT_NULL)
		return -errno;
	x->tx = t;
	return 0;
}

int xp_tx_end(struct vplat *p, int abort)
{
	struct xp *x = xp_of(p);
	xs_transaction_t t = x->tx;

	x->tx = XBT_NULL;
	if (t == XBT_NULL)
		return -EINVAL;
	return xs_transaction_end(x->xs, t, abort ? true : false) ? 0 : -errno;
}

int xp_watch(struct vplat *p, const char *path, vplat_watch_fn *cb, void *arg)
{
	struct xp *x = xp_of(p);
	size_t n = strlen(path) + 1;
	struct xp_watch *w = malloc(sizeof(*w) + n);

	if (!w)
		return -ENOMEM;
	w->cb = cb;
	w->arg = arg;
	snprintf(w->token, sizeof(w->token), "vrdma-%" PRIu64, ++x->next_token);
	memcpy(w->path, path, n);
	/* Linked first: xenstored fires every new watch once, maybe at once. */
	w->next = x->watches;
	x->watches = w;
	if (!xs_watch(x->xs, path, w->token)) {
		int err = -errno;

		x->watches = w->next;
		free(w);
		return err;
	}
	return 0;
}

void xp_unwatch(struct vplat *p, const char *path, void *arg)
{
	struct xp *x = xp_of(p);
	struct xp_watch **pw, *w;

	for (pw = &x->watches; (w = *pw); pw = &w->next)
		if (w->arg == arg && strcmp(w->path, path) == 0)
			break;
	if (!w)
		return;
	*pw = w->next;
	if (!xs_unwatch(x->xs, w->path, w->token))
		vlog_dbg("platform: unwatch %s: %s", w->path, strerror(errno));
	free(w);
}

/* ---- event channels ---- */

int xp_chan_new(struct xp *x, const struct vplat_ops *ops, struct xp_chan **out)
{
	struct xp_chan *c = calloc(1, sizeof(*c));
	int fl, err;

	if (!c)
		return -ENOMEM;
	c->base.ops = ops;
	c->x = x;
	c->xce = xenevtchn_open(NULL, 0);
	if (!c->xce) {
		err = errno ? -errno : -ENODEV;
		vlog_err("platform: cannot open /dev/xen/evtchn: %s", strerror(-err));
		free(c);
		return err;
	}
	c->fd = xenevtchn_fd(c->xce);
	/* xenevtchn_pending() reads the fd: it must never block us. */
	fl = fcntl(c->fd, F_GETFL);
	if (fl < 0 || fcntl(c->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		err = -errno;
		xenevtchn_close(c->xce);
		free(c);
		return err;
	}
	*out = c;
	return 0;
}

void xp_chan_free(struct xp_chan *c)
{
	xenevtchn_close(c->xce);
	free(c);
}

int xp_notify(struct vplat_chan *bc)
{
	struct xp_chan *c = (struct xp_chan *)bc;

	return xenevtchn_notify(c->xce, c->local) < 0 ? -errno : 0;
}

int xp_chan_fd(const struct vplat_chan *bc)
{
	return ((const struct xp_chan *)bc)->fd;
}

/* Drain pending deliveries and unmask, as the kernel masks on delivery. */
int xp_chan_ack(struct vplat_chan *bc)
{
	struct xp_chan *c = (struct xp_chan *)bc;
	int got = 0, i;

	for (i = 0; i < 64; i++) {
		xenevtchn_port_or_error_t port = xenevtchn_pending(c->xce);

		if (port < 0)
			return errno == EAGAIN || got ? got : -errno;
		if (xenevtchn_unmask(c->xce, (evtchn_port_t)port) < 0)
			return -errno;
		got = 1;
	}
	return got;
}

int xp_chan_wait(struct vplat_chan *bc, int timeout_ms)
{
	struct xp_chan *c = (struct xp_chan *)bc;
	int64_t deadline = vplat_now_ms() + timeout_ms;

	for (;;) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		int64_t left;
		int r = xp_chan_ack(bc);

		if (r > 0)
			return 0;
		if (r < 0)
			return r;
		left = deadline - vplat_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

void xp_chan_close(struct vplat_chan *bc)
{
	struct xp_chan *c = (struct xp_chan *)bc;

	if (xenevtchn_unbind(c->xce, c->local) < 0)
		vlog_dbg("platform: unbind port %u: %s", c->local, strerror(errno));
	xp_chan_free(c);
}
