// SPDX-License-Identifier: MIT
/*
 * xen_smoke: the Xen platform seam end to end, without the driver above
 * it.  Run one side in a domU and the other in dom0:
 *
 *   domU:  xen_smoke guest [backend-domid]
 *   dom0:  xen_smoke dom0 <guest-domid>
 *
 * They meet in the guest's /local/domain/<id>/data/vrdma-smoke:
 *   guest  shares SMOKE_PAGES pages (page 0 looks like a device area so
 *          the unmap-notify gets armed), allocates a channel, publishes
 *          refs + port, state = ready, then waits for dom0's kick
 *   dom0   maps, checks the guest's pattern and the liveness byte, writes
 *          its own pattern, binds, arms its own liveness byte
 *          (vplat_map_live) and sets it, kicks; the guest checks, kicks back,
 *          tries a share past gntalloc's limit (must fail whole, -ENOSPC)
 *          and exits WITHOUT unsharing: dom0 must see the liveness byte
 *          cleared and an event (the way vrdmad learns a guest died)
 *   dom0   also attaches/detaches a device (vplat_dev_attach) and checks
 *          the nodes, cross-links and that detach removes them; none for a
 *          domain that is not there.
 * Output: "XEN-SMOKE <check> PASS|FAIL|SKIP [detail]" lines, then
 * "XEN-SMOKE-DONE <side> pass=P fail=F"; exit status 0 iff nothing failed.
 * Every wait has a time limit.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vplat.h"
#include "vrdma/wire.h"

#define SMOKE_PAGES	4
#define SMOKE_DIR	"data/vrdma-smoke"
#define SMOKE_WAIT_MS	60000
#define SMOKE_PG	4096u

static int smoke_pass, smoke_fail;

static void check(const char *name, int ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void check(const char *name, int ok, const char *fmt, ...)
{
	char detail[256] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	printf("XEN-SMOKE %s %s %s\n", name, ok ? "PASS" : "FAIL", detail);
	fflush(stdout);
	if (ok)
		smoke_pass++;
	else
		smoke_fail++;
}

static int done(const char *side)
{
	printf("XEN-SMOKE-DONE %s pass=%d fail=%d\n", side, smoke_pass, smoke_fail);
	return smoke_fail ? 1 : 0;
}

static uint8_t pattern(unsigned page, unsigned off, unsigned salt)
{
	return (uint8_t)(page * 31 + off * 7 + salt);
}

static int page_has(const uint8_t *base, unsigned page, unsigned salt)
{
	unsigned i;

	for (i = 0; i < SMOKE_PG; i++)
		if (base[page * SMOKE_PG + i] != pattern(page, i, salt))
			return 0;
	return 1;
}

static void page_fill(uint8_t *base, unsigned page, unsigned salt)
{
	unsigned i;

	for (i = 0; i < SMOKE_PG; i++)
		base[page * SMOKE_PG + i] = pattern(page, i, salt);
}

/* ---- guest ---- */

static void guest_limit(struct vplat *p, uint32_t be)
{
	struct vplat_share *s = NULL;
	unsigned long long lim = 0;
	FILE *f = fopen("/sys/module/xen_gntalloc/parameters/limit", "re");
	int r;

	if (f) {
		if (fscanf(f, "%llu", &lim) != 1)
			lim = 0;
		fclose(f);
	}
	if (!lim || lim > 1u << 20) {
		printf("XEN-SMOKE guest-limit SKIP gntalloc limit unknown or huge (%llu)\n", lim);
		return;
	}
	r = vplat_share(p, be, (uint32_t)lim + 1, 1, &s);
	check("guest-limit", r == -ENOSPC, "share of limit+1 = %llu pages: %s",
	      lim + 1, strerror(-r));
	if (r == 0)
		vplat_unshare(s);
}

static int guest(uint32_t be)
{
	struct vplat_cfg cfg = { .role = VPLAT_GUEST, .kind = "xen" };
	struct vplat_share *s;
	struct vplat_chan *c;
	struct vrdma_sring *sr;
	char refs[SMOKE_PAGES * 12], *q = refs;
	const uint32_t *ref;
	struct vplat *p;
	uint8_t *base;
	uint32_t port;
	int r, i;

	r = vplat_open(&cfg, &p);
	check("guest-open", r == 0, "%s", strerror(-r));
	if (r)
		return done("guest");
	check("guest-domid", vplat_domid(p) != 0, "domid %u", vplat_domid(p));
	r = vplat_share(p, be, SMOKE_PAGES, 1, &s);
	check("guest-share", r == 0, "%s", strerror(-r));
	if (r)
		goto out_close;
	base = vplat_share_addr(s);
	sr = (struct vrdma_sring *)base;
	check("guest-zeroed", base[0] == 0 && base[SMOKE_PAGES * SMOKE_PG - 1] == 0, " ");
	sr->magic = VRDMA_WIRE_MAGIC;
	sr->version = VRDMA_WIRE_VERSION;
	for (i = 1; i < SMOKE_PAGES; i++)
		page_fill(base, (unsigned)i, 1);
	r = vplat_chan_alloc(p, be, &c, &port);
	check("guest-chan", r == 0, "port %u: %s", port, strerror(-r));
	if (r)
		goto out_unshare;
	check("guest-armed", sr->guest_live == VRDMA_SRING_LIVE, "guest_live=%u",
	      sr->guest_live);
	ref = vplat_share_refs(s);
	for (i = 0; i < SMOKE_PAGES; i++)
		q += sprintf(q, "%s%u", i ? " " : "", ref[i]);
	r = vplat_key_write(p, SMOKE_DIR "/refs", refs);
	if (!r)
		r = vplat_key_printf(p, SMOKE_DIR "/port", "%u", port);
	if (!r)
		r = vplat_key_write(p, SMOKE_DIR "/state", "ready");
	check("guest-publish", r == 0, "refs %s port %u: %s", refs, port, strerror(-r));
	if (r)
		goto out_chan;
	r = vplat_chan_wait(c, SMOKE_WAIT_MS);
	check("guest-kicked", r == 0, "%s", strerror(-r));
	check("guest-sees-dom0", page_has(base, 2, 2), "page 2 pattern from dom0");
	check("guest-dom0-live", sr->dom0_live == VRDMA_SRING_LIVE, "dom0_live=%u",
	      sr->dom0_live);
	r = vplat_notify(c);
	check("guest-notify", r == 0, "%s", strerror(-r));
	guest_limit(p, be);
	r = vplat_key_wait(p, SMOKE_DIR "/cmd", "exit", NULL, SMOKE_WAIT_MS);
	check("guest-watch", r == 0, "cmd=exit: %s", strerror(-r));
	/* Die holding the share: dom0 must notice through the unmap-notify. */
	r = done("guest");
	fflush(NULL);
	_exit(r);

out_chan:
	vplat_chan_close(c);
out_unshare:
	vplat_unshare(s);
out_close:
	vplat_close(p);
	return done("guest");
}

/* ---- dom0 ---- */

static int dom0_read_refs(struct vplat *p, const char *dir, uint32_t *refs)
{
	char val[VPLAT_VAL_MAX], path[VPLAT_KEY_MAX + 8], *s, *end;
	int i, r;

	snprintf(path, sizeof(path), "%s/refs", dir);
	r = vplat_key_read(p, path, val, sizeof(val));
	if (r)
		return r;
	s = val;
	for (i = 0; i < SMOKE_PAGES; i++) {
		errno = 0;
		refs[i] = (uint32_t)strtoul(s, &end, 10);
		if (end == s || errno)
			return -EINVAL;
		s = end;
	}
	return 0;
}

static void dom0_attach(struct vplat *p, uint32_t g)
{
	char path[VPLAT_KEY_MAX + 8], val[VPLAT_VAL_MAX], be[VPLAT_KEY_MAX / 2];
	unsigned n;
	int r;

	vplat_dev_detach(p, "vrdma-smoke", g, 5);	/* leftovers of a run before */
	r = vplat_dev_attach(p, "vrdma-smoke", g, 5);
	check("dom0-attach", r == 0, "%s", strerror(-r));
	snprintf(be, sizeof(be), "/local/domain/0/backend/vrdma-smoke/%u/5", g);
	snprintf(path, sizeof(path), "/local/domain/%u/device/vrdma-smoke/5/backend", g);
	r = vplat_key_read(p, path, val, sizeof(val));
	check("dom0-attach-link", r == 0 && strcmp(val, be) == 0, "%s = %s", path,
	      r ? strerror(-r) : val);
	snprintf(path, sizeof(path), "%s/state", be);
	r = vplat_key_read(p, path, val, sizeof(val));
	check("dom0-attach-state", r == 0 && strcmp(val, "1") == 0, "%s", r ? strerror(-r) : val);
	r = vplat_dev_attach(p, "vrdma-smoke", g, 5);
	check("dom0-attach-twice", r == -EEXIST, "%s", strerror(-r));
	r = vplat_dev_detach(p, "vrdma-smoke", g, 5);
	check("dom0-detach", r == 0, "%s", strerror(-r));
	r = vplat_key_read(p, path, val, sizeof(val));
	check("dom0-detach-gone", r == -ENOENT, "%s", strerror(-r));
	/* A domain that is not there (its home has no domid: destroyed, or
	 * never made): nothing made for it, in one xenstore transaction. */
	r = vplat_dev_attach(p, "vrdma-smoke", 32000, 5);
	check("dom0-attach-no-domain", r == -ESRCH, "%s", strerror(-r));
	r = vplat_key_list(p, "/local/domain/32000", val, sizeof(val), &n);
	check("dom0-attach-no-domain-home", r == -ENOENT, "%s", strerror(-r));
	r = vplat_key_list(p, "/local/domain/0/backend/vrdma-smoke/32000", val, sizeof(val), &n);
	check("dom0-attach-no-domain-be", r == -ENOENT, "%s", strerror(-r));
}

static int dom0(uint32_t g)
{
	struct vplat_cfg cfg = { .role = VPLAT_DOM0_ROLE, .kind = "xen" };
	char dir[VPLAT_KEY_MAX / 2], path[VPLAT_KEY_MAX], list[1024];
	uint32_t refs[SMOKE_PAGES], port;
	volatile struct vrdma_sring *sr;
	struct vplat_map *m;
	struct vplat_chan *c, *bad;
	struct vplat *p;
	unsigned count;
	int64_t deadline;
	uint8_t *base;
	int r;

	r = vplat_open(&cfg, &p);
	check("dom0-open", r == 0, "%s", strerror(-r));
	if (r)
		return done("dom0");
	snprintf(dir, sizeof(dir), "/local/domain/%u/" SMOKE_DIR, g);
	snprintf(path, sizeof(path), "%s/state", dir);
	r = vplat_key_wait(p, path, "ready", NULL, SMOKE_WAIT_MS);
	check("dom0-sees-ready", r == 0, "%s: %s", path, strerror(-r));
	if (r)
		goto out_close;
	r = vplat_key_list(p, dir, list, sizeof(list), &count);
	check("dom0-list", r == 0 && count >= 3, "%u keys: %s", count, strerror(-r));
	r = dom0_read_refs(p, dir, refs);
	snprintf(path, sizeof(path), "%s/port", dir);
	if (!r)
		r = vplat_key_read_u32(p, path, &port);
	check("dom0-keys", r == 0, "%s", strerror(-r));
	if (r)
		goto out_close;
	r = vplat_map(p, g, refs, SMOKE_PAGES, 1, &m);
	check("dom0-map", r == 0, "%s", strerror(-r));
	if (r)
		goto out_close;
	base = vplat_map_addr(m);
	sr = (volatile struct vrdma_sring *)base;
	check("dom0-sees-guest", sr->magic == VRDMA_WIRE_MAGIC && page_has(base, 1, 1) &&
	      page_has(base, 3, 1), "magic %#x", sr->magic);
	check("dom0-live", sr->guest_live == VRDMA_SRING_LIVE, "guest_live=%u", sr->guest_live);
	page_fill(base, 2, 2);
	r = vplat_chan_bind(p, g, port, &c);
	check("dom0-bind", r == 0, "port %u: %s", port, strerror(-r));
	if (r)
		goto out_unmap;
	/* Our liveness for the guest, as vrdmad arms it (gntdev unmap-notify). */
	r = vplat_map_live(m, offsetof(struct vrdma_sring, dom0_live), c);
	check("dom0-arm-live", r == 0, "%s", strerror(-r));
	if (!r)
		sr->dom0_live = VRDMA_SRING_LIVE;
	r = vplat_notify(c);
	check("dom0-notify", r == 0, "%s", strerror(-r));
	r = vplat_chan_wait(c, SMOKE_WAIT_MS);
	check("dom0-kicked", r == 0, "%s", strerror(-r));
	r = vplat_chan_bind(p, g, port + 1000, &bad);
	check("dom0-bind-bad-port", r != 0, "%s", strerror(-r));
	if (r == 0)
		vplat_chan_close(bad);
	snprintf(path, sizeof(path), "%s/cmd", dir);
	r = vplat_key_write(p, path, "exit");
	check("dom0-cmd", r == 0, "%s", strerror(-r));
	/* The guest exits holding its share: byte cleared + an event. */
	deadline = vplat_now_ms() + SMOKE_WAIT_MS;
	while (sr->guest_live == VRDMA_SRING_LIVE && vplat_now_ms() < deadline)
		vplat_chan_wait(c, 1000);
	check("dom0-unmap-notify", sr->guest_live == 0, "guest_live=%u after guest exit",
	      sr->guest_live);
	vplat_chan_close(c);
out_unmap:
	vplat_unmap(m);
	vplat_key_rm(p, dir);
	dom0_attach(p, g);
out_close:
	vplat_close(p);
	return done("dom0");
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "guest") == 0)
		return guest(argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : VPLAT_DOM0);
	if (argc == 3 && strcmp(argv[1], "dom0") == 0)
		return dom0((uint32_t)strtoul(argv[2], NULL, 10));
	fprintf(stderr, "Usage: %s guest [backend-domid] | %s dom0 <guest-domid>\n",
		argv[0], argv[0]);
	return 2;
}
