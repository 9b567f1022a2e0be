// SPDX-License-Identifier: MIT
/*
 * vrdma-lat: ping-pong latency between two guests (perftest ib_write_lat,
 * ib_send_lat).  write: each side RDMA WRITEs into the peer's buffer and
 * spins on the last byte of its own; send: SEND/RECV through the CQs.
 * Latency is half the round trip.  -D runs rounds of pings sized to fill
 * what is left of the duration and prints perftest's duration row.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_common.h"

#define LAT_WARMUP	100u
#define LAT_SIG		8u		/* signal every LAT_SIG writes */
#define LAT_SALT	0x0ff1ce00u	/* server->client pattern differs */
#define LAT_SETTLE_NS	1000000000ull	/* body may trail the last byte */

static uint8_t lat_tag(uint64_t i)
{
	return (uint8_t)(i % 255 + 1);	/* never 0, differs from i - 1 */
}

/* The sending half of one ping or pong. */
static int lat_post(struct gt_ctx *c, uint32_t size, uint32_t seed, uint64_t i,
		    uint64_t total)
{
	uint8_t *src = c->data;
	int ret;

	if (c->verify)
		gt_fill(src, size, seed, i);
	if (c->mode == GT_MODE_WRITE)
		src[size - 1] = lat_tag(i);
	ret = gt_wait_sq(c, &c->qps[0], c->sq_depth - GT_CTL_SLOTS);
	if (ret)
		return ret;
	return gt_post(c, &c->qps[0], c->mode == GT_MODE_WRITE ? VRDMA_WR_RDMA_WRITE : VRDMA_WR_SEND,
		       src, size, c->raddr, (i + 1) % LAT_SIG == 0 || i == total - 1);
}

/*
 * The receiving half: message i arrived.  write: the last byte shows it;
 * the copy may fill the rest in any order, so with --verify the body gets
 * a moment to settle.  send: a RECV completion (checked in gt_progress).
 */
static int lat_wait(struct gt_ctx *c, uint32_t size, uint32_t seed, uint64_t i)
{
	uint64_t deadline = gt_deadline(c), settle;
	const uint8_t *dst = c->data + c->data_len / 2;
	int ret;

	if (c->mode == GT_MODE_SEND) {
		while (c->rx_data <= i) {
			int left = gt_ms_left(deadline);

			if (left <= 0) {
				fprintf(stderr, "%s: timed out waiting for the peer's send\n",
					c->o->prog);
				return -ETIMEDOUT;
			}
			ret = gt_progress(c, left);
			if (ret < 0)
				return ret;
		}
		return 0;
	}
	ret = gt_spin_byte(c, dst + size - 1, lat_tag(i), deadline);
	if (ret || !c->verify)
		return ret;
	settle = gt_now_ns() + LAT_SETTLE_NS;
	while (gt_check(dst, size - 1, seed, i)) {
		if (gt_now_ns() > settle) {
			c->rx_bad = 1;
			break;
		}
	}
	return 0;
}

/* One round: warm untimed pings, then iters timed ones into rtt[]. */
static int lat_run_size(struct gt_ctx *c, uint32_t size, uint64_t warm,
			uint64_t iters, uint64_t *rtt, int *verified)
{
	uint32_t seed = (uint32_t)gt_now_ns() ^ size;
	uint64_t total = warm + iters, i;
	struct gt_ctl m = { 0 };
	int ret;

	/* Clear the landing area before the server may write into it. */
	memset(c->data + c->data_len / 2, 0, c->data_len / 2);
	c->rx_data = 0;
	c->qps[0].rx_data = 0;
	c->rx_size = size;
	c->rx_seed = seed ^ LAT_SALT;
	c->rx_bad = 0;
	m.type = GT_CTL_BEGIN;
	m.size = size;
	m.iters = total;
	m.seed = seed;
	ret = gt_request(c, &m, GT_CTL_READY);
	if (ret)
		return ret;
	for (i = 0; i < total; i++) {
		uint64_t t0 = gt_now_ns();

		ret = lat_post(c, size, seed, i, total);
		if (!ret)
			ret = lat_wait(c, size, seed ^ LAT_SALT, i);
		if (ret)
			return ret;
		if (i >= warm)
			rtt[i - warm] = gt_now_ns() - t0;
	}
	ret = gt_drain(c);
	if (ret)
		return ret;
	if (c->rx_bad) {
		fprintf(stderr, "%s: wrong data from the server at %u bytes\n",
			c->o->prog, size);
		*verified = 0;
	}
	memset(&m, 0, sizeof(m));
	m.type = GT_CTL_DONE;
	m.size = size;
	m.iters = total;
	m.seed = seed;
	ret = gt_request(c, &m, GT_CTL_RESULT);
	if (ret)
		return ret;
	if (m.status) {
		fprintf(stderr, "%s: server found wrong data at %u bytes\n", c->o->prog, size);
		*verified = 0;
	}
	return 0;
}

/*
 * -D: rounds until the duration is up, each sized from the mean round
 * trip so far to about fill what is left (the server is told each
 * round's count at BEGIN), at most -n's default pings (rtt[]) a round.
 */
static int lat_run_duration(struct gt_ctx *c, uint32_t size, uint64_t *rtt,
			    int *verified)
{
	uint64_t dur = (uint64_t)c->o->duration_s * 1000000000u, t0 = gt_now_ns();
	uint64_t warm = c->o->warmup >= 0 ? (uint64_t)c->o->warmup : LAT_WARMUP;
	uint64_t sum = 0, n = 0, round = 16, now, k;
	struct gt_lat_dur r = { .size = size };
	int ret;

	for (;;) {
		ret = lat_run_size(c, size, warm, round, rtt, verified);
		if (ret)
			return ret;
		for (k = 0; k < round; k++)
			sum += rtt[k];
		n += round;
		warm = 0;
		now = gt_now_ns();
		if (now - t0 >= dur)
			break;
		round = (dur - (now - t0)) / (sum / n ? sum / n : 1) + 1;
		if (round > c->o->iters)
			round = c->o->iters;
	}
	r.iters = n;
	r.avg_us = (double)sum / (double)n / 2 / 1000;
	r.tps = sum ? (double)n * 1e9 / (double)sum : 0;
	gt_report_lat_dur(c->o, &r);
	return 0;
}

static int lat_client(struct gt_opts *o)
{
	uint64_t warm = o->warmup >= 0 ? (uint64_t)o->warmup : LAT_WARMUP;
	struct ps_lat res;
	struct gt_ctl m = { 0 };
	struct gt_ctx c;
	uint64_t *rtt = NULL;
	size_t size = 0;
	int ret, verified = 1;

	ret = gt_client_connect(&c, o);
	if (ret)
		goto out;
	rtt = calloc(o->iters, sizeof(*rtt));
	ret = -ENOMEM;
	if (!rtt)
		goto out;
	ret = 0;
	gt_report_begin(o);
	while (gt_next_size(o, &size)) {
		if (o->duration_s) {
			ret = lat_run_duration(&c, (uint32_t)size, rtt, &verified);
			if (ret)
				break;
			continue;
		}
		ret = lat_run_size(&c, (uint32_t)size, warm, c.iters, rtt, &verified);
		if (ret)
			break;
		ps_lat_compute(&res, size, rtt, c.iters);
		gt_report_lat(o, &res);
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
	free(rtt);
	gt_teardown(&c);
	return ret || !verified ? 1 : 0;
}

/* ---- server side: answer every ping ---- */

static void lat_prepare(struct gt_ctx *c, const struct gt_ctl *m)
{
	(void)m;
	memset(c->data + c->data_len / 2, 0, c->data_len / 2);
}

static int lat_serve(struct gt_ctx *c, const struct gt_ctl *m)
{
	uint64_t i;
	int ret;

	for (i = 0; i < m->iters; i++) {
		ret = lat_wait(c, m->size, m->seed, i);
		if (!ret)
			ret = lat_post(c, m->size, m->seed ^ LAT_SALT, i, m->iters);
		if (ret)
			return ret;
	}
	return gt_drain(c);
}

static int lat_verify(struct gt_ctx *c, const struct gt_ctl *m)
{
	if (m->size != c->rx_size || m->seed != c->rx_seed)
		return -EPROTO;
	return c->rx_bad ? -EBADMSG : 0;
}

static const struct gt_server_ops lat_server_ops = {
	.prepare = lat_prepare,
	.begin = lat_serve,
	.verify = lat_verify,
};

int main(int argc, char **argv)
{
	struct gt_opts o;
	int ret = gt_parse_opts(&o, GT_LAT, argc, argv);

	if (ret)
		return ret > 0 ? 0 : 2;
	return o.node ? lat_client(&o) : gt_server_main(&o, &lat_server_ops);
}
