// SPDX-License-Identifier: MIT
/*
 * Plain host, dom0 role: closing a file a guest made can wait -- its
 * release (a TCP socket lingering with unsent data, a unix socket whose
 * queue holds such files) or its flush (a FUSE file waits for its daemon).
 * vrdmad's loop never does that itself: such fds go to a thread of their
 * own (docs/platform.md "Never block on a guest").  One per process, made
 * at first use, never joined: it may be stuck in a close for good.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host_dom0.h"
#include "log.h"

/* fds waiting to be closed; past this the reaper is stuck and the fd is
 * left open (logged), which the fd_limit checks turn into refusals. */
#define HD_REAP_MAX	4096

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int fds[HD_REAP_MAX];
	unsigned head, n, leaked;
	int started;
} hd_rp = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void *hd_reap_loop(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);	/* signals are the loop's */
	pthread_mutex_lock(&hd_rp.mu);
	for (;;) {
		int fd;

		while (!hd_rp.n)
			pthread_cond_wait(&hd_rp.cv, &hd_rp.mu);
		fd = hd_rp.fds[hd_rp.head];
		hd_rp.head = (hd_rp.head + 1) % HD_REAP_MAX;
		hd_rp.n--;
		pthread_mutex_unlock(&hd_rp.mu);
		close(fd);	/* may wait: that is why it is here */
		pthread_mutex_lock(&hd_rp.mu);
	}
	return NULL;
}

static int hd_reap_start(void)
{
	pthread_attr_t a;
	pthread_t th;
	int r;

	if (pthread_attr_init(&a))
		return -ENOMEM;
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	r = -pthread_create(&th, &a, hd_reap_loop, NULL);
	pthread_attr_destroy(&a);
	return r;
}

void hd_fd_drop(int fd)
{
	struct linger off = { 0, 0 };
	int r = 0;

	if (fd < 0)
		return;
	/* A socket closes at once rather than lingering (ENOTSOCK else). */
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &off, sizeof(off));
	pthread_mutex_lock(&hd_rp.mu);
	if (!hd_rp.started) {
		r = hd_reap_start();
		hd_rp.started = !r;
	}
	if (r || hd_rp.n == HD_REAP_MAX) {
		/* Never close it here: left open, counted, said. */
		if (!(hd_rp.leaked++ & 1023))
			vlog_err("platform: %u guest fds left open: %s", hd_rp.leaked,
				 r ? strerror(-r) : "the closing thread is stuck");
		pthread_mutex_unlock(&hd_rp.mu);
		return;
	}
	hd_rp.fds[(hd_rp.head + hd_rp.n) % HD_REAP_MAX] = fd;
	hd_rp.n++;
	pthread_cond_signal(&hd_rp.cv);
	pthread_mutex_unlock(&hd_rp.mu);
}

void hd_fds_drop(int *fds, int *nfds)
{
	while (*nfds > 0)
		hd_fd_drop(fds[--*nfds]);
}
