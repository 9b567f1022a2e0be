/* SPDX-License-Identifier: MIT */
/*
 * Plain host: an event channel is two objects vrdmad makes when the guest
 * asks (docs/platform.md "Never block on a guest"):
 *   guest -> dom0: an eventfd both hold; dom0 only ever reads it with
 *     RWF_NOWAIT, so the flags a guest sets on it do not matter to dom0;
 *   dom0 -> guest: a SOCK_DGRAM socketpair; dom0 keeps one end, shut for
 *     reading so the guest can queue nothing (no fds) in it, and sends on
 *     it with MSG_DONTWAIT; the guest reads the other end.
 * These are the operations both sides use.
 */
#ifndef VRDMA_HOST_CHAN_H
#define VRDMA_HOST_CHAN_H

/* Datagrams one ack drains at most; what is left wakes the next round. */
#define HC_ACK_MAX	16

/* dom0 -> guest: a datagram without waiting; a full queue (EAGAIN) still
 * means "notified".  0, -EPIPE when the guest closed or reconnected its
 * end, or -errno. */
int hc_sock_notify(int fd);
/* Guest: consume at most HC_ACK_MAX datagrams: 1 if any, 0, or -errno;
 * -EIO if one carried fds (closed here: dom0 broke the protocol). */
int hc_sock_ack(int fd);
/* Guest: its channel end refuses fds (SO_PASSRIGHTS 0, Linux 6.16; an
 * older kernel cannot: 0 all the same).  0 or -errno. */
int hc_no_rights(int fd);
/* Is fd an eventfd (/proc/self/fd)?  1 or 0. */
int hc_is_eventfd(int fd);

#ifndef SO_PASSRIGHTS
#define SO_PASSRIGHTS	83	/* Linux 6.16 uapi, newer than some libc headers */
#endif
/* Guest -> dom0: add 1 to the eventfd; a saturated counter is "notified". */
int hc_efd_notify(int fd);
/* dom0: consume the eventfd's count without waiting whatever its flags
 * say (RWF_NOWAIT): 1 if there was any, 0, or -errno. */
int hc_efd_ack(int fd);
/* Is RWF_NOWAIT honoured for eventfd reads here (Linux >= 5.12)? */
int hc_efd_nowait_ok(void);
/* Wait up to timeout_ms for fd to be signalled (and ack it): 0, -ETIMEDOUT,
 * or -EPIPE when peer_sock (the guest<->dom0 socket, -1 = none) hangs up. */
int hc_chan_wait(int fd, int (*ack)(int fd), int peer_sock, int timeout_ms);

#endif /* VRDMA_HOST_CHAN_H */
