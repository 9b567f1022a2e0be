/* SPDX-License-Identifier: MIT */
/*
 * Plain host, guest role, internal: shared by host_guest.c (connection,
 * round trips, keys, watches) and host_gnt_guest.c (grants, channels).
 */
#ifndef VRDMA_HOST_GUEST_H
#define VRDMA_HOST_GUEST_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "host_proto.h"
#include "vplat_impl.h"

#define HG_RPC_TIMEOUT_MS	5000
#define HG_FIRST_REF		8	/* like Xen, keep the first refs unused */

struct hg {
	struct vplat base;
	int sock, epfd, evfd;
	int dead;
	uint32_t seq, next_ref, next_port;
	uint64_t next_token;
	struct hg_watch *watches;
	struct hg_evt *evq, **evq_tail;
	struct vhp_hdr rh;		/* last reply */
	int rfd[VHP_MAX_FDS];		/* fds it carried, until claimed; -1: none */
	char rbuf[VHP_PAYLOAD_MAX + 1];
	struct vplat_share *newest;	/* the last share, until unshared */
	/* dom0_live (docs/wire.md): no kernel clears it when vrdmad dies
	 * here, so a thread of ours does when vrdmad's socket hangs up. */
	pthread_mutex_t live_lock;
	uint8_t *live;			/* the device area's byte (live_lock) */
	struct vplat_share *live_share;	/* the share it lies in (live_lock) */
	pthread_t live_thr;
	pid_t live_pid;			/* who started it; 0: not running */
	int live_stop;			/* eventfd: hg_close stops it */
};

#define hg_of(p) ((struct hg *)(p))

/* One request, its reply within HG_RPC_TIMEOUT_MS: 0 or -errno.  The
 * reply stays in g->rh / g->rbuf (and fds it carried in g->rfd, for the
 * caller to take) until the next call. */
int  hg_rpc(struct hg *g, uint32_t type, const uint32_t *args, const void *payload,
	    size_t plen, const int *fds, int nfds);
/* One-way notice (teardown), no reply. */
void hg_post(struct hg *g, uint32_t type, uint32_t a0, uint32_t a1);

int  hg_share(struct vplat *p, uint32_t peer, uint32_t npages, int writable,
	      struct vplat_share **out);
void hg_unshare(struct vplat_share *s);
int  hg_chan_alloc(struct vplat *p, uint32_t peer, struct vplat_chan **out,
		   uint32_t *port);
int  hg_notify(struct vplat_chan *c);
int  hg_chan_fd(const struct vplat_chan *c);
int  hg_chan_ack(struct vplat_chan *c);
int  hg_chan_wait(struct vplat_chan *c, int timeout_ms);
void hg_chan_close(struct vplat_chan *c);
void hg_live_stop(struct hg *g);

#endif /* VRDMA_HOST_GUEST_H */
