/* SPDX-License-Identifier: MIT */
/*
 * Backend internals shared by the files of backend/ (never installed).
 *
 *   node.c       guests by (domid, devid), QP numbers, poll/arm/tick
 *   dump.c       vrdmactl list, stats, census
 *   vout.c       control answers, text or JSON (vout.h)
 *   guest/       one guest's end of the split driver:
 *     xenbus.c     per-guest handshake and teardown
 *     ring.c       request pull + validation, event ring producer, fatal
 *     cmd.c        the commands of wire.h
 *     obj.c        per-guest object tables, CQ writer, QP error/flush
 *     key.c        memory keys: random keys in random free key slots (getrandom)
 *     maps.c       dom0's mappings of guest pages against the node's budget
 *     srq.c        shared receive queues
 *   sched/       who is served, how much:
 *     sched.c      waiting async events, run list and per-poll budgets, credits
 *     sched_round.c  who is served next: classes, guard, DRR, token bucket
 *     prio.c       per-guest weight/class/rate/quotas: keys, checks, quotas
 *     tenant.c     quotas summed over a tenant's guests, set/get tenant:<name>
 *   settings/    what the operator set, kept:
 *     prio_ctl.c   vrdmactl set / get
 *     prio_keep.c  a VM's settings remembered across its guests' departures
 *     prio_store.c those settings and tenant limits on disk, across restarts
 *     filesave.c   a kept file replaced whole; one vrdmad per file (FILE.lock)
 *   local/       target_local.c: where the data goes on this node (target.h);
 *                ud.c: UD datagrams between guests of this node
 *   device/      target_verbs.c and verbs_*.c: to another node through the
 *                RDMA device (verbs.h)
 *   cm/          who connects to whom:
 *     cm.c         by service name, on this node (listeners, requests)
 *     cm_qpn.c     verbs-style: MODIFY_QP binds QPs by number
 *     cm_rdmacm.c  to another node: rdma_cm between the vrdmads
 *     cm_rqpn.c    bindings by number to another node
 *     policy.c     the connect policy: tenant groups, allow/deny rules, its file
 *   trace/       lat.c: the data path's per-hop latency trace (vrdmactl trace)
 *
 * Handles are (generation << 16 | index); a stale handle never aliases a
 * newer object in the same slot.  Memory keys are tag19 << 13 | key slot,
 * both parts random (key.c), so keys cannot be guessed, only handed out.
 */
#ifndef VRDMA_VBE_H
#define VRDMA_VBE_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vrdma/wire.h"
#include "log.h"
#include "vplat.h"
#include "backend.h"
#include "vout.h"		/* control answers (dump, prio_ctl, tenant, policy) */
#include "coll/coll.h"		/* teams dom0 runs */

#define VBE_MAX_QPS		1024
/*
 * Memory keys (issue 12): tag << VBE_KEY_IDX_BITS | key slot, the key
 * slot drawn at random among the free ones (key.c).  A key slot names
 * the MR through the guest's key map (vbe_mr_key), so MRs stay dense in
 * g->mrs.  At most half the key slots are ever taken, so a key has the
 * tag's 19 random bits plus >= 12 from its slot: >= 31 at registration.
 */
#define VBE_KEY_IDX_BITS	13
#define VBE_KEY_SLOTS		(1u << VBE_KEY_IDX_BITS)
#define VBE_KEY_TAG_BITS	(32 - VBE_KEY_IDX_BITS)
/* The tag's low bits that join the key slot in the key's device window
 * (backend/device/verbs.h): key.c never gives a key slot a tag whose
 * low VBE_KEY_WIN_TAG_BITS are 0 or those of the slot's previous key. */
#define VBE_KEY_WIN_TAG_BITS	15
#define VBE_MAX_MRS		4096
_Static_assert(2 * VBE_MAX_MRS <= VBE_KEY_SLOTS, "half the key slots stay free");
_Static_assert(VBE_KEY_TAG_BITS + 12 >= 24, "keys carry >= 24 unpredictable bits");
_Static_assert(VBE_KEY_WIN_TAG_BITS < VBE_KEY_TAG_BITS && VBE_KEY_WIN_TAG_BITS <= 16,
	       "a window tag is part of the tag and fits the slot's u16 (vbe_key_wtags)");
#define VBE_MAX_CQS		256
#define VBE_MAX_PDS		256
#define VBE_MAX_BUFS		1024
#define VBE_MAX_SRQS		256
#define VBE_MAX_LISTENERS	256	/* per node */
#define VBE_MAX_CONNS		256	/* pending connection requests per node */
#define VBE_GUEST_LISTENERS	16	/* per guest: nobody takes the whole table */
#define VBE_GUEST_CONNS		32	/* pending CONNECTs per connecting guest */
#define VBE_LISTEN_BACKLOG	64	/* unanswered requests per listener */
/* ... of which another tenant group, or another node, holds at most a
 * quarter: nobody fills a listener that is not theirs. */
#define VBE_LISTEN_SHARE	(VBE_LISTEN_BACKLOG / 4)
/* Per tenant (docs/tenants.md): a quarter of each node table, so at least
 * four tenants fit whatever the others hold. */
#define VBE_TENANT_LISTENERS	(VBE_MAX_LISTENERS / 4)
#define VBE_TENANT_CONNS	(VBE_MAX_CONNS / 4)
/* No node table bounds these: 16 guests' worth of the per-guest defaults,
 * so a tenant at its 64 guests holds a quarter of what they could. */
#define VBE_TENANT_QPS		(16u * VBE_MAX_QPS)
#define VBE_TENANT_MEM		(16ull * VBE_PRIO_MEM_DEF)
#define VBE_TENANT_CQS		(16u * VBE_MAX_CQS)
#define VBE_TENANT_MRS		(16u * VBE_MAX_MRS)
/* VBE_TQ_* (backend.h); cmds is a rate (commands per second, 0 = off),
 * not a count. */
#define VBE_MAX_PAGES		(256u * 1024)	/* attached per guest past its mem quota */
#define VBE_TENANT_PAGES	(16u * VBE_MAX_PAGES)	/* mapped in dom0: 16 GiB */
/*
 * dom0's mappings of guest pages (maps.c): the platform's node budget
 * (vplat_map_limits) less a reserve for device areas -- so a device the
 * node admitted always maps its area, whatever buffers hold -- shared out
 * a quarter per tenant, as the node tables above.  A device area may take
 * VBE_AREA_MAPS mappings (libvrdma's takes one); the reserve holds 256
 * devices' worth: the plain host's guest slots, four tenants' `guests`.
 */
#define VBE_AREA_MAPS		4
#define VBE_AREA_PAGES		(1u + (128u << VRDMA_REQ_RING_ORDER_MAX) / VRDMA_PAGE_SIZE + \
				 (64u << VRDMA_EVT_RING_ORDER_MAX) / VRDMA_PAGE_SIZE)
#define VBE_AREA_DEVICES	256u
#define VBE_AREA_RESERVE_MAPS	(VBE_AREA_DEVICES * VBE_AREA_MAPS)
#define VBE_AREA_RESERVE_PAGES	(VBE_AREA_DEVICES * VBE_AREA_PAGES)
#define VBE_NODE_MAPS_DEF	32768u	/* the plain host's HD_NODE_RUNS */
#define VBE_TENANT_MAPS		((VBE_NODE_MAPS_DEF - VBE_AREA_RESERVE_MAPS) / 4)
/* QPs on the RDMA device (to other nodes): a table of the node's
 * (VBE_VX_MAX_QPS, device/verbs.h), a quarter each. */
#define VBE_NODE_DEVQPS		1024
#define VBE_TENANT_DEVQPS	(VBE_NODE_DEVQPS / 4)
#define VBE_MAX_WR_SLOTS	(64u * 1024)	/* queued-WR slots per guest (vbe_wr_weight) */
#define VBE_CONN_TIMEOUT_MS	10000
/* vbe_conn.domid of a request from another node (cm_rdmacm.c) */
#define VBE_DOMID_REMOTE	0xffffffffu

/* Work one guest may do per vbe_node_poll (C3): bytes copied, WRs run,
 * requests pulled.  Leftover work waits on the guest's run list. */
#define VBE_POLL_BYTES		(1u << 20)
#define VBE_POLL_WRS		64
/* Send WR bytes the node keeps on its RDMA device, all guests together:
 * enough to keep a link busy, little enough that the rest waits in
 * vrdmad, where classes and weights decide (else the device's round robin
 * between its QPs would; docs/prio.md).  A guest whose turn finds the
 * device full holds it (others wait) until it spent its round's bytes. */
#define VBE_DEV_BYTES		(2u << 20)
#define VBE_DEV_HOLD_MS		100
#define VBE_POLL_REQS		256

/* Issue 5 (docs/prio.md): classes, DRR quantum, starvation guard, defaults. */
enum vbe_class { VBE_CLASS_HIGH, VBE_CLASS_NORMAL, VBE_CLASS_LOW, VBE_NCLASS };
#define VBE_SCHED_QUANTUM	(1u << 20)	/* DRR bytes per weight per round */
#define VBE_SCHED_GUARD		32	/* a waiting class is served >= 1 round in N */
#define VBE_SCHED_SLICE		(64u << 10)	/* per weight, below a busy class */
#define VBE_SCHED_RECENT	64	/* rounds a class counts as recently busy */
#define VBE_PRIO_WEIGHT_MAX	1000
#define VBE_PRIO_MEM_DEF	(1ull << 30)	/* registered bytes */
#define VBE_PRIO_MEM_MAX	(1ull << 40)
#define VBE_PRIO_CREDITS_DEF	128	/* WRs outstanding on the device */
#define VBE_PRIO_CREDITS_MAX	4096
#define VBE_PRIO_CMDS_MIN	10	/* commands/s, when limited */
#define VBE_PRIO_CMDS_MAX	1000000
#define VBE_KEEP_MAX		256	/* VMs whose settings are remembered */
#define VBE_VM_NAME		64	/* longest VM name remembered */
#define VBE_DETACHED_MAX	256	/* VMs the operator detached, kept */

#define VBE_QPN_BUCKETS		4096

struct vbe_target;
struct vbe_guest;
struct vbe_qpnent;
struct vbe_vx;

struct vbe_slot {
	uint16_t gen;		/* bumped on free; never 0 */
	uint8_t  used;
};

struct vbe_buf {
	struct vbe_slot s;
	struct vplat_map *map;
	uint8_t *addr;
	uint32_t npages;
	uint32_t maps;		/* vplat_map_cost, against `maps` */
	bool writable;
	unsigned users;		/* MRs + CQs */
};

struct vbe_pd {
	struct vbe_slot s;
	unsigned users;		/* MRs + QPs */
};

struct vbe_mr {
	struct vbe_slot s;
	uint32_t key;		/* kept after DEREG_MR: the MR's next key differs */
	uint32_t pd, buf;	/* table indexes */
	uint64_t offset, length, iova;
	uint32_t access;
	uint8_t *base;		/* bufs[buf].addr + offset: its mapped start */
};

struct vbe_cq {
	struct vbe_slot s;
	uint32_t buf;
	struct vrdma_cq_hdr *hdr;
	struct vrdma_cqe *cqe;
	uint32_t size, prod, pub;
	bool dirty;
	bool err;		/* overran: CQEs are dropped from now on */
	bool err_pend;		/* ... the guest not told yet */
	bool err_qps;		/* ... its QPs failed */
	unsigned users;		/* QPs */
};

/* A queued work request: the validated copy, never the ring entry. */
struct vbe_wqe {
	uint8_t  opcode;
	uint8_t  num_sge;
	uint16_t flags;
	uint64_t id;
	int64_t t_q;		/* round clock (us) when queued, or when its QP
				 * went to RTS (queue delay); 0 = unknown */
	struct vrdma_wr wr;
	/* SGEs past wr.sge: this slot's share of its queue's side table
	 * (vbe_wq_alloc), NULL in a queue of max_sge <= VRDMA_WR_SGE. */
	struct vrdma_wire_sge *xsge;
};

/* WR slots one queued WR of a queue of max_sge SGEs costs: its struct
 * vbe_wqe, and its share of the side table in vbe_wqe's (3 for 16). */
static inline uint32_t vbe_wr_weight(uint32_t max_sge)
{
	size_t x = max_sge > VRDMA_WR_SGE ?
		   (max_sge - VRDMA_WR_SGE) * sizeof(struct vrdma_wire_sge) : 0;

	return 1 + (uint32_t)((x + sizeof(struct vbe_wqe) - 1) / sizeof(struct vbe_wqe));
}

/* SGE i (< num_sge) of a queued WR. */
static inline const struct vrdma_wire_sge *vbe_wqe_sge(const struct vbe_wqe *w, unsigned i)
{
	return i < VRDMA_WR_SGE ? &w->wr.sge[i] : &w->xsge[i - VRDMA_WR_SGE];
}

struct vbe_wq {
	struct vbe_wqe *e;
	uint32_t size, head, count;
};

struct vbe_srq {
	struct vbe_slot s;
	uint32_t handle;
	uint32_t pd, max_sge;
	struct vbe_wq rq;
	uint32_t consumed;		/* receives taken so far (srq_idx) */
	unsigned users;			/* QPs */
	bool dev;			/* has a device twin (verbs_srq.c) */
	bool local;			/* a QP in the node took a receive */
};

enum vbe_qp_state { VBE_QPS_RESET, VBE_QPS_CONNECTING, VBE_QPS_RTS, VBE_QPS_ERR };

struct vbe_qp {
	struct vbe_slot s;
	uint32_t handle, qpn;
	uint32_t pd, send_cq, recv_cq;	/* table indexes */
	uint32_t srq;			/* SRQ index + 1, 0 = own receive queue */
	bool srq_held;			/* srq_wqe taken from the SRQ, not completed */
	uint32_t srq_idx;		/* ... its index in the SRQ */
	struct vbe_wqe srq_wqe;
	struct vrdma_wire_sge srq_xsge[VRDMA_MAX_SGE - VRDMA_WR_SGE];	/* its */
	uint32_t max_sge;
	struct vbe_wq sq, rq;
	uint32_t sq_retired;
	enum vbe_qp_state state;
	bool ud;			/* unreliable datagram (local/ud.c) */
	uint32_t qkey;			/* ... its Q_Key, from MODIFY_QP UD_RTS */
	const struct vbe_target *tgt;
	uint32_t peer_domid, peer_devid, peer_handle, peer_qpn;
	uint64_t conn_id;		/* pending CONNECT, 0 = none */

	/* Async events waiting for event-ring space (C1): at most one CM
	 * result and one QP_ERROR per QP, so the wait is bounded by the QP
	 * table; evq says the QP sits on the guest's event queue. */
	struct vrdma_evt pend_cm;	/* CONNECTED / REJECTED, type 0 = none */
	uint16_t pend_err;		/* QP_ERROR's status, 0 = none */
	bool evq;
	bool runq;			/* on the run list: WRs left over (C3) */
	uint64_t wr_off;		/* bytes of the head send WR already moved */
	uint32_t vx_qp;			/* its device QP's handle (verbs target) */
	bool vwait;			/* MODIFY_QP RTR: waiting for peer_qpn */
	bool by_qpn;			/* bound by MODIFY_QP (verbs), not CONNECT */
	int64_t lost_ms;		/* by_qpn, peer gone: sends fail then (ms) */
	int64_t vwait_ms;		/* ... since */
	uint8_t peer_gid[16];		/* ... on this node (RTR's dest_gid) */
	/* vbe_qp_peer's cache: the peer guest, valid while no guest struct
	 * was freed (node guest_epoch) and it still has peer_domid/devid */
	struct vbe_guest *peer_g;
	uint64_t peer_epoch;
};

/* A FIFO of QP handles (event queue, run list): a QP is on it at most
 * once, so VBE_MAX_QPS entries always suffice. */
struct vbe_qfifo {
	uint32_t *h;
	uint32_t head, count;
};

struct vbe_counters {
	uint64_t requests, commands, wrs;
	uint64_t tx_bytes, tx_ops, rx_bytes, rx_ops;
	uint64_t completions, errors, violations, evt_dropped;
	/* issue 5 */
	uint64_t refusals;		/* commands refused by a quota (NOMEM) */
	uint64_t qdelay_n, qdelay_sum_us, qdelay_max_us;	/* queued -> run */
	uint64_t throttled_us;		/* backlogged with an empty bucket */
	uint64_t cmd_waits;		/* a command left in the ring: no token */
	/* UD datagrams (local/ud.c): sent and delivered; dropped as the
	 * sender's (any reason) and as the destination guest's (its QP
	 * had no receive, a too-small one, another Q_Key) */
	uint64_t ud_tx, ud_rx, ud_tx_drop, ud_rx_drop;
};

/* Operator settings of one guest (prio.c, keys in its backend dir). */
struct vbe_prio {
	uint32_t weight;		/* 1..VBE_PRIO_WEIGHT_MAX */
	uint32_t cls;			/* enum vbe_class */
	uint64_t rate, burst;		/* bytes/s and bytes; rate 0 = unlimited */
	uint32_t qps, wrs, credits;
	uint64_t mem;
	uint32_t cmds;			/* commands/s, 0 = unlimited (issue 12) */
	bool coll_off;			/* coll=off: its teams run in the guests */
};

/* Scheduler state of one guest (sched.c). */
struct vbe_sched {
	int64_t deficit;		/* DRR bytes, reset when idle */
	uint64_t given;			/* byte budget handed out this round */
	uint64_t tokens;		/* token bucket, bytes */
	int64_t t_fill;			/* us of the last refill */
	int64_t t_round;		/* us of the last round it was in */
	bool throttled;			/* backlog but no tokens last round */
	uint32_t credits_used;		/* WRs on the device (verbs target) */
	uint64_t dev_bytes;		/* send WR bytes on the device */
	uint32_t dev_parked;		/* QPs this turn put back for credits or room */
	uint64_t dev_parked_gen;	/* node dev_gen when the last one was */
	uint64_t last_tx, last_rx;	/* counters at the last 1 s mark */
	uint64_t bps_tx, bps_rx;	/* bytes/s over the last second */
	uint32_t cmd_tokens;		/* command bucket (prio.cmds) */
	int64_t cmd_fill;		/* ... us its tokens are counted to */
	bool cmd_throttled;		/* its last poll stopped at a command */
	unsigned ahead;			/* receives read out of turn since (ring.c) */
};

struct vbe_guest {
	struct vbe_node *node;
	struct vbe_guest *next;
	uint32_t domid, devid;
	char name[32];
	char bdir[VPLAT_KEY_MAX / 2], fdir[VPLAT_KEY_MAX / 2];	/* + key name fits */
	int state;			/* our XenbusState */
	int front_state;
	bool watching, seen;
	bool conn_from;			/* frontend takes VRDMA_EVT_CONN_FROM */
	bool dead;			/* disabled: rings no longer read */
	bool released;			/* dead and resources dropped */
	bool connected, kick;
	bool busy;			/* unused: vbe_node_poll visits everyone */
	bool live;			/* sring.guest_live armed at connect: watch it */
	bool polling;			/* inside vbe_ring_pull: no nested pull */
	char why[128];

	/* device area */
	struct vplat_map *ring_map;
	struct vrdma_sring *sring;
	struct vrdma_req *req;
	struct vrdma_evt *evt;
	uint32_t req_size, evt_size;
	uint32_t req_cons, evt_prod, evt_pub;
	struct vplat_chan *chan;
	int chan_fd;

	/* Async events wait on their objects, not in a droppable backlog:
	 * evq lists the QPs with pending events, nconnq counts pending
	 * CONN_REQUESTs (vbe_conn.delivered).  Both empty out as the objects
	 * go, so a reconnect starts clean. */
	struct vbe_qfifo evq;
	unsigned bl_head, bl_count;	/* unused (xenbus.c resets them) */
	unsigned nconnq;		/* CONN_REQUESTs to us not yet on the ring */
	struct vbe_qfifo runq;		/* QPs with send work left over */
	uint64_t budget_bytes;		/* left in this poll (C3) */
	unsigned budget_wrs;
	bool cq_err;			/* a CQ overran: vbe_cq_err_run() */
	/* DEREG_MR's answer, held until its device MR is gone (cmd.c);
	 * the guest's next command waits in the ring meanwhile. */
	bool held;
	uint64_t held_seq;		/* the reaper's number to wait for */
	struct vrdma_evt held_evt;
	uint16_t *dirty;		/* CQ indexes with unpublished CQEs */
	unsigned ndirty;
	uint32_t wr_slots;		/* queued-WR slots allocated (I1) */
	uint32_t nqps;			/* live QPs, for the quota */
	uint64_t mr_bytes;		/* bytes of its live MRs, for the quota */
	uint32_t ncqs, nmrs;		/* live CQs and MRs, for the tenant's */
	struct vbe_prio prio;		/* issue 5 */
	char vm[VBE_VM_NAME];		/* its domain's name, "" = none */
	char tenant[VPLAT_TENANT_NAME];	/* whose quotas it counts against */
	struct vbe_tenant *ten;		/* ... its record (tenant.c) */
	struct vbe_guest *tnext;	/* the tenant's next guest */
	uint16_t tenant_warned;		/* 1 << VBE_TQ_*: refusal logged */

	struct vbe_sched sch;

	struct vbe_buf *bufs;
	struct vbe_pd *pds;
	struct vbe_mr *mrs;		/* after its key map (vbe_mr_map) */
	struct vbe_cq *cqs;
	struct vbe_qp *qps;
	struct vbe_srq *srqs;
	uint64_t pages;			/* attached, against VBE_MAX_PAGES */
	uint64_t maps;			/* its buffers' mapping costs (tenant `maps`) */
	unsigned dev_qps;		/* its QPs' device QPs (tenant `devqps`) */
	uint64_t serial;		/* this incarnation, never reused (node's count) */
	uint32_t area_pages;		/* ring_map's pages (maps.c) */
	unsigned nmaps;			/* live vplat maps (census) */
	struct vbe_counters ctr;
	struct vbe_coll_guest *coll;	/* its teams (backend/coll/), NULL = none */
};

struct vbe_listener {
	struct vbe_slot s;
	char service[VRDMA_NAME_MAX];
	uint32_t domid, devid, handle;
	char tenant[VPLAT_TENANT_NAME];	/* its guest's, for the tenant quota */
};

struct vbe_conn {
	uint64_t id;			/* 0 = free slot */
	uint32_t domid, devid, qp;	/* connector */
	uint32_t qpn;
	uint32_t lis;			/* listener index */
	uint32_t pdata_len;
	uint8_t pdata[VRDMA_PDATA_MAX];
	bool delivered;			/* CONN_REQUEST is on the listener's ring */
	char tenant[VPLAT_TENANT_NAME];	/* the connector's; "" from another node */
	char from_node[VRDMA_NAME_MAX];	/* CONN_FROM: its node (name or address) */
	uint32_t from_domid, from_devid;
	uint32_t from_group;		/* another node's: its group hash */
	int64_t deadline;
};

/* Random bytes for memory keys, fetched in batches (key.c). */
struct vbe_rng {
	uint8_t buf[256];
	uint32_t left;			/* unused bytes at the start of buf */
	unsigned warned;		/* getrandom failures so far */
	/* getrandom(2) when NULL; tests inject a failing one */
	ssize_t (*fill)(void *buf, size_t len, unsigned flags);
};

/* A tenant with guests on this node (tenant.c). */
struct vbe_tenant {
	struct vbe_tenant *next;
	struct vbe_guest *guests;	/* chained by vbe_guest.tnext */
	uint64_t lim[VBE_TQ_N];		/* cached from the keys */
	bool stale;			/* keys changed: re-read before use */
	char name[VPLAT_TENANT_NAME];
	uint32_t cmd_tokens;		/* its guests' commands (lim cmds) */
	int64_t cmd_fill;
	uint64_t late_pages;		/* dropped, not unmapped yet (pages) */
	uint64_t late_maps;		/* ... and their mapping costs */
};

struct vbe_node {
	struct vplat *plat;
	char name[VRDMA_NAME_MAX];
	struct vbe_coll_node *coll;	/* teams dom0 runs (backend/coll/) */
	vbe_fd_fn *fd_cb;
	void *fd_arg;
	struct vbe_guest *guests;
	struct vbe_tenant *tenants;	/* of the guests, issue 12 */
	uint64_t tenant_def[VBE_TQ_N];	/* below tenant:default's keys */
	/* maps.c: the platform's budget for guests' mappings, what all of
	 * them hold (buffers, device areas, dropped buffers the device still
	 * pins, a list map while ATTACH_BUF runs) and the areas' part. */
	struct vplat_map_limits map_lim;
	uint64_t map_use, page_use, area_maps, area_pages;
	uint64_t map_refused;		/* buffers refused: the node was full */
	struct vbe_policy *pol;		/* connect policy (policy.c) */
	uint32_t next_qpn;
	uint64_t next_conn_id;
	int64_t now_ms;
	bool reap;
	unsigned nheld;			/* guests holding an answer (cmd.c) */
	uint64_t disabled;
	struct vbe_counters ctr_gone;	/* of the guests that left (stats' totals) */
	uint64_t poll_bytes;		/* per-guest budgets (tests lower them) */
	uint64_t dev_bytes;		/* send WR bytes on the RDMA device, all guests */
	uint64_t dev_max;		/* ... at most (VBE_DEV_BYTES) */
	uint64_t dev_gen;		/* + 1 per vbe_dev_put: parked QPs may go */
	const struct vbe_guest *dev_hold;	/* its turn waits for device room */
	int64_t dev_hold_ms;		/* since when (the hold has a time limit) */
	uint64_t dev_full;		/* WRs that found the device full */
	uint64_t dev_hold_expired;	/* holds ended by VBE_DEV_HOLD_MS */
	unsigned poll_wrs, poll_reqs;
	uint32_t max_sge;		/* published max-sge: wire's and device's */
	/* published max-ud-msg: the largest datagram payload to any node,
	 * VRDMA_UD_MTU or the device UD path's (device/verbs_ud.c) */
	uint32_t max_ud_msg;
	unsigned rr;			/* which guest goes first in the next poll */
	uint8_t *qpn_map;		/* bitmap of live 24-bit QP numbers */
	uint8_t gid[16];		/* names this node's QPs (cm_qpn.c) */
	struct vbe_qpnent *qpn_tab[VBE_QPN_BUCKETS];	/* QPN -> QP (cm_qpn.c) */
	unsigned vwaiting;		/* QPs waiting for their peer's RTR */
	struct vbe_listener lis[VBE_MAX_LISTENERS];
	struct vbe_conn conns[VBE_MAX_CONNS];
	struct vbe_vx *vx;		/* RDMA device (issue 4), NULL = none */
	/* issue 5: clock for buckets and delays (tests inject one) */
	int64_t (*clock_us)(void);
	uint64_t guest_epoch;		/* bumped when a guest struct is freed */
	uint64_t guest_serial;		/* guests made so far (vbe_guest.serial) */
	int64_t round_us;		/* the clock at this round's start, 0 outside */
	unsigned starve[VBE_NCLASS];	/* rounds a class waited (guard) */
	uint32_t sch_round;		/* rounds so far (wraps) */
	uint32_t busy_round[VBE_NCLASS];	/* last round the class was busy */
	int64_t rate_mark_ms;		/* last 1 s rate sample */
	struct vbe_keep {		/* settings of VMs that left (prio_keep.c) */
		char vm[VBE_VM_NAME];	/* "" = free entry */
		uint32_t devid;
		struct vbe_prio prio;
		uint64_t stamp;		/* last use, for replacement */
	} keep[VBE_KEEP_MAX];
	uint64_t keep_stamp;
	/* VMs whose device 0 the operator detached (prio_keep.c), "" = free */
	char detached[VBE_DETACHED_MAX][VBE_VM_NAME];
	char state_dir[200];		/* prio_store.c; "" = settings in memory only */
	bool store_dirty;		/* changes the file lacks: written at the tick */
	bool tenant_watch_fired;	/* tenant.c: its registration's firing came */
	int64_t store_retry_ms;		/* a failed tick's write: not again before */
	uint64_t store_writes;		/* the file written (tests count them) */
	struct vbe_rng rng;		/* memory keys (key.c) */
	/* Tests without a device: DEREG_MRs held as if on an MR lane that
	 * has run `done` of the `queued` jobs (verbs_dev.c). */
	struct { bool on; uint64_t queued, done; } test_mr_lane;
};

/* handles */
static inline uint32_t vbe_handle(const struct vbe_slot *s, uint32_t idx)
{
	return (uint32_t)s->gen << 16 | idx;
}
uint32_t vbe_slot_take(struct vbe_slot *tab, size_t stride, uint32_t n);
void vbe_slot_free(struct vbe_slot *s);
/* Inline: a handle is looked up once or twice per WR. */
static inline struct vbe_slot *vbe_slot_get(struct vbe_slot *tab, size_t stride,
					    uint32_t n, uint32_t handle)
{
	uint32_t idx = handle & 0xffff;
	struct vbe_slot *s;

	if (idx >= n)
		return NULL;
	s = (struct vbe_slot *)((char *)tab + idx * stride);
	if (!s->used || s->gen != handle >> 16)
		return NULL;
	return s;
}

#define VBE_GET(arr, n, h) \
	((__typeof__(&(arr)[0]))vbe_slot_get(&(arr)[0].s, sizeof((arr)[0]), (n), (h)))
#define VBE_TAKE(arr, n) vbe_slot_take(&(arr)[0].s, sizeof((arr)[0]), (n))

/* Pages a guest may have attached: what its mem quota lets it register,
 * and VBE_MAX_PAGES more for CQ areas and buffers no MR covers.  The
 * tenant's pages and maps and the node's budgets bound dom0 besides. */
static inline uint64_t vbe_guest_max_pages(const struct vbe_guest *g)
{
	return VBE_MAX_PAGES + g->prio.mem / VRDMA_PAGE_SIZE;
}

/* The key slot a memory key names (its low bits; always < VBE_KEY_SLOTS). */
static inline uint32_t vbe_key_idx(uint32_t key)
{
	return key & (VBE_KEY_SLOTS - 1);
}

/* The low VBE_KEY_WIN_TAG_BITS of a key's tag (its device window's). */
static inline uint32_t vbe_key_wtag(uint32_t key)
{
	return key >> VBE_KEY_IDX_BITS & ((1u << VBE_KEY_WIN_TAG_BITS) - 1);
}

/* A window tag key.c gives: not 0 (no window meets the key table at
 * device address 0) and not all ones (no window ends at 2^64, where a
 * device's range check wraps: rxe's refuses such an MR). */
static inline bool vbe_key_wtag_ok(uint32_t key)
{
	uint32_t w = vbe_key_wtag(key);

	return w && w != (1u << VBE_KEY_WIN_TAG_BITS) - 1;
}

/*
 * g->mrs sits in one mapping (obj.c) after the slots' window tags, the
 * key map and an MR that is never used: map[key slot] = (MR index + 1) *
 * sizeof(struct vbe_mr), 0 naming that unused MR.  A lookup is one load
 * more than a direct index and no more instructions (the load replaces
 * the multiply).  An entry is left as it is at DEREG_MR: the MR it names
 * is unused, or holds a key of another slot, so it matches no key of
 * this slot.  That MR may have moved to another slot since, so the map
 * does not remember the slot's last key: wtags[key slot] does (the
 * vbe_key_wtag of the last key key.c gave that slot, 0 = none yet).
 */
#define VBE_MR_WTAG_LEN		((size_t)VBE_KEY_SLOTS * sizeof(uint16_t))
#define VBE_MR_MAP_LEN		((size_t)VBE_KEY_SLOTS * sizeof(uint32_t))
#define VBE_MR_PRE		(VBE_MR_WTAG_LEN + VBE_MR_MAP_LEN + sizeof(struct vbe_mr))
static inline uint32_t *vbe_mr_map(const struct vbe_guest *g)
{
	return (uint32_t *)((char *)g->mrs - sizeof(struct vbe_mr) - VBE_MR_MAP_LEN);
}
static inline uint16_t *vbe_key_wtags(const struct vbe_guest *g)
{
	return (uint16_t *)((char *)g->mrs - VBE_MR_PRE);
}

/* The MR whose key may be `key`: the caller checks used and the whole key. */
static inline struct vbe_mr *vbe_mr_key(const struct vbe_guest *g, uint32_t key)
{
	return (struct vbe_mr *)((char *)g->mrs - sizeof(struct vbe_mr) +
				 vbe_mr_map(g)[vbe_key_idx(key)]);
}

/* key names an MR of g in PD pd with `acc` rights that holds
 * [addr, addr + len): its mapped address, else NULL.  Inline: twice per
 * WR, and acc is mostly a constant.  The key map names the MR by the
 * key's slot bits (always in the map); the whole key, random tag
 * included, must match, so a guessed or stale key fails here. */
static inline __attribute__((always_inline)) uint8_t *
vbe_mr_ptr(struct vbe_guest *g, uint32_t pd, uint32_t key, uint64_t addr, uint64_t len,
	   uint32_t acc)
{
	struct vbe_mr *mr = vbe_mr_key(g, key);
	uint64_t off;

	if (!mr->s.used || mr->key != key || mr->pd != pd ||
	    (mr->access & acc) != acc)
		return NULL;
	/* Overflow-safe: addr - iova cannot wrap once addr >= iova. */
	if (addr < mr->iova)
		return NULL;
	off = addr - mr->iova;
	if (off > mr->length || len > mr->length - off)
		return NULL;
	return mr->base + off;
}

/* key.c: a fresh key for g's MR idx in a random free key slot, never 0,
 * never the MR's previous key, and its window tag (vbe_key_wtag) never 0
 * nor the slot's previous key's: 0 or -errno (EAGAIN: no random bytes
 * yet). */
int vbe_key_new(struct vbe_guest *g, uint32_t idx, uint32_t *key);

/* node.c */
struct vbe_guest *vbe_node_guest(struct vbe_node *n, uint32_t domid, uint32_t devid);
uint32_t vbe_node_qpn(struct vbe_node *n);	/* 0: none left */
void vbe_node_qpn_free(struct vbe_node *n, uint32_t qpn);
void vbe_node_flush(struct vbe_node *n);	/* reap disabled guests, publish */

/* dump.c: a leaving guest's counters go into the node's totals */
void vbe_node_ctrs_keep(struct vbe_guest *g);

/* xenbus.c */
int  vbe_xb_guest_new(struct vbe_node *n, uint32_t domid, uint32_t devid,
		      struct vbe_guest **out);
void vbe_xb_guest_free(struct vbe_guest *g);
void vbe_xb_set_state(struct vbe_guest *g, int state);
void vbe_xb_release(struct vbe_guest *g);	/* disabled guest: drop everything */
void vbe_xb_check_live(struct vbe_guest *g);	/* guest process gone? close */
void vbe_xb_tick(struct vbe_guest *g);		/* domain gone? remove its dir */

/* ring.c */
int  vbe_ring_poll(struct vbe_guest *g);
int  vbe_ring_recvs(struct vbe_guest *g);	/* only the receives at the head */
void vbe_ring_flush(struct vbe_guest *g);
int  vbe_evt_post(struct vbe_guest *g, const struct vrdma_evt *e, bool cmd);
int  vbe_evt_post2(struct vbe_guest *g, const struct vrdma_evt *a, const struct vrdma_evt *b);
int  vbe_guest_fatal(struct vbe_guest *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* obj.c */
int  vbe_obj_init(struct vbe_guest *g);
void vbe_obj_release(struct vbe_guest *g);	/* every object, every map */
void vbe_obj_fini(struct vbe_guest *g);
void vbe_cq_push(struct vbe_guest *g, uint32_t cq, const struct vrdma_cqe *c);
void vbe_cq_flush(struct vbe_guest *g);
void vbe_cq_forget(struct vbe_guest *g, struct vbe_cq *cq);
void vbe_cq_err_run(struct vbe_guest *g);
void vbe_buf_drop(struct vbe_guest *g, struct vbe_buf *b);
void vbe_qp_error(struct vbe_guest *g, struct vbe_qp *qp);
void vbe_qp_peer_lost(struct vbe_guest *g, struct vbe_qp *qp);
/* cm_qpn.c: to error as MODIFY_QP(ERR) does: off its peer, flushed. */
void vbe_qp_fail(struct vbe_guest *g, struct vbe_qp *qp);
void vbe_qp_destroy(struct vbe_guest *g, struct vbe_qp *qp);
void vbe_sq_cqe(struct vbe_guest *g, struct vbe_qp *qp, const struct vbe_wqe *w,
		uint8_t wc, uint8_t status, uint32_t byte_len);
uint8_t vbe_wc_of(uint8_t op);	/* a send-queue WR's completion opcode */
void vbe_rq_complete(struct vbe_guest *g, struct vbe_qp *qp, uint8_t wc,
		     uint8_t status, uint32_t byte_len, uint32_t imm,
		     bool has_imm, uint32_t src_qpn);
struct vbe_guest *vbe_qp_peer_guest(struct vbe_guest *g, struct vbe_qp *qp);
/* qp's peer QP on this node (and its guest in *pg), or NULL.  Inline: it
 * runs per WR; the node's guest list is walked only when the cache
 * (peer_g, valid while no guest struct was freed) misses. */
static inline struct vbe_qp *vbe_qp_peer(struct vbe_guest *g, struct vbe_qp *qp,
					 struct vbe_guest **pg)
{
	struct vbe_guest *p = qp->peer_g;
	struct vbe_qp *q;

	if (qp->state != VBE_QPS_RTS && qp->state != VBE_QPS_ERR)
		return NULL;
	if (!p || qp->peer_epoch != g->node->guest_epoch || p->domid != qp->peer_domid ||
	    p->devid != qp->peer_devid)
		p = vbe_qp_peer_guest(g, qp);
	if (!p || p->dead || !p->qps)
		return NULL;
	q = VBE_GET(p->qps, VBE_MAX_QPS, qp->peer_handle);
	if (!q || q->qpn != qp->peer_qpn || q->peer_qpn != qp->qpn)
		return NULL;
	*pg = p;
	return q;
}
static inline struct vbe_wqe *vbe_wq_head(struct vbe_wq *q)
{
	return q->count ? &q->e[q->head] : NULL;
}
/* Sizes are the guest's, not powers of two: wrap by a compare, not a
 * division (head < size, count <= size). */
static inline struct vbe_wqe *vbe_wq_tail(struct vbe_wq *q)
{
	uint32_t i = q->head + q->count;

	return &q->e[i >= q->size ? i - q->size : i];
}
/* ring.c: SGEs of a queued WR adding up past 2^32 - 1 (a guest's lie). */
bool vbe_wr_too_long(const struct vbe_wqe *w, unsigned n);

/* A queue of size WRs of up to max_sge SGEs each: 0 or -ENOMEM. */
int  vbe_wq_alloc(struct vbe_wq *q, uint32_t size, uint32_t max_sge);
void vbe_wq_free(struct vbe_wq *q);
static inline void vbe_wq_pop(struct vbe_wq *q)
{
	if (++q->head == q->size)
		q->head = 0;
	q->count--;
}
/* The head send WR is done: its CQE if signaled or failed, then off. */
static inline void vbe_sq_complete(struct vbe_guest *g, struct vbe_qp *qp, uint8_t wc,
				   uint8_t status, uint32_t byte_len)
{
	struct vbe_wqe *w = vbe_wq_head(&qp->sq);

	if (!w)
		return;
	qp->sq_retired++;
	if (status || (w->flags & VRDMA_WR_F_SIGNALED))
		vbe_sq_cqe(g, qp, w, wc, status, byte_len);
	vbe_wq_pop(&qp->sq);
	qp->wr_off = 0;		/* the next WR starts from its first byte */
}
/* The receive qp's next incoming message lands in, or NULL (RNR): the
 * head of its own queue, or one it took from its SRQ and holds until the
 * message completes (a message may arrive in several pieces). */
struct vbe_wqe *vbe_qp_rq_head(struct vbe_guest *g, struct vbe_qp *qp);

/* sched.c */
int  vbe_qfifo_init(struct vbe_qfifo *q);
void vbe_qfifo_fini(struct vbe_qfifo *q);
void vbe_evt_qp(struct vbe_guest *g, struct vbe_qp *qp, const struct vrdma_evt *e);
void vbe_evt_qp_error(struct vbe_guest *g, struct vbe_qp *qp, uint16_t status);
void vbe_evt_drain(struct vbe_guest *g);
bool vbe_budget_out(struct vbe_guest *g, struct vbe_qp *qp);
/* Budget left for another WR of g?  If not, qp waits on the run list. */
static inline bool vbe_budget_left(struct vbe_guest *g, struct vbe_qp *qp)
{
	return (g->budget_wrs && g->budget_bytes) || vbe_budget_out(g, qp);
}
static inline void vbe_budget_charge(struct vbe_guest *g, uint64_t bytes)
{
	if (g->budget_wrs)
		g->budget_wrs--;
	g->budget_bytes = bytes < g->budget_bytes ? g->budget_bytes - bytes : 0;
}
void vbe_dev_turn_end(struct vbe_guest *g, bool allow);
void vbe_run_start(struct vbe_guest *g);
void vbe_sched_qp_gone(struct vbe_guest *g, struct vbe_qp *qp);
int  vbe_sched_round(struct vbe_node *n);	/* serve every guest once */
bool vbe_sched_ready(struct vbe_guest *g);	/* run list work, not throttled */
bool vbe_sched_spin(struct vbe_guest *g);	/* ... that a poll can move now */
void vbe_sched_tick(struct vbe_node *n, int64_t now_ms);
int64_t vbe_sched_now(struct vbe_node *n);	/* us */
bool vbe_sched_cmd_take(struct vbe_guest *g);	/* a command may run now */
uint32_t vbe_sched_cmd_burst(uint32_t cmds);
void vbe_sched_held(struct vbe_node *n, struct vbe_qp *qp);	/* qp now RTS */
/* w starts to move: its queue delay into the counters (issue 5).  Both
 * ends read the round clock: no clock read, nothing sampled, per WR. */
static inline void vbe_sched_start_wr(struct vbe_guest *g, struct vbe_wqe *w)
{
	int64_t now = g->node->round_us, d;

	if (!w->t_q)
		return;
	d = (now ? now : vbe_sched_now(g->node)) - w->t_q;
	w->t_q = 0;
	if (d < 0)
		return;
	g->ctr.qdelay_n++;
	g->ctr.qdelay_sum_us += (uint64_t)d;
	if ((uint64_t)d > g->ctr.qdelay_max_us)
		g->ctr.qdelay_max_us = (uint64_t)d;
}

/* prio.c */
void vbe_prio_init(struct vbe_guest *g);	/* defaults, then the keys */
void vbe_prio_load(struct vbe_guest *g);	/* re-read the keys (watch) */
int  vbe_quota_qp(struct vbe_guest *g, uint32_t slots);	/* VRDMA_CS_* */
int  vbe_quota_mr(struct vbe_guest *g, uint64_t len);	/* VRDMA_CS_* */
extern const char *const vbe_prio_keys[];	/* NULL-terminated */
int  vbe_prio_parse(const char *key, const char *val, struct vbe_prio *p,
		    const char **allowed);	/* -EINVAL / -ENOENT: see allowed */
void vbe_prio_format(const struct vbe_prio *p, const char *key, char *buf, size_t len);
void vbe_prio_apply(struct vbe_guest *g, const struct vbe_prio *p);
struct vbe_guest *vbe_prio_guest(struct vbe_node *n, const char *vm);
void vbe_prio_defaults(struct vbe_prio *p);
bool vbe_prio_same(const struct vbe_prio *a, const struct vbe_prio *b);
int  vbe_prio_size(const char *s, const char **end, uint64_t *v);	/* 4K, 1G.. */

/* prio_keep.c */
void vbe_prio_keep(struct vbe_guest *g);	/* changed or leaving: by VM name */
void vbe_prio_recall(struct vbe_guest *g);	/* arrived: name, restore keys */
struct vbe_keep *vbe_keep_find(struct vbe_node *n, const char *vm, uint32_t devid);
struct vbe_keep *vbe_keep_first(struct vbe_node *n, const char *vm);
int  vbe_keep_put(struct vbe_node *n, const char *vm, uint32_t devid,
		  const struct vbe_prio *p);	/* 1: changed */
int  vbe_keep_store(struct vbe_node *n, const char *vm, uint32_t devid,
		    const struct vbe_prio *p);	/* put, then on disk */
/* VM vm detached (on) or not: 1 changed, 0 already so, -ENOSPC full. */
int  vbe_detached_put(struct vbe_node *n, const char *vm, bool on);

/* filesave.c: replace a kept file whole (temp, fsync, rename, dir fsync);
 * fill writes the content, 0 / -errno.  what names it in the log. */
#define VBE_FILE_PATH_MAX	256
int  vbe_file_replace(const char *path, const char *what,
		      int (*fill)(FILE *f, void *arg), void *arg);

/* prio_store.c: STATE_DIR/settings */
#define VBE_STORE_NAME	"settings"
bool vbe_keep_name_ok(const char *s);	/* a VM name the node remembers */
int  vbe_store_open(struct vbe_node *n, const char *dir);	/* load at start */
int  vbe_store_save(struct vbe_node *n);	/* the whole file, atomically */
void vbe_store_later(struct vbe_node *n);	/* written at the next tick */
void vbe_store_tick(struct vbe_node *n);	/* then, if anything changed */

/* maps.c: every vplat_map of a guest's pages goes through these. */
void vbe_maps_init(struct vbe_node *n, bool own_maps, bool own_pages);
int  vbe_map_area(struct vbe_guest *g, const uint32_t *refs, uint32_t npages, int writable,
		  struct vplat_map **out);		/* -errno, says why */
void vbe_unmap_area(struct vbe_guest *g);
int  vbe_map_buf(struct vbe_guest *g, const uint32_t *refs, uint32_t npages, int writable,
		 struct vplat_map **out);		/* VRDMA_CS_* */
void vbe_unmap_node(struct vbe_node *n, struct vplat_map *m, uint32_t npages);

/* tenant.c */
bool vbe_tenant_name_ok(const char *s);
int  vbe_tenant_watch(struct vbe_node *n);	/* limits re-read on change */
void vbe_tenant_unwatch(struct vbe_node *n);
int  vbe_tenant_init(struct vbe_guest *g);	/* joins its `tenant` or dom<N> */
void vbe_tenant_fini(struct vbe_guest *g);	/* leaves (vbe_xb_guest_free) */
void vbe_tenant_limits(struct vbe_node *n, const char *tenant, uint64_t lim[VBE_TQ_N],
		       bool own[VBE_TQ_N]);
void vbe_tenant_usage(struct vbe_node *n, const char *tenant, uint64_t use[VBE_TQ_N]);
int  vbe_tenant_check(struct vbe_guest *g, unsigned q);	/* VRDMA_CS_* */
int  vbe_tenant_quota(struct vbe_guest *g, unsigned q, uint64_t more);	/* VRDMA_CS_* */
void vbe_tenant_late(struct vbe_node *n, struct vbe_tenant *t, uint32_t npages, uint32_t maps,
		     bool add);
uint32_t vbe_tenant_cmds(struct vbe_guest *g);			/* 0: off */
int  vbe_tenant_get(struct vbe_node *n, const char *tenant, struct vout *o);	/* NULL: all */
int  vbe_tenant_set(struct vbe_node *n, const char *tenant, int nkv, char **kv, struct vout *o);

/* policy.c.  A side of a connection: its tenant group by name (a guest
 * of this node) or only by the hash of the name (another node's word). */
struct vbe_party {
	const char *group;		/* NULL: another node's guest */
	uint32_t hash;			/* vbe_policy_hash(group) */
};
int  vbe_policy_new(struct vbe_node *n, const char *path);	/* loads the file */
void vbe_policy_free(struct vbe_node *n);
uint32_t vbe_policy_hash(const char *name);			/* never 0 */
const char *vbe_policy_group(const struct vbe_node *n, const char *tenant);
uint32_t vbe_policy_ghash(const struct vbe_node *n, const char *tenant);
struct vbe_party vbe_policy_local(const struct vbe_node *n, const char *tenant);
struct vbe_party vbe_policy_remote(uint32_t hash);
bool vbe_policy_same(const struct vbe_party *a, const struct vbe_party *b);
bool vbe_policy_allow(const struct vbe_node *n, const struct vbe_party *from,
		      const struct vbe_party *to);
bool vbe_policy_allow_either(const struct vbe_node *n, const struct vbe_party *a,
			     const struct vbe_party *b);	/* bindings */
void vbe_policy_refused(struct vbe_node *n, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));			/* the policy's own */

/* cmd.c */
void vbe_cmd_exec(struct vbe_guest *g, const struct vrdma_req *r);
void vbe_cmd_release(struct vbe_node *n);	/* held answers whose wait is over */
/* srq.c */
int  vbe_srq_create(struct vbe_guest *g, const struct vrdma_req *r, uint32_t *out);
int  vbe_srq_destroy(struct vbe_guest *g, const struct vrdma_req *r);
void vbe_srq_free(struct vbe_guest *g, struct vbe_srq *srq);
int  vbe_srq_recv(struct vbe_guest *g, const struct vrdma_req *r,
		  const struct vrdma_wire_sge *xsge);

/* cm.c: commands return a VRDMA_CS_*; `late` is posted after CMD_DONE */
struct vbe_late {
	struct vbe_guest *g;
	struct vrdma_evt e;
	int conn;			/* conn slot for a CONN_REQUEST, else -1 */
};
int  vbe_cm_listen(struct vbe_guest *g, const struct vrdma_req *r, uint32_t *out);
uint32_t vbe_cm_svc_hash(const char *group, const char *svc);	/* NULL group: bare */
int  vbe_cm_resolve(struct vbe_node *n, const struct vbe_party *from, const char *svc,
		    uint32_t hsvc, bool qual, struct vbe_listener **out);
int  vbe_cm_unlisten(struct vbe_guest *g, const struct vrdma_req *r);
int  vbe_cm_connect(struct vbe_guest *g, const struct vrdma_req *r, uint32_t *out,
		    struct vbe_late *late);
void vbe_cm_late(struct vbe_node *n, struct vbe_late *late);
int  vbe_cm_accept(struct vbe_guest *g, const struct vrdma_req *r, uint32_t *out);
int  vbe_cm_reject(struct vbe_guest *g, const struct vrdma_req *r);
void vbe_cm_qp_gone(struct vbe_guest *g, struct vbe_qp *qp);
void vbe_cm_guest_gone(struct vbe_guest *g);
void vbe_cm_deliver(struct vbe_guest *g);
void vbe_cm_tick(struct vbe_node *n, int64_t now_ms);

/* local/ud.c */
int  vbe_ud_modify(struct vbe_guest *g, struct vbe_qp *qp,
		   const struct vrdma_cmd_modify_qp *m);	/* VRDMA_CS_* */

/* cm_qpn.c */
void vbe_node_gid_init(struct vbe_node *n);
int  vbe_cm_modify(struct vbe_guest *g, const struct vrdma_req *r);
void vbe_qpn_tick(struct vbe_node *n, int64_t now_ms);
struct vbe_qp *vbe_qpn_find(struct vbe_node *n, uint32_t qpn, struct vbe_guest **pg);
int  vbe_qpn_add(struct vbe_guest *g, struct vbe_qp *qp);	/* -ENOMEM */
void vbe_qpn_del(struct vbe_guest *g, struct vbe_qp *qp);
void vbe_qpn_fini(struct vbe_node *n);
void vbe_qpn_lost(struct vbe_guest *g, struct vbe_qp *qp);	/* peer gone */
void vbe_qpn_wait(struct vbe_guest *g, struct vbe_qp *qp, const uint8_t gid[16],
		  uint32_t qpn);
/* cm_rqpn.c: RTR naming a QP of another node (UNREACH without a device) */
int  vbe_rqpn_rtr(struct vbe_guest *g, struct vbe_qp *qp);

/* verbs_dev.c, cm_rdmacm.c: the RDMA-device path to other nodes (issue 4).
 * Every call is a no-op (or UNREACH) when n->vx is NULL: no device. */
int  vbe_vx_open(struct vbe_node *n, const struct vbe_node_cfg *cfg);
void vbe_vx_close(struct vbe_node *n);
void vbe_vx_fd_ready(struct vbe_node *n, int fd);
int  vbe_vx_poll(struct vbe_node *n);		/* device CQEs handled */
int  vbe_vx_arm(struct vbe_node *n);		/* 1: completions slipped in */
void vbe_vx_tick(struct vbe_node *n, int64_t now_ms);
int  vbe_vx_unpin(struct vbe_node *n, const struct vbe_guest *g, const uint8_t *addr,
		  size_t len, struct vplat_map *map);
unsigned vbe_vx_pending(const struct vbe_node *n);	/* teardown not done yet */
uint64_t vbe_vx_dereg(struct vbe_node *n, const struct vbe_guest *g, uint32_t idx,
		      uint32_t key);		/* 0, or a number to wait for */
bool vbe_vx_dereg_done(const struct vbe_node *n, const struct vbe_guest *g, uint64_t seq);
void vbe_vx_srq_posted(struct vbe_guest *g, struct vbe_srq *srq);
int  vbe_vx_gid(const struct vbe_node *n, uint8_t gid[16]);	/* -ENODEV: none */
int  vbe_rcm_connect(struct vbe_guest *g, struct vbe_qp *qp,
		     const struct vrdma_cmd_connect *c, struct vbe_late *late);
int  vbe_rcm_accept(struct vbe_guest *g, struct vbe_qp *qp, struct vbe_conn *c,
		    const struct vrdma_cmd_accept *a, uint32_t *out);
void vbe_rcm_conn_drop(struct vbe_node *n, struct vbe_conn *c, int status,
		       const uint8_t *pdata, uint32_t pdata_len);
void vbe_rcm_qp_gone(struct vbe_guest *g, struct vbe_qp *qp);

#endif /* VRDMA_VBE_H */
