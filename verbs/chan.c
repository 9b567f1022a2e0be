// SPDX-License-Identifier: MIT
/*
 * Completion channels: ibv_req_notify_cq, ibv_get_cq_event.
 *
 * What programs count on (ibv_req_notify_cq(3), and the kernel's uverbs
 * queue behind every device): an arm asks for one event, fired by the
 * next completion *added* to the CQ -- those already there give none --
 * and a channel gives its events in the order the completions that fired
 * them came.  perftest's ib_send_lat -e lives on both: after any event it
 * re-arms that CQ (before polling it), then polls the CQ its loop is at,
 * once; a stray event, or one for the wrong CQ whose completion has not
 * come, leaves a send uncompleted and the next post fails (ENOMEM).
 *
 * libvrdma tells whether a CQ holds completions, not which came when.
 * So an arm moves what libvrdma holds to the CQ's "held" ring (polls take
 * from it first): from then on anything in libvrdma came after the arm,
 * and whoever takes one first fires the event before handing it on --
 * the program's own poll, or the CQ's waiter, a thread that sleeps in
 * vrdma_wait_cq() while the CQ is armed and takes what comes into held.
 * A thread per CQ (started at its first arm), as libvrdma waits on one
 * CQ at a time: every armed CQ is watched while its completions come,
 * so events leave as they do, not in the order of a scan over CQs.
 *
 * Locks: ev->lock (a vvb_lock) over polls, arms, held and firing; then
 * ev->wlock, over armed and the waiter's sleep; ctx->lock over the list
 * of CQs with a channel and the channels' counts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vvb.h"

#define VVB_HELD_MIN	64		/* first size of a held ring */

struct vvb_channel {
	struct ibv_comp_channel ch;		/* ch.fd is the read end */
	int wr_fd;
};

struct vvb_cqev {
	struct vvb_lock lock;
	/* taken from libvrdma, not yet by the program: a ring of cap (a
	 * power of two, at most the libvrdma CQ's cqe) from head */
	struct vrdma_wc *held;
	uint32_t cap, head, n;
	pthread_mutex_t wlock;
	pthread_cond_t wcond;
	int armed;				/* lock and wlock to write */
	int stop;				/* wlock: destroy, close */
	int started;				/* wlock: thread runs */
	pthread_t thread;
};

/* ---- channels ---- */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct vvb_channel *c;
	int fds[2], rc;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	if (pipe2(fds, O_CLOEXEC)) {
		rc = errno;
		goto err_free;
	}
	/* A waiter never blocks on a full pipe (the program is slow). */
	if (fcntl(fds[1], F_SETFL, O_NONBLOCK)) {
		rc = errno;
		goto err_close;
	}
	c->ch.context = context;
	c->ch.fd = fds[0];
	c->ch.refcnt = 0;
	c->wr_fd = fds[1];
	return &c->ch;

err_close:
	close(fds[0]);
	close(fds[1]);
err_free:
	free(c);
	errno = rc;
	return NULL;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct vvb_channel *c;
	struct vvb_context *ctx;

	if (!channel)
		return EINVAL;
	c = vvb_container_of(channel, struct vvb_channel, ch);
	ctx = vvb_ctx(channel->context);
	pthread_mutex_lock(&ctx->lock);
	if (channel->refcnt) {
		pthread_mutex_unlock(&ctx->lock);
		return EBUSY;
	}
	pthread_mutex_unlock(&ctx->lock);
	close(c->ch.fd);
	close(c->wr_fd);
	free(c);
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		     void **cq_context)
{
	struct ibv_cq *ev;
	ssize_t n;

	if (!channel || !cq || !cq_context) {
		errno = EINVAL;
		return -1;
	}
	/* Pointer-sized writes to a pipe are atomic: one event a read. */
	n = read(channel->fd, &ev, sizeof(ev));
	if (n != (ssize_t)sizeof(ev)) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	*cq = ev;
	*cq_context = ev->cq_context;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (!cq)
		return;
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_broadcast(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* ---- the held ring (ev->lock) ---- */

/* Double the ring, up to the CQ's size.  0 or -ENOSPC / -ENOMEM. */
static int vvb_held_grow(struct vvb_cq *cq)
{
	struct vvb_cqev *ev = cq->ev;
	uint32_t cap = ev->cap ? ev->cap * 2 : VVB_HELD_MIN, first;
	struct vrdma_wc *h;

	if (cap > (uint32_t)cq->vcq->cqe)
		return -ENOSPC;
	h = malloc(cap * sizeof(*h));
	if (!h)
		return -ENOMEM;
	first = ev->cap - ev->head < ev->n ? ev->cap - ev->head : ev->n;
	if (ev->n) {
		memcpy(h, ev->held + ev->head, first * sizeof(*h));
		memcpy(h + first, ev->held, (ev->n - first) * sizeof(*h));
	}
	free(ev->held);
	ev->held = h;
	ev->cap = cap;
	ev->head = 0;
	return 0;
}

/*
 * Take what libvrdma holds for the CQ into held.  Returns how many, or
 * -1 (errno: EIO, the device broken) if none; *full when held could take
 * no more (the program leaves more than the CQ holds unpolled).
 */
static int vvb_hold(struct vvb_cq *cq, int *full)
{
	struct vvb_cqev *ev = cq->ev;
	uint32_t tail, room;
	int got, took = 0;

	*full = 0;
	for (;;) {
		if (ev->n == ev->cap && vvb_held_grow(cq)) {
			*full = 1;
			return took;
		}
		tail = (ev->head + ev->n) & (ev->cap - 1);
		room = ev->cap - ev->n;
		if (room > ev->cap - tail)
			room = ev->cap - tail;		/* up to the ring's end */
		got = vrdma_poll_cq(cq->vcq, (int)room, ev->held + tail);
		if (got < 0)
			return took ? took : -1;
		ev->n += (uint32_t)got;
		took += got;
		if ((uint32_t)got < room)
			return took;
	}
}

/* The event of an armed CQ into its channel, disarming it. */
static void vvb_fire(struct vvb_cq *cq)
{
	struct vvb_channel *c = vvb_container_of(cq->ibcq.channel, struct vvb_channel, ch);
	struct vvb_cqev *ev = cq->ev;
	struct ibv_cq *p = &cq->ibcq;
	ssize_t n;

	pthread_mutex_lock(&ev->wlock);
	if (ev->armed) {
		ev->armed = 0;
		/* Failing, the pipe is full: 8192 events the program has
		 * not read.  It gets those; this one is dropped rather
		 * than block a poll. */
		n = write(c->wr_fd, &p, sizeof(p));
		(void)n;
	}
	pthread_mutex_unlock(&ev->wlock);
}

/*
 * ibv_poll_cq of a CQ with a channel: held first (those came before
 * anything still in libvrdma), then libvrdma, where any completion came
 * after the arm: it fires the event, which is in the channel before the
 * program has the completion, as a device writes it.
 */
int vvb_poll_ev(struct vvb_cq *cq, int n, struct ibv_wc *wc)
{
	struct vrdma_wc vwc[VVB_WC_BATCH];
	struct vvb_cqev *ev = cq->ev;
	int done = 0, fresh = 0, want, got, err = 0;
	uint32_t k;

	vvb_lock(&ev->lock);
	while (done < n && ev->n) {
		k = ev->cap - ev->head < ev->n ? ev->cap - ev->head : ev->n;
		if (k > (uint32_t)(n - done))
			k = (uint32_t)(n - done);
		vvb_wc_batch(cq, wc + done, ev->held + ev->head, (int)k);
		ev->head = (ev->head + k) & (ev->cap - 1);
		ev->n -= k;
		done += (int)k;
	}
	while (done < n) {
		want = n - done < VVB_WC_BATCH ? n - done : VVB_WC_BATCH;
		got = vrdma_poll_cq(cq->vcq, want, vwc);
		if (got < 0 && !done)
			err = errno;
		if (got <= 0)
			break;
		fresh = 1;
		vvb_wc_batch(cq, wc + done, vwc, got);
		done += got;
		if (got < want)
			break;
	}
	if (fresh)
		vvb_fire(cq);
	vvb_unlock(&ev->lock);
	if (err) {
		errno = err;
		return -1;
	}
	return done ? done : vvb_poll_none(cq);
}

/* ---- the waiter ---- */

static void *vvb_waiter(void *arg)
{
	struct vvb_cq *cq = arg;
	struct vvb_cqev *ev = cq->ev;
	int rc, took, full = 0;

	pthread_mutex_lock(&ev->wlock);
	while (!ev->stop) {
		if (!ev->armed) {
			pthread_cond_wait(&ev->wcond, &ev->wlock);
			continue;
		}
		pthread_mutex_unlock(&ev->wlock);
		rc = vrdma_wait_cq(cq->vcq, VVB_SLICE_MS);
		if (rc != ETIMEDOUT) {
			vvb_lock(&ev->lock);
			took = rc ? -1 : vvb_hold(cq, &full);
			/* Fire for a completion taken (it came after the arm),
			 * for an error (the program's poll will see it), and
			 * when held is full: the arm's boundary is lost then,
			 * and an event is better than none. */
			if (took || full)
				vvb_fire(cq);
			vvb_unlock(&ev->lock);
		}
		pthread_mutex_lock(&ev->wlock);
	}
	pthread_mutex_unlock(&ev->wlock);
	return NULL;
}

/* Start the waiter unless it runs (ev->wlock). */
static int vvb_waiter_start(struct vvb_cq *cq)
{
	struct vvb_cqev *ev = cq->ev;
	int rc;

	if (ev->started)
		return 0;
	rc = pthread_create(&ev->thread, NULL, vvb_waiter, cq);
	if (!rc)
		ev->started = 1;
	return rc;
}

/* Stop the waiter and wait for it: one slice at most. */
static void vvb_waiter_join(struct vvb_cqev *ev)
{
	int started;

	pthread_mutex_lock(&ev->wlock);
	ev->stop = 1;
	started = ev->started;
	ev->started = 0;
	pthread_cond_signal(&ev->wcond);
	pthread_mutex_unlock(&ev->wlock);
	if (started)
		pthread_join(ev->thread, NULL);
}

/* ---- arming ---- */

int vvb_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct vvb_cq *cq = vvb_cq(ibcq);
	struct vvb_cqev *ev = cq->ev;
	int rc, full;

	(void)solicited_only;			/* any completion notifies */
	if (!ev)
		return 0;			/* no channel: nowhere to deliver */
	vvb_lock(&ev->lock);
	/* What libvrdma has came before this arm: no event for it.  (-1,
	 * the device broken: the waiter fires at once, the poll sees EIO.) */
	vvb_hold(cq, &full);
	pthread_mutex_lock(&ev->wlock);
	rc = vvb_waiter_start(cq);
	if (!rc) {
		ev->armed = 1;
		pthread_cond_signal(&ev->wcond);
	}
	pthread_mutex_unlock(&ev->wlock);
	vvb_unlock(&ev->lock);
	return rc;
}

/* ---- the CQ's side of its channel ---- */

int vvb_ev_create(struct vvb_cq *cq)
{
	struct vvb_context *ctx = cq->ctx;
	struct vvb_cqev *ev;

	ev = calloc(1, sizeof(*ev));		/* ev->lock free, held empty */
	if (!ev)
		return ENOMEM;
	pthread_mutex_init(&ev->wlock, NULL);
	pthread_cond_init(&ev->wcond, NULL);
	cq->ev = ev;
	pthread_mutex_lock(&ctx->lock);
	cq->ibcq.channel->refcnt++;
	cq->next = ctx->cqs;
	ctx->cqs = cq;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

void vvb_ev_stop(struct vvb_cq *cq)
{
	struct vvb_context *ctx = cq->ctx;
	struct vvb_cq **pp;

	pthread_mutex_lock(&ctx->lock);
	for (pp = &ctx->cqs; *pp; pp = &(*pp)->next) {
		if (*pp == cq) {
			*pp = cq->next;
			break;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	vvb_waiter_join(cq->ev);
}

void vvb_ev_resume(struct vvb_cq *cq)
{
	struct vvb_context *ctx = cq->ctx;
	struct vvb_cqev *ev = cq->ev;

	pthread_mutex_lock(&ctx->lock);
	cq->next = ctx->cqs;
	ctx->cqs = cq;
	pthread_mutex_unlock(&ctx->lock);
	pthread_mutex_lock(&ev->wlock);
	ev->stop = 0;
	/* armed with no waiter would wait for the program's next poll; a
	 * thread that cannot start leaves just that */
	if (ev->armed)
		vvb_waiter_start(cq);
	pthread_mutex_unlock(&ev->wlock);
}

void vvb_ev_free(struct vvb_cq *cq)
{
	struct vvb_cqev *ev = cq->ev;

	pthread_mutex_lock(&cq->ctx->lock);
	cq->ibcq.channel->refcnt--;
	pthread_mutex_unlock(&cq->ctx->lock);
	pthread_cond_destroy(&ev->wcond);
	pthread_mutex_destroy(&ev->wlock);
	free(ev->held);
	free(ev);
	cq->ev = NULL;
}

/* libvrdma drops a destroyed QP's completions; held ones go too. */
void vvb_ev_forget_qp(struct ibv_cq *ibcq, uint32_t qp_num)
{
	struct vvb_cqev *ev = ibcq ? vvb_cq(ibcq)->ev : NULL;
	uint32_t i, r, kept = 0, mask;

	if (!ev)
		return;
	vvb_lock(&ev->lock);
	mask = ev->cap - 1;
	for (i = 0, r = ev->head; i < ev->n; i++, r = (r + 1) & mask) {
		if (ev->held[r].qp_num != qp_num)
			ev->held[(ev->head + kept++) & mask] = ev->held[r];
	}
	ev->n = kept;
	vvb_unlock(&ev->lock);
}

void vvb_waiters_stop(struct vvb_context *ctx)
{
	struct vvb_cq *cq;

	/* The program should have destroyed its CQs; their threads must not
	 * outlive the device they wait on either way. */
	pthread_mutex_lock(&ctx->lock);
	for (cq = ctx->cqs; cq; cq = cq->next)
		vvb_waiter_join(cq->ev);
	pthread_mutex_unlock(&ctx->lock);
}
