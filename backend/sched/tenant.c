// SPDX-License-Identifier: MIT
/*
 * Quotas per tenant (issue 12, docs/tenants.md): the per-guest quotas
 * stop one guest, not one owner of many guests.  A tenant is named by
 * the platform (`tenant` in the backend dir: "uid<N>" on the plain host)
 * or is the domain ("dom<N>", Xen).  Its connected devices, listeners,
 * pending CONNECTs, QPs and registered bytes are summed over its guests
 * and checked where each is asked for.  Limits are keys
 * (VPLAT_TENANT_ROOT/<tenant>/<key>, then .../default/<key>, then the
 * node's defaults: vrdmad.conf's [limits], else built in), cached per
 * tenant and re-read after the watch on VPLAT_TENANT_ROOT fired, so
 * `vrdmactl set` and an operator's key write both apply to the next
 * request.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "../vbe.h"

const char *const vbe_tenant_keys[] = {
	"guests", "listeners", "conns", "qps", "mem", "cqs", "mrs", "pages", "cmds", "maps", "devqps",
	NULL,
};

static const uint64_t vbe_tenant_top[VBE_TQ_N] = {
	[VBE_TQ_GUESTS] = 256, [VBE_TQ_LISTENERS] = VBE_MAX_LISTENERS,
	[VBE_TQ_CONNS] = VBE_MAX_CONNS, [VBE_TQ_QPS] = 1u << 24,	/* QPNs */
	[VBE_TQ_MEM] = 1ull << 50,
	[VBE_TQ_CQS] = 256u * VBE_MAX_CQS, [VBE_TQ_MRS] = 256u * VBE_MAX_MRS,	/* 256 guests' */
	[VBE_TQ_PAGES] = 256u * VBE_MAX_PAGES,
	[VBE_TQ_CMDS] = 1000000,		/* per second, as a guest's */
	[VBE_TQ_MAPS] = 1u << 20,		/* above any platform's budget */
	[VBE_TQ_DEVQPS] = VBE_NODE_DEVQPS,
};

uint64_t vbe_tenant_max(unsigned q)
{
	return q < VBE_TQ_N ? vbe_tenant_top[q] : 0;
}

void vbe_tenant_defaults(uint64_t lim[VBE_TQ_N])
{
	lim[VBE_TQ_GUESTS] = VPLAT_TENANT_GUESTS;
	lim[VBE_TQ_LISTENERS] = VBE_TENANT_LISTENERS;
	lim[VBE_TQ_CONNS] = VBE_TENANT_CONNS;
	lim[VBE_TQ_QPS] = VBE_TENANT_QPS;
	lim[VBE_TQ_MEM] = VBE_TENANT_MEM;
	lim[VBE_TQ_CQS] = VBE_TENANT_CQS;
	lim[VBE_TQ_MRS] = VBE_TENANT_MRS;
	lim[VBE_TQ_PAGES] = VBE_TENANT_PAGES;
	lim[VBE_TQ_CMDS] = 0;	/* off: docs/tenants.md says why */
	lim[VBE_TQ_MAPS] = VBE_TENANT_MAPS;	/* the node's budget's: vbe_maps_init */
	lim[VBE_TQ_DEVQPS] = VBE_TENANT_DEVQPS;
}

/* Key path components: what the key store and xenstore both take. */
bool vbe_tenant_name_ok(const char *s)
{
	size_t i, len = strnlen(s, VPLAT_TENANT_NAME);

	if (!len || len >= VPLAT_TENANT_NAME || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' ||
		      s[i] == '.' || s[i] == '@'))
			return false;
	return true;
}

/* Limits changed (any key below the root): re-read before the next check.
 * A key written (or removed) by hand goes into the settings file at the
 * next tick, as a VM's: at every firing but the watch's first (it fires
 * once at registration) and vbe_tenant_set's own call (no path: it saves
 * before it answers; its writes' events cost one more write at the
 * tick). */
static void vbe_tenant_changed(struct vplat *p, const char *path, void *arg)
{
	struct vbe_node *n = arg;
	struct vbe_tenant *t;

	(void)p;
	for (t = n->tenants; t; t = t->next)
		t->stale = true;
	if (path && n->tenant_watch_fired)
		vbe_store_later(n);
	if (path)
		n->tenant_watch_fired = true;
}

int vbe_tenant_watch(struct vbe_node *n)
{
	n->tenant_watch_fired = false;
	return vplat_watch(n->plat, VPLAT_TENANT_ROOT, vbe_tenant_changed, n);
}

void vbe_tenant_unwatch(struct vbe_node *n)
{
	vplat_unwatch(n->plat, VPLAT_TENANT_ROOT, n);
}

/* g joins its tenant: the `tenant` key of its backend dir, or its domain. */
int vbe_tenant_init(struct vbe_guest *g)
{
	char path[VPLAT_KEY_MAX], val[VPLAT_TENANT_NAME + 1], name[VPLAT_TENANT_NAME];
	struct vbe_node *n = g->node;
	struct vbe_tenant *t;

	snprintf(path, sizeof(path), "%s/tenant", g->bdir);
	if (vplat_key_read(n->plat, path, val, sizeof(val)) >= 0 &&
	    vbe_tenant_name_ok(val) && strcmp(val, "default"))
		memcpy(name, val, strlen(val) + 1);
	else
		snprintf(name, sizeof(name), "dom%u", g->domid);
	for (t = n->tenants; t; t = t->next)
		if (!strcmp(t->name, name))
			break;
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return -ENOMEM;
		memcpy(t->name, name, sizeof(name));
		t->stale = true;
		t->next = n->tenants;
		n->tenants = t;
	}
	memcpy(g->tenant, name, sizeof(name));
	g->ten = t;
	g->tnext = t->guests;
	t->guests = g;
	return 0;
}

/* g leaves its tenant; the last one out frees it. */
void vbe_tenant_fini(struct vbe_guest *g)
{
	struct vbe_tenant *t = g->ten, **pt;
	struct vbe_guest **pg;

	if (!t)
		return;
	for (pg = &t->guests; *pg && *pg != g; pg = &(*pg)->tnext)
		;
	if (*pg)
		*pg = g->tnext;
	g->ten = NULL;
	if (t->guests || t->late_pages || t->late_maps)	/* vbe_tenant_late frees it then */
		return;
	for (pt = &g->node->tenants; *pt && *pt != t; pt = &(*pt)->next)
		;
	if (*pt)
		*pt = t->next;
	free(t);
}

int vbe_tenant_parse(unsigned q, const char *val, uint64_t *out)
{
	const char *e;
	uint64_t v;

	/* K/M/G/T for bytes (mem) only: on a count, "qps=4K" is a slip. */
	if (vbe_prio_size(val, &e, &v) || *e || v > vbe_tenant_top[q] ||
	    (q != VBE_TQ_MEM && val[strspn(val, "0123456789")]))
		return -EINVAL;
	*out = v;
	return 0;
}

/* The key of limit q in dir (a tenant or "default") into *out, if set. */
static bool vbe_tenant_key(struct vbe_node *n, const char *dir, unsigned q, uint64_t *out)
{
	char path[VPLAT_KEY_MAX], val[32];

	snprintf(path, sizeof(path), VPLAT_TENANT_ROOT "/%s/%s", dir, vbe_tenant_keys[q]);
	if (vplat_key_read(n->plat, path, val, sizeof(val)) < 0)
		return false;
	if (vbe_tenant_parse(q, val, out)) {
		vlog_warn("backend: %s is '%s': not 0..%llu, ignored", path, val,
			  (unsigned long long)vbe_tenant_top[q]);
		return false;
	}
	return true;
}

/* A tenant's limits from the keys; own[q] says whether q is its own. */
void vbe_tenant_limits(struct vbe_node *n, const char *tenant, uint64_t lim[VBE_TQ_N],
		       bool own[VBE_TQ_N])
{
	unsigned q;

	memcpy(lim, n->tenant_def, sizeof(n->tenant_def));
	for (q = 0; q < VBE_TQ_N; q++) {
		bool mine = vbe_tenant_key(n, tenant, q, &lim[q]);

		if (!mine)
			vbe_tenant_key(n, "default", q, &lim[q]);
		if (own)
			own[q] = mine;
	}
}

/* Cached: QP and MR checks run per command, and on Xen a key read is a
 * xenstore round trip.  The watch marks them stale. */
static const uint64_t *vbe_tenant_lim(struct vbe_node *n, struct vbe_tenant *t)
{
	if (t->stale) {
		vbe_tenant_limits(n, t->name, t->lim, NULL);
		t->stale = false;
	}
	return t->lim;
}

/*
 * Tables for guests, listeners, conns: 256 entries, control requests.
 * QPs and registered bytes: the per-guest counters of the tenant's guests
 * (at most its `guests`), never a table.
 */
void vbe_tenant_usage(struct vbe_node *n, const char *tenant, uint64_t use[VBE_TQ_N])
{
	struct vbe_tenant *t;
	struct vbe_guest *g;
	unsigned i;

	memset(use, 0, sizeof(use[0]) * VBE_TQ_N);
	for (t = n->tenants; t; t = t->next)
		if (!strcmp(t->name, tenant)) {
			use[VBE_TQ_PAGES] += t->late_pages;
			use[VBE_TQ_MAPS] += t->late_maps;
		}
	for (g = n->guests; g; g = g->next) {
		if (strcmp(g->tenant, tenant))
			continue;
		use[VBE_TQ_GUESTS] += g->connected && !g->dead;
		use[VBE_TQ_QPS] += g->nqps;
		use[VBE_TQ_MEM] += g->mr_bytes;
		use[VBE_TQ_CQS] += g->ncqs;
		use[VBE_TQ_MRS] += g->nmrs;
		use[VBE_TQ_PAGES] += g->pages;
		use[VBE_TQ_MAPS] += g->maps;
		use[VBE_TQ_DEVQPS] += g->dev_qps;
	}
	for (i = 0; i < VBE_MAX_LISTENERS; i++)
		use[VBE_TQ_LISTENERS] += n->lis[i].s.used && !strcmp(n->lis[i].tenant, tenant);
	for (i = 0; i < VBE_MAX_CONNS; i++)
		use[VBE_TQ_CONNS] += n->conns[i].id && !strcmp(n->conns[i].tenant, tenant);
}

_Static_assert(VBE_TQ_N <= 8 * sizeof(((struct vbe_guest *)0)->tenant_warned),
	       "a bit of tenant_warned per quota");

/* Counted as a refusal; logged once per guest and quota, naming the
 * tenant: a guest retrying must not flood the log.  more: what it asked
 * for, 1 for a table entry. */
static int vbe_tenant_refuse(struct vbe_guest *g, unsigned q, uint64_t use, uint64_t more,
			     uint64_t lim)
{
	g->ctr.refusals++;
	if (g->tenant_warned & 1u << q)
		return VRDMA_CS_NOMEM;
	g->tenant_warned |= (uint16_t)(1u << q);
	if (more == 1 && use >= lim)
		vlog_warn("guest %u/%u refused: tenant %s has %llu %s, its limit", g->domid,
			  g->devid, g->tenant, (unsigned long long)use, vbe_tenant_keys[q]);
	else
		vlog_warn("guest %u/%u refused: tenant %s has %llu %s, %llu more would pass "
			  "its limit %llu", g->domid, g->devid, g->tenant, (unsigned long long)use,
			  vbe_tenant_keys[q], (unsigned long long)more, (unsigned long long)lim);
	return VRDMA_CS_NOMEM;
}

/* May g's tenant take one more device, listener or conn (q)?
 * VRDMA_CS_OK or VRDMA_CS_NOMEM. */
int vbe_tenant_check(struct vbe_guest *g, unsigned q)
{
	uint64_t use[VBE_TQ_N];
	const uint64_t *lim;

	if (!g->ten)
		return VRDMA_CS_OK;
	lim = vbe_tenant_lim(g->node, g->ten);
	vbe_tenant_usage(g->node, g->tenant, use);
	return use[q] < lim[q] ? VRDMA_CS_OK : vbe_tenant_refuse(g, q, use[q], 1, lim[q]);
}

/* A counted object q (QPS, MEM, CQS, MRS, PAGES, MAPS, DEVQPS) summed over the
 * tenant's guests: their own counters, a walk of at most its `guests`. */
static uint64_t vbe_tenant_sum(const struct vbe_tenant *t, unsigned q)
{
	const struct vbe_guest *x;
	uint64_t sum = q == VBE_TQ_PAGES ? t->late_pages : q == VBE_TQ_MAPS ? t->late_maps : 0;

	for (x = t->guests; x; x = x->tnext) {
		switch (q) {
		case VBE_TQ_QPS: sum += x->nqps; break;
		case VBE_TQ_MEM: sum += x->mr_bytes; break;
		case VBE_TQ_CQS: sum += x->ncqs; break;
		case VBE_TQ_MRS: sum += x->nmrs; break;
		case VBE_TQ_PAGES: sum += x->pages; break;
		case VBE_TQ_MAPS: sum += x->maps; break;
		case VBE_TQ_DEVQPS: sum += x->dev_qps; break;
		default: abort();	/* not a counted object */
		}
	}
	return sum;
}

/*
 * Pages (and their mappings) a dropped buffer keeps mapped until the
 * device lets go of them (verbs_reap.c): still the tenant's, or detaching
 * while a teardown is slow would map past `pages` and `maps`.  The tenant
 * outlives its last guest until they are unmapped.
 */
void vbe_tenant_late(struct vbe_node *n, struct vbe_tenant *t, uint32_t npages, uint32_t maps,
		     bool add)
{
	struct vbe_tenant **pt;

	if (add) {
		t->late_pages += npages;
		t->late_maps += maps;
		return;
	}
	t->late_pages -= npages;
	t->late_maps -= maps;
	if (t->guests || t->late_pages || t->late_maps || !n)
		return;
	for (pt = &n->tenants; *pt && *pt != t; pt = &(*pt)->next)
		;
	if (*pt)
		*pt = t->next;
	free(t);
}

/* `more` of q for g's tenant, after g's own quota (QPs and bytes:
 * vbe_quota_qp/_mr; CQs, MRs, pages: cmd.c)?  VRDMA_CS_OK or _NOMEM. */
int vbe_tenant_quota(struct vbe_guest *g, unsigned q, uint64_t more)
{
	uint64_t sum, max;

	if (!g->ten)
		return VRDMA_CS_OK;
	sum = vbe_tenant_sum(g->ten, q);
	max = vbe_tenant_lim(g->node, g->ten)[q];
	if (sum <= max && more <= max - sum)
		return VRDMA_CS_OK;
	return vbe_tenant_refuse(g, q, sum, more, max);
}

/* The commands per second g's tenant may send, 0 = no limit
 * (vbe_sched_cmd_take: one bucket for all its guests). */
uint32_t vbe_tenant_cmds(struct vbe_guest *g)
{
	return g->ten ? (uint32_t)vbe_tenant_lim(g->node, g->ten)[VBE_TQ_CMDS] : 0;
}

/*
 * A domain's devices are made by the toolstack (`vrdmactl attach`): bound
 * them there too, not only when they connect: the tenant's devices (any
 * state) against its `guests`.  The domain's tenant is that of its
 * devices the backend knows (a toolstack's `tenant` key), or the domain.
 * Re-attaching a device it has is not one more.
 */
int vbe_node_attach_ok(struct vbe_node *n, uint32_t domid, uint32_t devid, struct vout *o)
{
	char tenant[VPLAT_TENANT_NAME];
	uint64_t lim[VBE_TQ_N];
	struct vbe_guest *g;
	unsigned have = 0;

	snprintf(tenant, sizeof(tenant), "dom%u", domid);
	for (g = n->guests; g; g = g->next) {
		if (g->domid != domid)
			continue;
		if (g->devid == devid)
			return 0;
		memcpy(tenant, g->tenant, sizeof(tenant));
	}
	for (g = n->guests; g; g = g->next)
		have += !g->dead && !strcmp(g->tenant, tenant);
	vbe_tenant_limits(n, tenant, lim, NULL);
	if (have < lim[VBE_TQ_GUESTS])
		return 0;
	vlog_warn("backend: attach %u/%u refused: tenant %s has %u devices, its limit",
		  domid, devid, tenant, have);
	return vout_err(o, -EUSERS, "attach %u/%u: tenant %s has %u devices, its limit "
			"(vrdmactl set tenant:%s guests=N)", domid, devid, tenant, have, tenant);
}

/* ---- vrdmactl set/get tenant:<name> ---- */

/* Text: tenant=NAME key=used/limit[(default)]...; the defaults' line has
 * limits only.  JSON: "tenant":NAME,"guests":{"used","limit","default"}...
 * in the open object. */
static void vbe_tenant_print(struct vbe_node *n, const char *tenant, struct vout *o)
{
	uint64_t lim[VBE_TQ_N], use[VBE_TQ_N];
	bool own[VBE_TQ_N], dflt = !strcmp(tenant, "default");
	unsigned q;

	vbe_tenant_limits(n, tenant, lim, own);
	if (!dflt)
		vbe_tenant_usage(n, tenant, use);
	vout_str(o, "tenant", tenant, "tenant=%s", tenant);
	for (q = 0; q < VBE_TQ_N; q++) {
		vout_obj(o, vbe_tenant_keys[q]);
		vout_text(o, " %s=", vbe_tenant_keys[q]);
		if (!dflt && q != VBE_TQ_CMDS)	/* cmds is a rate: no usage */
			vout_u64(o, "used", use[q], "%llu/", (unsigned long long)use[q]);
		vout_u64(o, "limit", lim[q], "%llu", (unsigned long long)lim[q]);
		if (!dflt)
			vout_bool(o, "default", !own[q], "%s", own[q] ? "" : "(default)");
		vout_end(o);
	}
	vout_text(o, "\n");
}

static void vbe_tenant_item(struct vbe_node *n, const char *tenant, struct vout *o)
{
	vout_obj(o, NULL);
	vbe_tenant_print(n, tenant, o);
	vout_end(o);
}

/* The defaults, then every tenant with a live guest. */
static void vbe_tenant_list(struct vbe_node *n, struct vout *o)
{
	struct vbe_guest *g, *h;

	vout_arr(o, "tenants");
	vbe_tenant_item(n, "default", o);
	for (g = n->guests; g; g = g->next) {
		for (h = n->guests; h != g; h = h->next)
			if (!strcmp(h->tenant, g->tenant))
				break;
		if (h == g)
			vbe_tenant_item(n, g->tenant, o);
	}
	vout_end(o);
}

static int vbe_tenant_bad_name(const char *tenant, struct vout *o)
{
	return vout_err(o, -EINVAL, "bad tenant name '%.64s' (letters, digits, _-.@; "
			"up to %u)", tenant, VPLAT_TENANT_NAME - 1);
}

int vbe_tenant_get(struct vbe_node *n, const char *tenant, struct vout *o)
{
	if (!tenant) {		/* `get tenants` */
		vbe_tenant_list(n, o);
		return 0;
	}
	if (!vbe_tenant_name_ok(tenant))
		return vbe_tenant_bad_name(tenant, o);
	vbe_tenant_print(n, tenant, o);
	return 0;
}

static int vbe_tenant_word(const char *kv, unsigned *q, const char **val)
{
	const char *eq = strchr(kv, '=');
	size_t klen = eq ? (size_t)(eq - kv) : 0;

	for (*q = 0; eq && *q < VBE_TQ_N; (*q)++)
		if (strlen(vbe_tenant_keys[*q]) == klen &&
		    !strncmp(kv, vbe_tenant_keys[*q], klen)) {
			*val = eq + 1;
			return 0;
		}
	return -ENOENT;
}

/* set tenant:<name>|tenant:default guests=N listeners=N conns=N qps=N mem=B cqs=N mrs=N
 * pages=N cmds=N maps=N devqps=N; the value `default` drops the key (a tenant's: then
 * tenant:default's applies; tenant:default's: then the node's, from
 * vrdmad.conf [limits] or built in).  All or nothing. */
int vbe_tenant_set(struct vbe_node *n, const char *tenant, int nkv, char **kv,
		   struct vout *o)
{
	char path[VPLAT_KEY_MAX], val[32];
	const char *v;
	uint64_t x;
	unsigned q;
	int i, err;

	if (!vbe_tenant_name_ok(tenant))
		return vbe_tenant_bad_name(tenant, o);
	if (nkv < 1)
		return vout_err(o, -EINVAL, "set tenant:%s: nothing to set (guests=N "
				"listeners=N conns=N qps=N mem=BYTES cqs=N mrs=N pages=N cmds=N maps=N "
				"devqps=N)",
				tenant);
	for (i = 0; i < nkv; i++) {
		if (vbe_tenant_word(kv[i], &q, &v))
			return vout_err(o, -ENOENT, "set: unknown tenant key in '%.64s' (allowed: "
					"guests listeners conns qps mem cqs mrs pages cmds maps devqps)",
					kv[i]);
		if (!strcmp(v, "default"))
			continue;
		if (vbe_tenant_parse(q, v, &x))
			return vout_err(o, -EINVAL, "set: bad %s '%.64s' (allowed: 0..%llu "
					"or default)", vbe_tenant_keys[q], v,
					(unsigned long long)vbe_tenant_top[q]);
	}
	for (i = 0; i < nkv; i++) {
		vbe_tenant_word(kv[i], &q, &v);
		snprintf(path, sizeof(path), VPLAT_TENANT_ROOT "/%s/%s", tenant,
			 vbe_tenant_keys[q]);
		if (!strcmp(v, "default")) {
			err = vplat_key_rm(n->plat, path);
			if (err == -ENOENT)
				err = 0;
		} else {
			vbe_tenant_parse(q, v, &x);
			snprintf(val, sizeof(val), "%llu", (unsigned long long)x);
			err = vplat_key_write(n->plat, path, val);
		}
		if (err)
			return vout_err(o, err, "set: writing %s: %s", path, strerror(-err));
	}
	vbe_tenant_changed(n->plat, NULL, n);	/* now, not when the watch fires */
	/* Issue 13: on disk before the answer (the key store may not
	 * outlive vrdmad: the plain host's does not). */
	err = vbe_store_save(n);
	if (err)
		return vout_err(o, err, "set: tenant:%s changed, but not stored in %s: %s "
				"(lost at a restart)", tenant, n->state_dir, strerror(-err));
	vbe_tenant_print(n, tenant, o);
	return 0;
}
