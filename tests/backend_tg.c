// SPDX-License-Identifier: MIT
/* Fake guests for the backend's Check suites (backend_tg.h). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_tg.h"
#include "../backend/vout.h"

struct vplat *dom0;
struct vbe_node *node;
bool tg_conn_from;

void tg_setup(void)
{
	struct vbe_node_cfg cfg = { .node_name = "n1" };

	dom0 = stub_open(0);
	cfg.plat = dom0;
	ck_assert_int_eq(vbe_node_new(&cfg, &node), 0);
	stub_run();
}

void tg_teardown(void)
{
	vbe_node_free(node);
	ck_assert_uint_eq(stub_live_maps(), 0);
	ck_assert_uint_eq(stub_live_binds(), 0);
	vplat_close(dom0);
	stub_reset();
}

int back_state(struct tg *g)
{
	char path[256];
	uint32_t v = 0;

	snprintf(path, sizeof(path), "%s/state", g->bdir);
	if (vplat_key_read_u32(dom0, path, &v))
		return -1;
	return (int)v;
}

/* Toolstack + frontend up to InitWait. */
void tg_start(struct tg *g, uint32_t domid)
{
	char path[256];

	memset(g, 0, sizeof(*g));
	g->domid = domid;
	g->p = stub_open(domid);
	snprintf(g->fdir, sizeof(g->fdir), VRDMA_XS_FRONT_FMT, domid, 0u);
	snprintf(g->bdir, sizeof(g->bdir), VRDMA_XS_BACK_FMT, domid, 0u);
	snprintf(path, sizeof(path), "%s/state", g->fdir);
	vplat_key_write(g->p, path, "1");
	snprintf(path, sizeof(path), "%s/frontend", g->bdir);
	vplat_key_write(dom0, path, g->fdir);
	stub_run();
	ck_assert_int_eq(back_state(g), VRDMA_XB_INITWAIT);
}


void fkey(struct tg *g, const char *key, unsigned v)
{
	char path[256], val[32];

	snprintf(path, sizeof(path), "%s/%s", g->fdir, key);
	snprintf(val, sizeof(val), "%u", v);
	vplat_key_write(g->p, path, val);
}

void tg_handshake(struct tg *g, enum hs how)
{
	uint32_t pages = vrdma_sring_pages(VRDMA_REQ_RING_ORDER_DEF, VRDMA_EVT_RING_ORDER_DEF);
	uint32_t port, i, stride = how == HS_SCATTER ? 2 : 1;
	char key[32];

	ck_assert_int_eq(vplat_share(g->p, 0, stride * pages, 1, &g->dev), 0);
	g->sr = vplat_share_addr(g->dev);
	g->sr->magic = how == HS_BADMAGIC ? 0xdeadbeef : VRDMA_WIRE_MAGIC;
	g->sr->version = VRDMA_WIRE_VERSION;
	g->sr->req_order = VRDMA_REQ_RING_ORDER_DEF;
	g->sr->evt_order = VRDMA_EVT_RING_ORDER_DEF;
	g->req = (struct vrdma_req *)((uint8_t *)g->sr + vring_req_off());
	g->evt = (struct vrdma_evt *)((uint8_t *)g->sr + vring_evt_off(VRDMA_REQ_RING_ORDER_DEF));
	ck_assert_int_eq(vplat_chan_alloc(g->p, 0, &g->ch, &port), 0);
	fkey(g, "protocol-version", how == HS_BADVER ? 2 : VRDMA_WIRE_VERSION);
	fkey(g, "req-ring-order", how == HS_BIGORDER ? 11 : VRDMA_REQ_RING_ORDER_DEF);
	fkey(g, "evt-ring-order", VRDMA_EVT_RING_ORDER_DEF);
	fkey(g, "ring-pages", how == HS_BADPAGES ? pages + 1 : pages);
	for (i = 0; i < pages; i++) {
		snprintf(key, sizeof(key), "ring-ref%u", i);
		fkey(g, key, how == HS_BADREF && i == 3 ? 999999 :
			     vplat_share_refs(g->dev)[stride * i]);
	}
	fkey(g, "event-channel", port);
	if (tg_conn_from)
		fkey(g, "feature-conn-from", 1);
	fkey(g, "state", VRDMA_XB_INITIALISED);
	stub_run();
}

void tg_stop(struct tg *g)
{
	if (g->ch)
		vplat_chan_close(g->ch);
	if (g->dev)
		vplat_unshare(g->dev);
	if (g->data)
		vplat_unshare(g->data);
	if (g->list)
		vplat_unshare(g->list);
	vplat_close(g->p);
	g->ch = NULL;
	g->dev = g->data = g->list = NULL;
}

/* ---- requests and events ---- */

void tg_push(struct tg *g, const struct vrdma_req *r)
{
	g->req[g->req_prod & ((1u << VRDMA_REQ_RING_ORDER_DEF) - 1)] = *r;
	g->req_prod++;
	vring_store_rel(&g->sr->req.prod, g->req_prod);
}

void tg_events(struct tg *g)
{
	uint32_t prod = vring_load_acq(&g->sr->evt.prod);

	while (g->evt_cons != prod) {
		struct vrdma_evt e = g->evt[g->evt_cons & ((1u << VRDMA_EVT_RING_ORDER_DEF) - 1)];

		g->evt_cons++;
		if (e.type == VRDMA_EVT_CMD_DONE)
			g->done = e;
		else if (g->nasync < 64)
			g->async[g->nasync++] = e;
	}
	vring_consumed(&g->sr->evt, g->evt_cons);
}

void pump(struct tg **gs, unsigned n)
{
	unsigned i;

	vbe_node_poll(node);
	for (i = 0; i < n; i++)
		if (gs[i] && gs[i]->sr)
			tg_events(gs[i]);
}

/* One command; returns its status, or -1 if no CMD_DONE came back. */
int tg_cmd(struct tg *g, struct vrdma_req *r, uint32_t *out)
{
	r->id = ++g->next_id + 1000;
	memset(&g->done, 0, sizeof(g->done));
	tg_push(g, r);
	vbe_node_poll(node);
	tg_events(g);
	if (g->done.type != VRDMA_EVT_CMD_DONE || g->done.id != r->id)
		return -1;
	if (out)
		memcpy(out, g->done.u.out, sizeof(g->done.u.out));
	return g->done.status;
}

struct vrdma_req mkreq(uint8_t op, uint32_t handle)
{
	struct vrdma_req r;

	memset(&r, 0, sizeof(r));
	r.opcode = op;
	r.handle = handle;
	return r;
}

int tg_attach(struct tg *g, uint32_t npages, uint32_t *buf)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_ATTACH_BUF, 0);
	uint32_t nlist = (npages + VRDMA_REFS_PER_PAGE - 1) / VRDMA_REFS_PER_PAGE, i, out[4];
	int st;

	ck_assert_int_eq(vplat_share(g->p, 0, npages, 1, &g->data), 0);
	ck_assert_int_eq(vplat_share(g->p, 0, nlist, 0, &g->list), 0);
	memcpy(vplat_share_addr(g->list), vplat_share_refs(g->data), npages * 4);
	r.u.attach_buf.npages = npages;
	r.u.attach_buf.nlist = (uint16_t)nlist;
	r.u.attach_buf.writable = 1;
	for (i = 0; i < nlist; i++)
		r.u.attach_buf.list_ref[i] = vplat_share_refs(g->list)[i];
	st = tg_cmd(g, &r, out);
	*buf = out[0];
	g->mem = vplat_share_addr(g->data);
	return st;
}

int tg_reg_mr(struct tg *g, uint64_t off, uint64_t len, uint32_t acc, uint32_t *out)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_REG_MR, 0);

	r.u.reg_mr.pd = g->pd;
	r.u.reg_mr.buf = g->buf;
	r.u.reg_mr.offset = off;
	r.u.reg_mr.length = len;
	r.u.reg_mr.iova = IOVA + off;
	r.u.reg_mr.access = acc;
	return tg_cmd(g, &r, out);
}

int tg_create_qp(struct tg *g, uint32_t cq, uint32_t *out)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_CREATE_QP, 0);

	r.u.create_qp.pd = g->pd;
	r.u.create_qp.send_cq = cq;
	r.u.create_qp.recv_cq = cq;
	r.u.create_qp.max_send_wr = DEPTH;
	r.u.create_qp.max_recv_wr = DEPTH;
	r.u.create_qp.max_sge = VRDMA_MAX_SGE;
	return tg_cmd(g, &r, out);
}

/* Connected guest with a buffer, PD, CQ (pages 0-1), MR over all, one QP. */
void tg_full(struct tg *g, uint32_t domid)
{
	struct vrdma_req r;
	uint32_t out[4];

	tg_start(g, domid);
	tg_handshake(g, HS_GOOD);
	ck_assert_int_eq(back_state(g), VRDMA_XB_CONNECTED);
	ck_assert_int_eq(tg_attach(g, BUF_PAGES, &g->buf), VRDMA_CS_OK);
	r = mkreq(VRDMA_CMD_ALLOC_PD, 0);
	ck_assert_int_eq(tg_cmd(g, &r, out), VRDMA_CS_OK);
	g->pd = out[0];
	g->cqh = (struct vrdma_cq_hdr *)g->mem;
	g->cqh->magic = VRDMA_WIRE_MAGIC;
	g->cqh->order = CQ_ORDER;
	g->cqe = (struct vrdma_cqe *)(g->mem + VRDMA_PAGE_SIZE);
	r = mkreq(VRDMA_CMD_CREATE_CQ, 0);
	r.u.create_cq.buf = g->buf;
	r.u.create_cq.page = 0;
	r.u.create_cq.order = CQ_ORDER;
	ck_assert_int_eq(tg_cmd(g, &r, out), VRDMA_CS_OK);
	g->cq = out[0];
	ck_assert_int_eq(tg_reg_mr(g, 0, BUF_PAGES * VRDMA_PAGE_SIZE, VRDMA_ACC_ALL, out),
			 VRDMA_CS_OK);
	g->mr = out[0];
	g->key = out[1];
	ck_assert_int_eq(tg_create_qp(g, g->cq, out), VRDMA_CS_OK);
	g->qp = out[0];
	g->qpn = out[1];
}

int tg_poll_cq(struct tg *g, struct vrdma_cqe *c)
{
	uint32_t prod = vring_load_acq(&g->cqh->ring.prod);

	if (g->cq_cons == prod)
		return 0;
	*c = g->cqe[g->cq_cons & ((1u << CQ_ORDER) - 1)];
	g->cq_cons++;
	vring_consumed(&g->cqh->ring, g->cq_cons);
	return 1;
}

/* a's QP connects to b's QP through a listener of b. */
void tg_connect(struct tg *a, struct tg *b)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_LISTEN, 0);
	struct tg *gs[2] = { a, b };
	uint32_t out[4], lis;
	uint64_t conn;

	snprintf(r.u.listen.service, sizeof(r.u.listen.service), "svc%u", b->domid);
	ck_assert_int_eq(tg_cmd(b, &r, out), VRDMA_CS_OK);
	lis = out[0];
	r = mkreq(VRDMA_CMD_CONNECT, a->qp);
	snprintf(r.u.connect.service, sizeof(r.u.connect.service), "svc%u", b->domid);
	memcpy(r.u.connect.pdata, "hello", 5);
	r.u.connect.pdata_len = 5;
	ck_assert_int_eq(tg_cmd(a, &r, NULL), VRDMA_CS_OK);
	pump(gs, 2);
	ck_assert_uint_ge(b->nasync, 1);
	ck_assert_int_eq(b->async[b->nasync - 1].type, VRDMA_EVT_CONN_REQUEST);
	ck_assert_uint_eq(b->async[b->nasync - 1].handle, lis);
	ck_assert_uint_eq(b->async[b->nasync - 1].u.conn.peer_qpn, a->qpn);
	ck_assert_mem_eq(b->async[b->nasync - 1].u.conn.pdata, "hello", 5);
	conn = b->async[b->nasync - 1].id;
	r = mkreq(VRDMA_CMD_ACCEPT, b->qp);
	r.u.accept.conn_id = conn;
	memcpy(r.u.accept.pdata, "world", 5);
	r.u.accept.pdata_len = 5;
	ck_assert_int_eq(tg_cmd(b, &r, out), VRDMA_CS_OK);
	ck_assert_uint_eq(out[0], a->qpn);
	pump(gs, 2);
	ck_assert_int_eq(a->async[a->nasync - 1].type, VRDMA_EVT_CONNECTED);
	ck_assert_uint_eq(a->async[a->nasync - 1].u.conn.peer_qpn, b->qpn);
	ck_assert_mem_eq(a->async[a->nasync - 1].u.conn.pdata, "world", 5);
}

struct vrdma_req mkwr(struct tg *g, uint8_t op, uint16_t flags, uint64_t id)
{
	struct vrdma_req r = mkreq(op, g->qp);

	r.flags = flags;
	r.id = id;
	return r;
}

void add_sge(struct vrdma_req *r, uint64_t off, uint32_t len, uint32_t key)
{
	r->u.wr.sge[r->num_sge].addr = IOVA + off;
	r->u.wr.sge[r->num_sge].length = len;
	r->u.wr.sge[r->num_sge].lkey = key;
	r->num_sge++;
}

void post(struct tg *g, struct vrdma_req *r)
{
	tg_push(g, r);
	vbe_node_poll(node);
}

struct vrdma_cqe expect_cqe(struct tg *g, uint64_t id, uint8_t status)
{
	struct vrdma_cqe c;

	ck_assert_msg(tg_poll_cq(g, &c), "no CQE for wr %llu", (unsigned long long)id);
	ck_assert_uint_eq(c.wr_id, id);
	ck_assert_uint_eq(c.status, status);
	return c;
}

void expect_no_cqe(struct tg *g)
{
	struct vrdma_cqe c;

	ck_assert(!tg_poll_cq(g, &c));
}

/* A's WRITE of 64 bytes into B: the health check after each bad guest. */
void write_works(struct tg *a, struct tg *b)
{
	struct vrdma_req r = mkwr(a, VRDMA_OP_WRITE, VRDMA_WR_F_SIGNALED, 77);
	unsigned i;

	for (i = 0; i < 64; i++)
		a->mem[DATA_OFF + i] = (uint8_t)(i * 7 + a->domid);
	add_sge(&r, DATA_OFF, 64, a->key);
	r.u.wr.remote_addr = IOVA + DATA_OFF + 4096;
	r.u.wr.rkey = b->key;
	post(a, &r);
	expect_cqe(a, 77, VRDMA_WS_SUCCESS);
	ck_assert_mem_eq(b->mem + DATA_OFF + 4096, a->mem + DATA_OFF, 64);
}

/* The node's GID as g reads it from its backend dir (MODIFY_QP RTR). */
void node_gid(struct tg *g, uint8_t gid[16])
{
	char path[256], hex[64];
	unsigned i, v;

	snprintf(path, sizeof(path), "%s/node-gid", g->bdir);
	ck_assert_int_eq(vplat_key_read(g->p, path, hex, sizeof(hex)), 0);
	ck_assert_uint_eq(strlen(hex), 32);
	for (i = 0; i < 16; i++) {
		ck_assert_int_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
		gid[i] = (uint8_t)v;
	}
}

static struct vout tg_vout;

struct vout *tg_out(bool json)
{
	ck_assert_int_eq(vout_init(&tg_vout, json), 0);
	return &tg_vout;
}

void tg_out_end(char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "w");

	ck_assert_ptr_nonnull(f);
	vout_finish(&tg_vout, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* ---- tenants (test_backend_fair.c, test_backend_share.c) ---- */

void tg_tenant(struct tg *g, uint32_t domid, const char *tenant)
{
	char path[256];

	if (tenant) {
		snprintf(path, sizeof(path), VRDMA_XS_BACK_FMT "/tenant", domid, 0u);
		ck_assert_int_eq(vplat_key_write(dom0, path, tenant), 0);
	}
	tg_full(g, domid);
}

/* Its buffer's first npages pages attached once more, as another buffer
 * (tg_attach would share new pages over g's). */
int tg_reattach(struct tg *g, uint32_t npages, uint32_t *buf)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_ATTACH_BUF, 0);
	uint32_t out[4];
	int st;

	r.u.attach_buf.npages = npages;
	r.u.attach_buf.nlist = 1;
	r.u.attach_buf.writable = 1;
	r.u.attach_buf.list_ref[0] = vplat_share_refs(g->list)[0];
	st = tg_cmd(g, &r, out);
	*buf = out[0];
	return st;
}

void tenant_limit(const char *tenant, const char *key, unsigned v)
{
	char path[256], val[16];

	snprintf(path, sizeof(path), VPLAT_TENANT_ROOT "/%s/%s", tenant, key);
	snprintf(val, sizeof(val), "%u", v);
	ck_assert_int_eq(vplat_key_write(dom0, path, val), 0);
	stub_run();
}

/* ---- connections by service (test_backend_fair.c, test_backend_share.c) ---- */

/* Read g's events (and those tg_cmd kept) until two polls bring nothing
 * new; count by type. */
void tg_drain(struct tg *g, struct tally *t)
{
	unsigned quiet = 0, round, i;

	for (round = 0; round < 100 && quiet < 2; round++) {
		tg_events(g);
		quiet = g->nasync ? 0 : quiet + 1;
		for (i = 0; i < g->nasync; i++) {
			const struct vrdma_evt *e = &g->async[i];

			if (e->type == VRDMA_EVT_CONN_REQUEST)
				t->conn_req++;
			if (e->type == VRDMA_EVT_QP_ERROR) {
				t->qp_error++;
				t->qp_error_handle = e->handle;
			}
			if (e->type == VRDMA_EVT_REJECTED) {
				t->rejected++;
				t->refused += e->status == VRDMA_CS_REFUSED;
			}
		}
		g->nasync = 0;
		vbe_node_poll(node);
	}
	g->nasync = 0;
}

int tg_connect_to(struct tg *g, uint32_t qp, const char *svc)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_CONNECT, qp);

	snprintf(r.u.connect.service, sizeof(r.u.connect.service), "%s", svc);
	return tg_cmd(g, &r, NULL);
}

int tg_listen_on(struct tg *g, const char *svc, uint32_t *lis)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_LISTEN, 0);
	uint32_t out[4];
	int st;

	snprintf(r.u.listen.service, sizeof(r.u.listen.service), "%s", svc);
	st = tg_cmd(g, &r, out);
	if (lis)
		*lis = out[0];
	return st;
}

/* Every QP of attacker g (its own plus n - 1 new ones) connects to svc. */
void tg_flood(struct tg *g, unsigned n, const char *svc, int want)
{
	uint32_t out[4];
	unsigned i;

	ck_assert_int_eq(tg_connect_to(g, g->qp, svc), want);
	for (i = 1; i < n; i++) {
		ck_assert_int_eq(tg_create_qp(g, g->cq, out), VRDMA_CS_OK);
		ck_assert_int_eq(tg_connect_to(g, out[0], svc), want);
	}
}

uint32_t tg_ud_qp(struct tg *g, uint32_t srq, uint32_t qkey, uint32_t *qpn)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_CREATE_QP, 0);
	uint32_t out[4];

	r.u.create_qp.pd = g->pd;
	r.u.create_qp.send_cq = g->cq;
	r.u.create_qp.recv_cq = g->cq;
	r.u.create_qp.max_send_wr = DEPTH;
	r.u.create_qp.max_recv_wr = srq ? 0 : DEPTH;
	r.u.create_qp.max_sge = 2;
	r.u.create_qp.srq = srq;
	r.u.create_qp.type = VRDMA_QP_TYPE_UD;
	ck_assert_int_eq(tg_cmd(g, &r, out), VRDMA_CS_OK);
	r = mkreq(VRDMA_CMD_MODIFY_QP, out[0]);
	r.u.modify_qp.state = VRDMA_MQ_UD_RTS;
	r.u.modify_qp.qkey = qkey;
	ck_assert_int_eq(tg_cmd(g, &r, NULL), VRDMA_CS_OK);
	*qpn = out[1];
	return out[0];
}

void tg_push_recv(struct tg *g, uint32_t qp, uint64_t id, uint64_t off, uint32_t len)
{
	struct vrdma_req r = mkreq(VRDMA_OP_RECV, qp);

	r.id = id;
	add_sge(&r, off, len, g->key);
	tg_push(g, &r);
}

void tg_push_ud(struct tg *g, uint32_t qp, uint64_t id, uint32_t len, const uint8_t gid[16],
		uint32_t qpn, uint32_t qkey)
{
	struct vrdma_req r = mkreq(VRDMA_OP_SEND, qp);

	r.flags = VRDMA_WR_F_SIGNALED;
	r.id = id;
	memcpy(r.u.wr.ud.dgid, gid, 16);
	r.u.wr.ud.remote_qpn = qpn;
	r.u.wr.ud.remote_qkey = qkey;
	add_sge(&r, DATA_OFF, len, g->key);
	tg_push(g, &r);
}
