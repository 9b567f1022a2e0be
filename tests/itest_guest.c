// SPDX-License-Identifier: MIT
/*
 * Integration guest: two processes exercise every opcode through vrdmad
 * with data verification, plus the error completions a peer must see.
 *
 *   itest_guest server SERVICE
 *   itest_guest client SERVICE
 *
 * The client drives; the server verifies what lands in its memory and
 * answers over SEND (and registers an MR again on request: a key kept
 * past its MR must be refused, t_stale_rkey; and binds a QP the verbs
 * way, by GID and QP number, then destroys it: t_bind_gone).  Prints "ITEST <name> PASS|FAIL ..." per check and
 * exits 0 only if every check passed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vrdma/vrdma.h"
#include "itest_lib.h"

#define T_MS		10000
/* vrdma_open's handshake is some 40 xenstore calls from the domU and 25
 * from dom0: on the rig soak's loaded TCG host it took over 10 s. */
#define T_OPEN_MS	30000
/* The server's wait for the client's first request: the client asks only
 * once its process has started and its vrdma_open (T_OPEN_MS) is through.
 * Its start has no limit of its own and took as long as an open on that
 * host (over 13 s from the rig's du_run to the open), so the open's limit
 * twice.  A client that never asks fails by itself; this ends the server. */
#define T_ASK_MS	(2 * T_OPEN_MS)
#define BUF_LEN		(1u << 20)
#define MSG_LEN		64
#define DEPTH		64

/* Offsets in the server buffer. */
#define OFF_WRITE	0u
#define OFF_IMM		(64u << 10)
#define OFF_READ	(128u << 10)
#define OFF_ATOMIC	(256u << 10)
#define OFF_SEND	(512u << 10)	/* server receive slots: DEPTH x MSG_LEN */
#define OFF_BIGRECV	(768u << 10)
#define LEN_WRITE	(64u << 10)
#define LEN_IMM		4096u
#define LEN_READ	(64u << 10)
#define SEED_READ	0x5eedu
#define OFF_STALE	(896u << 10)	/* server: an MR registered, dropped, again */
#define LEN_STALE	4096u

enum { M_CHECK = 1, M_RESULT, M_ACCEPT_MORE, M_BYE, M_SENDDATA, M_STALE_REG, M_STALE_SWAP,
       M_BIND, M_UNBIND };

struct msg {
	uint32_t type, seed, off, len;
	int32_t  result;
	uint32_t imm;
	uint8_t  data[MSG_LEN - 24];
};

struct conn_info {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

struct ctx {
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	uint8_t *buf;
	struct vrdma_mr *mr;
	struct conn_info peer;
	struct vrdma_wc held[64];	/* polled but not yet claimed */
	unsigned nheld;
};

static void ctx_init(struct ctx *c)
{
	memset(c, 0, sizeof(*c));
	c->dev = vrdma_open(NULL, T_OPEN_MS);
	if (!c->dev)
		itest_die("vrdma_open", errno);
	c->pd = vrdma_alloc_pd(c->dev);
	if (!c->pd)
		itest_die("alloc_pd", errno);
	c->cq = vrdma_create_cq(c->dev, 4 * DEPTH * 4, NULL);
	if (!c->cq)
		itest_die("create_cq", errno);
	c->buf = vrdma_alloc_buf(c->dev, BUF_LEN);
	if (!c->buf)
		itest_die("alloc_buf", errno);
	c->mr = vrdma_reg_mr(c->pd, c->buf, BUF_LEN,
			     VRDMA_ACCESS_LOCAL_WRITE | VRDMA_ACCESS_REMOTE_WRITE |
			     VRDMA_ACCESS_REMOTE_READ | VRDMA_ACCESS_REMOTE_ATOMIC);
	if (!c->mr)
		itest_die("reg_mr", errno);
}

static struct vrdma_qp *qp_new(struct ctx *c)
{
	struct vrdma_qp_init_attr a = {
		.send_cq = c->cq, .recv_cq = c->cq,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 4, .max_recv_sge = 4 },
	};
	struct vrdma_qp *qp = vrdma_create_qp(c->pd, &a);

	if (!qp)
		itest_die("create_qp", errno);
	return qp;
}

/* Wait for the next completion on the CQ (any QP), held ones first. */
static int next_wc(struct ctx *c, struct vrdma_wc *wc)
{
	if (c->nheld) {
		*wc = c->held[0];
		memmove(c->held, c->held + 1, --c->nheld * sizeof(*wc));
		return 0;
	}
	for (int spins = 0; spins < 1000; spins++) {
		int n = vrdma_poll_cq(c->cq, 1, wc);

		if (n == 1)
			return 0;
		if (n < 0)
			return errno;
		n = vrdma_wait_cq(c->cq, T_MS);
		if (n)
			return n;
	}
	return ETIMEDOUT;
}

static int post_recv_slot(struct ctx *c, struct vrdma_qp *qp, unsigned slot)
{
	struct vrdma_sge sge = {
		.addr = (uintptr_t)(c->buf + OFF_SEND + slot * MSG_LEN),
		.length = MSG_LEN, .lkey = c->mr->lkey,
	};
	struct vrdma_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 };
	struct vrdma_recv_wr *bad;

	return vrdma_post_recv(qp, &wr, &bad);
}

static int post1(struct vrdma_qp *qp, enum vrdma_wr_opcode op, uint64_t wr_id,
		 struct vrdma_sge *sg, int nsge, uint64_t raddr, uint32_t rkey)
{
	struct vrdma_send_wr wr = {
		.wr_id = wr_id, .sg_list = sg, .num_sge = nsge, .opcode = op,
		.send_flags = VRDMA_SEND_SIGNALED,
	};
	struct vrdma_send_wr *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return vrdma_post_send(qp, &wr, &bad);
}

/* ---- a QP bound the verbs way (t_bind_gone): its own CQ ---- */

struct bound {
	struct vrdma_cq *cq;
	struct vrdma_qp *qp;
};

static void bound_new(struct ctx *c, struct bound *b)
{
	struct vrdma_qp_init_attr a = { .cap = { 4, 4, 1, 1 } };
	struct vrdma_qp_attr at = { .qp_state = VRDMA_QPS_INIT };

	b->cq = vrdma_create_cq(c->dev, 16, NULL);
	if (!b->cq)
		itest_die("bound create_cq", errno);
	a.send_cq = a.recv_cq = b->cq;
	b->qp = vrdma_create_qp(c->pd, &a);
	if (!b->qp)
		itest_die("bound create_qp", errno);
	at.qp_access_flags = VRDMA_ACCESS_LOCAL_WRITE;
	if (vrdma_modify_qp(b->qp, &at, VRDMA_QP_STATE | VRDMA_QP_ACCESS_FLAGS))
		itest_die("bound INIT", errno);
}

/* This side's (GID, QPN) into m->data, as perftest's TCP exchange does. */
static void bound_name(struct ctx *c, const struct bound *b, struct msg *m)
{
	if (vrdma_query_gid(c->dev, m->data))
		itest_die("query_gid", errno);
	memcpy(m->data + VRDMA_GID_LEN, &b->qp->qp_num, 4);
}

/* RTR naming the peer in m->data, then RTS: 0 or errno. */
static int bound_rts(struct bound *b, const struct msg *m)
{
	struct vrdma_qp_attr a = { .qp_state = VRDMA_QPS_RTR };

	memcpy(a.dest_gid, m->data, VRDMA_GID_LEN);
	memcpy(&a.dest_qp_num, m->data + VRDMA_GID_LEN, 4);
	if (vrdma_modify_qp(b->qp, &a, VRDMA_QP_STATE | VRDMA_QP_DEST | VRDMA_QP_RQ_PSN))
		return errno;
	a.qp_state = VRDMA_QPS_RTS;
	return vrdma_modify_qp(b->qp, &a, VRDMA_QP_STATE | VRDMA_QP_SQ_PSN) ? errno : 0;
}

/* A receive of MSG_LEN bytes at buf + off on the bound QP. */
static int bound_recv(struct ctx *c, struct bound *b, uint64_t id, uint32_t off)
{
	struct vrdma_sge sge = { (uintptr_t)(c->buf + off), MSG_LEN, c->mr->lkey };
	struct vrdma_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return vrdma_post_recv(b->qp, &wr, &bad);
}

/* The next completion of the bound QP within ms: 1, 0 (none) or -errno. */
static int bound_wc(struct bound *b, struct vrdma_wc *wc, int ms)
{
	struct timespec t0, t;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = vrdma_poll_cq(b->cq, 1, wc);
		if (n)
			return n < 0 ? -errno : 1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= ms)
			return 0;
		usleep(2000);
	}
}

static void bound_free(struct bound *b)
{
	if (b->qp)
		vrdma_destroy_qp(b->qp);
	if (b->cq)
		vrdma_destroy_cq(b->cq);
	memset(b, 0, sizeof(*b));
}

/* Send a message from the client's scratch area at OFF_SEND + 32K. */
static int send_msg(struct ctx *c, struct vrdma_qp *qp, const struct msg *m,
		    enum vrdma_wr_opcode op, uint32_t imm)
{
	uint8_t *p = c->buf + OFF_SEND + (32u << 10);
	struct vrdma_sge sge = { .addr = (uintptr_t)p, .length = sizeof(*m), .lkey = c->mr->lkey };
	struct vrdma_send_wr wr = {
		.wr_id = 0x5e4d, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = VRDMA_SEND_SIGNALED, .imm_data = htonl(imm),
	};
	struct vrdma_send_wr *bad;

	memcpy(p, m, sizeof(*m));
	return vrdma_post_send(qp, &wr, &bad);
}

/* ---------------- server ---------------- */

static struct vrdma_qp *accept_one(struct ctx *c, struct vrdma_listener *l, int wait_ms)
{
	struct conn_info me = { (uintptr_t)c->buf, c->mr->rkey, BUF_LEN };
	struct vrdma_conn_req req;
	struct vrdma_qp *qp = qp_new(c);
	int err;

	for (unsigned i = 0; i < DEPTH; i++)
		if ((err = post_recv_slot(c, qp, i)))
			itest_die("post_recv", err);
	if ((err = vrdma_get_request(l, &req, wait_ms)))
		itest_die("get_request", err);
	if ((err = vrdma_accept(l, qp, &req, &me, sizeof(me))))
		itest_die("accept", err);
	return qp;
}

static int serve(const char *service)
{
	struct vrdma_listener *l;
	struct vrdma_qp *qp, *extra[4];
	struct vrdma_mr *stale = NULL;
	struct bound bq = { 0 };
	unsigned nextra = 0;
	struct ctx c;
	int err;

	ctx_init(&c);
	itest_fill(c.buf + OFF_READ, LEN_READ, SEED_READ);
	*(uint64_t *)(c.buf + OFF_ATOMIC) = 7;
	l = vrdma_listen(c.dev, service);
	if (!l)
		itest_die("listen", errno);
	printf("ITEST server-ready PASS\n");
	fflush(stdout);
	qp = accept_one(&c, l, T_ASK_MS);

	for (;;) {
		struct vrdma_wc wc;
		struct msg m, r = { .type = M_RESULT };

		if ((err = next_wc(&c, &wc)))
			itest_die("server wait", err);
		if (wc.opcode == VRDMA_WC_SEND_OP)
			continue;			/* our replies */
		if (wc.qp_num != qp->qp_num)
			continue;			/* error-test QPs */
		if (wc.status != VRDMA_WC_SUCCESS) {
			itest_report("server-recv", 0, "status %s", vrdma_wc_status_str(wc.status));
			return 1;
		}
		memcpy(&m, c.buf + OFF_SEND + wc.wr_id * MSG_LEN, sizeof(m));
		if (m.type == M_BYE && wc.opcode == VRDMA_WC_RECV_OP)
			break;		/* the client may already be gone */
		if ((err = post_recv_slot(&c, qp, (unsigned)wc.wr_id)))
			itest_die("repost", err);
		if (wc.opcode == VRDMA_WC_RECV_RDMA_WITH_IMM_OP) {
			/* WRITE_WITH_IMM: the imm says which check; data at OFF_IMM */
			r.result = (wc.wc_flags & VRDMA_WC_WITH_IMM) &&
				   ntohl(wc.imm_data) == 0x1234 && wc.byte_len == LEN_IMM &&
				   itest_bad_byte(c.buf + OFF_IMM, LEN_IMM, 77) < 0 ? 0 : -1;
		} else if (m.type == M_CHECK) {
			if (m.off > BUF_LEN || m.len > BUF_LEN - m.off)
				r.result = -2;
			else
				r.result = itest_bad_byte(c.buf + m.off, m.len, m.seed) < 0 ? 0 : -1;
		} else if (m.type == M_SENDDATA) {
			r.result = (wc.wc_flags & VRDMA_WC_WITH_IMM) &&
				   ntohl(wc.imm_data) == m.imm && wc.byte_len == sizeof(m) &&
				   itest_bad_byte(m.data, sizeof(m.data), m.seed) < 0 ? 0 : -1;
		} else if (m.type == M_ACCEPT_MORE) {
			for (unsigned i = 0; i < m.len && nextra < 4; i++)
				extra[nextra++] = accept_one(&c, l, T_MS);	/* it asked */
			r.result = 0;
		} else if (m.type == M_STALE_REG || m.type == M_STALE_SWAP) {
			/* SWAP: the client's key goes, a new MR takes the same
			 * range, filled with m.seed. */
			r.result = 0;
			if (m.type == M_STALE_SWAP) {
				r.result = stale && !vrdma_dereg_mr(stale) ? 0 : -1;
				itest_fill(c.buf + OFF_STALE, LEN_STALE, m.seed);
			}
			stale = vrdma_reg_mr(c.pd, c.buf + OFF_STALE, LEN_STALE,
					     VRDMA_ACCESS_LOCAL_WRITE |
					     VRDMA_ACCESS_REMOTE_WRITE);
			if (!stale)
				r.result = -1;
			r.imm = stale ? stale->rkey : 0;
		} else if (m.type == M_BIND && !bq.qp) {
			/* Bind to the client's QP named in m; answer ours. */
			bound_new(&c, &bq);
			r.result = bound_recv(&c, &bq, 0xb0, OFF_BIGRECV) ? -1 :
				   -bound_rts(&bq, &m);
			bound_name(&c, &bq, &r);
		} else if (m.type == M_UNBIND && bq.qp) {
			/* The client's send arrived: then our QP goes. */
			struct vrdma_wc bw;

			/* (within the client's wait for this answer) */
			r.result = bound_wc(&bq, &bw, T_MS / 2) == 1 && bw.wr_id == 0xb0 &&
				   bw.status == VRDMA_WC_SUCCESS ? 0 : -1;
			bound_free(&bq);
		} else if (m.type == M_BIND || m.type == M_UNBIND) {
			r.result = -1;		/* bound already, or not */
		}
		if ((err = send_msg(&c, qp, &r, VRDMA_WR_SEND, 0)))
			itest_die("server send", err);
	}
	printf("ITEST server-done PASS\n");
	bound_free(&bq);
	if (stale)
		vrdma_dereg_mr(stale);
	while (nextra)
		vrdma_destroy_qp(extra[--nextra]);
	vrdma_destroy_qp(qp);
	vrdma_close_listener(l);
	return vrdma_close(c.dev) ? 1 : 0;
}

/* ---------------- client ---------------- */

/* Wait for the completion of wr_id; others are held for later callers. */
static int wait_wr(struct ctx *c, uint64_t wr_id, struct vrdma_wc *out)
{
	struct vrdma_wc skipped[64];
	unsigned nskipped = 0;
	int err = ETIMEDOUT;

	while (nskipped < 64) {
		struct vrdma_wc wc;

		if ((err = next_wc(c, &wc)))
			break;
		if (wc.wr_id == wr_id && wc.opcode != VRDMA_WC_RECV_OP) {
			*out = wc;
			break;
		}
		skipped[nskipped++] = wc;
	}
	/* put back in order, ahead of anything still held */
	if (nskipped && nskipped + c->nheld <= 64) {
		memmove(c->held + nskipped, c->held, c->nheld * sizeof(*out));
		memcpy(c->held, skipped, nskipped * sizeof(*out));
		c->nheld += nskipped;
	}
	return nskipped == 64 ? ETIMEDOUT : err;
}

/* Send a request and return the server's result (or -100 on failure). */
static int rpc(struct ctx *c, struct vrdma_qp *qp, const struct msg *m,
	       enum vrdma_wr_opcode op, uint32_t imm)
{
	struct vrdma_wc wc;
	int got_send = 0, got_reply = 0, result = -100;

	if (send_msg(c, qp, m, op, imm))
		return -100;
	while (!(got_send && got_reply)) {
		if (next_wc(c, &wc))
			return -100;
		if (wc.status != VRDMA_WC_SUCCESS)
			return -100;
		if (wc.opcode == VRDMA_WC_RECV_OP) {
			struct msg r;

			memcpy(&r, c->buf + OFF_SEND + wc.wr_id * MSG_LEN, sizeof(r));
			post_recv_slot(c, qp, (unsigned)wc.wr_id);
			result = r.result;
			got_reply = 1;
		} else {
			got_send = 1;
		}
	}
	return result;
}

/* The server's node (client NODE argument); NULL: this node. */
static const char *peer_node;

static struct vrdma_qp *connect_one(struct ctx *c, const char *service)
{
	struct vrdma_qp *qp = qp_new(c);
	size_t len = sizeof(c->peer);
	int err;

	for (unsigned i = 0; i < DEPTH / 2; i++)
		if ((err = post_recv_slot(c, qp, i)))
			itest_die("client post_recv", err);
	err = vrdma_connect(qp, peer_node, service, "itest", 5, &c->peer, &len, T_MS);
	if (err)
		itest_die("connect", err);
	if (len != sizeof(c->peer))
		itest_die("peer private data", EPROTO);
	return qp;
}

static void t_write(struct ctx *c, struct vrdma_qp *qp)
{
	/* gather from three local pieces into one remote range */
	uint8_t *src = c->buf + (128u << 10);
	struct vrdma_sge sg[3] = {
		{ (uintptr_t)src, 1000, c->mr->lkey },
		{ (uintptr_t)src + 1000, 30000, c->mr->lkey },
		{ (uintptr_t)src + 31000, LEN_WRITE - 31000, c->mr->lkey },
	};
	struct msg m = { .type = M_CHECK, .seed = 11, .off = OFF_WRITE, .len = LEN_WRITE };
	struct vrdma_wc wc;
	int err;

	itest_fill(src, LEN_WRITE, 11);
	err = post1(qp, VRDMA_WR_RDMA_WRITE, 1, sg, 3, c->peer.addr + OFF_WRITE, c->peer.rkey);
	if (!err)
		err = wait_wr(c, 1, &wc);
	itest_report("rdma-write", !err && wc.status == VRDMA_WC_SUCCESS &&
		     wc.opcode == VRDMA_WC_RDMA_WRITE_OP, "err=%d", err);
	itest_report("rdma-write-data", rpc(c, qp, &m, VRDMA_WR_SEND, 0) == 0, NULL);
}

static void t_write_imm(struct ctx *c, struct vrdma_qp *qp)
{
	uint8_t *src = c->buf + (256u << 10);
	struct vrdma_sge sg = { (uintptr_t)src, LEN_IMM, c->mr->lkey };
	struct vrdma_send_wr wr = {
		.wr_id = 2, .sg_list = &sg, .num_sge = 1,
		.opcode = VRDMA_WR_RDMA_WRITE_WITH_IMM, .send_flags = VRDMA_SEND_SIGNALED,
		.imm_data = htonl(0x1234),
	};
	struct vrdma_send_wr *bad;
	struct vrdma_wc wc;
	int err, got = 0, result = -100;

	itest_fill(src, LEN_IMM, 77);
	wr.wr.rdma.remote_addr = c->peer.addr + OFF_IMM;
	wr.wr.rdma.rkey = c->peer.rkey;
	err = vrdma_post_send(qp, &wr, &bad);
	/* the server answers with its verdict */
	while (!err && got < 2) {
		if ((err = next_wc(c, &wc)))
			break;
		if (wc.opcode == VRDMA_WC_RECV_OP) {
			struct msg r;

			memcpy(&r, c->buf + OFF_SEND + wc.wr_id * MSG_LEN, sizeof(r));
			post_recv_slot(c, qp, (unsigned)wc.wr_id);
			result = r.result;
		} else if (wc.status != VRDMA_WC_SUCCESS) {
			err = EIO;
		}
		got++;
	}
	itest_report("rdma-write-imm", !err && result == 0, "err=%d result=%d", err, result);
}

static void t_read(struct ctx *c, struct vrdma_qp *qp)
{
	uint8_t *dst = c->buf + (384u << 10);
	struct vrdma_sge sg[2] = {
		{ (uintptr_t)dst, 4096, c->mr->lkey },
		{ (uintptr_t)dst + 4096, LEN_READ - 4096, c->mr->lkey },
	};
	struct vrdma_wc wc;
	int err;

	memset(dst, 0, LEN_READ);
	err = post1(qp, VRDMA_WR_RDMA_READ, 3, sg, 2, c->peer.addr + OFF_READ, c->peer.rkey);
	if (!err)
		err = wait_wr(c, 3, &wc);
	itest_report("rdma-read", !err && wc.status == VRDMA_WC_SUCCESS &&
		     wc.opcode == VRDMA_WC_RDMA_READ_OP && itest_bad_byte(dst, LEN_READ, SEED_READ) < 0,
		     "err=%d", err);
}

static int atomic(struct ctx *c, struct vrdma_qp *qp, enum vrdma_wr_opcode op,
		  uint64_t cmp_add, uint64_t swap, uint64_t *old)
{
	uint64_t *res = (uint64_t *)(c->buf + (512u << 10) + (48u << 10));
	struct vrdma_sge sg = { (uintptr_t)res, 8, c->mr->lkey };
	struct vrdma_send_wr wr = {
		.wr_id = 4, .sg_list = &sg, .num_sge = 1, .opcode = op,
		.send_flags = VRDMA_SEND_SIGNALED,
	};
	struct vrdma_send_wr *bad;
	struct vrdma_wc wc;
	int err;

	*res = 0xdeadbeef;
	wr.wr.atomic.remote_addr = c->peer.addr + OFF_ATOMIC;
	wr.wr.atomic.rkey = c->peer.rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	err = vrdma_post_send(qp, &wr, &bad);
	if (!err)
		err = wait_wr(c, 4, &wc);
	if (!err && wc.status != VRDMA_WC_SUCCESS)
		err = EIO;
	*old = *res;
	return err;
}

static void t_atomics(struct ctx *c, struct vrdma_qp *qp)
{
	uint64_t old = 0;
	int err;

	err = atomic(c, qp, VRDMA_WR_ATOMIC_CMP_AND_SWP, 7, 42, &old);
	itest_report("cmp-swap-hit", !err && old == 7, "old=%" PRIu64, old);
	err = atomic(c, qp, VRDMA_WR_ATOMIC_CMP_AND_SWP, 7, 1, &old);
	itest_report("cmp-swap-miss", !err && old == 42, "old=%" PRIu64, old);
	err = atomic(c, qp, VRDMA_WR_ATOMIC_FETCH_AND_ADD, 5, 0, &old);
	itest_report("fetch-add", !err && old == 42, "old=%" PRIu64, old);
	err = atomic(c, qp, VRDMA_WR_ATOMIC_FETCH_AND_ADD, 0, 0, &old);
	itest_report("fetch-add-result", !err && old == 47, "value=%" PRIu64, old);
}

static void t_send_imm(struct ctx *c, struct vrdma_qp *qp)
{
	struct msg m = { .type = M_SENDDATA, .seed = 99, .imm = 0xabcdef };

	itest_fill(m.data, sizeof(m.data), 99);
	itest_report("send-with-imm", rpc(c, qp, &m, VRDMA_WR_SEND_WITH_IMM, m.imm) == 0, NULL);
}

static void t_unsignaled(struct ctx *c, struct vrdma_qp *qp)
{
	/* 3 x depth writes, only every 16th signaled: the SQ must recycle */
	struct vrdma_sge sg = { (uintptr_t)c->buf + (640u << 10), 256, c->mr->lkey };
	struct msg m = { .type = M_CHECK, .seed = 5, .off = OFF_WRITE + 4096, .len = 256 };
	int err = 0, signaled = 0, done = 0;

	itest_fill(c->buf + (640u << 10), 256, 5);
	for (int i = 0; i < 3 * DEPTH && !err; i++) {
		struct vrdma_send_wr wr = {
			.wr_id = 1000 + i, .sg_list = &sg, .num_sge = 1,
			.opcode = VRDMA_WR_RDMA_WRITE,
			.send_flags = (i % 16 == 15) ? VRDMA_SEND_SIGNALED : 0,
		};
		struct vrdma_send_wr *bad;

		wr.wr.rdma.remote_addr = c->peer.addr + OFF_WRITE + 4096;
		wr.wr.rdma.rkey = c->peer.rkey;
		signaled += !!wr.send_flags;
		while ((err = vrdma_post_send(qp, &wr, &bad)) == ENOMEM) {
			struct vrdma_wc wc;

			if ((err = next_wc(c, &wc)) || wc.status != VRDMA_WC_SUCCESS) {
				err = err ? err : EIO;
				break;
			}
			done++;
		}
	}
	while (!err && done < signaled) {
		struct vrdma_wc wc;

		if ((err = next_wc(c, &wc)) || wc.status != VRDMA_WC_SUCCESS)
			err = err ? err : EIO;
		done++;
	}
	itest_report("unsignaled-writes", !err && done == signaled, "err=%d completions=%d/%d",
		     err, done, signaled);
	itest_report("unsignaled-data", rpc(c, qp, &m, VRDMA_WR_SEND, 0) == 0, NULL);
}

/* A fresh QP to the server that we are allowed to break. */
static void t_error(struct ctx *c, struct vrdma_qp *main_qp, const char *service,
		    const char *name, uint64_t raddr_off, uint32_t len, int bad_rkey,
		    enum vrdma_wc_status want)
{
	struct msg m = { .type = M_ACCEPT_MORE, .len = 1 };
	struct vrdma_qp *qp;
	struct vrdma_sge sg = { (uintptr_t)c->buf, len, c->mr->lkey };
	struct vrdma_wc wc;
	int err;

	/* the server accepts while we connect: ask, then connect */
	if (send_msg(c, main_qp, &m, VRDMA_WR_SEND, 0))
		itest_die("ask accept", EIO);
	qp = connect_one(c, service);
	err = post1(qp, VRDMA_WR_RDMA_WRITE, 77, &sg, 1, c->peer.addr + raddr_off,
		    bad_rkey ? c->peer.rkey ^ 0x5a5a00 : c->peer.rkey);
	if (!err)
		err = wait_wr(c, 77, &wc);
	itest_report(name, !err && wc.status == want, "err=%d status=%s", err,
		     err ? "-" : vrdma_wc_status_str(wc.status));
	/* drain the main QP: our ask and the server's reply */
	for (int got = 0; got < 2;) {
		if (next_wc(c, &wc))
			break;
		if (wc.qp_num != main_qp->qp_num)
			continue;
		if (wc.opcode == VRDMA_WC_RECV_OP)
			post_recv_slot(c, main_qp, (unsigned)wc.wr_id);
		got++;
	}
	vrdma_destroy_qp(qp);
}

/* Send a request and return the server's reply (result -100 on
 * failure); completions of other QPs (a broken one's flushes) are
 * dropped. */
static struct msg rpc_msg(struct ctx *c, struct vrdma_qp *qp, const struct msg *m)
{
	struct msg r = { .result = -100 };
	struct vrdma_wc wc;
	int got_send = 0, got_reply = 0;

	if (send_msg(c, qp, m, VRDMA_WR_SEND, 0))
		return r;
	while (!(got_send && got_reply)) {
		if (next_wc(c, &wc))
			return r;
		if (wc.qp_num != qp->qp_num)
			continue;
		if (wc.status != VRDMA_WC_SUCCESS) {
			r.result = -100;
			return r;
		}
		if (wc.opcode == VRDMA_WC_RECV_OP) {
			memcpy(&r, c->buf + OFF_SEND + wc.wr_id * MSG_LEN, sizeof(r));
			post_recv_slot(c, qp, (unsigned)wc.wr_id);
			got_reply = 1;
		} else {
			got_send = 1;
		}
	}
	return r;
}

/*
 * A key kept after the server deregistered its MR and registered the
 * same range again (a new key): a write with the old key must fail
 * with REM_ACCESS_ERR and leave the new MR's bytes alone.  Across nodes
 * the first write leaves the key in our vrdmad's cache, so the second
 * goes out with the stale translation and the server's device must
 * refuse it (docs/rdma.md, "A stale cache is harmless").
 */
static void t_stale_rkey(struct ctx *c, struct vrdma_qp *main_qp, const char *service)
{
	struct msg m = { .type = M_ACCEPT_MORE, .len = 1 };
	struct msg chk = { .type = M_CHECK, .seed = 61, .off = OFF_STALE, .len = LEN_STALE };
	uint8_t *src = c->buf + (640u << 10);
	struct vrdma_sge sg = { (uintptr_t)src, 64, c->mr->lkey };
	struct vrdma_qp *qp;
	struct vrdma_wc wc;
	struct msg r;
	uint32_t key;
	int err;

	m.type = M_STALE_REG;
	r = rpc_msg(c, main_qp, &m);
	key = r.imm;
	if (r.result) {
		itest_report("stale-rkey-setup", 0, "server reg_mr: %d", r.result);
		return;
	}
	/* A QP we may break (the stale write takes it to error). */
	m.type = M_ACCEPT_MORE;
	if (send_msg(c, main_qp, &m, VRDMA_WR_SEND, 0))
		itest_die("ask accept", EIO);
	qp = connect_one(c, service);
	memset(src, 0xa5, 64);
	err = post1(qp, VRDMA_WR_RDMA_WRITE, 78, &sg, 1, c->peer.addr + OFF_STALE, key);
	if (!err)
		err = wait_wr(c, 78, &wc);
	itest_report("stale-rkey-first-write", !err && wc.status == VRDMA_WC_SUCCESS,
		     "err=%d status=%s", err, err ? "-" : vrdma_wc_status_str(wc.status));
	/* drain the main QP: our ask and the server's reply */
	for (int got = 0; got < 2;) {
		if (next_wc(c, &wc))
			break;
		if (wc.qp_num != main_qp->qp_num)
			continue;
		if (wc.opcode == VRDMA_WC_RECV_OP)
			post_recv_slot(c, main_qp, (unsigned)wc.wr_id);
		got++;
	}
	m.type = M_STALE_SWAP;
	m.seed = chk.seed;
	r = rpc_msg(c, main_qp, &m);
	itest_report("stale-rkey-swap", r.result == 0 && r.imm != key, "result=%d", r.result);
	/* No wait: DEREG_MR is answered only once the server's device MR
	 * is gone (backend/guest/cmd.c, the held answer). */
	err = post1(qp, VRDMA_WR_RDMA_WRITE, 79, &sg, 1, c->peer.addr + OFF_STALE, key);
	if (!err)
		err = wait_wr(c, 79, &wc);
	itest_report("stale-rkey-refused", !err && wc.status == VRDMA_WC_REM_ACCESS_ERR,
		     "err=%d status=%s", err, err ? "-" : vrdma_wc_status_str(wc.status));
	vrdma_destroy_qp(qp);
	r = rpc_msg(c, main_qp, &chk);
	itest_report("stale-rkey-new-mr-intact", r.result == 0, "result=%d", r.result);
}

/*
 * A QP bound by number whose peer QP is destroyed hears nothing, as an RC
 * QP: its posted receive stays (no FLUSH_ERR right behind the last good
 * completion, which ibv_rc_pingpong and ibv_srq_pingpong took for a
 * failure when the peer exited first), and a send fails with
 * RETRY_EXC_ERR after the retry time, then the receive flushes.  Across
 * nodes the peer's vrdmad disconnects the device QPs at the destroy.
 */
static void t_bind_gone(struct ctx *c, struct vrdma_qp *main_qp)
{
	struct msg m = { .type = M_BIND };
	struct vrdma_sge sg = { (uintptr_t)(c->buf + OFF_SEND + (40u << 10)), 8, c->mr->lkey };
	struct bound b;
	struct vrdma_wc wc;
	struct msg r;
	int n, err;

	bound_new(c, &b);
	bound_name(c, &b, &m);
	r = rpc_msg(c, main_qp, &m);
	err = r.result ? EIO : bound_rts(&b, &r);
	if (!err)
		err = bound_recv(c, &b, 0xb1, OFF_BIGRECV);
	if (!err)
		err = post1(b.qp, VRDMA_WR_SEND, 0xb2, &sg, 1, 0, 0);
	n = err ? 0 : bound_wc(&b, &wc, T_MS);
	itest_report("bind-send", n == 1 && wc.wr_id == 0xb2 && wc.status == VRDMA_WC_SUCCESS,
		     "err=%d result=%d n=%d status=%s", err, r.result, n,
		     n == 1 ? vrdma_wc_status_str(wc.status) : "-");
	m.type = M_UNBIND;
	r = rpc_msg(c, main_qp, &m);
	itest_report("bind-peer-destroyed", r.result == 0, "result=%d", r.result);
	n = bound_wc(&b, &wc, 1500);
	itest_report("bind-peer-gone-recv-kept", n == 0 && b.qp->state == VRDMA_QPS_RTS,
		     "n=%d wr_id=%#llx status=%s", n, n == 1 ? (unsigned long long)wc.wr_id : 0ull,
		     n == 1 ? vrdma_wc_status_str(wc.status) : "-");
	err = post1(b.qp, VRDMA_WR_SEND, 0xb3, &sg, 1, 0, 0);
	n = err ? 0 : bound_wc(&b, &wc, T_MS);
	itest_report("bind-peer-gone-send-fails",
		     n == 1 && wc.wr_id == 0xb3 && wc.status == VRDMA_WC_RETRY_EXC_ERR,
		     "err=%d n=%d wr_id=%#llx status=%s", err, n,
		     n == 1 ? (unsigned long long)wc.wr_id : 0ull,
		     n == 1 ? vrdma_wc_status_str(wc.status) : "-");
	n = bound_wc(&b, &wc, T_MS);
	itest_report("bind-peer-gone-recv-flushed",
		     n == 1 && wc.wr_id == 0xb1 && wc.status == VRDMA_WC_WR_FLUSH_ERR,
		     "n=%d status=%s", n, n == 1 ? vrdma_wc_status_str(wc.status) : "-");
	bound_free(&b);
}

static int client(const char *service)
{
	struct msg bye = { .type = M_BYE };
	struct vrdma_qp *qp;
	struct ctx c;

	ctx_init(&c);
	qp = connect_one(&c, service);
	itest_report("connect", qp->state == VRDMA_QPS_RTS, NULL);
	t_write(&c, qp);
	t_write_imm(&c, qp);
	t_read(&c, qp);
	t_atomics(&c, qp);
	t_send_imm(&c, qp);
	t_unsignaled(&c, qp);
	t_error(&c, qp, service, "bad-rkey", 0, 64, 1, VRDMA_WC_REM_ACCESS_ERR);
	t_error(&c, qp, service, "out-of-bounds", BUF_LEN - 63, 64, 0,
		VRDMA_WC_REM_ACCESS_ERR);
	t_stale_rkey(&c, qp, service);
	t_bind_gone(&c, qp);
	/* the main connection still works after its neighbours failed */
	t_read(&c, qp);
	if (send_msg(&c, qp, &bye, VRDMA_WR_SEND, 0))
		itest_report("bye", 0, NULL);
	else {
		struct vrdma_wc wc;

		wait_wr(&c, 0x5e4d, &wc);
	}
	vrdma_destroy_qp(qp);
	if (vrdma_close(c.dev))
		itest_report("close", 0, NULL);
	printf("ITEST client-done %s failures=%d\n", itest_failures ? "FAIL" : "PASS",
	       itest_failures);
	return itest_failures ? 1 : 0;
}

/*
 * Issue 12: a program that only polls one CQ while dom0 kills vrdmad
 * must get EIO soon, not "no completion" until some time limit of its own.
 * Prints "poll-ready", then the wall-clock time of the EIO (ms), so dom0
 * can set it against the time it killed vrdmad.
 */
static int poll_dom0(int limit_s)
{
	struct vrdma_device *dev = vrdma_open(NULL, T_OPEN_MS);
	struct timespec ts;
	struct vrdma_cq *cq;
	struct vrdma_wc wc;
	time_t end;
	int n = 0;

	if (!dev)
		itest_die("vrdma_open", errno);
	cq = vrdma_create_cq(dev, 16, NULL);
	if (!cq)
		itest_die("vrdma_create_cq", errno);
	printf("poll-ready\n");
	end = time(NULL) + limit_s;
	while (n == 0 && time(NULL) < end)
		n = vrdma_poll_cq(cq, 1, &wc);
	clock_gettime(CLOCK_REALTIME, &ts);
	itest_report("poll-dom0-eio", n < 0 && errno == EIO, "poll_cq %d (%s) at %lld ms", n,
		     n < 0 ? strerror(errno) : "no error",
		     (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	/* No vrdma_close(): it would wait (bounded) for a backend that is
	 * gone, and dom0 times how soon we end. */
	fflush(stdout);
	_exit(itest_failures ? 1 : 0);
}

/*
 * Issue 12 item 3 (dom0 runs these in two domUs, tests/xen/suite-check.sh):
 * listen-peer waits up to limit_s for one request on SERVICE and prints
 * who sent it (dom0's word: node and domain), then rejects it (or
 * accepts it); with limit_s 0 it only holds the name until killed.
 * connect exits with vrdma_connect's errno (0 connected).
 */
static int listen_peer(const char *service, int limit_s, bool accept)
{
	struct vrdma_qp_init_attr a = { .cap = { 4, 4, 1, 1 } };
	struct vrdma_device *dev = vrdma_open(NULL, T_OPEN_MS);
	struct vrdma_conn_peer peer;
	struct vrdma_conn_req req;
	struct vrdma_listener *l;
	struct vrdma_pd *pd;
	struct vrdma_qp *qp;
	int rc;

	if (!dev)
		itest_die("vrdma_open", errno);
	l = vrdma_listen(dev, service);
	if (!l)
		itest_die("vrdma_listen", errno);
	printf("listening-peer on %s\n", service);
	if (!limit_s)
		for (;;)
			pause();
	rc = vrdma_get_request(l, &req, limit_s * 1000);
	if (rc == ETIMEDOUT) {	/* a squatter nobody asks: expected */
		printf("listen-peer: no request in %d s\n", limit_s);
		return 1;
	}
	if (rc)
		itest_die("vrdma_get_request", rc);
	rc = vrdma_get_request_peer(l, &req, &peer);
	if (rc)
		itest_die("vrdma_get_request_peer", rc);
	printf("peer node=%s domid=%u devid=%u\n", peer.node, peer.domid, peer.devid);
	if (!accept) {
		vrdma_reject(l, &req);
		vrdma_close(dev);
		return 0;
	}
	if (!(pd = vrdma_alloc_pd(dev)) ||
	    !(a.send_cq = a.recv_cq = vrdma_create_cq(dev, 8, NULL)) ||
	    !(qp = vrdma_create_qp(pd, &a)))
		itest_die("setup", errno);
	rc = vrdma_accept(l, qp, &req, NULL, 0);
	printf("accept: %s\n", rc ? strerror(rc) : "ok");
	sleep(3);	/* the connector's node decides now */
	vrdma_close(dev);
	return 0;
}

static int connect_errno(const char *service, const char *node)
{
	struct vrdma_qp_init_attr a = { .cap = { 4, 4, 1, 1 } };
	struct vrdma_device *dev = vrdma_open(NULL, T_OPEN_MS);
	struct vrdma_pd *pd;
	struct vrdma_qp *qp;
	int rc;

	if (!dev || !(pd = vrdma_alloc_pd(dev)) ||
	    !(a.send_cq = a.recv_cq = vrdma_create_cq(dev, 8, NULL)) ||
	    !(qp = vrdma_create_qp(pd, &a)))
		itest_die("setup", errno);
	rc = vrdma_connect(qp, node, service, NULL, 0, NULL, NULL, T_MS);
	printf("connect %s: %s\n", service, rc ? strerror(rc) : "connected");
	vrdma_close(dev);
	return rc;
}

/*
 * A listener flood (issue 12): listen on PREFIX-0, PREFIX-1, ... until
 * a listen is refused, say how many and why, then hold them for SECONDS
 * (a tenant's processes together stop at its `listeners`).
 */
static int listen_flood(const char *prefix, int hold_s)
{
	struct vrdma_device *dev = vrdma_open(NULL, T_OPEN_MS);
	char svc[32];
	int n, err = 0;

	if (!dev)
		itest_die("vrdma_open", errno);
	for (n = 0; n < 64; n++) {
		snprintf(svc, sizeof(svc), "%.16s-%d", prefix, n);
		if (!vrdma_listen(dev, svc)) {
			err = errno;
			break;
		}
	}
	printf("listen-flood %s: %d listening, then %s\n", prefix, n,
	       err ? strerror(err) : "no refusal");
	sleep((unsigned)hold_s);
	vrdma_close(dev);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "poll-dom0"))
		return poll_dom0(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "server"))
		return serve(argv[2]);
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "client")) {
		peer_node = argc == 4 ? argv[3] : NULL;
		return client(argv[2]);
	}
	if ((argc == 4 || (argc == 5 && !strcmp(argv[4], "accept"))) &&
	    !strcmp(argv[1], "listen-peer"))
		return listen_peer(argv[2], atoi(argv[3]), argc == 5);
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "connect"))
		return connect_errno(argv[2], argc == 4 ? argv[3] : NULL);
	if (argc == 4 && !strcmp(argv[1], "listen-flood"))
		return listen_flood(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: itest_guest server SERVICE | client SERVICE [NODE] | "
		"poll-dom0 SECONDS | listen-peer SERVICE SECONDS [accept] | "
		"connect SERVICE [NODE] | listen-flood PREFIX SECONDS\n");
	return 2;
}
