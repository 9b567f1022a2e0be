// SPDX-License-Identifier: MIT
/*
 * Per-guest operator settings (issue 5, docs/prio.md): weight, class,
 * rate, quotas, and whether dom0 runs the VM's teams (coll).  They live
 * as keys in the guest's backend directory, like netback's `rate`, so
 * `vrdmactl set` (through vrdmad) and an operator's xenstore-write on Xen
 * go the same way: the node's watch sees the change and vbe_prio_load
 * applies it to traffic already flowing.
 *
 * Every value is checked here, whoever wrote it: a bad key in the store
 * is logged and the previous value kept.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "../vbe.h"

#define VBE_RATE_MIN		1024ull		/* bytes/s */
#define VBE_BURST_MIN		4096ull
#define VBE_BURST_DEF_MIN	(64ull << 10)

static const char *const vbe_class_names[VBE_NCLASS] = {
	[VBE_CLASS_HIGH] = "high", [VBE_CLASS_NORMAL] = "normal", [VBE_CLASS_LOW] = "low",
};

void vbe_prio_defaults(struct vbe_prio *p)
{
	p->weight = 1;
	p->cls = VBE_CLASS_NORMAL;
	p->rate = p->burst = 0;
	p->qps = VBE_MAX_QPS;
	p->mem = VBE_PRIO_MEM_DEF;
	p->wrs = VBE_MAX_WR_SLOTS;
	p->credits = VBE_PRIO_CREDITS_DEF;
	p->cmds = 0;
	p->coll_off = false;
}

/* Field by field: the struct has padding, which memcmp would compare. */
bool vbe_prio_same(const struct vbe_prio *a, const struct vbe_prio *b)
{
	return a->weight == b->weight && a->cls == b->cls && a->rate == b->rate &&
	       a->burst == b->burst && a->qps == b->qps && a->wrs == b->wrs &&
	       a->credits == b->credits && a->mem == b->mem && a->cmds == b->cmds &&
	       a->coll_off == b->coll_off;
}

/* A byte count: digits, then an optional K/M/G/T (powers of 1024). */
int vbe_prio_size(const char *s, const char **end, uint64_t *v)
{
	unsigned long long x;
	unsigned shift = 0;
	char *e;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &e, 10);
	if (errno)
		return -EINVAL;
	switch (*e) {
	case 'k': case 'K': shift = 10; e++; break;
	case 'm': case 'M': shift = 20; e++; break;
	case 'g': case 'G': shift = 30; e++; break;
	case 't': case 'T': shift = 40; e++; break;
	}
	if (shift && x > (UINT64_MAX >> shift))
		return -EINVAL;
	*v = (uint64_t)x << shift;
	*end = e;
	return 0;
}

static int vbe_prio_range(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	const char *e;

	if (vbe_prio_size(s, &e, v) || *e || *v < lo || *v > hi)
		return -EINVAL;
	return 0;
}

/* "0" | "unlimited" | BYTES[/s][,BURST] */
static int vbe_prio_rate(const char *s, struct vbe_prio *p)
{
	uint64_t rate, burst;
	const char *e;

	if (!strcmp(s, "0") || !strcasecmp(s, "unlimited")) {
		p->rate = p->burst = 0;
		return 0;
	}
	if (vbe_prio_size(s, &e, &rate) || rate < VBE_RATE_MIN)
		return -EINVAL;
	if (!strncmp(e, "/s", 2))
		e += 2;
	if (*e == ',') {
		if (vbe_prio_size(e + 1, &e, &burst) || *e || burst < VBE_BURST_MIN)
			return -EINVAL;
	} else if (*e) {
		return -EINVAL;
	} else {
		/* 200 ms worth: the daemon may sleep a 100 ms tick. */
		burst = rate / 5 > VBE_BURST_DEF_MIN ? rate / 5 : VBE_BURST_DEF_MIN;
	}
	p->rate = rate;
	p->burst = burst;
	return 0;
}

/* Parse one key's value into p; -EINVAL with `allowed` describing it. */
int vbe_prio_parse(const char *key, const char *val, struct vbe_prio *p,
		   const char **allowed)
{
	uint64_t v;
	unsigned i;

	if (!strcmp(key, "weight")) {
		*allowed = "an integer 1..1000";
		if (vbe_prio_range(val, 1, VBE_PRIO_WEIGHT_MAX, &v))
			return -EINVAL;
		p->weight = (uint32_t)v;
	} else if (!strcmp(key, "class")) {
		*allowed = "high, normal or low";
		for (i = 0; i < VBE_NCLASS; i++)
			if (!strcmp(val, vbe_class_names[i]))
				break;
		if (i == VBE_NCLASS)
			return -EINVAL;
		p->cls = i;
	} else if (!strcmp(key, "rate")) {
		*allowed = "BYTES[/s][,BURST] with BYTES >= 1K, BURST >= 4K (K/M/G/T suffixes), "
			   "or 0 / unlimited";
		return vbe_prio_rate(val, p);
	} else if (!strcmp(key, "qps")) {
		*allowed = "an integer 1..1024";
		if (vbe_prio_range(val, 1, VBE_MAX_QPS, &v))
			return -EINVAL;
		p->qps = (uint32_t)v;
	} else if (!strcmp(key, "mem")) {
		*allowed = "BYTES 1M..1T (K/M/G/T suffixes)";
		if (vbe_prio_range(val, 1ull << 20, VBE_PRIO_MEM_MAX, &v))
			return -EINVAL;
		p->mem = v;
	} else if (!strcmp(key, "wrs")) {
		*allowed = "an integer 2..65536 (queued-WR slots)";
		if (vbe_prio_range(val, 2, VBE_MAX_WR_SLOTS, &v))
			return -EINVAL;
		p->wrs = (uint32_t)v;
	} else if (!strcmp(key, "credits")) {
		*allowed = "an integer 1..4096 (WRs outstanding on the device)";
		if (vbe_prio_range(val, 1, VBE_PRIO_CREDITS_MAX, &v))
			return -EINVAL;
		p->credits = (uint32_t)v;
	} else if (!strcmp(key, "cmds")) {
		*allowed = "commands/s: an integer 10..1000000, or 0 / unlimited";
		if (!strcmp(val, "unlimited"))
			v = 0;
		else if (vbe_prio_range(val, 0, VBE_PRIO_CMDS_MAX, &v) ||
			 (v && v < VBE_PRIO_CMDS_MIN))
			return -EINVAL;
		p->cmds = (uint32_t)v;
	} else if (!strcmp(key, "coll")) {
		/* Read at TEAM_JOIN (backend/coll/team.c): teams made before
		 * a change keep running as they were made. */
		*allowed = "on or off (dom0 runs the VM's teams, or its guests do)";
		if (strcmp(val, "on") && strcmp(val, "off"))
			return -EINVAL;
		p->coll_off = !strcmp(val, "off");
	} else {
		*allowed = "keys weight, class, rate, qps, mem, wrs, credits, cmds, coll";
		return -ENOENT;
	}
	return 0;
}

/* The canonical value of key, as stored and as `get` prints it. */
void vbe_prio_format(const struct vbe_prio *p, const char *key, char *buf, size_t len)
{
	if (!strcmp(key, "weight"))
		snprintf(buf, len, "%u", p->weight);
	else if (!strcmp(key, "class"))
		snprintf(buf, len, "%s", vbe_class_names[p->cls % VBE_NCLASS]);
	else if (!strcmp(key, "rate") && !p->rate)
		snprintf(buf, len, "0");
	else if (!strcmp(key, "rate"))
		snprintf(buf, len, "%llu,%llu", (unsigned long long)p->rate,
			 (unsigned long long)p->burst);
	else if (!strcmp(key, "qps"))
		snprintf(buf, len, "%u", p->qps);
	else if (!strcmp(key, "mem"))
		snprintf(buf, len, "%llu", (unsigned long long)p->mem);
	else if (!strcmp(key, "wrs"))
		snprintf(buf, len, "%u", p->wrs);
	else if (!strcmp(key, "credits"))
		snprintf(buf, len, "%u", p->credits);
	else if (!strcmp(key, "cmds"))
		snprintf(buf, len, "%u", p->cmds);
	else if (!strcmp(key, "coll"))
		snprintf(buf, len, "%s", p->coll_off ? "off" : "on");
	else
		snprintf(buf, len, "?");
}

const char *const vbe_prio_keys[] = {
	"weight", "class", "rate", "qps", "mem", "wrs", "credits", "cmds", "coll", NULL,
};

/* New settings take effect from the next round; a new or lower rate
 * starts from a full (or trimmed) bucket. */
void vbe_prio_apply(struct vbe_guest *g, const struct vbe_prio *p)
{
	struct vbe_sched *s = &g->sch;

	if (p->rate && !g->prio.rate) {
		s->tokens = p->burst;
		s->t_fill = vbe_sched_now(g->node);
	}
	if (s->tokens > p->burst)
		s->tokens = p->burst;
	if (p->cmds && !g->prio.cmds) {
		s->cmd_tokens = vbe_sched_cmd_burst(p->cmds);
		s->cmd_fill = vbe_sched_now(g->node);
	}
	if (p->cmds && s->cmd_tokens > vbe_sched_cmd_burst(p->cmds))
		s->cmd_tokens = vbe_sched_cmd_burst(p->cmds);
	if (!vbe_prio_same(&g->prio, p))
		vlog_info("guest %u device %u: weight %u class %s rate %llu burst %llu "
			  "qps %u mem %llu wrs %u credits %u cmds %u coll %s", g->domid,
			  g->devid, p->weight, vbe_class_names[p->cls % VBE_NCLASS],
			  (unsigned long long)p->rate, (unsigned long long)p->burst,
			  p->qps, (unsigned long long)p->mem, p->wrs, p->credits, p->cmds,
			  p->coll_off ? "off" : "on");
	g->prio = *p;
}

void vbe_prio_load(struct vbe_guest *g)
{
	struct vbe_prio p = g->prio, def;
	char path[VPLAT_KEY_MAX], val[128];
	const char *allowed;
	unsigned i;
	int err, changed;

	vbe_prio_defaults(&def);
	for (i = 0; vbe_prio_keys[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", g->bdir, vbe_prio_keys[i]);
		err = vplat_key_read(g->node->plat, path, val, sizeof(val));
		if (err == -ENOENT)
			vbe_prio_format(&def, vbe_prio_keys[i], val, sizeof(val));
		else if (err)
			continue;	/* unreadable now: keep what we have */
		if (vbe_prio_parse(vbe_prio_keys[i], val, &p, &allowed))
			vlog_warn("guest %u device %u: ignoring %s='%.32s': allowed: %s",
				  g->domid, g->devid, vbe_prio_keys[i], val, allowed);
	}
	changed = !vbe_prio_same(&g->prio, &p);
	vbe_prio_apply(g, &p);
	if (changed)	/* an operator's xenstore-write too: the VM's now, on disk */
		vbe_prio_keep(g);
}

void vbe_prio_init(struct vbe_guest *g)
{
	vbe_prio_defaults(&g->prio);
	vbe_prio_recall(g);
	vbe_prio_load(g);
}

static int vbe_refuse(struct vbe_guest *g, const char *what)
{
	g->ctr.refusals++;
	vlog_dbg("guest %u: %s quota reached: NOMEM", g->domid, what);
	return VRDMA_CS_NOMEM;
}

/* Counters, not table scans: a scan per command touched every page of the
 * guest's tables (and cost a loop of 1024 or 4096). */
int vbe_quota_qp(struct vbe_guest *g, uint32_t slots)
{
	if (g->nqps >= g->prio.qps)
		return vbe_refuse(g, "qps");
	if (g->wr_slots > g->prio.wrs || slots > g->prio.wrs - g->wr_slots)
		return vbe_refuse(g, "wrs");
	return vbe_tenant_quota(g, VBE_TQ_QPS, 1);	/* issue 12 */
}

int vbe_quota_mr(struct vbe_guest *g, uint64_t len)
{
	uint64_t sum = g->mr_bytes;

	if (sum > g->prio.mem || len > g->prio.mem - sum)
		return vbe_refuse(g, "mem");
	return vbe_tenant_quota(g, VBE_TQ_MEM, len);	/* issue 12 */
}
