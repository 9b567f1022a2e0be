// SPDX-License-Identifier: MIT
/* The handshake's messages (vcm_msg.h): build, send, read, check. */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vcm.h"

void vcm_msg_init(struct vcm_msg *m, enum vcm_msg_type type)
{
	memset(m, 0, sizeof(*m));
	m->magic = htobe32(VCM_MAGIC);
	m->version = VCM_VERSION;
	m->type = (uint8_t)type;
}

/*
 * Sends one whole message.  256 bytes fit an idle socket's buffer at
 * once; a peer that stops reading gets VCM_SEND_MS, then ETIMEDOUT.
 */
int vcm_msg_send(int fd, const struct vcm_msg *m)
{
	const uint8_t *p = (const uint8_t *)m;
	uint64_t end = vcm_now() + VCM_SEND_MS;
	size_t done = 0;
	struct pollfd pfd;
	ssize_t n;

	if (fd < 0)
		return ENOTCONN;
	while (done < sizeof(*m)) {
		n = send(fd, p + done, sizeof(*m) - done, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return errno;
		if (vcm_now() >= end)
			return ETIMEDOUT;
		pfd.fd = fd;
		pfd.events = POLLOUT;
		poll(&pfd, 1, 10);
	}
	return 0;
}

/*
 * Reads what has arrived of the next message into v->in: 0 when whole
 * (v->in_len reset for the next), EAGAIN when more is to come, else the
 * connection is over (ECONNRESET for EOF).
 */
int vcm_msg_read(struct vcm_id *v)
{
	uint8_t *p = (uint8_t *)&v->in;
	ssize_t n;

	while (v->in_len < sizeof(v->in)) {
		n = recv(v->fd, p + v->in_len, sizeof(v->in) - v->in_len, MSG_DONTWAIT);
		if (n == 0)
			return ECONNRESET;
		if (n < 0)
			return errno == EINTR ? EAGAIN : errno;
		v->in_len += (size_t)n;
	}
	v->in_len = 0;
	return 0;
}

int vcm_msg_check(const struct vcm_msg *m)
{
	if (be32toh(m->magic) != VCM_MAGIC || m->version != VCM_VERSION)
		return EPROTO;
	if (m->type < VCM_MSG_REQ || m->type > VCM_MSG_SIDR_REP)
		return EPROTO;
	if (m->pdata_len > VCM_MAX_PDATA)
		return EPROTO;
	return 0;
}

void vcm_peer_from_msg(struct vcm_peer *p, const struct vcm_msg *m)
{
	memcpy(p->gid, m->gid, sizeof(p->gid));
	p->qpn = be32toh(m->qpn) & 0xffffff;
	p->psn = be32toh(m->psn) & 0xffffff;
	p->qkey = be32toh(m->qkey);
	p->responder_resources = m->responder_resources;
	p->initiator_depth = m->initiator_depth;
	p->flow_control = m->flow_control;
	p->retry_count = m->retry_count;
	p->rnr_retry_count = m->rnr_retry_count;
	p->srq = m->srq;
	p->pdata_len = m->pdata_len;
	memcpy(p->pdata, m->pdata, m->pdata_len);
}

/*
 * Ends @v's connection; the engine forgets a socket that is gone.  A
 * listener stops listening now: close() alone leaves it listening while
 * the engine thread's poll() still holds the file, and a program that
 * binds the port again at once (perftest -R does) got EADDRINUSE.
 */
void vcm_close_locked(struct vcm_id *v, enum vcm_state state)
{
	if (v->fd >= 0) {
		if (v->state == VCM_LISTEN)
			shutdown(v->fd, SHUT_RDWR);
		close(v->fd);
		v->fd = -1;
	}
	v->state = state;
	v->deadline = 0;
	v->in_len = 0;
}

/*
 * The event's conn parameters from the peer's message, seen from this
 * side as the IB CM reports them: the peer's initiator depth is what we
 * must answer (our responder resources) and the other way round.
 */
void vcm_conn_param(struct vcm_id *v, struct vcm_event *e)
{
	struct rdma_conn_param *c = &e->ev.param.conn;
	const struct vcm_peer *p = &v->peer;

	memcpy(e->pdata, p->pdata, p->pdata_len);
	c->private_data = p->pdata_len ? e->pdata : NULL;
	c->private_data_len = p->pdata_len;
	c->responder_resources = p->initiator_depth;
	c->initiator_depth = p->responder_resources;
	c->flow_control = p->flow_control;
	c->retry_count = p->retry_count;
	c->rnr_retry_count = p->rnr_retry_count;
	c->srq = p->srq;
	c->qp_num = p->qpn;
}
