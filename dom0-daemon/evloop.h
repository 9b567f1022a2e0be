/* SPDX-License-Identifier: MIT */
/*
 * vrdmad's event loop (redis ae style): epoll over fds with callbacks,
 * one-shot or periodic timers on the monotonic clock, and a "busy" mode
 * for the data path.
 *
 * Busy mode, the 2-core rule: each iteration the loop calls the poll
 * hook.  While it reports work, or work happened within the last spin
 * window, the loop polls epoll with timeout 0 and keeps guest
 * notifications off (disarm hook).  Once idle for longer than the window
 * it calls the arm hook (1 = work slipped in, keep polling) and then
 * sleeps in epoll_wait until an fd fires or the next timer is due.
 *
 * Single-threaded: every call from the thread running vev_run(), except
 * vev_stop() which may also be called from a callback.
 */
#ifndef VRDMA_EVLOOP_H
#define VRDMA_EVLOOP_H

#include <stdint.h>

#define VEV_READ		(1u << 0)
#define VEV_WRITE		(1u << 1)
#define VEV_ERROR		(1u << 2)	/* reported only: hangup or error */

#define VEV_TIMER_DONE		(-1)	/* timer callback: do not rearm */
#define VEV_SPIN_US_DEF		50u	/* default spin window */
#define VEV_MAX_SLEEP_MS	1000	/* no sleep without a time limit */
#define VEV_STALL_MS		1000	/* a callback this long is logged */

struct vev_loop;

/* fd became ready; events is a mask of VEV_READ, VEV_WRITE, VEV_ERROR. */
typedef void vev_fd_fn(struct vev_loop *l, int fd, unsigned events, void *arg);
/* Timer due: return the next interval in ms, or VEV_TIMER_DONE. */
typedef int vev_timer_fn(struct vev_loop *l, uint64_t id, void *arg);

struct vev_busy_ops {
	int  (*poll)(void *arg);	/* > 0: work was done */
	int  (*arm)(void *arg);		/* 1: work arrived, do not sleep */
	void (*disarm)(void *arg);	/* busy-polling: suppress notifies */
};

/* Counters for tests and `vrdmactl census`; behaviour, not timing. */
struct vev_stats {
	uint64_t iters;		/* loop iterations */
	uint64_t polls;		/* poll hook calls */
	uint64_t spins;		/* iterations that did not sleep */
	uint64_t sleeps;	/* epoll_wait calls with a non-zero timeout */
	uint64_t arms, disarms;
	uint64_t fd_events, timer_runs;
	uint64_t stalls;	/* callbacks that held the loop VEV_STALL_MS */
};

int  vev_loop_new(struct vev_loop **out);
void vev_loop_free(struct vev_loop *l);	/* does not close registered fds */

/* Register fd for the events in mask; one registration per fd. */
int  vev_fd_add(struct vev_loop *l, int fd, unsigned mask, vev_fd_fn *cb, void *arg);
int  vev_fd_mod(struct vev_loop *l, int fd, unsigned mask);
/* Safe from any callback, including the fd's own; no later call for it. */
int  vev_fd_del(struct vev_loop *l, int fd);
unsigned vev_fd_count(const struct vev_loop *l);

/* Run cb after `after_ms`; *id (optional) names it for vev_timer_del. */
int  vev_timer_add(struct vev_loop *l, int64_t after_ms, vev_timer_fn *cb,
		   void *arg, uint64_t *id);
int  vev_timer_del(struct vev_loop *l, uint64_t id);

/* Install the busy hooks (ops NULL = plain sleeping loop). */
void vev_set_busy(struct vev_loop *l, const struct vev_busy_ops *ops, void *arg,
		  unsigned spin_us);

/* One iteration (tests); 0 or -errno from epoll. */
int  vev_run_once(struct vev_loop *l);
/* Iterate until vev_stop(); 0, or -errno if epoll itself failed. */
int  vev_run(struct vev_loop *l);
void vev_stop(struct vev_loop *l);

void vev_get_stats(const struct vev_loop *l, struct vev_stats *st);
int64_t vev_now_ms(void);		/* monotonic */

#endif /* VRDMA_EVLOOP_H */
