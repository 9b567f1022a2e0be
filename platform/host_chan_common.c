// SPDX-License-Identifier: MIT
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "host_chan.h"
#include "vplat.h"

int hc_sock_notify(int fd)
{
	char one = 1;

	/* Per call, whatever the description's flags say. */
	if (send(fd, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
		return 0;
	switch (errno) {
	case EAGAIN:
		return 0;
	case ECONNREFUSED:	/* peer closed (reported once) */
	case ECONNRESET:
	case ENOTCONN:		/* ... and from then on */
	case EPIPE:
	case EPERM:		/* peer reconnected its end elsewhere */
		return -EPIPE;
	default:
		return -errno;
	}
}

int hc_sock_ack(int fd)
{
	struct iovec iov[HC_ACK_MAX];
	struct mmsghdr m[HC_ACK_MAX];
	char buf[HC_ACK_MAX];
	int i, n;

	memset(m, 0, sizeof(m));
	for (i = 0; i < HC_ACK_MAX; i++) {
		iov[i].iov_base = &buf[i];
		iov[i].iov_len = 1;
		m[i].msg_hdr.msg_iov = &iov[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	n = recvmmsg(fd, m, HC_ACK_MAX, MSG_DONTWAIT, NULL);
	if (n > 0)
		return 1;
	if (n == 0 || errno == EAGAIN || errno == EINTR)
		return 0;
	return -errno;
}

int hc_efd_notify(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return -errno;
	return 0;
}

int hc_efd_ack(int fd)
{
	uint64_t cnt;
	struct iovec iov = { .iov_base = &cnt, .iov_len = sizeof(cnt) };

	/* The guest shares this description: never trust its O_NONBLOCK. */
	if (preadv2(fd, &iov, 1, -1, RWF_NOWAIT) >= 0)
		return 1;
	/* A kernel older than 5.12: the flags decide (hd_open warned). */
	if (errno == EOPNOTSUPP && read(fd, &cnt, sizeof(cnt)) >= 0)
		return 1;
	return errno == EAGAIN ? 0 : -errno;
}

int hc_efd_nowait_ok(void)
{
	int fd = eventfd(0, EFD_CLOEXEC);
	uint64_t cnt;
	struct iovec iov = { .iov_base = &cnt, .iov_len = sizeof(cnt) };
	ssize_t n;

	if (fd < 0)
		return 0;
	n = preadv2(fd, &iov, 1, -1, RWF_NOWAIT);	/* count 0, blocking */
	close(fd);
	return n < 0 && errno == EAGAIN;
}

int hc_chan_wait(int fd, int (*ack)(int fd), int peer_sock, int timeout_ms)
{
	int64_t deadline = vplat_now_ms() + timeout_ms;

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = fd, .events = POLLIN },
			{ .fd = peer_sock, .events = POLLRDHUP },
		};
		int64_t left = deadline - vplat_now_ms();
		int r;

		if (ack(fd) > 0)
			return 0;
		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(pfd, 2, (int)left);
		if (r < 0 && errno != EINTR)
			return -errno;
		/* Hangup of the socket = the other side is gone. */
		if (pfd[1].revents & (POLLRDHUP | POLLHUP | POLLERR))
			return ack(fd) > 0 ? 0 : -EPIPE;
	}
}
