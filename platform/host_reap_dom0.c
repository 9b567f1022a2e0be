// SPDX-License-Identifier: MIT
/*
 * Plain host, dom0 role: closing a file a guest made can wait -- its
 * release (a TCP socket lingering with unsent data, a unix socket whose
 * queue holds such files) or its flush (a FUSE file waits for its daemon).
 * vrdmad's loop never does that itself, nor anything else to such a file
 * (setsockopt takes the socket's lock, which a guest can hold): every fd
 * it drops goes to a small pool of threads here (docs/platform.md "Never
 * block on a guest").  Threads are made when needed, never joined: one may
 * be stuck in a close for good.
 *
 * Each fd is counted against the guest it came from and that guest's uid
 * until its close returns: vrdmad disconnects and refuses a uid with too
 * many (hd_reap_over).  One uid's closes occupy at most HD_REAP_UID_BUSY
 * threads at a time, so a stuck close of one uid delays only that uid's.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host_dom0.h"
#include "log.h"
#include "vplat.h"

#define HD_REAP_THREADS		8	/* at most; one is made at first use */
#define HD_REAP_UID_BUSY	2	/* threads one uid's closes may occupy */
#define HD_REAP_SLOW_MS		100	/* a close this long: start another thread */

struct hd_reap_uid {
	struct hd_reap_uid *next;
	uid_t uid;
	unsigned pending;		/* fds queued or being closed */
	unsigned busy;			/* threads closing one of them */
	unsigned accts;			/* struct hd_reap naming it */
};

struct hd_reap {			/* one guest's account */
	struct hd_reap_uid *u;
	unsigned pending;
	int gone;			/* the guest is freed: last close frees this */
};

struct hd_reap_ent {
	struct hd_reap_ent *next;
	struct hd_reap *a;		/* NULL: vrdmad's own fd */
	int fd;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct hd_reap_ent *q, **qtail;
	struct hd_reap_uid *uids;
	unsigned nthreads, idle, leaked;
	int64_t busy_since[HD_REAP_THREADS];	/* 0: idle or not made */
	int wake_fd;			/* written after each close, -1: none */
} hd_rp = {
	.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER,
	.qtail = &hd_rp.q, .wake_fd = -1,
};

static struct hd_reap_uid *hd_reap_uid_get(uid_t uid)
{
	struct hd_reap_uid *u;

	for (u = hd_rp.uids; u; u = u->next)
		if (u->uid == uid)
			return u;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->uid = uid;
	u->next = hd_rp.uids;
	hd_rp.uids = u;
	return u;
}

/* Called with hd_rp.mu held: free a once its guest is gone and its last
 * fd closed, and its uid's entry with the uid's last account. */
static void hd_reap_unref(struct hd_reap *a)
{
	struct hd_reap_uid **pu;

	if (!a->gone || a->pending)
		return;
	if (!--a->u->accts)
		for (pu = &hd_rp.uids; *pu; pu = &(*pu)->next)
			if (*pu == a->u) {
				*pu = a->u->next;
				free(a->u);
				break;
			}
	free(a);
}

/* Called with hd_rp.mu held: an fd of a's is closed. */
static void hd_reap_done(struct hd_reap *a)
{
	if (!a)
		return;
	a->pending--;
	a->u->pending--;
	hd_reap_unref(a);
}

/* The oldest entry a thread may take now (its uid not at its share). */
static struct hd_reap_ent **hd_reap_next(void)
{
	struct hd_reap_ent **pe;

	for (pe = &hd_rp.q; *pe; pe = &(*pe)->next)
		if (!(*pe)->a || (*pe)->a->u->busy < HD_REAP_UID_BUSY)
			return pe;
	return NULL;
}

static void *hd_reap_loop(void *arg)
{
	unsigned slot = (unsigned)(uintptr_t)arg;
	struct linger off = { 0, 0 };
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);	/* signals are the loop's */
	pthread_mutex_lock(&hd_rp.mu);
	for (;;) {
		struct hd_reap_ent **pe, *e;

		hd_rp.idle++;
		while (!(pe = hd_reap_next()))
			pthread_cond_wait(&hd_rp.cv, &hd_rp.mu);
		hd_rp.idle--;
		e = *pe;
		*pe = e->next;
		if (!*pe)
			hd_rp.qtail = pe;
		if (e->a)
			e->a->u->busy++;
		hd_rp.busy_since[slot] = vplat_now_ms();
		pthread_mutex_unlock(&hd_rp.mu);

		/* A socket closes at once rather than lingering (ENOTSOCK
		 * else); files queued inside it still may: that is why this
		 * is a thread.  Both may wait. */
		setsockopt(e->fd, SOL_SOCKET, SO_LINGER, &off, sizeof(off));
		close(e->fd);

		pthread_mutex_lock(&hd_rp.mu);
		if (vplat_now_ms() - hd_rp.busy_since[slot] >= HD_REAP_SLOW_MS)
			vlog_warn("platform: a guest file took %lld ms to close",
				  (long long)(vplat_now_ms() - hd_rp.busy_since[slot]));
		hd_rp.busy_since[slot] = 0;
		if (e->a)
			e->a->u->busy--;
		hd_reap_done(e->a);
		free(e);
		if (hd_rp.wake_fd >= 0) {
			uint64_t one = 1;

			if (write(hd_rp.wake_fd, &one, sizeof(one)) < 0)
				vlog_dbg("platform: reaper wake: %s", strerror(errno));
		}
		pthread_cond_broadcast(&hd_rp.cv);	/* a uid may be free */
	}
	return NULL;
}

/*
 * Called with hd_rp.mu held: a first thread, or another one when there is
 * work no thread is free for and a close has run for HD_REAP_SLOW_MS.
 */
static void hd_reap_grow(void)
{
	int64_t now = vplat_now_ms();
	pthread_attr_t a;
	pthread_t th;
	unsigned i;
	int slow = 0, r;

	if (hd_rp.nthreads == HD_REAP_THREADS || hd_rp.idle || !hd_reap_next())
		return;
	for (i = 0; i < hd_rp.nthreads; i++)
		slow |= hd_rp.busy_since[i] && now - hd_rp.busy_since[i] >= HD_REAP_SLOW_MS;
	if (hd_rp.nthreads && !slow)
		return;
	if (pthread_attr_init(&a))
		return;
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&th, &a, hd_reap_loop, (void *)(uintptr_t)hd_rp.nthreads);
	pthread_attr_destroy(&a);
	if (r) {
		vlog_err("platform: cannot start a closing thread: %s", strerror(r));
		return;
	}
	if (hd_rp.nthreads)
		vlog_warn("platform: a guest file is slow to close: closing thread %u started",
			  hd_rp.nthreads + 1);
	hd_rp.nthreads++;
}

struct hd_reap *hd_reap_new(uid_t uid)
{
	struct hd_reap *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	pthread_mutex_lock(&hd_rp.mu);
	a->u = hd_reap_uid_get(uid);
	if (a->u)
		a->u->accts++;
	pthread_mutex_unlock(&hd_rp.mu);
	if (!a->u) {
		free(a);
		return NULL;
	}
	return a;
}

void hd_reap_put(struct hd_reap *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&hd_rp.mu);
	a->gone = 1;
	hd_reap_unref(a);
	pthread_mutex_unlock(&hd_rp.mu);
}

int hd_reap_over(const struct hd_reap *a)
{
	int r;

	if (!a)
		return 0;
	pthread_mutex_lock(&hd_rp.mu);
	r = a->pending > HD_REAP_GUEST_MAX || a->u->pending > HD_REAP_UID_MAX;
	pthread_mutex_unlock(&hd_rp.mu);
	return r;
}

unsigned hd_reap_busy(void)
{
	unsigned n = 0, i;
	struct hd_reap_ent *e;

	pthread_mutex_lock(&hd_rp.mu);
	for (e = hd_rp.q; e; e = e->next)
		n++;
	for (i = 0; i < hd_rp.nthreads; i++)
		n += hd_rp.busy_since[i] != 0;
	pthread_mutex_unlock(&hd_rp.mu);
	return n;
}

void hd_reap_wake_fd(int fd)
{
	pthread_mutex_lock(&hd_rp.mu);
	hd_rp.wake_fd = fd;
	pthread_mutex_unlock(&hd_rp.mu);
}

void hd_reap_tick(void)
{
	pthread_mutex_lock(&hd_rp.mu);
	if (hd_rp.q)
		hd_reap_grow();
	pthread_mutex_unlock(&hd_rp.mu);
}

/* Queued, never closed here; the list is unbounded (each entry holds an
 * fd, so vrdmad's fd limit bounds it, and hd_reap_over the guests). */
void hd_fd_drop(struct hd_reap *a, int fd)
{
	struct hd_reap_ent *e;

	if (fd < 0)
		return;
	e = malloc(sizeof(*e));
	pthread_mutex_lock(&hd_rp.mu);
	if (!e) {
		/* Never close it here: left open, counted, said. */
		if (!(hd_rp.leaked++ & 1023))
			vlog_err("platform: %u guest fds left open: out of memory",
				 hd_rp.leaked);
		pthread_mutex_unlock(&hd_rp.mu);
		return;
	}
	e->next = NULL;
	e->a = a;
	e->fd = fd;
	if (a) {
		a->pending++;
		a->u->pending++;
	}
	*hd_rp.qtail = e;
	hd_rp.qtail = &e->next;
	hd_reap_grow();
	pthread_cond_signal(&hd_rp.cv);
	pthread_mutex_unlock(&hd_rp.mu);
}

void hd_fds_drop(struct hd_reap *a, int *fds, int *nfds)
{
	while (*nfds > 0)
		hd_fd_drop(a, fds[--*nfds]);
}

void hd_fd_drop_cb(void *a, int fd)
{
	hd_fd_drop(a, fd);
}
