// SPDX-License-Identifier: MIT
/*
 * Datagrams between guests of different nodes (verbs_ud.h; docs/rdma.md
 * "Datagrams between nodes").  The node's vrdmad owns one device UD QP,
 * one CQ on the device's completion channel, and one registered pool of
 * VBE_VUD_RECVS + VBE_VUD_SENDS buffers (VBE_VUD_BUF bytes each): its
 * dom0 memory is fixed at open.
 *
 * Sending: the guest's payload is copied into a free send buffer behind
 * the header and posted to the destination node's vrdmad QP.  Which QP,
 * and the device address handle to it, the peer table says; a node not
 * in it is resolved (verbs_udcm.c).  While that
 * runs, up to VBE_VUD_HOLD datagrams wait for it in their send buffers;
 * all of it is non-blocking and bounded by VBE_VX_RESOLVE_MS.  No free
 * buffer, a full hold, a node that does not resolve, a device that
 * refuses the send: the datagram is dropped and counted.
 *
 * Receiving: every receive buffer stays posted; a completion's buffer is
 * parsed (verbs_udhdr.c), handed to local/ud.c for the checks any
 * datagram gets and copied into the guest's receive there, then posted
 * again.  A listener on RDMA_PS_UDP answers other nodes' resolutions
 * with our QP number; it grants nothing: each datagram is checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "verbs_udi.h"
#include "../local/local.h"

static uint8_t *vbe_vud_rbuf(struct vbe_vud *u, uint32_t i)
{
	return u->buf + (size_t)i * VBE_VUD_BUF;
}

static uint8_t *vbe_vud_sbuf(struct vbe_vud *u, uint32_t i)
{
	return u->buf + (size_t)(VBE_VUD_RECVS + i) * VBE_VUD_BUF;
}

static int vbe_vud_post_recv(struct vbe_vud *u, uint32_t i)
{
	struct ibv_sge sg = {
		.addr = (uintptr_t)vbe_vud_rbuf(u, i), .length = VBE_VUD_BUF, .lkey = u->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)VBE_VUD_WR_RECV << 32 | i,
				  .sg_list = &sg, .num_sge = 1 }, *bad;

	return ibv_post_recv(u->qp, &wr, &bad) ? -EIO : 0;
}

/* RESET -> INIT -> RTR -> RTS, Q_Key VBE_VUD_QKEY: what SIDR tells peers. */
static int vbe_vud_qp_up(struct vbe_vud *u)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = u->port;
	a.qkey = VBE_VUD_QKEY;
	if (ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_QKEY))
		return -EIO;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(u->qp, &a, IBV_QP_STATE))
		return -EIO;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) ? -EIO : 0;
}

static int vbe_vud_listen(struct vbe_vx *vx, struct vbe_vud *u)
{
	if (rdma_create_id(u->ech, &u->lis, vx, RDMA_PS_UDP) ||
	    rdma_bind_addr(u->lis, (struct sockaddr *)&vx->addr) ||
	    rdma_listen(u->lis, VBE_LISTEN_BACKLOG))
		return -errno;
	return 0;
}

int vbe_vud_open(struct vbe_vx *vx)
{
	const size_t len = (size_t)(VBE_VUD_RECVS + VBE_VUD_SENDS) * VBE_VUD_BUF;
	struct ibv_qp_init_attr qa;
	struct ibv_port_attr pa;
	struct vbe_vud *u;
	uint32_t i, mtu;
	int err = -ENOMEM;
	void *p;

	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	if (posix_memalign(&p, VRDMA_PAGE_SIZE, len))
		goto err_free;
	u->buf = p;
	memset(u->buf, 0, len);
	u->port = vx->lis->port_num ? vx->lis->port_num : 1;
	err = -EIO;
	if (ibv_query_port(vx->ctx, u->port, &pa))
		goto err_buf;
	mtu = 128u << pa.active_mtu;		/* IBV_MTU_256 = 1 ... */
	/* Guests are told max-ud-msg, at least IB's smallest MTU: a device
	 * that leaves less behind our header carries no datagrams. */
	if (mtu < 256 + VBE_VUD_HDR) {
		vlog_warn("rdma: device MTU %u leaves under 256 bytes for datagrams: none between nodes",
			  mtu);
		goto err_buf;
	}
	u->max_payload = mtu - VBE_VUD_HDR < VRDMA_UD_MTU ? mtu - VBE_VUD_HDR : VRDMA_UD_MTU;
	u->ech = rdma_create_event_channel();
	if (!u->ech)
		goto err_buf;
	u->pd = ibv_alloc_pd(vx->ctx);
	if (!u->pd)
		goto err_ech;
	u->mr = ibv_reg_mr(u->pd, u->buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (!u->mr)
		goto err_pd;
	u->cq = ibv_create_cq(vx->ctx, VBE_VUD_RECVS + VBE_VUD_SENDS, NULL, vx->cch, 0);
	if (!u->cq)
		goto err_mr;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = u->cq;
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = VBE_VUD_SENDS;
	qa.cap.max_recv_wr = VBE_VUD_RECVS;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	u->qp = ibv_create_qp(u->pd, &qa);
	if (!u->qp)
		goto err_cq;
	err = vbe_vud_qp_up(u);
	for (i = 0; !err && i < VBE_VUD_RECVS; i++)
		err = vbe_vud_post_recv(u, i);
	if (!err)
		err = ibv_req_notify_cq(u->cq, 0) ? -EIO : 0;
	if (!err) {
		int fl = fcntl(u->ech->fd, F_GETFL);

		err = fl < 0 || fcntl(u->ech->fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
	}
	if (!err)
		err = vbe_vud_listen(vx, u);
	if (err)
		goto err_qp;
	for (i = 0; i < VBE_VUD_SENDS; i++)
		u->free[i] = (uint16_t)i;
	u->nfree = VBE_VUD_SENDS;
	vx->ud = u;
	/* Before any guest: each is told it in max-ud-msg. */
	vx->node->max_ud_msg = u->max_payload;
	vlog_info("rdma: datagrams between nodes on UD QP %u (payload up to %u bytes)",
		  u->qp->qp_num, u->max_payload);
	return 0;

err_qp:
	if (u->lis)
		rdma_destroy_id(u->lis);
	ibv_destroy_qp(u->qp);
err_cq:
	ibv_destroy_cq(u->cq);
err_mr:
	ibv_dereg_mr(u->mr);
err_pd:
	ibv_dealloc_pd(u->pd);
err_ech:
	rdma_destroy_event_channel(u->ech);
err_buf:
	free(u->buf);
err_free:
	free(u);
	return err;
}

/* At vrdmad's exit, after the reaper stopped: here may wait. */
void vbe_vud_close(struct vbe_vx *vx)
{
	struct vbe_vud *u = vx->ud;
	unsigned i;

	if (!u)
		return;
	for (i = 0; i < VBE_VUD_PEERS; i++) {
		if (u->peer[i].id)
			rdma_destroy_id(u->peer[i].id);
		if (u->peer[i].ah)
			ibv_destroy_ah(u->peer[i].ah);
	}
	rdma_destroy_id(u->lis);
	ibv_destroy_qp(u->qp);
	ibv_destroy_cq(u->cq);
	ibv_dereg_mr(u->mr);
	ibv_dealloc_pd(u->pd);
	rdma_destroy_event_channel(u->ech);
	free(u->buf);
	free(u);
	vx->ud = NULL;
}

int vbe_vud_fd(const struct vbe_vx *vx)
{
	return vx->ud ? vx->ud->ech->fd : -1;
}

/* CQ events of our CQ: acked at once, the poll reads it. */
bool vbe_vud_cq_event(struct vbe_vx *vx, struct ibv_cq *cq)
{
	if (!vx->ud || cq != vx->ud->cq)
		return false;
	ibv_ack_cq_events(cq, 1);
	return true;
}

/* ---- sending ---- */

void vbe_vud_give(struct vbe_vud *u, uint16_t i)
{
	u->free[u->nfree++] = i;
}

void vbe_vud_post(struct vbe_vud *u, struct vbe_vud_peer *p, uint16_t i)
{
	struct ibv_sge sg = {
		.addr = (uintptr_t)(vbe_vud_sbuf(u, i) + VRDMA_GRH_LEN), .length = u->len[i],
		.lkey = u->mr->lkey,
	};
	struct ibv_send_wr wr = { .wr_id = (uint64_t)VBE_VUD_WR_SEND << 32 | i,
				  .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.ud.ah = p->ah;
	wr.wr.ud.remote_qpn = p->qpn;
	wr.wr.ud.remote_qkey = p->qkey;
	if (ibv_post_send(u->qp, &wr, &bad)) {
		u->ctr.tx_drop++;
		vbe_vud_give(u, i);
		return;
	}
	u->ctr.tx++;
}

static void vbe_vud_drop(struct vbe_guest *g, const char *why, uint32_t qpn)
{
	g->ctr.ud_tx_drop++;
	vlog_dbg("guest %u: datagram to QP %u of another node dropped: %s", g->domid, qpn, why);
}

void vbe_vud_send(struct vbe_guest *g, struct vbe_qp *qp, const struct vbe_wqe *w,
		  const struct vbe_piece *pc, unsigned np, uint64_t total)
{
	struct vbe_vx *vx = g->node->vx;
	uint32_t qpn = w->wr.ud.remote_qpn, qkey = w->wr.ud.remote_qkey;
	struct vbe_vud_hdr h;
	struct vbe_vud_peer *p;
	struct vbe_vud *u;
	uint8_t *b;
	uint16_t i;
	unsigned k;

	if (!vx || !vx->ud) {
		vbe_vud_drop(g, "no RDMA device for datagrams", qpn);
		return;
	}
	u = vx->ud;
	if (!qpn || qpn >= 1u << 24) {
		vbe_vud_drop(g, "no such QP number", qpn);
		return;
	}
	/* A defence: local/ud.c fails a send past max-ud-msg, which is
	 * max_payload, with LOC_LEN_ERR before it comes here. */
	if (total > u->max_payload) {
		vbe_vud_drop(g, "larger than the device's MTU", qpn);
		return;
	}
	if (!u->nfree) {
		vbe_vud_drop(g, "no free device send buffer", qpn);
		return;
	}
	p = vbe_vud_peer(vx, w->wr.ud.dgid);
	if (!p || p->state == VBE_VUD_FAILED ||
	    (p->state == VBE_VUD_RESOLVING && p->nheld == VBE_VUD_HOLD)) {
		vbe_vud_drop(g, !p ? "node not reachable by datagrams" :
			     p->state == VBE_VUD_FAILED ? "node did not resolve" :
			     "node still resolving", qpn);
		return;
	}
	i = u->free[--u->nfree];
	memset(&h, 0, sizeof(h));
	h.dqpn = qpn;
	h.sqpn = qp->qpn;
	h.qkey = qkey & VRDMA_QKEY_OWN ? qp->qkey : qkey;
	h.imm = w->wr.imm_data;
	h.has_imm = w->opcode == VRDMA_OP_SEND_IMM;
	h.group = vbe_policy_ghash(g->node, g->tenant);
	h.len = (uint32_t)total;
	b = vbe_vud_sbuf(u, i) + VRDMA_GRH_LEN;
	vbe_vud_pack(&h, b);
	for (b += VBE_VUD_HDR, k = 0; k < np; b += pc[k].len, k++)
		memcpy(b, pc[k].p, pc[k].len);
	u->len[i] = VBE_VUD_HDR + (uint32_t)total;
	g->ctr.ud_tx++;
	g->ctr.tx_bytes += total;
	g->ctr.tx_ops++;
	if (p->state == VBE_VUD_RESOLVING) {
		p->held[p->nheld++] = i;
		return;
	}
	p->used = vx->node->now_ms;
	vbe_vud_post(u, p, i);
}

/* ---- receiving ---- */

static void vbe_vud_recv(struct vbe_vx *vx, uint32_t i, const struct ibv_wc *wc)
{
	struct vbe_vud *u = vx->ud;
	const uint8_t *b = vbe_vud_rbuf(u, i);
	struct vbe_vud_hdr h;
	const char *why;
	size_t off;
	int err;

	if (wc->status == IBV_WC_SUCCESS) {
		err = vbe_vud_parse(b, wc->byte_len, &h, &off);
		if (err) {
			u->ctr.rx_bad++;
			vlog_limited(&u->lim, VLOG_INFO, "rdma: a datagram from another node "
				     "dropped: bad header (%u bytes, %s)", wc->byte_len,
				     strerror(-err));
		} else if ((why = vbe_ud_from_node(vx->node, &h, b + off))) {
			u->ctr.rx_drop++;
			vlog_dbg("rdma: datagram to QP %u from another node dropped: %s",
				 h.dqpn, why);
		} else {
			u->ctr.rx++;
		}
	}
	if (vbe_vud_post_recv(u, i))
		vlog_limited(&u->lim, VLOG_WARN, "rdma: a datagram receive buffer could not "
			     "be posted again");
}

int vbe_vud_poll(struct vbe_vx *vx, int budget)
{
	struct ibv_wc wc[VBE_VX_CQ_BATCH];
	struct vbe_vud *u = vx->ud;
	int i, k, done = 0;

	while (u && done < budget) {
		k = ibv_poll_cq(u->cq, VBE_VX_CQ_BATCH, wc);
		if (k <= 0)
			break;
		for (i = 0; i < k; i++) {
			uint32_t slot = (uint32_t)wc[i].wr_id;

			if (wc[i].wr_id >> 32 == VBE_VUD_WR_RECV && slot < VBE_VUD_RECVS) {
				vbe_vud_recv(vx, slot, &wc[i]);
			} else if (wc[i].wr_id >> 32 == VBE_VUD_WR_SEND && slot < VBE_VUD_SENDS) {
				if (wc[i].status != IBV_WC_SUCCESS)
					u->ctr.tx_drop++;
				vbe_vud_give(u, (uint16_t)slot);
			}
		}
		done += k;
	}
	return done;
}

int vbe_vud_arm(struct vbe_vx *vx)
{
	if (!vx->ud)
		return 0;
	ibv_req_notify_cq(vx->ud->cq, 0);
	/* A completion that landed before the arm raises no event. */
	return vbe_vud_poll(vx, VBE_VX_POLL_CQES) > 0;
}
