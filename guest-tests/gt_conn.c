// SPDX-License-Identifier: MIT
/*
 * Connection setup for vrdma-bw / vrdma-lat: device, one buffer and MR,
 * one CQ, one QP, and the parameter exchange in the private data.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "gt_common.h"

#define GT_PD_MAGIC	0x7662u		/* "bv" */
#define GT_PD_VERSION	2u
#define GT_PD_LEN	32u
#define GT_F_VERIFY	(1u << 0)
#define GT_F_ALL	(1u << 1)
#define GT_F_BIDIR	(1u << 2)
#define GT_PAGE		4096u

/*
 * Client -> server private data (32 bytes, little endian), QP 1:
 *   0 magic u16 | 2 version u8 | 3 test u8 | 4 mode u8 | 5 flags u8 |
 *   6 tx_depth u16 | 8 max_size u32 | 12 nqps u16 | 14 qp index u16 |
 *   16 addr u64 | 24 rkey u32 | 28 len u32
 * QPs 2..N: bytes 0..13 as QP 1's, their index at 14, then
 *   16 nonce u32 | 20..31 zero
 * Server -> client:
 *   0 magic u16 | 2 version u8 | 3 status u8 | 4 credits u16 |
 *   6 qp index u16 | 8 rx_slot_len u32 | 12 nonce u32 | 16 addr u64 |
 *   24 rkey u32 | 28 len u32
 * addr/rkey/len name the region the peer targets with WRITE or READ;
 * credits are the receives per QP for SEND data (0: none).  The nonce is
 * the server's random draw for this client: only the one that got QP 1's
 * answer knows it, and the server also takes QPs 2..N only from QP 1's
 * requester as dom0 names it (vrdma_get_request_peer).  A status other
 * than 0 is a refusal with its reason (GT_REFUSE_*), accepted on a QP of
 * its own only to carry it; the other fields are 0 then.  Version 1 had
 * iters at 12 and no -q or -b: refused both ways.
 */
#define GT_REFUSE_PARAMS	1u	/* unknown parameters (another version?) */
#define GT_REFUSE_DIFFER	2u	/* the server's -q or -b differ */
#define GT_REFUSE_BUSY		3u	/* serving another client */
#define GT_REFUSE_FIT		4u	/* the server cannot make what they need */
static void gt_put16(uint8_t *p, uint16_t v) { v = htole16(v); memcpy(p, &v, 2); }
static void gt_put32(uint8_t *p, uint32_t v) { v = htole32(v); memcpy(p, &v, 4); }
static void gt_put64(uint8_t *p, uint64_t v) { v = htole64(v); memcpy(p, &v, 8); }
static uint16_t gt_get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return le16toh(v); }
static uint32_t gt_get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }
static uint64_t gt_get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }

static size_t gt_round(size_t v, size_t to)
{
	return (v + to - 1) / to * to;
}

/*
 * Message slots in the data region for a size (offsets wrap beyond).  With
 * several QPs a multiple of them: iteration i goes to QP i % nqps and slot
 * i % slots, so each slot belongs to one QP, whose order RC keeps.
 */
uint32_t gt_slots(const struct gt_ctx *c, size_t size)
{
	size_t n = size ? c->region_len / size : 0;
	size_t cap = c->nqps > 1024 ? c->nqps : 1024;

	if (n > cap)
		n = cap;
	if (n >= c->nqps)
		n -= n % c->nqps;
	return n ? (uint32_t)n : 1;
}

/*
 * Layout from the agreed parameters.  bw: the data region holds tx_depth
 * messages per QP up to GT_DATA_CAP (with --verify at least one per QP),
 * twice with -b (this side's half, the peer's half).  lat: one send and
 * one receive message.  SEND data lands in receive slots, so those are
 * message-sized then, credits for the data plus GT_CTL_RESERVE().
 */
static void gt_layout(struct gt_ctx *c)
{
	size_t msg = c->max_size;
	int sends = !c->server || c->bidir;	/* bw: this side streams */
	int send_rx = c->mode == GT_MODE_SEND && (c->test == GT_LAT || c->server || c->bidir);

	c->rx_credits = 0;
	if (c->test == GT_LAT) {
		c->data_len = gt_round(2 * msg, 64);
		c->region_len = c->data_len / 2;
	} else if (c->mode == GT_MODE_SEND && !sends) {
		c->data_len = c->region_len = 0;
	} else {
		size_t want = msg * c->tx_depth * c->nqps;
		size_t cap = GT_DATA_CAP > msg ? GT_DATA_CAP : msg;

		if (want > cap)
			want = cap;
		if (c->verify && want < msg * c->nqps)
			want = msg * c->nqps;
		c->region_len = gt_round(want, 64);
		c->data_len = c->bidir && c->mode != GT_MODE_SEND ? 2 * c->region_len : c->region_len;
	}
	if (send_rx) {
		size_t n;

		c->rx_slot_len = (uint32_t)gt_round(msg > GT_CTL_LEN ? msg : GT_CTL_LEN, 64);
		if (c->test == GT_LAT) {
			n = 4;
		} else {
			uint32_t rsv = GT_CTL_RESERVE(c->bidir);

			/* GT_RX_CAP over all receives, the reserve's too. */
			n = GT_RX_CAP / c->nqps / c->rx_slot_len;
			n = n > rsv ? n - rsv : 0;
			if (n > c->tx_depth)
				n = c->tx_depth;
			if (n < 2)
				n = 2;
			c->rx_credits = (uint32_t)n;
			n += rsv;
		}
		c->rx_slots = (uint32_t)n;
	} else {
		c->rx_slot_len = GT_CTL_LEN;
		c->rx_slots = 16;
	}
	c->sq_depth = (c->test == GT_BW && sends ? c->tx_depth : 16) + GT_CTL_SLOTS;
}

static int gt_open(struct gt_ctx *c, struct gt_opts *o)
{
	memset(c, 0, sizeof(*c));
	c->o = o;
	c->dev = vrdma_open(o->dev_spec, o->timeout_s * 1000);
	if (!c->dev) {
		fprintf(stderr, "%s: vrdma_open: %s\n", o->prog, strerror(errno));
		return -errno;
	}
	/* -e: perftest's "sleep on CQ events" instead of polling first. */
	if (o->events && vrdma_set_wait_policy(c->dev, VRDMA_WAIT_THROUGHPUT)) {
		fprintf(stderr, "%s: vrdma_set_wait_policy: %s\n", o->prog, strerror(EINVAL));
		return -EINVAL;
	}
	c->pd = vrdma_alloc_pd(c->dev);
	if (!c->pd) {
		fprintf(stderr, "%s: vrdma_alloc_pd: %s\n", o->prog, strerror(errno));
		return -errno;
	}
	return 0;
}

/* Post every receive slot of a QP once; reposting is gt_progress()'s. */
static int gt_post_rx_all(struct gt_ctx *c, struct gt_qp *q)
{
	uint32_t i;

	for (i = 0; i < c->rx_slots; i++) {
		struct vrdma_sge sge = {
			.addr = (uintptr_t)(q->rx + (size_t)i * c->rx_slot_len),
			.length = c->rx_slot_len,
			.lkey = c->mr->lkey,
		};
		struct vrdma_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
		struct vrdma_recv_wr *bad;
		int ret = vrdma_post_recv(q->qp, &wr, &bad);

		if (ret)
			return -ret;
	}
	return 0;
}

static int gt_post_rx_qps(struct gt_ctx *c)
{
	uint32_t i;
	int ret = 0;

	for (i = 0; i < c->nqps && !ret; i++)
		ret = gt_post_rx_all(c, &c->qps[i]);
	return ret;
}

static const struct gt_ctx *gt_sort_ctx;	/* qsort() passes no context */

static int gt_cmp_qpn(const void *a, const void *b)
{
	uint32_t x = gt_sort_ctx->qps[*(const uint32_t *)a].qp->qp_num;
	uint32_t y = gt_sort_ctx->qps[*(const uint32_t *)b].qp->qp_num;

	return x < y ? -1 : x > y;
}

/* Completion entries of one QP: one CQ serves every QP, one place to
 * poll and to sleep on. */
static uint32_t gt_qp_cqe(const struct gt_ctx *c)
{
	return c->sq_depth + c->rx_slots;
}

/* The one buffer: data region, then each QP's receive and control slots. */
static uint64_t gt_buf_len(const struct gt_ctx *c)
{
	uint64_t per_qp = (uint64_t)c->rx_slots * c->rx_slot_len + GT_CTL_SLOTS * GT_CTL_LEN;

	return gt_round(c->data_len + c->nqps * per_qp, GT_PAGE);
}

/* Whether a side with this layout fits one CQ and one buffer. */
static int gt_fits(const struct gt_ctx *c)
{
	return (uint64_t)c->nqps * gt_qp_cqe(c) <= GT_CQ_MAX && gt_buf_len(c) <= GT_BUF_MAX;
}

/* The largest -q both sides fit with c's other parameters (0: none). */
static uint32_t gt_max_qps(const struct gt_ctx *c)
{
	struct gt_ctx t = *c;
	uint32_t n;

	for (n = GT_MAX_QPS; n; n--) {
		t.nqps = n;
		t.server = 0;
		gt_layout(&t);
		if (!gt_fits(&t))
			continue;
		t.server = 1;
		gt_layout(&t);
		if (gt_fits(&t))
			break;
	}
	return n;
}

/*
 * Say why a side cannot run c's layout (after gt_layout(c)), naming the
 * options and the largest -q that runs; 0 if it can.
 */
static int gt_explain_fit(const struct gt_ctx *c, const char *who)
{
	const char *prog = c->o->prog;
	uint64_t cqe = (uint64_t)c->nqps * gt_qp_cqe(c);

	if (gt_fits(c))
		return 0;
	if (cqe > GT_CQ_MAX)
		fprintf(stderr, "%s: -q %u needs %llu completion entries on %s (%u per QP: "
			"%u sends, %u receives), one CQ holds %u: lower -q or -t\n", prog,
			c->nqps, (unsigned long long)cqe, who, gt_qp_cqe(c), c->sq_depth,
			c->rx_slots, GT_CQ_MAX);
	else
		fprintf(stderr, "%s: -q %u with %u-byte messages (-s%s) needs a %llu MiB "
			"buffer on %s (data region %zu MiB, receives %llu MiB: %u per QP of "
			"%u bytes), vrdma_alloc_buf() takes at most %u MiB: lower -q, -s or -t\n",
			prog, c->nqps, c->max_size, c->all ? ", up to 8M with -a" : "",
			(unsigned long long)(gt_buf_len(c) >> 20), who, c->data_len >> 20,
			(unsigned long long)((uint64_t)c->nqps * c->rx_slots * c->rx_slot_len >> 20),
			c->rx_slots, c->rx_slot_len, GT_BUF_MAX >> 20);
	if (gt_max_qps(c))
		fprintf(stderr, "%s: (at most -q %u with these options)\n", prog, gt_max_qps(c));
	return -EINVAL;
}

/* The client's parameters from its options. */
static void gt_client_params(struct gt_ctx *c, const struct gt_opts *o)
{
	c->test = o->test;
	c->mode = o->mode;
	c->verify = o->verify;
	c->all = o->all;
	c->tx_depth = o->tx_depth;
	c->max_size = (uint32_t)(o->all ? GT_MAX_SIZE : o->size);
	c->iters = o->iters;
	c->nqps = o->nqps;
	c->bidir = o->bidir;
}

/*
 * Before anything is opened: whether the client's options can run, on
 * its side and on the server's (which sizes itself from them); exit 2.
 */
int gt_check_fit(const struct gt_opts *o)
{
	struct gt_ctx c;

	memset(&c, 0, sizeof(c));
	c.o = (struct gt_opts *)o;
	gt_client_params(&c, o);
	gt_layout(&c);
	if (gt_explain_fit(&c, "this side"))
		return -EINVAL;
	c.server = 1;
	gt_layout(&c);
	return gt_explain_fit(&c, "the server");
}

/* Buffer, MR, one CQ and nqps QPs for the layout. */
static int gt_resources(struct gt_ctx *c)
{
	struct vrdma_qp_init_attr qa = { 0 };
	size_t rx_len, ctl_len, cqe;
	const char *what;
	uint32_t i;

	gt_layout(c);
	if (gt_explain_fit(c, c->server ? "this server" : "this side"))
		return -EINVAL;
	cqe = (size_t)c->nqps * gt_qp_cqe(c);
	rx_len = (size_t)c->rx_slots * c->rx_slot_len;
	ctl_len = GT_CTL_SLOTS * GT_CTL_LEN;
	c->buf_len = gt_buf_len(c);
	what = "calloc";
	c->qps = calloc(c->nqps, sizeof(*c->qps));
	c->qp_order = calloc(c->nqps, sizeof(*c->qp_order));
	c->credit_due = calloc(c->nqps, sizeof(*c->credit_due));
	errno = ENOMEM;
	if (!c->qps || !c->qp_order || !c->credit_due)
		goto fail;
	what = "vrdma_alloc_buf";
	c->buf = vrdma_alloc_buf(c->dev, c->buf_len);
	if (!c->buf)
		goto fail;
	c->data = c->buf;
	c->exp = c->data_len > c->region_len ? c->data + c->region_len : c->data;
	what = "vrdma_reg_mr";
	c->mr = vrdma_reg_mr(c->pd, c->buf, c->buf_len, VRDMA_ACCESS_LOCAL_WRITE |
			     VRDMA_ACCESS_REMOTE_WRITE | VRDMA_ACCESS_REMOTE_READ);
	if (!c->mr)
		goto fail;
	what = "vrdma_create_cq";
	c->cq = vrdma_create_cq(c->dev, (int)cqe, c);
	if (!c->cq)
		goto fail;
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.cap.max_send_wr = c->sq_depth;
	qa.cap.max_recv_wr = c->rx_slots;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	what = "vrdma_create_qp";
	for (i = 0; i < c->nqps; i++) {
		struct gt_qp *q = &c->qps[i];

		q->idx = i;
		q->rx = c->buf + c->data_len + (size_t)i * rx_len;
		q->ctl = c->buf + c->data_len + c->nqps * rx_len + (size_t)i * ctl_len;
		q->qp = vrdma_create_qp(c->pd, &qa);
		if (!q->qp)
			goto fail;
		c->qp_order[i] = i;
	}
	gt_sort_ctx = c;
	qsort(c->qp_order, c->nqps, sizeof(*c->qp_order), gt_cmp_qpn);
	c->use_credits = c->test == GT_BW && c->mode == GT_MODE_SEND && (!c->server || c->bidir);
	c->gives_credits = c->rx_credits != 0;
	return 0;
fail:
	fprintf(stderr, "%s: %s: %s%s\n", c->o->prog, what, strerror(errno),
		c->nqps > 1 && errno == ENOMEM ? " (lower -q, -t or -s)" : "");
	return -errno;
}

static void gt_err(struct gt_ctx *c, const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", c->o->prog, what, strerror(err));
}

/* The client's private data for QP idx. */
static void gt_client_pd(const struct gt_ctx *c, uint8_t *pd, uint32_t idx)
{
	memset(pd, 0, GT_PD_LEN);
	gt_put16(pd + 0, GT_PD_MAGIC);
	pd[2] = GT_PD_VERSION;
	pd[3] = (uint8_t)c->test;
	pd[4] = (uint8_t)c->mode;
	pd[5] = (uint8_t)((c->verify ? GT_F_VERIFY : 0) | (c->all ? GT_F_ALL : 0) |
			  (c->bidir ? GT_F_BIDIR : 0));
	gt_put16(pd + 6, (uint16_t)c->tx_depth);
	gt_put32(pd + 8, c->max_size);
	gt_put16(pd + 12, (uint16_t)c->nqps);
	gt_put16(pd + 14, (uint16_t)idx);
	if (idx) {
		gt_put32(pd + 16, c->nonce);
		return;
	}
	gt_put64(pd + 16, (uintptr_t)c->exp);
	gt_put32(pd + 24, c->mr->rkey);
	gt_put32(pd + 28, (uint32_t)c->region_len);
}

/* The server's reason for a refusal, as the client prints it. */
static const char *gt_refusal(uint32_t status)
{
	switch (status) {
	case GT_REFUSE_PARAMS:
		return "it does not know these parameters (another version of vrdma-bw?)";
	case GT_REFUSE_DIFFER:
		return "it was started with another -q or -b, and takes only the same";
	case GT_REFUSE_BUSY:
		return "it is busy with another client";
	case GT_REFUSE_FIT:
		return "it cannot make the CQ, QPs or buffer these parameters need";
	default:
		return "for a reason this version does not know";
	}
}

/* Connect QP idx; the first answer sets what the peer offers. */
static int gt_connect_one(struct gt_ctx *c, uint32_t idx)
{
	uint8_t pd[GT_PD_LEN], peer[VRDMA_MAX_PRIVATE_DATA];
	size_t peer_len = sizeof(peer);
	struct gt_opts *o = c->o;
	uint32_t credits;
	int ret;

	gt_client_pd(c, pd, idx);
	ret = vrdma_connect(c->qps[idx].qp, o->node, o->service, pd, sizeof(pd), peer,
			    &peer_len, o->timeout_s * 1000);
	if (ret == ECONNREFUSED) {
		/* A server says why it refuses (below) while it can; a plain
		 * reject (no server, or one out of QPs for answers) is this. */
		fprintf(stderr, "%s: nobody listens on service %s%s%s, or it refused without "
			"a reason (QP %u of %u): %s\n",
			o->prog, o->service, *o->node ? " of node " : "", o->node, idx + 1,
			c->nqps, strerror(ret));
		return -ret;
	}
	if (ret == ECONNRESET) {
		fprintf(stderr, "%s: vrdma_connect (QP %u of %u): %s: the server dropped "
			"the connection at once (a refusal whose reason came too late?): "
			"its output says why\n", o->prog, idx + 1, c->nqps, strerror(ret));
		return -ret;
	}
	if (ret) {
		fprintf(stderr, "%s: vrdma_connect (QP %u of %u): %s\n", o->prog, idx + 1,
			c->nqps, strerror(ret));
		return -ret;
	}
	if (peer_len >= GT_PD_LEN && gt_get16(peer) == GT_PD_MAGIC &&
	    peer[2] == GT_PD_VERSION && peer[3] != 0) {
		fprintf(stderr, "%s: the server refused%s: %s\n", o->prog,
			idx ? " a QP after the first" : "", gt_refusal(peer[3]));
		return -ECONNREFUSED;
	}
	if (peer_len < GT_PD_LEN || gt_get16(peer) != GT_PD_MAGIC ||
	    peer[2] != GT_PD_VERSION || gt_get16(peer + 6) != idx) {
		fprintf(stderr, "%s: server answered with unexpected private data\n", o->prog);
		return -EPROTO;
	}
	credits = gt_get16(peer + 4);
	if (idx) {
		/* Every QP reaches the same buffer and receives. */
		if (gt_get64(peer + 16) != c->raddr || gt_get32(peer + 24) != c->rkey ||
		    credits != c->qps[0].credits || gt_get32(peer + 12) != c->nonce) {
			fprintf(stderr, "%s: server answered QP %u unlike QP 1\n", o->prog, idx + 1);
			return -EPROTO;
		}
		c->qps[idx].credits = credits;
		return 0;
	}
	c->raddr = gt_get64(peer + 16);
	c->rkey = gt_get32(peer + 24);
	c->rlen = gt_get32(peer + 28);
	c->nonce = gt_get32(peer + 12);
	c->qps[0].credits = credits;
	c->peer_rx_slots = credits;
	if ((c->mode == GT_MODE_SEND && c->test == GT_BW && !credits) ||
	    gt_get32(peer + 8) < (c->mode == GT_MODE_SEND ? c->max_size : GT_CTL_LEN) ||
	    (c->mode != GT_MODE_SEND && c->rlen < (c->test == GT_LAT ? c->max_size : c->region_len))) {
		fprintf(stderr, "%s: server's buffer does not fit the test\n", o->prog);
		return -EPROTO;
	}
	return 0;
}

int gt_client_connect(struct gt_ctx *c, struct gt_opts *o)
{
	/* Test hook (tests/gtopts.sh): a client that connects only its first
	 * QPs, then stays silent for --timeout, as one that hung midway. */
	const char *env = getenv("VRDMA_GT_TEST_STOP_QPS");
	uint32_t i, stop = env ? (uint32_t)strtoul(env, NULL, 10) : UINT32_MAX;
	int ret, rx_early;

	ret = gt_open(c, o);
	if (ret)
		return ret;
	gt_client_params(c, o);
	ret = gt_resources(c);
	if (ret)
		return ret;
	/* Receives before connect if the library allows it, else right after. */
	rx_early = gt_post_rx_qps(c) == 0;
	for (i = 0; i < c->nqps; i++) {
		if (i == stop) {
			fprintf(stderr, "%s: VRDMA_GT_TEST_STOP_QPS: silent after QP %u of %u\n",
				o->prog, i, c->nqps);
			sleep((unsigned int)o->timeout_s);
			return -ETIMEDOUT;
		}
		ret = gt_connect_one(c, i);
		if (ret)
			return ret;
	}
	if (!rx_early) {
		ret = gt_post_rx_qps(c);
		if (ret) {
			gt_err(c, "vrdma_post_recv", -ret);
			return ret;
		}
	}
	return 0;
}

/* Parse and check the client's first request; -EPROTO rejects it. */
static int gt_parse_request(struct gt_ctx *c, const struct vrdma_conn_req *req)
{
	const uint8_t *p = req->private_data;

	if (req->private_data_len < GT_PD_LEN || gt_get16(p) != GT_PD_MAGIC ||
	    p[2] != GT_PD_VERSION || p[3] != c->o->test || p[4] > GT_MODE_SEND ||
	    gt_get16(p + 14) != 0)
		return -EPROTO;
	c->test = p[3];
	c->mode = p[4];
	c->verify = !!(p[5] & GT_F_VERIFY);
	c->all = !!(p[5] & GT_F_ALL);
	c->bidir = !!(p[5] & GT_F_BIDIR);
	c->tx_depth = gt_get16(p + 6);
	c->max_size = gt_get32(p + 8);
	c->nqps = gt_get16(p + 12);
	c->raddr = gt_get64(p + 16);
	c->rkey = gt_get32(p + 24);
	c->rlen = gt_get32(p + 28);
	if (!c->tx_depth || c->tx_depth > 1024 || !c->max_size ||
	    c->max_size > GT_MAX_SIZE || (c->test == GT_LAT && c->mode == GT_MODE_READ) ||
	    !c->nqps || c->nqps > GT_MAX_QPS ||
	    (c->test == GT_LAT && (c->nqps > 1 || c->bidir)))
		return -EPROTO;
	return 0;
}

/* A server given -q or -b takes only a client that asks for the same
 * (perftest compares its parameters too); 0 or -EPROTO after saying so. */
static int gt_server_agrees(const struct gt_ctx *c)
{
	const struct gt_opts *o = c->o;

	if (o->nqps_set && o->nqps != c->nqps) {
		fprintf(stderr, "%s: the client asks for -q %u, this server was started "
			"with -q %u: refused\n", o->prog, c->nqps, o->nqps);
		return -EPROTO;
	}
	if (o->bidir && !c->bidir) {
		fprintf(stderr, "%s: this server was started with -b, the client without: "
			"refused\n", o->prog);
		return -EPROTO;
	}
	return 0;
}

/*
 * Refuse a request saying why: vrdma_reject() carries no reason, so the
 * request is accepted on a QP of its own with the status in the private
 * data.  That QP stays until teardown and at least GT_REFUSE_LINGER_MS:
 * destroyed at once, the client's vrdma_connect() may find its QP in error
 * before it reads the answer (ECONNRESET), and nothing tells the server
 * when it has.  A plain reject when no QP can be had (4 at most).
 */
#define GT_REFUSE_LINGER_MS	500u

static void gt_refuse(struct gt_ctx *c, const struct vrdma_conn_req *req, uint32_t status)
{
	struct vrdma_qp_init_attr qa = { 0 };
	uint8_t pd[GT_PD_LEN] = { 0 };
	struct vrdma_cq *cq = NULL;
	struct vrdma_qp *qp = NULL;
	uint32_t n = c->n_refused;

	if (n < sizeof(c->refused_qp) / sizeof(c->refused_qp[0]))
		cq = vrdma_create_cq(c->dev, 4, NULL);
	if (cq) {
		qa.send_cq = cq;
		qa.recv_cq = cq;
		qa.cap.max_send_wr = 1;
		qa.cap.max_recv_wr = 1;
		qa.cap.max_send_sge = 1;
		qa.cap.max_recv_sge = 1;
		qp = vrdma_create_qp(c->pd, &qa);
	}
	gt_put16(pd + 0, GT_PD_MAGIC);
	pd[2] = GT_PD_VERSION;
	pd[3] = (uint8_t)status;
	if (qp && !vrdma_accept(c->lst, qp, req, pd, sizeof(pd))) {
		c->refused_qp[n] = qp;
		c->refused_cq[n] = cq;
		c->refused_ns = gt_now_ns();
		c->n_refused++;
		return;
	}
	vrdma_reject(c->lst, req);
	if (qp)
		vrdma_destroy_qp(qp);
	if (cq)
		vrdma_destroy_cq(cq);
}

/* The refusals' QPs go, GT_REFUSE_LINGER_MS after the last at the latest. */
static void gt_refused_free(struct gt_ctx *c)
{
	uint64_t until = c->refused_ns + GT_REFUSE_LINGER_MS * 1000000ull, now;
	uint32_t i;

	if (!c->n_refused)
		return;
	now = gt_now_ns();
	if (now < until)
		usleep((useconds_t)((until - now) / 1000));
	for (i = 0; i < c->n_refused; i++) {
		vrdma_destroy_qp(c->refused_qp[i]);
		vrdma_destroy_cq(c->refused_cq[i]);
	}
	c->n_refused = 0;
}

/* The server's answer on QP idx. */
static int gt_accept_one(struct gt_ctx *c, const struct vrdma_conn_req *req, uint32_t idx)
{
	uint8_t pd[GT_PD_LEN] = { 0 };
	int ret;

	gt_put16(pd + 0, GT_PD_MAGIC);
	pd[2] = GT_PD_VERSION;
	gt_put16(pd + 4, (uint16_t)c->rx_credits);
	gt_put16(pd + 6, (uint16_t)idx);
	gt_put32(pd + 8, c->rx_slot_len);
	gt_put32(pd + 12, c->nonce);
	gt_put64(pd + 16, (uintptr_t)c->exp);
	gt_put32(pd + 24, c->mr->rkey);
	gt_put32(pd + 28, (uint32_t)c->region_len);
	ret = vrdma_accept(c->lst, c->qps[idx].qp, req, pd, sizeof(pd));
	if (ret) {
		fprintf(stderr, "%s: vrdma_accept (QP %u of %u): %s\n", c->o->prog, idx + 1,
			c->nqps, strerror(ret));
		return -ret;
	}
	/* -b SEND: the client's receives are laid out as ours. */
	c->qps[idx].credits = c->use_credits ? c->rx_credits : 0;
	c->peer_rx_slots = c->qps[idx].credits;
	return 0;
}

/*
 * Whether req is the client's request for QP idx: QP 1's parameters, the
 * index, the nonce of QP 1's answer, and (when dom0 names requesters) QP
 * 1's requester.
 */
static int gt_is_next(struct gt_ctx *c, const struct vrdma_conn_req *req,
		      const struct vrdma_conn_req *first, uint32_t idx)
{
	static const uint8_t zero[GT_PD_LEN - 20];
	const uint8_t *p = req->private_data;
	struct vrdma_conn_peer peer;

	if (req->private_data_len != GT_PD_LEN || memcmp(p, first->private_data, 14) ||
	    gt_get16(p + 14) != idx || gt_get32(p + 16) != c->nonce ||
	    memcmp(p + 20, zero, sizeof(zero)))
		return 0;
	if (!c->have_peer)
		return 1;
	if (vrdma_get_request_peer(c->lst, req, &peer))
		return 0;
	return !strcmp(peer.node, c->peer.node) && peer.domid == c->peer.domid &&
	       peer.devid == c->peer.devid;
}

/*
 * QPs 2..nqps.  Any other request is some other client: refused as busy,
 * and the wait goes on, up to the time limit.
 */
static int gt_accept_rest(struct gt_ctx *c, const struct vrdma_conn_req *first)
{
	uint64_t deadline = gt_deadline(c);
	struct vrdma_conn_req req;
	uint32_t idx = 1;
	int ret;

	while (idx < c->nqps) {
		int left = gt_ms_left(deadline);

		if (left <= 0) {
			fprintf(stderr, "%s: timed out waiting for QP %u of %u from the client "
				"(--timeout %d s): giving up\n", c->o->prog, idx + 1, c->nqps,
				c->o->timeout_s);
			return -ETIMEDOUT;
		}
		ret = vrdma_get_request(c->lst, &req, left);
		if (ret == ETIMEDOUT)
			continue;
		if (ret) {
			gt_err(c, "waiting for the client's next QP", ret);
			return -ret;
		}
		if (!gt_is_next(c, &req, first, idx)) {
			fprintf(stderr, "%s: refusing a request that is not the client's QP %u "
				"(busy)\n", c->o->prog, idx + 1);
			gt_refuse(c, &req, GT_REFUSE_BUSY);
			continue;
		}
		ret = gt_accept_one(c, &req, idx);
		if (ret)
			return ret;
		idx++;
	}
	return 0;
}

int gt_server_accept(struct gt_ctx *c, struct gt_opts *o)
{
	struct vrdma_conn_req req;
	int ret, rx_early;

	ret = gt_open(c, o);
	if (ret)
		return ret;
	c->server = 1;
	c->lst = vrdma_listen(c->dev, o->service);
	if (!c->lst) {
		gt_err(c, "vrdma_listen", errno);
		return -errno;
	}
	/* Scripts wait for this line before starting the client. */
	fprintf(stderr, "%s: listening on service %s\n", o->prog, o->service);
	ret = vrdma_get_request(c->lst, &req, o->timeout_s * 1000);
	if (ret) {
		gt_err(c, "waiting for a client", ret);
		return -ret;
	}
	ret = gt_parse_request(c, &req);
	if (ret) {
		fprintf(stderr, "%s: rejecting a client with unknown parameters "
			"(another version of %s?)\n", o->prog, o->prog);
		gt_refuse(c, &req, GT_REFUSE_PARAMS);
		return ret;
	}
	ret = gt_server_agrees(c);
	if (ret) {
		gt_refuse(c, &req, GT_REFUSE_DIFFER);
		return ret;
	}
	ret = gt_resources(c);
	if (!ret && c->bidir && c->mode != GT_MODE_SEND && c->rlen < c->region_len) {
		fprintf(stderr, "%s: the client's buffer does not fit the test\n", o->prog);
		ret = -EPROTO;
	}
	if (ret) {
		gt_refuse(c, &req, ret == -EPROTO ? GT_REFUSE_PARAMS : GT_REFUSE_FIT);
		return ret;
	}
	/* QPs 2..N come from the same requester with this nonce. */
	c->have_peer = vrdma_get_request_peer(c->lst, &req, &c->peer) == 0;
	if (getrandom(&c->nonce, sizeof(c->nonce), 0) != sizeof(c->nonce)) {
		gt_err(c, "getrandom", errno);
		vrdma_reject(c->lst, &req);
		return -EIO;
	}
	rx_early = gt_post_rx_qps(c) == 0;
	ret = gt_accept_one(c, &req, 0);
	if (!ret)
		ret = gt_accept_rest(c, &req);
	if (ret)
		return ret;
	/* One client per server: a later one is told at once nobody listens. */
	vrdma_close_listener(c->lst);
	c->lst = NULL;
	if (!rx_early) {
		ret = gt_post_rx_qps(c);
		if (ret) {
			gt_err(c, "vrdma_post_recv", -ret);
			return ret;
		}
	}
	return 0;
}

/* Undo whatever exists, in reverse order of creation. */
void gt_teardown(struct gt_ctx *c)
{
	uint32_t i;

	gt_refused_free(c);
	for (i = 0; c->qps && i < c->nqps; i++)
		if (c->qps[i].qp)
			vrdma_destroy_qp(c->qps[i].qp);
	if (c->cq)
		vrdma_destroy_cq(c->cq);
	if (c->mr)
		vrdma_dereg_mr(c->mr);
	if (c->buf)
		vrdma_free_buf(c->dev, c->buf);
	if (c->lst)
		vrdma_close_listener(c->lst);
	if (c->pd)
		vrdma_dealloc_pd(c->pd);
	if (c->dev)
		vrdma_close(c->dev);
	free(c->credit_due);
	free(c->qp_order);
	free(c->qps);
	memset(c, 0, sizeof(*c));
}
