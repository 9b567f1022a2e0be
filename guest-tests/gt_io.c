// SPDX-License-Identifier: MIT
/*
 * Data path helpers of vrdma-bw / vrdma-lat: posting with sequence-number
 * wr_ids, one completion dispatcher, control messages, bounded waits.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "gt_common.h"

#define GT_POLL_BATCH	16

int gt_post(struct gt_ctx *c, enum vrdma_wr_opcode op, void *laddr,
	    uint32_t len, uint64_t raddr, int signaled)
{
	struct vrdma_sge sge = {
		.addr = (uintptr_t)laddr, .length = len, .lkey = c->mr->lkey,
	};
	struct vrdma_send_wr wr = {
		.wr_id = c->sq_posted + 1,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = signaled ? VRDMA_SEND_SIGNALED : 0,
	};
	struct vrdma_send_wr *bad;
	int ret;

	if (op == VRDMA_WR_SEND_WITH_IMM)
		wr.imm_data = htonl(GT_CTL_IMM);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = c->rkey;
	ret = vrdma_post_send(c->qp, &wr, &bad);
	if (ret) {
		fprintf(stderr, "%s: vrdma_post_send: %s\n", c->o->prog, strerror(ret));
		return -ret;
	}
	c->sq_posted++;
	if (c->use_credits && (op == VRDMA_WR_SEND || op == VRDMA_WR_SEND_WITH_IMM))
		c->credits--;
	return 0;
}

static int gt_repost(struct gt_ctx *c, uint32_t slot)
{
	struct vrdma_sge sge = {
		.addr = (uintptr_t)(c->rx + (size_t)slot * c->rx_slot_len),
		.length = c->rx_slot_len,
		.lkey = c->mr->lkey,
	};
	struct vrdma_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 };
	struct vrdma_recv_wr *bad;
	int ret = vrdma_post_recv(c->qp, &wr, &bad);

	if (ret) {
		fprintf(stderr, "%s: vrdma_post_recv: %s\n", c->o->prog, strerror(ret));
		return -ret;
	}
	c->unreported++;
	return 0;
}

/* A receive completed in slot: a control message or SEND data. */
static int gt_on_recv(struct gt_ctx *c, const struct vrdma_wc *wc, uint32_t slot)
{
	const uint8_t *p = c->rx + (size_t)slot * c->rx_slot_len;

	if ((wc->wc_flags & VRDMA_WC_WITH_IMM) && ntohl(wc->imm_data) == GT_CTL_IMM) {
		uint32_t w[6];
		struct gt_ctl m;
		size_t i;

		/* Copy out of the shared slot before looking at it. */
		if (wc->byte_len < sizeof(w))
			return -EPROTO;
		memcpy(w, p, sizeof(w));
		for (i = 0; i < 6; i++)
			w[i] = le32toh(w[i]);
		m = (struct gt_ctl){ w[0], w[1], w[2], w[3], w[4], w[5] };
		if (c->use_credits)
			c->credits += m.credits;
		if (m.type != GT_CTL_CREDIT) {
			if (c->inbox_len == GT_INBOX)
				return -EPROTO;
			c->inbox[(c->inbox_head + c->inbox_len++) % GT_INBOX] = m;
		}
		/* After FIN / FIN_ACK the peer may be gone: no more receives. */
		if (m.type == GT_CTL_FIN || m.type == GT_CTL_FIN_ACK)
			c->closing = 1;
		return c->closing ? 0 : gt_repost(c, slot);
	}
	if (wc->byte_len != c->rx_size)
		c->rx_bad = 1;
	else if (c->verify && gt_check(p, c->rx_size, c->rx_seed, c->rx_data))
		c->rx_bad = 1;
	c->rx_data++;
	return gt_repost(c, slot);
}

static const char *gt_wc_op_name(enum vrdma_wc_opcode op)
{
	switch (op) {
	case VRDMA_WC_SEND_OP: return "SEND";
	case VRDMA_WC_RDMA_WRITE_OP: return "RDMA_WRITE";
	case VRDMA_WC_RDMA_READ_OP: return "RDMA_READ";
	case VRDMA_WC_RECV_OP: return "RECV";
	case VRDMA_WC_RECV_RDMA_WITH_IMM_OP: return "RECV_RDMA_WITH_IMM";
	default: return "other";
	}
}

/* Poll (and, if nothing is there and wait_ms > 0, sleep once), dispatch. */
static int gt_progress_once(struct gt_ctx *c, int wait_ms)
{
	struct vrdma_wc wc[GT_POLL_BATCH];
	int n, i, ret;

	n = vrdma_poll_cq(c->cq, GT_POLL_BATCH, wc);
	if (n == 0 && wait_ms > 0) {
		ret = vrdma_wait_cq(c->cq, wait_ms);
		if (ret == ETIMEDOUT)
			return 0;
		if (ret) {
			fprintf(stderr, "%s: vrdma_wait_cq: %s\n", c->o->prog, strerror(ret));
			return -ret;
		}
		n = vrdma_poll_cq(c->cq, GT_POLL_BATCH, wc);
	}
	if (n < 0) {
		fprintf(stderr, "%s: vrdma_poll_cq: %s\n", c->o->prog, strerror(errno));
		return -errno;
	}
	for (i = 0; i < n; i++) {
		if (wc[i].status == VRDMA_WC_WR_FLUSH_ERR && c->closing) {
			if (wc[i].opcode != VRDMA_WC_RECV_OP && wc[i].wr_id > c->sq_retired &&
			    wc[i].wr_id <= c->sq_posted)
				c->sq_retired = wc[i].wr_id;
			continue;
		}
		if (wc[i].status != VRDMA_WC_SUCCESS) {
			fprintf(stderr, "%s: %s completion failed: %s (wr_id %llu)\n",
				c->o->prog, gt_wc_op_name(wc[i].opcode),
				vrdma_wc_status_str(wc[i].status),
				(unsigned long long)wc[i].wr_id);
			return -EIO;
		}
		if (wc[i].opcode == VRDMA_WC_RECV_OP) {
			if (wc[i].wr_id >= c->rx_slots)
				return -EPROTO;
			ret = gt_on_recv(c, &wc[i], (uint32_t)wc[i].wr_id);
			if (ret)
				return ret;
		} else if (wc[i].opcode == VRDMA_WC_RDMA_WRITE_OP ||
			   wc[i].opcode == VRDMA_WC_RDMA_READ_OP ||
			   wc[i].opcode == VRDMA_WC_SEND_OP) {
			if (wc[i].wr_id <= c->sq_retired || wc[i].wr_id > c->sq_posted)
				return -EPROTO;
			c->sq_retired = wc[i].wr_id;
		} else {
			return -EPROTO;
		}
	}
	return n;
}

/*
 * Process completions; the server also hands back receive credits to a
 * SEND-streaming client once half its slots were reposted.  Returns the
 * number of completions seen or -errno.
 */
int gt_progress(struct gt_ctx *c, int wait_ms)
{
	int n = gt_progress_once(c, wait_ms);

	if (n == -EPROTO)
		fprintf(stderr, "%s: peer sent something unexpected\n", c->o->prog);
	if (n > 0 && c->server && c->mode == GT_MODE_SEND && c->test == GT_BW &&
	    c->unreported >= c->rx_slots / 2) {
		struct gt_ctl m = { .type = GT_CTL_CREDIT };
		int ret = gt_send_ctl(c, &m);

		if (ret)
			return ret;
	}
	return n;
}

/* Wait (at most the -T limit) until fewer than depth send WRs are out. */
int gt_wait_sq(struct gt_ctx *c, uint32_t depth)
{
	uint64_t deadline = 0;

	while (c->sq_posted - c->sq_retired >= depth) {
		int left, ret;

		/* Read the clock only when there is something to wait for. */
		if (!deadline)
			deadline = gt_deadline(c);
		left = gt_ms_left(deadline);

		if (left <= 0)
			goto timeout;
		ret = gt_progress(c, left);
		if (ret < 0)
			return ret;
	}
	return 0;
timeout:
	fprintf(stderr, "%s: timed out waiting for send completions\n", c->o->prog);
	return -ETIMEDOUT;
}

int gt_wait_credit(struct gt_ctx *c)
{
	uint64_t deadline = 0;

	while (c->use_credits && !c->credits) {
		int left, ret;

		if (!deadline)
			deadline = gt_deadline(c);
		left = gt_ms_left(deadline);

		if (left <= 0) {
			fprintf(stderr, "%s: timed out waiting for receive credits\n",
				c->o->prog);
			return -ETIMEDOUT;
		}
		ret = gt_progress(c, left);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Send a control message; it carries our unreported receive credits. */
int gt_send_ctl(struct gt_ctx *c, const struct gt_ctl *m)
{
	uint64_t deadline = gt_deadline(c);
	uint32_t slot = c->ctl_next % GT_CTL_SLOTS, w[6], i;
	uint8_t *p = c->ctl + (size_t)slot * GT_CTL_LEN;
	int ret;

	/* The slot is free once the send that used it retired. */
	while (c->ctl_seq[slot] > c->sq_retired ||
	       c->sq_posted - c->sq_retired >= c->sq_depth) {
		if (gt_ms_left(deadline) <= 0)
			return -ETIMEDOUT;
		ret = gt_progress_once(c, gt_ms_left(deadline));
		if (ret < 0)
			return ret;
	}
	ret = gt_wait_credit(c);
	if (ret)
		return ret;
	w[0] = m->type;
	w[1] = c->unreported;
	w[2] = m->size;
	w[3] = m->iters;
	w[4] = m->seed;
	w[5] = m->status;
	for (i = 0; i < 6; i++)
		w[i] = htole32(w[i]);
	memcpy(p, w, sizeof(w));
	ret = gt_post(c, VRDMA_WR_SEND_WITH_IMM, p, sizeof(w), 0, 1);
	if (ret)
		return ret;
	c->unreported = 0;
	c->ctl_seq[slot] = c->sq_posted;
	c->ctl_next++;
	return 0;
}

/* Wait for the next control message, which must be of the given type. */
int gt_wait_ctl(struct gt_ctx *c, struct gt_ctl *m, uint32_t type)
{
	uint64_t deadline = gt_deadline(c);

	while (!c->inbox_len) {
		int left = gt_ms_left(deadline), ret;

		if (left <= 0) {
			fprintf(stderr, "%s: timed out waiting for the peer\n", c->o->prog);
			return -ETIMEDOUT;
		}
		ret = gt_progress(c, left);
		if (ret < 0)
			return ret;
	}
	*m = c->inbox[c->inbox_head];
	c->inbox_head = (c->inbox_head + 1) % GT_INBOX;
	c->inbox_len--;
	if (type && m->type != type) {
		fprintf(stderr, "%s: unexpected control message %u (want %u)\n",
			c->o->prog, m->type, type);
		return -EPROTO;
	}
	return 0;
}

int gt_request(struct gt_ctx *c, struct gt_ctl *m, uint32_t reply_type)
{
	int ret = gt_send_ctl(c, m);

	return ret ? ret : gt_wait_ctl(c, m, reply_type);
}

/*
 * Spin until *p == want (RDMA WRITE ping-pong).  Every 1024 spins: check
 * the clock, reap send completions and yield.  Two spinning guests plus
 * the daemon doing the copy outnumber the cores of a small machine; on 2
 * cores yielding took the 8-byte median from ~33 us to ~5.5 us.
 */
int gt_spin_byte(struct gt_ctx *c, const uint8_t *p, uint8_t want, uint64_t deadline)
{
	unsigned int spins = 0;

	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != want) {
		if (++spins % 1024)
			continue;
		if (gt_now_ns() > deadline) {
			fprintf(stderr, "%s: timed out waiting for the peer's write\n",
				c->o->prog);
			return -ETIMEDOUT;
		}
		if (gt_progress(c, 0) < 0)
			return -EIO;
		sched_yield();
	}
	return 0;
}

/* Wait until every posted send WR retired. */
int gt_drain(struct gt_ctx *c)
{
	return gt_wait_sq(c, 1);
}
