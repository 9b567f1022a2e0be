// SPDX-License-Identifier: MIT
/*
 * Per-guest xenbus handshake, netback style:
 *
 *   backend dir appears      publish protocol-version, max-*-ring-order,
 *                            node-name; state InitWait; watch the frontend
 *   frontend Initialised     read its keys, map the device area, check
 *                            page 0, bind the channel; state Connected
 *   frontend Closing/Closed  tear down (peers see errors); state Closed
 *   or its directory gone
 *   frontend Closed and we   InitWait again: ready for the next frontend
 *   are Closed               (process) in that domain; also on Initialising
 *
 * Lifecycle beyond the handshake (docs/xen.md):
 *   guest process died       sring.guest_live cleared by the unmap-notify
 *   (domain lives)           (Xen): tear down, Closed, and write Closed for
 *                            the dead frontend -> InitWait as above
 *   domain destroyed         frontend directory gone: tear down at once; on
 *                            the next tick remove the orphaned backend dir
 *   vrdmad restarted         a frontend found already Connected was talking
 *                            to the previous instance, whose ring state is
 *                            lost: Closed, so it fails cleanly
 *
 * Anything wrong in the frontend's keys or pages refuses the guest: one
 * log line and state Closed.  It may retry from Initialising or Closed.
 * Not when the keys changed while we read them (vbe_xb_front_moved): the
 * frontend gave up or a new process started over, and we wait for it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "vring.h"
#include "../vbe.h"

static uint64_t vbe_be64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

void vbe_xb_set_state(struct vbe_guest *g, int state)
{
	char path[VPLAT_KEY_MAX], val[VPLAT_KEY_MAX];

	g->state = state;
	/* The toolstack may have removed the directory: do not recreate it. */
	snprintf(path, sizeof(path), "%s/frontend", g->bdir);
	if (vplat_key_read(g->node->plat, path, val, sizeof(val)))
		return;
	snprintf(path, sizeof(path), "%s/state", g->bdir);
	if (vplat_key_printf(g->node->plat, path, "%d", state))
		vlog_warn("guest %u: cannot write %s", g->domid, path);
}

static int vbe_xb_read_u32(struct vbe_guest *g, const char *key, uint32_t *val)
{
	char path[VPLAT_KEY_MAX];

	snprintf(path, sizeof(path), "%s/%s", g->fdir, key);
	return vplat_key_read_u32(g->node->plat, path, val);
}

static int vbe_xb_publish(struct vbe_guest *g, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int vbe_xb_publish(struct vbe_guest *g, const char *key, const char *fmt, ...)
{
	char path[VPLAT_KEY_MAX], val[VPLAT_VAL_MAX];
	va_list ap;

	snprintf(path, sizeof(path), "%s/%s", g->bdir, key);
	va_start(ap, fmt);
	vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	return vplat_key_write(g->node->plat, path, val);
}

/* Channel and device area: the connection's, or a liveness watch's. */
static void vbe_xb_drop_area(struct vbe_guest *g)
{
	if (g->chan) {
		if (g->node->fd_cb)
			g->node->fd_cb(g->node->fd_arg, g->chan_fd, 0);
		vplat_chan_close(g->chan);
		g->chan = NULL;
		g->chan_fd = -1;
	}
	if (g->ring_map) {
		vbe_unmap_area(g);
		g->ring_map = NULL;
		g->nmaps--;
	}
	g->sring = NULL;
	g->live = false;
}

/* Drop the connection: objects (peers see errors), channel, rings. */
static void vbe_xb_disconnect(struct vbe_guest *g)
{
	/* No more events or CQEs into pages about to be unmapped. */
	g->connected = false;
	g->held = false;		/* an answer for the frontend that went */
	vbe_obj_release(g);
	/*
	 * A disabled guest's process may live on (a hostile one just sits
	 * there): keep the area mapped and the channel bound, only to see its
	 * liveness byte cleared (the unmap-notify signals the channel), so its
	 * domain can connect again as soon as that process is gone.
	 */
	if (!(g->dead && g->live))
		vbe_xb_drop_area(g);
	g->req = NULL;
	g->evt = NULL;
	g->bl_count = 0;
	if (g->dead)
		g->released = true;
}

static void vbe_xb_close(struct vbe_guest *g)
{
	if (g->state == VRDMA_XB_CONNECTED)
		vbe_xb_set_state(g, VRDMA_XB_CLOSING);
	vbe_xb_disconnect(g);
	if (g->state != VRDMA_XB_CLOSED)
		vbe_xb_set_state(g, VRDMA_XB_CLOSED);
}

static void vbe_xb_rearm(struct vbe_guest *g);

/* Called from the node's reap once a disabled guest is safe to drop. */
void vbe_xb_release(struct vbe_guest *g)
{
	vbe_xb_close(g);
	/* Its frontend said Closed while we were disabling it. */
	if (g->front_state == VRDMA_XB_CLOSED)
		vbe_xb_rearm(g);
}

static int vbe_xb_refuse(struct vbe_guest *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int vbe_xb_refuse(struct vbe_guest *g, const char *fmt, ...)
{
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	vlog_warn("guest %u refused: %s", g->domid, why);
	vbe_xb_close(g);
	return -EPROTO;
}

/* An optional key: absent means the default; garbage is an error. */
static int vbe_xb_read_opt(struct vbe_guest *g, const char *key, uint32_t *val)
{
	int err = vbe_xb_read_u32(g, key, val);

	return err == -ENOENT ? 0 : err;
}

/*
 * The area did not map, or its page 0 or channel did not match: bad keys,
 * or keys that were no longer one frontend's by the time we used them.
 * Each side acts between the other's xenstore calls: a frontend past its
 * deadline says Closed and ends its grants while we read the refs its
 * Initialised announced, and the domain's next process may be rewriting
 * them.  That is no refusal: the frontend's state is no longer Initialised
 * or Connected, or a key we used has another value now.  We stay InitWait
 * and take what we read for the frontend's state, so that the watch event
 * of that later write (still queued) connects the new set once it says
 * Initialised.  True if so.
 */
static bool vbe_xb_front_moved(struct vbe_guest *g, const uint32_t *refs, uint32_t pages,
			       uint32_t port, const char *why)
{
	uint32_t fs, v, i;
	char key[32];

	if (vbe_xb_read_u32(g, "state", &fs))
		fs = VRDMA_XB_UNKNOWN;
	if (fs == VRDMA_XB_INITIALISED || fs == VRDMA_XB_CONNECTED) {
		for (i = 0; i < pages; i++) {
			snprintf(key, sizeof(key), "ring-ref%u", i);
			if (vbe_xb_read_u32(g, key, &v) || v != refs[i])
				break;
		}
		if (i == pages && vbe_xb_read_u32(g, "event-channel", &v) == 0 && v == port)
			return false;
		fs = VRDMA_XB_INITIALISING;	/* a new set on its way */
	}
	vlog_info("guest %u device %u: %s, but the frontend changed its keys meanwhile "
		  "(it gave up, or a new process started over): waiting for it",
		  g->domid, g->devid, why);
	vbe_xb_drop_area(g);
	g->front_state = (int)fs;
	return true;
}

static int vbe_xb_connect(struct vbe_guest *g)
{
	uint32_t ver = VRDMA_WIRE_VERSION, req_order = VRDMA_REQ_RING_ORDER_DEF;
	uint32_t evt_order = VRDMA_EVT_RING_ORDER_DEF, pages, port, i, conn_from = 0;
	uint32_t refs[64];
	struct vplat *plat = g->node->plat;
	struct vrdma_sring hdr;
	struct vplat_map *map;
	char key[32];
	bool bad;
	int err;

	_Static_assert(sizeof(refs) / sizeof(refs[0]) >=
		       1 + (128u << VRDMA_REQ_RING_ORDER_MAX) / 4096 +
		       (64u << VRDMA_EVT_RING_ORDER_MAX) / 4096, "refs");
	if (vbe_xb_read_opt(g, "protocol-version", &ver) || ver != VRDMA_WIRE_VERSION)
		return vbe_xb_refuse(g, "protocol-version %u unsupported", ver);
	if (vbe_xb_read_opt(g, "req-ring-order", &req_order) ||
	    req_order > VRDMA_REQ_RING_ORDER_MAX)
		return vbe_xb_refuse(g, "bad req-ring-order %u", req_order);
	if (vbe_xb_read_opt(g, "evt-ring-order", &evt_order) ||
	    evt_order > VRDMA_EVT_RING_ORDER_MAX)
		return vbe_xb_refuse(g, "bad evt-ring-order %u", evt_order);
	if (vbe_xb_read_u32(g, "ring-pages", &pages) ||
	    pages != vrdma_sring_pages(req_order, evt_order) ||
	    pages > sizeof(refs) / sizeof(refs[0]))
		return vbe_xb_refuse(g, "bad or missing ring-pages");
	for (i = 0; i < pages; i++) {
		snprintf(key, sizeof(key), "ring-ref%u", i);
		if (vbe_xb_read_u32(g, key, &refs[i]))
			return vbe_xb_refuse(g, "missing or bad %s", key);
	}
	if (vbe_xb_read_u32(g, "event-channel", &port))
		return vbe_xb_refuse(g, "missing or bad event-channel");
	/* Issue 12: the frontend takes CONN_FROM before each CONN_REQUEST. */
	if (vbe_xb_read_opt(g, "feature-conn-from", &conn_from) || conn_from > 1)
		return vbe_xb_refuse(g, "bad feature-conn-from");
	g->conn_from = conn_from;
	/* Devices of one tenant (issue 12): a domain's, or a uid's processes. */
	if (vbe_tenant_check(g, VBE_TQ_GUESTS))
		return vbe_xb_refuse(g, "tenant %s has its limit of connected devices",
				     g->tenant);

	/* From the node's reserve for device areas (maps.c). */
	err = vbe_map_area(g, refs, pages, 1, &map);
	if (err == -E2BIG)
		return vbe_xb_refuse(g, "device area in more than %u mappings", VBE_AREA_MAPS);
	/* (-ENOMEM: dom0's room, whoever's keys they were) */
	if (err && err != -ENOMEM &&
	    vbe_xb_front_moved(g, refs, pages, port, "its device area did not map"))
		return -EAGAIN;
	if (err)
		return vbe_xb_refuse(g, "cannot map the device area: %s", strerror(-err));
	g->ring_map = map;
	g->nmaps++;
	/* Copy page 0's identity out before believing it. */
	memcpy(&hdr, vplat_map_addr(map), sizeof(hdr));
	bad = hdr.magic != VRDMA_WIRE_MAGIC || hdr.version != VRDMA_WIRE_VERSION ||
	      hdr.req_order != req_order || hdr.evt_order != evt_order;
	if (bad && vbe_xb_front_moved(g, refs, pages, port, "its page 0 does not match its keys"))
		return -EAGAIN;
	if (bad)
		return vbe_xb_refuse(g, "device area header does not match its keys");
	/* Armed by the guest's platform before it published: watch it from now. */
	g->live = hdr.guest_live == VRDMA_SRING_LIVE;
	err = vplat_chan_bind(plat, g->domid, port, &g->chan);
	if (err) {
		g->chan = NULL;
		if (vbe_xb_front_moved(g, refs, pages, port, "its event channel is not bound"))
			return -EAGAIN;
		return vbe_xb_refuse(g, "cannot bind event-channel %u: %s", port,
				     strerror(-err));
	}
	g->chan_fd = vplat_chan_fd(g->chan);
	/* Our own liveness for the guest, set before it sees Connected: a
	 * guest that only polls learns at once that we died (docs/wire.md). */
	err = vplat_map_live(map, offsetof(struct vrdma_sring, dom0_live), g->chan);
	if (err)
		vlog_warn("guest %u: cannot arm dom0_live (it will not see us die): %s",
			  g->domid, strerror(-err));
	else
		__atomic_store_n(&((struct vrdma_sring *)vplat_map_addr(map))->dom0_live,
				 (uint8_t)VRDMA_SRING_LIVE, __ATOMIC_RELEASE);

	g->sring = vplat_map_addr(map);
	g->req = (struct vrdma_req *)((uint8_t *)g->sring + vring_req_off());
	g->evt = (struct vrdma_evt *)((uint8_t *)g->sring + vring_evt_off(req_order));
	g->req_size = 1u << req_order;
	g->evt_size = 1u << evt_order;
	g->req_cons = 0;
	g->evt_prod = g->evt_pub = 0;
	g->bl_head = g->bl_count = 0;
	vring_consumed(&g->sring->req, 0);
	__atomic_store_n(&g->sring->req.event, 1, __ATOMIC_RELAXED);
	vring_store_rel(&g->sring->evt.prod, 0);
	g->connected = true;
	g->busy = true;
	if (g->node->fd_cb)
		g->node->fd_cb(g->node->fd_arg, g->chan_fd, 1);
	vbe_xb_set_state(g, VRDMA_XB_CONNECTED);
	vlog_info("guest %u connected (req ring %u, event ring %u%s)", g->domid,
		  g->req_size, g->evt_size, g->live ? ", liveness tracked" : "");
	return 0;
}

/* Nobody is left on that side to say Closed: say it for them (only while
 * their directory exists: never recreate it).  Their state watch then
 * brings us back to InitWait for the next process. */
static void vbe_xb_front_closed(struct vbe_guest *g)
{
	char path[VPLAT_KEY_MAX], val[16];

	snprintf(path, sizeof(path), "%s/state", g->fdir);
	if (vplat_key_read(g->node->plat, path, val, sizeof(val)) == 0)
		vplat_key_printf(g->node->plat, path, "%d", VRDMA_XB_CLOSED);
}

/*
 * The guest's process let go of the device area (exit, crash): its
 * unmap-notify cleared the byte.  Connected: tear down.  Already closed
 * (disabled, or found Connected at our start) and only watched: drop the
 * watch.  Either way the domain may connect again.
 */
void vbe_xb_check_live(struct vbe_guest *g)
{
	if (!g->live || !g->sring)
		return;
	if (__atomic_load_n(&g->sring->guest_live, __ATOMIC_ACQUIRE) == VRDMA_SRING_LIVE)
		return;
	vlog_info("guest %u device %u: its process went away (unmap-notify)%s",
		  g->domid, g->devid, g->connected && !g->dead ? ": closing" : "");
	if (g->connected && !g->dead) {
		g->live = false;
		vbe_xb_close(g);
	} else {
		vbe_xb_drop_area(g);
	}
	vbe_xb_front_closed(g);
}

/*
 * vrdmad (re)started under a frontend that is Connected: the old instance's
 * ring state is gone, so we stay Closed; but map page 0 read-only to learn
 * when that process ends (or that it already has), so the domain can
 * connect again.
 */
static void vbe_xb_watch_stale(struct vbe_guest *g)
{
	struct vplat_map *map;
	uint32_t ref;

	if (vbe_xb_read_u32(g, "ring-ref0", &ref) || vbe_map_area(g, &ref, 1, 0, &map))
		return;
	g->ring_map = map;
	g->nmaps++;
	g->sring = vplat_map_addr(map);
	g->live = true;
	/* The old binding died with the old vrdmad: the port is free again.
	 * Bound, the unmap-notify wakes us; else the tick still looks. */
	if (vbe_xb_read_u32(g, "event-channel", &ref) == 0 &&
	    vplat_chan_bind(g->node->plat, g->domid, ref, &g->chan) == 0) {
		g->chan_fd = vplat_chan_fd(g->chan);
		if (g->node->fd_cb)
			g->node->fd_cb(g->node->fd_arg, g->chan_fd, 1);
	} else {
		g->chan = NULL;
	}
	vbe_xb_check_live(g);	/* already gone: Closed for it at once */
}

/* Is the frontend's directory gone (its domain destroyed)? */
static bool vbe_xb_front_gone(struct vbe_guest *g)
{
	char list[64];
	unsigned count = 0;
	int err = vplat_key_list(g->node->plat, g->fdir, list, sizeof(list), &count);

	return err == -ENOENT || (err == 0 && count == 0);
}

/*
 * xl removes /local/domain/<id> when it destroys a domain but knows nothing
 * of our backend directory.  Remove it once the frontend is gone for good:
 * a tick later, so a toolstack that does remove it gets the first go.  The
 * node's watch then frees the guest.
 */
void vbe_xb_tick(struct vbe_guest *g)
{
	char path[VPLAT_KEY_MAX], list[64];
	unsigned count = 0;
	int err;

	if (g->front_state != VRDMA_XB_UNKNOWN || !vbe_xb_front_gone(g))
		return;
	vlog_info("guest %u device %u: frontend gone (domain destroyed?): "
		  "removing the backend directory", g->domid, g->devid);
	if (g->state != VRDMA_XB_CLOSED)
		vbe_xb_close(g);
	g->front_state = -1;	/* once */
	vplat_key_rm(g->node->plat, g->bdir);
	snprintf(path, sizeof(path), VRDMA_XS_BACK_ROOT "/%u", g->domid);
	err = vplat_key_list(g->node->plat, path, list, sizeof(list), &count);
	if (err == 0 && count == 0)
		vplat_key_rm(g->node->plat, path);
}

/*
 * Closed -> InitWait for a new frontend instance (process) of the domain.
 * A disabled guest too, once released: the violation ended with the
 * connection it broke (on Xen a domain has one device, so disabling it for
 * good would lock the whole domain out).
 */
static void vbe_xb_rearm(struct vbe_guest *g)
{
	if (g->state != VRDMA_XB_CLOSED)
		return;
	if (g->dead) {
		if (!g->released)
			return;		/* the reap comes first; it rearms */
		vlog_info("guest %u device %u: new frontend after a disabled one",
			  g->domid, g->devid);
		g->dead = false;
		g->released = false;
	}
	vbe_xb_drop_area(g);		/* a liveness watch is moot now */
	vbe_xb_set_state(g, VRDMA_XB_INITWAIT);
}

static void vbe_xb_front_changed(struct vplat *p, const char *path, void *arg)
{
	struct vbe_guest *g = arg;
	bool first = g->front_state == -1;
	uint32_t fs;
	int err;

	(void)p;
	(void)path;
	err = vbe_xb_read_u32(g, "state", &fs);
	if (err)
		fs = VRDMA_XB_UNKNOWN;
	if (fs == (uint32_t)g->front_state && !err)
		return;
	g->front_state = (int)fs;
	switch (fs) {
	case VRDMA_XB_CONNECTED:
		if (first) {
			/* Connected to an earlier vrdmad: its ring state died with it. */
			vlog_warn("guest %u device %u: frontend already Connected (vrdmad "
				  "restarted?): closing it", g->domid, g->devid);
			vbe_xb_close(g);
			vbe_xb_watch_stale(g);
			break;
		}
		/* fall through */
	case VRDMA_XB_INITIALISED:
		if (g->state == VRDMA_XB_INITWAIT && !g->dead)
			vbe_xb_connect(g);
		break;
	case VRDMA_XB_CLOSING:
	case VRDMA_XB_CLOSED:
		if (g->state != VRDMA_XB_CLOSED)
			vbe_xb_close(g);
		/* That frontend is done: be ready for the next in that domain. */
		if (fs == VRDMA_XB_CLOSED)
			vbe_xb_rearm(g);
		break;
	case VRDMA_XB_INITIALISING:
		/* A frontend starting over after a close. */
		vbe_xb_rearm(g);
		break;
	default:
		/* Frontend directory gone (or state garbage): the guest left. */
		if (g->state != VRDMA_XB_INITWAIT && g->state != VRDMA_XB_CLOSED)
			vbe_xb_close(g);
		break;
	}
	/* Peers of a closed guest got QP errors: publish them now. */
	vbe_node_flush(g->node);
}

int vbe_xb_guest_new(struct vbe_node *n, uint32_t domid, uint32_t devid,
		     struct vbe_guest **out)
{
	char path[VPLAT_KEY_MAX];
	struct vbe_guest *g;
	int err;

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->node = n;
	g->serial = ++n->guest_serial;
	g->domid = domid;
	g->devid = devid;
	g->chan_fd = -1;
	g->front_state = -1;
	snprintf(g->name, sizeof(g->name), "dom%u/%u", domid, devid);
	snprintf(g->bdir, sizeof(g->bdir), VRDMA_XS_BACK_FMT, domid, devid);
	snprintf(path, sizeof(path), "%s/frontend", g->bdir);
	/* The toolstack writes `frontend` with the rest; not there yet = later. */
	err = vplat_key_read(n->plat, path, g->fdir, sizeof(g->fdir));
	if (err)
		goto err_free;
	if (g->fdir[0] != '/') {
		err = -EINVAL;
		goto err_free;
	}
	err = vbe_obj_init(g);
	if (err)
		goto err_free;
	if (vbe_xb_publish(g, "protocol-version", "%u", VRDMA_WIRE_VERSION) ||
	    vbe_xb_publish(g, "max-req-ring-order", "%u", VRDMA_REQ_RING_ORDER_MAX) ||
	    vbe_xb_publish(g, "max-evt-ring-order", "%u", VRDMA_EVT_RING_ORDER_MAX) ||
	    vbe_xb_publish(g, "max-sge", "%u", n->max_sge) ||
	    vbe_xb_publish(g, "max-buf-pages", "%u", VRDMA_BUF_MAX_PAGES_IND) ||
	    vbe_xb_publish(g, "max-cq-order", "%u", VRDMA_CQ_ORDER_MAX) ||
	    vbe_xb_publish(g, "max-ud-msg", "%u", n->max_ud_msg) ||
	    vbe_xb_publish(g, "node-name", "%s", n->name) ||
	    vbe_xb_publish(g, "feature-modify-qp", "1") ||
	    vbe_xb_publish(g, "feature-srq", "1") ||
	    vbe_xb_publish(g, "feature-ud", "1") ||
	    vbe_xb_publish(g, "feature-coll", "1") ||
	    vbe_xb_publish(g, "feature-coll-nodes", "%u", n->coll->links ? 1 : 0) ||
	    vbe_xb_publish(g, "node-gid", "%016llx%016llx",
			   (unsigned long long)vbe_be64(n->gid),
			   (unsigned long long)vbe_be64(n->gid + 8))) {
		err = -EIO;
		goto err_objs;
	}
	vbe_xb_set_state(g, VRDMA_XB_INITWAIT);
	err = vplat_watch(n->plat, g->fdir, vbe_xb_front_changed, g);
	if (err)
		goto err_objs;
	g->watching = true;
	*out = g;
	return 0;

err_objs:
	vbe_obj_fini(g);
err_free:
	free(g);
	return err;
}

void vbe_xb_guest_free(struct vbe_guest *g)
{
	if (g->watching)
		vplat_unwatch(g->node->plat, g->fdir, g);
	g->watching = false;
	g->live = false;	/* no liveness watch outlives the guest */
	vbe_xb_disconnect(g);
	vbe_obj_fini(g);
	/* Last: what its release left mapped for the device (late unmaps)
	 * is charged to its tenant, which must still be its own then. */
	vbe_tenant_fini(g);
	vbe_node_ctrs_keep(g);
	g->node->guest_epoch++;		/* cached peer pointers go stale */
	free(g);
}
