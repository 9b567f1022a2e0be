// SPDX-License-Identifier: MIT
/*
 * Control socket transport: accept, read one bounded line, build the
 * response in a memstream, send it as the peer drains it, close.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "ctl.h"
#include "log.h"

#define VD_CTL_ACCEPT_BATCH	16	/* accepts per wakeup */
#define VD_CTL_SEND_BATCH	64	/* sends per wakeup */

struct vd_ctl_client {
	struct vd_ctl_client *next;
	struct vd_ctl *ctl;
	int fd;
	uint64_t timer;
	size_t req_len;
	char *resp;
	size_t resp_len, resp_off;
	char req[VD_CTL_REQ_MAX + 1];
};

struct vd_ctl {
	struct vev_loop *loop;
	int fd;
	vd_ctl_fn *fn;
	void *arg;
	struct vd_ctl_client *clients;
	unsigned nclients;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

static void vd_ctl_drop(struct vd_ctl_client *cl)
{
	struct vd_ctl *c = cl->ctl;
	struct vd_ctl_client **pp;

	for (pp = &c->clients; *pp; pp = &(*pp)->next) {
		if (*pp == cl) {
			*pp = cl->next;
			break;
		}
	}
	c->nclients--;
	vev_timer_del(c->loop, cl->timer);
	vev_fd_del(c->loop, cl->fd);
	close(cl->fd);
	free(cl->resp);
	free(cl);
}

static int vd_ctl_timeout(struct vev_loop *l, uint64_t id, void *arg)
{
	struct vd_ctl_client *cl = arg;

	(void)l;
	(void)id;
	vlog_dbg("ctl: client fd %d timed out, dropped", cl->fd);
	vd_ctl_drop(cl);
	return VEV_TIMER_DONE;
}

/*
 * Response sent: discard what the peer sent beyond its line, since
 * closing with unread input resets the connection and the peer could
 * lose the response.  Bounded: a client still sending gets the reset.
 */
static void vd_ctl_finish(struct vd_ctl_client *cl)
{
	char scratch[1024];
	int i;

	for (i = 0; i < 16; i++)
		if (recv(cl->fd, scratch, sizeof(scratch), MSG_DONTWAIT) <= 0)
			break;
	vd_ctl_drop(cl);
}

/*
 * Send what the peer takes now; the rest on the next writable event.  The
 * limit is on a peer that takes nothing: each send that moved bytes gives
 * it VD_CTL_TIMEOUT_MS again, so a long answer (a trace dump) is not cut
 * short while it drains.
 */
static void vd_ctl_send(struct vd_ctl_client *cl)
{
	size_t off0 = cl->resp_off;
	ssize_t n;
	int i;

	for (i = 0; i < VD_CTL_SEND_BATCH && cl->resp_off < cl->resp_len; i++) {
		n = send(cl->fd, cl->resp + cl->resp_off, cl->resp_len - cl->resp_off,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			vlog_dbg("ctl: send to fd %d: %s", cl->fd, strerror(errno));
			vd_ctl_drop(cl);
			return;
		}
		cl->resp_off += (size_t)n;
	}
	if (cl->resp_off == cl->resp_len) {
		vd_ctl_finish(cl);
		return;
	}
	if (cl->resp_off != off0) {
		vev_timer_del(cl->ctl->loop, cl->timer);
		if (vev_timer_add(cl->ctl->loop, VD_CTL_TIMEOUT_MS, vd_ctl_timeout, cl,
				  &cl->timer) < 0)
			vd_ctl_drop(cl);
	}
}

/* Build the response (the handler's, or err) and start sending it. */
static void vd_ctl_answer(struct vd_ctl_client *cl, const char *line, const char *err)
{
	size_t size = 0;
	char *buf = NULL;
	FILE *f;

	f = open_memstream(&buf, &size);
	if (!f) {
		vlog_warn("ctl: open_memstream: %s", strerror(errno));
		vd_ctl_drop(cl);
		return;
	}
	if (err) {
		fprintf(f, "error: %s\n", err);
	} else {
		int64_t t0 = vev_now_ms();

		cl->ctl->fn(cl->ctl->arg, line, f);
		if (vev_now_ms() - t0 >= VEV_STALL_MS)
			vlog_warn("ctl: '%.64s' took %lld ms", line,
				  (long long)(vev_now_ms() - t0));
	}
	/* Every response ends with a newline, whatever the handler wrote. */
	fflush(f);
	if (size == 0 || buf[size - 1] != '\n')
		fputc('\n', f);
	if (fclose(f) != 0) {
		free(buf);
		vlog_warn("ctl: building the response failed");
		vd_ctl_drop(cl);
		return;
	}
	cl->resp = buf;
	cl->resp_len = size;
	cl->resp_off = 0;
	if (vev_fd_mod(cl->ctl->loop, cl->fd, VEV_WRITE) < 0) {
		vd_ctl_drop(cl);
		return;
	}
	vd_ctl_send(cl);
}

static void vd_ctl_read(struct vd_ctl_client *cl)
{
	size_t len;
	char *nl;
	ssize_t n;

	n = recv(cl->fd, cl->req + cl->req_len, VD_CTL_REQ_MAX - cl->req_len,
		 MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		vd_ctl_drop(cl);
		return;
	}
	if (n == 0 && cl->req_len == 0) {
		vd_ctl_drop(cl);	/* connected, said nothing, left */
		return;
	}
	cl->req_len += (size_t)n;
	cl->req[cl->req_len] = '\0';
	nl = memchr(cl->req, '\n', cl->req_len);
	if (nl) {
		*nl = '\0';
	} else if (n > 0) {
		/* No newline yet: wait for more, unless the buffer is full. */
		if (cl->req_len == VD_CTL_REQ_MAX)
			vd_ctl_answer(cl, NULL, "request too long");
		return;
	}
	/* Peer half-closed without a newline: take what it sent. */
	len = nl ? (size_t)(nl - cl->req) : cl->req_len;
	if (len && cl->req[len - 1] == '\r')
		cl->req[--len] = '\0';
	if (strlen(cl->req) != len) {
		vd_ctl_answer(cl, NULL, "NUL byte in request");
		return;
	}
	vd_ctl_answer(cl, cl->req, NULL);
}

static void vd_ctl_client_cb(struct vev_loop *l, int fd, unsigned events, void *arg)
{
	struct vd_ctl_client *cl = arg;

	(void)l;
	(void)fd;
	if (cl->resp)
		vd_ctl_send(cl);
	else if (events & (VEV_READ | VEV_ERROR))
		vd_ctl_read(cl);
}

static void vd_ctl_accept_one(struct vd_ctl *c, int fd)
{
	struct vd_ctl_client *cl;

	if (c->nclients >= VD_CTL_MAX_CLIENTS) {
		vlog_warn("ctl: too many clients, refusing one");
		close(fd);
		return;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl) {
		close(fd);
		return;
	}
	cl->ctl = c;
	cl->fd = fd;
	if (vev_fd_add(c->loop, fd, VEV_READ, vd_ctl_client_cb, cl) < 0)
		goto err_free;
	if (vev_timer_add(c->loop, VD_CTL_TIMEOUT_MS, vd_ctl_timeout, cl, &cl->timer) < 0)
		goto err_fd_del;
	cl->next = c->clients;
	c->clients = cl;
	c->nclients++;
	return;

err_fd_del:
	vev_fd_del(c->loop, fd);
err_free:
	free(cl);
	close(fd);
}

static void vd_ctl_listen_cb(struct vev_loop *l, int fd, unsigned events, void *arg)
{
	struct vd_ctl *c = arg;
	int i, cfd;

	(void)l;
	(void)events;
	for (i = 0; i < VD_CTL_ACCEPT_BATCH; i++) {
		cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				vlog_warn("ctl: accept: %s", strerror(errno));
			return;
		}
		vd_ctl_accept_one(c, cfd);
	}
}

/* 1 if a live daemon answers on path, 0 if not (stale file removed). */
static int vd_ctl_in_use(const struct sockaddr_un *sa)
{
	int fd, r;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	if (r == 0 || errno == EAGAIN) {
		close(fd);
		return 1;
	}
	r = errno;
	close(fd);
	if (r == ECONNREFUSED)
		unlink(sa->sun_path);
	return 0;
}

int vd_ctl_open(struct vev_loop *l, const char *path, vd_ctl_fn *fn, void *arg,
		struct vd_ctl **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct vd_ctl *c;
	mode_t old_mask;
	int err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	err = vd_ctl_in_use(&sa);
	if (err)
		return err < 0 ? err : -EADDRINUSE;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->loop = l;
	c->fn = fn;
	c->arg = arg;
	strcpy(c->path, path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		err = -errno;
		goto err_free;
	}
	/* Owner-only from the start: no window where others may connect. */
	old_mask = umask(0077);
	err = bind(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	umask(old_mask);
	if (err)
		goto err_close;
	if (listen(c->fd, VD_CTL_MAX_CLIENTS) < 0) {
		err = -errno;
		goto err_unlink;
	}
	err = vev_fd_add(l, c->fd, VEV_READ, vd_ctl_listen_cb, c);
	if (err)
		goto err_unlink;
	*out = c;
	return 0;

err_unlink:
	unlink(path);
err_close:
	close(c->fd);
err_free:
	free(c);
	return err;
}

void vd_ctl_close(struct vd_ctl *c)
{
	if (!c)
		return;
	while (c->clients)
		vd_ctl_drop(c->clients);
	vev_fd_del(c->loop, c->fd);
	close(c->fd);
	unlink(c->path);
	free(c);
}

unsigned vd_ctl_clients(const struct vd_ctl *c)
{
	return c->nclients;
}
