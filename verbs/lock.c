// SPDX-License-Identifier: MIT
/* The slow paths of vvb_lock (vvb.h): sleep and wake on a private futex. */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vvb.h"

void vvb_lock_wait(struct vvb_lock *l)
{
	/* Say "may sleep" (2) with every attempt, so the unlocker that lets
	 * us in also wakes the next sleeper.  EAGAIN (the word changed) and
	 * EINTR just try again. */
	while (__atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE) != 0)
		syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

void vvb_lock_wake(struct vvb_lock *l)
{
	/* Nothing to do on failure: a private futex word that is ours. */
	syscall(SYS_futex, &l->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
