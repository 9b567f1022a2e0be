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
 *
 * -q N: iteration i goes to QP i % N, -n is per QP as in perftest and the
 * row counts all of them.  -b: the server streams the same way at the same
 * time (its clock, its samples), and the row adds its figures, as
 * perftest's bidirectional row does; #iterations stays the client's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_common.h"

#define BW_DUR_SAMPLES	32768u		/* -D: samples over the duration */
#define BW_SALT		0x5e4ba11du	/* the server's data differs from the client's */
#define BW_MIB		(1024.0 * 1024.0)

struct bw_samples {
	uint64_t *t, *cnt;
	uint32_t n, max;
	uint64_t gap_ns;		/* -D: closer samples replace the last */
};

/* One size, as this side streams it. */
struct bw_plan {
	size_t size;
	uint32_t slots, depth, sig;
	uint64_t warm, total, dur_ns;
	uint32_t seed;			/* of the data this side writes or sends */
	uint32_t rseed;			/* READ: of the data it reads */
};

/* The server's half of a -b run, for RESULT (one client per process). */
static struct {
	struct bw_samples s;
	struct gt_bw_res res;
	uint64_t total;			/* 0: no figures (the stream failed) */
	int read_bad;			/* its READs got wrong data */
} bw_srv;

/* Samples for a run of n measured WRs (-D: thinned to a fixed count). */
static int bw_fit(struct bw_samples *s, uint64_t n)
{
	uint64_t *t, *cnt;

	if (n <= s->max)
		return 0;
	if (n > UINT32_MAX)
		return -ENOMEM;
	t = realloc(s->t, n * sizeof(*t));
	if (t)
		s->t = t;
	cnt = t ? realloc(s->cnt, n * sizeof(*cnt)) : NULL;
	if (cnt)
		s->cnt = cnt;
	if (!t || !cnt)
		return -ENOMEM;
	s->max = (uint32_t)n;
	return 0;
}

static void bw_free(struct bw_samples *s)
{
	free(s->cnt);
	free(s->t);
	memset(s, 0, sizeof(*s));
}

/*
 * Record progress after completions; checks READ data as it lands, QP by
 * QP: this QP's k-th WR was iteration idx + k * nqps.
 */
static int bw_sample(struct gt_ctx *c, struct bw_samples *s, const struct bw_plan *p,
		     uint64_t base, uint64_t *seen)
{
	uint64_t done = c->data_retired - base;
	uint32_t j;

	if (done == *seen)
		return 0;
	for (j = 0; c->mode == GT_MODE_READ && c->verify && j < c->nqps; j++) {
		struct gt_qp *q = &c->qps[j];

		/* Before any later READ of this QP reuses these slots. */
		for (; q->data_checked < q->data_retired; q->data_checked++) {
			uint64_t i = q->idx + (q->data_checked - q->data_base) * c->nqps;
			uint32_t slot = (uint32_t)(i % p->slots);

			if (gt_check(c->data + (size_t)slot * p->size, p->size, p->rseed, slot))
				return -EBADMSG;
		}
	}
	*seen = done;
	if (s->n && done > p->warm) {
		uint64_t now = gt_now_ns();

		/* Without -D (gap 0) every sample fits: max > iters. */
		if (s->n >= 2 && (s->n == s->max || now - s->t[s->n - 2] < s->gap_ns))
			s->n--;
		if (s->n < s->max) {
			s->t[s->n] = now;
			s->cnt[s->n++] = done - p->warm;
		}
	}
	return 0;
}

/* Depth and slots both sides derive from the agreed parameters. */
static void bw_plan_base(struct gt_ctx *c, struct bw_plan *p, size_t size)
{
	uint32_t per_qp;

	p->size = size;
	p->slots = gt_slots(c, size);
	p->depth = c->tx_depth;
	/* Verify needs each local slot idle before it is refilled or read
	 * into: a QP owns slots / nqps of them. */
	per_qp = p->slots / c->nqps ? p->slots / c->nqps : 1;
	if (c->verify && p->depth > per_qp)
		p->depth = per_qp;
}

/*
 * The timed stream of one side: iteration i goes to QP i % nqps.  The
 * clock is perftest's (see the top); with -D the round of QPs that starts
 * once the time is up is the last one, so each QP's last WR is signaled.
 */
static int bw_stream(struct gt_ctx *c, struct bw_plan *p, struct bw_samples *s,
		     struct gt_bw_res *res)
{
	uint32_t nq = c->nqps;
	uint64_t base = c->data_retired, seen = 0, i, end_ns = 0;
	int timed = p->dur_ns != 0;
	enum vrdma_wr_opcode op;
	int ret;

	op = c->mode == GT_MODE_READ ? VRDMA_WR_RDMA_READ :
	     c->mode == GT_MODE_SEND ? VRDMA_WR_SEND : VRDMA_WR_RDMA_WRITE;
	s->gap_ns = p->dur_ns / BW_DUR_SAMPLES;
	s->n = 0;
	for (i = 0; i < nq; i++) {
		c->qps[i].data_base = c->qps[i].data_retired;
		c->qps[i].data_checked = c->qps[i].data_retired;
	}
	for (i = 0; i < p->total; i++) {
		struct gt_qp *q = &c->qps[i % nq];
		size_t off = (size_t)(i % p->slots) * p->size;
		uint64_t k = i / nq;

		if (q->sq_posted - q->sq_retired >= p->depth) {
			ret = gt_wait_sq(c, q, p->depth);
			if (!ret)
				ret = bw_sample(c, s, p, base, &seen);
			if (ret)
				return ret;
		}
		ret = gt_wait_credit(c, q);
		if (ret)
			return ret;
		if (i == p->warm) {
			/* Empty the queues: no warm-up WR completes on the clock. */
			ret = gt_drain(c);
			if (!ret)
				ret = bw_sample(c, s, p, base, &seen);
			if (ret)
				return ret;
			s->t[0] = gt_now_ns();
			s->cnt[0] = 0;
			s->n = 1;
			end_ns = s->t[0] + p->dur_ns;
		}
		/* -D: the round of QPs that starts once the time is up is the
		 * last one (each QP's last WR is posted knowing it is). */
		if (timed && i > p->warm && i % nq == 0 && gt_now_ns() >= end_ns) {
			p->total = i + nq;
			timed = 0;
		}
		if (c->verify && c->mode != GT_MODE_READ)
			gt_fill(c->data + off, p->size, p->seed, i);
		/* Each QP's last warm-up WR and last WR are signaled: their
		 * completions empty the queues. */
		ret = gt_post(c, q, op, c->data + off, (uint32_t)p->size, c->raddr + off,
			      (k + 1) % p->sig == 0 || (i < p->warm && i + nq >= p->warm) ||
			      i + nq >= p->total);
		if (ret)
			return ret;
		if (i % 16 == 0) {
			ret = gt_keepalive(c);
			if (ret)
				return ret;
		}
		/* Reap without sleeping so samples stay fine-grained. */
		if (gt_progress(c, 0) < 0)
			return -EIO;
		ret = bw_sample(c, s, p, base, &seen);
		if (ret)
			return ret;
	}
	ret = gt_drain(c);
	if (!ret)
		ret = bw_sample(c, s, p, base, &seen);
	if (ret)
		return ret;
	if (seen != p->total) {
		fprintf(stderr, "%s: %llu of %llu work requests completed\n", c->o->prog,
			(unsigned long long)seen, (unsigned long long)p->total);
		return -EPROTO;
	}
	gt_bw_compute(res, p->size, p->total - p->warm, s->t, s->cnt, s->n);
	return 0;
}

/*
 * Everything the peer sent at this size checks out (seed and iters are
 * the peer's): send: every message arrived and matched; write: each slot
 * holds the last iteration that wrote it (one QP wrote it, in order).
 */
static int bw_check_in(struct gt_ctx *c, size_t size, uint32_t seed, uint64_t iters)
{
	uint32_t slots, s;

	if (c->mode == GT_MODE_SEND)
		return c->rx_bad || c->rx_data != iters ? -EBADMSG : 0;
	if (c->mode != GT_MODE_WRITE || !c->verify)
		return 0;
	slots = gt_slots(c, size);
	for (s = 0; s < slots && s < iters; s++) {
		uint64_t last = s + (iters - 1 - s) / slots * slots;

		if (gt_check(c->exp + (size_t)s * size, size, seed, last))
			return -EBADMSG;
	}
	return 0;
}

/* READ: fill the region the peer reads from, slot s with pattern s. */
static void bw_fill_exposed(struct gt_ctx *c, size_t size, uint32_t seed)
{
	uint32_t slots = gt_slots(c, size), s;

	for (s = 0; s < slots; s++)
		gt_fill(c->exp + (size_t)s * size, size, seed, s);
}

/* The server's figures from RESULT, as a row of its own. */
static int bw_peer_res(struct gt_bw_res *r, size_t size, const struct gt_ctl *m)
{
	double sec = (double)m->res_ns / 1e9;

	if (!m->res_iters || !m->res_ns)
		return -EPROTO;
	r->size = size;
	r->iters = m->res_iters;
	r->ns = m->res_ns;
	r->avg_mib = (double)size * (double)m->res_iters / BW_MIB / sec;
	r->mpps = (double)m->res_iters / sec / 1e6;
	r->peak_mib = (double)m->res_peak_bps / BW_MIB;
	if (r->peak_mib < r->avg_mib)
		r->peak_mib = r->avg_mib;
	return 0;
}

static int bw_run_size(struct gt_ctx *c, size_t size, struct bw_samples *s,
		       struct gt_bw_res *res, int *verified)
{
	uint32_t seed = (uint32_t)gt_now_ns() ^ (uint32_t)size, i;
	struct gt_ctl m = { 0 };
	struct bw_plan p;
	int ret;

	bw_plan_base(c, &p, size);
	p.sig = p.depth / 2 ? p.depth / 2 : 1;
	if (c->o->cq_mod)
		p.sig = c->o->cq_mod < p.depth ? c->o->cq_mod : p.depth;
	p.warm = c->o->warmup >= 0 ? (uint64_t)c->o->warmup :
		 (uint64_t)(p.depth * 2 < 1000 ? p.depth * 2 : 1000) * c->nqps;
	p.dur_ns = (uint64_t)c->o->duration_s * 1000000000u;
	p.total = p.dur_ns ? UINT64_MAX : p.warm + (uint64_t)c->iters * c->nqps;
	p.seed = seed;
	p.rseed = seed ^ BW_SALT;
	ret = bw_fit(s, p.dur_ns ? BW_DUR_SAMPLES * 2 : p.total - p.warm + 4);
	if (ret)
		return ret;
	if (c->bidir) {
		/* The server's data may come as soon as it sent READY. */
		c->rx_data = 0;
		for (i = 0; i < c->nqps; i++)
			c->qps[i].rx_data = 0;
		c->rx_size = (uint32_t)size;
		c->rx_seed = seed ^ BW_SALT;
		c->rx_bad = 0;
		if (c->mode == GT_MODE_READ && c->verify)
			bw_fill_exposed(c, size, seed);
	}

	m.type = GT_CTL_BEGIN;
	m.size = (uint32_t)size;
	/* -D: the count is known at DONE; BEGIN's only has to be nonzero. */
	m.iters = p.dur_ns ? UINT64_MAX : p.total;
	m.seed = seed;
	m.warm = (uint32_t)p.warm;
	m.dur_s = c->o->duration_s;
	m.sig = p.sig;
	ret = gt_request(c, &m, GT_CTL_READY);
	if (!ret)
		ret = bw_stream(c, &p, s, res);
	if (ret)
		goto fail;

	memset(&m, 0, sizeof(m));
	m.type = GT_CTL_DONE;
	m.size = (uint32_t)size;
	m.iters = p.total;
	m.seed = seed;
	/* -b: the server's stream may still run; it keeps the wait alive. */
	c->run_ns = c->bidir ? p.dur_ns : 0;
	ret = gt_request(c, &m, GT_CTL_RESULT);
	c->run_ns = 0;
	if (ret)
		return ret;
	if (m.status & GT_ST_BAD_READ)
		fprintf(stderr, "%s: the server's READs returned wrong data at %zu bytes\n",
			c->o->prog, size);
	if (m.status & ~GT_ST_BAD_READ)
		fprintf(stderr, "%s: server found wrong data at %zu bytes\n", c->o->prog, size);
	if (m.status)
		*verified = 0;
	if (c->bidir && m.status && !m.res_iters) {
		/* Its stream stopped at the failure: no figures to add. */
		fprintf(stderr, "%s: the row at %zu bytes is this side's stream only\n",
			c->o->prog, size);
	} else if (c->bidir) {
		struct gt_bw_res peer;

		if (bw_peer_res(&peer, size, &m)) {
			fprintf(stderr, "%s: the server sent no result of its stream\n",
				c->o->prog);
			return -EPROTO;
		}
		if (bw_check_in(c, size, seed ^ BW_SALT, m.iters)) {
			fprintf(stderr, "%s: wrong data from the server at %zu bytes\n",
				c->o->prog, size);
			*verified = 0;
		}
		gt_bw_add(res, &peer);
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
	gt_report_begin(o);
	while (gt_next_size(o, &size)) {
		ret = bw_run_size(&c, size, &s, &res, &verified);
		if (ret)
			break;
		gt_report_bw(o, &res);
	}
	if (ret == -ENOMEM)
		fprintf(stderr, "%s: no memory for the samples\n", o->prog);
	if (!ret) {
		m.type = GT_CTL_FIN;
		ret = gt_request(&c, &m, GT_CTL_FIN_ACK);
		c.closing = 1;
	}
	if (!ret)
		ret = gt_drain(&c);
	gt_report_end(o, !ret && verified, ret && verified ? -1 : verified);
out:
	bw_free(&s);
	gt_teardown(&c);
	return ret || !verified ? 1 : 0;
}

/* ---- server side ---- */

static void bw_prepare(struct gt_ctx *c, const struct gt_ctl *m)
{
	if (c->mode == GT_MODE_READ && c->verify)
		bw_fill_exposed(c, m->size, m->seed ^ BW_SALT);
}

/*
 * After a stream stopped early: its last WR on a QP may be unsignaled and
 * would never retire, so an empty CREDIT (signaled, it lands in a control
 * receive of the peer) goes behind it first; then wait for all of them.
 */
static int bw_flush(struct gt_ctx *c)
{
	struct gt_ctl m = { .type = GT_CTL_CREDIT };
	uint32_t i;
	int ret;

	for (i = 0; i < c->nqps; i++) {
		struct gt_qp *q = &c->qps[i];

		if (q->sq_posted == q->sq_retired)
			continue;
		ret = gt_send_ctl_qp(c, q, &m);
		if (ret)
			return ret;
	}
	return gt_drain(c);
}

/* -b: after READY, stream back as the client's BEGIN says. */
static int bw_serve(struct gt_ctx *c, const struct gt_ctl *m)
{
	struct bw_plan p;
	int ret;

	bw_srv.total = 0;
	bw_srv.read_bad = 0;
	if (!c->bidir)
		return 0;
	bw_plan_base(c, &p, m->size);
	p.sig = m->sig < 1 ? 1 : m->sig > p.depth ? p.depth : m->sig;
	p.warm = m->warm;
	p.dur_ns = (uint64_t)m->dur_s * 1000000000u;
	p.total = p.dur_ns ? UINT64_MAX : m->iters;
	/* The client's -n x -q is at most 100000000 (gt_opts.c). */
	if (!p.dur_ns && (p.total <= p.warm || p.total - p.warm > 100000000u))
		return -EPROTO;
	p.seed = m->seed ^ BW_SALT;
	p.rseed = m->seed;
	ret = bw_fit(&bw_srv.s, p.dur_ns ? BW_DUR_SAMPLES * 2 : p.total - p.warm + 4);
	if (ret) {
		fprintf(stderr, "%s: no memory for the samples\n", c->o->prog);
		return ret;
	}
	ret = bw_stream(c, &p, &bw_srv.s, &bw_srv.res);
	if (ret == -EBADMSG) {
		fprintf(stderr, "%s: READ returned wrong data at %u bytes\n", c->o->prog, m->size);
		/* RESULT says so, without figures; the WRs the stream left
		 * out retire now, not in the next size's stream. */
		bw_srv.read_bad = 1;
		return bw_flush(c);
	}
	if (!ret)
		bw_srv.total = p.total;
	return ret;
}

static int bw_verify(struct gt_ctx *c, const struct gt_ctl *m)
{
	if (m->size != c->rx_size || m->seed != c->rx_seed)
		return -EPROTO;
	if (c->rx_bad)
		return -EBADMSG;
	return bw_check_in(c, m->size, m->seed, m->iters);
}

/* -b: the server's own run, summed into the client's row. */
static void bw_result(struct gt_ctx *c, struct gt_ctl *r)
{
	if (bw_srv.read_bad)
		r->status |= GT_ST_BAD_READ;
	if (!c->bidir || !bw_srv.total)
		return;
	r->iters = bw_srv.total;
	r->res_iters = bw_srv.res.iters;
	r->res_ns = bw_srv.res.ns;
	r->res_peak_bps = (uint64_t)(bw_srv.res.peak_mib * BW_MIB);
}

static const struct gt_server_ops bw_server_ops = {
	.prepare = bw_prepare,
	.begin = bw_serve,
	.verify = bw_verify,
	.result = bw_result,
};

int main(int argc, char **argv)
{
	struct gt_opts o;
	int ret = gt_parse_opts(&o, GT_BW, argc, argv);

	if (ret)
		return ret > 0 ? 0 : 2;
	if (o.node)
		return bw_client(&o);
	ret = gt_server_main(&o, &bw_server_ops);
	bw_free(&bw_srv.s);
	return ret;
}
