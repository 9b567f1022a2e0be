/* SPDX-License-Identifier: MIT */
/*
 * libvrdma internals: the objects behind the public structs.  Public
 * objects are embedded first in a private one (container_of).
 *
 * Locks: obj_lock (per device) guards the object lists and the counters
 * that make destroy-order misuse EBUSY; the frontend's ring_lock
 * serialises posting (a QP's posted counters and slots change only under
 * it); per-QP sq_lock serialises modify/query; per-CQ lock serialises
 * polling.  Order: cq lock -> obj_lock; frontend evt_lock -> obj_lock.
 * Nobody holds obj_lock while issuing a command.
 */
#ifndef VRDMA_VLIB_H
#define VRDMA_VLIB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vrdma/vrdma.h"
#include "../frontend/front.h"
#include "vring.h"
#include "vlt.h"

#define vlib_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* Unlink obj from a list linked by `next` (obj_lock held); true if found. */
#define VLIB_UNLINK(headp, obj) ({					\
	__typeof__(obj) *_pp = (headp);					\
	bool _found = false;						\
	while (*_pp) {							\
		if (*_pp == (obj)) {					\
			*_pp = (obj)->next;				\
			_found = true;					\
			break;						\
		}							\
		_pp = &(*_pp)->next;					\
	}								\
	_found; })

/* Link obj at the head of a list under obj_lock. */
#define VLIB_LINK(dev, headp, obj) do {					\
	pthread_mutex_lock(&(dev)->obj_lock);				\
	(obj)->next = *(headp);						\
	*(headp) = (obj);						\
	pthread_mutex_unlock(&(dev)->obj_lock);				\
} while (0)

#define VLIB_LISTEN_QUEUE	64	/* pending connection requests */
#define VLIB_QP_HASH		256	/* buckets, by handle (index in the low bits) */
#define VLIB_AQ_SIZE		256	/* async events queued, then dropped */

struct vlib_pin;

struct vlib_buf {
	struct vlib_buf *next;
	struct vplat_share *share;	/* NULL for a pinned buffer */
	uint8_t *addr;
	size_t len;
	uint32_t handle;
	unsigned mrs;			/* MRs inside (obj_lock) */
	bool internal;			/* a CQ area, not the app's */
	/* Over the app's own memory (pin.c): the pins lending its pages. */
	struct vlib_pin **pins;
	unsigned npins;
};

/* App pages moved in place onto shared pages (pin.c). */
struct vlib_pin {
	struct vlib_pin *next;
	uint8_t *addr;			/* page aligned */
	size_t len;
	struct vplat_share *share;
	unsigned users;			/* pinned buffers over its pages */
	int prot;			/* the pages' protection before */
	bool gone;			/* the program unmapped it: off the list */
};

struct vlib_pd {
	struct vrdma_pd pub;
	struct vlib_pd *next;
	unsigned users;			/* MRs and QPs (obj_lock) */
};

struct vlib_mr {
	struct vrdma_mr pub;
	struct vlib_mr *next;
	struct vlib_buf *buf;
};

/* A QP destroyed while its CQEs may still sit in a CQ: CQEs naming it
 * before index `until` are dropped, later ones are a violation. */
struct vlib_gone {
	uint32_t qp;
	uint32_t until;
};

struct vlib_cq {
	struct vrdma_cq pub;
	struct vlib_cq *next;
	struct vlock lock;		/* polling (vlock.h: the data path) */
	struct vlib_buf *buf;		/* the shared CQ area */
	struct vrdma_cq_hdr *hdr;
	struct vrdma_cqe *ring;
	uint32_t size;
	uint32_t cons;			/* private consumer index (lock) */
	unsigned users;			/* QPs (obj_lock) */
	struct vlib_gone *gone;		/* (lock) */
	unsigned ngone, gone_cap;
	struct vlib_qp *last_qp;	/* QP of the last CQE (lock) */
};

/* A shared receive queue.  Receives complete out of order across the CQs
 * of its QPs: done[] marks completed slots, retired is the oldest one
 * still outstanding, so a slot is reused only after it completed. */
struct vlib_srq {
	struct vrdma_srq pub;
	struct vlib_srq *next;
	pthread_mutex_t lock;		/* posting and retiring */
	uint32_t posted, retired;
	uint32_t mask;
	struct vlib_slot *slot;
	uint8_t *done;
	unsigned users;			/* QPs (obj_lock) */
};

/* One work queue slot: what the CQE retiring it must say. */
struct vlib_slot {
	uint64_t wr_id;
	uint32_t len;			/* bytes posted, bounds byte_len */
	uint8_t wc;			/* VRDMA_WC_* expected on success */
};

struct vlib_qp {
	struct vrdma_qp pub;
	struct vlib_qp *next;
	pthread_mutex_t sq_lock;	/* modify / query */
	struct vrdma_qp_cap cap;	/* recv fields 0 on an SRQ */
	struct vlib_srq *srq;
	uint16_t sq_sig_all;		/* VRDMA_WR_F_SIGNALED or 0: or-ed into each send */
	bool ud;			/* VRDMA_QPT_UD (ah.c) */
	/* Counters: posted by the poster, retired by the CQ poller; each
	 * side reads the other's with acquire loads. */
	uint32_t sq_posted, sq_retired;
	uint32_t rq_posted, rq_retired;
	/* Slots indexed by counter & mask: power-of-two arrays, so the
	 * index stays right when the counters wrap at 2^32. */
	struct vlib_slot *sq_slot;
	struct vlib_slot *rq_slot;
	uint32_t sq_mask, rq_mask;
	/* Connection state from events (evt_lock). */
	int conn_done;			/* atomic: CONNECTED or REJECTED seen */
	uint16_t conn_status;
	uint32_t peer_pdata_len;
	uint8_t peer_pdata[VRDMA_PDATA_MAX];
	/* vrdma_modify_qp() attributes (sq_lock). */
	struct vrdma_qp_attr va;
};

/* CONN_FROM: who sent request `id` (vrdma_get_request_peer). */
struct vlib_from {
	uint64_t id;			/* 0 = empty */
	struct vrdma_conn_peer peer;
};

struct vrdma_listener {
	struct vrdma_device *dev;
	struct vrdma_listener *next;
	uint32_t handle;
	pthread_mutex_t lock;
	struct vrdma_conn_req q[VLIB_LISTEN_QUEUE];
	unsigned head, count;
	struct vlib_from from[2 * VLIB_LISTEN_QUEUE];	/* oldest overwritten */
	unsigned from_next;
};

/*
 * A team dom0 runs (team_dev.c, feature-coll): what the device knows of
 * it.  Its OP_COLLs complete in order on its CQ, one CQE each; slot[]
 * holds what each must say (wr_id = the OP_COLL's seq, len = its
 * receive range: byte_len on success).
 */
struct vlib_team {
	struct vlib_team *next;
	struct vrdma_device *dev;
	struct vlib_cq *cq;
	uint32_t handle;
	int evt_done;			/* atomic: its EVT_TEAM came */
	uint16_t evt_status;
	uint32_t posted, retired;	/* OP_COLLs: the poster's, the poller's */
	struct vlib_slot slot[VRDMA_TEAM_DEPTH];	/* by counter */
};

/* CONN_FROM / CONN_REQUEST for a listener handle no listener has yet:
 * they may come in the same batch of events as LISTEN's CMD_DONE, before
 * vrdma_listen() learnt its handle and linked the listener.  Kept in
 * arrival order; vrdma_listen() replays its own. */
#define VLIB_LIS_EARLY		16
struct vlib_lis_early {
	struct vrdma_evt e;
	uint64_t seq;			/* arrival, 0 = free */
};

/* EVT_TEAMs for handles no team has (yet): the one that follows a join's
 * CMD_DONE may be taken in before the joiner learnt its handle. */
#define VLIB_TEAM_EARLY		8
struct vlib_team_early {
	uint32_t handle;
	uint16_t status;
	bool used;
};

/* A CQE of a team's OP_COLL as vrdma_poll_cq() returns it on the team's
 * own CQ: no verbs opcode, only the team code polls that CQ.  qp_num is
 * the team's handle, wr_id the OP_COLL's seq. */
#define VLIB_WC_COLL	((enum vrdma_wc_opcode)0x40)

/*
 * The device side of a team dom0 runs, for coll/offload.c.  Reached
 * through the device (dev->team_ops), not by name: the team code is
 * also built outside libvrdma.so (tests/coll.mk builds it again against
 * the library), and it must call this library's own, which no symbol
 * of the library's ABI names.  Every call returns 0 or -errno.
 */
struct vlib_team_ops {
	/* TEAM_JOIN (@j's key, size, rank, list, flags; pd and cq are
	 * filled in from @pd and @cq): *out is the joined team. */
	int (*join)(struct vrdma_pd *pd, struct vrdma_cq *cq,
		    const struct vrdma_cmd_team_join *j, struct vlib_team **out);
	/* Its EVT_TEAM, up to @timeout_ms: 0 dom0 runs it, -ENOENT the
	 * members run it, -EPROTO they disagree, -ETIMEDOUT, other -errno. */
	int (*ready)(struct vlib_team *t, int timeout_ms);
	/* TEAM_LEAVE; the record is freed whatever dom0 answers. */
	int (*leave)(struct vlib_team *t);
	/* @n OP_COLLs (seq, ranges), one notification: -ENOSPC past
	 * VRDMA_TEAM_DEPTH not completed; what went before an error is
	 * posted. */
	int (*post)(struct vlib_team *t, const struct vrdma_coll_wr *w, unsigned n);
};

struct vrdma_device {
	struct vfe_dev fe;
	int wait_policy;		/* enum vrdma_wait_policy, never AUTO */
	pthread_mutex_t obj_lock;
	struct vlib_buf *bufs;
	struct vlib_pd *pds;
	struct vlib_mr *mrs;
	struct vlib_cq *cqs;
	struct vlib_qp *qps[VLIB_QP_HASH];	/* chained by next */
	struct vrdma_listener *listeners;
	struct vlib_lis_early lis_early[VLIB_LIS_EARLY];	/* (evt_lock) */
	uint64_t lis_early_seq;
	struct vlib_srq *srqs;
	struct vlib_ah *ahs;		/* every AH, live or destroyed (ah.c) */
	pthread_mutex_t pin_lock;	/* pins; held across a pin's attach */
	struct vlib_pin *pins;
	struct vlib_team *teams;	/* joined (obj_lock) */
	struct vlib_team_early early[VLIB_TEAM_EARLY];	/* (obj_lock) */
	unsigned early_next;
	const struct vlib_team_ops *team_ops;	/* team_dev.c's */

	/* asynchronous events (async.c; aq_lock is a leaf) */
	pthread_mutex_t aq_lock;
	struct vrdma_async_event aq[VLIB_AQ_SIZE];
	unsigned aq_head, aq_count;
	uint64_t aq_dropped;		/* the queue was full */
	int aq_fatal;			/* atomic: DEVICE_FATAL was queued */
	int aq_fd;			/* eventfd: readable while aq_count */
};

/* An AH's memory lives until vrdma_close(): a destroyed one is told
 * apart by `live` (a WR naming it is refused), and reused. */
struct vlib_ah {
	struct vrdma_ah pub;
	struct vlib_ah *next;
	int live;			/* atomic */
};

static inline struct vlib_ah *vlib_ah(struct vrdma_ah *ah)
{
	return vlib_container_of(ah, struct vlib_ah, pub);
}

static inline struct vlib_qp *vlib_qp(struct vrdma_qp *qp)
{
	return vlib_container_of(qp, struct vlib_qp, pub);
}

static inline struct vlib_cq *vlib_cq(struct vrdma_cq *cq)
{
	return vlib_container_of(cq, struct vlib_cq, pub);
}

static inline struct vlib_pd *vlib_pd(struct vrdma_pd *pd)
{
	return vlib_container_of(pd, struct vlib_pd, pub);
}

static inline struct vlib_srq *vlib_srq(struct vrdma_srq *srq)
{
	return vlib_container_of(srq, struct vlib_srq, pub);
}

static inline struct vlib_mr *vlib_mr(struct vrdma_mr *mr)
{
	return vlib_container_of(mr, struct vlib_mr, pub);
}

/* A field of the program's memory read exactly once (another thread may
 * be writing it): the value checked is the value used.  A plain read may
 * be repeated by the compiler (GCC 12 read an SGE's length twice: once
 * merged with lkey for the ring entry, once for the slot). */
#define VLIB_ONCE(x)	__atomic_load_n(&(x), __ATOMIC_RELAXED)

/* Public edge: -errno inside, positive errno (or NULL + errno) outside. */
static inline int vlib_ret(int rc)
{
	return rc < 0 ? -rc : rc;
}

static inline struct vlib_qp **vlib_qp_bucket(struct vrdma_device *dev, uint32_t handle)
{
	return &dev->qps[handle & (VLIB_QP_HASH - 1)];
}

/* device.c: a destroy command for an object; 0 when the local object may
 * go (done, or the device is broken or dom0 did not answer, or forced). */
int  vlib_destroy_cmd(struct vrdma_device *dev, uint8_t opcode, uint32_t handle,
		      bool force);
/* Constructors: EIO at once on a broken device (NULL + errno). */
bool vlib_broken(struct vrdma_device *dev);

/* ah.c: a UD send WR's destination into w (0 or -EINVAL) */
int  vlib_send_ud(const struct vlib_qp *q, const struct vrdma_send_wr *wr,
		  struct vrdma_wr *w, uint32_t opc);

/* mem.c */
int  vlib_buf_alloc(struct vrdma_device *dev, uint32_t npages, bool internal,
		    struct vlib_buf **out);
int  vlib_buf_attach(struct vrdma_device *dev, const uint32_t *refs, uint32_t npages,
		     uint32_t *handle);
int  vlib_buf_free(struct vrdma_device *dev, struct vlib_buf *b, bool force);
int  vlib_dereg_mr(struct vlib_mr *m, bool force);
int  vlib_dealloc_pd(struct vlib_pd *p, bool force);

/* pin.c */
int  vlib_pin_buf(struct vrdma_device *dev, void *addr, size_t len,
		  struct vlib_buf **out);
void vlib_pin_buf_free(struct vrdma_device *dev, struct vlib_buf *b);
void vlib_pin_close(struct vrdma_device *dev);	/* every pin back in place */

/* async.c */
int  vlib_async_init(struct vrdma_device *dev);
void vlib_async_fini(struct vrdma_device *dev);
void vlib_async_push(struct vrdma_device *dev, enum vrdma_event_type type, void *obj);
void vlib_async_forget(struct vrdma_device *dev, const void *obj);
void vlib_async_broken(void *arg);
/* Cheap enough for an empty poll (inline: it is most of one): has dom0
 * posted events?  vlib_async_pump() consumes them if so. */
static inline bool vlib_async_pending(const struct vrdma_device *dev)
{
	const struct vrdma_ring_ctl *r = &dev->fe.sring->evt;

	return vring_load_acq(&r->prod) != vring_load_acq(&r->cons);
}

static inline void vlib_async_pump(struct vrdma_device *dev)
{
	if (vlib_async_pending(dev))
		vfe_poll_events(&dev->fe);
}

/* cq.c */
int  vlib_destroy_cq(struct vlib_cq *c, bool force);
int  vlib_cq_event(struct vrdma_device *dev, const struct vrdma_evt *e);
int  vlib_cq_gone_prepare(struct vlib_cq *c);
void vlib_cq_forget_qp(struct vlib_cq *c, struct vlib_qp *q);

/* qp.c */
struct vlib_qp *vlib_qp_find(struct vrdma_device *dev, uint32_t handle);
void vlib_qp_free(struct vlib_qp *q);
int  vlib_destroy_qp(struct vlib_qp *q, bool force);
int  vlib_qp_event(struct vrdma_device *dev, const struct vrdma_evt *e);
void vlib_qp_to_err(struct vlib_qp *q);

/* post.c */
int  vlib_sges(struct vrdma_req *r, struct vrdma_sge_ext *x, uint32_t *nx,
	       const struct vrdma_sge *sg, int num_sge, uint32_t max_sge, uint32_t *total);

/* srq.c */
int  vlib_srq_retire(struct vlib_srq *s, const struct vrdma_cqe *e);
struct vlib_srq *vlib_srq_find(struct vrdma_device *dev, uint32_t handle);
void vlib_srq_free(struct vlib_srq *s);

/* team_dev.c */
extern const struct vlib_team_ops vlib_team_dev_ops;
int  vlib_team_event(struct vrdma_device *dev, const struct vrdma_evt *e);
int  vlib_team_cqe(struct vlib_cq *c, const struct vrdma_cqe *e);

/* cm.c */
int  vlib_listener_event(struct vrdma_device *dev, const struct vrdma_evt *e);
int  vlib_listener_from(struct vrdma_device *dev, const struct vrdma_evt *e);
int  vlib_close_listener(struct vrdma_listener *l, bool force);

/* trace.c: the per-hop latency trace (env VRDMA_LAT_TRACE).  A site
 * tests vlib_lt_on() and calls the cold stamp.  A plain load, which GCC
 * folds into a compare with memory (an atomic one costs vrdma_post_send
 * an instruction more): `on` is set before vrdma_open returns a device
 * and only ever cleared after, when the trace fills. */
enum vlib_lt_kind { VLIB_LT_POST, VLIB_LT_BELL, VLIB_LT_RECV, VLIB_LT_CQE, VLIB_LT_NKINDS };
extern struct vlt vlib_lt_trace __attribute__((visibility("hidden")));
static inline bool vlib_lt_on(void)
{
	return vfe_unlikely(vlib_lt_trace.on);
}
void vlib_lt_open(void);		/* vrdma_open: env read once, a device more */
void vlib_lt_close(void);		/* vrdma_close: the last one writes the stamps */
void vlib_lt_put(unsigned kind, uint32_t qpn, uint64_t id, uint32_t aux)
	__attribute__((cold));
void vlib_lt_cqes(const struct vrdma_wc *wc, int n) __attribute__((cold));
int  vlib_lt_setup(void);		/* the env, then armed (tests call it) */
int  vlib_lt_flush(bool at_exit);	/* stamps not written yet: written */

/* Copy a name into a wire field; -EINVAL if longer than VRDMA_MAX_NAME. */
int  vlib_name(char dst[VRDMA_NAME_MAX], const char *src);

#endif /* VRDMA_VLIB_H */
