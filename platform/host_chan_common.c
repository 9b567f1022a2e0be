// SPDX-License-Identifier: MIT
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "host_chan.h"
#include "host_proto.h"
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

/* Room for a few fds per datagram: more are closed by the kernel in
 * recvmmsg (docs/platform.md: what a guest cannot help). */
#define HC_ACK_FDS	4

int hc_sock_ack(int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * HC_ACK_FDS)];
		struct cmsghdr align;
	} cb[HC_ACK_MAX];
	struct iovec iov[HC_ACK_MAX];
	struct mmsghdr m[HC_ACK_MAX];
	char buf[HC_ACK_MAX];
	int i, n, bad = 0;

	memset(m, 0, sizeof(m));
	for (i = 0; i < HC_ACK_MAX; i++) {
		iov[i].iov_base = &buf[i];
		iov[i].iov_len = 1;
		m[i].msg_hdr.msg_iov = &iov[i];
		m[i].msg_hdr.msg_iovlen = 1;
		m[i].msg_hdr.msg_control = cb[i].buf;
		m[i].msg_hdr.msg_controllen = sizeof(cb[i].buf);
	}
	n = recvmmsg(fd, m, HC_ACK_MAX, MSG_DONTWAIT | MSG_CMSG_CLOEXEC, NULL);
	/* A notification carries no fds: any is dom0 breaking the protocol
	 * (the guest's end refuses them where the kernel can: SO_PASSRIGHTS). */
	for (i = 0; i < n; i++) {
		struct cmsghdr *c;

		bad |= (m[i].msg_hdr.msg_flags & MSG_CTRUNC) != 0;
		for (c = CMSG_FIRSTHDR(&m[i].msg_hdr); c; c = CMSG_NXTHDR(&m[i].msg_hdr, c)) {
			size_t k;

			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
			    c->cmsg_len < CMSG_LEN(0))
				continue;
			for (k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
				int f;

				memcpy(&f, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
				vhp_drop_close(NULL, f);
				bad = 1;
			}
		}
	}
	if (bad)
		return -EIO;
	if (n > 0)
		return 1;
	if (n == 0 || errno == EAGAIN || errno == EINTR)
		return 0;
	return -errno;
}

int hc_no_rights(int fd)
{
	int zero = 0;

	if (setsockopt(fd, SOL_SOCKET, SO_PASSRIGHTS, &zero, sizeof(zero)) == 0)
		return 0;
	return errno == ENOPROTOOPT ? 0 : -errno;	/* before Linux 6.16 */
}

int hc_is_eventfd(int fd)
{
	char path[32], link[32];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return 0;
	link[n] = '\0';
	return strcmp(link, "anon_inode:[eventfd]") == 0;
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
		int r = ack(fd);

		if (r > 0)
			return 0;
		if (r == -EIO)
			return r;	/* the peer broke the protocol */
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
