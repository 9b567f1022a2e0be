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

struct vbe_guest *vbe_node_guest(struct vbe_node *n, uint32_t domid, uint32_t devid)
{
	struct vbe_guest *g;

	for (g = n->guests; g; g = g->next)
		if (g->domid == domid && g->devid == devid)
			return g;
	return NULL;
}

static bool vbe_qpn_used(struct vbe_node *n, uint32_t qpn)
{
	struct vbe_guest *g;
	uint32_t i;

	for (g = n->guests; g; g = g->next)
		for (i = 0; g->qps && i < VBE_MAX_QPS; i++)
			if (g->qps[i].s.used && g->qps[i].qpn == qpn)
				return true;
	return false;
}

/* 24-bit QP numbers, never 0, unique among live QPs of the node. */
uint32_t vbe_node_qpn(struct vbe_node *n)
{
	uint32_t q;

	for (;;) {
		q = n->next_qpn++ & 0xffffff;
		if (q && !vbe_qpn_used(n, q))
			return q;
	}
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

/* Create guests whose backend dir appeared; mark the ones still there. */
static void vbe_node_scan_dom(struct vbe_node *n, uint32_t domid)
{
	char path[VPLAT_KEY_MAX], list[4096];
	struct vbe_guest *g;
	unsigned count;
	const char *d;
	uint32_t devid;

	snprintf(path, sizeof(path), VRDMA_XS_BACK_ROOT "/%u", domid);
	if (vplat_key_list(n->plat, path, list, sizeof(list), &count))
		return;
	for (d = list; *d; d += strlen(d) + 1) {
		if (!vbe_parse_id(d, &devid))
			continue;
		g = vbe_node_guest(n, domid, devid);
		if (!g) {
			int err = vbe_xb_guest_new(n, domid, devid, &g);

			if (err) {
				vlog_dbg("backend: guest %u device %u not ready: %d",
					 domid, devid, err);
				continue;
			}
			g->next = n->guests;
			n->guests = g;
			vlog_info("guest %u device %u appeared", domid, devid);
		}
		g->seen = true;
	}
}

static void vbe_node_watch(struct vplat *p, const char *path, void *arg)
{
	struct vbe_node *n = arg;
	struct vbe_guest **pg, *g;
	char list[4096];
	unsigned count;
	const char *d;
	uint32_t domid;

	(void)p;
	vlog_dbg("backend: rescan after change at %s", path);
	for (g = n->guests; g; g = g->next)
		g->seen = false;
	if (!vplat_key_list(n->plat, VRDMA_XS_BACK_ROOT, list, sizeof(list), &count))
		for (d = list; *d; d += strlen(d) + 1)
			if (vbe_parse_id(d, &domid))
				vbe_node_scan_dom(n, domid);
	for (pg = &n->guests; (g = *pg);) {
		if (g->seen) {
			pg = &g->next;
			continue;
		}
		*pg = g->next;
		vlog_info("guest %u device %u gone", g->domid, g->devid);
		vbe_xb_guest_free(g);
	}
	/* Peers of a departed guest got QP errors: publish them. */
	for (g = n->guests; g; g = g->next)
		vbe_ring_flush(g);
}

int vbe_node_new(const struct vbe_node_cfg *cfg, struct vbe_node **out)
{
	struct vbe_node *n;
	int err;

	if (!cfg->plat || !cfg->node_name ||
	    strnlen(cfg->node_name, VRDMA_NAME_MAX) >= VRDMA_NAME_MAX)
		return -EINVAL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->plat = cfg->plat;
	strcpy(n->name, cfg->node_name);
	n->fd_cb = cfg->fd_cb;
	n->fd_arg = cfg->fd_arg;
	n->next_qpn = 1;
	err = vplat_watch(n->plat, VRDMA_XS_BACK_ROOT, vbe_node_watch, n);
	if (err) {
		free(n);
		return err;
	}
	*out = n;
	return 0;
}

void vbe_node_free(struct vbe_node *n)
{
	struct vbe_guest *g;

	if (!n)
		return;
	vplat_unwatch(n->plat, VRDMA_XS_BACK_ROOT, n);
	while ((g = n->guests)) {
		n->guests = g->next;
		vbe_xb_guest_free(g);
	}
	free(n);
}

void vbe_node_fd_ready(struct vbe_node *n, int fd)
{
	struct vbe_guest *g;

	for (g = n->guests; g; g = g->next)
		if (g->chan && g->chan_fd == fd) {
			vplat_chan_ack(g->chan);
			g->busy = true;
		}
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

	vbe_node_reap(n);
	for (g = n->guests; g; g = g->next)
		vbe_ring_flush(g);
	/* A flush can find a violation (garbage cons): reap again. */
	vbe_node_reap(n);
}

int vbe_node_poll(struct vbe_node *n)
{
	struct vbe_guest *g;
	int total = 0;

	for (g = n->guests; g; g = g->next) {
		g->busy = false;
		total += vbe_ring_poll(g);
	}
	vbe_node_flush(n);
	return total;
}

int vbe_node_arm(struct vbe_node *n)
{
	struct vbe_guest *g;
	int more = 0;

	for (g = n->guests; g; g = g->next)
		if (g->connected && !g->dead && vring_arm(&g->sring->req, g->req_cons))
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
	n->now_ms = now_ms;
	vbe_cm_tick(n, now_ms);
	vbe_node_flush(n);
}
