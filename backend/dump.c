// SPDX-License-Identifier: MIT
/*
 * `vrdmactl list`, `stats` (and `top`, which polls stats), text or JSON
 * from the same calls (vout.h); the census used by leak tests.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vbe.h"

static const char *const vbe_qps_names[] = {
	[VBE_QPS_RESET] = "reset", [VBE_QPS_CONNECTING] = "connecting",
	[VBE_QPS_RTS] = "rts", [VBE_QPS_ERR] = "error",
};

/* XenbusState (wire.h), as xenstore-ls users know them. */
static const char *const vbe_xb_names[] = {
	[VRDMA_XB_UNKNOWN] = "unknown", [VRDMA_XB_INITIALISING] = "initialising",
	[VRDMA_XB_INITWAIT] = "initwait", [VRDMA_XB_INITIALISED] = "initialised",
	[VRDMA_XB_CONNECTED] = "connected", [VRDMA_XB_CLOSING] = "closing",
	[VRDMA_XB_CLOSED] = "closed",
};

/* REG_MR access bits (VRDMA_ACC_*), in bit order. */
static const char *const vbe_acc_names[] = {
	"local-write", "remote-write", "remote-read", "remote-atomic",
};

static const char *vbe_xb_name(int state)
{
	if (state < 0 || state >= (int)(sizeof(vbe_xb_names) / sizeof(vbe_xb_names[0])))
		return "unknown";
	return vbe_xb_names[state];
}

/* What an operator calls a guest: its VM's name, else dom<N>/<dev>. */
static const char *vbe_label(const struct vbe_guest *g)
{
	return g->vm[0] ? g->vm : g->name;
}

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
	X(cmd_waits) X(ud_tx) X(ud_rx) X(ud_tx_drop) X(ud_rx_drop)

static void vbe_out_ctrs(const struct vbe_counters *c, const char *key, struct vout *o)
{
	vout_obj(o, key);
	vout_text(o, "  %s:", key);
#define X(f) vout_u64(o, #f, c->f, " " #f "=%llu", (unsigned long long)c->f);
	VBE_CTRS(X)
#undef X
	vout_text(o, "\n");
	vout_end(o);
}

static void vbe_out_counters(const struct vbe_guest *g, struct vout *o)
{
	vbe_out_ctrs(&g->ctr, "counters", o);
}

/* a += b, counter by counter; a maximum stays one */
static void vbe_ctrs_add(struct vbe_counters *a, const struct vbe_counters *b)
{
	uint64_t max = a->qdelay_max_us > b->qdelay_max_us ? a->qdelay_max_us : b->qdelay_max_us;

#define X(f) a->f += b->f;
	VBE_CTRS(X)
#undef X
	a->qdelay_max_us = max;
}

void vbe_node_ctrs_keep(struct vbe_guest *g)
{
	vbe_ctrs_add(&g->node->ctr_gone, &g->ctr);
}

/* Scripts split `stats -j` at "domid": and take the counters as the
 * first object after it: domid leads, nothing nested before counters. */
static void vbe_out_guest_head(const struct vbe_guest *g, struct vout *o)
{
	vout_ju64(o, "domid", g->domid);
	vout_ju64(o, "devid", g->devid);
	vout_jstr(o, "name", g->name);
	vout_jstr(o, "vm", g->vm[0] ? g->vm : NULL);
	vout_jstr(o, "tenant", g->tenant);
}

static void vbe_out_access(uint32_t access, struct vout *o)
{
	const char *sep = " ";
	unsigned b;

	vout_arr(o, "access");
	vout_text(o, " access");
	for (b = 0; b < sizeof(vbe_acc_names) / sizeof(vbe_acc_names[0]); b++) {
		if (!(access & 1u << b))
			continue;
		vout_str(o, NULL, vbe_acc_names[b], "%s%s", sep, vbe_acc_names[b]);
		sep = ",";
	}
	vout_text(o, "%s", *sep == ' ' ? " none" : "");
	vout_end(o);
}

static void vbe_out_objects(const struct vbe_guest *g, struct vout *o)
{
	uint32_t i;

	vout_arr(o, "qps");
	for (i = 0; g->qps && i < VBE_MAX_QPS; i++) {
		const struct vbe_qp *q = &g->qps[i];

		if (!q->s.used)
			continue;
		vout_obj(o, NULL);
		vout_u64(o, "handle", q->handle, "  qp %#x", q->handle);
		vout_u64(o, "qpn", q->qpn, " qpn %u", q->qpn);
		vout_str(o, "state", vbe_qps_names[q->state], " %s", vbe_qps_names[q->state]);
		vout_u64(o, "peer_domid", q->peer_domid, " peer %u", q->peer_domid);
		vout_u64(o, "peer_qpn", q->peer_qpn, "/%u", q->peer_qpn);
		vout_u64(o, "sq", q->sq.count, " sq %u", q->sq.count);
		vout_u64(o, "rq", q->rq.count, " rq %u\n", q->rq.count);
		vout_end(o);
	}
	vout_end(o);
	vout_arr(o, "mrs");
	for (i = 0; g->mrs && i < VBE_MAX_MRS; i++) {
		const struct vbe_mr *m = &g->mrs[i];
		uint32_t h = vbe_handle(&m->s, i);

		if (!m->s.used)
			continue;
		vout_obj(o, NULL);
		vout_u64(o, "handle", h, "  mr %#x", h);
		vout_u64(o, "lkey", m->key, " lkey %#x", m->key);
		vout_u64(o, "rkey", m->key, " rkey %#x", m->key);
		vout_u64(o, "length", m->length, " length %llu", (unsigned long long)m->length);
		vbe_out_access(m->access, o);
		vout_text(o, "\n");
		vout_end(o);
	}
	vout_end(o);
	vout_arr(o, "cqs");
	for (i = 0; g->cqs && i < VBE_MAX_CQS; i++) {
		const struct vbe_cq *c = &g->cqs[i];
		uint32_t h = vbe_handle(&c->s, i);

		if (!c->s.used)
			continue;
		vout_obj(o, NULL);
		vout_u64(o, "handle", h, "  cq %#x", h);
		vout_u64(o, "size", c->size, " size %u", c->size);
		vout_u64(o, "prod", c->prod, " prod %u\n", c->prod);
		vout_end(o);
	}
	vout_end(o);
}

/* One guest: its VM's name first, state and rights spelled out. */
static void vbe_out_guest(const struct vbe_guest *g, struct vout *o)
{
	vout_obj(o, NULL);
	vbe_out_guest_head(g, o);
	vout_text(o, "%s guest %u/%u tenant %s", vbe_label(g), g->domid, g->devid, g->tenant);
	vout_str(o, "state", vbe_xb_name(g->state), " state %s", vbe_xb_name(g->state));
	vout_bool(o, "disabled", g->dead, "%s", g->dead ? " disabled:" : "");
	vout_str(o, "reason", g->dead ? g->why : NULL, g->dead ? " %s\n" : "\n",
		 g->dead ? g->why : "");
	vbe_out_counters(g, o);
	vbe_out_objects(g, o);
	vout_end(o);
}

void vbe_node_dump(struct vbe_node *n, struct vout *o)
{
	const struct vbe_guest *g;
	unsigned count = 0;

	for (g = n->guests; g; g = g->next)
		count++;
	vout_str(o, "node", n->name, "node %s:", n->name);
	vout_text(o, " %u guests,", count);
	vout_u64(o, "disabled", n->disabled, " %llu disabled since start\n",
		 (unsigned long long)n->disabled);
	vout_ju64(o, "dev_bytes", n->dev_bytes);
	vout_ju64(o, "dev_full", n->dev_full);
	vout_ju64(o, "dev_hold_expired", n->dev_hold_expired);
	vout_arr(o, "guests");
	for (g = n->guests; g; g = g->next)
		vbe_out_guest(g, o);
	vout_end(o);
}

/* ---- stats ---- */

static const char *const vbe_cls_names[VBE_NCLASS] = { "high", "normal", "low" };

/* 4-5 characters: 999, 1.5K, 23M (base 1024 for bytes, 1000 counts). */
static const char *vbe_human(uint64_t v, unsigned base, char *buf, size_t len)
{
	static const char u[] = " KMGTPE";
	double d = (double)v;
	unsigned i = 0;

	while (d >= base && i < sizeof(u) - 2) {
		d /= base;
		i++;
	}
	if (!i)
		snprintf(buf, len, "%llu", (unsigned long long)v);
	else
		snprintf(buf, len, d < 9.95 ? "%.1f%c" : "%.0f%c", d, u[i]);
	return buf;
}

/* Microseconds in 5 characters: 999us, 9.9ms, 999ms, 9.9s, 999s, 99m, 99h, 9d. */
static const char *vbe_human_us(uint64_t us, char *buf, size_t len)
{
	uint64_t s = us / 1000000;

	if (us < 1000)
		snprintf(buf, len, "%lluus", (unsigned long long)us);
	else if (us < 9950)
		snprintf(buf, len, "%.1fms", (double)us / 1000);
	else if (us < 1000000)
		snprintf(buf, len, "%llums", (unsigned long long)(us / 1000));
	else if (us < 9950000)
		snprintf(buf, len, "%.1fs", (double)us / 1000000);
	else if (s < 1000)
		snprintf(buf, len, "%llus", (unsigned long long)s);
	else if (s < 100 * 60)
		snprintf(buf, len, "%llum", (unsigned long long)(s / 60));
	else if (s < 100 * 3600)
		snprintf(buf, len, "%lluh", (unsigned long long)(s / 3600));
	else
		snprintf(buf, len, "%llud", (unsigned long long)(s / 86400));
	return buf;
}

static uint64_t vbe_qdelay_avg(const struct vbe_guest *g)
{
	return g->ctr.qdelay_n ? g->ctr.qdelay_sum_us / g->ctr.qdelay_n : 0;
}

/* Sort keys of `stats -s` / `top -s`: guest and vm ascending, the rest
 * busiest first. */
static const char *const vbe_sort_names[] = {
	"guest", "vm", "io", "tx", "rx", "total", "qdly", "thr", "ref", NULL,
};

enum { VBE_SORT_GUEST, VBE_SORT_VM, VBE_SORT_IO, VBE_SORT_TX, VBE_SORT_RX,
       VBE_SORT_TOTAL, VBE_SORT_QDLY, VBE_SORT_THR, VBE_SORT_REF };

static uint64_t vbe_sort_val(const struct vbe_guest *g, int key)
{
	switch (key) {
	case VBE_SORT_IO:	return g->sch.bps_tx + g->sch.bps_rx;
	case VBE_SORT_TX:	return g->sch.bps_tx;
	case VBE_SORT_RX:	return g->sch.bps_rx;
	case VBE_SORT_TOTAL:	return g->ctr.tx_bytes + g->ctr.rx_bytes;
	case VBE_SORT_QDLY:	return vbe_qdelay_avg(g);
	case VBE_SORT_THR:	return g->ctr.throttled_us;
	case VBE_SORT_REF:	return g->ctr.refusals;
	default:		return 0;
	}
}

static int vbe_sort_cmp(const void *pa, const void *pb, void *arg)
{
	const struct vbe_guest *a = *(struct vbe_guest *const *)pa;
	const struct vbe_guest *b = *(struct vbe_guest *const *)pb;
	int key = *(const int *)arg, r = 0;
	uint64_t va, vb;

	if (key == VBE_SORT_VM) {
		r = strcmp(vbe_label(a), vbe_label(b));
	} else if (key != VBE_SORT_GUEST) {
		va = vbe_sort_val(a, key);
		vb = vbe_sort_val(b, key);
		r = va > vb ? -1 : va < vb;
	}
	if (!r)
		r = a->domid != b->domid ? (a->domid < b->domid ? -1 : 1) :
		    (a->devid > b->devid) - (a->devid < b->devid);
	return r;
}

/* VM (or guest) name in a 15-column field: a longer one ends in '+'. */
static const char *vbe_fit(const char *s, char buf[16])
{
	if (strlen(s) <= 15)
		return s;
	memcpy(buf, s, 14);
	buf[14] = '+';
	buf[15] = '\0';
	return buf;
}

static void vbe_stats_guest(const struct vbe_guest *g, struct vout *o)
{
	char a[7][16], name[16], id[24];
	const char *cls = vbe_cls_names[g->prio.cls % VBE_NCLASS];

	snprintf(id, sizeof(id), "%u/%u", g->domid, g->devid);
	vout_obj(o, NULL);
	vbe_out_guest_head(g, o);
	vout_text(o, "%-15s %-7s", vbe_fit(vbe_label(g), name), id);
	vout_str(o, "class", cls, " %-6s", cls);
	vout_u64(o, "weight", g->prio.weight, " %4u", g->prio.weight);
	vout_u64(o, "rate", g->prio.rate, " %5s",
		 g->prio.rate ? vbe_human(g->prio.rate, 1024, a[0], sizeof(a[0])) : "-");
	vout_ju64(o, "burst", g->prio.burst);
	vout_jbool(o, "throttled", g->sch.throttled);
	vout_jbool(o, "disabled", g->dead);
	vout_u64(o, "tx_Bps", g->sch.bps_tx, " %5s",
		 vbe_human(g->sch.bps_tx, 1024, a[1], sizeof(a[1])));
	vout_u64(o, "rx_Bps", g->sch.bps_rx, " %5s",
		 vbe_human(g->sch.bps_rx, 1024, a[2], sizeof(a[2])));
	vout_u64(o, "qdelay_avg_us", vbe_qdelay_avg(g), " %5s",
		 vbe_human_us(vbe_qdelay_avg(g), a[3], sizeof(a[3])));
	vout_text(o, " %5s %5s %4s %s%s%s%s\n",
		  vbe_human_us(g->ctr.qdelay_max_us, a[4], sizeof(a[4])),
		  vbe_human_us(g->ctr.throttled_us, a[5], sizeof(a[5])),
		  vbe_human(g->ctr.refusals, 1000, a[6], sizeof(a[6])),
		  g->dead ? "D" : "", g->sch.throttled ? "T" : "",
		  g->sch.cmd_throttled ? "C" : "",
		  g->dead || g->sch.throttled || g->sch.cmd_throttled ? "" : "-");
	if (vout_json(o))	/* the table has no room for them */
		vbe_out_counters(g, o);
	vout_end(o);
}

int vbe_node_stats(struct vbe_node *n, struct vout *o, const char *sort)
{
	struct vbe_guest *g, **v;
	size_t count = 0, i;
	int key;

	for (key = 0; sort && vbe_sort_names[key]; key++)
		if (!strcmp(sort, vbe_sort_names[key]))
			break;
	if (sort && !vbe_sort_names[key])
		return vout_err(o, -EINVAL, "stats: unknown sort key '%.32s' (guest, vm, io, "
				"tx, rx, total, qdly, thr or ref)", sort);
	if (!sort)
		key = VBE_SORT_GUEST;
	for (g = n->guests; g; g = g->next)
		count++;
	v = calloc(count ? count : 1, sizeof(*v));
	if (!v)
		return vout_err(o, -ENOMEM, "out of memory");
	for (g = n->guests, i = 0; g; g = g->next)
		v[i++] = g;
	qsort_r(v, count, sizeof(*v), vbe_sort_cmp, &key);

	vout_jstr(o, "node", n->name);
	vout_ju64(o, "dev_bytes", n->dev_bytes);
	vout_ju64(o, "dev_full", n->dev_full);
	vout_ju64(o, "dev_hold_expired", n->dev_hold_expired);
	vout_jstr(o, "sort", vbe_sort_names[key]);
	/* Before "guests": scripts that split at "domid" never see it. */
	if (vout_json(o)) {
		struct vbe_counters t = n->ctr_gone;

		for (i = 0; i < count; i++)
			vbe_ctrs_add(&t, &v[i]->ctr);
		vbe_out_ctrs(&t, "totals", o);
	}
	/* 78 columns: fits a terminal of 80 (`top`). */
	vout_text(o, "%-15s %-7s %-6s %4s %5s %5s %5s %5s %5s %5s %4s %s\n", "VM", "GUEST",
		  "CLASS", "WT", "RATE", "TX/s", "RX/s", "QDLY", "QMAX", "THR", "REF", "F");
	vout_arr(o, "guests");
	for (i = 0; i < count; i++)
		vbe_stats_guest(v[i], o);
	vout_end(o);
	free(v);
	return 0;
}
