/* SPDX-License-Identifier: MIT */
/*
 * libvrdma: the guest's RDMA API.  Object model and semantics follow
 * libibverbs (ibv_*) so that a verbs-compatible layer can sit on top:
 * device -> protection domain -> memory regions, completion queues,
 * reliable-connected queue pairs; work requests are posted, completions
 * polled.  Connection setup is by (node, service) names, as rdma_cm.
 *
 * Errors: calls returning int return 0 or a positive errno value (as
 * ibv_post_send); constructors return NULL and set errno.  Every blocking
 * call takes a timeout in milliseconds (>= 0; there is no "forever").
 * A device is broken when dom0 disabled it, went away or wrote nonsense:
 * from then on calls fail with EIO (constructors before any other check),
 * destroy calls just free the object.  A waiting call notices a backend
 * that closed the device without waiting for a command timeout.
 *
 * Memory: any memory of the process can be registered.  Memory from
 * vrdma_alloc_buf() is shared with dom0 already; other memory (malloc,
 * mmap) is moved in place onto shareable pages by vrdma_reg_mr() and back
 * when its last MR goes (vrdma_reg_mr(3) has the rules).
 *
 * Threads: one device may be used from several threads; posting and
 * polling are serialised per QP / CQ by the library.
 *
 * Each call has a man page: vrdma_open(3), vrdma_post_send(3), ...
 */
#ifndef VRDMA_VRDMA_H
#define VRDMA_VRDMA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VRDMA_API_VERSION	1
#define VRDMA_MAX_SGE_PER_WR	16	/* the most a device may allow: see max_sge
					 * (1.0.0 said 4: its programs are told 4) */
#define VRDMA_MAX_PRIVATE_DATA	32
#define VRDMA_MAX_NAME		31	/* node and service names */

/* ---- enums ---- */

enum vrdma_access_flags {
	VRDMA_ACCESS_LOCAL_WRITE	= 1 << 0,
	VRDMA_ACCESS_REMOTE_WRITE	= 1 << 1,
	VRDMA_ACCESS_REMOTE_READ	= 1 << 2,
	VRDMA_ACCESS_REMOTE_ATOMIC	= 1 << 3,
};

enum vrdma_wr_opcode {
	VRDMA_WR_SEND,
	VRDMA_WR_SEND_WITH_IMM,
	VRDMA_WR_RDMA_WRITE,
	VRDMA_WR_RDMA_WRITE_WITH_IMM,
	VRDMA_WR_RDMA_READ,
	VRDMA_WR_ATOMIC_CMP_AND_SWP,
	VRDMA_WR_ATOMIC_FETCH_AND_ADD,
};

enum vrdma_send_flags {
	VRDMA_SEND_SIGNALED	= 1 << 0,	/* completion on success too */
	VRDMA_SEND_FENCE	= 1 << 1,
};

enum vrdma_wc_opcode {
	VRDMA_WC_SEND_OP,
	VRDMA_WC_RDMA_WRITE_OP,
	VRDMA_WC_RDMA_READ_OP,
	VRDMA_WC_COMP_SWAP_OP,
	VRDMA_WC_FETCH_ADD_OP,
	VRDMA_WC_RECV_OP,
	VRDMA_WC_RECV_RDMA_WITH_IMM_OP,
};

enum vrdma_wc_status {
	VRDMA_WC_SUCCESS,
	VRDMA_WC_LOC_LEN_ERR,
	VRDMA_WC_LOC_QP_OP_ERR,
	VRDMA_WC_LOC_PROT_ERR,
	VRDMA_WC_WR_FLUSH_ERR,
	VRDMA_WC_REM_INV_REQ_ERR,
	VRDMA_WC_REM_ACCESS_ERR,
	VRDMA_WC_REM_OP_ERR,
	VRDMA_WC_RETRY_EXC_ERR,
	VRDMA_WC_RNR_RETRY_EXC_ERR,
	VRDMA_WC_FATAL_ERR,
	VRDMA_WC_GENERAL_ERR,		/* kept for ABI; an invalid CQE from dom0
					 * fails vrdma_poll_cq() with EIO */
};

enum vrdma_wc_flags {
	VRDMA_WC_WITH_IMM	= 1 << 0,
	VRDMA_WC_GRH		= 1 << 1,	/* UD receive: the buffer starts
						 * with the 40-byte GRH */
};

/* vrdma_qp_init_attr.qp_type (0, what a zeroed attr says, is RC). */
enum vrdma_qp_type {
	VRDMA_QPT_RC = 0,		/* reliable connected */
	VRDMA_QPT_UD = 1,		/* unreliable datagram, this node only */
};

#define VRDMA_UD_MTU		4096	/* a UD datagram's payload, at most */
#define VRDMA_GRH_LEN		40	/* before it in the receive buffer */

enum vrdma_qp_state {
	VRDMA_QPS_RESET,		/* created, not connected */
	VRDMA_QPS_CONNECTING,		/* vrdma_connect() under way */
	VRDMA_QPS_RTS,			/* connected */
	VRDMA_QPS_ERR,
	VRDMA_QPS_INIT,			/* vrdma_modify_qp(): verbs states */
	VRDMA_QPS_RTR,
};

/* vrdma_modify_qp() attribute mask (the fields of struct vrdma_qp_attr). */
enum vrdma_qp_attr_mask {
	VRDMA_QP_STATE		= 1 << 0,
	VRDMA_QP_ACCESS_FLAGS	= 1 << 1,
	VRDMA_QP_DEST		= 1 << 2,	/* dest_gid and dest_qp_num */
	VRDMA_QP_RQ_PSN		= 1 << 3,
	VRDMA_QP_SQ_PSN		= 1 << 4,
	VRDMA_QP_QKEY		= 1 << 5,	/* UD: qkey */
};

#define VRDMA_GID_LEN		16

/* ---- attribute and work structs ---- */

struct vrdma_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct vrdma_send_wr {
	uint64_t wr_id;
	struct vrdma_send_wr *next;
	struct vrdma_sge *sg_list;
	int num_sge;
	enum vrdma_wr_opcode opcode;
	unsigned int send_flags;	/* enum vrdma_send_flags */
	uint32_t imm_data;		/* network byte order, as in verbs */
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		struct {		/* UD QPs: SEND, SEND_WITH_IMM */
			struct vrdma_ah *ah;	/* vrdma_create_ah() */
			uint32_t remote_qpn;
			uint32_t remote_qkey;	/* high bit set: the QP's own */
		} ud;
	} wr;
};

struct vrdma_recv_wr {
	uint64_t wr_id;
	struct vrdma_recv_wr *next;
	struct vrdma_sge *sg_list;
	int num_sge;
};

struct vrdma_wc {
	uint64_t wr_id;
	enum vrdma_wc_status status;
	enum vrdma_wc_opcode opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data;		/* network byte order */
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned int wc_flags;		/* enum vrdma_wc_flags */
};

struct vrdma_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
};

struct vrdma_qp_init_attr {
	void *qp_context;
	struct vrdma_cq *send_cq;
	struct vrdma_cq *recv_cq;
	struct vrdma_qp_cap cap;
	int sq_sig_all;			/* every send WR signaled */
	uint32_t qp_type;		/* enum vrdma_qp_type (0 = RC); in what
					 * was padding: a program built against
					 * 1.0.0 binds vrdma_create_qp@VRDMA_1.0,
					 * which makes RC QPs and never reads it */
};

struct vrdma_srq_init_attr {
	void *srq_context;
	uint32_t max_wr;		/* 1..4096 receives outstanding */
	uint32_t max_sge;		/* 1..the device's max_sge */
};

/*
 * Connecting the verbs way (vrdma_modify_qp): RESET -> INIT -> RTR (with
 * the peer's GID and QP number, learnt out of band) -> RTS.  A QP's name
 * is (vrdma_query_gid() of its device, qp_num); dom0 decides how the peer
 * is reached.  PSNs are kept and reported, vrdma moves no packets.
 */
struct vrdma_qp_attr {
	enum vrdma_qp_state qp_state;
	unsigned int qp_access_flags;	/* enum vrdma_access_flags (remote ones) */
	uint8_t dest_gid[VRDMA_GID_LEN];
	uint32_t dest_qp_num;
	uint32_t rq_psn;		/* 24 bits */
	uint32_t sq_psn;		/* 24 bits */
	struct vrdma_qp_cap cap;	/* vrdma_query_qp() only */
	uint32_t qkey;			/* UD QPs only: vrdma_query_qp() writes
					 * it for a UD QP alone, so a program
					 * built before it existed is safe */
};

/* vrdma_query_device(): the backend's limits for this device. */
struct vrdma_device_attr {
	uint32_t max_qp;
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_cq;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint32_t max_pd;
	uint32_t max_qp_rd_atom;	/* READs/atomics outstanding per QP */
	uint64_t max_mr_size;
	uint32_t max_ud_msg;		/* UD payload to any destination, at most
					 * (256..VRDMA_UD_MTU): VRDMA_UD_MTU, or
					 * less when datagrams to other nodes go
					 * through an RDMA device of a smaller MTU */
	uint32_t reserved32;
	uint64_t reserved[3];
};

/* How a waiter spends its CPU before it sleeps (vrdma_set_wait_policy). */
enum vrdma_wait_policy {
	VRDMA_WAIT_AUTO = 0,		/* LATENCY on 4 or more CPUs, else THROUGHPUT */
	VRDMA_WAIT_LATENCY,		/* spin 50 us on the rings, then sleep */
	VRDMA_WAIT_THROUGHPUT,		/* sleep at once: dom0 keeps the CPU */
	VRDMA_WAIT_CPU,			/* sleep at once, and poll loops give up
					 * the CPU sooner (the verbs library) */
};

/* Asynchronous events (vrdma_get_async_event), verbs' affiliated and
 * unaffiliated events that vrdma can raise. */
enum vrdma_event_type {
	VRDMA_EVENT_QP_FATAL = 1,	/* qp went to error outside a completion
					 * (its CQ overran) */
	VRDMA_EVENT_QP_LAST_WQE_REACHED,	/* qp on an SRQ is in error: no
						 * more of the SRQ's receives */
	VRDMA_EVENT_CQ_ERR,		/* cq overran: completions were lost */
	VRDMA_EVENT_DEVICE_FATAL,	/* dom0 is gone: calls fail with EIO */
};

struct vrdma_async_event {
	enum vrdma_event_type type;
	union {
		struct vrdma_qp *qp;	/* QP_FATAL, QP_LAST_WQE_REACHED */
		struct vrdma_cq *cq;	/* CQ_ERR */
	} element;			/* NULL for DEVICE_FATAL */
};

/* A connection request seen by a listener (rdma_cm's CONNECT_REQUEST). */
struct vrdma_conn_req {
	uint64_t id;
	uint32_t peer_qp_num;
	uint32_t private_data_len;
	uint8_t  private_data[VRDMA_MAX_PRIVATE_DATA];
};

/* ---- objects (fields public and read-only, as in verbs) ---- */

struct vrdma_device;
struct vrdma_listener;

struct vrdma_pd {
	struct vrdma_device *device;
	uint32_t handle;
};

struct vrdma_mr {
	struct vrdma_device *device;
	struct vrdma_pd *pd;
	void *addr;
	size_t length;
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
};

struct vrdma_cq {
	struct vrdma_device *device;
	void *cq_context;
	int cqe;			/* capacity */
	uint32_t handle;
};

struct vrdma_srq {
	struct vrdma_device *device;
	struct vrdma_pd *pd;
	void *srq_context;
	uint32_t handle;
	uint32_t max_wr;
	uint32_t max_sge;
};

/* An address handle: where a UD datagram goes (guest-side only). */
struct vrdma_ah {
	struct vrdma_device *device;
	struct vrdma_pd *pd;
	uint8_t dgid[VRDMA_GID_LEN];
};

struct vrdma_qp {
	struct vrdma_device *device;
	void *qp_context;
	struct vrdma_pd *pd;
	struct vrdma_cq *send_cq;
	struct vrdma_cq *recv_cq;
	uint32_t handle;
	uint32_t qp_num;
	enum vrdma_qp_state state;
};

/* ---- device ---- */

/*
 * vrdma_open - open the guest's vrdma device (connect handshake with dom0).
 * @spec: NULL or "" for the default platform; "host" or "xen" to force one
 *        (else env VRDMA_PLATFORM, then auto-detect).  On the plain host
 *        vrdmad is found through env VRDMA_RUN_DIR (default /run/vrdma).
 * @timeout_ms: limit for the whole handshake, >= 0.
 * Returns the device, or NULL with errno: EINVAL (bad spec or timeout),
 * ENOENT/ECONNREFUSED (no dom0 daemon), ETIMEDOUT (no answer in time),
 * ECONNREFUSED (backend closed the device), EPROTONOSUPPORT (platform not
 * available or protocol version mismatch), ENOMEM.
 */
struct vrdma_device *vrdma_open(const char *spec, int timeout_ms);

/*
 * vrdma_close - disconnect from dom0, which releases every object of the
 * device at once (no command per object), then free every object still
 * open on @dev (listeners, QPs, MRs, CQs, PDs, buffers) and @dev.
 * Waits at most about a second for dom0 to acknowledge.
 * Returns 0, or EINVAL if @dev is NULL.
 */
int vrdma_close(struct vrdma_device *dev);

/*
 * vrdma_node_name - the node name this device's dom0 answers to (for
 * vrdma_connect() from other nodes); "" if dom0 did not publish one.
 * NULL with errno EINVAL if @dev is NULL.
 */
const char *vrdma_node_name(const struct vrdma_device *dev);

/*
 * vrdma_query_gid - the GID that names this device's node: a peer puts it
 * in vrdma_qp_attr.dest_gid to reach a QP of this device.  It is the
 * node's RDMA-device GID when dom0 has one, else a link-local GID made
 * from the node name.  Returns 0, EINVAL (NULL argument).
 */
int vrdma_query_gid(struct vrdma_device *dev, uint8_t gid[VRDMA_GID_LEN]);

/*
 * vrdma_query_device - this device's limits (the backend's quotas).
 * Returns 0, EINVAL (NULL argument).
 */
int vrdma_query_device(struct vrdma_device *dev, struct vrdma_device_attr *attr);

/* ---- memory ---- */

/*
 * vrdma_alloc_buf - page-aligned, zeroed memory shared with dom0, the only
 * memory vrdma_reg_mr() accepts.  @length is rounded up to whole pages and
 * may be at most the device's max_mr_size (64 GiB; 64 MiB under an older
 * vrdmad); dom0 maps at most the VM's mem quota and 1 GiB more.
 * Returns the address, or NULL with errno: EINVAL (NULL @dev, @length 0 or
 * too large), ENOMEM, EIO (device broken), or a dom0 refusal (ENOMEM,
 * EFAULT).
 */
void *vrdma_alloc_buf(struct vrdma_device *dev, size_t length);

/*
 * vrdma_free_buf - release a buffer from vrdma_alloc_buf() (@addr must be
 * the address it returned).
 * Returns 0, EINVAL (NULL argument or not such a buffer), EBUSY (an MR
 * still covers part of it).
 */
int vrdma_free_buf(struct vrdma_device *dev, void *addr);

/*
 * vrdma_alloc_pd - allocate a protection domain.
 * NULL with errno: EINVAL (NULL @dev), ENOMEM, EIO (device broken).
 */
struct vrdma_pd *vrdma_alloc_pd(struct vrdma_device *dev);

/*
 * vrdma_dealloc_pd - returns 0, EINVAL (NULL) or EBUSY (MRs or QPs use
 * it).  On a broken device (EIO elsewhere) destroy calls just free the
 * object and return 0; this holds for every vrdma_dereg/destroy/free call.
 */
int vrdma_dealloc_pd(struct vrdma_pd *pd);

/*
 * vrdma_reg_mr - register [addr, addr+length).  @access: enum
 * vrdma_access_flags.  The MR's addresses are the guest's virtual
 * addresses (sge.addr, remote_addr).  Inside a vrdma_alloc_buf() buffer
 * this costs one command.  Any other readable private memory (malloc,
 * memalign, anonymous or private file mmap) is moved in place onto shared
 * pages first: same addresses, same contents, zero copy from then on; the
 * pages go back to private memory when the last MR over them is
 * deregistered or the device closes.  While that move runs, no other
 * thread may write the pages touched (the whole first and last page);
 * after fork() parent and child share those pages until then.
 * NULL with errno: EINVAL (NULL @pd or @addr, @length 0, unknown access
 * bits, more than max_mr_size), EFAULT (a hole, unreadable
 * or shared-file memory, the calling thread's stack, or a range crossing the end of a
 * vrdma_alloc_buf() buffer), ENOMEM, ENOSPC (no grants left: see
 * docs/verbs.md), EIO.
 */
struct vrdma_mr *vrdma_reg_mr(struct vrdma_pd *pd, void *addr, size_t length,
			      int access);

/* vrdma_dereg_mr - returns 0 or EINVAL (NULL). */
int vrdma_dereg_mr(struct vrdma_mr *mr);

/* ---- completion queues ---- */

/*
 * vrdma_create_cq - a completion queue for at least @cqe completions
 * (1..the device's max_cqe: 262144, or 16384 under a vrdmad older than
 * 1.1.0), rounded up to a power of two (the cqe field says how many).
 * As in verbs, the QPs using a CQ may together have more work outstanding
 * than it holds: size it for what the program leaves unpolled.  A
 * completion that finds it full overruns it: that one and every later one
 * are lost, its QPs go to VRDMA_QPS_ERR, and vrdma_get_async_event()
 * gives VRDMA_EVENT_CQ_ERR (and VRDMA_EVENT_QP_FATAL per QP); the guest's
 * other queues work on.  A destroyed QP's completions still in the CQ are
 * dropped by vrdma_poll_cq().
 * NULL with errno: EINVAL, ENOMEM, EIO.
 */
struct vrdma_cq *vrdma_create_cq(struct vrdma_device *dev, int cqe, void *cq_context);

/* vrdma_destroy_cq - returns 0, EINVAL (NULL), EBUSY (a QP still uses it). */
int vrdma_destroy_cq(struct vrdma_cq *cq);

/*
 * vrdma_poll_cq - take up to @num_entries completions into @wc.
 * Returns the number taken (0..num_entries), or -1 with errno EINVAL (NULL
 * @cq, negative @num_entries, NULL @wc) or EIO (device broken).  An
 * invalid completion from dom0 breaks the device and is never returned:
 * the valid ones before it are, and the next call fails with EIO (or this
 * one, if it took none).  An error completion moves its QP to
 * VRDMA_QPS_ERR, as in RC verbs.
 */
int vrdma_poll_cq(struct vrdma_cq *cq, int num_entries, struct vrdma_wc *wc);

/*
 * vrdma_wait_cq - block until the CQ has a completion: polls briefly, then
 * sleeps on the device's notification.  @timeout_ms >= 0.
 * Returns 0 (poll now), ETIMEDOUT, EINVAL, or EIO (device broken).
 */
int vrdma_wait_cq(struct vrdma_cq *cq, int timeout_ms);

/* ---- queue pairs (reliable connected) ---- */

/*
 * vrdma_create_qp - a reliable-connected QP in state VRDMA_QPS_RESET.
 * attr->cap: max_send_wr and max_recv_wr 1..4096, max_send_sge and
 * max_recv_sge 1..the device's max_sge (VRDMA_MAX_SGE_PER_WR or fewer:
 * vrdma_query_device()); send_cq and recv_cq of the same
 * device (they may be the same CQ, and as in verbs need not hold all the
 * QP's WRs: vrdma_create_cq()).  attr->sq_sig_all: every send WR is
 * signaled.  attr->qp_type VRDMA_QPT_UD makes an unreliable-datagram QP
 * (vrdma_modify_qp() with VRDMA_QP_QKEY, vrdma_create_ah()); zero the
 * attr: 0 is RC.  NULL with errno: EINVAL (NULL argument, caps out of
 * range, unknown qp_type, CQs of another device), EOPNOTSUPP (UD and a
 * dom0 without feature-ud), ENOMEM, EIO (device broken; checked first).
 */
struct vrdma_qp *vrdma_create_qp(struct vrdma_pd *pd, struct vrdma_qp_init_attr *attr);

/*
 * vrdma_create_qp_srq - vrdma_create_qp() for a QP whose receives come
 * from @srq (of the same device; NULL: as vrdma_create_qp()).  attr->cap's
 * max_recv_wr and max_recv_sge are then ignored, and vrdma_post_recv() on
 * the QP fails with EINVAL.  Errors as vrdma_create_qp().
 */
struct vrdma_qp *vrdma_create_qp_srq(struct vrdma_pd *pd, struct vrdma_qp_init_attr *attr,
				     struct vrdma_srq *srq);

/*
 * vrdma_destroy_qp - returns 0 or EINVAL (NULL).  Its completions still in
 * the CQs are discarded when polled and keep their room until then.
 */
int vrdma_destroy_qp(struct vrdma_qp *qp);

/*
 * vrdma_post_send - post a chain of send WRs (one notification to dom0 per
 * call).  The QP must be VRDMA_QPS_RTS, or VRDMA_QPS_ERR, where the WRs
 * complete with VRDMA_WC_WR_FLUSH_ERR (as verbs).  Unsignaled WRs complete silently
 * on success; their send-queue slots are freed by a later completion of
 * the same QP (so signal at least every max_send_wr-th WR).
 * Atomics need one 8-byte sge.  A UD QP's WRs are SEND or SEND_WITH_IMM
 * of at most VRDMA_UD_MTU bytes, to another node at most the device's
 * max_ud_msg (more completes VRDMA_WC_LOC_LEN_ERR)
 * naming wr.ud.ah (a live AH of the QP's PD), remote_qpn and remote_qkey;
 * the send completes with success whether the datagram was delivered or
 * dropped; a send error moves the QP to VRDMA_QPS_ERR (where IB has SQE).  Returns 0, or EINVAL (NULL argument, QP not
 * connected, bad opcode, flags, sge list or AH), ENOMEM (send queue full),
 * EAGAIN (dom0 did not drain the request ring for 2 s), EIO (device
 * broken).  On error *bad_wr names the first WR not posted; the WRs before
 * it were posted.
 */
int vrdma_post_send(struct vrdma_qp *qp, struct vrdma_send_wr *wr,
		    struct vrdma_send_wr **bad_wr);

/*
 * vrdma_post_recv - post a chain of receive WRs; allowed in any state (so
 * receives can be ready before connecting; in VRDMA_QPS_ERR they complete
 * with VRDMA_WC_WR_FLUSH_ERR).  Returns as vrdma_post_send() (ENOMEM:
 * receive queue full; EINVAL: a QP on an SRQ).
 */
int vrdma_post_recv(struct vrdma_qp *qp, struct vrdma_recv_wr *wr,
		    struct vrdma_recv_wr **bad_wr);

/*
 * vrdma_modify_qp - move @qp through the verbs states.  @mask says which
 * fields of @attr count (enum vrdma_qp_attr_mask); VRDMA_QP_STATE is
 * required.  Transitions: RESET -> INIT (ACCESS_FLAGS optional); INIT ->
 * INIT; INIT -> RTR (DEST required: the peer's GID and QP number; RQ_PSN
 * optional); RTR -> RTS (SQ_PSN optional); any state -> ERR (every
 * outstanding WR completes with VRDMA_WC_WR_FLUSH_ERR); RTS -> RTS.
 * A UD QP: RESET -> INIT (QKEY required), INIT -> INIT, INIT -> RTR,
 * RTR -> RTS (SQ_PSN optional), RTS -> RTS, each with QKEY optional; no
 * DEST; from RTR it takes datagrams for its qkey, from RTS it sends.  A
 * qkey with the high bit set (a controlled Q_Key) is EPERM.
 * After RTR the QP is bound to its peer: WRs posted before the peer's
 * RTR names this QP wait for it (at most about 10 s, then RETRY_EXC_ERR).
 * Returns 0, or EINVAL (NULL argument, unknown mask bits, missing field,
 * transition not listed, a QP that vrdma_connect() is using), EHOSTUNREACH
 * (dest_gid names a node dom0 cannot reach), EIO.
 */
int vrdma_modify_qp(struct vrdma_qp *qp, const struct vrdma_qp_attr *attr, int mask);

/*
 * vrdma_query_qp - the QP's state, capabilities and the attributes set by
 * vrdma_modify_qp() (dest_* and PSNs 0 for a QP connected by
 * vrdma_connect(), whose peer QP number is in dest_qp_num once
 * connected).  Returns 0 or EINVAL.
 */
int vrdma_query_qp(struct vrdma_qp *qp, struct vrdma_qp_attr *attr);

/* ---- unreliable datagrams ---- */

/*
 * vrdma_create_ah - an address handle in @pd for the node whose GID is
 * @dgid (vrdma_query_gid() of a device there), for UD send WRs
 * (vrdma_send_wr.wr.ud.ah) of QPs of @pd.  dom0 delivers datagrams to QPs
 * of its own node only; one for another node's GID is dropped.
 * NULL with errno: EINVAL (NULL argument), ENOMEM, EIO.
 */
struct vrdma_ah *vrdma_create_ah(struct vrdma_pd *pd, const uint8_t dgid[VRDMA_GID_LEN]);

/*
 * vrdma_destroy_ah - returns 0 or EINVAL (NULL, or destroyed already).  A
 * WR naming it afterwards fails to post with EINVAL (its memory is kept
 * for that until vrdma_close(), and reused by vrdma_create_ah()).
 */
int vrdma_destroy_ah(struct vrdma_ah *ah);

/* ---- shared receive queues ---- */

/*
 * vrdma_create_srq - a shared receive queue in @pd: receives that every QP
 * created with it (vrdma_create_qp_srq()) consumes, oldest first.  A CQ
 * that is the recv_cq of one of its QPs reserves attr->max_wr entries for
 * it, once per SRQ (see vrdma_create_cq()).  QPs on an SRQ connect to QPs
 * of the same node only.
 * NULL with errno: EINVAL (NULL argument, max_wr or max_sge out of range),
 * EOPNOTSUPP (dom0 without feature-srq), ENOMEM, EIO.
 */
struct vrdma_srq *vrdma_create_srq(struct vrdma_pd *pd, struct vrdma_srq_init_attr *attr);

/* vrdma_destroy_srq - returns 0, EINVAL (NULL), EBUSY (a QP uses it).
 * Receives still posted go without completions. */
int vrdma_destroy_srq(struct vrdma_srq *srq);

/*
 * vrdma_post_srq_recv - post a chain of receives to @srq.  Returns 0, or
 * EINVAL (NULL argument, bad sge list), ENOMEM (max_wr outstanding), EIO;
 * *bad_wr as vrdma_post_recv().  vrdma_post_recv() on a QP of an SRQ is
 * EINVAL.
 */
int vrdma_post_srq_recv(struct vrdma_srq *srq, struct vrdma_recv_wr *wr,
			struct vrdma_recv_wr **bad_wr);

/* ---- connections ---- */

/*
 * vrdma_connect - connect @qp (state RESET) to the service listening on
 * @node (NULL or "" = this node).  Names are at most VRDMA_MAX_NAME
 * characters.  @private_data (<= VRDMA_MAX_PRIVATE_DATA bytes) goes to the
 * listener; the acceptor's private data is copied to @peer_data, at most
 * *@peer_data_len bytes, and *@peer_data_len is set to the length copied
 * (both may be NULL).  Blocks up to @timeout_ms (>= 0).
 * Returns 0 (QP now VRDMA_QPS_RTS), EINVAL (NULL qp or service, names or
 * private data too long, QP not in RESET), ECONNREFUSED (nobody listens,
 * or rejected; the QP is back in RESET and may retry), EACCES (dom0's
 * connect policy refuses; "group/service" names another tenant group's
 * service, docs/tenants.md), EHOSTUNREACH (no
 * such node), ETIMEDOUT (no answer in time; the QP is then in ERR and
 * must be destroyed: the request may still be pending at the listener,
 * and destroying the QP withdraws it), ECONNRESET, EIO.
 */
int vrdma_connect(struct vrdma_qp *qp, const char *node, const char *service,
		  const void *private_data, size_t private_data_len,
		  void *peer_data, size_t *peer_data_len, int timeout_ms);

/*
 * vrdma_listen - accept connection requests for @service (1..VRDMA_MAX_NAME
 * characters, no '/') on this node, in this tenant group's namespace.  Up to 64 requests are queued; more are
 * dropped (the connecting side times out).
 * NULL with errno: EINVAL, EEXIST (name taken in this group), ENOMEM, EIO.
 */
struct vrdma_listener *vrdma_listen(struct vrdma_device *dev, const char *service);

/* vrdma_close_listener - returns 0 or EINVAL; pending requests are refused. */
int vrdma_close_listener(struct vrdma_listener *l);

/*
 * vrdma_get_request - wait up to @timeout_ms for the next connection
 * request.  Returns 0, ETIMEDOUT, EAGAIN (another thread took it), EINVAL,
 * EIO.
 */
int vrdma_get_request(struct vrdma_listener *l, struct vrdma_conn_req *req,
		      int timeout_ms);

/* Who sent a connection request, as dom0 vouches for it (issue 12). */
struct vrdma_conn_peer {
	char     node[VRDMA_MAX_NAME + 1];	/* its node's name; another node's
						 * RDMA address when remote */
	uint32_t domid;				/* its domain (plain host: the
						 * guest number vrdmactl shows) */
	uint32_t devid;				/* its device (0 when remote) */
};

/*
 * vrdma_get_request_peer - the sender of @req, a request this listener
 * returned lately (the last 128 are kept).  Returns 0, EINVAL, ENOENT
 * (not known: too old, or a dom0 that does not say).
 */
int vrdma_get_request_peer(struct vrdma_listener *l, const struct vrdma_conn_req *req,
			   struct vrdma_conn_peer *peer);

/*
 * vrdma_accept - connect @qp (state RESET, same device) to the requester,
 * sending @private_data (<= VRDMA_MAX_PRIVATE_DATA bytes).  On return 0 the
 * QP is VRDMA_QPS_RTS.  EINVAL (bad argument or QP state), ECONNABORTED
 * (the requester gave up or went away), EIO.
 */
int vrdma_accept(struct vrdma_listener *l, struct vrdma_qp *qp,
		 const struct vrdma_conn_req *req,
		 const void *private_data, size_t private_data_len);

/* vrdma_reject - refuse a request (the requester sees ECONNREFUSED).
 * Returns 0, EINVAL, ENOENT (request no longer pending), EIO. */
int vrdma_reject(struct vrdma_listener *l, const struct vrdma_conn_req *req);

/*
 * vrdma_set_wait_policy - how the device's waiters (vrdma_wait_cq, commands,
 * connects) spend their CPU before sleeping on the event channel.  The
 * default is env VRDMA_WAIT ("latency", "throughput", "cpu", "auto") read
 * at vrdma_open(), else AUTO.  Returns 0 or EINVAL.
 */
int vrdma_set_wait_policy(struct vrdma_device *dev, enum vrdma_wait_policy policy);
/* vrdma_get_wait_policy - the policy in force (never AUTO), -1 if !dev. */
int vrdma_get_wait_policy(struct vrdma_device *dev);

/* ---- asynchronous events ---- */

/*
 * vrdma_get_async_event - take the next asynchronous event, waiting up to
 * @timeout_ms (0: only look).  An event's QP or CQ stays valid until the
 * program destroys it; destroying it drops its events not taken yet.
 * Returns 0, EAGAIN (none, timeout 0), ETIMEDOUT, EINVAL, EIO (the device
 * is broken and its DEVICE_FATAL was taken already).
 */
int vrdma_get_async_event(struct vrdma_device *dev, struct vrdma_async_event *event,
			  int timeout_ms);

/*
 * vrdma_wait_async_event - wait up to @timeout_ms until an event is queued,
 * without taking it (for a program that takes events under its own lock).
 * Returns 0, ETIMEDOUT, EINVAL, EIO (broken, DEVICE_FATAL taken already).
 */
int vrdma_wait_async_event(struct vrdma_device *dev, int timeout_ms);

/*
 * vrdma_async_fd - an fd that polls readable while an asynchronous event
 * is queued (read it only through vrdma_get_async_event).  Events arrive
 * while some thread calls into the device: waits, commands, and
 * vrdma_poll_cq calls that find nothing.  -1 with EINVAL for no device.
 */
int vrdma_async_fd(struct vrdma_device *dev);

/* ---- strings ---- */

/* vrdma_wc_status_str - a static description; "unknown" for other values. */
const char *vrdma_wc_status_str(enum vrdma_wc_status status);

/* vrdma_event_type_str - the same for an event type. */
const char *vrdma_event_type_str(enum vrdma_event_type type);

#ifdef __cplusplus
}
#endif

#endif /* VRDMA_VRDMA_H */
