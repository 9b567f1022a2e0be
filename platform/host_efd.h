/* SPDX-License-Identifier: MIT */
/* Plain host: an event channel is a pair of eventfds; these are the
 * operations both ends share (host_efd_common.c). */
#ifndef VRDMA_HOST_EFD_H
#define VRDMA_HOST_EFD_H

/* Signal the peer; a saturated counter (EAGAIN) still means "notified". */
int hc_efd_notify(int fd);
/* Consume pending signals: 1 if there were any, 0 if none, or -errno. */
int hc_efd_ack(int fd);
/* Wait up to timeout_ms for fd to be signalled (and ack it): 0, -ETIMEDOUT,
 * or -EPIPE when peer_sock (the guest<->dom0 socket, -1 = none) hangs up. */
int hc_efd_wait(int fd, int peer_sock, int timeout_ms);

#endif /* VRDMA_HOST_EFD_H */
