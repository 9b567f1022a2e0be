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
 *
 * Memory: only memory from vrdma_alloc_buf() can be registered, because on
 * Xen a guest's userspace can grant only pages the grant driver allocated.
 * vrdma_reg_mr() on other memory fails with EFAULT.
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
#define VRDMA_MAX_SGE_PER_WR	4
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
	VRDMA_WC_GENERAL_ERR,		/* dom0 sent something invalid */
};

enum vrdma_wc_flags {
	VRDMA_WC_WITH_IMM	= 1 << 0,
};

enum vrdma_qp_state {
	VRDMA_QPS_RESET,		/* created, not connected */
	VRDMA_QPS_CONNECTING,
	VRDMA_QPS_RTS,			/* connected */
	VRDMA_QPS_ERR,
};

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

/* Open the guest's vrdma device.  spec: NULL or "" for the default;
 * "host" or "xen" to force a platform (else env VRDMA_PLATFORM, then
 * auto-detect).  Connect handshake limited to timeout_ms. */
struct vrdma_device *vrdma_open(const char *spec, int timeout_ms);
int vrdma_close(struct vrdma_device *dev);
/* The node name this device's dom0 answers to (for vrdma_connect). */
const char *vrdma_node_name(const struct vrdma_device *dev);

/* ---- memory ---- */

/* Page-aligned, zeroed, shareable memory; length rounded up to pages. */
void *vrdma_alloc_buf(struct vrdma_device *dev, size_t length);
int vrdma_free_buf(struct vrdma_device *dev, void *addr);

struct vrdma_pd *vrdma_alloc_pd(struct vrdma_device *dev);
int vrdma_dealloc_pd(struct vrdma_pd *pd);

/* Register [addr, addr+length) which must lie within one vrdma_alloc_buf()
 * buffer (EFAULT otherwise).  access: enum vrdma_access_flags. */
struct vrdma_mr *vrdma_reg_mr(struct vrdma_pd *pd, void *addr, size_t length,
			      int access);
int vrdma_dereg_mr(struct vrdma_mr *mr);

/* ---- completion queues ---- */

/* Capacity is rounded up to a power of two.  A CQ must be large enough
 * for every WR that can be outstanding on the QPs that use it
 * (vrdma_create_qp() checks: EINVAL). */
struct vrdma_cq *vrdma_create_cq(struct vrdma_device *dev, int cqe, void *cq_context);
int vrdma_destroy_cq(struct vrdma_cq *cq);
/* Returns the number of completions (0..num_entries), or -1 with errno. */
int vrdma_poll_cq(struct vrdma_cq *cq, int num_entries, struct vrdma_wc *wc);
/* Block until the CQ has a completion: polls briefly, then sleeps on the
 * device's notification.  0, or ETIMEDOUT, or EIO (device broken). */
int vrdma_wait_cq(struct vrdma_cq *cq, int timeout_ms);

/* ---- queue pairs (reliable connected) ---- */

struct vrdma_qp *vrdma_create_qp(struct vrdma_pd *pd, struct vrdma_qp_init_attr *attr);
int vrdma_destroy_qp(struct vrdma_qp *qp);
int vrdma_post_send(struct vrdma_qp *qp, struct vrdma_send_wr *wr,
		    struct vrdma_send_wr **bad_wr);
int vrdma_post_recv(struct vrdma_qp *qp, struct vrdma_recv_wr *wr,
		    struct vrdma_recv_wr **bad_wr);

/* ---- connections ---- */

/* Connect qp to the service listening on node (NULL/"" = this node).
 * Private data goes both ways (<= VRDMA_MAX_PRIVATE_DATA bytes).
 * ECONNREFUSED if rejected or nobody listens, ETIMEDOUT, EHOSTUNREACH. */
int vrdma_connect(struct vrdma_qp *qp, const char *node, const char *service,
		  const void *private_data, size_t private_data_len,
		  void *peer_data, size_t *peer_data_len, int timeout_ms);

struct vrdma_listener *vrdma_listen(struct vrdma_device *dev, const char *service);
int vrdma_close_listener(struct vrdma_listener *l);
/* Wait for the next connection request (ETIMEDOUT). */
int vrdma_get_request(struct vrdma_listener *l, struct vrdma_conn_req *req,
		      int timeout_ms);
int vrdma_accept(struct vrdma_listener *l, struct vrdma_qp *qp,
		 const struct vrdma_conn_req *req,
		 const void *private_data, size_t private_data_len);
int vrdma_reject(struct vrdma_listener *l, const struct vrdma_conn_req *req);

/* ---- strings ---- */
const char *vrdma_wc_status_str(enum vrdma_wc_status status);

#ifdef __cplusplus
}
#endif

#endif /* VRDMA_VRDMA_H */
