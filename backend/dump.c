// SPDX-License-Identifier: MIT
/* `vrdmactl list` and the census used by leak tests. */
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
	for (g = n->guests; g; g = g->next) {
		c->guests++;
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
	X(rx_ops) X(completions) X(errors) X(violations) X(evt_dropped)

static void vbe_dump_json(struct vbe_node *n, FILE *out)
{
	const char *gsep = "";
	struct vbe_guest *g;
	uint32_t i;

	fprintf(out, "{\"node\":\"%s\",\"disabled\":%llu,\"guests\":[", n->name,
		(unsigned long long)n->disabled);
	for (g = n->guests; g; g = g->next) {
		const char *sep = "";

		fprintf(out, "%s{\"domid\":%u,\"devid\":%u,\"name\":\"%s\",\"state\":%d,"
			"\"disabled\":%s,\"counters\":{", gsep, g->domid, g->devid,
			g->name, g->state, g->dead ? "true" : "false");
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
		fprintf(out, "guest %u device %u %s state %d%s%s\n", g->domid, g->devid,
			g->name, g->state, g->dead ? " DISABLED: " : "",
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
