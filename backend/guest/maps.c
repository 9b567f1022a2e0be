// SPDX-License-Identifier: MIT
/*
 * dom0's mappings of guest pages against the node's budget (vplat.h,
 * vplat_map_limits): kernel mappings, which vm.max_map_count bounds for
 * all of vrdmad, and on Xen the pages of dom0's maptrack table.  Both are
 * node tables like the listeners: without a share per tenant, one tenant
 * whose guests attach buffers of alternate pages (a mapping per page on
 * the plain host) holds all of them, and no other tenant's guest can even
 * map its device area.
 *
 * So device areas draw on a reserve (VBE_AREA_RESERVE_*, 256 devices'
 * worth) that buffers never touch while it is not used up, and buffers on
 * the rest, each tenant at most its `maps` and `pages` (a quarter of the
 * rest by default): at least four tenants fit, and a device the node
 * admitted maps its area whatever buffers hold.  A mapping's cost is
 * known once it is made (the plain host's runs), so a buffer is mapped,
 * weighed, and unmapped again if it does not fit: vrdmad's loop is one
 * thread, nothing else maps meanwhile, and the platform itself refuses
 * anything past the whole budget.
 */
#include <errno.h>

#include "log.h"
#include "../vbe.h"

static uint64_t vbe_left(uint64_t reserve, uint64_t used)
{
	return reserve > used ? reserve - used : 0;
}

/* Is there room for `more` beyond `use` of `lim`, `keep` left over? */
static bool vbe_room(uint64_t lim, uint64_t use, uint64_t more, uint64_t keep)
{
	return use <= lim && more <= lim - use && keep <= lim - use - more;
}

/* The platform's budget; a built-in tenant default is a quarter of what
 * buffers may take of it (a value of the operator's stays theirs). */
void vbe_maps_init(struct vbe_node *n, bool own_maps, bool own_pages)
{
	struct vplat_map_limits *l = &n->map_lim;
	uint64_t share;

	vplat_map_limits(n->plat, l);
	if (!own_maps && l->maps != UINT64_MAX) {
		share = vbe_left(l->maps, VBE_AREA_RESERVE_MAPS) / 4;
		n->tenant_def[VBE_TQ_MAPS] = share < vbe_tenant_max(VBE_TQ_MAPS) ?
					     share : vbe_tenant_max(VBE_TQ_MAPS);
	}
	if (!own_pages && l->pages != UINT64_MAX) {
		share = vbe_left(l->pages, VBE_AREA_RESERVE_PAGES) / 4;
		if (share < n->tenant_def[VBE_TQ_PAGES])
			n->tenant_def[VBE_TQ_PAGES] = share;
	}
	if (l->maps == UINT64_MAX && l->pages == UINT64_MAX)
		return;
	if (l->pages == UINT64_MAX)
		vlog_info("backend: guests' mappings: %llu maps (no table of pages); a "
			  "tenant's: maps %llu", (unsigned long long)l->maps,
			  (unsigned long long)n->tenant_def[VBE_TQ_MAPS]);
	else
		vlog_info("backend: guests' mappings: %llu maps, %llu pages; a tenant's: "
			  "maps %llu, pages %llu", (unsigned long long)l->maps,
			  (unsigned long long)l->pages,
			  (unsigned long long)n->tenant_def[VBE_TQ_MAPS],
			  (unsigned long long)n->tenant_def[VBE_TQ_PAGES]);
	if (!n->tenant_def[VBE_TQ_MAPS] || !n->tenant_def[VBE_TQ_PAGES])
		vlog_warn("backend: the node's mapping budget leaves tenants nothing past "
			  "what device areas keep: every buffer will be refused (raise "
			  "vm.max_map_count or VRDMA_XEN_MAP_PAGES)");
}

static void vbe_map_charge(struct vbe_node *n, const struct vplat_map *m, uint32_t npages)
{
	n->map_use += vplat_map_cost(m);
	n->page_use += npages;
}

/* A device area (or the page 0 a liveness watch maps): -E2BIG when it
 * takes more than VBE_AREA_MAPS mappings, -ENOMEM past the budget. */
int vbe_map_area(struct vbe_guest *g, const uint32_t *refs, uint32_t npages, int writable,
		 struct vplat_map **out)
{
	struct vbe_node *n = g->node;
	struct vplat_map *m;
	uint32_t cost;
	int err;

	if (!vbe_room(n->map_lim.pages, n->page_use, npages, 0))
		return -ENOMEM;
	err = vplat_map(n->plat, g->domid, refs, npages, writable, &m);
	if (err)
		return err;
	cost = vplat_map_cost(m);
	if (cost > VBE_AREA_MAPS || !vbe_room(n->map_lim.maps, n->map_use, cost, 0)) {
		vplat_unmap(m);
		return cost > VBE_AREA_MAPS ? -E2BIG : -ENOMEM;
	}
	vbe_map_charge(n, m, npages);
	n->area_maps += cost;
	n->area_pages += npages;
	g->area_pages = npages;
	*out = m;
	return 0;
}

void vbe_unmap_area(struct vbe_guest *g)
{
	struct vbe_node *n = g->node;

	n->area_maps -= vplat_map_cost(g->ring_map);
	n->area_pages -= g->area_pages;
	vbe_unmap_node(n, g->ring_map, g->area_pages);
	g->area_pages = 0;
}

static int vbe_node_full(struct vbe_guest *g, const char *what, uint64_t use, uint64_t lim,
			 uint64_t keep)
{
	static struct vlog_lim ll;

	g->node->map_refused++;
	g->ctr.refusals++;
	vlog_limited(&ll, VLOG_INFO, "guest %u/%u refused a buffer: the node's %s are taken "
		     "(%llu of %llu, %llu more kept for device areas)", g->domid, g->devid,
		     what, (unsigned long long)use, (unsigned long long)lim,
		     (unsigned long long)keep);
	return VRDMA_CS_NOMEM;
}

/* A buffer's pages, or its list pages while ATTACH_BUF reads them: within
 * the tenant's `maps` and what the reserve leaves.  VRDMA_CS_*. */
int vbe_map_buf(struct vbe_guest *g, const uint32_t *refs, uint32_t npages, int writable,
		struct vplat_map **out)
{
	struct vbe_node *n = g->node;
	uint64_t keep_pages = vbe_left(VBE_AREA_RESERVE_PAGES, n->area_pages);
	uint64_t keep_maps = vbe_left(VBE_AREA_RESERVE_MAPS, n->area_maps);
	struct vplat_map *m;
	uint32_t cost;
	int err;

	if (!vbe_room(n->map_lim.pages, n->page_use, npages, keep_pages))
		return vbe_node_full(g, "pages", n->page_use, n->map_lim.pages, keep_pages);
	err = vplat_map(n->plat, g->domid, refs, npages, writable, &m);
	if (err)
		return err == -ENOMEM ? VRDMA_CS_NOMEM : VRDMA_CS_FAULT;
	cost = vplat_map_cost(m);
	err = vbe_tenant_quota(g, VBE_TQ_MAPS, cost);
	if (!err && !vbe_room(n->map_lim.maps, n->map_use, cost, keep_maps))
		err = vbe_node_full(g, "mappings", n->map_use, n->map_lim.maps, keep_maps);
	if (err) {
		vplat_unmap(m);
		return err;
	}
	vbe_map_charge(n, m, npages);
	*out = m;
	return VRDMA_CS_OK;
}

void vbe_unmap_node(struct vbe_node *n, struct vplat_map *m, uint32_t npages)
{
	n->map_use -= vplat_map_cost(m);
	n->page_use -= npages;
	vplat_unmap(m);
}
