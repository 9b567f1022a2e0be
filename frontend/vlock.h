/* SPDX-License-Identifier: MIT */
/*
 * A small sleeping lock for the data path (the request ring, a CQ): one
 * atomic instruction each way when uncontended, a futex sleep when not.
 * A pthread mutex costs ~50 instructions per lock/unlock pair there, a
 * large part of a post + poll; a spinlock is no option because the ring
 * lock is held while the ring is full (up to VFE_RING_FULL_MS, sleeping),
 * and other posters must sleep too, not spin.
 * Not recursive, no owner checks, no condition variables.
 * States (Drepper, "Futexes Are Tricky"): 0 free, 1 held, 2 held and
 * somebody may sleep on it.
 */
#ifndef VRDMA_VLOCK_H
#define VRDMA_VLOCK_H

#include <stdbool.h>

struct vlock {
	int v;
};

#define VLOCK_INIT { 0 }

void vlock_wait(struct vlock *l);	/* vlock.c: contended lock */
void vlock_wake(struct vlock *l);	/* vlock.c: wake one sleeper */

static inline void vlock_init(struct vlock *l)
{
	__atomic_store_n(&l->v, 0, __ATOMIC_RELAXED);
}

static inline void vlock_lock(struct vlock *l)
{
	int c = 0;

	if (!__atomic_compare_exchange_n(&l->v, &c, 1, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		vlock_wait(l);
}

static inline void vlock_unlock(struct vlock *l)
{
	if (__atomic_exchange_n(&l->v, 0, __ATOMIC_RELEASE) == 2)
		vlock_wake(l);
}

#endif /* VRDMA_VLOCK_H */
