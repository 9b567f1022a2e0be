// SPDX-License-Identifier: MIT
/* The slow paths of vlock.h: sleep and wake on a private futex. */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vlock.h"

void vlock_wait(struct vlock *l)
{
	/* Say "may sleep" (2) with every attempt, so the unlocker that lets
	 * us in also wakes the next sleeper. */
	while (__atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE) != 0)
		syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

void vlock_wake(struct vlock *l)
{
	syscall(SYS_futex, &l->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
