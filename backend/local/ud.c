// SPDX-License-Identifier: MIT
/*
 * Unreliable datagrams between guests of this node.  A UD SEND is
 * delivered at once, or dropped: dom0 never queues a datagram.  The
 * destination is named by (GID, QPN) in the WR (wire.h, struct vrdma_wr
 * ud); it must be this node's GID and a UD QP in RTS of any guest whose
 * tenant group the connect policy lets the sender's reach or be reached
 * by (a datagram has no direction, as a binding by QP number), with the
 * Q_Key the WR names (VRDMA_QKEY_OWN: the sender's), and a receive
 * posted that holds the GRH and the payload (posted: read by dom0, or
 * at the head of the guest's ring, vbe_ring_recvs).  The receive gets
 * the 40-byte IB GRH first, then the payload, and completes with
 * byte_len = 40 + payload, src_qpn and VRDMA_CQE_F_GRH.  Anything else
 * drops the datagram and counts it (ud_tx_drop on the sender; ud_rx_drop
 * on the destination guest when its QP is at fault).  The sender's WR
 * always completes: success, unless its own SGEs are bad (LOC_PROT_ERR), its
 * payload is past VRDMA_UD_MTU, or to another node past the node's
 * max-ud-msg (LOC_LEN_ERR, as UD hardware past its MTU), or its
 * opcode is no datagram (LOC_QP_OP_ERR).  Each of those moves the QP to
 * ERR, the WRs behind it flushed: IB's UD QP goes to SQE (sends flushed,
 * receives going on, SQE -> RTS by a modify), which vrdma does not have;
 * ERR is what rxe does, and a program that checks its completions stops
 * at the first error either way.
 *
 * A datagram to another node's GID goes through the RDMA device
 * (device/verbs_ud.c); one from another node's guest comes back in
 * through vbe_ud_from_node, to the same checks.
 */
#include <arpa/inet.h>
#include <string.h>

#include "log.h"
#include "../vbe.h"
#include "../target.h"
#include "local.h"
#include "../device/verbs_ud.h"

/* IB GRH: IP version 6, traffic class 0, flow label 0; next header 0x1b
 * (IBA transport), as a real HCA writes it into a UD receive. */
#define VBE_GRH_VTF	0x60000000u
#define VBE_GRH_NXT	0x1b
#define VBE_GRH_HOPS	64

struct vbe_grh {
	uint32_t vtf;		/* version, traffic class, flow label (BE) */
	uint16_t paylen;	/* BE */
	uint8_t  next_hdr;
	uint8_t  hop_limit;
	uint8_t  sgid[16];
	uint8_t  dgid[16];
};
_Static_assert(sizeof(struct vbe_grh) == VRDMA_GRH_LEN, "GRH is 40 bytes");

/* The datagram goes nowhere: counted on the sender, and on the
 * destination guest when one is to blame (pg not NULL). */
static void vbe_ud_drop(struct vbe_guest *g, struct vbe_guest *pg, const char *why,
			uint32_t qpn)
{
	g->ctr.ud_tx_drop++;
	if (pg)
		pg->ctr.ud_rx_drop++;
	vlog_dbg("guest %u: datagram to QP %u dropped: %s", g->domid, qpn, why);
}

/* The destination QP of w on this node, or NULL (the drop counted). */
static struct vbe_qp *vbe_ud_dest(struct vbe_guest *g, struct vbe_qp *qp,
				  const struct vbe_wqe *w, struct vbe_guest **pgp)
{
	struct vbe_node *n = g->node;
	uint32_t qpn = w->wr.ud.remote_qpn, qkey = w->wr.ud.remote_qkey;
	struct vbe_party from, to;
	struct vbe_guest *pg;
	struct vbe_qp *pqp;

	if (memcmp(w->wr.ud.dgid, n->gid, sizeof(n->gid))) {
		vbe_ud_drop(g, NULL, "another node's GID", qpn);
		return NULL;
	}
	pqp = qpn < 1u << 24 ? vbe_qpn_find(n, qpn, &pg) : NULL;
	if (!pqp || !pqp->ud || pqp->state != VBE_QPS_RTS) {
		vbe_ud_drop(g, NULL, "no UD QP in RTS by that number", qpn);
		return NULL;
	}
	/* The tenant connect policy holds for datagrams as for bindings by
	 * QP number (cm_qpn.c): either direction will do, so the answer to
	 * a datagram the policy let through goes back. */
	if (pg != g) {
		from = vbe_policy_local(n, g->tenant);
		to = vbe_policy_local(n, pg->tenant);
		if (!vbe_policy_allow_either(n, &from, &to)) {
			vbe_policy_refused(n, "guest %u (tenant %s): datagram to QP %u of tenant "
					   "%s refused by policy", g->domid, g->tenant, qpn,
					   pg->tenant);
			vbe_ud_drop(g, NULL, "policy", qpn);
			return NULL;
		}
	}
	if (qkey & VRDMA_QKEY_OWN)
		qkey = qp->qkey;
	if (qkey != pqp->qkey) {
		vbe_ud_drop(g, pg, "Q_Key mismatch", qpn);
		return NULL;
	}
	*pgp = pg;
	return pqp;
}

/*
 * Into pqp's next receive (of guest pg): the GRH (sgid -> dgid), then the
 * payload pieces pc (total bytes).  The receive's own bad SGEs fail it
 * (and its QP) as on RC; a small one completes LOC_LEN_ERR; no receive,
 * read or at the head of pg's ring: dropped.  NULL when delivered, else
 * why not (pg's ud_rx_drop counted).
 */
static const char *vbe_ud_put(struct vbe_guest *pg, struct vbe_qp *pqp, const uint8_t *sgid,
			      const uint8_t *dgid, uint32_t src_qpn, uint32_t imm, bool has_imm,
			      const struct vbe_piece *pc, unsigned np, uint64_t total)
{
	struct vbe_piece dst[VRDMA_MAX_SGE], src[VRDMA_MAX_SGE + 1];
	struct vbe_wqe *rw;
	struct vbe_grh grh;
	uint64_t cap;
	unsigned nd;
	int st;

	rw = vbe_qp_rq_head(pg, pqp);
	/* A receive pg posted before its turn came counts (ring.c). */
	if (!rw && vbe_ring_recvs(pg) > 0 && !pg->dead &&
	    pqp->state == VBE_QPS_RTS)
		rw = vbe_qp_rq_head(pg, pqp);
	if (!rw) {
		pg->ctr.ud_rx_drop++;
		return "no receive posted";
	}
	st = vbe_sges(pg, pqp->srq ? pg->srqs[pqp->srq - 1].pd : pqp->pd, rw, true,
		      dst, &nd, &cap);
	if (st) {
		vbe_rq_complete(pg, pqp, VRDMA_WC_RECV, (uint8_t)st, 0, 0, false, src_qpn);
		vbe_qp_error(pg, pqp);
		pg->ctr.ud_rx_drop++;
		return "bad receive";
	}
	if (cap < VRDMA_GRH_LEN + total) {
		/* The receive completes LOC_LEN_ERR (verbs' status for a
		 * receive the message does not fit) and the QP goes on.  Left
		 * posted, an SRQ's receive, held by this QP, would sink every
		 * later datagram to it, and the QP's own would sink every one
		 * bigger with nobody told.  rxe completes an SRQ's with
		 * REM_INV_REQ_ERR and keeps a QP's own posted. */
		vbe_rq_complete(pg, pqp, VRDMA_WC_RECV, VRDMA_WS_LOC_LEN_ERR, 0, 0, false,
				src_qpn);
		pg->ctr.ud_rx_drop++;
		return "receive too small";
	}
	memset(&grh, 0, sizeof(grh));
	grh.vtf = htonl(VBE_GRH_VTF);
	grh.paylen = htons((uint16_t)total);
	grh.next_hdr = VBE_GRH_NXT;
	grh.hop_limit = VBE_GRH_HOPS;
	memcpy(grh.sgid, sgid, sizeof(grh.sgid));
	memcpy(grh.dgid, dgid, sizeof(grh.dgid));
	src[0].p = (uint8_t *)&grh;
	src[0].len = sizeof(grh);
	memcpy(src + 1, pc, np * sizeof(*pc));
	vbe_copy(dst, nd, src, np + 1, 0, VRDMA_GRH_LEN + total);
	vbe_rq_complete(pg, pqp, VRDMA_WC_RECV, VRDMA_WS_SUCCESS,
			(uint32_t)(VRDMA_GRH_LEN + total), imm, has_imm, src_qpn);
	pg->ctr.ud_rx++;
	pg->ctr.rx_bytes += total;
	pg->ctr.rx_ops++;
	return NULL;
}

/* Deliver the datagram of w (payload pieces pc, total bytes): to a guest
 * of this node, or through the device to another node's. */
static void vbe_ud_deliver(struct vbe_guest *g, struct vbe_qp *qp, const struct vbe_wqe *w,
			   const struct vbe_piece *pc, unsigned np, uint64_t total)
{
	struct vbe_guest *pg;
	struct vbe_qp *pqp;
	const char *why;

	if (memcmp(w->wr.ud.dgid, g->node->gid, sizeof(g->node->gid))) {
		vbe_vud_send(g, qp, w, pc, np, total);	/* device/verbs_ud.c */
		return;
	}
	pqp = vbe_ud_dest(g, qp, w, &pg);
	if (!pqp)
		return;
	why = vbe_ud_put(pg, pqp, g->node->gid, w->wr.ud.dgid, qp->qpn, w->wr.imm_data,
			 w->opcode == VRDMA_OP_SEND_IMM, pc, np, total);
	if (why) {
		vbe_ud_drop(g, NULL, why, pqp->qpn);
		return;
	}
	g->ctr.ud_tx++;
	g->ctr.tx_bytes += total;
	g->ctr.tx_ops++;
}

/*
 * A datagram from a guest of another node (device/verbs_ud.c checked its
 * header): the checks a datagram of this node gets, the sender's tenant
 * group known by its hash, as on a binding from another node (the
 * policy either way, as in vbe_ud_dest).  NULL when delivered, else why
 * not.
 */
const char *vbe_ud_from_node(struct vbe_node *n, const struct vbe_vud_hdr *h,
			     const uint8_t *payload)
{
	struct vbe_piece pc = { (uint8_t *)payload, h->len };
	struct vbe_party from, to;
	struct vbe_guest *pg;
	struct vbe_qp *pqp;

	pqp = vbe_qpn_find(n, h->dqpn, &pg);
	if (!pqp || !pqp->ud || pqp->state != VBE_QPS_RTS)
		return "no UD QP in RTS by that number";
	from = vbe_policy_remote(h->group);
	to = vbe_policy_local(n, pg->tenant);
	if (!vbe_policy_allow_either(n, &from, &to)) {
		vbe_policy_refused(n, "guest %u (tenant %s): datagram from another node's "
				   "group refused by policy", pg->domid, pg->tenant);
		return "policy";
	}
	if (h->qkey != pqp->qkey) {
		pg->ctr.ud_rx_drop++;
		return "Q_Key mismatch";
	}
	return vbe_ud_put(pg, pqp, h->sgid, n->gid, h->sqpn, h->imm, h->has_imm, &pc, 1,
			  h->len);
}

/* One send WR of a UD QP: its completion status, *len its payload. */
static int vbe_ud_send(struct vbe_guest *g, struct vbe_qp *qp, const struct vbe_wqe *w,
		       uint64_t *len)
{
	struct vbe_piece pc[VRDMA_MAX_SGE];
	unsigned np;
	int st;

	*len = 0;
	if (w->opcode != VRDMA_OP_SEND && w->opcode != VRDMA_OP_SEND_IMM)
		return VRDMA_WS_LOC_QP_OP_ERR;
	st = vbe_sges(g, qp->pd, w, false, pc, &np, len);
	if (st)
		return st;
	if (*len > VRDMA_UD_MTU)
		return VRDMA_WS_LOC_LEN_ERR;
	/* Through the device, the payload is what its MTU leaves behind
	 * our header: what max-ud-msg told the guest. */
	if (*len > g->node->max_ud_msg &&
	    memcmp(w->wr.ud.dgid, g->node->gid, sizeof(g->node->gid)))
		return VRDMA_WS_LOC_LEN_ERR;
	vbe_ud_deliver(g, qp, w, pc, np, *len);
	return VRDMA_WS_SUCCESS;
}

/* Every queued send, while the budget lasts (sched.c: the rest waits on
 * the run list like any QP's); a datagram costs its GRH and payload. */
static void vbe_ud_sq_run(struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vbe_wqe *w;
	uint64_t len;
	int st;

	while (!g->dead && (w = vbe_wq_head(&qp->sq))) {
		if (qp->state != VBE_QPS_RTS) {
			if (qp->state == VBE_QPS_ERR)
				vbe_qp_error(g, qp);
			return;
		}
		if (!vbe_budget_left(g, qp))
			return;
		st = vbe_ud_send(g, qp, w, &len);
		vbe_sched_start_wr(g, w);
		vbe_budget_charge(g, VRDMA_GRH_LEN + len);
		vbe_sq_complete(g, qp, VRDMA_WC_SEND, (uint8_t)st, st ? 0 : (uint32_t)len);
		if (st) {
			vbe_qp_error(g, qp);	/* ERR for IB's SQE: the head comment */
			return;
		}
	}
}

/* Datagrams are never held for a receive: nothing waits on one. */
static void vbe_ud_rq_posted(struct vbe_guest *g, struct vbe_qp *qp)
{
	(void)g;
	(void)qp;
}

/* No peer to tell. */
static void vbe_ud_disconnect(struct vbe_guest *g, struct vbe_qp *qp)
{
	(void)g;
	(void)qp;
}

const struct vbe_target vbe_target_ud = {
	.name		= "ud",
	.sq_run		= vbe_ud_sq_run,
	.rq_posted	= vbe_ud_rq_posted,
	.disconnect	= vbe_ud_disconnect,
};

/* MODIFY_QP UD_RTS (the body checked by the caller but for state's own
 * fields): the QP's Q_Key; from RESET, or again from RTS.  A controlled
 * Q_Key (high bit set) is for privileged consumers (the kernel's verbs
 * want CAP_NET_RAW), which no guest is: ACCESS. */
int vbe_ud_modify(struct vbe_guest *g, struct vbe_qp *qp, const struct vrdma_cmd_modify_qp *m)
{
	static const uint8_t zero[16];

	if (!qp->ud || m->dest_qpn || memcmp(m->dest_gid, zero, sizeof(zero)) ||
	    (qp->state != VBE_QPS_RESET && qp->state != VBE_QPS_RTS))
		return VRDMA_CS_INVAL;
	if (m->qkey & VRDMA_QKEY_OWN)
		return VRDMA_CS_ACCESS;
	qp->qkey = m->qkey;
	if (qp->state == VBE_QPS_RTS)
		return VRDMA_CS_OK;
	qp->state = VBE_QPS_RTS;
	qp->tgt = &vbe_target_ud;
	vbe_sched_held(g->node, qp);
	if (qp->sq.count)
		qp->tgt->sq_run(g, qp);
	return VRDMA_CS_OK;
}
