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

int gt_post(struct gt_ctx *c, struct gt_qp *q, enum vrdma_wr_opcode op,
	    void *laddr, uint32_t len, uint64_t raddr, int signaled)
{
	int ctl = op == VRDMA_WR_SEND_WITH_IMM;
	struct vrdma_sge sge = {
		.addr = (uintptr_t)laddr, .length = len, .lkey = c->mr->lkey,
	};
	struct vrdma_send_wr wr = {
		.wr_id = (q->sq_posted + 1) | (ctl ? GT_WR_CTL : 0),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = signaled ? VRDMA_SEND_SIGNALED : 0,
	};
	struct vrdma_send_wr *bad;
	int ret;

	if (ctl)
		wr.imm_data = htonl(GT_CTL_IMM);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = c->rkey;
	ret = vrdma_post_send(q->qp, &wr, &bad);
	if (ret) {
		fprintf(stderr, "%s: vrdma_post_send: %s\n", c->o->prog, strerror(ret));
		return -ret;
	}
	q->sq_posted++;
	/* Control messages land in the receives kept beyond the credits. */
	if (c->use_credits && op == VRDMA_WR_SEND)
		q->credits--;
	return 0;
}

/* Repost a receive; one that held data is a credit for the peer. */
static int gt_repost(struct gt_ctx *c, struct gt_qp *q, uint32_t slot, int data)
{
	struct vrdma_sge sge = {
		.addr = (uintptr_t)(q->rx + (size_t)slot * c->rx_slot_len),
		.length = c->rx_slot_len,
		.lkey = c->mr->lkey,
	};
	struct vrdma_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 };
	struct vrdma_recv_wr *bad;
	int ret = vrdma_post_recv(q->qp, &wr, &bad);

	if (ret) {
		fprintf(stderr, "%s: vrdma_post_recv: %s\n", c->o->prog, strerror(ret));
		return -ret;
	}
	if (!data)
		return 0;
	q->unreported++;
	/* Half the credits (rounded up): at most 2 CREDITs are ever unread. */
	if (c->gives_credits && !q->credit_due && q->unreported >= (c->rx_credits + 1) / 2) {
		q->credit_due = 1;
		c->credit_due[c->n_due++] = q->idx;
	}
	return 0;
}

/* A receive completed in slot: a control message or SEND data. */
static int gt_on_recv(struct gt_ctx *c, struct gt_qp *q, const struct vrdma_wc *wc,
		      uint32_t slot)
{
	const uint8_t *p = q->rx + (size_t)slot * c->rx_slot_len;

	if ((wc->wc_flags & VRDMA_WC_WITH_IMM) && ntohl(wc->imm_data) == GT_CTL_IMM) {
		uint32_t w[GT_CTL_WORDS];
		struct gt_ctl m = { 0 };
		size_t i;

		/* Copy out of the shared slot before looking at it. */
		if (wc->byte_len < sizeof(w))
			return -EPROTO;
		memcpy(w, p, sizeof(w));
		for (i = 0; i < GT_CTL_WORDS; i++)
			w[i] = le32toh(w[i]);
		m.type = w[0];
		m.credits = w[1];
		m.size = w[2];
		m.iters = (uint64_t)w[9] << 32 | w[3];
		m.seed = w[4];
		m.status = w[5];
		m.warm = w[6];
		m.dur_s = w[7];
		m.sig = w[8];
		m.res_iters = (uint64_t)w[11] << 32 | w[10];
		m.res_ns = (uint64_t)w[13] << 32 | w[12];
		m.res_peak_bps = (uint64_t)w[15] << 32 | w[14];
		if (c->use_credits) {
			/* Never more back than were lent. */
			if ((uint64_t)q->credits + m.credits > c->peer_rx_slots)
				return -EPROTO;
			q->credits += m.credits;
		}
		if (m.type != GT_CTL_CREDIT) {
			/* Requests and answers travel on the first QP only. */
			if (q->idx || c->inbox_len == GT_INBOX)
				return -EPROTO;
			c->inbox[(c->inbox_head + c->inbox_len++) % GT_INBOX] = m;
		}
		/* After FIN / FIN_ACK the peer may be gone: no more receives. */
		if (m.type == GT_CTL_FIN || m.type == GT_CTL_FIN_ACK)
			c->closing = 1;
		return c->closing ? 0 : gt_repost(c, q, slot, 0);
	}
	/* Iteration i went to QP i % nqps: this QP's k-th is i = idx + k * nqps. */
	if (wc->byte_len != c->rx_size)
		c->rx_bad = 1;
	else if (c->verify && gt_check(p, c->rx_size, c->rx_seed,
				       q->idx + q->rx_data * c->nqps))
		c->rx_bad = 1;
	q->rx_data++;
	c->rx_data++;
	return gt_repost(c, q, slot, 1);
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

/* The QP a completion names: qp_order is sorted by qp_num. */
static struct gt_qp *gt_find_qp(struct gt_ctx *c, uint32_t qp_num)
{
	uint32_t lo = 0, hi = c->nqps;

	if (c->nqps == 1)
		return c->qps[0].qp->qp_num == qp_num ? &c->qps[0] : NULL;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		struct gt_qp *q = &c->qps[c->qp_order[mid]];

		if (q->qp->qp_num == qp_num)
			return q;
		if (q->qp->qp_num < qp_num)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* A send completion: retire up to its sequence number. */
static int gt_on_send(struct gt_ctx *c, struct gt_qp *q, uint64_t wr_id)
{
	uint64_t seq = wr_id & ~GT_WR_CTL, n;

	if (seq <= q->sq_retired || seq > q->sq_posted)
		return -EPROTO;
	/* Control sends are all signaled: the ones before seq were seen. */
	n = seq - q->sq_retired - (wr_id & GT_WR_CTL ? 1 : 0);
	q->data_retired += n;
	c->data_retired += n;
	q->sq_retired = seq;
	return 0;
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
		struct gt_qp *q = gt_find_qp(c, wc[i].qp_num);

		if (!q)
			return -EPROTO;
		if (wc[i].status == VRDMA_WC_WR_FLUSH_ERR && c->closing) {
			uint64_t seq = wc[i].wr_id & ~GT_WR_CTL;

			if (wc[i].opcode != VRDMA_WC_RECV_OP && seq > q->sq_retired &&
			    seq <= q->sq_posted)
				q->sq_retired = seq;
			continue;
		}
		if (wc[i].status != VRDMA_WC_SUCCESS) {
			fprintf(stderr, "%s: %s completion failed: %s (wr_id %llu%s%u)\n",
				c->o->prog, gt_wc_op_name(wc[i].opcode),
				vrdma_wc_status_str(wc[i].status),
				(unsigned long long)(wc[i].wr_id & ~GT_WR_CTL),
				c->nqps > 1 ? ", QP " : "", c->nqps > 1 ? q->idx + 1 : 0);
			return -EIO;
		}
		if (wc[i].opcode == VRDMA_WC_RECV_OP) {
			if (wc[i].wr_id >= c->rx_slots)
				return -EPROTO;
			ret = gt_on_recv(c, q, &wc[i], (uint32_t)wc[i].wr_id);
		} else if (wc[i].opcode == VRDMA_WC_RDMA_WRITE_OP ||
			   wc[i].opcode == VRDMA_WC_RDMA_READ_OP ||
			   wc[i].opcode == VRDMA_WC_SEND_OP) {
			ret = gt_on_send(c, q, wc[i].wr_id);
		} else {
			ret = -EPROTO;
		}
		if (ret)
			return ret;
	}
	return n;
}

/*
 * Process completions; a side that receives SEND data hands back credits
 * on each QP whose reposts reached half of them.  Returns the number of
 * completions seen or -errno.
 */
int gt_progress(struct gt_ctx *c, int wait_ms)
{
	int n = gt_progress_once(c, wait_ms);

	if (n == -EPROTO)
		fprintf(stderr, "%s: peer sent something unexpected\n", c->o->prog);
	while (n >= 0 && c->n_due) {
		struct gt_qp *q = &c->qps[c->credit_due[--c->n_due]];
		struct gt_ctl m = { .type = GT_CTL_CREDIT };
		int ret;

		q->credit_due = 0;
		/* After FIN the peer may be gone; a FIN carried them anyway. */
		if (c->closing || !q->unreported)
			continue;
		ret = gt_send_ctl_qp(c, q, &m);
		if (ret)
			return ret;
	}
	return n;
}

/* Wait (at most the --timeout limit) until fewer than depth send WRs
 * are out on q. */
int gt_wait_sq(struct gt_ctx *c, struct gt_qp *q, uint32_t depth)
{
	uint64_t deadline = 0;

	while (q->sq_posted - q->sq_retired >= depth) {
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

int gt_wait_credit(struct gt_ctx *c, struct gt_qp *q)
{
	uint64_t deadline = 0;

	while (c->use_credits && !q->credits) {
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

/* Send a control message on q; it carries q's unreported receive credits.
 * It needs no credit: it lands in the GT_CTL_RESERVE() receives. */
int gt_send_ctl_qp(struct gt_ctx *c, struct gt_qp *q, const struct gt_ctl *m)
{
	uint64_t deadline = gt_deadline(c);
	uint32_t slot = q->ctl_next % GT_CTL_SLOTS, w[GT_CTL_WORDS] = { 0 }, i;
	uint8_t *p = q->ctl + (size_t)slot * GT_CTL_LEN;
	int ret;

	/* The slot is free once the send that used it retired. */
	while (q->ctl_seq[slot] > q->sq_retired ||
	       q->sq_posted - q->sq_retired >= c->sq_depth) {
		if (gt_ms_left(deadline) <= 0) {
			fprintf(stderr, "%s: timed out waiting for a control slot\n", c->o->prog);
			return -ETIMEDOUT;
		}
		ret = gt_progress_once(c, gt_ms_left(deadline));
		if (ret < 0)
			return ret;
	}
	w[0] = m->type;
	w[1] = q->unreported;
	w[2] = m->size;
	w[3] = (uint32_t)m->iters;
	w[4] = m->seed;
	w[5] = m->status;
	w[6] = m->warm;
	w[7] = m->dur_s;
	w[8] = m->sig;
	w[9] = (uint32_t)(m->iters >> 32);
	w[10] = (uint32_t)m->res_iters;
	w[11] = (uint32_t)(m->res_iters >> 32);
	w[12] = (uint32_t)m->res_ns;
	w[13] = (uint32_t)(m->res_ns >> 32);
	w[14] = (uint32_t)m->res_peak_bps;
	w[15] = (uint32_t)(m->res_peak_bps >> 32);
	for (i = 0; i < GT_CTL_WORDS; i++)
		w[i] = htole32(w[i]);
	memcpy(p, w, sizeof(w));
	ret = gt_post(c, q, VRDMA_WR_SEND_WITH_IMM, p, sizeof(w), 0, 1);
	if (ret)
		return ret;
	q->unreported = 0;
	q->ctl_seq[slot] = q->sq_posted;
	q->ctl_next++;
	return 0;
}

/* Requests and answers go over the first QP. */
int gt_send_ctl(struct gt_ctx *c, const struct gt_ctl *m)
{
	return gt_send_ctl_qp(c, &c->qps[0], m);
}

/*
 * While streaming WRITE or READ, an empty CREDIT on QP 0 every quarter of
 * --timeout: those complete nothing on the peer's side, whose wait for
 * DONE (or with -b RESULT) would otherwise see an idle peer.  SEND data
 * completes receives there by itself (and its receives have no room for
 * more control messages than GT_CTL_RESERVE()).
 */
int gt_keepalive(struct gt_ctx *c)
{
	struct gt_ctl m = { .type = GT_CTL_CREDIT };
	uint64_t now;

	if (c->mode == GT_MODE_SEND)
		return 0;
	now = gt_now_ns();
	if (now < c->keepalive_ns)
		return 0;
	c->keepalive_ns = now + (uint64_t)c->o->timeout_s * 250000000u;
	return gt_send_ctl_qp(c, &c->qps[0], &m);
}

/*
 * Wait for the next control message, which must be of the given type:
 * at most --timeout plus run_ns, and --timeout after the last completion
 * (a peer that keeps a run going is alive, however long the run).
 */
int gt_wait_ctl(struct gt_ctx *c, struct gt_ctl *m, uint32_t type)
{
	uint64_t deadline = gt_deadline(c) + c->run_ns;

	while (!c->inbox_len) {
		int left = gt_ms_left(deadline), ret;

		if (left <= 0) {
			fprintf(stderr, "%s: timed out waiting for the peer (no message or data "
				"for --timeout %d s)\n", c->o->prog, c->o->timeout_s);
			return -ETIMEDOUT;
		}
		ret = gt_progress(c, left);
		if (ret < 0)
			return ret;
		if (ret > 0 && gt_deadline(c) > deadline)
			deadline = gt_deadline(c);
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

/* Wait until every posted send WR of every QP retired. */
int gt_drain(struct gt_ctx *c)
{
	uint32_t i;
	int ret = 0;

	for (i = 0; i < c->nqps && !ret; i++)
		ret = gt_wait_sq(c, &c->qps[i], 1);
	return ret;
}
