// SPDX-License-Identifier: MIT
/*
 * The node: every guest this dom0 serves.  Guests come and go with their
 * backend directories under VRDMA_XS_BACK_ROOT (written by the
 * toolstack); vrdmad drives us through poll/arm/tick.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "vring.h"
#include "vbe.h"
#include "trace/lat.h"

struct vbe_guest *vbe_node_guest(struct vbe_node *n, uint32_t domid, uint32_t devid)
{
	struct vbe_guest *g;

	for (g = n->guests; g; g = g->next)
		if (g->domid == domid && g->devid == devid)
			return g;
	return NULL;
}

#define VBE_QPN_SPACE	(1u << 24)

/* 24-bit QP numbers, never 0, unique among live QPs of the node: a
 * node-wide bitmap (2 MiB), handed out round-robin.  0 = none left. */
uint32_t vbe_node_qpn(struct vbe_node *n)
{
	uint32_t i, q;

	for (i = 0; i < VBE_QPN_SPACE; i++) {
		q = n->next_qpn++ & (VBE_QPN_SPACE - 1);
		if (!q || (n->qpn_map[q / 8] & (1u << (q % 8))))
			continue;
		n->qpn_map[q / 8] |= (uint8_t)(1u << (q % 8));
		return q;
	}
	return 0;
}

void vbe_node_qpn_free(struct vbe_node *n, uint32_t qpn)
{
	if (qpn && qpn < VBE_QPN_SPACE)
		n->qpn_map[qpn / 8] &= (uint8_t)~(1u << (qpn % 8));
}

static bool vbe_parse_id(const char *s, uint32_t *v)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(s, &end, 10);
	if (errno || end == s || *end || x > UINT32_MAX)
		return false;
	*v = (uint32_t)x;
	return true;
}

/* Create guests whose backend dir appeared; mark the ones still there.
 * -ENOENT: no directory (its guests are gone); other errors: unknown. */
static int vbe_node_scan_dom(struct vbe_node *n, uint32_t domid)
{
	char path[VPLAT_KEY_MAX], list[4096];
	struct vbe_guest *g;
	unsigned count;
	const char *d;
	uint32_t devid;
	int err;

	snprintf(path, sizeof(path), VRDMA_XS_BACK_ROOT "/%u", domid);
	err = vplat_key_list(n->plat, path, list, sizeof(list), &count);
	if (err)
		return err;
	for (d = list; *d; d += strlen(d) + 1) {
		if (!vbe_parse_id(d, &devid))
			continue;
		g = vbe_node_guest(n, domid, devid);
		if (!g) {
			err = vbe_xb_guest_new(n, domid, devid, &g);
			if (!err) {
				err = vbe_tenant_init(g);	/* issue 12 */
				if (err)
					vbe_xb_guest_free(g);
			}
			if (err) {
				vlog_dbg("backend: guest %u device %u not ready: %d",
					 domid, devid, err);
				continue;
			}
			g->next = n->guests;
			n->guests = g;
			vbe_prio_init(g);	/* issue 5: defaults + keys */
			vlog_info("guest %u device %u appeared", domid, devid);
		}
		g->seen = true;
	}
	return 0;
}

/* The domid a changed path is below, if it names one (review I6). */
static bool vbe_node_path_dom(const char *path, uint32_t *domid)
{
	const size_t rl = sizeof(VRDMA_XS_BACK_ROOT) - 1;
	char id[16];
	size_t len;

	if (strncmp(path, VRDMA_XS_BACK_ROOT "/", rl + 1))
		return false;
	path += rl + 1;
	len = strcspn(path, "/");
	if (!len || len >= sizeof(id))
		return false;
	memcpy(id, path, len);
	id[len] = '\0';
	return vbe_parse_id(id, domid);
}

/* A failed listing says nothing about who left: keep domid's guests (all
 * for UINT32_MAX) rather than free them (review I6). */
static void vbe_node_keep(struct vbe_node *n, const char *path, uint32_t domid, int err)
{
	struct vbe_guest *g;

	vlog_warn("backend: rescan after %s: %s", path, strerror(-err));
	for (g = n->guests; g; g = g->next)
		if (domid == UINT32_MAX || g->domid == domid)
			g->seen = true;
}

/*
 * A key below a device dir we serve already (DOMID/DEVID/KEY...): our
 * own protocol writes (state, features), the toolstack's, or an
 * operator's setting.  Only a setting matters here, and only to its
 * guest: a rescan per key cost a listing and eight reads, and a
 * handshake's dozen writes made that a hundred xenstore round trips,
 * seconds of a busy dom0 with every guest and vrdmactl waiting.  NULL:
 * not such a key (a dir came or went, or a guest not known yet).
 */
static struct vbe_guest *vbe_node_key_of(struct vbe_node *n, const char *path,
					 const char **key)
{
	const size_t rl = sizeof(VRDMA_XS_BACK_ROOT) - 1;
	char id[2][16];
	uint32_t v[2];
	size_t len;
	int i;

	if (strncmp(path, VRDMA_XS_BACK_ROOT "/", rl + 1))
		return NULL;
	path += rl + 1;
	for (i = 0; i < 2; i++) {
		len = strcspn(path, "/");
		if (!len || len >= sizeof(id[i]) || path[len] != '/')
			return NULL;
		memcpy(id[i], path, len);
		id[i][len] = '\0';
		if (!vbe_parse_id(id[i], &v[i]))
			return NULL;
		path += len + 1;
	}
	if (!*path)
		return NULL;
	*key = path;
	return vbe_node_guest(n, v[0], v[1]);
}

static void vbe_node_watch(struct vplat *p, const char *path, void *arg)
{
	struct vbe_node *n = arg;
	struct vbe_guest **pg, *g;
	char list[4096];
	unsigned count;
	const char *d, *key;
	uint32_t domid;
	bool one;
	int err, i;

	(void)p;
	g = vbe_node_key_of(n, path, &key);
	if (g) {
		for (i = 0; vbe_prio_keys[i]; i++)
			if (!strcmp(key, vbe_prio_keys[i]))
				vbe_prio_load(g);	/* live, as below */
		return;
	}
	vlog_dbg("backend: rescan after change at %s", path);
	/* A change below one domain's dir (our own state writes, mostly)
	 * rescans that domain only; anything else rescans them all. */
	one = vbe_node_path_dom(path, &domid);
	for (g = n->guests; g; g = g->next)
		g->seen = one && g->domid != domid;
	if (one) {
		err = vbe_node_scan_dom(n, domid);
		if (err && err != -ENOENT)
			vbe_node_keep(n, path, domid, err);
	} else {
		err = vplat_key_list(n->plat, VRDMA_XS_BACK_ROOT, list, sizeof(list), &count);
		if (err && err != -ENOENT) {
			vbe_node_keep(n, path, UINT32_MAX, err);
			return;
		}
		for (d = list; !err && *d; d += strlen(d) + 1) {
			if (!vbe_parse_id(d, &domid))
				continue;
			err = vbe_node_scan_dom(n, domid);
			if (err && err != -ENOENT)
				vbe_node_keep(n, path, domid, err);
			err = 0;
		}
	}
	for (pg = &n->guests; (g = *pg);) {
		if (g->seen) {
			pg = &g->next;
			continue;
		}
		*pg = g->next;
		vlog_info("guest %u device %u gone", g->domid, g->devid);
		vbe_prio_keep(g);
		vbe_xb_guest_free(g);
	}
	/* Operator settings may have changed (issue 5): apply them live. */
	for (g = n->guests; g; g = g->next)
		if (!one || g->domid == domid)
			vbe_prio_load(g);
	/* Peers of a departed guest got QP errors: publish them. */
	for (g = n->guests; g; g = g->next)
		vbe_ring_flush(g);
}

int vbe_node_new(const struct vbe_node_cfg *cfg, struct vbe_node **out)
{
	struct vbe_node *n;
	unsigned q;
	int err;

	if (!cfg->plat || !cfg->node_name ||
	    strnlen(cfg->node_name, VRDMA_NAME_MAX) >= VRDMA_NAME_MAX)
		return -EINVAL;
	for (q = 0; cfg->tenant_defaults && q < VBE_TQ_N; q++)
		if (cfg->tenant_defaults[q] > vbe_tenant_max(q))
			return -EINVAL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->plat = cfg->plat;
	strcpy(n->name, cfg->node_name);
	n->fd_cb = cfg->fd_cb;
	n->fd_arg = cfg->fd_arg;
	n->next_qpn = 1;
	n->poll_bytes = VBE_POLL_BYTES;
	n->dev_max = VBE_DEV_BYTES;
	n->poll_wrs = VBE_POLL_WRS;
	n->poll_reqs = VBE_POLL_REQS;
	n->max_sge = VRDMA_MAX_SGE;
	n->max_ud_msg = VRDMA_UD_MTU;
	if (cfg->tenant_defaults)
		memcpy(n->tenant_def, cfg->tenant_defaults, sizeof(n->tenant_def));
	else
		vbe_tenant_defaults(n->tenant_def);
	vbe_maps_init(n, cfg->tenant_defaults_set & 1u << VBE_TQ_MAPS,
		      cfg->tenant_defaults_set & 1u << VBE_TQ_PAGES);
	/* Now, not at the first join: the operator's switch holds from the
	 * start, and `vrdmactl teams` shows it before any team. */
	n->coll = calloc(1, sizeof(*n->coll));
	n->qpn_map = calloc(VBE_QPN_SPACE / 8, 1);
	if (!n->coll || !n->qpn_map) {
		err = -ENOMEM;
		goto err_map;
	}
	n->coll->off = cfg->coll_off;
	err = vbe_policy_new(n, cfg->policy_path);
	if (err)
		goto err_map;
	/* Before any guest: the first one of a VM finds its settings. */
	err = vbe_store_open(n, cfg->state_dir);
	if (err)
		goto err_policy;
	/* No device is no error: remote connects are refused UNREACH. */
	err = vbe_vx_open(n, cfg);
	if (err)
		vlog_warn("rdma: no device for remote nodes: %s", strerror(-err));
	vbe_node_gid_init(n);
	err = vbe_tenant_watch(n);
	if (err)
		goto err_vx;
	err = vplat_watch(n->plat, VRDMA_XS_BACK_ROOT, vbe_node_watch, n);
	if (err)
		goto err_tenant;
	*out = n;
	return 0;

err_tenant:
	vbe_tenant_unwatch(n);
err_vx:
	vbe_vx_close(n);
err_policy:
	vbe_policy_free(n);
err_map:
	free(n->qpn_map);
	free(n->coll);
	free(n);
	return err;
}

void vbe_node_free(struct vbe_node *n)
{
	struct vbe_guest *g;

	if (!n)
		return;
	if (n->store_dirty)	/* what the last ticks did not write */
		vbe_store_save(n);
	vplat_unwatch(n->plat, VRDMA_XS_BACK_ROOT, n);
	vbe_tenant_unwatch(n);
	while ((g = n->guests)) {
		n->guests = g->next;
		vbe_xb_guest_free(g);
	}
	vbe_coll_node_fini(n);
	vbe_vx_close(n);
	vbe_qpn_fini(n);
	vbe_policy_free(n);
	vbe_lt_fini();		/* one node per vrdmad: its trace */
	free(n->qpn_map);
	free(n);
}

void vbe_node_fd_ready(struct vbe_node *n, int fd)
{
	struct vbe_guest *g;

	for (g = n->guests; g; g = g->next)
		if (g->chan && g->chan_fd == fd)
			vplat_chan_ack(g->chan);
	vbe_vx_fd_ready(n, fd);
}

/* Disabled guests drop their resources here, where nothing points in. */
static void vbe_node_reap(struct vbe_node *n)
{
	struct vbe_guest *g;

	while (n->reap) {
		n->reap = false;
		for (g = n->guests; g; g = g->next)
			if (g->dead && !g->released)
				vbe_xb_release(g);
	}
}

void vbe_node_flush(struct vbe_node *n)
{
	struct vbe_guest *g;

	/* One byte per guest: did a guest process die under its rings? */
	for (g = n->guests; g; g = g->next)
		vbe_xb_check_live(g);
	vbe_node_reap(n);
	for (g = n->guests; g; g = g->next)
		vbe_ring_flush(g);
	/* A flush can find a violation (garbage cons): reap again. */
	vbe_node_reap(n);
}

int vbe_node_poll(struct vbe_node *n)
{
	struct vbe_guest *g;
	int total;

	/* Each guest gets its own budget (review C3) from the scheduler
	 * (issue 5, sched_round.c): leftover work from the last round first,
	 * then its ring; ready work left keeps us polling, throttled work
	 * waits for the tick. */
	total = vbe_sched_round(n);
	total += vbe_vx_poll(n);	/* device completions (issue 4) */
	total += vbe_coll_run(n);	/* teams dom0 runs */
	vbe_cmd_release(n);		/* DEREG_MRs whose device MR is gone */
	vbe_node_flush(n);
	for (g = n->guests; g; g = g->next)
		if (g->connected && !g->dead && vbe_sched_spin(g))
			total += (int)g->runq.count;
	return total;
}

int vbe_node_arm(struct vbe_node *n)
{
	struct vbe_guest *g;
	int more = 0;

	for (g = n->guests; g; g = g->next)
		if (g->connected && !g->dead &&
		    ((!g->sch.cmd_throttled && vring_arm(&g->sring->req, g->req_cons)) ||
		     vbe_sched_spin(g)))
			more = 1;	/* a command waiting for a token waits for the tick */
	if (vbe_vx_arm(n) || vbe_coll_busy(n))
		more = 1;
	return more;
}

void vbe_node_disarm(struct vbe_node *n)
{
	struct vbe_guest *g;

	for (g = n->guests; g; g = g->next)
		if (g->connected && !g->dead)
			vring_disarm(&g->sring->req, g->req_cons);
}

void vbe_node_tick(struct vbe_node *n, int64_t now_ms)
{
	struct vbe_guest *g;

	n->now_ms = now_ms;
	/* Removing a dir only queues a watch event: the list stays valid. */
	for (g = n->guests; g; g = g->next)
		vbe_xb_tick(g);
	vbe_cm_tick(n, now_ms);
	vbe_qpn_tick(n, now_ms);
	vbe_sched_tick(n, now_ms);
	vbe_vx_tick(n, now_ms);
	if (n->coll)
		vbe_chain_tick(n, now_ms);
	vbe_store_tick(n);
	vbe_node_flush(n);
}
