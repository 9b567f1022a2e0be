// SPDX-License-Identifier: MIT
/*
 * vrdma-bw: bandwidth of RDMA WRITE, READ or SEND between two guests
 * (perftest ib_write_bw / ib_read_bw / ib_send_bw).  The client keeps
 * tx-depth work requests outstanding, signals every tx-depth/2 and sleeps
 * in vrdma_wait_cq() whenever it must wait.
 *
 * The clock is perftest's: the warm-up WRs all complete first, so the
 * clock starts on an empty queue at the first measured post and stops at
 * the last measured completion; exactly `iters` WRs are counted.  With
 * -D the last measured WR is the one posted once the duration is up, and
 * samples are thinned to one per duration/32768 (the peak stays measured).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_common.h"

#define BW_DUR_SAMPLES	32768u		/* -D: samples over the duration */

struct bw_samples {
	uint64_t *t, *cnt;
	uint32_t n, max;
	uint64_t gap_ns;		/* -D: closer samples replace the last */
};

/* Record progress after completions; checks READ data as it lands. */
static int bw_sample(struct gt_ctx *c, struct bw_samples *s, uint64_t base,
		     uint64_t warm, uint64_t *seen, size_t size, uint32_t seed,
		     uint32_t slots)
{
	uint64_t done = c->sq_retired - base, k;

	if (done == *seen)
		return 0;
	if (c->mode == GT_MODE_READ && c->verify) {
		/* Before any later READ reuses these slots (depth <= slots). */
		for (k = *seen; k < done; k++)
			if (gt_check(c->data + (k % slots) * size, size, seed, k % slots))
				return -EBADMSG;
	}
	*seen = done;
	if (s->n && done > warm) {
		uint64_t now = gt_now_ns();

		/* Without -D (gap 0) every sample fits: max > iters. */
		if (s->n >= 2 && (s->n == s->max || now - s->t[s->n - 2] < s->gap_ns))
			s->n--;
		if (s->n < s->max) {
			s->t[s->n] = now;
			s->cnt[s->n++] = done - warm;
		}
	}
	return 0;
}

static int bw_run_size(struct gt_ctx *c, size_t size, struct bw_samples *s,
		       struct gt_bw_res *res, int *verified)
{
	uint32_t slots = gt_slots(c, size), depth = c->tx_depth, sig;
	uint64_t warm, total, base, seen = 0, i, end_ns = 0;
	uint64_t dur_ns = (uint64_t)c->o->duration_s * 1000000000u;
	uint32_t seed = (uint32_t)gt_now_ns() ^ (uint32_t)size;
	enum vrdma_wr_opcode op;
	struct gt_ctl m = { 0 };
	int ret;

	/* Verify needs each local slot idle before it is refilled or read into. */
	if (c->verify && depth > slots)
		depth = slots;
	sig = depth / 2 ? depth / 2 : 1;
	if (c->o->cq_mod)
		sig = c->o->cq_mod < depth ? c->o->cq_mod : depth;
	warm = c->o->warmup >= 0 ? (uint64_t)c->o->warmup :
	       depth * 2 < 1000 ? depth * 2 : 1000;
	/* -D: the count is known at DONE; BEGIN's only has to be nonzero. */
	total = dur_ns ? UINT32_MAX : warm + c->iters;
	s->gap_ns = dur_ns / BW_DUR_SAMPLES;
	op = c->mode == GT_MODE_READ ? VRDMA_WR_RDMA_READ :
	     c->mode == GT_MODE_SEND ? VRDMA_WR_SEND : VRDMA_WR_RDMA_WRITE;

	m.type = GT_CTL_BEGIN;
	m.size = (uint32_t)size;
	m.iters = (uint32_t)total;
	m.seed = seed;
	ret = gt_request(c, &m, GT_CTL_READY);
	if (ret)
		return ret;
	/* Control sends of BEGIN must be retired so wr_ids map to iterations. */
	ret = gt_drain(c);
	if (ret)
		return ret;
	base = c->sq_posted;
	s->n = 0;
	for (i = 0; i < total; i++) {
		size_t off = (size_t)(i % slots) * size;

		if (c->sq_posted - c->sq_retired >= depth) {
			ret = gt_wait_sq(c, depth);
			if (!ret)
				ret = bw_sample(c, s, base, warm, &seen, size, seed, slots);
			if (ret)
				goto fail;
		}
		ret = gt_wait_credit(c);
		if (ret)
			goto fail;
		if (i == warm) {
			/* Empty the queue: no warm-up WR completes on the clock. */
			ret = gt_wait_sq(c, 1);
			if (!ret)
				ret = bw_sample(c, s, base, warm, &seen, size, seed, slots);
			if (ret)
				goto fail;
			s->t[0] = gt_now_ns();
			s->cnt[0] = 0;
			s->n = 1;
			end_ns = s->t[0] + dur_ns;
		}
		/* -D: the WR posted once the time is up is the last one. */
		if (dur_ns && i > warm && gt_now_ns() >= end_ns)
			total = i + 1;
		if (c->verify && c->mode != GT_MODE_READ)
			gt_fill(c->data + off, size, seed, i);
		/* The last warm-up WR is signaled: its completion empties the queue. */
		ret = gt_post(c, op, c->data + off, (uint32_t)size, c->raddr + off,
			      (i + 1) % sig == 0 || i + 1 == warm || i == total - 1);
		if (ret)
			goto fail;
		/* Reap without sleeping so samples stay fine-grained. */
		if (gt_progress(c, 0) < 0) {
			ret = -EIO;
			goto fail;
		}
		ret = bw_sample(c, s, base, warm, &seen, size, seed, slots);
		if (ret)
			goto fail;
	}
	while (seen < total) {
		ret = gt_wait_sq(c, (uint32_t)(c->sq_posted - c->sq_retired));
		if (!ret)
			ret = bw_sample(c, s, base, warm, &seen, size, seed, slots);
		if (ret)
			goto fail;
	}
	gt_bw_compute(res, size, total - warm, s->t, s->cnt, s->n);

	memset(&m, 0, sizeof(m));
	m.type = GT_CTL_DONE;
	m.size = (uint32_t)size;
	m.iters = (uint32_t)total;
	m.seed = seed;
	ret = gt_request(c, &m, GT_CTL_RESULT);
	if (ret)
		return ret;
	if (m.status) {
		fprintf(stderr, "%s: server found wrong data at %zu bytes\n", c->o->prog, size);
		*verified = 0;
	}
	return 0;
fail:
	if (ret == -EBADMSG) {
		fprintf(stderr, "%s: READ returned wrong data at %zu bytes\n", c->o->prog, size);
		*verified = 0;
	}
	return ret;
}

static int bw_client(struct gt_opts *o)
{
	struct bw_samples s = { 0 };
	struct gt_bw_res res;
	struct gt_ctl m = { 0 };
	struct gt_ctx c;
	size_t size = 0;
	int ret, verified = 1;

	ret = gt_client_connect(&c, o);
	if (ret)
		goto out;
	s.max = o->duration_s ? BW_DUR_SAMPLES * 2 : o->iters + 1000 + 4;
	s.t = calloc(s.max, sizeof(*s.t));
	s.cnt = calloc(s.max, sizeof(*s.cnt));
	ret = -ENOMEM;
	if (!s.t || !s.cnt)
		goto out;
	gt_report_begin(o);
	while (gt_next_size(o, &size)) {
		ret = bw_run_size(&c, size, &s, &res, &verified);
		if (ret)
			break;
		gt_report_bw(o, &res);
	}
	if (!ret) {
		m.type = GT_CTL_FIN;
		ret = gt_request(&c, &m, GT_CTL_FIN_ACK);
		c.closing = 1;
	}
	if (!ret)
		ret = gt_drain(&c);
	gt_report_end(o, !ret && verified, ret && verified ? -1 : verified);
out:
	free(s.cnt);
	free(s.t);
	gt_teardown(&c);
	return ret || !verified ? 1 : 0;
}

/* ---- server side ---- */

static void bw_prepare(struct gt_ctx *c, const struct gt_ctl *m)
{
	uint32_t slots = gt_slots(c, m->size), s;

	if (c->mode != GT_MODE_READ || !c->verify)
		return;
	for (s = 0; s < slots; s++)
		gt_fill(c->data + (size_t)s * m->size, m->size, m->seed, s);
}

static int bw_verify(struct gt_ctx *c, const struct gt_ctl *m)
{
	uint32_t slots, s;

	if (m->size != c->rx_size || m->seed != c->rx_seed)
		return -EPROTO;
	if (c->mode == GT_MODE_SEND)
		return c->rx_bad || c->rx_data != m->iters ? -EBADMSG : 0;
	if (c->mode != GT_MODE_WRITE || !c->verify)
		return 0;
	/* Each slot must hold the last iteration that wrote it. */
	slots = gt_slots(c, m->size);
	for (s = 0; s < slots && s < m->iters; s++) {
		uint64_t last = s + (uint64_t)(m->iters - 1 - s) / slots * slots;

		if (gt_check(c->data + (size_t)s * m->size, m->size, m->seed, last))
			return -EBADMSG;
	}
	return 0;
}

static const struct gt_server_ops bw_server_ops = {
	.prepare = bw_prepare,
	.verify = bw_verify,
};

int main(int argc, char **argv)
{
	struct gt_opts o;
	int ret = gt_parse_opts(&o, GT_BW, argc, argv);

	if (ret)
		return ret > 0 ? 0 : 2;
	return o.node ? bw_client(&o) : gt_server_main(&o, &bw_server_ops);
}
