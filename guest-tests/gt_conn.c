// SPDX-License-Identifier: MIT
/*
 * Connection setup for vrdma-bw / vrdma-lat: device, one buffer and MR,
 * one CQ, one QP, and the parameter exchange in the private data.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gt_common.h"

#define GT_PD_MAGIC	0x7662u		/* "bv" */
#define GT_PD_VERSION	1u
#define GT_PD_LEN	32u
#define GT_F_VERIFY	(1u << 0)
#define GT_F_ALL	(1u << 1)
#define GT_PAGE		4096u

/*
 * Client -> server private data (32 bytes, little endian):
 *   0 magic u16 | 2 version u8 | 3 test u8 | 4 mode u8 | 5 flags u8 |
 *   6 tx_depth u16 | 8 max_size u32 | 12 iters u32 | 16 addr u64 |
 *   24 rkey u32 | 28 len u32
 * Server -> client:
 *   0 magic u16 | 2 version u8 | 3 status u8 | 4 rx_slots u16 | 6 0 u16 |
 *   8 rx_slot_len u32 | 12 0 u32 | 16 addr u64 | 24 rkey u32 | 28 len u32
 * addr/rkey/len name the region the peer targets with WRITE or READ.
 */
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

/* Message slots in the data region for a size (offsets wrap beyond). */
uint32_t gt_slots(const struct gt_ctx *c, size_t size)
{
	size_t region = c->test == GT_LAT ? c->data_len / 2 : c->data_len;
	size_t n = size ? region / size : 0;

	return n ? (uint32_t)(n > 1024 ? 1024 : n) : 1;
}

/*
 * Layout from the agreed parameters.  bw: the data region holds tx_depth
 * messages up to GT_DATA_CAP.  lat: one send and one receive message.
 * SEND data lands in receive slots, so those are message-sized then.
 */
static void gt_layout(struct gt_ctx *c)
{
	size_t msg = c->max_size;
	int send_rx = c->mode == GT_MODE_SEND && (c->test == GT_LAT || c->server);

	if (c->test == GT_LAT) {
		c->data_len = gt_round(2 * msg, 64);
	} else if (c->server && c->mode == GT_MODE_SEND) {
		c->data_len = 0;
	} else {
		size_t want = msg * c->tx_depth, cap = GT_DATA_CAP > msg ? GT_DATA_CAP : msg;

		c->data_len = gt_round(want < cap ? want : cap, 64);
	}
	if (send_rx) {
		size_t n;

		c->rx_slot_len = (uint32_t)gt_round(msg > GT_CTL_LEN ? msg : GT_CTL_LEN, 64);
		n = GT_RX_CAP / c->rx_slot_len;
		if (c->test == GT_LAT)
			n = 4;
		else if (n > c->tx_depth + 8)
			n = c->tx_depth + 8;
		c->rx_slots = (uint32_t)(n < 2 ? 2 : n);
	} else {
		c->rx_slot_len = GT_CTL_LEN;
		c->rx_slots = 16;
	}
	c->sq_depth = (c->test == GT_BW && !c->server ? c->tx_depth : 16) + GT_CTL_SLOTS;
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

/* Post every receive slot once; reposting happens in gt_progress(). */
static int gt_post_rx_all(struct gt_ctx *c)
{
	uint32_t i;

	for (i = 0; i < c->rx_slots; i++) {
		struct vrdma_sge sge = {
			.addr = (uintptr_t)(c->rx + (size_t)i * c->rx_slot_len),
			.length = c->rx_slot_len,
			.lkey = c->mr->lkey,
		};
		struct vrdma_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
		struct vrdma_recv_wr *bad;
		int ret = vrdma_post_recv(c->qp, &wr, &bad);

		if (ret)
			return -ret;
	}
	return 0;
}

/* Buffer, MR, CQ and QP for the layout; receives posted. */
static int gt_resources(struct gt_ctx *c)
{
	struct vrdma_qp_init_attr qa = { 0 };
	size_t rx_len = (size_t)c->rx_slots * c->rx_slot_len;
	const char *what;

	gt_layout(c);
	rx_len = (size_t)c->rx_slots * c->rx_slot_len;
	c->buf_len = gt_round(c->data_len + rx_len + GT_CTL_SLOTS * GT_CTL_LEN, GT_PAGE);
	what = "vrdma_alloc_buf";
	c->buf = vrdma_alloc_buf(c->dev, c->buf_len);
	if (!c->buf)
		goto fail;
	c->data = c->buf;
	c->rx = c->buf + c->data_len;
	c->ctl = c->rx + rx_len;
	what = "vrdma_reg_mr";
	c->mr = vrdma_reg_mr(c->pd, c->buf, c->buf_len, VRDMA_ACCESS_LOCAL_WRITE |
			     VRDMA_ACCESS_REMOTE_WRITE | VRDMA_ACCESS_REMOTE_READ);
	if (!c->mr)
		goto fail;
	what = "vrdma_create_cq";
	c->cq = vrdma_create_cq(c->dev, (int)(c->sq_depth + c->rx_slots), c);
	if (!c->cq)
		goto fail;
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.cap.max_send_wr = c->sq_depth;
	qa.cap.max_recv_wr = c->rx_slots;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	what = "vrdma_create_qp";
	c->qp = vrdma_create_qp(c->pd, &qa);
	if (!c->qp)
		goto fail;
	c->use_credits = c->test == GT_BW && c->mode == GT_MODE_SEND && !c->server;
	return 0;
fail:
	fprintf(stderr, "%s: %s: %s\n", c->o->prog, what, strerror(errno));
	return -errno;
}

static void gt_err(struct gt_ctx *c, const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", c->o->prog, what, strerror(err));
}

int gt_client_connect(struct gt_ctx *c, struct gt_opts *o)
{
	uint8_t pd[GT_PD_LEN] = { 0 }, peer[VRDMA_MAX_PRIVATE_DATA];
	size_t peer_len = sizeof(peer);
	int ret, rx_early;

	ret = gt_open(c, o);
	if (ret)
		return ret;
	c->test = o->test;
	c->mode = o->mode;
	c->verify = o->verify;
	c->all = o->all;
	c->tx_depth = o->tx_depth;
	c->max_size = (uint32_t)(o->all ? GT_MAX_SIZE : o->size);
	c->iters = o->iters;
	ret = gt_resources(c);
	if (ret)
		return ret;
	/* Receives before connect if the library allows it, else right after. */
	rx_early = gt_post_rx_all(c) == 0;

	gt_put16(pd + 0, GT_PD_MAGIC);
	pd[2] = GT_PD_VERSION;
	pd[3] = (uint8_t)c->test;
	pd[4] = (uint8_t)c->mode;
	pd[5] = (uint8_t)((c->verify ? GT_F_VERIFY : 0) | (c->all ? GT_F_ALL : 0));
	gt_put16(pd + 6, (uint16_t)c->tx_depth);
	gt_put32(pd + 8, c->max_size);
	gt_put32(pd + 12, c->iters);
	gt_put64(pd + 16, (uintptr_t)(c->test == GT_LAT ? c->data + c->data_len / 2 : c->data));
	gt_put32(pd + 24, c->mr->rkey);
	gt_put32(pd + 28, (uint32_t)(c->test == GT_LAT ? c->data_len / 2 : c->data_len));
	ret = vrdma_connect(c->qp, o->node, o->service, pd, sizeof(pd), peer,
			    &peer_len, o->timeout_s * 1000);
	if (ret) {
		gt_err(c, "vrdma_connect", ret);
		return -ret;
	}
	if (peer_len < GT_PD_LEN || gt_get16(peer) != GT_PD_MAGIC ||
	    peer[2] != GT_PD_VERSION || peer[3] != 0) {
		fprintf(stderr, "%s: server answered with unexpected private data\n", o->prog);
		return -EPROTO;
	}
	c->peer_rx_slots = gt_get16(peer + 4);
	c->raddr = gt_get64(peer + 16);
	c->rkey = gt_get32(peer + 24);
	c->rlen = gt_get32(peer + 28);
	c->credits = c->peer_rx_slots;
	if (!c->peer_rx_slots || gt_get32(peer + 8) < (c->mode == GT_MODE_SEND ? c->max_size : GT_CTL_LEN) ||
	    (c->mode != GT_MODE_SEND && c->rlen < (c->test == GT_LAT ? c->max_size : c->data_len))) {
		fprintf(stderr, "%s: server's buffer does not fit the test\n", o->prog);
		return -EPROTO;
	}
	if (!rx_early) {
		ret = gt_post_rx_all(c);
		if (ret) {
			gt_err(c, "vrdma_post_recv", -ret);
			return ret;
		}
	}
	return 0;
}

/* Parse and check the client's parameters; -EPROTO rejects it. */
static int gt_parse_request(struct gt_ctx *c, const struct vrdma_conn_req *req)
{
	const uint8_t *p = req->private_data;

	if (req->private_data_len < GT_PD_LEN || gt_get16(p) != GT_PD_MAGIC ||
	    p[2] != GT_PD_VERSION || p[3] != c->o->test || p[4] > GT_MODE_SEND)
		return -EPROTO;
	c->test = p[3];
	c->mode = p[4];
	c->verify = !!(p[5] & GT_F_VERIFY);
	c->all = !!(p[5] & GT_F_ALL);
	c->tx_depth = gt_get16(p + 6);
	c->max_size = gt_get32(p + 8);
	c->iters = gt_get32(p + 12);
	c->raddr = gt_get64(p + 16);
	c->rkey = gt_get32(p + 24);
	c->rlen = gt_get32(p + 28);
	if (!c->tx_depth || c->tx_depth > 1024 || !c->max_size ||
	    c->max_size > GT_MAX_SIZE || (c->test == GT_LAT && c->mode == GT_MODE_READ))
		return -EPROTO;
	return 0;
}

int gt_server_accept(struct gt_ctx *c, struct gt_opts *o)
{
	uint8_t pd[GT_PD_LEN] = { 0 };
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
		fprintf(stderr, "%s: rejecting a client with unknown parameters\n", o->prog);
		vrdma_reject(c->lst, &req);
		return ret;
	}
	ret = gt_resources(c);
	if (ret) {
		vrdma_reject(c->lst, &req);
		return ret;
	}
	rx_early = gt_post_rx_all(c) == 0;
	gt_put16(pd + 0, GT_PD_MAGIC);
	pd[2] = GT_PD_VERSION;
	gt_put16(pd + 4, (uint16_t)c->rx_slots);
	gt_put32(pd + 8, c->rx_slot_len);
	gt_put64(pd + 16, (uintptr_t)(c->test == GT_LAT ? c->data + c->data_len / 2 : c->data));
	gt_put32(pd + 24, c->mr->rkey);
	gt_put32(pd + 28, (uint32_t)(c->test == GT_LAT ? c->data_len / 2 : c->data_len));
	ret = vrdma_accept(c->lst, c->qp, &req, pd, sizeof(pd));
	if (ret) {
		gt_err(c, "vrdma_accept", ret);
		return -ret;
	}
	if (!rx_early) {
		ret = gt_post_rx_all(c);
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
	if (c->qp)
		vrdma_destroy_qp(c->qp);
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
	memset(c, 0, sizeof(*c));
}
