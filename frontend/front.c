// SPDX-License-Identifier: MIT
/*
 * Frontend connect / disconnect, netfront style: read where the backend
 * lives, wait for it in InitWait, grant the device area, publish ring refs
 * and the event channel, go Initialised, wait for Connected.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "front.h"
#include "log.h"
#include "vring.h"

static const char *const vfe_stop_states[] = { "5", "6", NULL };
/* What d->live points at: dom0 does not track its liveness; broken. */
static const uint8_t vfe_untracked = 1, vfe_dead;

void vfe_set_broken(struct vfe_dev *d, const char *why)
{
	void (*cb)(void *arg);

	if (__atomic_exchange_n(&d->broken, 1, __ATOMIC_SEQ_CST))
		return;
	__atomic_store_n(&d->live, &vfe_dead, __ATOMIC_RELEASE);
	vlog_err("vrdma device broken: %s", why);
	cb = __atomic_load_n(&d->broken_cb, __ATOMIC_ACQUIRE);
	if (cb)
		cb(d->broken_arg);
}

int vfe_dom0_gone(struct vfe_dev *d)
{
	if (!vfe_is_broken(d) && !vfe_live(d))
		vfe_set_broken(d, "dom0 went away (its liveness byte was cleared)");
	return vfe_is_broken(d) ? -EIO : 0;
}

void vfe_on_broken(struct vfe_dev *d, void (*cb)(void *arg), void *arg)
{
	d->broken_arg = arg;
	__atomic_store_n(&d->broken_cb, cb, __ATOMIC_RELEASE);
	if (vfe_is_broken(d))
		cb(arg);	/* broke before anyone listened */
}

int vfe_share(struct vfe_dev *d, uint32_t npages, int writable,
	      struct vplat_share **out)
{
	int rc;

	pthread_mutex_lock(&d->plat_lock);
	rc = vplat_share(d->plat, d->backend_id, npages, writable, out);
	pthread_mutex_unlock(&d->plat_lock);
	return rc;
}

void vfe_unshare(struct vfe_dev *d, struct vplat_share *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&d->plat_lock);
	vplat_unshare(s);
	pthread_mutex_unlock(&d->plat_lock);
}

static int vfe_remaining(int64_t deadline)
{
	int64_t left = deadline - vplat_now_ms();

	return left > 0 ? (int)left : 0;
}

/* Our frontend key: <fdir>/<key>. */
static int vfe_fkey(const struct vfe_dev *d, const char *key, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", d->fdir, key);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int vfe_fwrite(struct vfe_dev *d, const char *key, uint32_t val)
{
	char path[80];
	int rc = vfe_fkey(d, key, path, sizeof(path));

	return rc ? rc : vplat_key_printf(d->plat, path, "%u", val);
}

static void vfe_sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* The toolstack (vrdmad) may create our device directory just after we
 * connect: poll for it, bounded. */
static int vfe_read_backend(struct vfe_dev *d, int64_t deadline)
{
	int rc;

	for (;;) {
		char path[80];

		rc = vfe_fkey(d, "backend", path, sizeof(path));
		if (!rc)
			rc = vplat_key_read(d->plat, path, d->backend, sizeof(d->backend));
		if (rc != -ENOENT)
			break;
		if (vfe_remaining(deadline) == 0)
			return -ETIMEDOUT;
		vfe_sleep_ms(5);
	}
	if (rc < 0)
		return rc;
	{
		char path[80];

		rc = vfe_fkey(d, "backend-id", path, sizeof(path));
		if (!rc)
			rc = vplat_key_read_u32(d->plat, path, &d->backend_id);
	}
	if (rc == -ENOENT) {
		d->backend_id = VPLAT_DOM0;
		rc = 0;
	}
	return rc;
}

/* path = <backend dir>/<key>; the backend dir came from dom0: check it. */
static int vfe_back_path(const struct vfe_dev *d, const char *key,
			 char *path, size_t len)
{
	int n = snprintf(path, len, "%.*s/%s", VPLAT_KEY_MAX, d->backend, key);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int vfe_back_u32(struct vfe_dev *d, const char *key, uint32_t def,
			uint32_t *val)
{
	char path[VPLAT_KEY_MAX + 64];
	int rc;

	rc = vfe_back_path(d, key, path, sizeof(path));
	if (rc)
		return rc;
	rc = vplat_key_read_u32(d->plat, path, val);
	if (rc == -ENOENT) {
		*val = def;	/* absent key: an older backend, default */
		return 0;
	}
	return rc;
}

static int vfe_wait_back_state(struct vfe_dev *d, const char *want, int64_t deadline)
{
	char path[VPLAT_KEY_MAX + 64];
	int rc;

	rc = vfe_back_path(d, "state", path, sizeof(path));
	if (rc)
		return rc;
	rc = vplat_key_wait(d->plat, path, want, vfe_stop_states,
			    vfe_remaining(deadline));
	if (rc == -ECONNRESET)
		return -ECONNREFUSED;
	return rc;
}

/*
 * A new frontend instance (process) on the device: wait until the backend
 * is in InitWait.  It may still be closing the previous instance's
 * connection; once it is Closed it rearms when our state changes, so a
 * Closed backend gets a nudge (Closed, then Initialising: it rearms on
 * either), at most every 200 ms.
 */
static int vfe_wait_initwait(struct vfe_dev *d, int64_t deadline)
{
	char path[VPLAT_KEY_MAX + 64], st[8];
	int nudge = VRDMA_XB_CLOSED, rc;

	rc = vfe_back_path(d, "state", path, sizeof(path));
	if (rc)
		return rc;
	for (;;) {
		rc = vplat_key_wait(d->plat, path, "2", NULL,
				    vfe_remaining(deadline) < 200 ? vfe_remaining(deadline) : 200);
		if (rc != -ETIMEDOUT)
			return rc;
		if (vfe_remaining(deadline) == 0)
			return -ETIMEDOUT;
		if (vplat_key_read(d->plat, path, st, sizeof(st)) == 0 && !strcmp(st, "6")) {
			vfe_fwrite(d, "state", (uint32_t)nudge);
			nudge = nudge == VRDMA_XB_CLOSED ? VRDMA_XB_INITIALISING : VRDMA_XB_CLOSED;
		}
	}
}

/* A backend feature key: "1" is on, anything else (or absent) off. */
static bool vfe_feature(struct vfe_dev *d, const char *key)
{
	char path[VPLAT_KEY_MAX + 64], buf[8];

	return vfe_back_path(d, key, path, sizeof(path)) == 0 &&
	       vplat_key_read(d->plat, path, buf, sizeof(buf)) >= 0 && !strcmp(buf, "1");
}

static int vfe_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void vfe_parse_gid(const char *s, uint8_t gid[16])
{
	uint8_t g[16];
	int i, hi, lo;

	if (strlen(s) != 32)
		return;
	for (i = 0; i < 16; i++) {
		hi = vfe_hex(s[2 * i]);
		lo = vfe_hex(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return;
		g[i] = (uint8_t)(hi << 4 | lo);
	}
	memcpy(gid, g, 16);
}

static int vfe_negotiate(struct vfe_dev *d)
{
	uint32_t ver, max_req, max_evt, max_sge, max_buf, max_cq, max_ud;
	char path[VPLAT_KEY_MAX + 64];
	char buf[VPLAT_VAL_MAX];
	int rc;

	rc = vfe_back_u32(d, "protocol-version", VRDMA_WIRE_VERSION, &ver);
	if (!rc && ver != VRDMA_WIRE_VERSION)
		rc = -EPROTONOSUPPORT;
	if (!rc)
		rc = vfe_back_u32(d, "max-req-ring-order", VRDMA_REQ_RING_ORDER_DEF, &max_req);
	if (!rc)
		rc = vfe_back_u32(d, "max-evt-ring-order", VRDMA_EVT_RING_ORDER_DEF, &max_evt);
	if (!rc)
		rc = vfe_back_u32(d, "max-sge", VRDMA_WR_SGE, &max_sge);
	if (!rc)
		rc = vfe_back_u32(d, "max-buf-pages", VRDMA_BUF_MAX_PAGES, &max_buf);
	if (!rc)
		rc = vfe_back_u32(d, "max-cq-order", VRDMA_CQ_ORDER_OLD, &max_cq);
	if (!rc)
		rc = vfe_back_u32(d, "max-ud-msg", VRDMA_UD_MTU, &max_ud);
	if (rc)
		return rc;
	d->req_order = VRDMA_REQ_RING_ORDER_DEF;
	if (max_req < d->req_order)
		d->req_order = (uint8_t)max_req;
	d->evt_order = VRDMA_EVT_RING_ORDER_DEF;
	if (max_evt < d->evt_order)
		d->evt_order = (uint8_t)max_evt;
	d->req_size = 1u << d->req_order;
	d->evt_size = 1u << d->evt_order;
	/* dom0's word, within what the wire and our ring can carry: a WR
	 * and its SGE entries go into the ring at once. */
	if (max_sge > VRDMA_MAX_SGE)
		max_sge = VRDMA_MAX_SGE;
	while (max_sge > 1 && 1 + VRDMA_SGE_EXT_ENTRIES(max_sge) > d->req_size)
		max_sge--;
	d->max_sge = max_sge ? max_sge : 1;
	/* Indirect list pages only if dom0 said it takes them. */
	d->max_buf_pages = max_buf > VRDMA_BUF_MAX_PAGES ? VRDMA_BUF_MAX_PAGES_IND :
			   VRDMA_BUF_MAX_PAGES;
	d->max_cq_order = max_cq > VRDMA_CQ_ORDER_MAX ? VRDMA_CQ_ORDER_MAX :
			  max_cq < VRDMA_CQ_ORDER_OLD ? VRDMA_CQ_ORDER_OLD : max_cq;
	d->max_ud_msg = vfe_ud_msg_bound(max_ud);

	/* node-name is informational: absent or oversized means "". */
	if (vfe_back_path(d, "node-name", path, sizeof(path)) == 0 &&
	    vplat_key_read(d->plat, path, buf, sizeof(buf)) >= 0 &&
	    strnlen(buf, sizeof(buf)) < sizeof(d->node_name))
		strcpy(d->node_name, buf);
	/* node-gid: 32 hex digits; anything else leaves the GID zero. */
	if (vfe_back_path(d, "node-gid", path, sizeof(path)) == 0 &&
	    vplat_key_read(d->plat, path, buf, sizeof(buf)) >= 0)
		vfe_parse_gid(buf, d->node_gid);
	d->feat_modify_qp = vfe_feature(d, "feature-modify-qp");
	d->feat_srq = vfe_feature(d, "feature-srq");
	d->feat_ud = vfe_feature(d, "feature-ud");
	d->feat_coll = vfe_feature(d, "feature-coll");
	d->feat_coll_nodes = d->feat_coll && vfe_feature(d, "feature-coll-nodes");
	return 0;
}

/* Grant the device area and initialise page 0 (SHARED_RING_INIT). */
static int vfe_setup_area(struct vfe_dev *d)
{
	uint32_t npages = vrdma_sring_pages(d->req_order, d->evt_order);
	uint8_t *base;
	int rc;

	rc = vplat_share(d->plat, d->backend_id, npages, 1, &d->area);
	if (rc)
		return rc;
	base = vplat_share_addr(d->area);
	d->sring = (struct vrdma_sring *)base;
	d->req = (struct vrdma_req *)(base + vring_req_off());
	d->evt = (struct vrdma_evt *)(base + vring_evt_off(d->req_order));
	d->sring->magic = VRDMA_WIRE_MAGIC;
	d->sring->version = VRDMA_WIRE_VERSION;
	d->sring->req_order = d->req_order;
	d->sring->evt_order = d->evt_order;
	/* Both consumers start armed for the first entry, as Xen rings do. */
	d->sring->req.event = 1;
	d->sring->evt.event = 1;
	vring_mb();

	rc = vplat_chan_alloc(d->plat, d->backend_id, &d->chan, &d->port);
	if (rc) {
		vplat_unshare(d->area);
		d->area = NULL;
	}
	return rc;
}

static int vfe_publish(struct vfe_dev *d)
{
	const uint32_t *refs = vplat_share_refs(d->area);
	uint32_t i, n = vplat_share_npages(d->area);
	char key[64];
	int rc;

	rc = vfe_fwrite(d, "protocol-version", VRDMA_WIRE_VERSION);
	if (!rc)
		rc = vfe_fwrite(d, "req-ring-order", d->req_order);
	if (!rc)
		rc = vfe_fwrite(d, "evt-ring-order", d->evt_order);
	if (!rc)
		rc = vfe_fwrite(d, "ring-pages", n);
	for (i = 0; !rc && i < n; i++) {
		snprintf(key, sizeof(key), "ring-ref%u", i);
		rc = vfe_fwrite(d, key, refs[i]);
	}
	if (!rc)
		rc = vfe_fwrite(d, "event-channel", d->port);
	/* We take VRDMA_EVT_CONN_FROM (who connects, issue 12). */
	if (!rc)
		rc = vfe_fwrite(d, "feature-conn-from", 1);
	if (!rc)
		rc = vfe_fwrite(d, "state", VRDMA_XB_INITIALISED);
	return rc;
}

static int vfe_init_locks(struct vfe_dev *d)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&d->cmd_lock, NULL);
	vlock_init(&d->ring_lock);
	pthread_mutex_init(&d->evt_lock, NULL);
	pthread_mutex_init(&d->plat_lock, NULL);
	pthread_mutex_init(&d->wait_lock, NULL);
	/* Waits are bounded in monotonic time, like every other deadline. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->wait_cond, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

static void vfe_destroy_locks(struct vfe_dev *d)
{
	pthread_mutex_destroy(&d->cmd_lock);
	pthread_mutex_destroy(&d->evt_lock);
	pthread_mutex_destroy(&d->plat_lock);
	pthread_mutex_destroy(&d->wait_lock);
	pthread_cond_destroy(&d->wait_cond);
}

/* Watch callback, inside vplat_process(): only note the change; the
 * state is read by vfe_check_backend() once vplat_process() returned. */
static void vfe_back_watch(struct vplat *p, const char *path, void *arg)
{
	struct vfe_dev *d = arg;

	(void)p;
	(void)path;
	d->back_changed = true;
}

/* Once connected: learn about a backend that closes on us (it disabled
 * this guest, or vrdmad is shutting down) without a command timeout. */
static void vfe_watch_backend(struct vfe_dev *d)
{
	char path[VPLAT_KEY_MAX + 64];

	if (vfe_back_path(d, "state", path, sizeof(path)) ||
	    vplat_watch(d->plat, path, vfe_back_watch, d)) {
		/* Not fatal: a dead backend then shows as a command timeout. */
		vlog_warn("vrdma frontend: cannot watch the backend state");
		return;
	}
	d->watching = true;
}

static void vfe_unwatch_backend(struct vfe_dev *d)
{
	char path[VPLAT_KEY_MAX + 64];

	if (d->watching && vfe_back_path(d, "state", path, sizeof(path)) == 0)
		vplat_unwatch(d->plat, path, d);
	d->watching = false;
}

/* plat_lock held.  Read the backend state after a watch fired. */
static void vfe_read_back_state(struct vfe_dev *d)
{
	char path[VPLAT_KEY_MAX + 64];
	uint32_t st;
	int rc;

	d->back_changed = false;
	rc = vfe_back_path(d, "state", path, sizeof(path));
	if (!rc)
		rc = vplat_key_read_u32(d->plat, path, &st);
	if (rc == -ENOENT || rc == -EPIPE || rc == -ENAMETOOLONG) {
		vfe_set_broken(d, "backend gone");
	} else if (rc) {
		d->back_changed = true;		/* e.g. a slow dom0: read again later */
	} else if (st == VRDMA_XB_CLOSING || st == VRDMA_XB_CLOSED) {
		vfe_set_broken(d, "backend closed the device (dom0 disabled this guest?)");
	}
}

int vfe_check_backend(struct vfe_dev *d)
{
	struct pollfd pfd = { .events = POLLIN };
	int rc;

	if (vfe_is_broken(d))
		return -EIO;
	/* Whoever holds plat_lock is talking to dom0 anyway; we look next time. */
	if (pthread_mutex_trylock(&d->plat_lock))
		return 0;
	if (d->watching && !d->disconnected) {
		pfd.fd = vplat_fd(d->plat);
		if (poll(&pfd, 1, 0) > 0) {
			rc = vplat_process(d->plat);
			if (rc == -EPIPE || rc == -ECONNRESET)
				vfe_set_broken(d, "dom0 went away");
		}
		if (d->back_changed)
			vfe_read_back_state(d);
	}
	pthread_mutex_unlock(&d->plat_lock);
	return vfe_is_broken(d) ? -EIO : 0;
}

/*
 * How long a command may wait for dom0's answer: VFE_CMD_TIMEOUT_MS, or
 * env VRDMA_CMD_TIMEOUT_MS (1000 .. VFE_CMD_TIMEOUT_MAX) for a dom0 that
 * is slow on purpose: it pins an MR on the device inside the command
 * that first needs it, at the host's page-pinning speed (a 4 GiB MR
 * takes seconds under emulation).  A bad value is said and ignored.
 */
static int vfe_env_cmd_timeout(void)
{
	const char *s = getenv("VRDMA_CMD_TIMEOUT_MS");
	char *end;
	long v;

	if (!s || !*s)
		return VFE_CMD_TIMEOUT_MS;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 1000 || v > VFE_CMD_TIMEOUT_MAX) {
		vlog_warn("vrdma: VRDMA_CMD_TIMEOUT_MS=%s is not 1000..%d: %d", s,
			  VFE_CMD_TIMEOUT_MAX, VFE_CMD_TIMEOUT_MS);
		return VFE_CMD_TIMEOUT_MS;
	}
	return (int)v;
}

int vfe_open(struct vfe_dev *d, const char *kind, int timeout_ms,
	     vfe_evt_fn *cb, void *cb_arg)
{
	struct vplat_cfg cfg = { .role = VPLAT_GUEST, .kind = kind };
	int64_t deadline = vplat_now_ms() + timeout_ms;
	int rc;

	memset(d, 0, sizeof(*d));
	d->evt_cb = cb;
	d->evt_arg = cb_arg;
	d->cmd_next_id = 1;
	d->cmd_timeout_ms = vfe_env_cmd_timeout();
	d->live = &vfe_untracked;
	vfe_init_locks(d);

	rc = vplat_open(&cfg, &d->plat);
	if (rc)
		goto err_locks;
	rc = vfe_claim(d, deadline);
	if (rc)
		goto err_plat;
	/* A new instance: Initialising before any other key.  One that died
	 * between its Initialised and dom0's look left that state behind; dom0
	 * must not read it against the keys we rewrite (docs/wire.md). */
	rc = vfe_fwrite(d, "state", VRDMA_XB_INITIALISING);
	if (rc)
		goto err_claim;
	rc = vfe_read_backend(d, deadline);
	if (rc)
		goto err_claim;
	rc = vfe_wait_initwait(d, deadline);
	if (rc)
		goto err_claim;
	rc = vfe_negotiate(d);
	if (rc)
		goto err_claim;
	rc = vfe_setup_area(d);
	if (rc)
		goto err_claim;
	rc = vfe_publish(d);
	if (rc)
		goto err_area;
	rc = vfe_wait_back_state(d, "4", deadline);
	if (rc)
		goto err_area;
	/* Set before Connected by a backend that tracks it; 0 = an older one. */
	if (__atomic_load_n(&d->sring->dom0_live, __ATOMIC_ACQUIRE) == VRDMA_SRING_LIVE)
		__atomic_store_n(&d->live, &d->sring->dom0_live, __ATOMIC_RELEASE);
	rc = vfe_fwrite(d, "state", VRDMA_XB_CONNECTED);
	if (rc)
		goto err_area;
	vfe_watch_backend(d);
	vlog_dbg("vrdma frontend connected: backend %s node '%s' orders %u/%u",
		 d->backend, d->node_name, d->req_order, d->evt_order);
	return 0;

err_area:
	vfe_fwrite(d, "state", VRDMA_XB_CLOSED);
	vplat_chan_close(d->chan);
	vplat_unshare(d->area);
err_claim:
	vfe_unclaim(d);
err_plat:
	vplat_close(d->plat);
err_locks:
	vfe_destroy_locks(d);
	return rc;
}

void vfe_disconnect(struct vfe_dev *d)
{
	int64_t deadline = vplat_now_ms() + VFE_CLOSE_WAIT_MS;
	char path[VPLAT_KEY_MAX + 64];

	pthread_mutex_lock(&d->plat_lock);
	if (d->disconnected)
		goto out;
	d->disconnected = true;
	vfe_unwatch_backend(d);
	/* Our own close: the backend's unmap clears dom0_live, which a
	 * thread still polling must not take for dom0's death (a device
	 * already broken keeps saying so). */
	if (d->sring) {
		const uint8_t *was = &d->sring->dom0_live;

		__atomic_compare_exchange_n(&d->live, &was, &vfe_untracked, false,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	}
	if (vfe_fwrite(d, "state", VRDMA_XB_CLOSING) == 0 &&
	    vfe_back_path(d, "state", path, sizeof(path)) == 0) {
		/* The backend unmaps before saying Closed; bounded either way. */
		if (vplat_key_wait(d->plat, path, "6", NULL, vfe_remaining(deadline)))
			vlog_dbg("vrdma frontend: backend did not close in time");
		vfe_fwrite(d, "state", VRDMA_XB_CLOSED);
	}
out:
	pthread_mutex_unlock(&d->plat_lock);
}

void vfe_close(struct vfe_dev *d)
{
	vfe_disconnect(d);
	pthread_mutex_lock(&d->plat_lock);
	vplat_chan_close(d->chan);
	vplat_unshare(d->area);
	vfe_unclaim(d);
	vplat_close(d->plat);
	pthread_mutex_unlock(&d->plat_lock);
	vfe_destroy_locks(d);
}
