/* SPDX-License-Identifier: MIT */
/*
 * vrdma frontend: the guest half of the split driver, inside libvrdma.
 * It owns the device area (sring, request ring, event ring), runs the
 * xenbus-style handshake through the platform keys, produces requests,
 * consumes events and implements the "poll, arm, sleep" waiting rule.
 * It knows nothing about QPs or CQs: events other than CMD_DONE go to the
 * library's callback.
 *
 * Locks (taken in this order, never the other way round):
 *   cmd_lock   one command in flight per device
 *   ring_lock  request producer (private prod, notify)
 *   evt_lock   event consumer (private cons, dispatch)
 *   plat_lock  vplat calls other than notify/wait (vplat is not thread-safe)
 *   wait_lock  who sleeps on the channel (wait_cond, wait_gen, sleeper)
 * The library's own locks (QP/CQ/object) may be taken inside evt_lock by
 * its event callback, never the reverse.
 */
#ifndef VRDMA_FRONT_H
#define VRDMA_FRONT_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "vrdma/wire.h"
#include "vplat.h"
#include "vlock.h"
#include "vring.h"

/* Branch hints for the data path (post, poll): the layout, and so the
 * instruction count, follows the common case. */
#define vfe_likely(x)	__builtin_expect(!!(x), 1)
#define vfe_unlikely(x)	__builtin_expect(!!(x), 0)

#define VFE_CMD_TIMEOUT_MS	5000	/* dom0 answers commands quickly */
#define VFE_CMD_TIMEOUT_MAX	3600000	/* ... VRDMA_CMD_TIMEOUT_MS at most */
#define VFE_RING_FULL_MS	2000	/* request ring full this long: EAGAIN */
#define VFE_CLOSE_WAIT_MS	1000	/* backend Closed after our Closing */
#define VFE_SPIN_US		50	/* busy-poll before arming (latency) */
#define VFE_UD_MSG_MIN		256	/* max-ud-msg at least: IBV_MTU_256 */
#define VFE_SLICE_MS		10	/* first sleep of a waiter ... */
#define VFE_SLICE_MAX_MS	250	/* ... doubling to this while idle */

/* Event callback: called under evt_lock with a copied-out event whose type
 * is not CMD_DONE.  Return 0, or -EPROTO if dom0 broke the protocol. */
typedef int vfe_evt_fn(void *arg, const struct vrdma_evt *e);

/* Wait predicate: true when what the waiter wants has happened.  Called
 * without frontend locks.  arm (may be NULL): arm the waiter's own ring
 * (e.g. a CQ) and return true if work arrived meanwhile. */
typedef bool vfe_ready_fn(void *arg);
typedef bool vfe_arm_fn(void *arg);

struct vfe_dev {
	struct vplat *plat;
	struct vplat_share *area;
	struct vplat_chan *chan;
	uint32_t backend_id;
	uint32_t port;
	char backend[VPLAT_KEY_MAX];	/* backend directory (absolute) */
	char node_name[VRDMA_NAME_MAX];
	uint8_t node_gid[16];		/* backend's node-gid, zero if none */
	unsigned spin_us;		/* busy-poll before sleeping (wait policy) */
	bool feat_modify_qp;		/* backend's feature-modify-qp */
	bool feat_srq;			/* backend's feature-srq */
	bool feat_ud;			/* backend's feature-ud */
	bool feat_coll;			/* backend's feature-coll: teams it runs */
	bool feat_coll_nodes;		/* ... feature-coll-nodes: also across nodes */
	uint32_t max_sge;		/* SGEs per WR: backend's max-sge, bounded */
	uint32_t max_buf_pages;		/* per buffer: backend's max-buf-pages, bounded */
	uint32_t max_cq_order;		/* backend's max-cq-order, bounded */
	uint32_t max_ud_msg;		/* backend's max-ud-msg, vfe_ud_msg_bound */
	uint32_t devid;			/* the device this process claimed */
	char fdir[40];			/* "device/vrdma/<devid>", home-relative */
	char owner[48];			/* our claim: "<pid> <start time>" */

	struct vrdma_sring *sring;
	struct vrdma_req *req;		/* request ring entries */
	struct vrdma_evt *evt;		/* event ring entries */
	uint32_t req_size;
	uint32_t evt_size;
	uint8_t req_order;
	uint8_t evt_order;

	pthread_mutex_t cmd_lock;
	struct vlock ring_lock;		/* data path: vlock.h */
	pthread_mutex_t evt_lock;
	pthread_mutex_t plat_lock;
	pthread_mutex_t wait_lock;	/* one sleeper on the channel at a time */
	pthread_cond_t wait_cond;	/* the sleeper woke: others re-check */
	uint64_t wait_gen;		/* bumped at every wakeup (wait_lock) */
	bool sleeper;			/* a thread sleeps on the channel */

	/* Backend state watch: the callback only flags a change, the state
	 * is read outside vplat_process() (plat_lock). */
	bool watching;
	bool back_changed;
	bool disconnected;		/* vfe_disconnect() done */

	uint32_t req_prod;		/* private producer index (ring_lock) */
	uint32_t req_pushed;		/* last published prod (ring_lock) */
	uint32_t req_end;		/* prod may go up to it: cons at the last look
				 * + size (ring_lock) */
	uint32_t notified;		/* doorbells rung so far (ring_lock; the
					 * latency trace reads it) */
	uint32_t evt_cons;		/* private consumer index (evt_lock) */

	int broken;			/* atomic: dom0 misbehaved, all calls EIO */
	/* What a poller loads (vfe_live): &sring->dom0_live once dom0 set it
	 * before Connected (docs/wire.md), else a private 1 ("not tracked");
	 * a private 0 once the device is broken, so one load answers both. */
	const uint8_t *live;

	/* The command in flight (cmd_lock issues, evt_lock completes). */
	uint64_t cmd_next_id;
	uint64_t cmd_wait_id;
	uint32_t cmd_wait_handle;	/* CMD_DONE must echo it */
	int cmd_timeout_ms;		/* VFE_CMD_TIMEOUT_MS or the env's */
	int cmd_done;			/* atomic */
	uint16_t cmd_status;
	uint32_t cmd_out[4];

	vfe_evt_fn *evt_cb;
	void *evt_arg;
	void (*broken_cb)(void *arg);	/* once, when broken (any thread) */
	void *broken_arg;
};

/* A UD payload of the backend's max-ud-msg v (VRDMA_UD_MTU when absent):
 * dom0's word within what the wire carries, never below IB's smallest
 * MTU, which any device leaves after vrdmad's header. */
static inline uint32_t vfe_ud_msg_bound(uint32_t v)
{
	return v > VRDMA_UD_MTU ? VRDMA_UD_MTU : v < VFE_UD_MSG_MIN ? VFE_UD_MSG_MIN : v;
}

/* front.c: handshake */
int  vfe_open(struct vfe_dev *d, const char *kind, int timeout_ms,
	      vfe_evt_fn *cb, void *cb_arg);
/* Say Closing and wait (bounded) for the backend to let go of everything
 * it mapped; vfe_close() does it if not done before. */
void vfe_disconnect(struct vfe_dev *d);
void vfe_close(struct vfe_dev *d);
/* Off the data path (before sleeping, ring full): run platform watch
 * callbacks and mark the device broken if the backend closed on us.
 * Cheap when nothing changed.  0 or -EIO. */
int  vfe_check_backend(struct vfe_dev *d);
/* Mark the device unusable; why is logged once and cb (set once, after
 * vfe_open) called once.  cb takes only leaf locks. */
void vfe_set_broken(struct vfe_dev *d, const char *why);
void vfe_on_broken(struct vfe_dev *d, void (*cb)(void *arg), void *arg);
static inline bool vfe_is_broken(const struct vfe_dev *d)
{
	return __atomic_load_n(&d->broken, __ATOMIC_ACQUIRE) != 0;
}
/* For a poller (vrdma_poll_cq), as cheap as vfe_is_broken(): false once
 * the device is broken or dom0 died (its byte went 1 -> 0); the caller
 * then tells which with vfe_is_broken() and, if dom0 died, breaks the
 * device with vfe_dom0_gone(). */
static inline bool vfe_live(const struct vfe_dev *d)
{
	return __atomic_load_n(__atomic_load_n(&d->live, __ATOMIC_ACQUIRE),
			       __ATOMIC_RELAXED) == VRDMA_SRING_LIVE;
}
/* Cold: the device is broken if dom0's byte was cleared; -EIO if broken. */
int  vfe_dom0_gone(struct vfe_dev *d);

/* Shareable pages for buffers and CQ areas (serialised vplat calls). */
int  vfe_share(struct vfe_dev *d, uint32_t npages, int writable,
	       struct vplat_share **out);
void vfe_unshare(struct vfe_dev *d, struct vplat_share *s);

/* ring.c: request producer.  Between vfe_ring_lock() and
 * vfe_ring_unlock() the caller puts entries (each waits, bounded, for
 * space) and unlock publishes them with at most one notification.
 * vfe_ring_slot() is the next entry, to fill in place (no copy) and
 * vfe_ring_commit(); NULL with *err (-EIO, -EAGAIN) if none came. */
static inline void vfe_ring_lock(struct vfe_dev *d)
{
	vlock_lock(&d->ring_lock);
}
int  vfe_ring_put(struct vfe_dev *d, const struct vrdma_req *r);
int  vfe_ring_put_ext(struct vfe_dev *d, const struct vrdma_req *r,
		      const struct vrdma_sge_ext *x, uint32_t nx);
struct vrdma_req *vfe_ring_slot_wait(struct vfe_dev *d, int *err);
/* Room for an entry known without a look at shared memory: the room seen
 * at the last look at the backend's consumer index only grows meanwhile,
 * no shared read per entry until it is used.  vfe_ring_entry() is then
 * the next entry.  A poster that checked vfe_is_broken() once after
 * taking the lock uses these per WR (a device that breaks later is
 * caught by vfe_ring_unlock()), else vfe_ring_slot(). */
static inline bool vfe_ring_room(const struct vfe_dev *d)
{
	return d->req_prod != d->req_end;
}
static inline struct vrdma_req *vfe_ring_entry(struct vfe_dev *d)
{
	return &d->req[d->req_prod & (d->req_size - 1)];
}
static inline struct vrdma_req *vfe_ring_slot(struct vfe_dev *d, int *err)
{
	if (vfe_likely(vfe_ring_room(d) && !vfe_is_broken(d)))
		return vfe_ring_entry(d);
	return vfe_ring_slot_wait(d, err);
}
static inline void vfe_ring_commit(struct vfe_dev *d)
{
	d->req_prod++;		/* published by vfe_ring_unlock() */
}

/* Publish what was put so far; notify only if the backend armed. */
static inline void vfe_ring_flush(struct vfe_dev *d)
{
	uint32_t prod = d->req_prod, old = d->req_pushed;

	if (prod == old)
		return;
	/* Ours (ring_lock), before the push's barrier: no reload after it. */
	d->req_pushed = prod;
	if (vring_push(&d->sring->req, old, prod)) {
		vplat_notify(d->chan);
		d->notified++;
	}
}

/* Inline with the above: once per post, a call costs as much as it. */
static inline int vfe_ring_unlock(struct vfe_dev *d)
{
	int rc = vfe_is_broken(d) ? -EIO : 0;

	if (!rc)
		vfe_ring_flush(d);
	vlock_unlock(&d->ring_lock);
	return rc;
}

/* ring.c: event consumer and waiting. */
int  vfe_poll_events(struct vfe_dev *d);
int  vfe_wait(struct vfe_dev *d, vfe_ready_fn *ready, vfe_arm_fn *arm,
	      void *arg, int timeout_ms);

/* cmd.c: one command, synchronously.  req->opcode, handle and body are
 * the caller's; id is assigned here.  out may be NULL.  0 or -errno
 * mapped from VRDMA_CS_*. */
/* claim.c: which of the domain's devices this process uses */
int  vfe_claim(struct vfe_dev *d, int64_t deadline);
void vfe_unclaim(struct vfe_dev *d);

int  vfe_cmd(struct vfe_dev *d, struct vrdma_req *req, uint32_t out[4]);
int  vfe_cmd_status_errno(uint16_t status);
/* Called by the event consumer for a CMD_DONE (evt_lock held). */
int  vfe_cmd_complete(struct vfe_dev *d, const struct vrdma_evt *e);
/* A command result that makes no sense (the caller checked out[]):
 * mark the device broken, -EIO. */
int  vfe_cmd_bad(struct vfe_dev *d, const char *why);

#endif /* VRDMA_FRONT_H */
