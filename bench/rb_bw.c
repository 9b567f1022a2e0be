// SPDX-License-Identifier: MIT
/* vrdma-refbench bandwidth references: memcpy and TCP loopback. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "refbench.h"

/* Time a batch of messages at once so small copies are not dominated by
 * clock_gettime(); about 64 KiB per batch, at most 1/16 of the run. */
static uint64_t rb_batch(size_t size, uint64_t iters)
{
	uint64_t b = size >= 65536 ? 1 : 65536 / size;

	if (b > iters / 16)
		b = iters / 16;
	return b ? b : 1;
}

/* Default iterations: a fixed amount of data, at least a few batches. */
static uint64_t rb_default_iters(const struct rb_opts *o, uint64_t total)
{
	uint64_t n = total / o->size;

	if (o->iters)
		return o->iters;
	return n < 16 ? 16 : n;
}

int rb_run_memcpy(const struct rb_opts *o)
{
	uint64_t total = rb_default_iters(o, 2ull << 30);
	uint64_t batch = rb_batch(o->size, total);
	uint64_t n = total / batch, i, k, done, s = 0, slots;
	uint64_t deadline, *t;
	char *src, *dst;
	struct rb_bw r;
	int ret = -ENOMEM;

	if (!n)
		n = 1;
	/* Rotate over `window` bytes like vrdma-bw rotates over its slots, so
	 * both touch the same amount of memory. */
	slots = o->window > o->size ? o->window / o->size : 1;
	src = malloc(o->size * slots);
	dst = malloc(o->size * slots);
	t = calloc(n + 1, sizeof(*t));
	if (!src || !dst || !t)
		goto out_free;
	/* Pre-fault both buffers so the run measures copies, not page faults. */
	memset(src, 0xa5, o->size * slots);
	memset(dst, 0x5a, o->size * slots);
	for (k = 0; k < 2 * batch; k++)
		memcpy(dst + (k % slots) * o->size, src + (k % slots) * o->size, o->size);

	deadline = rb_now_ns() + (uint64_t)o->timeout_s * 1000000000u;
	t[0] = rb_now_ns();
	for (i = 0, done = 0; i < n; i++) {
		for (k = 0; k < batch; k++, s++) {
			size_t off = (s % slots) * o->size;

			memcpy(dst + off, src + off, o->size);
			/* Keep the compiler from merging or dropping copies. */
			__asm__ __volatile__("" : : "r"(dst) : "memory");
		}
		t[i + 1] = rb_now_ns();
		done = i + 1;
		if (t[i + 1] > deadline)
			break;
	}
	rb_bw_from_samples(&r, o->size, batch, t, done);
	rb_print_bw(o, "memcpy", &r);
	ret = 0;
out_free:
	free(t);
	free(dst);
	free(src);
	if (ret)
		fprintf(stderr, "refbench memcpy: %s\n", strerror(-ret));
	return ret;
}

static int rb_set_timeouts(int fd, int sec)
{
	struct timeval tv = { .tv_sec = sec };

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		return -errno;
	return 0;
}

/* The child: connect and stream n messages of size bytes. */
static void rb_tcp_sender(const struct rb_opts *o, const struct sockaddr_in *sa,
			  uint64_t n)
{
	char *buf = malloc(o->size);
	uint64_t i;
	size_t off;
	ssize_t w;
	int fd;

	alarm((unsigned int)o->timeout_s + 1);	/* backstop for a lost parent */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!buf || fd < 0 || rb_set_timeouts(fd, o->timeout_s) ||
	    connect(fd, (const struct sockaddr *)sa, sizeof(*sa)))
		_exit(1);
	memset(buf, 0xa5, o->size);
	for (i = 0; i < n; i++) {
		for (off = 0; off < o->size; off += (size_t)w) {
			w = send(fd, buf + off, o->size - off, MSG_NOSIGNAL);
			if (w <= 0)
				_exit(1);
		}
	}
	close(fd);
	_exit(0);
}

/* Wait for the child within the deadline; kill it if it overstays. */
static int rb_reap(pid_t pid, uint64_t deadline)
{
	int st;

	for (;;) {
		pid_t p = waitpid(pid, &st, WNOHANG);

		if (p == pid)
			return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EPIPE;
		if (p < 0 && errno != EINTR)
			return -errno;
		if (rb_now_ns() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -ETIMEDOUT;
		}
		usleep(1000);
	}
}

static int rb_tcp_receive(const struct rb_opts *o, int lfd, uint64_t batch,
			  uint64_t n, uint64_t *t, uint64_t deadline)
{
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	uint64_t want = (uint64_t)o->size * batch, got = 0, i = 0;
	char *buf = malloc(o->size * 4);
	int fd = -1, ret;

	if (!buf)
		return -ENOMEM;
	ret = poll(&pfd, 1, o->timeout_s * 1000);
	if (ret <= 0) {
		ret = ret ? -errno : -ETIMEDOUT;
		goto out;
	}
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0 || rb_set_timeouts(fd, o->timeout_s)) {
		ret = -errno;
		goto out;
	}
	/* The clock starts at the first byte, so connect time is not counted. */
	while (i < n) {
		ssize_t r = recv(fd, buf, o->size * 4, 0);

		if (r <= 0) {
			ret = r ? -errno : -EPIPE;
			goto out;
		}
		if (!got && !i)
			t[0] = rb_now_ns();
		got += (uint64_t)r;
		while (got >= want && i < n) {
			got -= want;
			t[++i] = rb_now_ns();
		}
		if (rb_now_ns() > deadline) {
			ret = -ETIMEDOUT;
			goto out;
		}
	}
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

int rb_run_tcp(const struct rb_opts *o)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t salen = sizeof(sa);
	uint64_t total = rb_default_iters(o, 1ull << 30);
	uint64_t batch = rb_batch(o->size, total);
	uint64_t n = total / batch;
	uint64_t deadline = rb_now_ns() + (uint64_t)o->timeout_s * 1000000000u;
	uint64_t *t;
	struct rb_bw r;
	pid_t pid;
	int lfd, ret, ret2;

	if (!n)
		n = 1;
	t = calloc(n + 1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(lfd, 1) || getsockname(lfd, (struct sockaddr *)&sa, &salen)) {
		ret = -errno;
		goto out_close;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		goto out_close;
	}
	if (pid == 0) {
		close(lfd);
		rb_tcp_sender(o, &sa, n * batch);
	}
	ret = rb_tcp_receive(o, lfd, batch, n, t, deadline);
	if (ret)
		kill(pid, SIGKILL);
	ret2 = rb_reap(pid, deadline + 1000000000u);
	if (!ret)
		ret = ret2;
	if (!ret) {
		rb_bw_from_samples(&r, o->size, batch, t, n);
		rb_print_bw(o, "tcp", &r);
	}
out_close:
	if (lfd >= 0)
		close(lfd);
	free(t);
	if (ret)
		fprintf(stderr, "refbench tcp: %s\n", strerror(-ret));
	return ret;
}
