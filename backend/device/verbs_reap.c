// SPDX-License-Identifier: MIT
/*
 * Device teardown off the event loop.  Destroying a device QP or its
 * cm_id, or deregistering an MR, can sleep in the kernel for seconds (the
 * CM's DREQ to a peer that went away; rxe waiting for its references), and
 * vrdmad serves every guest from one thread.  So the loop hands such work
 * to one reaper thread and goes on.
 *
 * Two lanes, each a thread: one running in the order queued the QPs,
 * SRQs, whole guests and the device MRs of dropped buffers (a QP before
 * the MRs it may reference), one only for the MRs of DEREG_MRs.
 * A DEREG_MR is answered only once its device MR is gone (a peer holding
 * the key must find nothing there), so that answer must not wait behind
 * other tenants' teardowns, which can take seconds each (a DREQ to a peer
 * that went away); and as a guest has at most one answer held (cmd.c),
 * the MR lane holds at most one job a guest.  It serves tenants in turn,
 * each its jobs in order: one tenant's DEREG_MRs of MRs the device holds
 * (each can take a second) delay another's answer by the job running and
 * one job of each tenant waiting, not by all of theirs.  A job is done
 * when it ran, whatever ran before it: the tenant's first job still
 * queued or running says (vbe_lane_past), and `mark` says up to which
 * number all did.  A guest's PD goes after its MRs queued before it: its
 * job waits for its tenant's jobs on the MR lane to pass them.  A buffer
 * the device may still pin is unmapped only once every teardown job and
 * its tenant's MR lane jobs queued before its drop have run (its own
 * MRs are among them: vbe_reap_defer_unmap): on Xen, gntdev
 * pages unmapped while pinned corrupt dom0's page accounting
 * (docs/rdma.md).  Unmapping stays on the loop's thread, as every other
 * platform call.  The MR lane writes an eventfd after each job: the loop
 * then answers the DEREG_MRs it held (cmd.c).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

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
	uint64_t mr_seq;		/* GUEST: MR lane jobs to wait for */
	uint64_t seq;			/* its number on its lane */
	/* MR lane: its tenant's; the first job of a tenant on the lane
	 * stands for it in the turn, the others follow it (tnext). */
	char ten[VPLAT_TENANT_NAME];
	struct vbe_job *tnext, **ttail;
};

static void vbe_srq_run(struct vbe_vsrq *vs)
{
	if (ibv_destroy_srq(vs->srq))
		vlog_warn("rdma: ibv_destroy_srq failed");
	free(vs->e);
	free(vs);
}

enum { VBE_LANE_TEAR, VBE_LANE_MR, VBE_LANES };

struct vbe_late_unmap {
	struct vbe_late_unmap *next;
	struct vplat_map *map;
	uint64_t seq[VBE_LANES];	/* unmap once this many jobs ran */
	struct vbe_tenant *ten;		/* charged npages until then */
	char mr_ten[VPLAT_TENANT_NAME];	/* whose MR lane jobs may pin it */
	uint32_t npages;
};

struct vbe_lane {
	struct vbe_reaper *r;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* a job queued, or stop */
	pthread_cond_t ran;		/* a job ran (a guest job waits) */
	struct vbe_job *head, **tail;
	bool stop, started;
	uint64_t queued;		/* jobs queued (loop thread) */
	_Atomic uint64_t done;		/* jobs run (its thread) */
	_Atomic uint64_t mark;		/* every job up to this number ran */
	uint64_t running;		/* the number of the job running, 0: none (mu) */
	char running_ten[VPLAT_TENANT_NAME];	/* ... and its tenant (MR lane) */
};

struct vbe_reaper {
	struct vbe_lane lane[VBE_LANES];
	int efd;			/* the MR lane ran a job */
	struct vbe_late_unmap *unmaps;	/* loop thread only */
	unsigned nunmaps;
};

static uint64_t vbe_lane_done(struct vbe_lane *l)
{
	return atomic_load_explicit(&l->done, memory_order_acquire);
}

/* Both lanes have run every job queued so far (loop thread). */
static bool vbe_reap_idle(struct vbe_reaper *r)
{
	unsigned i;

	for (i = 0; i < VBE_LANES; i++)
		if (vbe_lane_done(&r->lane[i]) != r->lane[i].queued)
			return false;
	return true;
}

static uint64_t vbe_lane_mark(const struct vbe_lane *l)
{
	return atomic_load_explicit(&l->mark, memory_order_acquire);
}

/* The MR lane has run every job of tenant ten up to number seq (mu
 * held): a tenant's jobs run in order, so its first one still queued, or
 * running, says.  O(tenants with jobs queued). */
static bool vbe_lane_past(const struct vbe_lane *l, uint64_t seq, const char *ten)
{
	const struct vbe_job *h;

	if (vbe_lane_mark(l) >= seq)
		return true;
	if (l->running && l->running <= seq && !strcmp(l->running_ten, ten))
		return false;
	for (h = l->head; h; h = h->next)
		if (!strcmp(h->ten, ten))
			return h->seq > seq;
	return true;
}

/* The guest job's wait: its guest's DEREG_MRs queued before it (its PD
 * goes after its MRs), not every tenant's: another tenant's jobs queued
 * later may run before them. */
static void vbe_lane_wait(struct vbe_lane *l, uint64_t seq, const char *ten)
{
	pthread_mutex_lock(&l->mu);
	while (!vbe_lane_past(l, seq, ten))
		pthread_cond_wait(&l->ran, &l->mu);
	pthread_mutex_unlock(&l->mu);
}

/* The next job: the first queued (teardown lane: in order), or the MR
 * lane's first tenant's, that tenant then going to the back of the turn
 * with its next job.  mu held. */
static struct vbe_job *vbe_lane_take(struct vbe_lane *l)
{
	struct vbe_job *j = l->head, *n;

	if (!j)
		return NULL;
	l->head = j->next;
	if (!l->head)
		l->tail = &l->head;
	n = j->tnext;
	if (n) {
		n->ttail = j->ttail;
		n->next = NULL;
		*l->tail = n;
		l->tail = &n->next;
	}
	l->running = j->seq;
	memcpy(l->running_ten, j->ten, sizeof(l->running_ten));
	return j;
}

/* Every job up to the smallest number still queued ran (mu held).  The
 * teardown lane runs in order: its first.  The MR lane queues a
 * tenant's jobs in order: the smallest of the turn's heads (one a
 * tenant), never the whole queue. */
static void vbe_lane_ran(struct vbe_lane *l)
{
	uint64_t low = l->queued + 1;
	struct vbe_job *j;

	if (l != &l->r->lane[VBE_LANE_MR])
		low = l->head ? l->head->seq : low;
	else
		for (j = l->head; j; j = j->next)
			if (j->seq < low)
				low = j->seq;
	l->running = 0;
	atomic_store_explicit(&l->mark, low - 1, memory_order_release);
	atomic_fetch_add_explicit(&l->done, 1, memory_order_release);
}

/* A call that held the reaper long is worth a line: the peer's node or
 * the device is slow, and the resources stay until it returns. */
static void vbe_reap_slow(const char *what, int64_t t0)
{
	int64_t dt = vplat_now_ms() - t0;

	if (dt > 1000)
		vlog_info("rdma: %s took %lld ms (reaper thread)", what, (long long)dt);
}

static void vbe_job_run(struct vbe_reaper *r, struct vbe_job *j)
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
		/* Its pages stay pinned: the buffer's unmap must not follow. */
		if ((errno = ibv_dereg_mr(j->mr)))
			vlog_warn("rdma: ibv_dereg_mr failed: %s", strerror(errno));
		vbe_reap_slow("ibv_dereg_mr", t0);
		break;
	case VBE_JOB_SRQ:
		vbe_srq_run(j->vs);
		vbe_reap_slow("ibv_destroy_srq", t0);
		break;
	case VBE_JOB_GUEST:
		/* its QPs went before it (this lane), its dropped MRs too (the
		 * MR lane); SRQs and MRs before the PD */
		if (r)
			vbe_lane_wait(&r->lane[VBE_LANE_MR], j->mr_seq, j->ten);
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
	struct vbe_lane *l = arg;
	struct vbe_job *j;
	uint64_t one = 1;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		while (!l->head && !l->stop)
			pthread_cond_wait(&l->cv, &l->mu);
		j = vbe_lane_take(l);
		if (!j)
			break;		/* stop, and nothing left */
		pthread_mutex_unlock(&l->mu);
		vbe_job_run(l->r, j);
		free(j);
		pthread_mutex_lock(&l->mu);
		vbe_lane_ran(l);
		pthread_cond_broadcast(&l->ran);
		/* Never blocks: the counter would need 2^64 - 1 jobs. */
		if (l == &l->r->lane[VBE_LANE_MR] &&
		    write(l->r->efd, &one, sizeof(one)) != (ssize_t)sizeof(one))
			vlog_dbg("rdma: reaper eventfd: %s", strerror(errno));
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

static void vbe_lane_end(struct vbe_lane *l)
{
	if (l->started) {
		pthread_mutex_lock(&l->mu);
		l->stop = true;
		pthread_cond_signal(&l->cv);
		pthread_mutex_unlock(&l->mu);
		pthread_join(l->th, NULL);
	}
	pthread_cond_destroy(&l->ran);
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
}

int vbe_reap_start(struct vbe_vx *vx)
{
	struct vbe_reaper *r = calloc(1, sizeof(*r));
	sigset_t all, old;
	unsigned i;
	int err = 0;

	if (!r)
		return -ENOMEM;
	r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->efd < 0) {
		err = -errno;
		free(r);
		return err;
	}
	for (i = 0; i < VBE_LANES; i++) {
		struct vbe_lane *l = &r->lane[i];

		l->r = r;
		l->tail = &l->head;
		pthread_mutex_init(&l->mu, NULL);
		pthread_cond_init(&l->cv, NULL);
		pthread_cond_init(&l->ran, NULL);
	}
	/* Signals stay with the loop's thread (signalfd / handlers). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (i = 0; i < VBE_LANES && !err; i++) {
		err = -pthread_create(&r->lane[i].th, NULL, vbe_reap_main, &r->lane[i]);
		r->lane[i].started = !err;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		for (i = 0; i < VBE_LANES; i++)
			vbe_lane_end(&r->lane[i]);
		close(r->efd);
		free(r);
		return err;
	}
	vx->reap = r;
	return 0;
}

int vbe_reap_fd(const struct vbe_vx *vx)
{
	return vx->reap ? vx->reap->efd : -1;
}

/* Wait here for both lanes to run what they have (loop thread). */
static void vbe_reap_drain(struct vbe_reaper *r)
{
	while (!vbe_reap_idle(r))
		sched_yield();
}

/* Queue j on lane; without memory (or a reaper) run it here, after every
 * job queued before.  Returns the job's number on its lane, 0 if it ran. */
static uint64_t vbe_reap_push(struct vbe_vx *vx, unsigned lane, struct vbe_job *j,
			      const struct vbe_job *tmpl)
{
	struct vbe_reaper *r = vx->reap;
	struct vbe_lane *l;
	struct vbe_job *h;
	uint64_t seq;

	if (!j) {
		struct vbe_job inline_job = *tmpl;

		vlog_warn("rdma: no memory for the reaper: tearing down in the loop");
		if (r)
			vbe_reap_drain(r);
		vbe_job_run(NULL, &inline_job);
		return 0;
	}
	l = &r->lane[lane];
	*j = *tmpl;
	j->next = NULL;
	j->tnext = NULL;
	j->ttail = &j->tnext;
	if (j->kind == VBE_JOB_GUEST)
		j->mr_seq = r->lane[VBE_LANE_MR].queued;
	pthread_mutex_lock(&l->mu);
	seq = j->seq = ++l->queued;
	/* MR lane: behind the tenant's own jobs, if it has any queued. */
	for (h = lane == VBE_LANE_MR ? l->head : NULL; h; h = h->next)
		if (!strcmp(h->ten, j->ten))
			break;
	if (h) {
		*h->ttail = j;
		h->ttail = &j->tnext;
	} else {
		*l->tail = j;
		l->tail = &j->next;
	}
	pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
	return seq;
}

static uint64_t vbe_reap_job(struct vbe_vx *vx, unsigned lane, const struct vbe_job *tmpl)
{
	return vbe_reap_push(vx, lane, vx->reap ? malloc(sizeof(struct vbe_job)) : NULL, tmpl);
}

void vbe_reap_qp(struct vbe_vx *vx, struct rdma_cm_id *id, bool up, struct ibv_cq *cq,
		 unsigned cq_events)
{
	vbe_reap_job(vx, VBE_LANE_TEAR, &(struct vbe_job){ .kind = VBE_JOB_QP, .id = id, .up = up,
					     .cq = cq, .cq_events = cq_events });
}

/* answer: a DEREG_MR of tenant's waits for it (the MR lane, tenants in
 * turn); else it goes behind the QPs queued before (a dropped buffer's).
 * Returns its number on the MR lane, 0 if it is not there or ran. */
uint64_t vbe_reap_mr(struct vbe_vx *vx, struct ibv_mr *mr, const char *tenant)
{
	struct vbe_job j = { .kind = VBE_JOB_MR, .mr = mr };

	if (!tenant) {
		vbe_reap_job(vx, VBE_LANE_TEAR, &j);
		return 0;
	}
	snprintf(j.ten, sizeof(j.ten), "%s", tenant);
	return vbe_reap_job(vx, VBE_LANE_MR, &j);
}

/* The MR lane has run tenant's job number seq (0: ran inline). */
bool vbe_reap_mr_done(const struct vbe_vx *vx, uint64_t seq, const char *tenant)
{
	struct vbe_lane *l;
	bool done;

	if (!vx->reap)
		return true;
	l = &vx->reap->lane[VBE_LANE_MR];
	if (vbe_lane_mark(l) >= seq)
		return true;
	pthread_mutex_lock(&l->mu);
	done = vbe_lane_past(l, seq, tenant);
	pthread_mutex_unlock(&l->mu);
	return done;
}

void vbe_reap_guest(struct vbe_vx *vx, struct vbe_vguest *vg)
{
	struct vbe_job j = { .kind = VBE_JOB_GUEST, .vg = vg };

	memcpy(j.ten, vg->ten, sizeof(j.ten));
	vbe_reap_job(vx, VBE_LANE_TEAR, &j);
}

void vbe_reap_srq(struct vbe_vx *vx, struct vbe_vsrq *vs)
{
	vbe_reap_job(vx, VBE_LANE_TEAR, &(struct vbe_job){ .kind = VBE_JOB_SRQ, .vs = vs });
}

/* Take m if jobs queued so far may still pin it: 1 = taken (unmapped by
 * vbe_reap_poll once they ran), 0 = nothing pending, unmap it now.  Of
 * the MR lane, only its guest's (tenant's) DEREG_MRs may pin it. */
int vbe_reap_defer_unmap(struct vbe_vx *vx, struct vplat_map *m, struct vbe_tenant *t,
			 const char *tenant, uint32_t npages)
{
	struct vbe_reaper *r = vx->reap;
	struct vbe_late_unmap *u;
	unsigned i;

	if (!r || vbe_reap_idle(r))
		return 0;
	u = malloc(sizeof(*u));
	if (!u) {
		/* Correctness over latency: wait for the device to let go. */
		vbe_reap_drain(r);
		return 0;
	}
	u->map = m;
	for (i = 0; i < VBE_LANES; i++)
		u->seq[i] = r->lane[i].queued;
	/* Still mapped: still the tenant's (quota pages and maps) and the
	 * node's (maps.c) until unmapped. */
	u->ten = t;
	snprintf(u->mr_ten, sizeof(u->mr_ten), "%s", tenant);
	u->npages = npages;
	if (t)
		vbe_tenant_late(vx->node, t, npages, vplat_map_cost(m), true);
	u->next = r->unmaps;
	r->unmaps = u;
	r->nunmaps++;
	return 1;
}

/* Unmap what the device has let go of (loop thread). */
void vbe_reap_poll(struct vbe_vx *vx)
{
	struct vbe_reaper *r = vx->reap;
	struct vbe_lane *mrl;
	struct vbe_late_unmap **p, *u;
	uint64_t tear;			/* every teardown job up to this ran */
	bool ran;

	if (!r)
		return;
	/* Wakes from the MR lane: the loop has come round to look. */
	if (eventfd_read(r->efd, &(eventfd_t){ 0 }) < 0 && errno != EAGAIN)
		vlog_dbg("rdma: reaper eventfd: %s", strerror(errno));
	if (!r->unmaps)
		return;
	tear = vbe_lane_mark(&r->lane[VBE_LANE_TEAR]);
	mrl = &r->lane[VBE_LANE_MR];
	for (p = &r->unmaps; (u = *p);) {
		pthread_mutex_lock(&mrl->mu);
		ran = u->seq[VBE_LANE_TEAR] <= tear &&
		      vbe_lane_past(mrl, u->seq[VBE_LANE_MR], u->mr_ten);
		pthread_mutex_unlock(&mrl->mu);
		if (!ran) {
			p = &u->next;
			continue;
		}
		*p = u->next;
		r->nunmaps--;
		if (u->ten)
			vbe_tenant_late(vx->node, u->ten, u->npages, vplat_map_cost(u->map),
					false);
		vbe_unmap_node(vx->node, u->map, u->npages);
		free(u);
	}
}

/* Jobs not run yet plus maps waiting for them (census: leak tests wait
 * for zero). */
unsigned vbe_reap_pending(const struct vbe_vx *vx)
{
	struct vbe_reaper *r = vx->reap;
	unsigned i, n;

	if (!r)
		return 0;
	n = r->nunmaps;
	for (i = 0; i < VBE_LANES; i++)
		n += (unsigned)(r->lane[i].queued - vbe_lane_done(&r->lane[i]));
	return n;
}

/* Run what is queued, end the threads, unmap the rest (vrdmad exits). */
void vbe_reap_stop(struct vbe_vx *vx)
{
	struct vbe_reaper *r = vx->reap;
	uint64_t left = 0;
	unsigned i;

	if (!r)
		return;
	for (i = 0; i < VBE_LANES; i++)
		left += r->lane[i].queued - vbe_lane_done(&r->lane[i]);
	/* Each can sleep in the kernel (~50 s after retry-exceeded): say so. */
	if (left)
		vlog_warn("rdma: exiting after %llu queued device teardowns",
			  (unsigned long long)left);
	/* The teardown lane first: its guest jobs wait for the MR lane. */
	for (i = 0; i < VBE_LANES; i++)
		vbe_lane_end(&r->lane[i]);
	vbe_reap_poll(vx);
	close(r->efd);
	free(r);
	vx->reap = NULL;
}
