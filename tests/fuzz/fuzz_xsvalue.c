// SPDX-License-Identifier: MIT
/*
 * libFuzzer: the xenstore values the backend reads (backend/guest/xenbus.c,
 * sched/prio.c, sched/tenant.c, settings/prio_keep.c, node.c), on the
 * stub platform.  Each
 * input starts with one guest's frontend dir holding a valid handshake
 * but its state Initialising; the input is a run of operations
 * [u8 op][u8 which][u8 len][len bytes of value]:
 *
 *   op 0 / 1   write / remove a frontend key (state, protocol-version,
 *              ring orders, ring-pages, event-channel, ring-ref<N>)
 *   op 2       write a backend dir key (frontend, tenant, the operator's
 *              weight ... cmds, coll, state)
 *   op 3       write a tenant limit (dom1, default)
 *   op 4       write the domain's name
 *   op 5       write bytes of the device area's page 0 (magic, version,
 *              orders, liveness)
 *   op 6       a tick
 *   op 7       the toolstack removes the backend dir, or writes it again
 *
 * Then the frontend says Initialised, the node polls, and the frontend
 * closes: nothing may be left mapped or bound.  Every value written to a
 * frontend key also goes through the platform's integer parser, which
 * must accept exactly what docs/wire.md allows (decimal digits, u32).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "vring.h"
#include "vbe.h"
#include "stub_plat.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)	do { if (!(c)) abort(); } while (0)
#define FZ_DOMID	1u
#define FZ_PAGES	37	/* the largest device area (both orders at their max) */

static struct vplat *fz_dom0, *fz_p;
static struct vbe_node *fz_node;
static struct vplat_share *fz_dev;
static struct vplat_chan *fz_ch;
static uint32_t fz_port;
static char fz_fdir[64], fz_bdir[64];
static int64_t fz_now;
static int fz_renew;		/* its tenant or dir changed: a new guest next */

static const char *const fz_fkeys[] = {
	"state", "protocol-version", "req-ring-order", "evt-ring-order", "ring-pages",
	"event-channel",
};
static const char *const fz_bkeys[] = {
	"frontend", "tenant", "weight", "class", "rate", "qps", "mem", "wrs", "credits",
	"cmds", "coll", "state",
};
static const char *const fz_tkeys[] = { "guests", "listeners", "conns", "qps", "mem" };

#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))

static void fz_write(struct vplat *p, const char *dir, const char *key, const char *val)
{
	char path[VPLAT_KEY_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, key);
	vplat_key_write(p, path, val);
}

static void fz_writeu(const char *key, unsigned v)
{
	char val[16];

	snprintf(val, sizeof(val), "%u", v);
	fz_write(fz_p, fz_fdir, key, val);
}

/* docs/wire.md: "Integers are decimal ASCII without sign or leading +". */
static void fz_parse_check(const char *s)
{
	uint64_t ref = 0;
	uint32_t v = 0;
	int ok = s[0] != '\0', rc;
	const char *c;

	for (c = s; *c && ok; c++) {
		ok = *c >= '0' && *c <= '9';
		ref = ref * 10 + (uint64_t)(*c - '0');
		ok = ok && ref <= UINT32_MAX;
	}
	rc = vplat_parse_u32(s, &v);
	CHECK(ok ? rc == 0 && v == ref : rc == -EINVAL);
}

/* The frontend's keys of a default handshake, state Initialising. */
static void fz_front_keys(void)
{
	char key[16];
	uint32_t i, pages = vrdma_sring_pages(VRDMA_REQ_RING_ORDER_DEF,
					      VRDMA_EVT_RING_ORDER_DEF);

	fz_writeu("state", VRDMA_XB_INITIALISING);
	fz_writeu("protocol-version", VRDMA_WIRE_VERSION);
	fz_writeu("req-ring-order", VRDMA_REQ_RING_ORDER_DEF);
	fz_writeu("evt-ring-order", VRDMA_EVT_RING_ORDER_DEF);
	fz_writeu("ring-pages", pages);
	for (i = 0; i < pages; i++) {
		snprintf(key, sizeof(key), "ring-ref%u", i);
		fz_writeu(key, vplat_share_refs(fz_dev)[i]);
	}
	fz_writeu("event-channel", fz_port);
}

/* Each input: the guest closed and its keys as a toolstack and a new
 * frontend process leave them; a new guest after tenant or dir games
 * (it reads its tenant once). */
static void fz_fresh(void)
{
	struct vrdma_sring *sr = vplat_share_addr(fz_dev);
	struct vbe_guest *g;
	unsigned i;

	fz_writeu("state", VRDMA_XB_CLOSED);
	stub_run();
	if (fz_renew) {
		vplat_key_rm(fz_dom0, fz_bdir);
		stub_run();
	}
	vplat_key_rm(fz_p, fz_fdir);
	vplat_key_rm(fz_dom0, VPLAT_TENANT_ROOT);
	vplat_key_rm(fz_dom0, "/local/domain/1/name");
	for (i = 1; i < NELEM(fz_bkeys) - 1; i++) {
		char path[VPLAT_KEY_MAX];

		snprintf(path, sizeof(path), "%s/%s", fz_bdir, fz_bkeys[i]);
		vplat_key_rm(fz_dom0, path);
	}
	memset(fz_node->keep, 0, sizeof(fz_node->keep));
	fz_node->keep_stamp = 0;
	fz_renew = 0;
	memset(sr, 0, VRDMA_PAGE_SIZE);
	sr->magic = VRDMA_WIRE_MAGIC;
	sr->version = VRDMA_WIRE_VERSION;
	sr->req_order = VRDMA_REQ_RING_ORDER_DEF;
	sr->evt_order = VRDMA_EVT_RING_ORDER_DEF;
	sr->guest_live = VRDMA_SRING_LIVE;
	fz_front_keys();
	fz_write(fz_dom0, fz_bdir, "frontend", fz_fdir);
	stub_run();
	g = vbe_node_guest(fz_node, FZ_DOMID, 0);
	CHECK(g && !g->next && g->state == VRDMA_XB_INITWAIT && !g->nmaps && !g->chan);
	CHECK(stub_live_maps() == 0 && stub_live_binds() == 0);
}

static void fz_op(uint8_t op, uint8_t which, const char *val)
{
	char key[VPLAT_KEY_MAX];
	uint8_t *page0 = vplat_share_addr(fz_dev);
	size_t off, n;

	switch (op % 8) {
	case 0:
	case 1:
		if (which < NELEM(fz_fkeys))
			snprintf(key, sizeof(key), "%s", fz_fkeys[which]);
		else
			snprintf(key, sizeof(key), "ring-ref%u",
				 (unsigned)(which - NELEM(fz_fkeys)) % 40);
		if (op % 8 == 0) {
			fz_write(fz_p, fz_fdir, key, val);
			fz_parse_check(val);
		} else {
			char path[VPLAT_KEY_MAX];

			snprintf(path, sizeof(path), "%s/%s", fz_fdir, key);
			vplat_key_rm(fz_p, path);
		}
		break;
	case 2:
		fz_renew |= which % NELEM(fz_bkeys) <= 1;
		fz_write(fz_dom0, fz_bdir, fz_bkeys[which % NELEM(fz_bkeys)], val);
		break;
	case 3:
		snprintf(key, sizeof(key), VPLAT_TENANT_ROOT "/%s",
			 which & 0x80 ? "default" : "dom1");
		fz_write(fz_dom0, key, fz_tkeys[(which & 0x7f) % NELEM(fz_tkeys)], val);
		break;
	case 4:
		vplat_key_write(fz_dom0, "/local/domain/1/name", val);
		break;
	case 5:
		off = which % 16;
		n = strlen(val);
		memcpy(page0 + off, val, n < 16 - off ? n : 16 - off);
		break;
	case 6:
		fz_now += which * 100;
		vbe_node_tick(fz_node, fz_now);
		break;
	default:
		fz_renew = 1;
		if (which & 1)
			vplat_key_rm(fz_dom0, fz_bdir);
		else
			fz_write(fz_dom0, fz_bdir, "frontend", fz_fdir);
		break;
	}
	stub_run();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct vbe_node_cfg cfg = { .node_name = "n1" };

	(void)argc;
	(void)argv;
	if (!getenv("VRDMA_LOG"))
		vlog_level = VLOG_ERR;
	stub_map_cache(64);
	fz_dom0 = stub_open(0);
	cfg.plat = fz_dom0;
	CHECK(!vbe_node_new(&cfg, &fz_node));
	stub_run();
	fz_p = stub_open(FZ_DOMID);
	CHECK(!vplat_share(fz_p, 0, FZ_PAGES, 1, &fz_dev));
	CHECK(!vplat_chan_alloc(fz_p, 0, &fz_ch, &fz_port));
	snprintf(fz_fdir, sizeof(fz_fdir), VRDMA_XS_FRONT_FMT, FZ_DOMID, 0u);
	snprintf(fz_bdir, sizeof(fz_bdir), VRDMA_XS_BACK_FMT, FZ_DOMID, 0u);
	fz_renew = 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char val[64];
	size_t off = 0, n;

	fz_fresh();
	fz_now = 1000000;
	while (off + 3 <= size) {
		uint8_t op = data[off], which = data[off + 1];

		n = data[off + 2] % sizeof(val);
		off += 3;
		n = n < size - off ? n : size - off;
		memcpy(val, data + off, n);
		val[n] = '\0';		/* a value is a string: up to its first NUL */
		off += n;
		fz_op(op, which, val);
	}
	fz_writeu("state", VRDMA_XB_INITIALISED);
	stub_run();
	vbe_node_poll(fz_node);
	fz_writeu("state", VRDMA_XB_CLOSED);
	stub_run();
	CHECK(stub_live_maps() == 0 && stub_live_binds() == 0);
	return 0;
}
