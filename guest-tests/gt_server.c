// SPDX-License-Identifier: MIT
/*
 * The server side of vrdma-bw and vrdma-lat: accept one client, then obey
 * its control messages until FIN.  Per-program work comes in as ops.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gt_common.h"

static int gt_serve(struct gt_ctx *c, const struct gt_server_ops *ops,
		    uint32_t *sizes, int *verify_ok)
{
	uint32_t last_size = 0, i;
	struct gt_ctl m, r;
	int ret;

	for (;;) {
		ret = gt_wait_ctl(c, &m, 0);
		if (ret)
			return ret;
		memset(&r, 0, sizeof(r));
		switch (m.type) {
		case GT_CTL_BEGIN:
			/* -D is at most a day (gt_opts.c): a longer one
			 * would hold this server that long. */
			if (!m.size || m.size > c->max_size || !m.iters ||
			    m.dur_s > GT_MAX_DURATION)
				return -EPROTO;
			c->rx_data = 0;
			for (i = 0; i < c->nqps; i++)
				c->qps[i].rx_data = 0;
			c->rx_size = m.size;
			c->rx_seed = m.seed;
			c->rx_bad = 0;
			/* The wait for DONE: the run's -D more than --timeout. */
			c->run_ns = (uint64_t)m.dur_s * 1000000000u;
			if (ops->prepare)
				ops->prepare(c, &m);
			r.type = GT_CTL_READY;
			ret = gt_send_ctl(c, &r);
			if (!ret && ops->begin)
				ret = ops->begin(c, &m);
			break;
		case GT_CTL_DONE:
			c->run_ns = 0;
			r.type = GT_CTL_RESULT;
			r.status = ops->verify && ops->verify(c, &m) ? GT_ST_BAD_IN : 0;
			if (ops->result)
				ops->result(c, &r);
			if (r.status)
				*verify_ok = 0;
			/* vrdma-lat -D runs one size in several rounds. */
			if (m.size != last_size)
				(*sizes)++;
			last_size = m.size;
			ret = gt_send_ctl(c, &r);
			break;
		case GT_CTL_FIN:
			c->closing = 1;
			r.type = GT_CTL_FIN_ACK;
			ret = gt_send_ctl(c, &r);
			return ret ? ret : gt_drain(c);
		default:
			return -EPROTO;
		}
		if (ret)
			return ret;
	}
}

int gt_server_main(struct gt_opts *o, const struct gt_server_ops *ops)
{
	struct gt_ctx c;
	uint32_t sizes = 0;
	int verify_ok = 1, ret;

	ret = gt_server_accept(&c, o);
	if (ret)
		goto out;
	ret = gt_serve(&c, ops, &sizes, &verify_ok);
	if (ret == -EPROTO)
		fprintf(stderr, "%s: protocol error from the client\n", o->prog);
	/* One summary line; the client prints the table. */
	if (!ret)
		fprintf(o->fmt == GT_FMT_TEXT && o->output == GT_OUT_FULL ? stdout : stderr,
			"%s server: %s mode%s, %u QP(s), %u size(s) served%s%s\n", o->prog,
			gt_mode_name(c.mode), c.bidir ? ", bidirectional" : "", c.nqps,
			sizes, c.verify ? ", verify: " : "",
			c.verify ? (verify_ok ? "OK" : "FAILED") : "");
	if (!ret && !verify_ok)
		ret = -EBADMSG;
out:
	gt_teardown(&c);
	return ret ? 1 : 0;
}
