/* SPDX-License-Identifier: MIT */
/*
 * Plain host, dom0 role, internal: shared by host_dom0.c (the instance,
 * guest connections, dom0's own keys and watches), host_req_dom0.c (guest
 * requests, toolstack duty) and host_gnt_dom0.c (grant table and channels
 * of each guest).  Single-threaded.
 */
#ifndef VRDMA_HOST_DOM0_H
#define VRDMA_HOST_DOM0_H

#include <stdint.h>
#include <sys/types.h>

#include "host_proto.h"
#include "log.h"
#include "vplat_impl.h"

#define HD_MAX_GUESTS		256
/* Connections refused for a quota that wait for their HELLO, to be told
 * why: more replace the oldest (refused silently). */
#define HD_MAX_REFUSED		16	/* a quarter of them one tenant's */
#define HD_ACCEPTS_PER_ROUND	16
#define HD_MAX_KEYS		128	/* keys a guest may create (one max-order device: 43) */
#define HD_MAX_WATCHES		128
#define HD_MAX_SHARES		4096	/* each holds one memfd open */
#define HD_MAX_CHANS		256
#define HD_MAX_PAGES		262144	/* 1 GiB; env VRDMA_MAX_GUEST_PAGES */
#define HD_MAX_RUNS		1024	/* mmaps a guest's live maps may take */
/* All guests: well below vm.max_map_count (65530), which also counts
 * vrdmad's libraries, stacks and the device's queues.  The backend
 * shares it out per tenant (vplat_map_limits). */
#define HD_NODE_RUNS		32768
/* fds vrdmad keeps for itself: more than one message can install
 * (VHP_SCM_MAX_FD), with a margin for its own needs. */
#define HD_FD_RESERVE		(2 * (VHP_SCM_MAX_FD + 64))
/* Guest fds waiting to be closed (host_reap_dom0.c): past these its guest
 * is disconnected, and its uid's new guests refused. */
#define HD_REAP_GUEST_MAX	(VHP_SCM_MAX_FD + 8)
#define HD_REAP_UID_MAX		1024
#define HD_POPULATE_PAGES	64	/* maps this small (rings) are prefaulted */

struct hd_share {
	uint32_t first, npages;
	int fd;
	int writable;
};

struct hd_gchan {			/* a channel the guest allocated */
	uint32_t port;
	int in_fd;			/* eventfd the guest writes (both hold it) */
	int out_fd;			/* dom0's socket end, shut for reading */
};

struct hd_reap;

struct hd_guest {
	struct hd_guest *next;
	struct hd *d;
	int sock;
	struct hd_reap *reap;		/* its fds the reaper still holds */
	uint32_t domid;			/* 0 until HELLO */
	int dead;
	int refused;			/* -errno its HELLO gets: over a quota */
	int quiet;			/* its end is not logged (a refusal was) */
	char tenant[VPLAT_TENANT_NAME];	/* "uid<N>" (SO_PEERCRED at accept) */
	char name[VHP_NAME_MAX];
	struct hd_share *shares;
	uint32_t nshares, scap;
	uint64_t pages;
	struct hd_gchan *chans;
	uint32_t nchans, ccap;
	uint32_t runs;			/* mmaps of its live maps */
	/* Messages its socket had no room for yet, oldest first: sent
	 * when it is writable (EPOLLOUT), never waited for. */
	struct hd_out *out, **out_tail;
	size_t out_bytes;
	uint32_t out_fds;		/* dom0's fds in those (CHAN replies) */
};

struct hd_chan {			/* a channel dom0 bound */
	struct vplat_chan base;
	struct hd_chan *next, **pprev;
	uint32_t domid;
	int in_fd, out_fd;		/* guest->dom0 eventfd, dom0's socket end */
	int guest_sock;			/* valid while !dead */
	int dead;
};

struct hd {
	struct vplat base;
	int lsock, epfd, evfd;
	char sock_path[108];
	struct ks *ks;
	struct hd_guest *guests;
	unsigned nguests;		/* not counting the refused */
	unsigned nrefused;
	struct vlog_lim refuse_lim;	/* refusals at accept: a line a second */
	uint32_t next_domid;
	uint64_t max_pages;
	unsigned tenant_guests;		/* with no key: vplat_cfg's, else the built-in */
	/* Per-guest fd caps from RLIMIT_NOFILE (review I1): a guest cannot
	 * drive vrdmad to EMFILE, where every guest's SCM_RIGHTS would fail. */
	uint32_t max_shares, max_chans;
	uint64_t fd_limit;		/* refuse guests past this fd number */
	int fds_low;			/* guests' sockets not read: too few fds */
	uint32_t runs;			/* mmaps of all live maps */
	struct hd_lwatch *lwatches;
	struct hd_levt *levq, **levq_tail;
	uint64_t next_lw_id;
	struct hd_chan *chans;
	char rbuf[VHP_PAYLOAD_MAX + 1];	/* one request at a time */
	char obuf[VHP_PAYLOAD_MAX];
};

struct hd_guest *hd_guest_find(struct hd *d, uint32_t domid);
void hd_guest_kill(struct hd_guest *g, const char *why);
/* Never blocks: what the socket has no room for waits in g's outbox. */
int  hd_send(struct hd_guest *g, const struct vhp_hdr *h, const void *payload);
/* The same with up to VHP_MAX_FDS fds of dom0's, sent by SCM_RIGHTS and
 * closed here once sent or when g dies; on error they are closed already. */
int  hd_send_fds(struct hd_guest *g, const struct vhp_hdr *h, const void *payload,
		 const int *fds, int nfds);
int  hd_reply(struct hd_guest *g, const struct vhp_hdr *req, int err,
	      const void *payload, uint32_t len, uint32_t arg0);

/* host_reap_dom0.c: close a guest-made fd (or a guest's connection) off
 * the loop, on a thread of its own: closing it can wait.  a is the account
 * of the guest it came from (counted until closed), NULL for dom0's own. */
struct hd_reap *hd_reap_new(uid_t uid);	/* NULL: out of memory */
void hd_reap_put(struct hd_reap *a);	/* its guest is gone */
int  hd_reap_over(const struct hd_reap *a);	/* past a limit: cut it off */
void hd_reap_wake_fd(int fd);		/* written after each close */
void hd_reap_tick(void);		/* each round: help a stuck thread */
unsigned hd_reap_busy(void);		/* fds queued or being closed */
void hd_fd_drop(struct hd_reap *a, int fd);
void hd_fds_drop(struct hd_reap *a, int *fds, int *nfds);
void hd_fd_drop_cb(void *a, int fd);	/* vhp_drop_fn */

/* host_req_dom0.c: one guest message; 0 or -EBADMSG (disconnect it). */
int  hd_req_msg(struct hd_guest *g, const struct vhp_hdr *h, char *buf,
		int *fds, int *nfds);
void hd_toolstack_remove(struct hd *d, uint32_t domid);

/* host_gnt_dom0.c: messages SHARE/UNSHARE/CHAN/CHAN_CLOSE; 0 or -EBADMSG. */
int  hd_gnt_msg(struct hd_guest *g, const struct vhp_hdr *h, int *fds, int *nfds);
void hd_gnt_release(struct hd_guest *g);	/* guest gone: close its fds */
int  hd_map(struct vplat *p, uint32_t domid, const uint32_t *refs, uint32_t n,
	    int writable, struct vplat_map **out);
void hd_unmap(struct vplat_map *m);
int  hd_map_live(struct vplat_map *m, size_t off, struct vplat_chan *c);
void hd_map_limits(const struct vplat *p, struct vplat_map_limits *l);
void hd_fd_caps(struct hd *d);
int  hd_chan_bind(struct vplat *p, uint32_t domid, uint32_t port,
		  struct vplat_chan **out);
int  hd_notify(struct vplat_chan *c);
int  hd_chan_fd(const struct vplat_chan *c);
int  hd_chan_ack(struct vplat_chan *c);
int  hd_chan_wait(struct vplat_chan *c, int timeout_ms);
void hd_chan_close(struct vplat_chan *c);

#endif /* VRDMA_HOST_DOM0_H */
