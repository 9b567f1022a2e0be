// SPDX-License-Identifier: MIT
/*
 * The catalogue of malformed requests: one test per entry, each refused
 * with a clear status or a disable + log line, and after each, two OTHER
 * guests still WRITE to each other.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "backend_tg.h"
/* ---- the catalogue of malformed requests ---- */

enum bad {
	B_PROD, B_OPCODE, B_NSGE, B_FLAGS, B_RESERVED, B_CMD_FLAGS, B_QP_RANGE,
	B_QP_DESTROYED, B_QP_OTHER, B_CQ_OTHER, B_ATT_ZERO, B_ATT_MANY, B_ATT_NLIST,
	B_ATT_LISTREF, B_ATT_DATAREF, B_MR_OUTSIDE, B_MR_OVERFLOW, B_CQ_ORDER,
	B_CQ_OUTSIDE, B_DEPTH, B_CQ_OVERFLOW, B_EVT_CONS, B_EVT_FULL,
	B_SRQ_UNKNOWN, B_SRQ_QP_RECV, B_SRQ_DEPTH, B_SRQ_ARGS, B_SRQ_QP_RQ,
	B_SRQ_BUSY, B_MQ_STATE,
};

/* An SRQ of depth 4 in c's PD, and a QP on it. */
static void srq_make(struct tg *c, uint32_t *srq, uint32_t *qp)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_CREATE_SRQ, 0);
	uint32_t out[4];

	r.u.create_srq.pd = c->pd;
	r.u.create_srq.max_wr = 4;
	r.u.create_srq.max_sge = 1;
	ck_assert_int_eq(tg_cmd(c, &r, out), VRDMA_CS_OK);
	*srq = out[0];
	r = mkreq(VRDMA_CMD_CREATE_QP, 0);
	r.u.create_qp.pd = c->pd;
	r.u.create_qp.send_cq = r.u.create_qp.recv_cq = c->cq;
	r.u.create_qp.max_send_wr = 4;
	r.u.create_qp.max_sge = 1;
	r.u.create_qp.srq = *srq;
	ck_assert_int_eq(tg_cmd(c, &r, out), VRDMA_CS_OK);
	*qp = out[0];
}

#define DISABLED	(-100)

/* c's QP connected to a second QP of c (loopback inside one guest). */
static void loopback(struct tg *c)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_LISTEN, 0);
	uint32_t out[4], qp2;

	ck_assert_int_eq(tg_create_qp(c, c->cq, out), VRDMA_CS_OK);
	qp2 = out[0];
	strcpy(r.u.listen.service, "loop");
	ck_assert_int_eq(tg_cmd(c, &r, out), VRDMA_CS_OK);
	r = mkreq(VRDMA_CMD_CONNECT, c->qp);
	strcpy(r.u.connect.service, "loop");
	ck_assert_int_eq(tg_cmd(c, &r, NULL), VRDMA_CS_OK);
	ck_assert_int_eq(c->async[c->nasync - 1].type, VRDMA_EVT_CONN_REQUEST);
	r = mkreq(VRDMA_CMD_ACCEPT, qp2);
	r.u.accept.conn_id = c->async[c->nasync - 1].id;
	ck_assert_int_eq(tg_cmd(c, &r, NULL), VRDMA_CS_OK);
}

/* After an overrun: CQ_ERROR for c's CQ, QP_ERROR for both QPs on it (the
 * first NOMEM, its overrun; the second, its peer, UNREACH when the first
 * leaves), exactly a CQ of CQEs (later ones lost). */
static void cq_overrun_seen(struct tg *c)
{
	struct vrdma_cqe cqe;
	unsigned i, ncq = 0, nqp = 0, nmem = 0, n = 0;

	tg_events(c);
	for (i = 0; i < c->nasync; i++) {
		if (c->async[i].type == VRDMA_EVT_CQ_ERROR) {
			ck_assert_uint_eq(c->async[i].handle, c->cq);
			ncq++;
		} else if (c->async[i].type == VRDMA_EVT_QP_ERROR) {
			nmem += c->async[i].status == VRDMA_CS_NOMEM;
			nqp++;
		}
	}
	ck_assert_uint_eq(ncq, 1);
	ck_assert_uint_eq(nqp, 2);
	ck_assert_uint_ge(nmem, 1);
	while (tg_poll_cq(c, &cqe))
		n++;
	ck_assert_uint_eq(n, 1u << CQ_ORDER);
}

static int bad_request(struct tg *a, struct tg *c, enum bad how)
{
	struct vrdma_req r = mkwr(c, VRDMA_OP_WRITE, 0, 1);
	struct vplat_share *ls;
	uint32_t out[4], v, i;
	int st = DISABLED;

	add_sge(&r, DATA_OFF, 8, c->key);
	switch (how) {
	case B_PROD:
		vring_store_rel(&c->sr->req.prod, c->req_prod + (1u << VRDMA_REQ_RING_ORDER_DEF) + 1);
		vbe_node_poll(node);
		break;
	case B_OPCODE:
		r.opcode = 0x33;
		post(c, &r);
		break;
	case B_NSGE:
		r.num_sge = 5;
		post(c, &r);
		break;
	case B_FLAGS:
		r.flags = 0x80;
		post(c, &r);
		break;
	case B_RESERVED:
		r.u.wr.reserved[3] = 1;
		post(c, &r);
		break;
	case B_CMD_FLAGS:
		r = mkreq(VRDMA_CMD_ALLOC_PD, 0);
		r.flags = 1;
		ck_assert_int_eq(tg_cmd(c, &r, NULL), -1);
		break;
	case B_QP_RANGE:
		r.handle = 0x1ffff;
		post(c, &r);
		break;
	case B_QP_DESTROYED:
		r = mkreq(VRDMA_CMD_DESTROY_QP, c->qp);
		ck_assert_int_eq(tg_cmd(c, &r, NULL), VRDMA_CS_OK);
		r = mkwr(c, VRDMA_OP_RECV, 0, 1);
		post(c, &r);
		break;
	case B_QP_OTHER:
		ck_assert_int_eq(tg_create_qp(a, a->cq, out), VRDMA_CS_OK);
		r.handle = out[0];	/* a's second QP: c has no such slot */
		post(c, &r);
		break;
	case B_CQ_OTHER:
		((struct vrdma_cq_hdr *)(a->mem + 4 * 4096))->magic = VRDMA_WIRE_MAGIC;
		((struct vrdma_cq_hdr *)(a->mem + 4 * 4096))->order = CQ_ORDER;
		r = mkreq(VRDMA_CMD_CREATE_CQ, 0);
		r.u.create_cq.buf = a->buf;
		r.u.create_cq.page = 4;
		r.u.create_cq.order = CQ_ORDER;
		ck_assert_int_eq(tg_cmd(a, &r, out), VRDMA_CS_OK);
		st = tg_create_qp(c, out[0], out);
		break;
	case B_ATT_ZERO:
	case B_ATT_MANY:
	case B_ATT_NLIST:
	case B_ATT_LISTREF:
		r = mkreq(VRDMA_CMD_ATTACH_BUF, 0);
		r.u.attach_buf.npages = how == B_ATT_ZERO ? 0 :
					how == B_ATT_MANY ? VRDMA_BUF_MAX_PAGES + 1 : 4;
		r.u.attach_buf.nlist = how == B_ATT_NLIST ? 2 : 1;
		r.u.attach_buf.list_ref[0] = how == B_ATT_LISTREF ? 999999 : vplat_share_refs(c->list)[0];
		st = tg_cmd(c, &r, NULL);
		break;
	case B_ATT_DATAREF:
		ck_assert_int_eq(vplat_share(c->p, 0, 1, 0, &ls), 0);
		memcpy(vplat_share_addr(ls), vplat_share_refs(c->data), 4 * 4);
		((uint32_t *)vplat_share_addr(ls))[2] = 999999;
		r = mkreq(VRDMA_CMD_ATTACH_BUF, 0);
		r.u.attach_buf.npages = 4;
		r.u.attach_buf.nlist = 1;
		r.u.attach_buf.list_ref[0] = vplat_share_refs(ls)[0];
		st = tg_cmd(c, &r, NULL);
		vplat_unshare(ls);
		break;
	case B_MR_OUTSIDE:
		st = tg_reg_mr(c, 15 * VRDMA_PAGE_SIZE, 2 * VRDMA_PAGE_SIZE, 0, out);
		break;
	case B_MR_OVERFLOW:
		st = tg_reg_mr(c, UINT64_MAX - 100, 200, 0, out);
		break;
	case B_CQ_ORDER:
	case B_CQ_OUTSIDE:
		r = mkreq(VRDMA_CMD_CREATE_CQ, 0);
		r.u.create_cq.buf = c->buf;
		r.u.create_cq.page = how == B_CQ_ORDER ? 4 : BUF_PAGES - 1;
		r.u.create_cq.order = how == B_CQ_ORDER ? 30 : CQ_ORDER;
		st = tg_cmd(c, &r, NULL);
		break;
	case B_DEPTH:
		r = mkwr(c, VRDMA_OP_RECV, 0, 1);
		for (i = 0; i <= DEPTH; i++)
			tg_push(c, &r);
		vbe_node_poll(node);
		break;
	case B_CQ_OVERFLOW:
		/* Verbs lets QPs outgrow their CQ: an overrun is a CQ error
		 * for this guest, never a reason to disable it. */
		loopback(c);
		r.flags = VRDMA_WR_F_SIGNALED;
		r.u.wr.remote_addr = IOVA + DATA_OFF + 4096;
		r.u.wr.rkey = c->key;
		for (i = 0; i < (1u << CQ_ORDER) + 3 && back_state(c) != VRDMA_XB_CLOSED; i++)
			post(c, &r);
		cq_overrun_seen(c);
		st = VRDMA_CS_OK;
		break;
	case B_EVT_CONS:
		vring_store_rel(&c->sr->evt.cons, c->evt_cons + 5000);
		r = mkreq(VRDMA_CMD_ALLOC_PD, 0);
		tg_push(c, &r);
		vbe_node_poll(node);
		break;
	case B_SRQ_UNKNOWN:
		r = mkwr(c, VRDMA_OP_SRQ_RECV, 0, 1);
		r.handle = 0x7777;
		post(c, &r);
		break;
	case B_SRQ_QP_RECV:
	case B_SRQ_DEPTH:
	case B_SRQ_QP_RQ:
	case B_SRQ_BUSY:
		srq_make(c, &v, &i);
		if (how == B_SRQ_QP_RECV) {
			r = mkwr(c, VRDMA_OP_RECV, 0, 1);
			r.handle = i;	/* its receives come from the SRQ */
			post(c, &r);
		} else if (how == B_SRQ_DEPTH) {
			r = mkwr(c, VRDMA_OP_SRQ_RECV, 0, 1);
			r.handle = v;
			for (i = 0; i <= 4; i++)
				tg_push(c, &r);
			vbe_node_poll(node);
		} else if (how == B_SRQ_QP_RQ) {
			r = mkreq(VRDMA_CMD_CREATE_QP, 0);
			r.u.create_qp.pd = c->pd;
			r.u.create_qp.send_cq = r.u.create_qp.recv_cq = c->cq;
			r.u.create_qp.max_send_wr = 4;
			r.u.create_qp.max_recv_wr = 4;	/* not with an SRQ */
			r.u.create_qp.max_sge = 1;
			r.u.create_qp.srq = v;
			st = tg_cmd(c, &r, NULL);
		} else {
			r = mkreq(VRDMA_CMD_DESTROY_SRQ, v);
			st = tg_cmd(c, &r, NULL);
		}
		break;
	case B_SRQ_ARGS:
		r = mkreq(VRDMA_CMD_CREATE_SRQ, 0);
		r.u.create_srq.pd = c->pd;
		r.u.create_srq.max_wr = VRDMA_MAX_WR + 1;
		r.u.create_srq.max_sge = 1;
		st = tg_cmd(c, &r, NULL);
		break;
	case B_MQ_STATE:
		r = mkreq(VRDMA_CMD_MODIFY_QP, c->qp);
		r.u.modify_qp.state = 9;
		st = tg_cmd(c, &r, NULL);
		break;
	case B_EVT_FULL:
		/* Commands whose results the guest never reads. */
		r = mkreq(VRDMA_CMD_DEALLOC_PD, 0xdead);
		for (v = 0; v <= (1u << VRDMA_EVT_RING_ORDER_DEF); v++) {
			tg_push(c, &r);
			vbe_node_poll(node);
		}
		break;
	}
	return st;
}

static void catalogue(enum bad how, int want)
{
	struct tg a, b, c;
	struct vbe_census cen;
	int st;

	tg_full(&a, 5);
	tg_full(&b, 6);
	tg_connect(&a, &b);
	tg_full(&c, 9);
	st = bad_request(&a, &c, how);
	vbe_node_census(node, &cen);
	if (want == DISABLED) {
		ck_assert_int_eq(back_state(&c), VRDMA_XB_CLOSED);
		ck_assert_uint_eq(cen.guests, 3);
		ck_assert_uint_eq(cen.maps, 4);		/* a and b: ring + buffer */
		ck_assert_uint_eq(cen.chans, 2);
		ck_assert_uint_eq(cen.bufs, 2);
	} else {
		struct vrdma_req r = mkreq(VRDMA_CMD_ALLOC_PD, 0);

		ck_assert_int_eq(st, want);
		ck_assert_int_eq(back_state(&c), VRDMA_XB_CONNECTED);
		/* c was only told no: it still works. */
		ck_assert_int_eq(tg_cmd(&c, &r, NULL), VRDMA_CS_OK);
	}
	write_works(&a, &b);
	write_works(&b, &a);
	tg_stop(&a);
	tg_stop(&b);
	tg_stop(&c);
}

#define CAT(name, how, want) \
	START_TEST(bad_##name) { catalogue(how, want); } END_TEST
CAT(req_prod, B_PROD, DISABLED)
CAT(opcode, B_OPCODE, DISABLED)
CAT(num_sge_5, B_NSGE, DISABLED)
CAT(flag_bits, B_FLAGS, DISABLED)
CAT(reserved_bytes, B_RESERVED, DISABLED)
CAT(command_flags, B_CMD_FLAGS, DISABLED)
CAT(qp_out_of_range, B_QP_RANGE, DISABLED)
CAT(qp_destroyed, B_QP_DESTROYED, DISABLED)
CAT(qp_of_other_guest, B_QP_OTHER, DISABLED)
CAT(cq_of_other_guest, B_CQ_OTHER, VRDMA_CS_NOENT)
CAT(attach_npages_0, B_ATT_ZERO, VRDMA_CS_INVAL)
CAT(attach_too_many, B_ATT_MANY, VRDMA_CS_INVAL)
CAT(attach_nlist, B_ATT_NLIST, VRDMA_CS_INVAL)
CAT(attach_list_ref, B_ATT_LISTREF, VRDMA_CS_FAULT)
CAT(attach_data_ref, B_ATT_DATAREF, VRDMA_CS_FAULT)
CAT(mr_outside, B_MR_OUTSIDE, VRDMA_CS_INVAL)
CAT(mr_overflow, B_MR_OVERFLOW, VRDMA_CS_INVAL)
CAT(cq_order_30, B_CQ_ORDER, VRDMA_CS_INVAL)
CAT(cq_outside, B_CQ_OUTSIDE, VRDMA_CS_INVAL)
CAT(beyond_depth, B_DEPTH, DISABLED)
CAT(cq_overrun, B_CQ_OVERFLOW, VRDMA_CS_OK)
CAT(evt_cons, B_EVT_CONS, DISABLED)
CAT(evt_ring_full, B_EVT_FULL, DISABLED)
CAT(srq_unknown, B_SRQ_UNKNOWN, DISABLED)
CAT(srq_qp_recv, B_SRQ_QP_RECV, DISABLED)
CAT(srq_beyond_depth, B_SRQ_DEPTH, DISABLED)
CAT(srq_args, B_SRQ_ARGS, VRDMA_CS_INVAL)
CAT(srq_qp_with_rq, B_SRQ_QP_RQ, VRDMA_CS_INVAL)
CAT(srq_busy, B_SRQ_BUSY, VRDMA_CS_BUSY)
CAT(modify_qp_state, B_MQ_STATE, VRDMA_CS_INVAL)

TCase *backend_bad_tcase(void)
{
	TCase *t = tcase_create("catalogue");

	tcase_add_checked_fixture(t, tg_setup, tg_teardown);
	tcase_add_test(t, bad_req_prod);
	tcase_add_test(t, bad_opcode);
	tcase_add_test(t, bad_num_sge_5);
	tcase_add_test(t, bad_flag_bits);
	tcase_add_test(t, bad_reserved_bytes);
	tcase_add_test(t, bad_command_flags);
	tcase_add_test(t, bad_qp_out_of_range);
	tcase_add_test(t, bad_qp_destroyed);
	tcase_add_test(t, bad_qp_of_other_guest);
	tcase_add_test(t, bad_cq_of_other_guest);
	tcase_add_test(t, bad_attach_npages_0);
	tcase_add_test(t, bad_attach_too_many);
	tcase_add_test(t, bad_attach_nlist);
	tcase_add_test(t, bad_attach_list_ref);
	tcase_add_test(t, bad_attach_data_ref);
	tcase_add_test(t, bad_mr_outside);
	tcase_add_test(t, bad_mr_overflow);
	tcase_add_test(t, bad_cq_order_30);
	tcase_add_test(t, bad_cq_outside);
	tcase_add_test(t, bad_beyond_depth);
	tcase_add_test(t, bad_cq_overrun);
	tcase_add_test(t, bad_evt_cons);
	tcase_add_test(t, bad_evt_ring_full);
	tcase_add_test(t, bad_srq_unknown);
	tcase_add_test(t, bad_srq_qp_recv);
	tcase_add_test(t, bad_srq_beyond_depth);
	tcase_add_test(t, bad_srq_args);
	tcase_add_test(t, bad_srq_qp_with_rq);
	tcase_add_test(t, bad_srq_busy);
	tcase_add_test(t, bad_modify_qp_state);
	return t;
}
