// SPDX-License-Identifier: MIT
/*
 * Plain host, guest role: the guest's "hypervisor" is vrdmad at the other
 * end of <run_dir>/guest.sock.  Every call is a synchronous round trip
 * with a time limit; watch events that arrive meanwhile are queued and
 * delivered from vplat_process().  vplat_fd() is an epoll fd over the
 * socket and an eventfd that says "events queued", because a round trip
 * may swallow the socket readiness an event brought.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "host_guest.h"
#include "log.h"
#include "vplat_impl.h"

#define HG_DELIVER_MAX		1024	/* events per vplat_process() */

struct hg_watch {
	struct hg_watch *next;
	uint64_t token;
	vplat_watch_fn *cb;
	void *arg;
	char path[];
};

struct hg_evt {
	struct hg_evt *next;
	uint64_t token;
	char path[];
};

static void hg_queue_event(struct hg *g, const struct vhp_hdr *h, const char *path)
{
	size_t n = strnlen(path, h->len);
	struct hg_evt *e;
	uint64_t one = 1;

	if (h->len == 0 || n != h->len - 1) {
		vlog_warn("platform: dom0 sent a malformed watch event, ignored");
		return;
	}
	e = malloc(sizeof(*e) + n + 1);
	if (!e) {
		vlog_err("platform: out of memory, watch event for %s lost", path);
		return;
	}
	e->next = NULL;
	e->token = h->arg[0];
	memcpy(e->path, path, n + 1);
	*g->evq_tail = e;
	g->evq_tail = &e->next;
	if (write(g->evfd, &one, sizeof(one)) < 0)
		vlog_dbg("platform: event signal: %s", strerror(errno));
}

static void hg_rfd_close(struct hg *g)
{
	int i;

	for (i = 0; i < VHP_MAX_FDS; i++) {
		if (g->rfd[i] >= 0)
			vhp_drop_close(NULL, g->rfd[i]);	/* dom0's: may be anything */
		g->rfd[i] = -1;
	}
}

/* Read one message; events are queued, the rest left in g->rh/rbuf. */
static int hg_recv_one(struct hg *g, int flags)
{
	int fds[VHP_MAX_FDS], nfds, r;

	r = vhp_recv(g->sock, &g->rh, g->rbuf, VHP_PAYLOAD_MAX, fds, &nfds, flags);
	if (r == -EPIPE || r == -ECONNRESET) {
		if (!g->dead)
			vlog_warn("platform: dom0 (vrdmad) went away");
		g->dead = 1;
		return -EPIPE;
	}
	if (r == -EBADMSG) {
		vlog_err("platform: malformed message from dom0, disconnecting");
		g->dead = 1;
		return -EIO;
	}
	if (r)
		return r;
	hg_rfd_close(g);		/* nobody claimed them */
	/* Only a reply carries fds (CHAN: the channel's two). */
	if (g->rh.type == VHP_REPLY)
		while (nfds > 0) {
			nfds--;
			g->rfd[nfds] = fds[nfds];
		}
	while (nfds > 0)
		vhp_drop_close(NULL, fds[--nfds]);
	g->rbuf[g->rh.len] = '\0';
	if (g->rh.type == VHP_EVENT)
		hg_queue_event(g, &g->rh, g->rbuf);
	return 0;
}

/* Wait for the reply to seq, up to the time limit. */
static int hg_wait_reply(struct hg *g, uint32_t type, uint32_t seq)
{
	int64_t deadline = vplat_now_ms() + HG_RPC_TIMEOUT_MS;

	for (;;) {
		struct pollfd pfd = { .fd = g->sock, .events = POLLIN };
		int64_t left = deadline - vplat_now_ms();
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		r = hg_recv_one(g, MSG_DONTWAIT);
		if (r == -EAGAIN)
			continue;
		if (r)
			return r;
		/* Anything else is a late reply to a request that timed out. */
		if (g->rh.type == type && g->rh.seq == seq)
			return g->rh.err > 0 ? -EIO : g->rh.err;
	}
}

int hg_rpc(struct hg *g, uint32_t type, const uint32_t *args, const void *payload,
		  size_t plen, const int *fds, int nfds)
{
	struct vhp_hdr h = { .type = type, .seq = ++g->seq, .len = (uint32_t)plen };
	int r;

	if (g->dead)
		return -EPIPE;
	if (plen > VHP_PAYLOAD_MAX)
		return -E2BIG;
	if (args)
		memcpy(h.arg, args, sizeof(h.arg));
	r = vhp_send(g->sock, &h, payload, fds, nfds, 0);
	if (r == -EPIPE || r == -ECONNRESET)
		g->dead = 1;
	if (r)
		return r == -EAGAIN ? -ETIMEDOUT : r;
	return hg_wait_reply(g, type == VHP_HELLO ? VHP_WELCOME : VHP_REPLY, h.seq);
}

/* Requests that expect no reply (teardown paths). */
void hg_post(struct hg *g, uint32_t type, uint32_t a0, uint32_t a1)
{
	struct vhp_hdr h = { .type = type, .seq = ++g->seq, .arg = { a0, a1 } };

	if (!g->dead && vhp_send(g->sock, &h, NULL, NULL, 0, 0))
		vlog_dbg("platform: notice %u to dom0 lost", type);
}

static int hg_connect(struct hg *g, const char *run_dir)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = HG_RPC_TIMEOUT_MS / 1000 };
	int n;

	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", run_dir, VHP_SOCK_NAME);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	g->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (g->sock < 0)
		return -errno;
	/* Bounds connect() and every send: dom0 may be wedged, never us forever. */
	setsockopt(g->sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(g->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		n = -errno;
		vlog_err("platform: cannot reach vrdmad at %s: %s", sa.sun_path, strerror(-n));
		return n;
	}
	return 0;
}

/*
 * The VM name this process connects as: $VRDMA_VM (a stable name, so the
 * operator's settings come back when the VM reconnects, docs/prio.md),
 * else "program.pid".  1..40 printable characters, no blanks.
 */
static int hg_vm_name(char name[VHP_NAME_MAX])
{
	const char *vm = getenv("VRDMA_VM");
	size_t i, len;

	if (!vm || !*vm) {
		snprintf(name, VHP_NAME_MAX, "%.40s.%d", program_invocation_short_name,
			 (int)getpid());
		return 0;
	}
	len = strlen(vm);
	for (i = 0; i < len && len <= 40; i++)
		if (vm[i] < 0x21 || vm[i] > 0x7e)
			break;
	if (len > 40 || i < len) {
		vlog_err("platform: bad VRDMA_VM '%.48s': 1..40 printable characters, "
			 "no blanks", vm);
		return -EINVAL;
	}
	memcpy(name, vm, len + 1);
	return 0;
}

static int hg_open(const struct vplat_cfg *cfg, struct vplat **out)
{
	struct epoll_event ev = { .events = EPOLLIN };
	const char *run_dir = cfg->run_dir;
	uint32_t args[4] = { VHP_VERSION };
	char name[VHP_NAME_MAX];
	struct hg *g;
	int r;

	if (!run_dir)
		run_dir = getenv("VRDMA_RUN_DIR");
	if (!run_dir || !*run_dir)
		run_dir = "/run/vrdma";
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->base.ops = &vplat_host_guest_ops;
	g->sock = g->epfd = g->evfd = g->rfd[0] = g->rfd[1] = g->live_stop = -1;
	pthread_mutex_init(&g->live_lock, NULL);
	g->evq_tail = &g->evq;
	g->next_ref = HG_FIRST_REF;
	g->next_port = 1;
	g->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	g->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (g->evfd < 0 || g->epfd < 0) {
		r = -errno;
		goto err_free;
	}
	r = hg_connect(g, run_dir);
	if (r)
		goto err_free;
	if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->sock, &ev) < 0 ||
	    epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->evfd, &ev) < 0) {
		r = -errno;
		goto err_free;
	}
	r = hg_vm_name(name);
	if (r)
		goto err_free;
	r = hg_rpc(g, VHP_HELLO, args, name, strlen(name) + 1, NULL, 0);
	if (r) {
		vlog_err("platform: vrdmad refused us: %s", strerror(-r));
		goto err_free;
	}
	g->base.domid = g->rh.arg[0];
	vlog_dbg("platform: connected as domain %u (%s)", g->base.domid, name);
	*out = &g->base;
	return 0;

err_free:
	if (g->sock >= 0)
		close(g->sock);
	if (g->epfd >= 0)
		close(g->epfd);
	if (g->evfd >= 0)
		close(g->evfd);
	pthread_mutex_destroy(&g->live_lock);
	free(g);
	return r;
}

static void hg_close(struct vplat *p)
{
	struct hg *g = hg_of(p);

	while (g->watches) {
		struct hg_watch *w = g->watches;

		g->watches = w->next;
		free(w);
	}
	while (g->evq) {
		struct hg_evt *e = g->evq;

		g->evq = e->next;
		free(e);
	}
	hg_live_stop(g);		/* before its socket goes */
	hg_rfd_close(g);
	close(g->sock);
	close(g->epfd);
	close(g->evfd);
	pthread_mutex_destroy(&g->live_lock);
	free(g);
}

static int hg_fd(const struct vplat *p)
{
	return hg_of(p)->epfd;
}

static int hg_process(struct vplat *p)
{
	struct hg *g = hg_of(p);
	unsigned delivered = 0;
	uint64_t cnt;
	int r;

	while (!g->dead) {
		r = hg_recv_one(g, MSG_DONTWAIT);
		if (r == -EAGAIN)
			break;
		if (r && r != -EPIPE)
			return r;
	}
	if (read(g->evfd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return -errno;
	while (g->evq && delivered++ < HG_DELIVER_MAX) {
		struct hg_evt *e = g->evq;
		struct hg_watch *w;

		g->evq = e->next;
		if (!g->evq)
			g->evq_tail = &g->evq;
		/* Looked up per event: a callback may have unwatched it. */
		for (w = g->watches; w; w = w->next)
			if (w->token == e->token)
				break;
		if (w)
			w->cb(p, e->path, w->arg);
		free(e);
	}
	if (g->evq) {
		cnt = 1;
		if (write(g->evfd, &cnt, sizeof(cnt)) < 0)
			return -errno;
	}
	return 0;
}

/* ---- keys ---- */

static int hg_path_req(struct hg *g, uint32_t type, const char *path)
{
	return hg_rpc(g, type, NULL, path, strlen(path) + 1, NULL, 0);
}

static int hg_key_write(struct vplat *p, const char *path, const char *val)
{
	size_t pl = strlen(path) + 1, vl = strlen(val) + 1;
	char buf[VPLAT_KEY_MAX + VPLAT_VAL_MAX];

	memcpy(buf, path, pl);
	memcpy(buf + pl, val, vl);
	return hg_rpc(hg_of(p), VHP_KEY_WRITE, NULL, buf, pl + vl, NULL, 0);
}

static int hg_key_read(struct vplat *p, const char *path, char *buf, size_t len)
{
	struct hg *g = hg_of(p);
	size_t n;
	int r = hg_path_req(g, VHP_KEY_READ, path);

	if (r)
		return r;
	n = strnlen(g->rbuf, g->rh.len);
	if (g->rh.len == 0 || n != g->rh.len - 1 || n >= VPLAT_VAL_MAX)
		return -EIO;	/* dom0 is not making sense */
	if (n + 1 > len)
		return -E2BIG;
	memcpy(buf, g->rbuf, n + 1);
	return (int)n;
}

static int hg_key_rm(struct vplat *p, const char *path)
{
	return hg_path_req(hg_of(p), VHP_KEY_RM, path);
}

static int hg_key_list(struct vplat *p, const char *path, char *buf, size_t len,
		       unsigned *count)
{
	struct hg *g = hg_of(p);
	unsigned cnt = 0;
	size_t i;
	int r = hg_path_req(g, VHP_KEY_LIST, path);

	if (r)
		return r;
	if (g->rh.len && g->rbuf[g->rh.len - 1] != '\0')
		return -EIO;
	for (i = 0; i < g->rh.len; i++)
		cnt += g->rbuf[i] == '\0';
	if (g->rh.len + 1 > len)
		return -E2BIG;
	memcpy(buf, g->rbuf, g->rh.len);
	buf[g->rh.len] = '\0';
	*count = cnt;
	return 0;
}

static int hg_watch(struct vplat *p, const char *path, vplat_watch_fn *cb, void *arg)
{
	struct hg *g = hg_of(p);
	size_t n = strlen(path) + 1;
	struct hg_watch *w = malloc(sizeof(*w) + n);
	uint32_t args[4];
	int r;

	if (!w)
		return -ENOMEM;
	w->token = ++g->next_token;
	w->cb = cb;
	w->arg = arg;
	memcpy(w->path, path, n);
	/* Linked before the request: the first event arrives before the reply. */
	w->next = g->watches;
	g->watches = w;
	args[0] = (uint32_t)w->token;
	args[1] = args[2] = args[3] = 0;
	r = hg_rpc(g, VHP_WATCH, args, path, n, NULL, 0);
	if (r) {
		g->watches = w->next;
		free(w);
	}
	return r;
}

static void hg_unwatch(struct vplat *p, const char *path, void *arg)
{
	struct hg *g = hg_of(p);
	struct hg_watch **pw, *w;
	uint32_t args[4] = { 0 };

	for (pw = &g->watches; (w = *pw); pw = &w->next)
		if (w->arg == arg && strcmp(w->path, path) == 0)
			break;
	if (!w)
		return;
	*pw = w->next;
	args[0] = (uint32_t)w->token;
	free(w);
	hg_rpc(g, VHP_UNWATCH, args, NULL, 0, NULL, 0);
}

const struct vplat_ops vplat_host_guest_ops = {
	.kind		= "host",
	.open		= hg_open,
	.close		= hg_close,
	.fd		= hg_fd,
	.process	= hg_process,
	.share		= hg_share,
	.unshare	= hg_unshare,
	.chan_alloc	= hg_chan_alloc,
	.notify		= hg_notify,
	.chan_fd	= hg_chan_fd,
	.chan_ack	= hg_chan_ack,
	.chan_wait	= hg_chan_wait,
	.chan_close	= hg_chan_close,
	.key_write	= hg_key_write,
	.key_read	= hg_key_read,
	.key_rm		= hg_key_rm,
	.key_list	= hg_key_list,
	.watch		= hg_watch,
	.unwatch	= hg_unwatch,
};
