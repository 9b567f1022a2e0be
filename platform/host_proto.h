/* SPDX-License-Identifier: MIT */
/*
 * Plain host: the messages between a guest's platform and vrdmad on
 * <run_dir>/guest.sock (SOCK_SEQPACKET, one message per packet).  This
 * socket stands in for the hypervisor: grant table (SHARE/UNSHARE with a
 * memfd), event channels (CHAN: dom0 makes them, host_chan.h) and
 * xenstore (KEY_*, WATCH, EVENT).
 * Same machine, same ABI: native-endian fixed-width.
 *
 *   guest -> dom0          args                         payload    fds
 *   HELLO                  [0]=version                  name\0     -
 *   KEY_READ/RM/LIST       -                            path\0     -
 *   KEY_WRITE              -                            path\0val\0 -
 *   WATCH                  [0]=token                    path\0     -
 *   UNWATCH                [0]=token                    -          -
 *   SHARE                  [0]=ref [1]=npages [2]=wr    -          memfd
 *   UNSHARE (no reply)     [0]=ref [1]=npages           -          -
 *   CHAN                   [0]=port                     -          -
 *   CHAN_CLOSE (no reply)  [0]=port                     -          -
 *   dom0 -> guest
 *   WELCOME                [0]=domid, err               -          -
 *   REPLY                  seq of request, err; LIST: [0]=count, payload names;
 *                          CHAN: fds to_dom0 (eventfd), to_guest (socket end)
 *   EVENT                  [0]=token                    path\0     -
 */
#ifndef VRDMA_HOST_PROTO_H
#define VRDMA_HOST_PROTO_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define VHP_VERSION	2	/* 2: channels are made by dom0 */
#define VHP_SOCK_NAME	"guest.sock"
#define VHP_NAME_MAX	64
#define VHP_PAYLOAD_MAX	(64 * 1024)
#define VHP_MAX_FDS	2

enum vhp_type {
	VHP_HELLO = 1,
	VHP_WELCOME,
	VHP_REPLY,
	VHP_EVENT,
	VHP_KEY_READ,
	VHP_KEY_WRITE,
	VHP_KEY_RM,
	VHP_KEY_LIST,
	VHP_WATCH,
	VHP_UNWATCH,
	VHP_SHARE,
	VHP_UNSHARE,
	VHP_CHAN,
	VHP_CHAN_CLOSE,
};

struct vhp_hdr {
	uint32_t type;
	uint32_t seq;
	int32_t err;		/* replies: 0 or -errno */
	uint32_t len;		/* payload bytes after the header */
	uint32_t arg[4];
};

/* Send header + payload (+ fds).  MSG_NOSIGNAL: a dead peer is -EPIPE. */
static inline int vhp_send(int sock, struct vhp_hdr *h, const void *payload,
			   const int *fds, int nfds, int flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VHP_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov[2] = {
		{ .iov_base = h, .iov_len = sizeof(*h) },
		{ .iov_base = (void *)payload, .iov_len = h->len },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = h->len ? 2 : 1 };
	ssize_t n;

	if (nfds > 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	n = sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
	if (n < 0)
		return -errno;
	return (size_t)n == sizeof(*h) + h->len ? 0 : -EMSGSIZE;
}

/* The kernel's SCM_MAX_FD: the most fds one message can carry. */
#define VHP_SCM_MAX_FD	253

/* What a receiver does with an fd it will not keep: close it, or (vrdmad)
 * hand it to a thread that may wait in the close. */
typedef void vhp_drop_fn(void *arg, int fd);

/* The guest's: a socket closes at once rather than lingering (files
 * queued inside it still may: a guest cannot help that, and it waits on
 * dom0 anyway). */
static inline void vhp_drop_close(void *arg, int fd)
{
	struct linger off = { 0, 0 };

	(void)arg;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &off, sizeof(off));
	close(fd);
}

/*
 * Receive one message.  0 on success, -EPIPE at end of stream, -EAGAIN,
 * -EBADMSG for a malformed packet (sizes disagree, truncated, more than
 * VHP_MAX_FDS fds, fds on an empty packet).  There is room for every fd a
 * packet can carry, so the kernel never drops (closes) one here; each fd
 * not returned goes to drop(arg, fd).  Control messages are looked at
 * before the length: a zero-length packet still carries SCM_RIGHTS, so it
 * is end of stream only without any.  Received fds are close-on-exec.
 */
static inline int vhp_recv_drop(int sock, struct vhp_hdr *h, void *payload, size_t cap,
				int *fds, int *nfds, int flags, vhp_drop_fn *drop, void *arg)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VHP_SCM_MAX_FD)];
		struct cmsghdr align;
	} u;
	struct iovec iov[2] = {
		{ .iov_base = h, .iov_len = sizeof(*h) },
		{ .iov_base = payload, .iov_len = cap },
	};
	struct msghdr mh = {
		.msg_iov = iov, .msg_iovlen = 2,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *c;
	int extra = 0, any = 0;
	ssize_t n;

	*nfds = 0;
	n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t k, cnt;

		any = 1;
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
			continue;
		cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < cnt; k++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
			if (*nfds < VHP_MAX_FDS && n > 0) {
				fds[(*nfds)++] = fd;
			} else {
				drop(arg, fd);
				extra = 1;
			}
		}
	}
	/* (msg_flags keeps MSG_CMSG_CLOEXEC: only truncation counts.) */
	if (n == 0 && !any && !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return -EPIPE;
	if (extra || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    (size_t)n < sizeof(*h) || h->len != (size_t)n - sizeof(*h)) {
		while (*nfds > 0)
			drop(arg, fds[--*nfds]);
		return -EBADMSG;
	}
	return 0;
}

static inline int vhp_recv(int sock, struct vhp_hdr *h, void *payload, size_t cap,
			   int *fds, int *nfds, int flags)
{
	return vhp_recv_drop(sock, h, payload, cap, fds, nfds, flags, vhp_drop_close, NULL);
}

#endif /* VRDMA_HOST_PROTO_H */
