// SPDX-License-Identifier: MIT
/*
 * Device teardown off the event loop.  Destroying a device QP or its
 * cm_id, or deregistering an MR, can sleep in the kernel for seconds (the
 * CM's DREQ to a peer that went away; rxe waiting for its references), and
 * vrdmad serves every guest from one thread.  So the loop hands such work
 * to one reaper thread and goes on.
 *
 * Order is the contract: jobs run in the order they were queued, so a
 * QP goes before the MRs it may still reference, and those before their
 * PD.  A buffer the device may still pin is unmapped only once every job
 * queued before its drop has run (vbe_reap_defer_unmap): on Xen, gntdev
 * pages unmapped while pinned corrupt dom0's page accounting
 * (docs/rdma.md).  Unmapping stays on the loop's thread, as every other
 * platform call.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "log.h"
#include "verbs.h"

enum vbe_job_kind { VBE_JOB_QP, VBE_JOB_MR, VBE_JOB_GUEST, VBE_JOB_SRQ };

struct vbe_job {
	struct vbe_job *next;
	enum vbe_job_kind kind;
	struct rdma_cm_id *id;		/* QP */
	bool up;
	struct ibv_cq *cq;
	unsigned cq_events;
	struct ibv_mr *mr;		/* MR */
	struct vbe_vguest *vg;		/* GUEST: the rest of its state */
	struct vbe_vsrq *vs;		/* SRQ */
};

static void vbe_srq_run(struct vbe_vsrq *vs)
{
	if (ibv_destroy_srq(vs->srq))
		vlog_warn("rdma: ibv_destroy_srq failed");
	free(vs->e);
	free(vs);
}

struct vbe_late_unmap {
	struct vbe_late_unmap *next;
	struct vplat_map *map;
	uint64_t seq;			/* unmap once this many jobs ran */
};

struct vbe_reaper {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct vbe_job *head, **tail;
	bool stop;
	uint64_t queued;		/* jobs queued (loop thread) */
	_Atomic uint64_t done;		/* jobs run (reaper) */
	struct vbe_late_unmap *unmaps;	/* loop thread only */
	unsigned nunmaps;
};

/* A call that held the reaper long is worth a line: the peer's node or
 * the device is slow, and the resources stay until it returns. */
static void vbe_reap_slow(const char *what, int64_t t0)
{
	int64_t dt = vplat_now_ms() - t0;

	if (dt > 1000)
		vlog_info("rdma: %s took %lld ms (reaper thread)", what, (long long)dt);
}

static void vbe_job_run(struct vbe_job *j)
{
	int64_t t0 = vplat_now_ms();
	struct vbe_vguest *vg = j->vg;
	uint32_t i;

	switch (j->kind) {
	case VBE_JOB_QP:
		if (j->id) {
			if (j->up)
				rdma_disconnect(j->id);
			if (j->id->qp)
				rdma_destroy_qp(j->id);
			rdma_destroy_id(j->id);	/* events are acked at once: no wait */
		}
		if (j->cq) {
			ibv_ack_cq_events(j->cq, j->cq_events);
			ibv_destroy_cq(j->cq);
		}
		vbe_reap_slow("device QP teardown", t0);
		break;
	case VBE_JOB_MR:
		ibv_dereg_mr(j->mr);
		vbe_reap_slow("ibv_dereg_mr", t0);
		break;
	case VBE_JOB_SRQ:
		vbe_srq_run(j->vs);
		vbe_reap_slow("ibv_destroy_srq", t0);
		break;
	case VBE_JOB_GUEST:
		/* its QPs went before it; SRQs and MRs before the PD */
		for (i = 0; vg->srqs && i < VBE_MAX_SRQS; i++)
			if (vg->srqs[i])
				vbe_srq_run(vg->srqs[i]);
		if (vg->mr)
			for (i = 0; i < VBE_MAX_MRS; i++)
				if (vg->mr[i])
					ibv_dereg_mr(vg->mr[i]);
		if (vg->rkt_mr)
			ibv_dereg_mr(vg->rkt_mr);
		if (vg->scratch_mr)
			ibv_dereg_mr(vg->scratch_mr);
		if (vg->pd && ibv_dealloc_pd(vg->pd))
			vlog_warn("rdma: guest %u: ibv_dealloc_pd failed", vg->domid);
		free(vg->srqs);
		free(vg->mr);
		free(vg->key);
		free(vg->addr);
		free(vg->rkt);
		free(vg->scratch);
		free(vg);
		vbe_reap_slow("guest device state teardown", t0);
		break;
	}
}

static void *vbe_reap_main(void *arg)
{
	struct vbe_reaper *r = arg;
	struct vbe_job *j;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (!r->head && !r->stop)
			pthread_cond_wait(&r->cv, &r->mu);
		j = r->head;
		if (!j)
			break;		/* stop, and nothing left */
		r->head = j->next;
		if (!r->head)
			r->tail = &r->head;
		pthread_mutex_unlock(&r->mu);
		vbe_job_run(j);
		free(j);
		atomic_fetch_add_explicit(&r->done, 1, memory_order_release);
		pthread_mutex_lock(&r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

int vbe_reap_start(struct vbe_vx *vx)
{
	struct vbe_reaper *r = calloc(1, sizeof(*r));
	sigset_t all, old;
	int err;

	if (!r)
		return -ENOMEM;
	r->tail = &r->head;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	/* Signals stay with the loop's thread (signalfd / handlers). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&r->th, NULL, vbe_reap_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		pthread_cond_destroy(&r->cv);
		pthread_mutex_destroy(&r->mu);
		free(r);
		return -err;
	}
	vx->reap = r;
	return 0;
}

/* Queue j; without memory (or a reaper) run it here, after the queue. */
static void vbe_reap_push(struct vbe_vx *vx, struct vbe_job *j, const struct vbe_job *tmpl)
{
	struct vbe_reaper *r = vx->reap;

	if (!j) {
		struct vbe_job inline_job = *tmpl;

		vlog_warn("rdma: no memory for the reaper: tearing down in the loop");
		if (r)
			while (atomic_load_explicit(&r->done, memory_order_acquire) != r->queued)
				sched_yield();
		vbe_job_run(&inline_job);
		return;
	}
	*j = *tmpl;
	j->next = NULL;
	pthread_mutex_lock(&r->mu);
	*r->tail = j;
	r->tail = &j->next;
	r->queued++;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static void vbe_reap_job(struct vbe_vx *vx, const struct vbe_job *tmpl)
{
	vbe_reap_push(vx, vx->reap ? malloc(sizeof(struct vbe_job)) : NULL, tmpl);
}

void vbe_reap_qp(struct vbe_vx *vx, struct rdma_cm_id *id, bool up, struct ibv_cq *cq,
		 unsigned cq_events)
{
	vbe_reap_job(vx, &(struct vbe_job){ .kind = VBE_JOB_QP, .id = id, .up = up,
					     .cq = cq, .cq_events = cq_events });
}

void vbe_reap_mr(struct vbe_vx *vx, struct ibv_mr *mr)
{
	vbe_reap_job(vx, &(struct vbe_job){ .kind = VBE_JOB_MR, .mr = mr });
}

void vbe_reap_guest(struct vbe_vx *vx, struct vbe_vguest *vg)
{
	vbe_reap_job(vx, &(struct vbe_job){ .kind = VBE_JOB_GUEST, .vg = vg });
}

void vbe_reap_srq(struct vbe_vx *vx, struct vbe_vsrq *vs)
{
	vbe_reap_job(vx, &(struct vbe_job){ .kind = VBE_JOB_SRQ, .vs = vs });
}

/* Take m if jobs queued so far may still pin it: 1 = taken (unmapped by
 * vbe_reap_poll once they ran), 0 = nothing pending, unmap it now. */
int vbe_reap_defer_unmap(struct vbe_vx *vx, struct vplat_map *m)
{
	struct vbe_reaper *r = vx->reap;
	struct vbe_late_unmap *u;

	if (!r || atomic_load_explicit(&r->done, memory_order_acquire) == r->queued)
		return 0;
	u = malloc(sizeof(*u));
	if (!u) {
		/* Correctness over latency: wait for the device to let go. */
		while (atomic_load_explicit(&r->done, memory_order_acquire) != r->queued)
			sched_yield();
		return 0;
	}
	u->map = m;
	u->seq = r->queued;
	u->next = r->unmaps;
	r->unmaps = u;
	r->nunmaps++;
	return 1;
}

/* Unmap what the device has let go of (loop thread). */
void vbe_reap_poll(struct vbe_vx *vx)
{
	struct vbe_reaper *r = vx->reap;
	struct vbe_late_unmap **p, *u;
	uint64_t done;

	if (!r || !r->unmaps)
		return;
	done = atomic_load_explicit(&r->done, memory_order_acquire);
	for (p = &r->unmaps; (u = *p);) {
		if (u->seq > done) {
			p = &u->next;
			continue;
		}
		*p = u->next;
		r->nunmaps--;
		vplat_unmap(u->map);
		free(u);
	}
}

/* Jobs not run yet plus maps waiting for them (census: leak tests wait
 * for zero). */
unsigned vbe_reap_pending(const struct vbe_vx *vx)
{
	struct vbe_reaper *r = vx->reap;

	if (!r)
		return 0;
	return (unsigned)(r->queued - atomic_load_explicit(&r->done, memory_order_acquire)) +
	       r->nunmaps;
}

/* Run what is queued, end the thread, unmap the rest (vrdmad exits). */
void vbe_reap_stop(struct vbe_vx *vx)
{
	struct vbe_reaper *r = vx->reap;
	uint64_t left;

	if (!r)
		return;
	left = r->queued - atomic_load_explicit(&r->done, memory_order_acquire);
	/* Each can sleep in the kernel (~50 s after retry-exceeded): say so. */
	if (left)
		vlog_warn("rdma: exiting after %llu queued device teardowns",
			  (unsigned long long)left);
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->th, NULL);
	vbe_reap_poll(vx);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
	vx->reap = NULL;
}
