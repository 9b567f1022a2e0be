// SPDX-License-Identifier: MIT
/* `vrdmactl list`, `stats` and the census used by leak tests. */
#include <stdio.h>

#include "vbe.h"

static const char *const vbe_qps_names[] = {
	[VBE_QPS_RESET] = "reset", [VBE_QPS_CONNECTING] = "connecting",
	[VBE_QPS_RTS] = "rts", [VBE_QPS_ERR] = "error",
};

void vbe_node_census(struct vbe_node *n, struct vbe_census *c)
{
	struct vbe_guest *g;
	uint32_t i;

	*c = (struct vbe_census){ 0 };
	for (i = 0; i < VBE_MAX_LISTENERS; i++)
		c->listeners += n->lis[i].s.used;
	c->maps = vbe_vx_pending(n);	/* device teardown still queued */
	c->dev_bytes = n->dev_bytes;
	for (g = n->guests; g; g = g->next) {
		c->guests++;
		c->credits += g->sch.credits_used;
		c->maps += g->nmaps;
		c->chans += g->chan != NULL;
		if (!g->qps)
			continue;
		for (i = 0; i < VBE_MAX_QPS; i++)
			c->qps += g->qps[i].s.used;
		for (i = 0; i < VBE_MAX_MRS; i++)
			c->mrs += g->mrs[i].s.used;
		for (i = 0; i < VBE_MAX_CQS; i++)
			c->cqs += g->cqs[i].s.used;
		for (i = 0; i < VBE_MAX_PDS; i++)
			c->pds += g->pds[i].s.used;
		for (i = 0; i < VBE_MAX_BUFS; i++)
			c->bufs += g->bufs[i].s.used;
	}
}

#define VBE_CTRS(X) \
	X(requests) X(commands) X(wrs) X(tx_bytes) X(tx_ops) X(rx_bytes) \
	X(rx_ops) X(completions) X(errors) X(violations) X(evt_dropped) \
	X(refusals) X(qdelay_n) X(qdelay_sum_us) X(qdelay_max_us) X(throttled_us) \
	X(cmd_waits)

static void vbe_dump_json(struct vbe_node *n, FILE *out)
{
	const char *gsep = "";
	struct vbe_guest *g;
	uint32_t i;

	fprintf(out, "{\"node\":\"%s\",\"disabled\":%llu,\"dev_bytes\":%llu,"
		"\"dev_full\":%llu,\"dev_hold_expired\":%llu,\"guests\":[", n->name,
		(unsigned long long)n->disabled, (unsigned long long)n->dev_bytes,
		(unsigned long long)n->dev_full, (unsigned long long)n->dev_hold_expired);
	for (g = n->guests; g; g = g->next) {
		const char *sep = "";

		fprintf(out, "%s{\"domid\":%u,\"devid\":%u,\"name\":\"%s\",\"tenant\":\"%s\","
			"\"state\":%d,\"disabled\":%s,\"counters\":{", gsep, g->domid, g->devid,
			g->name, g->tenant, g->state, g->dead ? "true" : "false");
#define X(f) fprintf(out, "%s\"" #f "\":%llu", sep, (unsigned long long)g->ctr.f); sep = ",";
		VBE_CTRS(X)
#undef X
		fprintf(out, "},\"qps\":[");
		sep = "";
		for (i = 0; g->qps && i < VBE_MAX_QPS; i++) {
			struct vbe_qp *q = &g->qps[i];

			if (!q->s.used)
				continue;
			fprintf(out, "%s{\"handle\":%u,\"qpn\":%u,\"state\":\"%s\","
				"\"peer_domid\":%u,\"peer_qpn\":%u,\"sq\":%u,\"rq\":%u}",
				sep, q->handle, q->qpn, vbe_qps_names[q->state],
				q->peer_domid, q->peer_qpn, q->sq.count, q->rq.count);
			sep = ",";
		}
		fprintf(out, "],\"mrs\":[");
		sep = "";
		for (i = 0; g->mrs && i < VBE_MAX_MRS; i++) {
			struct vbe_mr *m = &g->mrs[i];

			if (!m->s.used)
				continue;
			fprintf(out, "%s{\"handle\":%u,\"lkey\":%u,\"rkey\":%u,"
				"\"length\":%llu,\"access\":%u}", sep,
				vbe_handle(&m->s, i), m->key, m->key,
				(unsigned long long)m->length, m->access);
			sep = ",";
		}
		fprintf(out, "],\"cqs\":[");
		sep = "";
		for (i = 0; g->cqs && i < VBE_MAX_CQS; i++) {
			struct vbe_cq *c = &g->cqs[i];

			if (!c->s.used)
				continue;
			fprintf(out, "%s{\"handle\":%u,\"size\":%u,\"prod\":%u}", sep,
				vbe_handle(&c->s, i), c->size, c->prod);
			sep = ",";
		}
		fprintf(out, "]}");
		gsep = ",";
	}
	fprintf(out, "]}\n");
}

static void vbe_dump_text(struct vbe_node *n, FILE *out)
{
	struct vbe_guest *g;
	uint32_t i;

	fprintf(out, "node %s (%llu guests disabled)\n", n->name,
		(unsigned long long)n->disabled);
	for (g = n->guests; g; g = g->next) {
		fprintf(out, "guest %u device %u %s tenant %s state %d%s%s\n", g->domid,
			g->devid, g->name, g->tenant, g->state, g->dead ? " DISABLED: " : "",
			g->dead ? g->why : "");
		fprintf(out, "  counters:");
#define X(f) fprintf(out, " " #f "=%llu", (unsigned long long)g->ctr.f);
		VBE_CTRS(X)
#undef X
		fprintf(out, "\n");
		for (i = 0; g->qps && i < VBE_MAX_QPS; i++) {
			struct vbe_qp *q = &g->qps[i];

			if (q->s.used)
				fprintf(out, "  qp %#x qpn %u %s peer %u/%u sq %u rq %u\n",
					q->handle, q->qpn, vbe_qps_names[q->state],
					q->peer_domid, q->peer_qpn, q->sq.count, q->rq.count);
		}
		for (i = 0; g->mrs && i < VBE_MAX_MRS; i++) {
			struct vbe_mr *m = &g->mrs[i];

			if (m->s.used)
				fprintf(out, "  mr %#x lkey %#x rkey %#x length %llu access %#x\n",
					vbe_handle(&m->s, i), m->key, m->key,
					(unsigned long long)m->length, m->access);
		}
		for (i = 0; g->cqs && i < VBE_MAX_CQS; i++) {
			struct vbe_cq *c = &g->cqs[i];

			if (c->s.used)
				fprintf(out, "  cq %#x size %u prod %u\n",
					vbe_handle(&c->s, i), c->size, c->prod);
		}
	}
}

void vbe_node_dump(struct vbe_node *n, FILE *out, int json)
{
	if (json)
		vbe_dump_json(n, out);
	else
		vbe_dump_text(n, out);
}

static const char *const vbe_cls_names[VBE_NCLASS] = { "high", "normal", "low" };

static void vbe_stats_json(struct vbe_node *n, FILE *out)
{
	const char *gsep = "";
	struct vbe_guest *g;

	fprintf(out, "{\"node\":\"%s\",\"dev_bytes\":%llu,\"dev_full\":%llu,"
		"\"dev_hold_expired\":%llu,\"guests\":[", n->name,
		(unsigned long long)n->dev_bytes, (unsigned long long)n->dev_full,
		(unsigned long long)n->dev_hold_expired);
	for (g = n->guests; g; g = g->next) {
		const char *sep = "";

		fprintf(out, "%s{\"domid\":%u,\"devid\":%u,\"name\":\"%s\","
			"\"class\":\"%s\",\"weight\":%u,\"rate\":%llu,\"burst\":%llu,"
			"\"throttled\":%s,\"tx_Bps\":%llu,\"rx_Bps\":%llu,", gsep,
			g->domid, g->devid, g->name, vbe_cls_names[g->prio.cls % VBE_NCLASS],
			g->prio.weight, (unsigned long long)g->prio.rate,
			(unsigned long long)g->prio.burst, g->sch.throttled ? "true" : "false",
			(unsigned long long)g->sch.bps_tx, (unsigned long long)g->sch.bps_rx);
		fprintf(out, "\"counters\":{");
#define X(f) fprintf(out, "%s\"" #f "\":%llu", sep, (unsigned long long)g->ctr.f); sep = ",";
		VBE_CTRS(X)
#undef X
		fprintf(out, "}}");
		gsep = ",";
	}
	fprintf(out, "]}\n");
}

/* Human units, 4 significant-ish characters: 999, 1.5K, 23M... */
static const char *vbe_human(uint64_t v, char *buf, size_t len)
{
	static const char u[] = " KMGTPE";
	double d = (double)v;
	unsigned i = 0;

	while (d >= 1024 && i < sizeof(u) - 2) {
		d /= 1024;
		i++;
	}
	if (!i)
		snprintf(buf, len, "%llu", (unsigned long long)v);
	else
		snprintf(buf, len, d < 10 ? "%.1f%c" : "%.0f%c", d, u[i]);
	return buf;
}

static void vbe_stats_text(struct vbe_node *n, FILE *out)
{
	char a[5][16];
	struct vbe_guest *g;

	fprintf(out, "%-10s %-6s %6s %8s %8s %8s %8s %8s %8s %8s %9s %9s %8s\n",
		"GUEST", "CLASS", "WEIGHT", "RATE", "TX/s", "RX/s", "TX", "TX_OPS", "RX",
		"RX_OPS", "QDLY_AVG", "QDLY_MAX", "THR_MS");
	for (g = n->guests; g; g = g->next) {
		uint64_t avg = g->ctr.qdelay_n ? g->ctr.qdelay_sum_us / g->ctr.qdelay_n : 0;

		fprintf(out, "%-10s %-6s %6u %8s %8s %8s %8s %8llu %8s %8llu %7lluus "
			"%7lluus %8llu", g->name, vbe_cls_names[g->prio.cls % VBE_NCLASS],
			g->prio.weight,
			g->prio.rate ? vbe_human(g->prio.rate, a[0], sizeof(a[0])) : "-",
			vbe_human(g->sch.bps_tx, a[1], sizeof(a[1])),
			vbe_human(g->sch.bps_rx, a[2], sizeof(a[2])),
			vbe_human(g->ctr.tx_bytes, a[3], sizeof(a[3])),
			(unsigned long long)g->ctr.tx_ops,
			vbe_human(g->ctr.rx_bytes, a[4], sizeof(a[4])),
			(unsigned long long)g->ctr.rx_ops, (unsigned long long)avg,
			(unsigned long long)g->ctr.qdelay_max_us,
			(unsigned long long)(g->ctr.throttled_us / 1000));
		if (g->ctr.refusals)
			fprintf(out, " refused=%llu", (unsigned long long)g->ctr.refusals);
		if (g->dead)
			fprintf(out, " DISABLED");
		fputc('\n', out);
	}
}

void vbe_node_stats(struct vbe_node *n, FILE *out, int json)
{
	if (json)
		vbe_stats_json(n, out);
	else
		vbe_stats_text(n, out);
}
