/* SPDX-License-Identifier: MIT */
/*
 * vrdma's libibverbs.so.1: the verbs ABI of the installed
 * <infiniband/verbs.h> (rdma-core) over libvrdma.  Internal header.
 *
 * Objects wrap their libvrdma twin; the verbs struct comes first so the
 * pointer handed to the program converts back with vvb_container_of.
 * Errors inside are 0 or a positive errno value, as both APIs use.
 *
 * Locks: vvb_context.lock guards the list of CQs with a channel and
 * their channels' counts; a CQ's vvb_cqev.lock (chan.c) its polls, arms
 * and the completions an arm set aside; vvb_qp.sq_lock (a vvb_lock: on
 * every post) serialises posting, the inline slots and the wr_* batch;
 * vvb_qp.rq_lock and vvb_srq.lock the receive scratch.  libvrdma
 * serialises its own objects.
 */
#ifndef VVB_H
#define VVB_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "vrdma/vrdma.h"

#define vvb_container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))
#define vvb_likely(x)		__builtin_expect(!!(x), 1)
#define vvb_unlikely(x)		__builtin_expect(!!(x), 0)

/* An ibv_sge is a vrdma_sge: a send WR's list goes to libvrdma as it is. */
_Static_assert(sizeof(struct ibv_sge) == sizeof(struct vrdma_sge) &&
	       offsetof(struct ibv_sge, addr) == offsetof(struct vrdma_sge, addr) &&
	       offsetof(struct ibv_sge, length) == offsetof(struct vrdma_sge, length) &&
	       offsetof(struct ibv_sge, lkey) == offsetof(struct vrdma_sge, lkey) &&
	       sizeof(((struct ibv_sge *)0)->addr) == sizeof(((struct vrdma_sge *)0)->addr) &&
	       sizeof(((struct ibv_sge *)0)->length) == sizeof(((struct vrdma_sge *)0)->length) &&
	       sizeof(((struct ibv_sge *)0)->lkey) == sizeof(((struct vrdma_sge *)0)->lkey),
	       "struct ibv_sge and struct vrdma_sge have one layout");

/*
 * The QP's send lock, taken on every post: one atomic instruction each
 * way when uncontended (a pthread mutex costs ~55 instructions a
 * lock/unlock pair), a futex sleep when not: a wr_* batch holds it from
 * ibv_wr_start to ibv_wr_complete, so waiters must sleep, not spin.  Not
 * recursive.  States (Drepper, "Futexes Are Tricky"): 0 free, 1 held,
 * 2 held and somebody may sleep on it.
 */
struct vvb_lock {
	int v;
};

void vvb_lock_wait(struct vvb_lock *l);	/* lock.c: contended */
void vvb_lock_wake(struct vvb_lock *l);	/* lock.c: wake one sleeper */

static inline void vvb_lock(struct vvb_lock *l)
{
	int c = 0;

	if (vvb_unlikely(!__atomic_compare_exchange_n(&l->v, &c, 1, 0, __ATOMIC_ACQUIRE,
						      __ATOMIC_RELAXED)))
		vvb_lock_wait(l);
}

static inline void vvb_unlock(struct vvb_lock *l)
{
	if (vvb_unlikely(__atomic_exchange_n(&l->v, 0, __ATOMIC_RELEASE) == 2))
		vvb_lock_wake(l);
}

#define VVB_DEV_NAME		"vrdma0"
/* its dev_name: /dev/infiniband/<this> (sysfs.c), apart from the kernel's
 * uverbsN so that a real device's node is never ours */
#define VVB_UVERBS_NAME		"uverbs-" VVB_DEV_NAME
#define VVB_PORT		1
#define VVB_MAX_INLINE		512	/* bytes per inline send */
#define VVB_CQ_MIN		1024	/* libvrdma CQ entries at least */
#define VVB_CQ_FACTOR		4	/* ... or requested cqe times this */
#define VVB_OPEN_MS		10000	/* vrdma_open() handshake limit */
#define VVB_PROBE_MS		VVB_OPEN_MS	/* the same, for ibv_get_device_list() */
#define VVB_SLICE_MS		20	/* a waiter's sleep: destroy waits one */
#define VVB_POLL_SPIN		64	/* empty polls before yielding/sleeping */
#define VVB_POLL_SPIN_CPU	8	/* ... with VRDMA_WAIT=cpu, then sleep */
#define VVB_POLL_SLEEP_MS	1	/* longest sleep of an empty poll */
#define VVB_WC_BATCH		32	/* completions a libvrdma poll takes */

/* enum ibv_gid_type_sysfs of rdma-core's driver.h (not installed). */
#define VVB_GID_TYPE_SYSFS_ROCE_V2	1

struct vvb_cq;

struct vvb_context {
	struct verbs_context vctx;		/* ibv_context is its last field */
	struct vrdma_device *vdev;
	uint8_t gid[VRDMA_GID_LEN];
	struct vrdma_device_attr dattr;

	/* CQs with a completion channel, whose waiters close stops (lock) */
	pthread_mutex_t lock;
	struct vvb_cq *cqs;
};

struct vvb_cqev;

struct vvb_cq {
	struct ibv_cq ibcq;
	struct vvb_context *ctx;
	struct vrdma_cq *vcq;
	struct vvb_cqev *ev;			/* its channel's side (chan.c), or NULL */
	struct vvb_cq *next;			/* ctx->cqs (ctx->lock) */
	/* ibv_poll_cq's idle rule (atomics): empty polls in a row, and
	 * signaled send WRs posted and not polled yet (an estimate) */
	unsigned int empty;
	long due;
	/* empty polls before the idle rule acts, by the device's wait policy
	 * (VRDMA_WAIT, fixed when it opened: nothing here changes it) */
	unsigned int spin;
	unsigned int events;			/* async events taken, not acked */
};

struct vvb_mr {
	struct ibv_mr ibmr;
	struct vrdma_mr *vmr;
};

struct vvb_pd {
	struct ibv_pd ibpd;
	struct vrdma_pd *vpd;
};

/* An address handle: libvrdma's, behind the ibv_ah the program holds. */
struct vvb_ah {
	struct ibv_ah ibah;
	struct vrdma_ah *vah;
};

struct vvb_srq {
	struct ibv_srq ibsrq;
	struct vrdma_srq *vsrq;
	uint32_t max_wr, max_sge;		/* as granted */
	pthread_mutex_t lock;			/* the receive scratch */
	struct vrdma_recv_wr *rwr;		/* max_wr */
	struct vrdma_sge *rsge;			/* max_wr * max_sge */
};

struct vvb_qp {
	struct ibv_qp_ex qpx;			/* qpx.qp_base is the ibv_qp */
	struct vvb_context *ctx;
	struct vrdma_qp *vqp;
	struct ibv_qp_cap cap;			/* as granted to the program */
	uint32_t sq_depth;			/* libvrdma max_send_wr */
	int sq_sig_all;
	int ud;					/* IBV_QPT_UD */
	struct ibv_qp_attr attr;		/* what modify set, for query */

	struct vvb_lock sq_lock;
	uint64_t sq_count;			/* send WRs posted so far */
	/* inline bounce: 2 * sq_depth slots of slot_size bytes, registered;
	 * slot (sq_count + i) % (2 * sq_depth) belongs to the i-th WR posted
	 * next (i < sq_depth: a chain goes sq_depth at a time).  The data
	 * goes in before libvrdma says whether the send queue has room, and
	 * libvrdma retires send WRs in order and holds at most sq_depth: so
	 * the WR that used the slot before, 2 * sq_depth back, is retired
	 * even when this one is refused (ENOMEM: the queue full). */
	uint8_t *ibuf;
	uint32_t slot_size;
	struct vrdma_mr *imr;
	/* scratch for converting a chain, or the wr_* batch (sq_lock); a
	 * posted WR's SGEs are the program's own, but for inline data (one
	 * SGE, ssge[i]) */
	struct vrdma_send_wr *swr;
	struct vrdma_sge *ssge;			/* sq_depth * max_send_sge */
	uint32_t nbatch;			/* WRs in the wr_* batch */
	int batch_err;

	/* receives: the QP's own (rq_lock), or its SRQ's (srq, no rwr) */
	unsigned int events;			/* async events taken, not acked */
	struct vvb_srq *srq;
	pthread_mutex_t rq_lock;
	struct vrdma_recv_wr *rwr;
	struct vrdma_sge *rsge;
	uint32_t rq_depth;
};

/* device.c: a destroy waits for the async events the program took on
 * the object and holds off ibv_get_async_event until vrdma forgot the
 * object's queued ones (lock ... unlock around the libvrdma destroy). */
void vvb_events_lock_idle(const unsigned int *taken);
void vvb_events_unlock(void);

static inline struct vvb_ah *vvb_ah(struct ibv_ah *ah)
{
	return vvb_container_of(ah, struct vvb_ah, ibah);
}

static inline struct vvb_context *vvb_ctx(struct ibv_context *c)
{
	return vvb_container_of(c, struct vvb_context, vctx.context);
}

static inline struct vvb_cq *vvb_cq(struct ibv_cq *cq)
{
	return vvb_container_of(cq, struct vvb_cq, ibcq);
}

static inline struct vvb_pd *vvb_pd(struct ibv_pd *pd)
{
	return vvb_container_of(pd, struct vvb_pd, ibpd);
}

static inline struct vvb_qp *vvb_qp(struct ibv_qp *qp)
{
	return vvb_container_of(qp, struct vvb_qp, qpx.qp_base);
}

static inline struct vvb_srq *vvb_srq(struct ibv_srq *srq)
{
	return vvb_container_of(srq, struct vvb_srq, ibsrq);
}

static inline uint32_t vvb_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* Exported by libibverbs but declared only in rdma-core's private headers. */
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);

/* device.c */
void vvb_device_attr(const struct vrdma_device_attr *d,
		     const uint8_t gid[VRDMA_GID_LEN], struct ibv_device_attr *a);
void vvb_port_attr(const struct vrdma_device_attr *d, struct ibv_port_attr *a);
/*
 * Port active_mtu: the largest IB MTU whose bytes a UD payload of
 * max_ud_msg (vrdma_device_attr) holds, what programs size datagrams by
 * (ibv_ud_pingpong, UCX, libfabric).  4096 between guests of a node;
 * through rxe over 1500-byte Ethernet 992 after vrdmad's header: 512.
 * 0 (a libvrdma before max_ud_msg): 4096.
 */
static inline enum ibv_mtu vvb_ud_mtu(uint32_t max_ud_msg)
{
	enum ibv_mtu m = IBV_MTU_4096;

	while (max_ud_msg && m > IBV_MTU_256 && (128u << m) > max_ud_msg)
		m--;
	return m;
}
int vvb_query_device_ex(struct ibv_context *c,
			const struct ibv_query_device_ex_input *input,
			struct ibv_device_attr_ex *attr, size_t attr_size);
int vvb_query_port(struct ibv_context *c, uint8_t port,
		   struct ibv_port_attr *attr, size_t attr_len);
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, int *type);

/* cq.c */
int vvb_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
/* n completions into the program's array, the due count settled */
void vvb_wc_batch(struct vvb_cq *cq, struct ibv_wc *wc, const struct vrdma_wc *v, int n);
int vvb_poll_none(struct vvb_cq *cq);	/* an empty poll's idle rule: 0 */

/* chan.c: completion channels (the CQ's side of one: cq->ev) */
int vvb_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int vvb_poll_ev(struct vvb_cq *cq, int n, struct ibv_wc *wc);
int vvb_ev_create(struct vvb_cq *cq);	/* ibv_create_cq with a channel */
void vvb_ev_stop(struct vvb_cq *cq);	/* before vrdma_destroy_cq ... */
void vvb_ev_resume(struct vvb_cq *cq);	/* ... if that failed */
void vvb_ev_free(struct vvb_cq *cq);	/* ... if it worked */
void vvb_ev_forget_qp(struct ibv_cq *cq, uint32_t qp_num);	/* a QP destroyed */
void vvb_waiters_stop(struct vvb_context *ctx);	/* ibv_close_device */

/* Signaled send WRs just posted on a QP whose send CQ is cq. */
static inline void vvb_cq_due(struct vvb_cq *cq, long n)
{
	if (n)
		__atomic_add_fetch(&cq->due, n, __ATOMIC_RELAXED);
}

/* qp.c */
struct ibv_qp *vvb_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *ia);

/* post.c */
int vvb_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int vvb_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
typedef int vvb_recv_post_fn(void *obj, struct vrdma_recv_wr *wr, struct vrdma_recv_wr **bad);
int vvb_recv_chain(struct ibv_recv_wr *wr, struct ibv_recv_wr **bad,
		   struct vrdma_recv_wr *rwr, struct vrdma_sge *rsge, uint32_t max,
		   uint32_t max_sge, vvb_recv_post_fn *post, void *obj);
int vvb_map_access(unsigned int ibv_access, int *vaccess);
int vvb_sq_post(struct vvb_qp *q, uint32_t n, uint32_t *posted);
uint8_t *vvb_inline_slot(struct vvb_qp *q, uint32_t i);

/* sysfs.c: the device's files in the sysfs view, and its paths in @dev */
void vvb_sysfs_device(struct vrdma_device *d, struct ibv_device *dev);

/* srq.c */
struct ibv_srq *vvb_create_srq_ex(struct ibv_context *c, struct ibv_srq_init_attr_ex *ia);
int vvb_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

/* wr.c */
void vvb_wr_init(struct vvb_qp *q);

#endif /* VVB_H */
