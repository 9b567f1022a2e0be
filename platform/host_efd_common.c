// SPDX-License-Identifier: MIT
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <unistd.h>

#include "host_efd.h"
#include "vplat.h"

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

	if (read(fd, &cnt, sizeof(cnt)) < 0)
		return errno == EAGAIN ? 0 : -errno;
	return 1;
}

int hc_efd_wait(int fd, int peer_sock, int timeout_ms)
{
	int64_t deadline = vplat_now_ms() + timeout_ms;

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = fd, .events = POLLIN },
			{ .fd = peer_sock, .events = POLLRDHUP },
		};
		int64_t left = deadline - vplat_now_ms();
		int r;

		if (hc_efd_ack(fd) > 0)
			return 0;
		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(pfd, 2, (int)left);
		if (r < 0 && errno != EINTR)
			return -errno;
		/* Hangup of the socket = the other side is gone. */
		if (pfd[1].revents & (POLLRDHUP | POLLHUP | POLLERR))
			return hc_efd_ack(fd) > 0 ? 0 : -EPIPE;
	}
}
