// SPDX-License-Identifier: MIT
/*
 * libFuzzer: the request ring (backend/guest/ring.c, cmd.c, srq.c,
 * backend/cm/cm*.c, backend/local/target_local.c) as two guests of one node on the stub platform drive
 * it.  Each input starts with both guests newly Connected (real shared
 * pages, standard rings), each holding a 16-page buffer and its list page,
 * not yet attached, with CQ headers on pages 0, 4, 8 and 12.  The input is a run of 129-byte records, one control
 * byte then 128 bytes:
 *
 *   control bit 0     guest A or B
 *   control bits 1-2  0 push the 128 bytes as a request ring entry
 *                     1 write guest memory: [u32 offset][u8 len][3][data],
 *                       offset into its device area then buffer pages
 *                     2 move an index by [u8 which][3][s32]: req prod,
 *                       event cons, a CQ's cons
 *                     3 lifecycle: [u8 what][u16 arg] (tick, frontend
 *                       Closing/Closed/Initialised again, process gone,
 *                       arm/disarm, domain destroyed)
 *   control bit 3     patch the entry as a guest would fill it in: an
 *                     lkey/rkey below 16 becomes the key of the nth
 *                     REG_MR answered, ACCEPT's conn_id below 8 the nth
 *                     CONN_REQUEST, MODIFY_QP's empty GID the node's
 *   control bit 4     poll the node after this record
 *   control bit 5     with bit 4: leave events and CQEs unconsumed
 *   control bit 6     instead of the above: another node's vrdmad, on
 *                     the links of the node's first team across nodes
 *                     (backend/coll/chain.c; the guest joins one with a
 *                     list naming n2): [u8 how][3][64-byte vbe_cmsg]
 *                     [60 bytes of payload] put into the next slot of
 *                     the link `how` bit 0 names; bit 1 first takes all
 *                     the node sent (room), bit 2 breaks the link
 *                     instead, bit 3 keeps the header's magic as given,
 *                     bit 4 says the link is up only now (links open
 *                     up unless an earlier record's bit 5 said not),
 *                     bit 6 makes the link's next send fail
 *
 * After the last record the node polls once more and both frontends
 * close: nothing of theirs may be left (objects, listeners, connection
 * requests, mappings, channels, teams and their links).  Memory keys come from a seeded
 * generator (the backend's test hook) and the scheduler runs on the
 * input's clock, so an input replays (connection deadlines come from the
 * platform's clock, which the ticks only move on from).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "vring.h"
#include "vbe.h"
#include "coll/link.h"
#include "stub_plat.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_REC		(1 + sizeof(struct vrdma_req))
#define FZ_PAGES	16
#define FZ_REQ_SIZE	(1u << VRDMA_REQ_RING_ORDER_DEF)
#define FZ_EVT_SIZE	(1u << VRDMA_EVT_RING_ORDER_DEF)
#define FZ_NKEYS	16
#define FZ_NCONNS	8

struct fz_guest {
	uint32_t domid;
	struct vplat *p;
	char fdir[64];
	struct vplat_share *dev, *data, *list;
	struct vrdma_sring *sr;
	struct vplat_chan *ch;
	uint32_t req_prod, evt_cons, ndev, port;
	uint64_t reg_ids[FZ_NKEYS];	/* REG_MRs in flight, by command id */
	unsigned nreg;
};

static struct vplat *fz_dom0;
static struct vbe_node *fz_node;
static struct fz_guest fz_g[2];
static uint32_t fz_keys[FZ_NKEYS];
static uint64_t fz_conns[FZ_NCONNS];
/* Team handles the guests were told of (EVT_TEAM), for OP_COLL. */
static uint32_t fz_teams[FZ_NKEYS];
static unsigned fz_nteams;
static unsigned fz_nkeys, fz_nconns;
static uint64_t fz_rng;
static int64_t fz_now;

#define CHECK(c)	do { if (!(c)) abort(); } while (0)

/* xorshift64: keys that replay with the input. */
static ssize_t fz_fill(void *buf, size_t len, unsigned flags)
{
	uint8_t *p = buf;
	size_t i;

	(void)flags;
	for (i = 0; i < len; i++) {
		fz_rng ^= fz_rng << 13;
		fz_rng ^= fz_rng >> 7;
		fz_rng ^= fz_rng << 17;
		p[i] = (uint8_t)fz_rng;
	}
	return (ssize_t)len;
}

static void fz_key(struct fz_guest *g, const char *key, unsigned v)
{
	char path[128], val[16];

	snprintf(path, sizeof(path), "%s/%s", g->fdir, key);
	snprintf(val, sizeof(val), "%u", v);
	vplat_key_write(g->p, path, val);
}

/* Once per process: the guest's pages and channel (refs count from 1:
 * A's device area 1-10, buffer 11-26, list page 27; B's 28-54). */
static void fz_guest_new(struct fz_guest *g, uint32_t domid)
{
	g->domid = domid;
	g->p = stub_open(domid);
	snprintf(g->fdir, sizeof(g->fdir), VRDMA_XS_FRONT_FMT, domid, 0u);
	g->ndev = vrdma_sring_pages(VRDMA_REQ_RING_ORDER_DEF, VRDMA_EVT_RING_ORDER_DEF);
	CHECK(!vplat_share(g->p, 0, g->ndev, 1, &g->dev));
	CHECK(!vplat_share(g->p, 0, FZ_PAGES, 1, &g->data));
	CHECK(!vplat_share(g->p, 0, 1, 0, &g->list));
	CHECK(!vplat_chan_alloc(g->p, 0, &g->ch, &g->port));
	g->sr = vplat_share_addr(g->dev);
}

/* The toolstack's and the frontend's keys (again after its domain went). */
static void fz_guest_keys(struct fz_guest *g)
{
	char path[128], key[16];
	uint32_t i;

	fz_key(g, "state", VRDMA_XB_INITIALISING);
	fz_key(g, "ring-pages", g->ndev);
	for (i = 0; i < g->ndev; i++) {
		snprintf(key, sizeof(key), "ring-ref%u", i);
		fz_key(g, key, vplat_share_refs(g->dev)[i]);
	}
	fz_key(g, "event-channel", g->port);
	snprintf(path, sizeof(path), VRDMA_XS_BACK_FMT "/frontend", g->domid, 0u);
	vplat_key_write(fz_dom0, path, g->fdir);
	stub_run();
}

/*
 * A table back to a new guest's, writing only the slots ever used: they
 * are a prefix (vbe_slot_take takes the lowest free slot; a freed slot
 * keeps its generation), and a memset of every table faulted in ~700 KiB
 * an input.
 */
#define FZ_RESET(tab, max) do {						\
	uint32_t k_ = 0;						\
	while (k_ < (max) && (tab)[k_].s.gen)				\
		k_++;							\
	memset((tab), 0, k_ * sizeof(*(tab)));				\
} while (0)

/*
 * Each input: a new frontend process of the domain (Closed, then
 * Initialised), on pages as libvrdma leaves them before its first
 * command.  The backend keeps its guest across inputs (a fresh one costs
 * dozens of page faults); its object tables, all free now, are zeroed so
 * handles and keys start as for a new guest.
 */
static void fz_guest_fresh(struct fz_guest *g)
{
	uint8_t *mem = vplat_share_addr(g->data);
	char path[128], val[16];
	struct vbe_guest *bg;
	struct vrdma_cq_hdr *h;
	uint32_t i;

	fz_key(g, "state", VRDMA_XB_CLOSED);
	stub_run();
	bg = vbe_node_guest(fz_node, g->domid, 0);
	if (!bg) {
		fz_guest_keys(g);
		bg = vbe_node_guest(fz_node, g->domid, 0);
	}
	CHECK(bg && bg->state == VRDMA_XB_INITWAIT && !bg->nmaps && !bg->chan);
	CHECK(!bg->nqps && !bg->mr_bytes && !bg->pages && !bg->wr_slots && !bg->nconnq &&
	      !bg->evq.count && !bg->runq.count && !bg->ndirty);
	memset(&bg->sch, 0, sizeof(bg->sch));
	bg->cq_err = false;
	FZ_RESET(bg->bufs, VBE_MAX_BUFS);
	FZ_RESET(bg->pds, VBE_MAX_PDS);
	memset(vbe_key_wtags(bg), 0, VBE_MR_PRE);	/* window tags, key map */
	FZ_RESET(bg->mrs, VBE_MAX_MRS);
	FZ_RESET(bg->cqs, VBE_MAX_CQS);
	FZ_RESET(bg->qps, VBE_MAX_QPS);
	FZ_RESET(bg->srqs, VBE_MAX_SRQS);

	memset(g->sr, 0, (size_t)g->ndev * VRDMA_PAGE_SIZE);
	g->sr->magic = VRDMA_WIRE_MAGIC;
	g->sr->version = VRDMA_WIRE_VERSION;
	g->sr->req_order = VRDMA_REQ_RING_ORDER_DEF;
	g->sr->evt_order = VRDMA_EVT_RING_ORDER_DEF;
	g->sr->guest_live = VRDMA_SRING_LIVE;
	memset(mem, 0, FZ_PAGES * VRDMA_PAGE_SIZE);
	for (i = 0; i < FZ_PAGES; i += 4) {	/* CQs of 64, 1, 4, 64 CQEs */
		h = (struct vrdma_cq_hdr *)(mem + (size_t)i * VRDMA_PAGE_SIZE);
		h->magic = VRDMA_WIRE_MAGIC;
		h->order = (uint32_t[]){ 6, 0, 2, 6 }[i / 4];
	}
	memcpy(vplat_share_addr(g->list), vplat_share_refs(g->data), FZ_PAGES * 4);
	g->req_prod = g->evt_cons = 0;
	g->nreg = 0;
	/* Keys a previous input removed (domain destroyed) come back. */
	snprintf(path, sizeof(path), "%s/event-channel", g->fdir);
	if (vplat_key_read(g->p, path, val, sizeof(val)))
		fz_guest_keys(g);
	fz_key(g, "state", VRDMA_XB_INITIALISED);
	stub_run();
	CHECK(bg->connected && bg->state == VRDMA_XB_CONNECTED);
}

static uint32_t fz_le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* Consume like an honest guest: events (noting keys and connection
 * requests) and every CQ-looking header of the buffer. */
static void fz_drain(struct fz_guest *g)
{
	uint32_t prod = vring_load_acq(&g->sr->evt.prod), i, k;
	struct vrdma_evt *ring = (struct vrdma_evt *)((uint8_t *)g->sr +
				 vring_evt_off(VRDMA_REQ_RING_ORDER_DEF));
	uint8_t *mem = vplat_share_addr(g->data);
	struct vrdma_cq_hdr *h;

	if (!vring_sane(prod, g->evt_cons, FZ_EVT_SIZE))
		g->evt_cons = prod - FZ_EVT_SIZE;
	for (; g->evt_cons != prod; g->evt_cons++) {
		struct vrdma_evt e = ring[g->evt_cons & (FZ_EVT_SIZE - 1)];

		if (e.type == VRDMA_EVT_CONN_REQUEST)
			fz_conns[fz_nconns++ % FZ_NCONNS] = e.id;
		if (e.type == VRDMA_EVT_TEAM)
			fz_teams[fz_nteams++ % FZ_NKEYS] = e.handle;
		if (e.type != VRDMA_EVT_CMD_DONE || e.status != VRDMA_CS_OK)
			continue;
		for (k = 0; k < g->nreg && k < FZ_NKEYS; k++)
			if (g->reg_ids[k] == e.id && fz_nkeys < FZ_NKEYS) {
				fz_keys[fz_nkeys++] = e.u.out[1];
				g->reg_ids[k] = ~0ull;
			}
	}
	vring_consumed(&g->sr->evt, g->evt_cons);
	for (i = 0; i < FZ_PAGES; i++) {
		h = (struct vrdma_cq_hdr *)(mem + (size_t)i * VRDMA_PAGE_SIZE);
		if (h->magic == VRDMA_WIRE_MAGIC)
			vring_consumed(&h->ring, vring_load_acq(&h->ring.prod));
	}
}

static void fz_poll(int drain)
{
	unsigned i;

	vbe_node_poll(fz_node);
	for (i = 0; drain && i < 2; i++)
		fz_drain(&fz_g[i]);
}

static void fz_patch(struct vrdma_req *r)
{
	unsigned i;

	if (r->opcode >= VRDMA_OP_SEND && r->opcode <= VRDMA_OP_SRQ_RECV) {
		for (i = 0; i < VRDMA_WR_SGE; i++)
			if (r->u.wr.sge[i].lkey < fz_nkeys)
				r->u.wr.sge[i].lkey = fz_keys[r->u.wr.sge[i].lkey];
		if (r->u.wr.rkey < fz_nkeys)
			r->u.wr.rkey = fz_keys[r->u.wr.rkey];
		/* A UD send's empty GID with a QPN: this node's */
		if (r->u.wr.ud.remote_qpn && !r->u.wr.remote_addr && !r->u.wr.compare_add)
			memcpy(r->u.wr.ud.dgid, fz_node->gid, 16);
	} else if (r->opcode == VRDMA_OP_COLL) {
		for (i = 0; i < 2; i++)
			if (r->u.coll.sge[i].lkey < fz_nkeys)
				r->u.coll.sge[i].lkey = fz_keys[r->u.coll.sge[i].lkey];
		if (r->handle < FZ_NKEYS && r->handle < fz_nteams)
			r->handle = fz_teams[r->handle];
	} else if (r->opcode == VRDMA_CMD_TEAM_JOIN && r->u.team_join.list_lkey < fz_nkeys) {
		r->u.team_join.list_lkey = fz_keys[r->u.team_join.list_lkey];
	} else if (r->opcode == VRDMA_CMD_ACCEPT && r->u.accept.conn_id < FZ_NCONNS) {
		r->u.accept.conn_id = fz_conns[r->u.accept.conn_id];
	} else if (r->opcode == VRDMA_CMD_MODIFY_QP && !r->u.modify_qp.dest_gid[0]) {
		memcpy(r->u.modify_qp.dest_gid, fz_node->gid, 16);
	}
}

static void fz_push(struct fz_guest *g, const uint8_t *e, int patch)
{
	struct vrdma_req *ring = (struct vrdma_req *)((uint8_t *)g->sr + vring_req_off());
	struct vrdma_req r;

	memcpy(&r, e, sizeof(r));
	if (patch)
		fz_patch(&r);
	if (r.opcode == VRDMA_CMD_REG_MR)
		g->reg_ids[g->nreg++ % FZ_NKEYS] = r.id;
	/* A full ring: let the backend take some first. */
	if (g->req_prod - vring_load_acq(&g->sr->req.cons) >= FZ_REQ_SIZE)
		fz_poll(1);
	ring[g->req_prod++ & (FZ_REQ_SIZE - 1)] = r;
	vring_store_rel(&g->sr->req.prod, g->req_prod);
}

static void fz_poke(struct fz_guest *g, const uint8_t *e)
{
	size_t dev = (size_t)g->ndev * VRDMA_PAGE_SIZE, all = dev + FZ_PAGES * VRDMA_PAGE_SIZE;
	size_t off = fz_le32(e) % all, n = e[4] % 120u + 1;
	uint8_t *p;

	if (off < dev)
		p = (uint8_t *)g->sr + off, n = n < dev - off ? n : dev - off;
	else
		p = (uint8_t *)vplat_share_addr(g->data) + (off - dev),
		n = n < all - off ? n : all - off;
	memcpy(p, e + 8, n);
}

static void fz_index(struct fz_guest *g, const uint8_t *e)
{
	uint32_t d = fz_le32(e + 4);
	struct vrdma_cq_hdr *h;

	switch (e[0] % 3) {
	case 0:
		g->req_prod += d;
		vring_store_rel(&g->sr->req.prod, g->req_prod);
		break;
	case 1:
		vring_consumed(&g->sr->evt, g->sr->evt.cons + d);
		break;
	default:
		h = (struct vrdma_cq_hdr *)((uint8_t *)vplat_share_addr(g->data) +
					    (size_t)(e[1] % FZ_PAGES) * VRDMA_PAGE_SIZE);
		vring_consumed(&h->ring, h->ring.cons + d);
		break;
	}
}

static void fz_life(struct fz_guest *g, const uint8_t *e)
{
	unsigned arg = e[1] | e[2] << 8;

	switch (e[0] % 7) {
	case 0:
		fz_now += arg * 10;
		vbe_node_tick(fz_node, fz_now);
		break;
	case 1:
		fz_key(g, "state", VRDMA_XB_CLOSING);
		break;
	case 2:
		fz_key(g, "state", VRDMA_XB_CLOSED);
		break;
	case 3:		/* a new frontend process: fresh rings, same keys */
		memset(&g->sr->req, 0, sizeof(g->sr->req));
		memset(&g->sr->evt, 0, sizeof(g->sr->evt));
		g->req_prod = g->evt_cons = 0;
		g->sr->guest_live = VRDMA_SRING_LIVE;
		fz_key(g, "state", VRDMA_XB_INITIALISED);
		break;
	case 4:		/* its process died: the unmap-notify's byte */
		g->sr->guest_live = 0;
		break;
	case 5:
		if (arg & 1)
			vbe_node_arm(fz_node);
		else
			vbe_node_disarm(fz_node);
		vbe_node_fd_ready(fz_node, vplat_chan_fd(g->ch));
		break;
	default:	/* domain destroyed: its directory goes */
		vplat_key_rm(g->p, g->fdir);
		break;
	}
	stub_run();
}

/* The scheduler's clock: the ticks' time, so an input replays exactly. */
/* ---- the other nodes of teams across nodes (control bit 6) ---- */

static unsigned fz_lopen, fz_lclose;
static bool fz_lk_late, fz_lk_fail;	/* links open not up; a send fails */

static int fz_lk_open(struct vbe_node *n, struct vbe_team *t, enum vbe_cl_dir dir,
		      const char *peer, struct vbe_clink **out)
{
	struct vbe_clink *l = calloc(1, sizeof(*l));

	(void)n;
	(void)peer;
	CHECK(l);
	l->t = t;
	l->dir = (uint8_t)dir;
	l->in = calloc(VBE_CL_SLOTS, VBE_CL_SLOT);
	l->out = calloc(VBE_CL_SLOTS, VBE_CL_SLOT);
	CHECK(l->in && l->out);
	l->up = !fz_lk_late;
	fz_lopen++;
	*out = l;
	return 0;
}

/* What the node sends keeps to the link's rules. */
static int fz_lk_send(struct vbe_clink *l, uint32_t len)
{
	CHECK(l->sent - l->peer_used < VBE_CL_SLOTS && len <= VBE_CL_CHUNK && !l->down && l->up);
	if (fz_lk_fail) {
		fz_lk_fail = false;
		l->down = true;
		return -EIO;
	}
	return 0;
}

static void fz_lk_consumed(struct vbe_clink *l)
{
	CHECK(l->used <= l->got);
}

static void fz_lk_close(struct vbe_clink *l)
{
	free(l->in);
	free(l->out);
	free(l);
	fz_lclose++;
}

static const struct vbe_clink_ops fz_lk_ops = {
	fz_lk_open, fz_lk_send, fz_lk_consumed, fz_lk_close,
};

static void fz_peer(const uint8_t *e)
{
	struct vbe_team *t = fz_node->coll->spans;
	struct vbe_clink *l = t ? t->span->l[e[0] & 1] : NULL;
	uint8_t *slot;

	fz_lk_late = e[0] & 0x20;
	fz_lk_fail |= !!(e[0] & 0x40);
	if (!l)
		return;
	if ((e[0] & 0x10) && !l->up) {
		l->up = true;
		vbe_chain_link_state(l);
	}
	if (e[0] & 2)
		l->peer_used = l->sent;
	if (e[0] & 4) {
		l->down = true;
		vbe_chain_link_state(l);
		return;
	}
	if (l->got - l->used >= VBE_CL_SLOTS)
		return;		/* a transport never overfills */
	slot = l->in + (l->got % VBE_CL_SLOTS) * VBE_CL_SLOT;
	memcpy(slot, e + 4, 124);
	if (!(e[0] & 8))
		((struct vbe_cmsg *)slot)->magic = VBE_CL_MAGIC;
	l->got++;
	vbe_chain_kick(l);
}

static int64_t fz_clock(void)
{
	return fz_now * 1000;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct vbe_node_cfg cfg = { .node_name = "n1" };
	unsigned i;

	(void)argc;
	(void)argv;
	if (!getenv("VRDMA_LOG"))
		vlog_level = VLOG_ERR;
	stub_map_cache(64);
	fz_dom0 = stub_open(0);
	cfg.plat = fz_dom0;
	CHECK(!vbe_node_new(&cfg, &fz_node));
	fz_node->rng.fill = fz_fill;
	fz_node->clock_us = fz_clock;
	/* Budgets a short input can use up (as test_backend_fair does):
	 * leftover requests and WRs wait for the next poll. */
	fz_node->poll_reqs = 16;
	fz_node->poll_wrs = 4;
	fz_node->poll_bytes = 16384;
	fz_node->coll->links = &fz_lk_ops;
	stub_run();
	for (i = 0; i < 2; i++)
		fz_guest_new(&fz_g[i], i + 1);
	return 0;
}

/* Slots of a table in use, among those ever used (FZ_RESET). */
#define FZ_USED(tab, max) ({						\
	uint32_t k_, u_ = 0;						\
	for (k_ = 0; k_ < (max) && (tab)[k_].s.gen; k_++)		\
		u_ += (tab)[k_].s.used;					\
	u_;								\
})

/*
 * Between inputs every guest is closed: nothing may be left anywhere.
 * vbe_node_census's counts, with the tables read up to their last slot
 * ever used (a full census read ~1.4 MiB an input).
 */
static void fz_node_clean(void)
{
	struct vbe_guest *g;
	unsigned i;

	CHECK(!vbe_vx_pending(fz_node) && !fz_node->dev_bytes);
	for (i = 0; i < VBE_MAX_LISTENERS; i++)
		CHECK(!fz_node->lis[i].s.used);
	for (g = fz_node->guests; g; g = g->next)
		CHECK(!g->nmaps && !g->chan && !g->sch.credits_used);
	for (g = fz_node->guests; g; g = g->next)
		CHECK(!g->qps || (!FZ_USED(g->qps, VBE_MAX_QPS) && !FZ_USED(g->mrs, VBE_MAX_MRS) &&
				  !FZ_USED(g->cqs, VBE_MAX_CQS) && !FZ_USED(g->pds, VBE_MAX_PDS) &&
				  !FZ_USED(g->bufs, VBE_MAX_BUFS) &&
				  !FZ_USED(g->srqs, VBE_MAX_SRQS)));
	for (i = 0; i < VBE_MAX_CONNS; i++)
		CHECK(!fz_node->conns[i].id);
	CHECK(!fz_node->coll || (!fz_node->coll->nteams && !fz_node->coll->run &&
				 !fz_node->coll->nspans && fz_lopen == fz_lclose));
	CHECK(stub_live_maps() == 0 && stub_live_binds() == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off;
	unsigned i;

	for (i = 0; i < 2; i++)
		fz_guest_fresh(&fz_g[i]);
	/* What a fresh node hands out (QP numbers, conn ids, listeners, keys)
	 * and its scheduler's state; the hint of binding QPs is recounted at
	 * a tick, and none are left. */
	fz_node->next_qpn = 1;
	fz_node->next_conn_id = 0;
	memset(fz_node->lis, 0, sizeof(fz_node->lis));
	fz_node->rng.left = 0;
	fz_node->rr = fz_node->sch_round = fz_node->vwaiting = 0;
	memset(fz_node->starve, 0, sizeof(fz_node->starve));
	memset(fz_node->busy_round, 0, sizeof(fz_node->busy_round));
	fz_rng = 0x9e3779b97f4a7c15ull;
	fz_nkeys = fz_nconns = fz_nteams = 0;
	fz_lk_late = fz_lk_fail = false;
	/* Deadlines are taken from the platform's clock; ticks move on from it. */
	fz_now = vplat_now_ms();
	fz_node->rate_mark_ms = fz_now;

	for (off = 0; off + FZ_REC <= size; off += FZ_REC) {
		const uint8_t c = data[off], *e = data + off + 1;
		struct fz_guest *g = &fz_g[c & 1];

		if (c & 0x40) {
			fz_peer(e);
			if (c & 0x10)
				fz_poll(!(c & 0x20));
			continue;
		}
		switch (c >> 1 & 3) {
		case 0:
			fz_push(g, e, c & 8);
			break;
		case 1:
			fz_poke(g, e);
			break;
		case 2:
			fz_index(g, e);
			break;
		default:
			fz_life(g, e);
			break;
		}
		if (c & 0x10)
			fz_poll(!(c & 0x20));
	}
	fz_poll(1);
	for (i = 0; i < 2; i++) {
		fz_key(&fz_g[i], "state", VRDMA_XB_CLOSED);
		stub_run();
	}
	fz_node_clean();
	return 0;
}
