// SPDX-License-Identifier: MIT
/*
 * The engine: one thread per process, running while an event channel
 * exists.  It polls every id's socket (listening, connecting, in the
 * handshake, connected), moves the handshake on, applies the time limits
 * and queues the events.  Ids are named by serial across the poll, so one
 * destroyed meanwhile is simply not found.
 */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vcm.h"

static struct vcm_id *vcm_find_locked(uint64_t serial)
{
	struct vcm_id *v;

	for (v = vcm.ids; v; v = v->next)
		if (v->serial == serial)
			return v;
	return NULL;
}

static void vcm_queue_locked(struct vcm_id *v, enum rdma_cm_event_type type,
			     int status, int with_param)
{
	struct vcm_event *e = vcm_event_new(v, type, status);

	if (!e)
		return;				/* the program's wait ends by its limits */
	if (with_param)
		vcm_conn_param(v, e);
	vcm_event_queue_locked(e);
}

void vcm_fail_connect_locked(struct vcm_id *v, enum rdma_cm_event_type type, int status)
{
	vcm_close_locked(v, VCM_CLOSED);
	vcm_queue_locked(v, type, status, 0);
}

static void vcm_disconnected_locked(struct vcm_id *v)
{
	vcm_close_locked(v, VCM_CLOSED);
	if (v->disc_queued)
		return;
	v->disc_queued = 1;
	vcm_queue_locked(v, RDMA_CM_EVENT_DISCONNECTED, 0, 0);
}

/* Keepalive: a peer that vanishes without a FIN still ends in bounded time. */
void vcm_sock_tune(int fd)
{
	int on = 1, idle = 5, intvl = 2, cnt = 3;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

static void vcm_on_listen(struct vcm_id *l)
{
	struct vcm_id *c;
	socklen_t len;
	int fd;

	for (;;) {
		fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;			/* EAGAIN, or the program's limits */
		c = vcm_id_alloc(NULL, NULL, l->id.ps, l->id.qp_type);
		if (!c) {
			close(fd);
			continue;
		}
		vcm_sock_tune(fd);
		c->fd = fd;
		c->state = VCM_REQ_WAIT;
		c->deadline = vcm_now() + VCM_HELLO_MS;
		c->listen_serial = l->serial;
		len = sizeof(c->id.route.addr.src_storage);
		getsockname(fd, &c->id.route.addr.src_addr, &len);
		len = sizeof(c->id.route.addr.dst_storage);
		getpeername(fd, &c->id.route.addr.dst_addr, &len);
		vcm_id_link_locked(c);
	}
}

static void vcm_reject_locked(struct vcm_id *v, int status)
{
	struct vcm_msg m;

	vcm_msg_init(&m, VCM_MSG_REJ);
	m.status = (int32_t)htobe32((uint32_t)status);
	vcm_msg_send(v->fd, &m);
}

/*
 * A child's REQ (SIDR_REQ to a UD listener): it becomes a CONNECT_REQUEST
 * on its listener's channel.  As the kernel's rdma_cm, a listener takes
 * requests of its own QP type only.
 */
static void vcm_on_req(struct vcm_id *c, const struct vcm_msg *m)
{
	struct vcm_id *l = vcm_find_locked(c->listen_serial);
	int ud = vcm_is_ud(c);
	struct vcm_event *e;

	if (m->type != (ud ? VCM_MSG_SIDR_REQ : VCM_MSG_REQ) || !l ||
	    l->state != VCM_LISTEN ||
	    m->pdata_len > (ud ? VCM_SIDR_REQ_PDATA : VCM_REQ_PDATA)) {
		vcm_reject_locked(c, -ECONNREFUSED);
		vcm_id_reap_locked(c);
		return;
	}
	/* The listener holds the device: this only counts a reference. */
	if (vcm_dev_get(c)) {
		vcm_reject_locked(c, -ENODEV);
		vcm_id_reap_locked(c);
		return;
	}
	vcm_peer_from_msg(&c->peer, m);
	c->peer_known = !ud;		/* a SIDR_REQ names no QP */
	memcpy(c->id.route.addr.addr.ibaddr.dgid.raw, c->peer.gid, 16);
	c->id.channel = l->id.channel;
	c->id.context = l->id.context;
	c->state = VCM_REQ_RCVD;
	c->deadline = 0;
	e = vcm_event_new(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (!e) {
		vcm_reject_locked(c, -ENOMEM);
		vcm_id_reap_locked(c);
		return;
	}
	e->owner = l;
	e->ev.listen_id = &l->id;
	if (ud)
		vcm_ud_request(c, e);
	else
		vcm_conn_param(c, e);
	vcm_event_queue_locked(e);
}

static void vcm_on_connected(struct vcm_id *v)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(v->fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err) {
		vcm_connect_failed_locked(v, err);
		return;
	}
	len = sizeof(v->id.route.addr.dst_storage);
	if (getpeername(v->fd, &v->id.route.addr.dst_addr, &len) < 0)
		return;				/* not yet: a stale wake-up */
	len = sizeof(v->id.route.addr.src_storage);
	getsockname(v->fd, &v->id.route.addr.src_addr, &len);
	vcm_sock_tune(v->fd);
	err = vcm_msg_send(v->fd, &v->out);
	if (err) {
		vcm_fail_connect_locked(v, RDMA_CM_EVENT_UNREACHABLE, -err);
		return;
	}
	v->state = VCM_REQ_SENT;
	v->deadline = vcm_now() + VCM_REPLY_MS;
}

/* The REJ's status and private data go to the REJECTED event. */
static void vcm_on_rej(struct vcm_id *v, const struct vcm_msg *m)
{
	struct vcm_event *e;

	e = vcm_event_new(v, RDMA_CM_EVENT_REJECTED, (int32_t)be32toh((uint32_t)m->status));
	vcm_close_locked(v, VCM_CLOSED);
	if (!e)
		return;
	if (m->pdata_len && m->pdata_len <= VCM_REJ_PDATA) {
		memcpy(e->pdata, m->pdata, m->pdata_len);
		e->ev.param.conn.private_data = e->pdata;
		e->ev.param.conn.private_data_len = m->pdata_len;
	}
	vcm_event_queue_locked(e);
}

/* A message (rc 0, in v->in) or the end of the connection (rc). */
static void vcm_on_msg(struct vcm_id *v, int rc)
{
	const struct vcm_msg *m = &v->in;

	if (!rc)
		rc = vcm_msg_check(m);
	switch (v->state) {
	case VCM_REQ_WAIT:
		if (rc)
			vcm_id_reap_locked(v);
		else
			vcm_on_req(v, m);
		return;
	case VCM_REQ_RCVD:
		vcm_close_locked(v, VCM_CLOSED);	/* the connector gave up */
		return;
	case VCM_REQ_SENT:
		if (vcm_is_ud(v))
			vcm_ud_on_reply(v, m, rc);
		else if (rc == EPROTO)
			vcm_fail_connect_locked(v, RDMA_CM_EVENT_CONNECT_ERROR, -EPROTO);
		else if (rc)
			vcm_fail_connect_locked(v, RDMA_CM_EVENT_REJECTED, -ECONNREFUSED);
		else if (m->type == VCM_MSG_REJ)
			vcm_on_rej(v, m);
		else if (m->type != VCM_MSG_REP || m->pdata_len > VCM_REP_PDATA)
			vcm_fail_connect_locked(v, RDMA_CM_EVENT_CONNECT_ERROR, -EPROTO);
		else {
			vcm_peer_from_msg(&v->peer, m);
			v->peer_known = 1;
			memcpy(v->id.route.addr.addr.ibaddr.dgid.raw, v->peer.gid, 16);
			v->state = VCM_REP_RCVD;
			v->deadline = 0;
			/* rdma_get_cm_event makes it ESTABLISHED (channel.c) */
			vcm_queue_locked(v, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, 1);
		}
		return;
	case VCM_REP_SENT:
		if (rc == EPROTO)
			vcm_fail_connect_locked(v, RDMA_CM_EVENT_CONNECT_ERROR, -EPROTO);
		else if (rc)
			vcm_fail_connect_locked(v, RDMA_CM_EVENT_CONNECT_ERROR, -ECONNRESET);
		else if (m->type == VCM_MSG_REJ)
			vcm_on_rej(v, m);
		else if (m->type != VCM_MSG_RTU)
			vcm_fail_connect_locked(v, RDMA_CM_EVENT_CONNECT_ERROR, -EPROTO);
		else {
			v->state = VCM_CONNECTED;
			v->deadline = 0;
			vcm_queue_locked(v, RDMA_CM_EVENT_ESTABLISHED, 0, 0);
		}
		return;
	case VCM_CONNECTED:
	case VCM_DISCONNECTING:
		if (!rc && m->type == VCM_MSG_DREQ) {
			struct vcm_msg r;

			vcm_msg_init(&r, VCM_MSG_DREP);
			vcm_msg_send(v->fd, &r);
		} else if (!rc && v->state == VCM_CONNECTED) {
			return;			/* nothing else matters here */
		}
		vcm_disconnected_locked(v);
		return;
	default:
		return;
	}
}

static void vcm_react(struct vcm_id *v, short revents)
{
	int rc;

	if (v->state == VCM_LISTEN) {
		vcm_on_listen(v);
		return;
	}
	if (v->state == VCM_CONNECTING) {
		vcm_on_connected(v);
		return;
	}
	(void)revents;
	if (v->state == VCM_REQ_WAIT) {
		rc = vcm_msg_read(v);
		if (rc != EAGAIN)
			vcm_on_msg(v, rc);	/* may reap v */
		return;
	}
	/* Every message there is, unless the state stops wanting them. */
	while (v->fd >= 0) {
		enum vcm_state before = v->state;

		rc = vcm_msg_read(v);
		if (rc == EAGAIN)
			return;
		vcm_on_msg(v, rc);
		if (rc || v->state == before)
			return;
		if (v->state == VCM_REP_RCVD || v->state == VCM_CLOSED)
			return;
	}
}

static void vcm_timeout(struct vcm_id *v)
{
	int rc;

	switch (v->state) {
	case VCM_REQ_WAIT:
		vcm_id_reap_locked(v);
		break;
	case VCM_CONNECT_WAIT:
		rc = vcm_connect_start_locked(v);
		if (rc)
			vcm_connect_failed_locked(v, rc);
		break;
	case VCM_CONNECTING:
	case VCM_REQ_SENT:
	case VCM_REP_SENT:
		vcm_fail_connect_locked(v, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		break;
	case VCM_DISCONNECTING:
		vcm_disconnected_locked(v);
		break;
	default:
		v->deadline = 0;
		break;
	}
}

static short vcm_poll_events(const struct vcm_id *v)
{
	switch (v->state) {
	case VCM_LISTEN:
	case VCM_REQ_WAIT:
	case VCM_REQ_RCVD:
	case VCM_REQ_SENT:
	case VCM_REP_SENT:
	case VCM_CONNECTED:
	case VCM_DISCONNECTING:
		return POLLIN;
	case VCM_CONNECTING:
		return POLLOUT;
	default:
		return 0;			/* REP_RCVD: messages wait for RTU */
	}
}

static void *vcm_engine(void *arg)
{
	struct pollfd *pfd = NULL, *np;
	uint64_t *serial = NULL, *ns, now, next, cnt;
	size_t cap = 0, n, i;
	struct vcm_id *v, *vn;
	ssize_t rd = 0;

	(void)arg;
	cap = 16;
	pfd = malloc(cap * sizeof(*pfd));
	serial = malloc(cap * sizeof(*serial));
	pthread_mutex_lock(&vcm.lock);
	if (!pfd || !serial)
		vcm.stop = 1;			/* rdma_get_cm_event waits are the program's */
	while (!vcm.stop) {
		now = vcm_now();
		next = now + 1000;
		n = 0;
		for (v = vcm.ids; v; v = vn) {
			vn = v->next;
			if (v->deadline && v->deadline <= now)
				vcm_timeout(v);	/* may reap v */
		}
		for (v = vcm.ids; v; v = v->next)
			if (v->deadline && v->deadline < next)
				next = v->deadline;
		for (v = vcm.ids; v; v = v->next) {
			short ev = v->fd >= 0 ? vcm_poll_events(v) : 0;

			if (!ev)
				continue;
			if (n + 2 > cap) {
				np = realloc(pfd, 2 * cap * sizeof(*pfd));
				if (np)
					pfd = np;
				ns = np ? realloc(serial, 2 * cap * sizeof(*serial)) : NULL;
				if (ns)
					serial = ns;
				if (!np || !ns)
					break;	/* out of memory: poll what fits */
				cap *= 2;
			}
			pfd[n + 1].fd = v->fd;
			pfd[n + 1].events = ev;
			serial[n + 1] = v->serial;
			n++;
		}
		pfd[0].fd = vcm.wake_fd;
		pfd[0].events = POLLIN;
		pthread_mutex_unlock(&vcm.lock);
		poll(pfd, n + 1, (int)(next > now ? next - now : 0));
		pthread_mutex_lock(&vcm.lock);
		if (pfd[0].revents & POLLIN)
			rd = read(vcm.wake_fd, &cnt, sizeof(cnt));	/* EAGAIN: drained */
		for (i = 1; i <= n; i++) {
			if (!pfd[i].revents)
				continue;
			v = vcm_find_locked(serial[i]);
			if (v && v->fd == pfd[i].fd)
				vcm_react(v, pfd[i].revents);
		}
	}
	pthread_mutex_unlock(&vcm.lock);
	free(pfd);
	free(serial);
	(void)rd;
	return NULL;
}

int vcm_engine_start_locked(void)
{
	int rc;

	while (vcm.running && vcm.stop)
		pthread_cond_wait(&vcm.cond, &vcm.lock);	/* one stopping */
	if (vcm.running)
		return 0;
	vcm.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (vcm.wake_fd < 0)
		return errno;
	vcm.stop = 0;
	rc = pthread_create(&vcm.thread, NULL, vcm_engine, NULL);
	if (rc) {
		close(vcm.wake_fd);
		vcm.wake_fd = -1;
		return rc;
	}
	vcm.running = 1;
	return 0;
}

/* Stops the engine once the last channel is gone: no thread, no fd left. */
void vcm_engine_stop(void)
{
	pthread_mutex_lock(&vcm.lock);
	if (!vcm.running || vcm.stop || vcm.channels) {
		pthread_mutex_unlock(&vcm.lock);
		return;
	}
	vcm.stop = 1;
	vcm_engine_wake_locked();
	pthread_mutex_unlock(&vcm.lock);
	pthread_join(vcm.thread, NULL);
	pthread_mutex_lock(&vcm.lock);
	close(vcm.wake_fd);
	vcm.wake_fd = -1;
	vcm.running = 0;
	vcm.stop = 0;
	pthread_cond_broadcast(&vcm.cond);
	pthread_mutex_unlock(&vcm.lock);
}

void vcm_engine_wake_locked(void)
{
	uint64_t one = 1;
	ssize_t n;

	if (vcm.wake_fd >= 0) {
		n = write(vcm.wake_fd, &one, sizeof(one));	/* EAGAIN: pending */
		(void)n;
	}
}
