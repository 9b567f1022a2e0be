// SPDX-License-Identifier: MIT
/*
 * The commands of wire.h.  Each one answers with exactly one
 * VRDMA_EVT_CMD_DONE: id echoed, handle = the request's handle,
 * status = VRDMA_CS_*, and on success:
 *
 *   ATTACH_BUF   out[0] buffer handle, out[1] npages
 *   ALLOC_PD     out[0] pd handle
 *   REG_MR       out[0] mr handle, out[1] lkey, out[2] rkey
 *   CREATE_CQ    out[0] cq handle, out[1] number of CQEs
 *   CREATE_QP    out[0] qp handle, out[1] qp_num
 *   CREATE_SRQ   out[0] srq handle
 *   LISTEN       out[0] listener handle (EXIST: taken in its tenant group)
 *   CONNECT      nothing (CONNECTED / REJECTED follow; no listener or an
 *                ambiguous name: NOENT; the connect policy refuses: ACCESS)
 *   ACCEPT       out[0] peer qp_num
 *   others       nothing
 *
 * A bad argument or handle is a command failure (status), not a guest
 * violation: the guest's library can always be told "no".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "vring.h"
#include "../vbe.h"

/* n refs out of the n / 1024 list pages @lrefs names, into @refs: the
 * guest may rewrite its list pages any time, so they are copied once. */
static int vbe_list_read(struct vbe_guest *g, const uint32_t *lrefs, uint32_t nlist,
			 uint32_t n, uint32_t *refs)
{
	struct vplat_map *lmap;
	int err;

	/* Weighed against the node's and the tenant's share (maps.c) only
	 * while the refs are read. */
	err = vbe_map_buf(g, lrefs, nlist, 0, &lmap);
	if (err)
		return err;
	memcpy(refs, vplat_map_addr(lmap), (size_t)n * sizeof(*refs));
	vbe_unmap_node(g->node, lmap, nlist);
	return 0;
}

static uint32_t vbe_div_up(uint32_t n, uint32_t d)
{
	return n / d + (n % d != 0);
}

static int vbe_cmd_attach_buf(struct vbe_guest *g, const struct vrdma_req *r,
			      uint32_t *out)
{
	const struct vrdma_cmd_attach_buf *a = &r->u.attach_buf;
	uint32_t nl = vbe_div_up(a->npages, VRDMA_REFS_PER_PAGE);
	uint32_t *refs, *l2 = NULL, i, idx;
	struct vplat_map *dmap;
	struct vbe_buf *b;
	int err;

	if (!a->npages || a->writable > 1 || a->indirect > 1 ||
	    a->npages > (a->indirect ? VRDMA_BUF_MAX_PAGES_IND : VRDMA_BUF_MAX_PAGES) ||
	    a->nlist != (a->indirect ? vbe_div_up(nl, VRDMA_REFS_PER_PAGE) : nl))
		return VRDMA_CS_INVAL;
	for (i = a->nlist; i < VRDMA_BUF_LIST_REFS; i++)
		if (a->list_ref[i])
			return VRDMA_CS_INVAL;
	/* The body past the struct is reserved too (review). */
	for (i = sizeof(*a); i < sizeof(r->u.raw); i++)
		if (r->u.raw[i])
			return VRDMA_CS_INVAL;
	if (g->pages + a->npages > vbe_guest_max_pages(g) ||
	    vbe_tenant_quota(g, VBE_TQ_PAGES, a->npages))	/* issue 12 */
		return VRDMA_CS_NOMEM;
	idx = VBE_TAKE(g->bufs, VBE_MAX_BUFS);
	if (idx == UINT32_MAX)
		return VRDMA_CS_NOMEM;
	b = &g->bufs[idx];

	refs = malloc((size_t)a->npages * sizeof(*refs));
	if (a->indirect)
		l2 = malloc((size_t)nl * sizeof(*l2));
	if (!refs || (a->indirect && !l2)) {
		err = VRDMA_CS_NOMEM;
		goto err_refs;
	}
	if (a->indirect) {
		/* The list pages' refs first, then the data refs in them. */
		err = vbe_list_read(g, a->list_ref, a->nlist, nl, l2);
		if (!err)
			err = vbe_list_read(g, l2, nl, a->npages, refs);
		free(l2);
		l2 = NULL;
	} else {
		err = vbe_list_read(g, a->list_ref, a->nlist, a->npages, refs);
	}
	if (err)
		goto err_refs;
	err = vbe_map_buf(g, refs, a->npages, a->writable, &dmap);
	if (err)
		goto err_refs;
	free(refs);

	b->map = dmap;
	b->addr = vplat_map_addr(dmap);
	b->npages = a->npages;
	b->maps = vplat_map_cost(dmap);
	b->writable = a->writable;
	b->users = 0;
	g->pages += a->npages;
	g->maps += b->maps;
	g->nmaps++;
	out[0] = vbe_handle(&b->s, idx);
	out[1] = a->npages;
	return VRDMA_CS_OK;

err_refs:
	free(l2);
	free(refs);
	vbe_slot_free(&b->s);
	return err;
}

static int vbe_cmd_detach_buf(struct vbe_guest *g, const struct vrdma_req *r)
{
	struct vbe_buf *b = VBE_GET(g->bufs, VBE_MAX_BUFS, r->handle);

	if (!b)
		return VRDMA_CS_NOENT;
	if (b->users)
		return VRDMA_CS_BUSY;
	vbe_buf_drop(g, b);
	return VRDMA_CS_OK;
}

static int vbe_cmd_alloc_pd(struct vbe_guest *g, uint32_t *out)
{
	uint32_t idx = VBE_TAKE(g->pds, VBE_MAX_PDS);

	if (idx == UINT32_MAX)
		return VRDMA_CS_NOMEM;
	g->pds[idx].users = 0;
	out[0] = vbe_handle(&g->pds[idx].s, idx);
	return VRDMA_CS_OK;
}

static int vbe_cmd_dealloc_pd(struct vbe_guest *g, const struct vrdma_req *r)
{
	struct vbe_pd *pd = VBE_GET(g->pds, VBE_MAX_PDS, r->handle);

	if (!pd)
		return VRDMA_CS_NOENT;
	if (pd->users)
		return VRDMA_CS_BUSY;
	vbe_slot_free(&pd->s);
	return VRDMA_CS_OK;
}

static int vbe_cmd_reg_mr(struct vbe_guest *g, const struct vrdma_req *r, uint32_t *out)
{
	const struct vrdma_cmd_reg_mr *m = &r->u.reg_mr;
	const uint32_t writes = VRDMA_ACC_LOCAL_WRITE | VRDMA_ACC_REMOTE_WRITE |
				VRDMA_ACC_REMOTE_ATOMIC;
	struct vbe_pd *pd = VBE_GET(g->pds, VBE_MAX_PDS, m->pd);
	struct vbe_buf *b = VBE_GET(g->bufs, VBE_MAX_BUFS, m->buf);
	uint64_t size;
	struct vbe_mr *mr;
	uint32_t idx, key;

	if (!pd || !b)
		return VRDMA_CS_NOENT;
	if (m->reserved || (m->access & ~VRDMA_ACC_ALL) || !m->length)
		return VRDMA_CS_INVAL;
	/* As verbs: remote write/atomic need local write. */
	if ((m->access & (VRDMA_ACC_REMOTE_WRITE | VRDMA_ACC_REMOTE_ATOMIC)) &&
	    !(m->access & VRDMA_ACC_LOCAL_WRITE))
		return VRDMA_CS_INVAL;
	size = (uint64_t)b->npages << VRDMA_PAGE_SHIFT;
	if (m->offset > size || m->length > size - m->offset)
		return VRDMA_CS_INVAL;
	if (m->iova + m->length < m->iova)
		return VRDMA_CS_INVAL;
	if ((m->access & writes) && !b->writable)
		return VRDMA_CS_ACCESS;
	if (vbe_quota_mr(g, m->length) ||	/* operator's mem (issue 5) */
	    vbe_tenant_quota(g, VBE_TQ_MRS, 1))
		return VRDMA_CS_NOMEM;
	idx = VBE_TAKE(g->mrs, VBE_MAX_MRS);
	if (idx == UINT32_MAX)
		return VRDMA_CS_NOMEM;
	mr = &g->mrs[idx];
	/* A random key in a random key slot: keys cannot be guessed (issue 12). */
	if (vbe_key_new(g, idx, &key)) {
		vbe_slot_free(&mr->s);
		return VRDMA_CS_NOMEM;
	}
	mr->key = key;
	vbe_mr_map(g)[vbe_key_idx(key)] = (idx + 1) * (uint32_t)sizeof(*mr);
	mr->pd = m->pd & 0xffff;
	mr->buf = m->buf & 0xffff;
	mr->offset = m->offset;
	mr->length = m->length;
	mr->iova = m->iova;
	mr->access = m->access;
	mr->base = b->addr + m->offset;
	pd->users++;
	b->users++;
	g->mr_bytes += mr->length;
	g->nmrs++;
	out[0] = vbe_handle(&mr->s, idx);
	out[1] = mr->key;
	out[2] = mr->key;
	return VRDMA_CS_OK;
}

/* *hold: the device MR's deregistration to wait for before answering. */
static int vbe_cmd_dereg_mr(struct vbe_guest *g, const struct vrdma_req *r, uint64_t *hold)
{
	struct vbe_mr *mr = VBE_GET(g->mrs, VBE_MAX_MRS, r->handle);

	if (!mr)
		return VRDMA_CS_NOENT;
	*hold = vbe_vx_dereg(g->node, g, (uint32_t)(mr - g->mrs), mr->key);
	g->pds[mr->pd].users--;
	g->bufs[mr->buf].users--;
	g->mr_bytes -= mr->length;
	g->nmrs--;
	/* mr->key stays, and so does its key-map entry: the next key of
	 * this MR must differ from it, and the key slot's next key differs
	 * by its window tag (key.c, vbe_key_wtags). */
	_Static_assert(offsetof(struct vbe_mr, key) < offsetof(struct vbe_mr, pd),
		       "key is outside the wiped part");
	memset((char *)mr + offsetof(struct vbe_mr, pd), 0,
	       sizeof(*mr) - offsetof(struct vbe_mr, pd));
	vbe_slot_free(&mr->s);
	return VRDMA_CS_OK;
}

static int vbe_cmd_create_cq(struct vbe_guest *g, const struct vrdma_req *r,
			     uint32_t *out)
{
	const struct vrdma_cmd_create_cq *c = &r->u.create_cq;
	struct vbe_buf *b = VBE_GET(g->bufs, VBE_MAX_BUFS, c->buf);
	struct vrdma_cq_hdr h;
	struct vbe_cq *cq;
	uint32_t idx, pages;

	if (!b)
		return VRDMA_CS_NOENT;
	if (c->reserved || c->order > VRDMA_CQ_ORDER_MAX)
		return VRDMA_CS_INVAL;
	pages = vrdma_cq_pages(c->order);
	if (c->page > b->npages || pages > b->npages - c->page)
		return VRDMA_CS_INVAL;
	if (!b->writable)
		return VRDMA_CS_ACCESS;
	memcpy(&h, b->addr + ((size_t)c->page << VRDMA_PAGE_SHIFT), sizeof(h));
	if (h.magic != VRDMA_WIRE_MAGIC || h.order != c->order)
		return VRDMA_CS_INVAL;
	if (vbe_tenant_quota(g, VBE_TQ_CQS, 1))	/* issue 12 */
		return VRDMA_CS_NOMEM;
	idx = VBE_TAKE(g->cqs, VBE_MAX_CQS);
	if (idx == UINT32_MAX)
		return VRDMA_CS_NOMEM;
	cq = &g->cqs[idx];
	cq->buf = c->buf & 0xffff;
	cq->hdr = (struct vrdma_cq_hdr *)(b->addr + ((size_t)c->page << VRDMA_PAGE_SHIFT));
	cq->cqe = (struct vrdma_cqe *)((uint8_t *)cq->hdr + VRDMA_PAGE_SIZE);
	cq->size = 1u << c->order;
	cq->prod = cq->pub = 0;
	cq->dirty = false;
	cq->users = 0;
	vring_store_rel(&cq->hdr->ring.prod, 0);
	b->users++;
	g->ncqs++;
	out[0] = vbe_handle(&cq->s, idx);
	out[1] = cq->size;
	return VRDMA_CS_OK;
}

static int vbe_cmd_destroy_cq(struct vbe_guest *g, const struct vrdma_req *r)
{
	struct vbe_cq *cq = VBE_GET(g->cqs, VBE_MAX_CQS, r->handle);

	if (!cq)
		return VRDMA_CS_NOENT;
	if (cq->users)
		return VRDMA_CS_BUSY;
	vbe_cq_forget(g, cq);
	return VRDMA_CS_OK;
}

static int vbe_cmd_create_qp(struct vbe_guest *g, const struct vrdma_req *r,
			     uint32_t *out)
{
	const struct vrdma_cmd_create_qp *c = &r->u.create_qp;
	struct vbe_pd *pd = VBE_GET(g->pds, VBE_MAX_PDS, c->pd);
	struct vbe_cq *scq = VBE_GET(g->cqs, VBE_MAX_CQS, c->send_cq);
	struct vbe_cq *rcq = VBE_GET(g->cqs, VBE_MAX_CQS, c->recv_cq);
	struct vbe_srq *srq = NULL;
	struct vbe_qp *qp;
	uint32_t idx, qpn, slots;

	if (c->srq) {
		srq = VBE_GET(g->srqs, VBE_MAX_SRQS, c->srq);
		if (!srq)
			return VRDMA_CS_NOENT;
	}
	if (!pd || !scq || !rcq)
		return VRDMA_CS_NOENT;
	if (!c->max_send_wr || c->max_send_wr > VRDMA_MAX_WR ||
	    (srq ? c->max_recv_wr != 0 : !c->max_recv_wr || c->max_recv_wr > VRDMA_MAX_WR) ||
	    c->max_sge > g->node->max_sge ||
	    (c->type != VRDMA_QP_TYPE_RC && c->type != VRDMA_QP_TYPE_UD))
		return VRDMA_CS_INVAL;
	/* Queued WRs cost dom0 memory: a per-guest budget (review I1),
	 * a WR of many SGEs counted for what it takes. */
	slots = (c->max_send_wr + c->max_recv_wr) * vbe_wr_weight(c->max_sge);
	if (slots > VBE_MAX_WR_SLOTS - g->wr_slots)
		return VRDMA_CS_NOMEM;
	if (vbe_quota_qp(g, slots))	/* operator's qps / wrs (issue 5) */
		return VRDMA_CS_NOMEM;
	idx = VBE_TAKE(g->qps, VBE_MAX_QPS);
	if (idx == UINT32_MAX)
		return VRDMA_CS_NOMEM;
	qpn = vbe_node_qpn(g->node);
	if (!qpn) {
		vbe_slot_free(&g->qps[idx].s);
		return VRDMA_CS_NOMEM;
	}
	qp = &g->qps[idx];
	qp->qpn = qpn;
	if (vbe_wq_alloc(&qp->sq, c->max_send_wr, c->max_sge) ||
	    (!srq && vbe_wq_alloc(&qp->rq, c->max_recv_wr, c->max_sge)) ||
	    vbe_qpn_add(g, qp)) {
		vbe_wq_free(&qp->sq);
		vbe_wq_free(&qp->rq);
		vbe_node_qpn_free(g->node, qpn);
		vbe_slot_free(&qp->s);
		return VRDMA_CS_NOMEM;
	}
	g->wr_slots += slots;
	g->nqps++;
	qp->sq.size = c->max_send_wr;
	qp->rq.size = c->max_recv_wr;
	qp->handle = vbe_handle(&qp->s, idx);
	qp->qpn = qpn;
	qp->pd = c->pd & 0xffff;
	qp->send_cq = c->send_cq & 0xffff;
	qp->recv_cq = c->recv_cq & 0xffff;
	qp->max_sge = c->max_sge;
	qp->state = VBE_QPS_RESET;
	qp->ud = c->type == VRDMA_QP_TYPE_UD;
	qp->qkey = 0;
	if (srq) {
		qp->srq = (c->srq & 0xffff) + 1;
		srq->users++;
	}
	pd->users++;
	scq->users++;
	rcq->users++;
	out[0] = qp->handle;
	out[1] = qp->qpn;
	return VRDMA_CS_OK;
}

static int vbe_cmd_destroy_qp(struct vbe_guest *g, const struct vrdma_req *r)
{
	struct vbe_qp *qp = VBE_GET(g->qps, VBE_MAX_QPS, r->handle);

	if (!qp)
		return VRDMA_CS_NOENT;
	vbe_qp_destroy(g, qp);
	return VRDMA_CS_OK;
}

void vbe_cmd_exec(struct vbe_guest *g, const struct vrdma_req *r)
{
	struct vbe_late late = { .g = NULL, .conn = -1 };
	struct vrdma_evt e;
	uint64_t hold = 0;
	int st;

	memset(&e, 0, sizeof(e));
	switch (r->opcode) {
	case VRDMA_CMD_ATTACH_BUF:
		st = vbe_cmd_attach_buf(g, r, e.u.out);
		break;
	case VRDMA_CMD_DETACH_BUF:
		st = vbe_cmd_detach_buf(g, r);
		break;
	case VRDMA_CMD_ALLOC_PD:
		st = vbe_cmd_alloc_pd(g, e.u.out);
		break;
	case VRDMA_CMD_DEALLOC_PD:
		st = vbe_cmd_dealloc_pd(g, r);
		break;
	case VRDMA_CMD_REG_MR:
		st = vbe_cmd_reg_mr(g, r, e.u.out);
		break;
	case VRDMA_CMD_DEREG_MR:
		st = vbe_cmd_dereg_mr(g, r, &hold);
		break;
	case VRDMA_CMD_CREATE_CQ:
		st = vbe_cmd_create_cq(g, r, e.u.out);
		break;
	case VRDMA_CMD_DESTROY_CQ:
		st = vbe_cmd_destroy_cq(g, r);
		break;
	case VRDMA_CMD_CREATE_QP:
		st = vbe_cmd_create_qp(g, r, e.u.out);
		break;
	case VRDMA_CMD_DESTROY_QP:
		st = vbe_cmd_destroy_qp(g, r);
		break;
	case VRDMA_CMD_LISTEN:
		st = vbe_cm_listen(g, r, e.u.out);
		break;
	case VRDMA_CMD_UNLISTEN:
		st = vbe_cm_unlisten(g, r);
		break;
	case VRDMA_CMD_CONNECT:
		st = vbe_cm_connect(g, r, e.u.out, &late);
		break;
	case VRDMA_CMD_ACCEPT:
		st = vbe_cm_accept(g, r, e.u.out);
		break;
	case VRDMA_CMD_REJECT:
		st = vbe_cm_reject(g, r);
		break;
	case VRDMA_CMD_MODIFY_QP:
		st = vbe_cm_modify(g, r);
		break;
	case VRDMA_CMD_CREATE_SRQ:
		st = vbe_srq_create(g, r, e.u.out);
		break;
	case VRDMA_CMD_DESTROY_SRQ:
		st = vbe_srq_destroy(g, r);
		break;
	case VRDMA_CMD_TEAM_JOIN:
		st = vbe_coll_join(g, r, e.u.out);
		break;
	case VRDMA_CMD_TEAM_LEAVE:
		st = vbe_coll_leave(g, r);
		break;
	default:
		st = VRDMA_CS_INVAL;
		break;
	}
	if (st != VRDMA_CS_OK)
		memset(&e.u, 0, sizeof(e.u));
	vlog_dbg("guest %u: command %#x handle %#x: status %d out %#x %#x", g->domid,
		 r->opcode, r->handle, st, e.u.out[0], e.u.out[1]);
	e.type = VRDMA_EVT_CMD_DONE;
	e.status = (uint16_t)st;
	e.handle = r->handle;
	e.id = r->id;
	/* A peer holding the key reaches the pages until the device MR is
	 * gone: "done" may be said only then (docs/security.md section 8). */
	if (hold && !vbe_vx_dereg_done(g->node, g, hold)) {
		g->held = true;
		g->held_seq = hold;
		g->held_evt = e;
		g->node->nheld++;
		return;
	}
	vbe_evt_post(g, &e, true);
	if (late.g)
		vbe_cm_late(g->node, &late);
	/* EVT_TEAM only after the join's answer: the handle must be known */
	if (r->opcode == VRDMA_CMD_TEAM_JOIN && st == VRDMA_CS_OK)
		vbe_coll_joined(g, e.u.out[0]);
}

/* Each node poll while any answer is held: post those whose wait is
 * over; the guest's ring moves on at its next poll.  Counted afresh, so
 * a guest that went meanwhile is forgotten with its answer. */
void vbe_cmd_release(struct vbe_node *n)
{
	struct vbe_guest *g;
	unsigned left = 0;

	if (!n->nheld)
		return;
	for (g = n->guests; g; g = g->next) {
		if (!g->held)
			continue;
		if (g->connected && !g->dead && !vbe_vx_dereg_done(n, g, g->held_seq)) {
			left++;
			continue;
		}
		g->held = false;
		g->sch.cmd_throttled = false;
		vbe_evt_post(g, &g->held_evt, true);	/* -EPIPE if it went */
	}
	n->nheld = left;
}
