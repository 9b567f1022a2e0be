// SPDX-License-Identifier: MIT
/*
 * Request producer, event consumer, and the waiting rule shared by every
 * blocking call: poll briefly, arm, re-check, sleep in short slices.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "front.h"
#include "log.h"
#include "vring.h"

/* Free slots, from the backend's (untrusted) consumer index. */
static int vfe_ring_space(struct vfe_dev *d, uint32_t *space)
{
	uint32_t cons = vring_load_acq(&d->sring->req.cons);

	if (!vring_sane(d->req_prod, cons, d->req_size)) {
		vfe_set_broken(d, "request ring consumer index out of range");
		return -EIO;
	}
	*space = d->req_size - (d->req_prod - cons);
	return 0;
}

/* The room known is used up: look at the consumer index again, wait
 * (bounded) while fewer than @need entries are free.  0, -EIO, -EAGAIN. */
static int vfe_ring_wait(struct vfe_dev *d, uint32_t need)
{
	int64_t deadline = 0;
	uint32_t space;
	unsigned spins = 0;
	int rc;

	for (;;) {
		rc = vfe_is_broken(d) ? -EIO : vfe_ring_space(d, &space);
		if (rc)
			return rc;
		if (space >= need)
			break;
		/* Full: make sure the backend knows about our entries. */
		if (!deadline) {
			vfe_ring_flush(d);
			vplat_notify(d->chan);
			deadline = vplat_now_ms() + VFE_RING_FULL_MS;
		} else if (vplat_now_ms() >= deadline) {
			return -EAGAIN;
		}
		if (++spins < 64) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 100000 };

			/* Long wait: is the backend still there at all? */
			if (spins % 64 == 0 && vfe_check_backend(d))
				return -EIO;
			nanosleep(&ts, NULL);
		}
	}
	d->req_end = d->req_prod + space;
	return 0;
}

/* vfe_ring_slot() once the room it knew of is used up. */
struct vrdma_req *vfe_ring_slot_wait(struct vfe_dev *d, int *err)
{
	int rc = vfe_ring_wait(d, 1);

	if (rc) {
		*err = rc;
		return NULL;
	}
	return vfe_ring_entry(d);
}

/* A WR and its SGE entries, committed together: a wait for room only
 * ever publishes what came before them (wire.h, struct vrdma_sge_ext). */
int vfe_ring_put_ext(struct vfe_dev *d, const struct vrdma_req *r,
		     const struct vrdma_sge_ext *x, uint32_t nx)
{
	uint32_t i;
	int rc;

	if (1 + nx > d->req_size)
		return -EINVAL;
	if (d->req_end - d->req_prod < 1 + nx || vfe_is_broken(d)) {
		rc = vfe_ring_wait(d, 1 + nx);
		if (rc)
			return rc;
	}
	memcpy(vfe_ring_entry(d), r, sizeof(*r));
	vfe_ring_commit(d);
	for (i = 0; i < nx; i++) {
		memcpy(vfe_ring_entry(d), &x[i], sizeof(x[i]));
		vfe_ring_commit(d);
	}
	return 0;
}

int vfe_ring_put(struct vfe_dev *d, const struct vrdma_req *r)
{
	struct vrdma_req *slot;
	int rc;

	slot = vfe_ring_slot(d, &rc);
	if (!slot)
		return rc;
	memcpy(slot, r, sizeof(*r));
	vfe_ring_commit(d);
	return 0;
}

/* Copy each event out of shared memory, check it, dispatch it. */
static int vfe_evt_one(struct vfe_dev *d, const struct vrdma_evt *e)
{
	if (e->status >= VRDMA_CS_MAX)
		return -EPROTO;
	switch (e->type) {
	case VRDMA_EVT_CMD_DONE:
		return vfe_cmd_complete(d, e);
	case VRDMA_EVT_CONN_REQUEST:
	case VRDMA_EVT_CONNECTED:
	case VRDMA_EVT_REJECTED:
		if (e->u.conn.pdata_len > VRDMA_PDATA_MAX)
			return -EPROTO;
		return d->evt_cb ? d->evt_cb(d->evt_arg, e) : 0;
	case VRDMA_EVT_CONN_FROM:
		/* A name dom0 writes: NUL-terminated, or we refuse it. */
		if (strnlen(e->u.from.node, VRDMA_NAME_MAX) == VRDMA_NAME_MAX)
			return -EPROTO;
		/* fall through */
	case VRDMA_EVT_QP_ERROR:
	case VRDMA_EVT_CQ_ERROR:
	case VRDMA_EVT_TEAM:
		return d->evt_cb ? d->evt_cb(d->evt_arg, e) : 0;
	default:
		return -EPROTO;
	}
}

int vfe_poll_events(struct vfe_dev *d)
{
	struct vrdma_evt e;
	uint32_t prod;
	int n = 0;

	/* Every waiter passes here; on Xen the byte's clearing also kicked us. */
	if (vfe_unlikely(!vfe_live(d)))
		return vfe_dom0_gone(d);
	if (vfe_is_broken(d))
		return -EIO;
	pthread_mutex_lock(&d->evt_lock);
	prod = vring_load_acq(&d->sring->evt.prod);
	if (!vring_sane(prod, d->evt_cons, d->evt_size)) {
		pthread_mutex_unlock(&d->evt_lock);
		vfe_set_broken(d, "event ring producer index out of range");
		return -EIO;
	}
	while (d->evt_cons != prod) {
		memcpy(&e, &d->evt[d->evt_cons & (d->evt_size - 1)], sizeof(e));
		d->evt_cons++;
		if (vfe_evt_one(d, &e)) {
			pthread_mutex_unlock(&d->evt_lock);
			vlog_err("vrdma: bad event type %u status %u handle %u",
				 e.type, e.status, e.handle);
			vfe_set_broken(d, "invalid event from dom0");
			return -EIO;
		}
		n++;
	}
	if (n)
		vring_consumed(&d->sring->evt, d->evt_cons);
	pthread_mutex_unlock(&d->evt_lock);
	return n;
}

/* Arm the event ring; true if events arrived meanwhile. */
static bool vfe_evt_arm(struct vfe_dev *d)
{
	bool more;

	pthread_mutex_lock(&d->evt_lock);
	more = vring_arm(&d->sring->evt, d->evt_cons);
	pthread_mutex_unlock(&d->evt_lock);
	return more;
}

static int64_t vfe_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void vfe_deadline_ts(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/*
 * Sleep for one slice.  The channel is one eventfd/port for the whole
 * device, so one thread sleeps on it; when it wakes (notified or its slice
 * is over) it bumps wait_gen and wakes the others, who wait on wait_cond
 * (bounded) and re-check their own condition.
 */
static int vfe_sleep_slice(struct vfe_dev *d, int ms)
{
	struct timespec ts;
	uint64_t gen;
	int rc;

	pthread_mutex_lock(&d->wait_lock);
	if (d->sleeper) {
		gen = d->wait_gen;
		vfe_deadline_ts(&ts, ms);
		while (gen == d->wait_gen &&
		       pthread_cond_timedwait(&d->wait_cond, &d->wait_lock, &ts) == 0)
			;
		pthread_mutex_unlock(&d->wait_lock);
		return 0;
	}
	d->sleeper = true;
	pthread_mutex_unlock(&d->wait_lock);

	rc = vplat_chan_wait(d->chan, ms);

	pthread_mutex_lock(&d->wait_lock);
	d->sleeper = false;
	d->wait_gen++;
	pthread_cond_broadcast(&d->wait_cond);
	pthread_mutex_unlock(&d->wait_lock);
	if (rc == -ETIMEDOUT)
		rc = 0;
	if (rc == -EPIPE) {
		vfe_set_broken(d, "dom0 went away");
		rc = -EIO;
	} else if (rc == -EIO) {
		vfe_set_broken(d, "dom0 sent files on the channel");
	}
	return rc;
}

int vfe_wait(struct vfe_dev *d, vfe_ready_fn *ready, vfe_arm_fn *arm,
	     void *arg, int timeout_ms)
{
	int64_t deadline = vplat_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	int64_t spin_end = d->spin_us ? vfe_now_us() + d->spin_us : 0;
	int64_t left;
	int slice = VFE_SLICE_MS;	/* an idle waiter wakes ever less often */
	int rc;

	for (;;) {
		rc = vfe_poll_events(d);
		if (rc < 0)
			return rc;
		if (ready(arg))
			return 0;
		if (spin_end && vfe_now_us() < spin_end)
			continue;
		left = deadline - vplat_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		/* Arm everything we wait on, then re-check before sleeping. */
		if (vfe_evt_arm(d))
			continue;
		if (arm && arm(arg))
			continue;
		if (ready(arg))
			return 0;
		/* Off the data path: one cheap look at the backend state. */
		rc = vfe_check_backend(d);
		if (rc < 0)
			return rc;
		rc = vfe_sleep_slice(d, left < slice ? (int)left : slice);
		if (rc < 0)
			return rc;
		if (slice < VFE_SLICE_MAX_MS)
			slice = slice * 2 < VFE_SLICE_MAX_MS ? slice * 2 : VFE_SLICE_MAX_MS;
	}
}
