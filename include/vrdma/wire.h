/* SPDX-License-Identifier: MIT */
/*
 * vrdma wire contract: everything the guest frontend and the dom0 backend
 * agree on.  Nothing else crosses the boundary.  docs/wire.md is the prose
 * version of this header (xenstore keys, state diagram, byte layouts).
 *
 * Rules (see docs/wire.md):
 *  - shared memory is 4 KiB pages named by 32-bit grant references;
 *    nothing in shared memory is a pointer;
 *  - fixed-width fields only, explicit reserved fields (must be zero),
 *    64-bit fields 8-byte aligned, power-of-two entry sizes;
 *  - indexes are free-running uint32_t, masked on access; the producer
 *    release-stores its index, the consumer acquire-loads it;
 *  - each side copies an entry out of shared memory before checking it and
 *    never trusts the other side's indexes (see common/vring.h).
 *
 * Shared areas:
 *  - the device area (granted by the frontend at connect, refs in xenstore):
 *      page 0          struct vrdma_sring: magic, version, ring controls
 *      pages 1..       request ring, 2^req-ring-order x struct vrdma_req
 *      following page  event ring, 2^evt-ring-order x struct vrdma_evt
 *  - one CQ area per completion queue (inside an attached buffer):
 *      page 0          struct vrdma_cq_hdr
 *      pages 1..       2^order x struct vrdma_cqe
 *  - attached buffers: guest data pages the backend maps once and then
 *    addresses by (buffer handle, offset) through memory regions.
 */
#ifndef VRDMA_WIRE_H
#define VRDMA_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define VRDMA_WIRE_VERSION	1u
#define VRDMA_WIRE_MAGIC	0x414d4456u	/* "VDMA" little-endian */
#define VRDMA_PAGE_SHIFT	12
#define VRDMA_PAGE_SIZE		(1u << VRDMA_PAGE_SHIFT)

/* Ring geometry limits (the backend publishes max-*; see docs/wire.md). */
#define VRDMA_REQ_RING_ORDER_DEF	8	/* 256 x 128 B = 8 pages */
#define VRDMA_REQ_RING_ORDER_MAX	10
#define VRDMA_EVT_RING_ORDER_DEF	6	/* 64 x 64 B = 1 page */
#define VRDMA_EVT_RING_ORDER_MAX	8
#define VRDMA_CQ_ORDER_MAX		18	/* 262144 CQEs (16 MiB); max-cq-order */
#define VRDMA_CQ_ORDER_OLD		14	/* a backend without max-cq-order */
/* SGEs: a WR entry carries VRDMA_WR_SGE; a WR with more is followed in
 * the request ring by VRDMA_SGE_EXT_ENTRIES(num_sge) entries of struct
 * vrdma_sge_ext, published with it (struct vrdma_sge_ext).  A backend
 * that takes more than VRDMA_WR_SGE says so in `max-sge`. */
#define VRDMA_WR_SGE			4
#define VRDMA_EXT_SGE			8	/* per extension entry */
#define VRDMA_MAX_SGE			16
#define VRDMA_SGE_EXT_ENTRIES(n)	((n) <= VRDMA_WR_SGE ? 0u : \
	(unsigned)((n) - VRDMA_WR_SGE + VRDMA_EXT_SGE - 1) / VRDMA_EXT_SGE)
#define VRDMA_BUF_LIST_REFS		16	/* list pages per buffer */
#define VRDMA_REFS_PER_PAGE		(VRDMA_PAGE_SIZE / 4)
#define VRDMA_BUF_MAX_PAGES		(VRDMA_BUF_LIST_REFS * VRDMA_REFS_PER_PAGE)
/* With indirect list pages (a backend's max-buf-pages above
 * VRDMA_BUF_MAX_PAGES says it takes them): 16 x 1024 x 1024 pages. */
#define VRDMA_BUF_MAX_PAGES_IND		((uint32_t)VRDMA_BUF_MAX_PAGES * VRDMA_REFS_PER_PAGE)
#define VRDMA_NAME_MAX			32	/* node / service names, NUL padded */
#define VRDMA_PDATA_MAX			32	/* connection private data */
#define VRDMA_MAX_WR			4096	/* per queue */

/*
 * Handshake through xenstore (docs/wire.md has a table per key).
 * Frontend dir: /local/domain/<domid>/device/vrdma/<devid>
 * Backend dir:  /local/domain/0/backend/vrdma/<domid>/<devid>
 * Both carry `state` (XenbusState below); absent key = default.
 *   backend writes:  protocol-version, max-req-ring-order,
 *                    max-evt-ring-order, max-sge (absent = VRDMA_WR_SGE;
 *                    at most VRDMA_MAX_SGE), max-buf-pages (absent =
 *                    VRDMA_BUF_MAX_PAGES), max-cq-order (absent =
 *                    VRDMA_CQ_ORDER_OLD), max-ud-msg (the largest
 *                    UD payload to any node: VRDMA_UD_MTU, or less
 *                    through an RDMA device; absent = VRDMA_UD_MTU,
 *                    a guest bounds it to 256..VRDMA_UD_MTU),
 *                    feature-* (feature-ud: UD
 *                    QPs, see VRDMA_QP_TYPE_UD), node-name,
 *                    node-gid (32 hex digits: the GID QPs of this node
 *                    are named by, see VRDMA_CMD_MODIFY_QP)
 *   frontend writes: protocol-version, req-ring-order, evt-ring-order,
 *                    ring-pages, ring-ref<N>, event-channel
 */
enum vrdma_xb_state {
	VRDMA_XB_UNKNOWN	= 0,
	VRDMA_XB_INITIALISING	= 1,
	VRDMA_XB_INITWAIT	= 2,
	VRDMA_XB_INITIALISED	= 3,
	VRDMA_XB_CONNECTED	= 4,
	VRDMA_XB_CLOSING	= 5,
	VRDMA_XB_CLOSED		= 6,
};

#define VRDMA_XS_FRONT_FMT	"/local/domain/%u/device/vrdma/%u"
#define VRDMA_XS_BACK_ROOT	"/local/domain/0/backend/vrdma"
#define VRDMA_XS_BACK_FMT	VRDMA_XS_BACK_ROOT "/%u/%u"

/*
 * Ring control: one per ring.  Producer and consumer fields live on
 * separate cache lines so the two sides never write the same line.
 *  prod:  entries produced (written by the producer only)
 *  cons:  entries consumed (written by the consumer only)
 *  event: consumer asks "notify me when prod passes event" (Xen's
 *         req_event/rsp_event); the producer notifies iff the batch it
 *         just pushed crossed it.
 */
struct vrdma_ring_ctl {
	uint32_t prod;
	uint32_t prod_pad[15];
	uint32_t cons;
	uint32_t event;
	uint32_t cons_pad[14];
};

/* Page 0 of the device area.  magic/version/orders are written by the
 * frontend before granting and re-checked by the backend at connect.
 * guest_live: VRDMA_SRING_LIVE while the guest process holds the area.
 * On Xen the guest platform arms a gntalloc unmap-notify that clears it
 * and signals the device's event channel when the process lets go (exit,
 * crash); 0 at connect means "not tracked" (docs/wire.md, Liveness).
 * dom0_live: the same the other way, written by the backend before it
 * says Connected (Xen: gntdev's unmap-notify clears it when vrdmad lets
 * go; plain host: the guest's platform clears it when vrdmad's socket
 * hangs up).  0 at Connected means "not tracked" (an older backend); only
 * a 1 seen and then 0 means dom0 is gone. */
#define VRDMA_SRING_LIVE	1u

struct vrdma_sring {
	uint32_t magic;
	uint16_t version;
	uint8_t  req_order;
	uint8_t  evt_order;
	uint8_t  guest_live;	/* guest process alive (see above) */
	uint8_t  dom0_live;	/* vrdmad alive (see above) */
	uint8_t  reserved0[2];
	uint32_t reserved[13];
	struct vrdma_ring_ctl req;	/* guest produces, dom0 consumes */
	struct vrdma_ring_ctl evt;	/* dom0 produces, guest consumes */
};

/* Request opcodes (guest -> dom0).  Work requests first, then commands. */
enum {
	VRDMA_OP_SEND		= 0x01,
	VRDMA_OP_SEND_IMM	= 0x02,
	VRDMA_OP_WRITE		= 0x03,
	VRDMA_OP_WRITE_IMM	= 0x04,
	VRDMA_OP_READ		= 0x05,
	VRDMA_OP_CMP_SWAP	= 0x06,
	VRDMA_OP_FETCH_ADD	= 0x07,
	VRDMA_OP_RECV		= 0x08,
	VRDMA_OP_SRQ_RECV	= 0x09,	/* handle = SRQ (feature-srq) */
	VRDMA_OP_COLL		= 0x0a,	/* handle = team (feature-coll) */

	VRDMA_CMD_ATTACH_BUF	= 0x40,	/* map guest pages; -> buffer handle */
	VRDMA_CMD_DETACH_BUF	= 0x41,
	VRDMA_CMD_ALLOC_PD	= 0x42,
	VRDMA_CMD_DEALLOC_PD	= 0x43,
	VRDMA_CMD_REG_MR	= 0x44,	/* -> mr handle, lkey, rkey (opaque,
					 * >= 24 random bits: docs/wire.md) */
	VRDMA_CMD_DEREG_MR	= 0x45,
	VRDMA_CMD_CREATE_CQ	= 0x46,
	VRDMA_CMD_DESTROY_CQ	= 0x47,
	VRDMA_CMD_CREATE_QP	= 0x48,	/* -> qp handle, qp_num */
	VRDMA_CMD_DESTROY_QP	= 0x49,
	VRDMA_CMD_LISTEN	= 0x4a,	/* -> listener handle */
	VRDMA_CMD_UNLISTEN	= 0x4b,
	VRDMA_CMD_CONNECT	= 0x4c,	/* async: VRDMA_EVT_CONNECTED/REJECTED */
	VRDMA_CMD_ACCEPT	= 0x4d,
	VRDMA_CMD_REJECT	= 0x4e,
	VRDMA_CMD_MODIFY_QP	= 0x4f,	/* verbs-style: RTR (bind by QPN), ERR */
	VRDMA_CMD_CREATE_SRQ	= 0x50,	/* -> srq handle (feature-srq) */
	VRDMA_CMD_DESTROY_SRQ	= 0x51,
	VRDMA_CMD_TEAM_JOIN	= 0x52,	/* -> team handle; EVT_TEAM follows
					 * (feature-coll) */
	VRDMA_CMD_TEAM_LEAVE	= 0x53,
	VRDMA_CMD_LAST		= VRDMA_CMD_TEAM_LEAVE,
};

/* Work request flags: bit numbers and masks. */
#define _VRDMA_WR_F_SIGNALED	0	/* completion wanted on success */
#define VRDMA_WR_F_SIGNALED	(1u << _VRDMA_WR_F_SIGNALED)
#define _VRDMA_WR_F_FENCE	1	/* wait for earlier READ/atomics */
#define VRDMA_WR_F_FENCE	(1u << _VRDMA_WR_F_FENCE)
#define VRDMA_WR_F_ALL		(VRDMA_WR_F_SIGNALED | VRDMA_WR_F_FENCE)

/* Memory access bits (REG_MR). */
#define VRDMA_ACC_LOCAL_WRITE	(1u << 0)
#define VRDMA_ACC_REMOTE_WRITE	(1u << 1)
#define VRDMA_ACC_REMOTE_READ	(1u << 2)
#define VRDMA_ACC_REMOTE_ATOMIC	(1u << 3)
#define VRDMA_ACC_ALL		0xfu

struct vrdma_wire_sge {
	uint64_t addr;		/* guest virtual address inside the MR */
	uint32_t length;
	uint32_t lkey;
};

/* A UD datagram's payload is at most this (the port's MTU); the receive
 * holds a VRDMA_GRH_LEN-byte GRH before it (feature-ud). */
#define VRDMA_UD_MTU		4096
#define VRDMA_GRH_LEN		40
/* A remote_qkey with this bit set means "the sending QP's own Q_Key". */
#define VRDMA_QKEY_OWN		0x80000000u

/* Body of a work request (opcodes 0x01..0x08).  The first 24 bytes are
 * the RC fields, or for a SEND / SEND_IMM of a UD QP its destination. */
struct vrdma_wr {
	union {
		struct {
			uint64_t remote_addr;	/* WRITE/READ/atomics */
			uint64_t compare_add;	/* CMP_SWAP compare, FETCH_ADD addend */
			uint64_t swap;		/* CMP_SWAP swap */
		};
		struct {			/* UD SEND / SEND_IMM (feature-ud) */
			uint8_t  dgid[16];	/* the destination node's GID */
			uint32_t remote_qpn;	/* 24 bits */
			uint32_t remote_qkey;	/* VRDMA_QKEY_OWN: the QP's own */
		} ud;
	};
	uint32_t rkey;
	uint32_t imm_data;	/* *_IMM, network order as in verbs */
	uint8_t  reserved[16];
	struct vrdma_wire_sge sge[VRDMA_WR_SGE];
};

/*
 * The SGEs of a WR past its first VRDMA_WR_SGE, in ring entries of their
 * own straight after it: VRDMA_SGE_EXT_ENTRIES(num_sge) of them, SGE
 * VRDMA_WR_SGE + 8 * k + j in entry k's sge[j], unused SGEs zero.  They
 * are published in the same push as their WR (a backend that sees the WR
 * but not all of them refuses the guest); they have no header and count
 * as requests of the ring like any entry.  Only a QP or SRQ created with
 * max_sge > VRDMA_WR_SGE may have them.
 */
struct vrdma_sge_ext {
	struct vrdma_wire_sge sge[VRDMA_EXT_SGE];
};

/* Command bodies (opcodes 0x40..).  Object handles come from earlier
 * command results; the request's `handle` names the object acted on. */
/*
 * ATTACH_BUF: list_ref[] names list pages of the data pages' refs, 1024 a
 * page.  indirect = 1 (a backend whose max-buf-pages is above
 * VRDMA_BUF_MAX_PAGES): list_ref[] names pages of the list pages' refs
 * instead, so nlist = ceil(ceil(npages / 1024) / 1024); an older backend
 * refuses it (INVAL: the body past list_ref was reserved, zero).
 */
struct vrdma_cmd_attach_buf {
	uint32_t npages;	/* data pages, <= max-buf-pages */
	uint16_t nlist;		/* list_ref[] used (see above) */
	uint16_t writable;	/* 1 if dom0 may write the pages */
	uint32_t list_ref[VRDMA_BUF_LIST_REFS];	/* pages of uint32 refs */
	uint32_t indirect;	/* 0, or 1: list_ref[] name pages of list refs */
};

struct vrdma_cmd_reg_mr {
	uint32_t pd;
	uint32_t buf;		/* buffer handle */
	uint64_t offset;	/* byte offset into the buffer */
	uint64_t length;
	uint64_t iova;		/* guest address the MR is known by */
	uint32_t access;	/* VRDMA_ACC_* */
	uint32_t reserved;
};

struct vrdma_cmd_create_cq {
	uint32_t buf;		/* CQ area lives in this attached buffer */
	uint32_t page;		/* page offset of the area in the buffer */
	uint32_t order;		/* 2^order CQEs */
	uint32_t reserved;
};

struct vrdma_cmd_create_qp {
	uint32_t pd;
	uint32_t send_cq;
	uint32_t recv_cq;
	uint32_t max_send_wr;	/* <= VRDMA_MAX_WR */
	uint32_t max_recv_wr;	/* 0 with an SRQ */
	uint32_t max_sge;	/* <= the backend's max-sge */
	uint32_t srq;		/* SRQ handle, 0 = own receive queue */
	uint32_t type;		/* VRDMA_QP_TYPE_* (a backend without
				 * feature-ud refuses non-zero: INVAL) */
};

/* CREATE_QP type.  A UD QP sends and receives datagrams once MODIFY_QP
 * UD_RTS gave it its Q_Key; it never connects (CONNECT, ACCEPT, RTR:
 * INVAL), and its WRs are SEND, SEND_IMM and RECV only (others complete
 * LOC_QP_OP_ERR). */
enum { VRDMA_QP_TYPE_RC = 0, VRDMA_QP_TYPE_UD = 1 };

/* A shared receive queue: receives any of its QPs consume, in order. */
struct vrdma_cmd_create_srq {
	uint32_t pd;
	uint32_t max_wr;	/* 1..VRDMA_MAX_WR */
	uint32_t max_sge;	/* 1..the backend's max-sge */
	uint32_t reserved;
};

struct vrdma_cmd_listen {
	char     service[VRDMA_NAME_MAX];
};

/* CONNECT: `handle` is the QP.  CMD_DONE NOENT: nobody listens on the
 * service (nothing follows).  CMD_DONE OK: then exactly one of CONNECTED,
 * REJECTED (status REFUSED by the listener or undeliverable, TIMEDOUT
 * after 10 s, UNREACH for another node).
 * Results in CMD_DONE out[]: ATTACH_BUF {buf, npages}, ALLOC_PD {pd},
 * REG_MR {mr, lkey, rkey}, CREATE_CQ {cq, ncqe}, CREATE_QP {qp, qp_num},
 * LISTEN {listener}, ACCEPT {peer qp_num}; others none. */
struct vrdma_cmd_connect {
	char     node[VRDMA_NAME_MAX];	/* "" = this node */
	char     service[VRDMA_NAME_MAX];
	uint8_t  pdata[VRDMA_PDATA_MAX];
	uint32_t pdata_len;
	uint32_t reserved;
};

/* ACCEPT: `handle` is the QP; REJECT: `handle` is the listener. */
struct vrdma_cmd_accept {
	uint64_t conn_id;	/* from VRDMA_EVT_CONN_REQUEST */
	uint8_t  pdata[VRDMA_PDATA_MAX];
	uint32_t pdata_len;
	uint32_t reserved;
};

/* MODIFY_QP: `handle` is the QP.
 *  RTR: bind the QP (backend state RESET) to the QP numbered dest_qpn on
 *       the node whose GID is dest_gid (the backend's `node-gid`).  The
 *       two are connected once each has named the other; WRs posted
 *       before wait, and a QP whose peer has not answered 10 s after its
 *       RTR fails its first send WR with RETRY_EXC_ERR (QP_ERROR follows).
 *       CMD_DONE UNREACH: dom0 cannot reach that node.
 *  ERR: the QP goes to error: queued WRs complete with WR_FLUSH_ERR and a
 *       connected peer gets QP_ERROR, as when the QP is destroyed.
 *  UD_RTS: a UD QP (RESET, or UD_RTS already: a new Q_Key) takes datagrams
 *       for its Q_Key and may send; dest_qpn and dest_gid are zero.
 *       A qkey with the high bit set (a controlled Q_Key) is ACCESS.
 *       libvrdma sends it at the verbs state RTR (a UD QP receives from
 *       there on) and posts sends only from RTS. */
enum { VRDMA_MQ_RTR = 1, VRDMA_MQ_ERR = 2, VRDMA_MQ_UD_RTS = 3 };

struct vrdma_cmd_modify_qp {
	uint32_t state;		/* VRDMA_MQ_* */
	uint32_t dest_qpn;	/* RTR: 24 bits, not 0 */
	uint8_t  dest_gid[16];	/* RTR */
	uint32_t qkey;		/* UD_RTS (else 0); was reserved[0] */
	uint32_t reserved;
};

/*
 * Teams (feature-coll, docs/collectives.md): dom0 runs a team's
 * collectives for the members it serves, reading their send ranges and
 * writing their receive ranges through their own MRs.
 *
 * TEAM_JOIN: join the team named by key as rank `rank` of `size`.  The
 * node list (size NUL-terminated names, rank order: the node each
 * member's device answers to) lies in an MR of `pd`; every member's list
 * must be the same bytes.  CMD_DONE OK {team}: joined, and exactly one
 * EVT_TEAM follows once every member joined or the team failed: status
 * OK, dom0 runs it; NOENT, the members run it themselves (a member
 * joined with VRDMA_TEAM_F_SELF or its VM has offload off, or the connect
 * policy keeps two members' tenants apart: all members hear the same);
 * INVAL, the members disagree on size or list; EXIST, two members took
 * one rank.  The guest then leaves (TEAM_LEAVE) unless
 * OK.  CMD_DONE NOENT: dom0 does not run this team at all (a member on
 * another node without feature-coll-nodes, or offload off on this node:
 * every member knows so from the same list; or the node runs as many
 * teams, or teams across nodes, as it keeps; or the guest is in 64
 * teams, or 8 across nodes, its quota: its rank is marked absent, and
 * the others hear NOENT in their EVT_TEAM).  With feature-coll-nodes
 * the vrdmads of a team across nodes agree before EVT_TEAM (at most
 * 30 s).  INVAL: a bad field, or the joiner's rank named on another
 * node; NOMEM: the guest is at its quota and has marked 64 teams absent
 * that wait for other members.
 */
#define VRDMA_TEAM_F_SELF	1u	/* this member wants the team run by
					 * the members (the API's NO_OFFLOAD) */
#define VRDMA_TEAM_MAX		4096	/* members */
#define VRDMA_TEAM_DEPTH	64	/* OP_COLLs of a member not completed */

struct vrdma_cmd_team_join {
	uint8_t  key[16];
	uint32_t size;		/* 1..VRDMA_TEAM_MAX */
	uint32_t rank;		/* < size */
	uint32_t pd;		/* the list's and every op's MRs */
	uint32_t cq;		/* the team's completions */
	uint32_t list_lkey;
	uint32_t list_len;	/* bytes, names and their NULs */
	uint64_t list_addr;
	uint32_t flags;		/* VRDMA_TEAM_F_* */
	uint32_t reserved[3];
};

/*
 * OP_COLL's body: operation `seq` (1, 2, ... per member; every member
 * posts the same seq with the same kind, type, op, count and root).  Kind,
 * type and op take vrdma/coll.h's values.  sge[0] is the send range,
 * sge[1] the receive range (LOCAL_WRITE), MRs of the team's pd, each of
 * the length the operation implies or 0 where it reads or writes nothing:
 *   ALLREDUCE  send n*es, recv n*es     REDUCE  send n*es, recv root only
 *   BCAST      root: send count; others: recv count      BARRIER  none
 *   ALLGATHER  send count, recv size*count
 * (n*es: count elements of type).  A send range may be the receive
 * range (in place).  One CQE per OP_COLL on the team's CQ, in seq order:
 * wr_id = the request's id, opcode VRDMA_WC_COLL, flags
 * VRDMA_CQE_F_TEAM, qp = the team handle,
 * byte_len = bytes written to the receive range; status SUCCESS,
 * LOC_PROT_ERR (a range is not this member's), REM_INV_REQ_ERR (the
 * members disagree), RETRY_EXC_ERR (a member left), WR_FLUSH_ERR (the
 * team failed before).  Request flags and num_sge are 0.
 */
struct vrdma_coll_wr {
	uint8_t  kind;
	uint8_t  type;
	uint8_t  op;
	uint8_t  reserved0;
	uint32_t root;
	uint64_t count;
	uint64_t seq;
	uint8_t  reserved[56];
	struct vrdma_wire_sge sge[2];
};

/* One request ring entry: 128 bytes. */
struct vrdma_req {
	uint8_t  opcode;	/* VRDMA_OP_* / VRDMA_CMD_* */
	uint8_t  num_sge;	/* work requests only (see vrdma_sge_ext) */
	uint16_t flags;		/* VRDMA_WR_F_* */
	uint32_t handle;	/* QP for work requests; object for commands */
	uint64_t id;		/* wr_id, or command id echoed in CMD_DONE */
	union {
		struct vrdma_wr wr;
		struct vrdma_cmd_attach_buf attach_buf;
		struct vrdma_cmd_reg_mr reg_mr;
		struct vrdma_cmd_create_cq create_cq;
		struct vrdma_cmd_create_qp create_qp;
		struct vrdma_cmd_listen listen;
		struct vrdma_cmd_connect connect;
		struct vrdma_cmd_accept accept;
		struct vrdma_cmd_modify_qp modify_qp;
		struct vrdma_cmd_create_srq create_srq;
		struct vrdma_cmd_team_join team_join;
		struct vrdma_coll_wr coll;
		uint8_t raw[112];
	} u;
};

/* Event types (dom0 -> guest). */
enum {
	VRDMA_EVT_CMD_DONE	= 1,	/* status, out[] */
	VRDMA_EVT_CONN_REQUEST	= 2,	/* handle=listener, id=conn_id */
	VRDMA_EVT_CONNECTED	= 3,	/* handle=qp, peer pdata */
	VRDMA_EVT_REJECTED	= 4,	/* handle=qp, status says why */
	VRDMA_EVT_QP_ERROR	= 5,	/* handle=qp, status: UNREACH peer gone,
					 * NOMEM its CQ overran */
	VRDMA_EVT_CQ_ERROR	= 6,	/* handle=cq: overrun, later CQEs lost */
	VRDMA_EVT_CONN_FROM	= 7,	/* handle=listener, id=conn_id: who asks;
					 * just before its CONN_REQUEST, only to a
					 * frontend that wrote feature-conn-from */
	VRDMA_EVT_TEAM		= 8,	/* handle=team: status OK ready, else
					 * failed (TEAM_JOIN) */
};

/* Command status: protocol constants, mapped to errno by libvrdma. */
enum {
	VRDMA_CS_OK		= 0,
	VRDMA_CS_INVAL		= 1,	/* bad argument */
	VRDMA_CS_NOMEM		= 2,	/* out of memory or quota */
	VRDMA_CS_NOENT		= 3,	/* no such object / listener */
	VRDMA_CS_BUSY		= 4,	/* object in use */
	VRDMA_CS_ACCESS		= 5,	/* not allowed */
	VRDMA_CS_EXIST		= 6,	/* name already taken */
	VRDMA_CS_REFUSED	= 7,	/* peer rejected */
	VRDMA_CS_TIMEDOUT	= 8,
	VRDMA_CS_UNREACH	= 9,	/* no such node */
	VRDMA_CS_FAULT		= 10,	/* bad grant / mapping failed */
	VRDMA_CS_MAX
};

struct vrdma_evt {
	uint8_t  type;		/* VRDMA_EVT_* */
	uint8_t  reserved0;
	uint16_t status;	/* VRDMA_CS_* */
	uint32_t handle;
	uint64_t id;
	union {
		uint32_t out[4];	/* CMD_DONE results */
		struct {
			uint32_t peer_qpn;
			uint32_t pdata_len;
			uint8_t  pdata[VRDMA_PDATA_MAX];
		} conn;
		struct {		/* CONN_FROM: vouched for by dom0 */
			char     node[VRDMA_NAME_MAX];	/* the connector's node:
							 * its name, or its RDMA
							 * address if remote */
			uint32_t domid;	/* the connector's domain (guest) */
			uint32_t devid;	/* its device (0 if remote) */
			uint32_t reserved[2];
		} from;
		uint8_t raw[48];
	} u;
};

/* Completion opcodes and statuses (protocol constants). */
enum {
	VRDMA_WC_SEND		= 1,
	VRDMA_WC_WRITE		= 2,
	VRDMA_WC_READ		= 3,
	VRDMA_WC_CMP_SWAP	= 4,
	VRDMA_WC_FETCH_ADD	= 5,
	VRDMA_WC_RECV		= 6,
	VRDMA_WC_RECV_IMM	= 7,	/* WRITE_IMM landed: no data in RQ buffer */
	VRDMA_WC_COLL		= 8,	/* an OP_COLL (VRDMA_CQE_F_TEAM) */
};

enum {
	VRDMA_WS_SUCCESS	= 0,
	VRDMA_WS_LOC_LEN_ERR	= 1,	/* receive buffer too small */
	VRDMA_WS_LOC_QP_OP_ERR	= 2,	/* QP not connected / bad state */
	VRDMA_WS_LOC_PROT_ERR	= 3,	/* bad lkey, bounds or access */
	VRDMA_WS_WR_FLUSH_ERR	= 4,	/* QP in error; WR not executed */
	VRDMA_WS_REM_INV_REQ_ERR = 5,	/* remote: bad request (alignment) */
	VRDMA_WS_REM_ACCESS_ERR	= 6,	/* remote: bad rkey, bounds or rights */
	VRDMA_WS_REM_OP_ERR	= 7,	/* remote: could not complete */
	VRDMA_WS_RETRY_EXC_ERR	= 8,	/* peer gone / unreachable */
	VRDMA_WS_RNR_RETRY_EXC_ERR = 9,	/* peer posted no receive in time */
	VRDMA_WS_FATAL_ERR	= 10,
	VRDMA_WS_MAX
};

#define _VRDMA_CQE_F_IMM	0
#define VRDMA_CQE_F_IMM		(1u << _VRDMA_CQE_F_IMM)
/* A UD receive: the first VRDMA_GRH_LEN bytes of the buffer are the
 * datagram's GRH (IB layout: SGID = the sender's node GID), byte_len
 * counts them, src_qpn is the sending QP. */
#define _VRDMA_CQE_F_GRH	1
#define VRDMA_CQE_F_GRH		(1u << _VRDMA_CQE_F_GRH)
/* An OP_COLL's completion: qp is a team handle, not a QP's. */
#define _VRDMA_CQE_F_TEAM	2
#define VRDMA_CQE_F_TEAM	(1u << _VRDMA_CQE_F_TEAM)

/* One completion: 64 bytes. */
struct vrdma_cqe {
	uint64_t wr_id;
	uint32_t qp;		/* QP handle (the guest's own) */
	uint8_t  opcode;	/* VRDMA_WC_* */
	uint8_t  status;	/* VRDMA_WS_* */
	uint16_t flags;		/* VRDMA_CQE_F_* */
	uint32_t byte_len;
	uint32_t imm_data;
	uint32_t src_qpn;
	uint32_t sq_retired;	/* send WRs retired on qp so far (mod 2^32) */
	uint32_t vendor_err;
	uint32_t srq;		/* receive from an SRQ: its handle, else 0 */
	uint32_t srq_idx;	/* ... and which of its receives (mod 2^32) */
	uint32_t reserved[5];
};

/* Page 0 of a CQ area. */
struct vrdma_cq_hdr {
	uint32_t magic;		/* VRDMA_WIRE_MAGIC, written by the guest */
	uint32_t order;
	uint32_t reserved[14];
	struct vrdma_ring_ctl ring;	/* dom0 produces, guest consumes */
};

/* Layout checks: any change here is a protocol change. */
_Static_assert(sizeof(struct vrdma_ring_ctl) == 128, "ring ctl");
_Static_assert(offsetof(struct vrdma_ring_ctl, cons) == 64, "ring cons line");
_Static_assert(sizeof(struct vrdma_sring) == 320, "sring");
_Static_assert(offsetof(struct vrdma_sring, guest_live) == 8, "sring guest_live");
_Static_assert(offsetof(struct vrdma_sring, dom0_live) == 9, "sring dom0_live");
_Static_assert(offsetof(struct vrdma_sring, req) == 64, "sring req");
_Static_assert(offsetof(struct vrdma_sring, evt) == 192, "sring evt");
_Static_assert(sizeof(struct vrdma_wire_sge) == 16, "sge");
_Static_assert(sizeof(struct vrdma_wr) == 112, "wr");
_Static_assert(offsetof(struct vrdma_wr, sge) == 48, "wr sge");
_Static_assert(offsetof(struct vrdma_wr, ud.dgid) == 0 &&
	       offsetof(struct vrdma_wr, ud.remote_qpn) == 16 &&
	       offsetof(struct vrdma_wr, ud.remote_qkey) == 20 &&
	       offsetof(struct vrdma_wr, rkey) == 24 &&
	       offsetof(struct vrdma_wr, imm_data) == 28, "wr ud destination");
_Static_assert(offsetof(struct vrdma_cmd_create_qp, type) == 28, "create_qp type");
_Static_assert(offsetof(struct vrdma_cmd_modify_qp, qkey) == 24, "modify_qp qkey");
_Static_assert(sizeof(struct vrdma_sge_ext) == sizeof(struct vrdma_req), "sge ext entry");
_Static_assert(VRDMA_SGE_EXT_ENTRIES(VRDMA_MAX_SGE) == 2 &&
	       VRDMA_SGE_EXT_ENTRIES(VRDMA_WR_SGE) == 0 &&
	       VRDMA_SGE_EXT_ENTRIES(VRDMA_WR_SGE + 1) == 1, "sge ext entries");
_Static_assert(sizeof(struct vrdma_cmd_attach_buf) == 76 &&
	       offsetof(struct vrdma_cmd_attach_buf, indirect) == 72, "attach_buf");
_Static_assert(sizeof(struct vrdma_cmd_reg_mr) == 40, "reg_mr");
_Static_assert(sizeof(struct vrdma_cmd_create_cq) == 16, "create_cq");
_Static_assert(sizeof(struct vrdma_cmd_create_qp) == 32, "create_qp");
_Static_assert(sizeof(struct vrdma_cmd_create_srq) == 16, "create_srq");
_Static_assert(sizeof(struct vrdma_cmd_connect) == 104, "connect");
_Static_assert(sizeof(struct vrdma_cmd_accept) == 48, "accept");
_Static_assert(sizeof(struct vrdma_cmd_modify_qp) == 32, "modify_qp");
_Static_assert(sizeof(struct vrdma_cmd_team_join) == 64, "team_join");
_Static_assert(sizeof(struct vrdma_coll_wr) == 112 &&
	       offsetof(struct vrdma_coll_wr, sge) == 80, "coll wr");
_Static_assert(sizeof(struct vrdma_req) == 128, "req");
_Static_assert(offsetof(struct vrdma_evt, u.from.domid) == 48, "evt from domid");
_Static_assert(offsetof(struct vrdma_req, id) == 8, "req id");
_Static_assert(offsetof(struct vrdma_req, u) == 16, "req body");
_Static_assert(sizeof(struct vrdma_evt) == 64, "evt");
_Static_assert(offsetof(struct vrdma_evt, u) == 16, "evt body");
_Static_assert(sizeof(struct vrdma_cqe) == 64, "cqe");
_Static_assert(offsetof(struct vrdma_cqe, qp) == 8, "cqe qp");
_Static_assert(offsetof(struct vrdma_cqe, srq) == 36, "cqe srq");
_Static_assert(sizeof(struct vrdma_cq_hdr) == 192, "cq hdr");

/* Device area size in pages for the given ring orders. */
static inline uint32_t vrdma_sring_pages(unsigned req_order, unsigned evt_order)
{
	uint32_t req = ((uint32_t)sizeof(struct vrdma_req) << req_order) >> VRDMA_PAGE_SHIFT;
	uint32_t evt = ((uint32_t)sizeof(struct vrdma_evt) << evt_order) >> VRDMA_PAGE_SHIFT;

	return 1 + (req ? req : 1) + (evt ? evt : 1);
}

/* CQ area size in pages for 2^order CQEs. */
static inline uint32_t vrdma_cq_pages(unsigned order)
{
	uint32_t n = ((uint32_t)sizeof(struct vrdma_cqe) << order) >> VRDMA_PAGE_SHIFT;

	return 1 + (n ? n : 1);
}

#endif /* VRDMA_WIRE_H */
