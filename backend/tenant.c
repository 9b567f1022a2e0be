// SPDX-License-Identifier: MIT
/*
 * Quotas per tenant (issue 12, docs/tenants.md): the per-guest quotas
 * stop one guest, not one owner of many guests.  A tenant is named by
 * the platform (`tenant` in the backend dir: "uid<N>" on the plain host)
 * or is the domain ("dom<N>", Xen).  Its connected devices, listeners and
 * pending CONNECTs are summed over its guests and checked where each is
 * asked for.  Limits are keys (VPLAT_TENANT_ROOT/<tenant>/<key>, then
 * .../default/<key>, then the built-in defaults), read at each check:
 * these are rare control requests, and an operator's key write applies
 * at once, on Xen too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "vbe.h"

const char *const vbe_tenant_keys[] = { "guests", "listeners", "conns", NULL };

static const uint32_t vbe_tenant_max[VBE_TQ_N] = {
	[VBE_TQ_GUESTS] = 256, [VBE_TQ_LISTENERS] = VBE_MAX_LISTENERS,
	[VBE_TQ_CONNS] = VBE_MAX_CONNS,
};

void vbe_tenant_defaults(uint32_t lim[VBE_TQ_N])
{
	lim[VBE_TQ_GUESTS] = VPLAT_TENANT_GUESTS;
	lim[VBE_TQ_LISTENERS] = VBE_TENANT_LISTENERS;
	lim[VBE_TQ_CONNS] = VBE_TENANT_CONNS;
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

void vbe_tenant_init(struct vbe_guest *g)
{
	char path[VPLAT_KEY_MAX], val[VPLAT_TENANT_NAME + 1];

	snprintf(path, sizeof(path), "%s/tenant", g->bdir);
	if (vplat_key_read(g->node->plat, path, val, sizeof(val)) >= 0 &&
	    vbe_tenant_name_ok(val) && strcmp(val, "default")) {
		memcpy(g->tenant, val, strlen(val) + 1);
		return;
	}
	snprintf(g->tenant, sizeof(g->tenant), "dom%u", g->domid);
}

int vbe_tenant_parse(unsigned q, const char *val, uint32_t *out)
{
	unsigned long v;
	char *e;

	if (val[0] < '0' || val[0] > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(val, &e, 10);
	if (errno || *e || v > vbe_tenant_max[q])
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* The key of limit q in dir (a tenant or "default") into *out, if set. */
static bool vbe_tenant_key(struct vbe_node *n, const char *dir, unsigned q, uint32_t *out)
{
	char path[VPLAT_KEY_MAX], val[16];

	snprintf(path, sizeof(path), VPLAT_TENANT_ROOT "/%s/%s", dir, vbe_tenant_keys[q]);
	if (vplat_key_read(n->plat, path, val, sizeof(val)) < 0)
		return false;
	if (vbe_tenant_parse(q, val, out)) {
		vlog_warn("backend: %s is '%s': not 0..%u, ignored", path, val,
			  vbe_tenant_max[q]);
		return false;
	}
	return true;
}

/* A tenant's limits; own[q] says whether q is the tenant's own key. */
void vbe_tenant_limits(struct vbe_node *n, const char *tenant, uint32_t lim[VBE_TQ_N],
		       bool own[VBE_TQ_N])
{
	unsigned q;

	vbe_tenant_defaults(lim);
	for (q = 0; q < VBE_TQ_N; q++) {
		bool mine = vbe_tenant_key(n, tenant, q, &lim[q]);

		if (!mine)
			vbe_tenant_key(n, "default", q, &lim[q]);
		if (own)
			own[q] = mine;
	}
}

/* Table scans: the tables are 256 entries, these are control requests. */
void vbe_tenant_usage(struct vbe_node *n, const char *tenant, uint32_t use[VBE_TQ_N])
{
	struct vbe_guest *g;
	unsigned i;

	memset(use, 0, sizeof(use[0]) * VBE_TQ_N);
	for (g = n->guests; g; g = g->next)
		use[VBE_TQ_GUESTS] += g->connected && !g->dead && !strcmp(g->tenant, tenant);
	for (i = 0; i < VBE_MAX_LISTENERS; i++)
		use[VBE_TQ_LISTENERS] += n->lis[i].s.used && !strcmp(n->lis[i].tenant, tenant);
	for (i = 0; i < VBE_MAX_CONNS; i++)
		use[VBE_TQ_CONNS] += n->conns[i].id && !strcmp(n->conns[i].tenant, tenant);
}

/*
 * May g's tenant take one more q?  VRDMA_CS_OK or VRDMA_CS_NOMEM (counted
 * as a refusal; logged once per guest and quota, naming the tenant: a
 * guest retrying must not flood the log).
 */
int vbe_tenant_check(struct vbe_guest *g, unsigned q)
{
	uint32_t lim[VBE_TQ_N], use[VBE_TQ_N];

	vbe_tenant_usage(g->node, g->tenant, use);
	vbe_tenant_defaults(lim);
	/* Only q's keys: on Xen each read is a xenstore round trip. */
	if (!vbe_tenant_key(g->node, g->tenant, q, &lim[q]))
		vbe_tenant_key(g->node, "default", q, &lim[q]);
	if (use[q] < lim[q])
		return VRDMA_CS_OK;
	g->ctr.refusals++;
	if (!(g->tenant_warned & 1u << q)) {
		g->tenant_warned |= (uint8_t)(1u << q);
		vlog_warn("guest %u/%u refused: tenant %s has %u %s, its limit", g->domid,
			  g->devid, g->tenant, use[q], vbe_tenant_keys[q]);
	}
	return VRDMA_CS_NOMEM;
}

/*
 * A domain's devices are made by the toolstack (`vrdmactl attach`): bound
 * them there too, not only when they connect: the tenant's devices (any
 * state) against its `guests`.  The domain's tenant is that of its
 * devices the backend knows (a toolstack's `tenant` key), or the domain.
 * Re-attaching a device it has is not one more.
 */
int vbe_node_attach_ok(struct vbe_node *n, uint32_t domid, uint32_t devid, FILE *out)
{
	char tenant[VPLAT_TENANT_NAME];
	uint32_t lim[VBE_TQ_N];
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
	fprintf(out, "error: attach %u/%u: tenant %s has %u devices, its limit "
		"(vrdmactl set tenant:%s guests=N)\n", domid, devid, tenant, have, tenant);
	return -EUSERS;
}

/* ---- vrdmactl set/get tenant:<name> ---- */

static void vbe_tenant_print(struct vbe_node *n, const char *tenant, FILE *out)
{
	uint32_t lim[VBE_TQ_N], use[VBE_TQ_N];
	bool own[VBE_TQ_N];
	unsigned q;

	vbe_tenant_limits(n, tenant, lim, own);
	if (strcmp(tenant, "default"))
		vbe_tenant_usage(n, tenant, use);
	fprintf(out, "tenant=%s", tenant);
	for (q = 0; q < VBE_TQ_N; q++) {
		if (strcmp(tenant, "default"))
			fprintf(out, " %s=%u/%u%s", vbe_tenant_keys[q], use[q], lim[q],
				own[q] ? "" : "(default)");
		else
			fprintf(out, " %s=%u", vbe_tenant_keys[q], lim[q]);
	}
	fputc('\n', out);
}

/* The defaults, then every tenant with a live guest. */
static void vbe_tenant_list(struct vbe_node *n, FILE *out)
{
	struct vbe_guest *g, *h;

	vbe_tenant_print(n, "default", out);
	for (g = n->guests; g; g = g->next) {
		for (h = n->guests; h != g; h = h->next)
			if (!strcmp(h->tenant, g->tenant))
				break;
		if (h == g)
			vbe_tenant_print(n, g->tenant, out);
	}
}

int vbe_tenant_get(struct vbe_node *n, const char *tenant, FILE *out)
{
	if (!tenant) {		/* `get tenants` */
		vbe_tenant_list(n, out);
		return 0;
	}
	if (!vbe_tenant_name_ok(tenant)) {
		fprintf(out, "error: bad tenant name '%.64s' (letters, digits, _-.@; "
			"up to %u)\n", tenant, VPLAT_TENANT_NAME - 1);
		return -EINVAL;
	}
	vbe_tenant_print(n, tenant, out);
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

/* set tenant:<name>|tenant:default guests=N listeners=N conns=N; a
 * tenant's value `default` drops its own key.  All or nothing. */
int vbe_tenant_set(struct vbe_node *n, const char *tenant, int nkv, char **kv, FILE *out)
{
	char path[VPLAT_KEY_MAX], val[16];
	const char *v;
	uint32_t x;
	unsigned q;
	int i, err;

	if (!vbe_tenant_name_ok(tenant)) {
		fprintf(out, "error: bad tenant name '%.64s' (letters, digits, _-.@; "
			"up to %u)\n", tenant, VPLAT_TENANT_NAME - 1);
		return -EINVAL;
	}
	if (nkv < 1) {
		fprintf(out, "error: set tenant:%s: nothing to set (guests=N "
			"listeners=N conns=N)\n", tenant);
		return -EINVAL;
	}
	for (i = 0; i < nkv; i++) {
		if (vbe_tenant_word(kv[i], &q, &v)) {
			fprintf(out, "error: set: unknown tenant key in '%.64s' (allowed: "
				"guests listeners conns)\n", kv[i]);
			return -ENOENT;
		}
		if (!strcmp(v, "default") && strcmp(tenant, "default"))
			continue;
		if (vbe_tenant_parse(q, v, &x)) {
			fprintf(out, "error: set: bad %s '%.64s' (allowed: 0..%u%s)\n",
				vbe_tenant_keys[q], v, vbe_tenant_max[q],
				strcmp(tenant, "default") ? " or default" : "");
			return -EINVAL;
		}
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
			snprintf(val, sizeof(val), "%u", x);
			err = vplat_key_write(n->plat, path, val);
		}
		if (err) {
			fprintf(out, "error: set: writing %s: %s\n", path, strerror(-err));
			return err;
		}
	}
	vbe_tenant_print(n, tenant, out);
	return 0;
}
