// SPDX-License-Identifier: MIT
/*
 * Completion queues and polling.  A CQ with a completion channel polls
 * through its channel's side (chan.c), which keeps what an arm found.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "vvb.h"

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
		rc = vvb_ev_create(cq);
		if (rc)
			goto err_destroy;
	}
	return &cq->ibcq;

err_destroy:
	pthread_cond_destroy(&cq->ibcq.cond);
	pthread_mutex_destroy(&cq->ibcq.mutex);
	vrdma_destroy_cq(cq->vcq);		/* new and unused: cannot be busy */
	free(cq);
	errno = rc;
	return NULL;
}

int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct vvb_cq *cq;
	int rc;

	if (!ibcq)
		return EINVAL;
	cq = vvb_cq(ibcq);
	if (cq->ev)
		vvb_ev_stop(cq);	/* its waiter out of libvrdma's CQ first */
	vvb_events_lock_idle(&cq->events);
	rc = vrdma_destroy_cq(cq->vcq);	/* drops its queued events */
	vvb_events_unlock();
	if (rc) {			/* EBUSY: a QP still uses it */
		if (cq->ev)
			vvb_ev_resume(cq);
		return rc;
	}
	if (cq->ev)
		vvb_ev_free(cq);
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

/* n completions converted; the sends among them settle cq->due. */
static inline void vvb_wcs(struct vvb_cq *cq, struct ibv_wc *wc, const struct vrdma_wc *v,
			   int n)
{
	long sends = 0;
	int i;

	for (i = 0; i < n; i++) {
		vvb_wc(&wc[i], &v[i]);
		sends += !(wc[i].opcode & IBV_WC_RECV);
	}
	/* Flushed unsignaled WRs complete too: never below zero. */
	if (sends && __atomic_sub_fetch(&cq->due, sends, __ATOMIC_RELAXED) < 0)
		__atomic_store_n(&cq->due, 0, __ATOMIC_RELAXED);
}

void vvb_wc_batch(struct vvb_cq *cq, struct ibv_wc *wc, const struct vrdma_wc *v, int n)
{
	__atomic_store_n(&cq->empty, 0, __ATOMIC_RELAXED);
	vvb_wcs(cq, wc, v, n);
}

/*
 * vvb_poll_cq() once its first poll took got completions into vwc (of
 * VVB_WC_BATCH): convert them, and poll again while the program wants
 * more and whole batches come.
 */
static __attribute__((noinline)) int
vvb_poll_took(struct vvb_cq *cq, int n, struct ibv_wc *wc, struct vrdma_wc *vwc, int got)
{
	int done = 0, want = n < VVB_WC_BATCH ? n : VVB_WC_BATCH;

	__atomic_store_n(&cq->empty, 0, __ATOMIC_RELAXED);
	for (;;) {
		vvb_wcs(cq, wc + done, vwc, got);
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
	if (vvb_unlikely(cq->ev != NULL))
		return vvb_poll_ev(cq, n, wc);
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

/* The idle rule of an empty poll of a CQ with a channel (vvb_poll_ev). */
int vvb_poll_none(struct vvb_cq *cq)
{
	if (__atomic_add_fetch(&cq->empty, 1, __ATOMIC_RELAXED) >= cq->spin)
		vvb_poll_idle(cq);
	return 0;
}
