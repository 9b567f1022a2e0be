/* SPDX-License-Identifier: MIT */
/*
 * vrdmad's control socket: a Unix stream socket, one request line per
 * connection, the response, then close.  Transport only; what a line
 * means is the handler's business (cmd.c).  Never blocks the loop: all
 * sockets are non-blocking, requests are bounded, and a client that does
 * not send its line within VD_CTL_TIMEOUT_MS, or then takes nothing of
 * the answer for as long, is dropped.
 */
#ifndef VRDMA_VD_CTL_H
#define VRDMA_VD_CTL_H

#include <stdio.h>

#include "evloop.h"

#define VD_CTL_NAME		"vrdmad.ctl"
#define VD_CTL_REQ_MAX		256	/* bytes, newline included */
#define VD_CTL_MAX_CLIENTS	16
#define VD_CTL_TIMEOUT_MS	2000

struct vd_ctl;

/* Write the response for one request line (no newline) to out. */
typedef void vd_ctl_fn(void *arg, const char *line, FILE *out);

/*
 * Listen on path.  -EADDRINUSE if a live daemon already answers there;
 * a stale socket file is replaced.
 */
int  vd_ctl_open(struct vev_loop *l, const char *path, vd_ctl_fn *fn, void *arg,
		 struct vd_ctl **out);
/* Drops clients, closes and unlinks the socket. */
void vd_ctl_close(struct vd_ctl *c);
unsigned vd_ctl_clients(const struct vd_ctl *c);

#endif /* VRDMA_VD_CTL_H */
