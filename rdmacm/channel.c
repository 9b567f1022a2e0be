// SPDX-License-Identifier: MIT
/*
 * Event channels: a queue of events per channel and an eventfd holding
 * one count per queued event, so the program can poll channel->fd and
 * rdma_get_cm_event blocks (or fails EAGAIN when the fd is O_NONBLOCK)
 * exactly like librdmacm's.  Acks are counted on the event's owner so
 * destroy_id / migrate_id can wait for them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "vcm.h"

struct vcm_global vcm = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.dev_lock = PTHREAD_MUTEX_INITIALIZER,
	.wake_fd = -1,
};

uint64_t vcm_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct vcm_channel *vcm_channel_of(struct rdma_event_channel *ch)
{
	return vcm_container_of(ch, struct vcm_channel, ch);
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct vcm_channel *c;
	int rc;

	/* As librdmacm: no device, no channel (ENODEV). */
	rc = vcm_dev_open();
	if (rc)
		goto err;
	c = calloc(1, sizeof(*c));
	if (!c) {
		rc = ENOMEM;
		goto err;
	}
	c->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (c->ch.fd < 0) {
		rc = errno;
		goto err_free;
	}
	pthread_mutex_lock(&vcm.lock);
	rc = vcm_engine_start_locked();
	if (rc) {
		pthread_mutex_unlock(&vcm.lock);
		goto err_close;
	}
	c->next = vcm.channels;
	vcm.channels = c;
	pthread_mutex_unlock(&vcm.lock);
	return &c->ch;

err_close:
	close(c->ch.fd);
err_free:
	free(c);
err:
	errno = rc;
	return NULL;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct vcm_channel *c, **pp;
	struct vcm_event *e;
	struct vcm_id *v;
	int last;

	if (!channel)
		return;
	c = vcm_channel_of(channel);
	pthread_mutex_lock(&vcm.lock);
	for (pp = &vcm.channels; *pp && *pp != c; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = c->next;
	/* Events nobody will read: their acks will never come either. */
	while ((e = c->head)) {
		c->head = e->next;
		free(e);
	}
	/* Ids still on it (a program's mistake) queue nothing from now on. */
	for (v = vcm.ids; v; v = v->next)
		if (v->id.channel == channel)
			v->id.channel = NULL;
	last = !vcm.channels;
	pthread_mutex_unlock(&vcm.lock);
	if (last)
		vcm_engine_stop();
	close(c->ch.fd);
	free(c);
}

struct vcm_event *vcm_event_new(struct vcm_id *v, enum rdma_cm_event_type type, int status)
{
	struct vcm_event *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->ev.id = &v->id;
	e->ev.event = type;
	e->ev.status = status;
	e->owner = v;
	return e;
}

/* Queues @e on its owner's channel; an id without one drops it. */
void vcm_event_queue_locked(struct vcm_event *e)
{
	struct vcm_channel *c;
	uint64_t one = 1;
	ssize_t n;

	if (!e->owner->id.channel) {
		free(e);
		return;
	}
	c = vcm_channel_of(e->owner->id.channel);
	e->next = NULL;
	if (c->tail)
		c->tail->next = e;
	else
		c->head = e;
	c->tail = e;
	/* cannot fail: the count stays far below 2^64 - 1 */
	n = write(c->ch.fd, &one, sizeof(one));
	(void)n;
}

/* Consumes one count of @c's eventfd; vcm.lock held and the count
 * there (it equals the queue's length under the lock), so no wait. */
static void vcm_count_take(struct vcm_channel *c)
{
	uint64_t cnt;
	ssize_t n;

	n = read(c->ch.fd, &cnt, sizeof(cnt));	/* cannot fail: count >= 1 */
	(void)n;
}

/* Unlinks @v's queued events from @c; returns them in order. */
static struct vcm_event *vcm_event_take(struct vcm_channel *c, struct vcm_id *v)
{
	struct vcm_event *e, **pp, *taken = NULL, **tp = &taken;

	for (pp = &c->head; (e = *pp);) {
		if (e->owner != v) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		e->next = NULL;
		*tp = e;
		tp = &e->next;
		vcm_count_take(c);
	}
	c->tail = NULL;
	for (e = c->head; e; e = e->next)
		c->tail = e;
	return taken;
}

/*
 * Drops the undelivered events of @v (destroy_id): a connection request
 * nobody saw takes its child with it, whose socket then closes.
 */
void vcm_event_drop_locked(struct vcm_id *v)
{
	struct vcm_event *e, *list;

	if (!v->id.channel)
		return;
	list = vcm_event_take(vcm_channel_of(v->id.channel), v);
	while ((e = list)) {
		list = e->next;
		if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && e->ev.id != &v->id)
			vcm_id_reap_locked(vcm_id_of(e->ev.id));
		free(e);
	}
}

/* rdma_migrate_id: @v's queued events follow it to @to. */
void vcm_event_move_locked(struct vcm_id *v, struct vcm_channel *to)
{
	struct vcm_event *e, *list = NULL;

	if (v->id.channel)
		list = vcm_event_take(vcm_channel_of(v->id.channel), v);
	v->id.channel = &to->ch;
	while ((e = list)) {
		list = e->next;
		vcm_event_queue_locked(e);
	}
}

/* Waits (bounded) until every event of @v given out is acked. */
int vcm_wait_acks_locked(struct vcm_id *v)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += VCM_DESTROY_MS / 1000;
	while (v->acked != v->delivered) {
		if (pthread_cond_timedwait(&vcm.cond, &vcm.lock, &ts) == ETIMEDOUT)
			return ETIMEDOUT;
	}
	return 0;
}

/* Processes a connect response the way librdmacm does, in the caller's
 * thread: with a QP on the id, move it to RTS, send RTU, ESTABLISHED. */
static void vcm_conn_response(struct vcm_event *e)
{
	struct vcm_id *v = vcm_id_of(e->ev.id);
	struct vcm_msg m;
	int rc;

	if (!v->id.qp)
		return;				/* the program does it: rdma_establish */
	rc = vcm_qp_connect(v);
	pthread_mutex_lock(&vcm.lock);
	if (!rc && v->state == VCM_REP_RCVD) {
		vcm_msg_init(&m, VCM_MSG_RTU);
		rc = vcm_msg_send(v->fd, &m);
	} else if (!rc) {
		rc = ECONNRESET;		/* the peer went in between */
	}
	if (rc) {
		if (v->state == VCM_REP_RCVD) {
			vcm_msg_init(&m, VCM_MSG_REJ);
			m.status = (int32_t)htobe32((uint32_t)-rc);
			vcm_msg_send(v->fd, &m);
			vcm_close_locked(v, VCM_CLOSED);
		}
		e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
		e->ev.status = -rc;
	} else {
		v->state = VCM_CONNECTED;
		e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
	}
	pthread_mutex_unlock(&vcm.lock);
	if (rc)
		vcm_qp_error(v);
}

/*
 * The eventfd's count equals the queue's length whenever vcm.lock is
 * free: a count is consumed only with its event, under the lock.  So the
 * wait is a poll, and the read afterwards never blocks.
 */
static int vcm_event_wait(struct vcm_channel *c, struct vcm_event **ep)
{
	struct pollfd pfd;
	struct vcm_event *e;
	int fl;

	for (;;) {
		pthread_mutex_lock(&vcm.lock);
		e = c->head;
		if (e) {
			c->head = e->next;
			if (!c->head)
				c->tail = NULL;
			vcm_count_take(c);
			e->owner->delivered++;
		}
		pthread_mutex_unlock(&vcm.lock);
		if (e) {
			*ep = e;
			return 0;
		}
		fl = fcntl(c->ch.fd, F_GETFL);
		if (fl < 0)
			return errno;
		if (fl & O_NONBLOCK)
			return EAGAIN;
		pfd.fd = c->ch.fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return errno;
	}
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct vcm_event *e = NULL;
	int rc;

	if (!channel || !event)
		return vcm_fail(EINVAL);
	for (;;) {
		rc = vcm_event_wait(vcm_channel_of(channel), &e);
		if (rc)
			return vcm_fail(rc);
		/* A synchronous listener's request: the new id is synchronous
		 * too; without a channel for it, it is refused and the next
		 * event taken, as librdmacm does. */
		if (e->ev.event != RDMA_CM_EVENT_CONNECT_REQUEST || !e->owner->sync ||
		    !vcm_sync_request(e))
			break;
		rdma_reject(e->ev.id, NULL, 0);
		rdma_destroy_id(e->ev.id);
		rdma_ack_cm_event(&e->ev);
	}
	if (e->ev.event == RDMA_CM_EVENT_CONNECT_RESPONSE)
		vcm_conn_response(e);
	*event = &e->ev;
	return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct vcm_event *e;
	struct vcm_id *v;

	if (!event)
		return vcm_fail(EINVAL);
	e = vcm_container_of(event, struct vcm_event, ev);
	v = e->owner;
	pthread_mutex_lock(&vcm.lock);
	v->acked++;
	if (v->zombie && v->acked == v->delivered)
		free(v);			/* rdma_destroy_id let it go */
	else
		pthread_cond_broadcast(&vcm.cond);
	pthread_mutex_unlock(&vcm.lock);
	free(e);
	return 0;
}
