// SPDX-License-Identifier: MIT
/*
 * Completion queues, polling, and completion channels.
 *
 * libvrdma has no event file descriptor, only vrdma_wait_cq(), so a
 * channel is a pipe carrying struct ibv_cq pointers, and one notifier
 * thread per context (started at the first ibv_req_notify_cq()) waits on
 * the armed CQs with vrdma_wait_cq() in short slices and writes the
 * pointer of each CQ that has a completion, disarming it.  An arm while
 * completions are already queued fires at once: verbs programs poll
 * after each event and tolerate an empty poll.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vvb.h"

struct vvb_channel {
	struct ibv_comp_channel ch;		/* ch.fd is the read end */
	int wr_fd;
};

/* ---- channels ---- */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct vvb_channel *c;
	int fds[2];

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
		free(c);
		return NULL;
	}
	/* The notifier never blocks on a full pipe (the program is slow). */
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	c->ch.context = context;
	c->ch.fd = fds[0];
	c->ch.refcnt = 0;
	c->wr_fd = fds[1];
	return &c->ch;
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

/* ---- the notifier ---- */

static void vvb_deliver(struct vvb_cq *cq)
{
	struct vvb_channel *c = vvb_container_of(cq->ibcq.channel, struct vvb_channel, ch);
	struct ibv_cq *p = &cq->ibcq;

	/* A full pipe means events are piling up unread; one is enough. */
	if (write(c->wr_fd, &p, sizeof(p)) < 0)
		return;
}

static struct vvb_cq *vvb_next_armed(struct vvb_context *ctx, struct vvb_cq *after, int *n)
{
	struct vvb_cq *c, *first = NULL, *next = NULL;
	int seen_after = !after;

	*n = 0;
	for (c = ctx->cqs; c; c = c->next) {
		if (c == after)
			seen_after = 1;
		if (!c->armed)
			continue;
		(*n)++;
		if (!first)
			first = c;
		if (seen_after && !next && c != after)
			next = c;
	}
	return next ? next : first;
}

static void vvb_timed_wait(struct vvb_context *ctx, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_cond_timedwait(&ctx->cond, &ctx->lock, &ts);
}

static void *vvb_notifier(void *arg)
{
	struct vvb_context *ctx = arg;
	struct vvb_cq *cq = NULL;
	int n, rc, idle = 0;

	pthread_mutex_lock(&ctx->lock);
	while (!ctx->stop) {
		cq = vvb_next_armed(ctx, cq, &n);
		if (!cq) {
			vvb_timed_wait(ctx, 100);
			continue;
		}
		ctx->busy = cq;
		pthread_mutex_unlock(&ctx->lock);
		/* One armed CQ: sleep on it; several: look at each in turn. */
		rc = vrdma_wait_cq(cq->vcq, n == 1 ? VVB_SLICE_MS : 0);
		pthread_mutex_lock(&ctx->lock);
		ctx->busy = NULL;
		pthread_cond_broadcast(&ctx->cond);
		/* EIO (device broken) fires too: the program's poll sees it. */
		if (rc != ETIMEDOUT && cq->armed) {
			cq->armed = 0;
			vvb_deliver(cq);
		}
		if (rc != ETIMEDOUT) {
			idle = 0;
		} else if (n > 1 && ++idle >= n) {
			/* a whole round found nothing: do not spin */
			idle = 0;
			pthread_mutex_unlock(&ctx->lock);
			usleep(200);
			pthread_mutex_lock(&ctx->lock);
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

void vvb_notifier_stop(struct vvb_context *ctx)
{
	int started;

	pthread_mutex_lock(&ctx->lock);
	ctx->stop = 1;
	started = ctx->thread_started;
	pthread_cond_broadcast(&ctx->cond);
	pthread_mutex_unlock(&ctx->lock);
	/* bounded: the thread's longest wait is one slice */
	if (started)
		pthread_join(ctx->thread, NULL);
}

int vvb_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct vvb_cq *cq = vvb_cq(ibcq);
	struct vvb_context *ctx = cq->ctx;
	int rc = 0;

	(void)solicited_only;			/* any completion notifies */
	if (!ibcq->channel)
		return 0;			/* nowhere to deliver: nothing to do */
	pthread_mutex_lock(&ctx->lock);
	if (!ctx->thread_started) {
		rc = pthread_create(&ctx->thread, NULL, vvb_notifier, ctx);
		if (rc)
			goto out;
		ctx->thread_started = 1;
	}
	cq->armed = 1;
	pthread_cond_broadcast(&ctx->cond);
out:
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

/* ---- CQs ---- */

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct vvb_context *ctx;
	struct vvb_cq *cq;
	long size;
	int rc;

	if (!context || cqe < 1 || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	ctx = vvb_ctx(context);
	if ((uint32_t)cqe > ctx->dattr.max_cqe ||
	    (channel && channel->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	/* Room to grow (ibv_resize_cq within it) and slack for programs that
	 * size CQs by the completions they expect while putting a QP's send
	 * and receive queues on one: an overrun is a CQ error. */
	size = (long)cqe * VVB_CQ_FACTOR;
	if (size < VVB_CQ_MIN)
		size = VVB_CQ_MIN;
	if (size > (long)ctx->dattr.max_cqe)
		size = ctx->dattr.max_cqe;
	cq->vcq = vrdma_create_cq(ctx->vdev, (int)size, cq);
	if (!cq->vcq) {
		rc = errno;
		free(cq);
		errno = rc;
		return NULL;
	}
	cq->ctx = ctx;
	cq->spin = vrdma_get_wait_policy(ctx->vdev) == VRDMA_WAIT_CPU ? VVB_POLL_SPIN_CPU :
		   VVB_POLL_SPIN;
	cq->ibcq.context = context;
	cq->ibcq.channel = channel;
	cq->ibcq.cq_context = cq_context;
	cq->ibcq.handle = cq->vcq->handle;
	cq->ibcq.cqe = cqe;
	pthread_mutex_init(&cq->ibcq.mutex, NULL);
	pthread_cond_init(&cq->ibcq.cond, NULL);
	if (channel) {
		pthread_mutex_lock(&ctx->lock);
		channel->refcnt++;
		cq->next = ctx->cqs;
		ctx->cqs = cq;
		pthread_mutex_unlock(&ctx->lock);
	}
	return &cq->ibcq;
}

int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct vvb_context *ctx;
	struct vvb_cq *cq, **pp;
	int rc;

	if (!ibcq)
		return EINVAL;
	cq = vvb_cq(ibcq);
	ctx = cq->ctx;
	if (ibcq->channel) {
		/* out of the notifier's sight before libvrdma frees it */
		pthread_mutex_lock(&ctx->lock);
		for (pp = &ctx->cqs; *pp; pp = &(*pp)->next) {
			if (*pp == cq) {
				*pp = cq->next;
				break;
			}
		}
		while (ctx->busy == cq)
			pthread_cond_wait(&ctx->cond, &ctx->lock);
		pthread_mutex_unlock(&ctx->lock);
	}
	vvb_events_lock_idle(&cq->events);
	rc = vrdma_destroy_cq(cq->vcq);	/* drops its queued events */
	vvb_events_unlock();
	if (ibcq->channel) {
		pthread_mutex_lock(&ctx->lock);
		if (rc) {			/* EBUSY: a QP still uses it */
			cq->next = ctx->cqs;
			ctx->cqs = cq;
		} else {
			ibcq->channel->refcnt--;
		}
		pthread_mutex_unlock(&ctx->lock);
	}
	if (rc)
		return rc;
	pthread_cond_destroy(&ibcq->cond);
	pthread_mutex_destroy(&ibcq->mutex);
	free(cq);
	return 0;
}

int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	if (!ibcq || cqe < 1)
		return EINVAL;
	/* Only within the room libvrdma gave at creation. */
	if (cqe > vvb_cq(ibcq)->vcq->cqe)
		return EOPNOTSUPP;
	ibcq->cqe = cqe;
	return 0;
}

/*
 * An empty poll.  On hardware a program spinning in ibv_poll_cq costs the
 * adapter nothing; here the adapter is vrdmad, a process that needs a CPU,
 * and on a small or busy machine it shares this one.  A poller that never
 * lets go leaves it what preemption takes (perftest's ib_write_bw: ~100
 * MB/s instead of GB/s, docs/verbs.md).  So after a short spin: if a
 * completion is due (a signaled send WR of this CQ not polled yet), sleep
 * until dom0 writes it, as libvrdma's own waiters do; else yield, which
 * costs a system call when nothing else wants this CPU.  A due count that
 * was wrong (the QP destroyed, say) costs one timed-out sleep.  The spin
 * is cq->spin empty polls in a row (vvb_poll_cq counts them).
 */
static __attribute__((noinline)) void vvb_poll_idle(struct vvb_cq *cq)
{
	int cpu = vrdma_get_wait_policy(cq->ctx->vdev) == VRDMA_WAIT_CPU;

	if (!cpu && __atomic_load_n(&cq->due, __ATOMIC_RELAXED) <= 0) {
		sched_yield();
		return;
	}
	if (vrdma_wait_cq(cq->vcq, VVB_POLL_SLEEP_MS) == ETIMEDOUT)
		__atomic_store_n(&cq->due, 0, __ATOMIC_RELAXED);
}

static enum ibv_wc_status vvb_status(enum vrdma_wc_status s)
{
	switch (s) {
	case VRDMA_WC_SUCCESS:		return IBV_WC_SUCCESS;
	case VRDMA_WC_LOC_LEN_ERR:	return IBV_WC_LOC_LEN_ERR;
	case VRDMA_WC_LOC_QP_OP_ERR:	return IBV_WC_LOC_QP_OP_ERR;
	case VRDMA_WC_LOC_PROT_ERR:	return IBV_WC_LOC_PROT_ERR;
	case VRDMA_WC_WR_FLUSH_ERR:	return IBV_WC_WR_FLUSH_ERR;
	case VRDMA_WC_REM_INV_REQ_ERR:	return IBV_WC_REM_INV_REQ_ERR;
	case VRDMA_WC_REM_ACCESS_ERR:	return IBV_WC_REM_ACCESS_ERR;
	case VRDMA_WC_REM_OP_ERR:	return IBV_WC_REM_OP_ERR;
	case VRDMA_WC_RETRY_EXC_ERR:	return IBV_WC_RETRY_EXC_ERR;
	case VRDMA_WC_RNR_RETRY_EXC_ERR: return IBV_WC_RNR_RETRY_EXC_ERR;
	case VRDMA_WC_FATAL_ERR:	return IBV_WC_FATAL_ERR;
	case VRDMA_WC_GENERAL_ERR:	return IBV_WC_GENERAL_ERR;
	}
	return IBV_WC_GENERAL_ERR;
}

static enum ibv_wc_opcode vvb_wc_opcode(enum vrdma_wc_opcode o)
{
	switch (o) {
	case VRDMA_WC_SEND_OP:			return IBV_WC_SEND;
	case VRDMA_WC_RDMA_WRITE_OP:		return IBV_WC_RDMA_WRITE;
	case VRDMA_WC_RDMA_READ_OP:		return IBV_WC_RDMA_READ;
	case VRDMA_WC_COMP_SWAP_OP:		return IBV_WC_COMP_SWAP;
	case VRDMA_WC_FETCH_ADD_OP:		return IBV_WC_FETCH_ADD;
	case VRDMA_WC_RECV_OP:			return IBV_WC_RECV;
	case VRDMA_WC_RECV_RDMA_WITH_IMM_OP:	return IBV_WC_RECV_RDMA_WITH_IMM;
	}
	return IBV_WC_SEND;
}

/* Completions into the program's array, each field written once. */
static void vvb_wc(struct ibv_wc *w, const struct vrdma_wc *v)
{
	w->wr_id = v->wr_id;
	w->status = vvb_status(v->status);
	w->opcode = vvb_wc_opcode(v->opcode);
	w->vendor_err = v->vendor_err;
	w->byte_len = v->byte_len;
	w->imm_data = v->imm_data;
	w->qp_num = v->qp_num;
	w->src_qp = v->src_qp;
	w->wc_flags = ((v->wc_flags & VRDMA_WC_WITH_IMM) ? IBV_WC_WITH_IMM : 0) |
		      ((v->wc_flags & VRDMA_WC_GRH) ? IBV_WC_GRH : 0);
	/* UD: pkey_index, slid, sl, dlid_path_bits stay 0 */
	w->pkey_index = 0;
	w->slid = 0;
	w->sl = 0;
	w->dlid_path_bits = 0;
}

/*
 * vvb_poll_cq() once its first poll took got completions into vwc (of
 * VVB_WC_BATCH): convert them, and poll again while the program wants
 * more and whole batches come.
 */
static __attribute__((noinline)) int
vvb_poll_took(struct vvb_cq *cq, int n, struct ibv_wc *wc, struct vrdma_wc *vwc, int got)
{
	int done = 0, want = n < VVB_WC_BATCH ? n : VVB_WC_BATCH, i;
	long sends;

	__atomic_store_n(&cq->empty, 0, __ATOMIC_RELAXED);
	for (;;) {
		sends = 0;
		for (i = 0; i < got; i++) {
			vvb_wc(&wc[done + i], &vwc[i]);
			sends += !(wc[done + i].opcode & IBV_WC_RECV);
		}
		/* Flushed unsignaled WRs complete too: never below zero. */
		if (sends && __atomic_sub_fetch(&cq->due, sends, __ATOMIC_RELAXED) < 0)
			__atomic_store_n(&cq->due, 0, __ATOMIC_RELAXED);
		done += got;
		if (got < want || done == n)
			return done;
		want = n - done < VVB_WC_BATCH ? n - done : VVB_WC_BATCH;
		got = vrdma_poll_cq(cq->vcq, want, vwc);
		if (got <= 0)
			return done;
	}
}

/*
 * ibv_poll_cq.  The usual answer to a busy poller is "nothing": that
 * path is one libvrdma call and the idle rule's count, nothing converted
 * and the policy not looked up until the count says so.
 */
int vvb_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct vvb_cq *cq = vvb_cq(ibcq);
	struct vrdma_wc vwc[VVB_WC_BATCH];
	unsigned int empty;
	int got;

	if (vvb_unlikely(n <= 0))
		return n < 0 ? -1 : 0;
	got = vrdma_poll_cq(cq->vcq, n < VVB_WC_BATCH ? n : VVB_WC_BATCH, vwc);
	if (got > 0)
		return vvb_poll_took(cq, n, wc, vwc, got);
	if (vvb_unlikely(got < 0))
		return -1;
	empty = __atomic_add_fetch(&cq->empty, 1, __ATOMIC_RELAXED);
	if (vvb_unlikely(empty >= cq->spin))
		vvb_poll_idle(cq);
	return 0;
}
