/* SPDX-License-Identifier: MIT */
/*
 * Ring index logic shared by the frontend and the backend, over the ring
 * controls of include/vrdma/wire.h.  Each side keeps a private copy of the
 * index it owns and only acquire-loads the peer's; the peer's value is
 * untrusted and every caller checks it with vring_sane() before use.
 */
#ifndef VRDMA_VRING_H
#define VRDMA_VRING_H

#include <stdbool.h>
#include <stdint.h>

#include "vrdma/wire.h"

/* Acquire: entries the peer published are read only after its index. */
static inline uint32_t vring_load_acq(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Release: our entries (or our consumption) are visible before the index. */
static inline void vring_store_rel(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Full barrier: orders our index store before reading the peer's event
 * (or our event store before re-reading prod) -- the classic lost-wakeup. */
static inline void vring_mb(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* A peer index is sane iff it never claims more than size entries. */
static inline bool vring_sane(uint32_t prod, uint32_t cons, uint32_t size)
{
	return (uint32_t)(prod - cons) <= size;
}

/* Xen's RING_NEED_NOTIFY: did the batch old..new cross the peer's event? */
static inline bool vring_need_notify(uint32_t event, uint32_t old, uint32_t new)
{
	return (uint32_t)(new - event) < (uint32_t)(new - old);
}

/*
 * Producer: publish entries up to `new` (private prod) and say whether the
 * consumer asked to be notified.  One call per batch.
 */
static inline bool vring_push(struct vrdma_ring_ctl *c, uint32_t old, uint32_t new)
{
	vring_store_rel(&c->prod, new);
	vring_mb();
	return vring_need_notify(__atomic_load_n(&c->event, __ATOMIC_RELAXED),
				 old, new);
}

/* Consumer: record consumption (frees slots for the producer). */
static inline void vring_consumed(struct vrdma_ring_ctl *c, uint32_t cons)
{
	vring_store_rel(&c->cons, cons);
}

/*
 * Consumer about to sleep: ask for a notification at the next entry, then
 * re-check.  Returns true if work arrived meanwhile (do not sleep).
 */
static inline bool vring_arm(struct vrdma_ring_ctl *c, uint32_t cons)
{
	__atomic_store_n(&c->event, cons + 1, __ATOMIC_RELAXED);
	vring_mb();
	return vring_load_acq(&c->prod) != cons;
}

/* Consumer busy-polling: suppress notifications until it arms again. */
static inline void vring_disarm(struct vrdma_ring_ctl *c, uint32_t cons)
{
	__atomic_store_n(&c->event, cons + 0x80000000u, __ATOMIC_RELAXED);
}

/* Byte offsets of the rings inside the device area. */
static inline uint32_t vring_req_off(void)
{
	return VRDMA_PAGE_SIZE;
}

static inline uint32_t vring_evt_off(unsigned req_order)
{
	uint32_t req = (uint32_t)sizeof(struct vrdma_req) << req_order;

	return VRDMA_PAGE_SIZE + (req < VRDMA_PAGE_SIZE ? VRDMA_PAGE_SIZE : req);
}

#endif /* VRDMA_VRING_H */
