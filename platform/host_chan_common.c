// SPDX-License-Identifier: MIT
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "host_chan.h"
#include "vplat.h"

int hc_chan_notify(int fd)
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

int hc_chan_ack(int fd)
{
	char buf[HC_ACK_MAX];
	struct iovec iov[HC_ACK_MAX];
	struct mmsghdr m[HC_ACK_MAX];
	int i, n;

	/* One syscall; no control buffer: nobody passes us fds here. */
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
	if (n == 0)
		return 0;
	switch (errno) {
	case EAGAIN:
	case EINTR:
	case ECONNREFUSED:	/* a pending socket error, now consumed */
	case ECONNRESET:
		return 0;
	default:
		return -errno;
	}
}

int hc_chan_wait(int fd, int peer_sock, int timeout_ms)
{
	int64_t deadline = vplat_now_ms() + timeout_ms;

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = fd, .events = POLLIN },
			{ .fd = peer_sock, .events = POLLRDHUP },
		};
		int64_t left = deadline - vplat_now_ms();
		int r;

		if (hc_chan_ack(fd) > 0)
			return 0;
		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(pfd, 2, (int)left);
		if (r < 0 && errno != EINTR)
			return -errno;
		/* Hangup of the socket = the other side is gone. */
		if (pfd[1].revents & (POLLRDHUP | POLLHUP | POLLERR))
			return hc_chan_ack(fd) > 0 ? 0 : -EPIPE;
	}
}
