/* SPDX-License-Identifier: MIT */
/*
 * Plain host: an event channel is a SOCK_DGRAM socketpair vrdmad creates;
 * it keeps one end and hands the guest the other, so each side notifies
 * and drains its own open file description (docs/platform.md "Never block
 * on a guest").  These are the operations both ends share.
 */
#ifndef VRDMA_HOST_CHAN_H
#define VRDMA_HOST_CHAN_H

/* Datagrams one ack drains at most: a guest sending without pause
 * cannot keep dom0 draining; what is left wakes the next round. */
#define HC_ACK_MAX	16

/* Signal the peer without waiting; a full queue (EAGAIN) still means
 * "notified".  0, -EPIPE when the peer closed its end, or -errno. */
int hc_chan_notify(int fd);
/* Consume at most HC_ACK_MAX signals without waiting: 1 if there were
 * any, 0 if none, or -errno. */
int hc_chan_ack(int fd);
/* Wait up to timeout_ms for fd to be signalled (and ack it): 0, -ETIMEDOUT,
 * or -EPIPE when peer_sock (the guest<->dom0 socket, -1 = none) hangs up. */
int hc_chan_wait(int fd, int peer_sock, int timeout_ms);

#endif /* VRDMA_HOST_CHAN_H */
