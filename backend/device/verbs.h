/* SPDX-License-Identifier: MIT */
/*
 * The RDMA-device path (issue 4), internals shared by verbs_*.c,
 * target_verbs.c and cm/cm_rdmacm.c.  docs/rdma.md is the prose.
 *
 *   verbs_map.c     pure helpers: status/access mapping, private data,
 *                   remote-key table entries and the requester's cache
 *                   of them, wr_id encoding (unit tested)
 *   verbs_dev.c     the node's device: rdma_cm listener, completion
 *                   channel, per-guest PD + MRs + key table, CQ polling
 *   target_verbs.c  a guest QP whose peer is on another node
 *   verbs_srq.c     a guest SRQ's device twin
 *   verbs_ud.c      datagrams between nodes (verbs_ud.h)
 *   cm/cm_rdmacm.c  connection setup between nodes with librdmacm
 *
 * One device context per node.  Each guest gets one ibv_pd; its MRs are
 * registered on the device lazily (when a command batch changed them)
 * at the key's device window (below); SGEs and remote addresses are
 * moved from the guest's iova into it.
 *
 * Remote keys: a guest hands out its backend key (tag19 << 13 | key
 * slot, vbe.h).  Each guest's node publishes a remote-key table in device
 * memory (one 32-byte entry per key slot: guest key -> device rkey, iova,
 * length, access, PD, check word), registered REMOTE_READ at iova 0 in
 * that guest's PD, so only QPs of that guest can read it.  A requester
 * translates a guest rkey by RDMA-reading the entry of its slot bits
 * (cached per QP), takes it only if the entry holds the whole key (so
 * the random tag is checked across nodes too) and its check word
 * matches (a READ racing the writer is read again), checks bounds and
 * rights itself, then posts with the device rkey; the responder's device
 * enforces the MR's bounds and rights again.
 *
 * Device windows: the device MR of guest key K sits at device address
 * win(K) << 36 | page offset (vbe_vx_va), not at the guest's iova;
 * win(K) is K's low 28 bits, its key slot and the low 15 bits of its
 * tag.  Live keys of a guest have distinct slots, so each owns its 64
 * GiB of the PD's address space, and key.c gives a slot's next key
 * another window.  So a device WR built for K lands only in an MR
 * registered for K: a cached entry gone stale (K deregistered, its
 * device rkey handed to a later MR) or a torn one is refused by the
 * device's bounds check, never redirected to another MR -- but for a
 * later MR of K's slot that drew K's window again and got K's old
 * device rkey too (docs/security.md section 8).
 */
#ifndef VRDMA_VBE_VERBS_H
#define VRDMA_VBE_VERBS_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "../vbe.h"

#define VBE_VX_PORT_DEF		18515
#define VBE_VX_MAX_QPS		VBE_NODE_DEVQPS	/* device QPs per node (vbe.h) */
#define VBE_VX_GUEST_QPS	256	/* per guest: nobody takes the table */
#define VBE_VX_RESOLVE_MS	2000	/* rdma_resolve_addr/route limits */
#define VBE_VX_CQ_BATCH		32
#define VBE_VX_POLL_CQES	256	/* device CQEs per node poll */
#define VBE_VX_RKT_CACHE	8	/* translated rkeys per QP */
#define VBE_VX_RKT_TRIES	3	/* READs of one entry while it reads torn */
#define VBE_VX_RD_ATOM		4	/* outstanding READ/atomics */
/* Requests waiting for an answer from one other node (services and
 * bindings each): no node takes more than its share of the tables. */
#define VBE_RQPN_PER_NODE	64
#define VBE_RQPN_PER_GROUP	16	/* ... and per group of that node */
#define VBE_VX_ACK_TIMEOUT	14	/* 4.096 us << 14 = 67 ms, as perftest */
/* Bytes of send WRs on the device per QP (at least one WR): enough for
 * the bandwidth-delay product of any RNIC, small enough that Soft-RoCE
 * over a lossy link does not go-back-N a whole send queue. */
#define VBE_VX_INFLIGHT		(2u << 20)

/* ---- verbs_map.c: pure ---- */

uint8_t  vbe_vx_status(int ibv_wc_status);
int      vbe_vx_access(uint32_t vrdma_acc);

/* Private data, little endian, fits rdma_cm's 56-byte REQ limit:
 *   0 u8 magic | 1 u8 pdata_len, bit 7: a binding, bit 6: a service
 *                  named "group/svc" | 2 u16 pd
 *   4 u32 qpn | 8 u32 rkt rkey
 *   12 u32 a binding: dest qpn (the QP named by MODIFY_QP RTR); else the
 *          service's hash (vbe_cm_svc_hash; 0 in a reply)
 *   16 u32 the sender's guest's tenant group (vbe_policy_hash of its name)
 *   20 u32 the sender's guest's domain
 *   24 pdata[pdata_len]
 * A reject: 0 u8 magic | 1 u8 pdata_len | 2 u16 VRDMA_CS_* | 4 pdata. */
/* 0xa7: device windows of 64 GiB (key slot and 15 tag bits, << 36) and
 * key-table entries whose length has 40 bits (byte 25); 0xa6 brought
 * per-key device windows, of 4 GiB (the whole key << 32), and entries
 * with a check word, but 32-bit lengths (MRs of at most 4 GiB less a
 * page across nodes); 0xa5 had the group and domain in the hello
 * (connect policy, issue 12) and a 32-bit service hash, but MRs at the
 * guest's iova and unchecked entries, as 0xa4; 0xa4 to 0xa7: keys are
 * tag19 << 13 | key slot (8192 entries); 0xa3 had tag24 << 8 | index
 * (256 entries), 0xa2 index << 8 | gen8, 0xa1 no dest_qpn.  Older ones
 * are refused: both vrdmads of a cluster run one version, and an old
 * peer would read the other's key table wrongly (or aim at the wrong
 * device window). */
#define VBE_VX_PD_MAGIC		0xa7
#define VBE_VX_HELLO_BIND	0x80
#define VBE_VX_HELLO_QUAL	0x40
#define VBE_VX_HELLO_HDR	24
#define VBE_VX_HELLO_MAX	(VBE_VX_HELLO_HDR + VRDMA_PDATA_MAX)
#define VBE_VX_REJ_HDR		4
#define VBE_VX_REJ_MAX		(VBE_VX_REJ_HDR + VRDMA_PDATA_MAX)
_Static_assert(VBE_VX_HELLO_MAX <= 56, "rdma_cm REQ private data");

struct vbe_vx_hello {
	uint16_t pd;			/* vbe PD index of the guest QP */
	uint32_t qpn;			/* guest QP number */
	uint32_t rkt_rkey;		/* device rkey of the key table */
	uint32_t svc_hash;		/* service connect; 0 for a binding */
	bool qualified;			/* ... named "group/svc" */
	uint32_t dest_qpn;		/* binding by QP number (cm_rqpn.c), else 0 */
	uint32_t group;			/* sender's tenant group, by hash */
	uint32_t domid;			/* sender's guest */
	uint32_t pdata_len;
	uint8_t  pdata[VRDMA_PDATA_MAX];
};

int vbe_vx_hello_pack(const struct vbe_vx_hello *h, uint8_t *buf, size_t len);
/* The magic of private data from a vrdmad of another version (0xa0 ..
 * 0xaf, not ours), else 0: worth a warning that names both. */
uint8_t vbe_vx_magic_other(const void *buf, size_t len);
int vbe_vx_hello_unpack(const void *buf, size_t len, struct vbe_vx_hello *h);
int vbe_vx_rej_pack(uint16_t status, const uint8_t *pdata, uint32_t pdata_len,
		    uint8_t *buf, size_t len);
int vbe_vx_rej_unpack(const void *buf, size_t len, uint16_t *status,
		      uint8_t *pdata, uint32_t *pdata_len);

/*
 * Device window of guest key K: window id win(K) = K's low 28 bits (its
 * key slot and the low VBE_KEY_WIN_TAG_BITS of its tag); the device MR
 * sits at win(K) << 36 plus the page offset of its first byte (the
 * kernel wants address and iova at the same page offset).  Windows of
 * keys of distinct slots are disjoint, and key.c gives a slot's next
 * key another window tag.  None overlaps the key table at iova 0, and
 * none reaches 2^64 (vbe_key_wtag_ok).  Every MR vrdma allows fits its window (pgoff
 * + length <= 64 GiB, the asserts below); one that would not gets no
 * device MR: it works within its node, and a WR through the device
 * naming it fails as a bad key would (docs/rdma.md).
 */
#define VBE_VX_WIN_SHIFT	36
#define VBE_VX_WIN_BITS		(VBE_KEY_IDX_BITS + VBE_KEY_WIN_TAG_BITS)
#define VBE_VX_WIN_LEN		(1ull << VBE_VX_WIN_SHIFT)
#define VBE_VX_MR_MAX		VBE_VX_WIN_LEN	/* with page offset 0 */
_Static_assert(VBE_VX_WIN_BITS + VBE_VX_WIN_SHIFT == 64,
	       "windows tile the device address space");
_Static_assert((uint64_t)VRDMA_BUF_MAX_PAGES_IND * VRDMA_PAGE_SIZE <= VBE_VX_WIN_LEN,
	       "every MR vrdma allows gets its device MR");
_Static_assert(VBE_VX_MR_MAX < 1ull << 40, "a length fits the entry's 40 bits");
static inline uint32_t vbe_vx_win(uint32_t key)
{
	return key & ((1u << VBE_VX_WIN_BITS) - 1);
}
static inline uint64_t vbe_vx_va(uint32_t key, uint32_t pgoff)
{
	return (uint64_t)vbe_vx_win(key) << VBE_VX_WIN_SHIFT | pgoff;
}
/* [pgoff, pgoff + len) inside one window. */
static inline bool vbe_vx_win_fits(uint32_t pgoff, uint64_t len)
{
	return pgoff < VRDMA_PAGE_SIZE && len <= VBE_VX_WIN_LEN - pgoff;
}
static inline uint32_t vbe_vx_pgoff(const void *p)
{
	return (uint32_t)((uintptr_t)p & (VRDMA_PAGE_SIZE - 1));
}

/*
 * Remote-key table entry, 32 bytes in device memory, little endian:
 *   0 u32 gkey    guest key; 0 = empty.  Stored alone, last when an
 *                 entry is written and first when it is wiped
 *   4 u32 rkey    device rkey
 *   8 u64 iova    the guest's iova of the MR's first byte
 *  16 u32 length  bits 0..31 of the length (1 .. VBE_VX_MR_MAX, and
 *                 pgoff + length <= VBE_VX_WIN_LEN)
 *  20 u16 pd      vbe PD index
 *  22 u16 pgoff   the device window's page offset (vbe_vx_va)
 *  24 u8  access  VRDMA_ACC_*
 *  25 u8          bits 32..39 of the length
 *  26 u8[2]       0
 *  28 u32 check   vbe_vx_rkt_sum of bytes 0..27
 * A peer's RDMA READ may overlap our writes (no atomicity), so a reader
 * takes an entry only if its check word matches the rest.
 */
#define VBE_VX_RKT_ENT		32
_Static_assert((uint64_t)VBE_KEY_SLOTS * VBE_VX_RKT_ENT <=
	       (uint64_t)VBE_KEY_SLOTS << VBE_VX_WIN_SHIFT,
	       "the key table ends below the first window (window tag >= 1)");
struct vbe_rkt {
	uint32_t gkey;			/* guest key; 0 = slot empty */
	uint32_t rkey;			/* device rkey */
	uint64_t iova, length;
	uint32_t access;		/* VRDMA_ACC_* */
	uint32_t pd;			/* vbe PD index */
	uint32_t pgoff;			/* device address of byte 0: vbe_vx_va */
};

uint32_t vbe_vx_rkt_sum(const uint8_t *buf);
void vbe_vx_rkt_pack(const struct vbe_rkt *e, uint8_t *buf);
int  vbe_vx_rkt_parse(const uint8_t *buf, uint32_t gkey, struct vbe_rkt *e);
void vbe_vx_rkt_write(uint8_t *ent, const struct vbe_rkt *e);
uint32_t vbe_vx_rkt_gkey(const uint8_t *ent);
/* Requester-side check of a translated key: 0 or a VRDMA_WS_*; on 0,
 * *va is where [addr, addr + len) is in gkey's device window. */
int  vbe_vx_rkt_check(const struct vbe_rkt *e, uint32_t gkey, uint32_t pd,
		      uint64_t addr, uint64_t len, uint32_t acc, uint64_t *va);

/* A device QP's translations of the peer's keys (requester side). */
struct vbe_rkc {
	struct vbe_rkt e[VBE_VX_RKT_CACHE];
	unsigned next;			/* slot the next entry replaces */
	uint32_t want;			/* key being read, 0 = none */
	uint32_t fresh;			/* key whose entry was read for the head WR */
	int res;			/* vbe_vx_rkt_parse of the last READ */
	uint8_t tries;			/* READs of want's entry */
	bool wait;			/* READ in flight */
};

/* What vbe_vx_rkc_get tells the caller besides 0 and VRDMA_WS_*. */
#define VBE_VX_RKC_READ		(-1)	/* RDMA-READ want's entry, then ask again */
int  vbe_vx_rkc_get(struct vbe_rkc *c, uint32_t gkey, uint32_t pd, uint64_t addr,
		    uint64_t len, uint32_t acc, uint32_t *rkey, uint64_t *va);
int  vbe_vx_rkc_done(struct vbe_rkc *c, const uint8_t *ent);
void vbe_vx_rkc_posted(struct vbe_rkc *c);
void vbe_vx_rkc_forget(struct vbe_rkc *c);

/* wr_id of a device WR: kind, device-QP slot and its generation. */
enum { VBE_VX_WR_SQ = 1, VBE_VX_WR_RQ = 2, VBE_VX_WR_RKT = 3, VBE_VX_WR_SRQ = 4 };
static inline uint64_t vbe_vx_wrid(unsigned kind, uint16_t gen, uint32_t slot)
{
	return (uint64_t)kind << 56 | (uint64_t)gen << 32 | slot;
}
static inline unsigned vbe_vx_wrid_kind(uint64_t id) { return (unsigned)(id >> 56); }
static inline uint16_t vbe_vx_wrid_gen(uint64_t id) { return (uint16_t)(id >> 32); }
static inline uint32_t vbe_vx_wrid_slot(uint64_t id) { return (uint32_t)id; }

/* ---- device state ---- */

/* A guest SRQ's receive on its device twin, by srq_idx % size. */
struct vbe_vsrq_ent {
	uint64_t id;			/* the guest's wr_id */
	uint32_t idx;			/* its srq_idx */
	uint8_t st;			/* VRDMA_WS_* if its SGEs were bad */
	bool used;
};

struct vbe_vsrq {
	struct ibv_srq *srq;
	uint16_t gen;			/* of the guest SRQ slot it is for */
	uint32_t size, posted;		/* receives on the device */
	uint32_t qps;			/* device QPs taking from it */
	uint32_t next;			/* where the search for a free entry starts */
	struct vbe_vsrq_ent *e;		/* [size] */
};

struct vbe_vguest {
	struct vbe_vguest *next;
	uint32_t domid, devid;
	const struct vbe_guest *g;	/* incarnation it was made for */
	char ten[VPLAT_TENANT_NAME];	/* its tenant (the MR lane's turn) */
	struct ibv_pd *pd;
	struct ibv_mr **mr;		/* [VBE_MAX_MRS], NULL = not registered */
	uint32_t *key;			/* guest key each mr was made for */
	uint8_t **addr;			/* dom0 address each mr covers */
	uint8_t *rkt;			/* VBE_KEY_SLOTS entries, remote-readable */
	struct ibv_mr *rkt_mr;
	uint8_t *scratch;		/* one entry per device QP slot */
	struct ibv_mr *scratch_mr;
	struct vbe_vsrq **srqs;		/* [VBE_MAX_SRQS] twins, NULL = none */
	unsigned nsrqs;
	uint64_t cmds;			/* g->ctr.commands at the last sync */
	unsigned nqps;
};

enum vbe_vq_state {
	VBE_VQ_ADDR,		/* connector: resolving address */
	VBE_VQ_ROUTE,		/* connector: resolving route */
	VBE_VQ_CONN,		/* connector: REQ sent */
	VBE_VQ_UP,		/* established (or accepted) */
	VBE_VQ_DOWN,		/* disconnected / failed: CQEs ignored */
};

struct vbe_vqp {
	struct vbe_slot s;
	uint32_t domid, devid, qp;	/* the guest QP (handle) */
	uint32_t srq1;			/* its guest SRQ's index + 1, 0 = none */
	uint64_t gserial;		/* its guest's vbe_guest.serial (dev_qps) */
	struct vbe_vguest *vg;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	unsigned cq_events;		/* to ack before destroying the CQ */
	enum vbe_vq_state state;
	bool connector;
	uint64_t conn_id;		/* connector: the guest's attempt */
	int64_t deadline;
	uint32_t sq_posted, rq_posted;	/* guest WRs at the heads on the device */
	uint32_t credits;		/* the guest's device credits this QP holds */
	uint64_t inflight;		/* bytes of the posted send WRs */
	uint32_t peer_qpn, peer_pd, peer_rkt;
	struct vbe_rkc rkc;		/* the peer's keys */
	struct vbe_vx_hello hello;	/* connector: what rdma_connect sends */
};

/* A remote CONN_REQUEST waiting for its listener (index = conn slot). */
struct vbe_vrconn {
	struct rdma_cm_id *id;
	struct vbe_vx_hello hello;
};

/* A binding REQ from another node waiting for its QP's RTR (cm_rqpn.c). */
struct vbe_vqreq {
	struct rdma_cm_id *id;		/* NULL = free */
	struct vbe_vx_hello hello;
	uint8_t gid[16];		/* the requesting node's */
	int64_t deadline;
};

struct vbe_vx {
	struct vbe_node *node;
	struct rdma_event_channel *ech;
	struct rdma_cm_id *lis;
	struct ibv_context *ctx;
	struct ibv_comp_channel *cch;
	struct sockaddr_storage addr;	/* our RDMA address */
	uint16_t port;
	struct vbe_vguest *guests;
	struct vbe_vqp qps[VBE_VX_MAX_QPS];
	struct vbe_vrconn rconn[VBE_MAX_CONNS];
	struct vbe_vqreq qreq[VBE_MAX_CONNS];
	int max_sge;
	struct vbe_reaper *reap;	/* teardown threads (verbs_reap.c) */
	struct vbe_vud *ud;		/* datagrams between nodes (verbs_ud.c) */
	struct vbe_vcoll *vcl;		/* teams' links between nodes (verbs_coll.c) */
	struct vlog_lim req_lim;	/* remote requests refused, not by policy */
	struct vlog_lim hello_lim;	/* ... whose hello did not parse (any host) */
	struct vlog_lim rej_lim;	/* our connects the other node rejected */
};

/* verbs_dev.c */
void vbe_vx_credits_return(struct vbe_vx *vx, struct vbe_vqp *vq);
struct vbe_vguest *vbe_vx_guest(struct vbe_vx *vx, struct vbe_guest *g);
void vbe_vx_guest_sync(struct vbe_vx *vx, struct vbe_vguest *vg, struct vbe_guest *g);
struct vbe_vqp *vbe_vx_qp_new(struct vbe_vx *vx, struct vbe_guest *g, struct vbe_qp *qp);
int  vbe_vx_qp_create(struct vbe_vx *vx, struct vbe_vqp *vq, struct vbe_qp *qp);
void vbe_vx_qp_free(struct vbe_vx *vx, struct vbe_vqp *vq);
struct vbe_vqp *vbe_vx_qp_find(struct vbe_vx *vx, const struct vbe_guest *g,
			       const struct vbe_qp *qp);
struct vbe_qp *vbe_vx_guest_qp(struct vbe_vx *vx, struct vbe_vqp *vq,
			       struct vbe_guest **pg);
int  vbe_vx_poll_cq(struct vbe_vx *vx, struct vbe_vqp *vq, int budget);

/* target_verbs.c */
extern const struct vbe_target vbe_target_verbs;
int  vbe_vx_sges(struct vbe_guest *g, struct vbe_vguest *vg, uint32_t pd,
		 const struct vbe_wqe *w, uint32_t acc, struct ibv_sge *sg, int *nsg,
		 uint64_t *total);
void vbe_vx_cqe(struct vbe_vx *vx, struct vbe_vqp *vq, const struct ibv_wc *wc);
void vbe_vx_qp_lost(struct vbe_vx *vx, struct vbe_vqp *vq, bool peer_left);

/* verbs_srq.c */
struct ibv_srq *vbe_vx_srq_get(struct vbe_vx *vx, struct vbe_vguest *vg,
			       struct vbe_guest *g, uint32_t si);
void vbe_vx_srq_fill(struct vbe_vx *vx, struct vbe_vguest *vg, struct vbe_guest *g,
		     uint32_t si);
void vbe_vx_srq_sync(struct vbe_vx *vx, struct vbe_vguest *vg, const struct vbe_guest *g);
bool vbe_vx_srq_take(struct vbe_vguest *vg, uint64_t wr_id, struct vbe_vsrq_ent *out,
		     uint32_t *si);

/* verbs_reap.c: device teardown off the loop (MR lane: tenants in turn) */
int  vbe_reap_start(struct vbe_vx *vx);
void vbe_reap_stop(struct vbe_vx *vx);		/* runs what is queued */
void vbe_reap_qp(struct vbe_vx *vx, struct rdma_cm_id *id, bool up, struct ibv_cq *cq,
		 unsigned cq_events);
/* tenant: a DEREG_MR's (the MR lane, tenants in turn); NULL: a dropped one's */
uint64_t vbe_reap_mr(struct vbe_vx *vx, struct ibv_mr *mr, const char *tenant);
bool vbe_reap_mr_done(const struct vbe_vx *vx, uint64_t seq, const char *tenant);
int  vbe_reap_fd(const struct vbe_vx *vx);	/* readable: an MR job ran */
void vbe_reap_guest(struct vbe_vx *vx, struct vbe_vguest *vg);
void vbe_reap_srq(struct vbe_vx *vx, struct vbe_vsrq *vs);
int  vbe_reap_defer_unmap(struct vbe_vx *vx, struct vplat_map *m, struct vbe_tenant *t,
			  const char *tenant, uint32_t npages);
void vbe_reap_poll(struct vbe_vx *vx);
unsigned vbe_reap_pending(const struct vbe_vx *vx);

/* cm_rdmacm.c */
void vbe_rcm_events(struct vbe_vx *vx);
void vbe_rcm_tick(struct vbe_vx *vx, int64_t now_ms);
int  vbe_rcm_start(struct vbe_guest *g, struct vbe_qp *qp, const struct sockaddr *dst,
		   const struct vbe_vx_hello *hello);
int  vbe_rcm_accept_id(struct vbe_guest *g, struct vbe_qp *qp, struct rdma_cm_id *id,
		       const struct vbe_vx_hello *h, const uint8_t *pdata,
		       uint32_t pdata_len, bool *taken);
bool vbe_rcm_policy_ok(const struct vbe_guest *g, uint32_t peer, bool binding);

void vbe_rcm_reject(struct rdma_cm_id *id, int status);	/* and destroy it */

/* verbs_coll.c: the links of teams across nodes (backend/coll/link.h) */
extern const struct vbe_clink_ops vbe_vcl_ops;
bool vbe_vcl_is_hello(const void *pd, size_t len);
void vbe_vcl_request(struct vbe_vx *vx, struct rdma_cm_id *id, const void *pd, size_t len);
void vbe_vcl_event(struct vbe_vx *vx, enum rdma_cm_event_type type, struct rdma_cm_id *id,
		   uintptr_t ctx, const uint8_t *pd, size_t len);
#define VBE_VCL_CTX		((uintptr_t)1 << 62)	/* its ids' context bit */
bool vbe_vcl_cq_event(struct vbe_vx *vx, struct ibv_cq *cq);
int  vbe_vcl_poll(struct vbe_vx *vx, int budget);
int  vbe_vcl_arm(struct vbe_vx *vx);
void vbe_vcl_tick(struct vbe_vx *vx, int64_t now_ms);
void vbe_vcl_close_all(struct vbe_vx *vx);

/* cm_rqpn.c: binding QPs of two nodes by number (MODIFY_QP RTR) */
void vbe_rqpn_request(struct vbe_vx *vx, struct rdma_cm_id *id,
		      const struct vbe_vx_hello *h);
void vbe_rqpn_tick(struct vbe_vx *vx, int64_t now_ms);

#endif /* VRDMA_VBE_VERBS_H */
