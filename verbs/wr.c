// SPDX-License-Identifier: MIT
/*
 * The ibv_qp_ex work-request builder (ibv_wr_start ... ibv_wr_complete).
 * wr_start takes the QP's sq_lock and wr_complete / wr_abort release it,
 * as rdma-core's providers do: a batch belongs to one thread.  Each
 * builder call appends a libvrdma WR to the QP's scratch array; setters
 * act on the last one.  A mistake is remembered and reported by
 * wr_complete, which then posts nothing (the builder calls return void).
 */
#include <errno.h>
#include <string.h>

#include "vvb.h"

static struct vvb_qp *vvb_qx(struct ibv_qp_ex *qx)
{
	return vvb_container_of(qx, struct vvb_qp, qpx);
}

static void vvb_fail(struct vvb_qp *q, int rc)
{
	if (!q->batch_err)
		q->batch_err = rc;
}

static struct vrdma_send_wr *vvb_wr_new(struct ibv_qp_ex *qx, enum vrdma_wr_opcode op)
{
	struct vvb_qp *q = vvb_qx(qx);
	struct vrdma_send_wr *v;

	if (q->batch_err)
		return NULL;
	if (q->nbatch >= q->sq_depth) {
		vvb_fail(q, ENOMEM);		/* more than the queue holds */
		return NULL;
	}
	if (qx->wr_flags & ~(unsigned int)(IBV_SEND_SIGNALED | IBV_SEND_FENCE |
					   IBV_SEND_SOLICITED | IBV_SEND_INLINE)) {
		vvb_fail(q, EINVAL);
		return NULL;
	}
	v = &q->swr[q->nbatch];
	memset(v, 0, sizeof(*v));
	v->opcode = op;
	v->wr_id = qx->wr_id;
	v->send_flags = ((qx->wr_flags & IBV_SEND_SIGNALED) ? VRDMA_SEND_SIGNALED : 0) |
			((qx->wr_flags & IBV_SEND_FENCE) ? VRDMA_SEND_FENCE : 0);
	v->sg_list = &q->ssge[(size_t)q->nbatch * q->cap.max_send_sge];
	q->nbatch++;
	return v;
}

/* The WR a setter applies to: the last one started. */
static struct vrdma_send_wr *vvb_wr_last(struct vvb_qp *q)
{
	if (q->batch_err)
		return NULL;
	if (!q->nbatch) {
		vvb_fail(q, EINVAL);
		return NULL;
	}
	return &q->swr[q->nbatch - 1];
}

static void vvb_wr_rdma(struct ibv_qp_ex *qx, enum vrdma_wr_opcode op, uint32_t rkey,
			uint64_t remote_addr, __be32 imm)
{
	struct vrdma_send_wr *v = vvb_wr_new(qx, op);

	if (!v)
		return;
	v->wr.rdma.rkey = rkey;
	v->wr.rdma.remote_addr = remote_addr;
	v->imm_data = imm;
}

static void vvb_wr_rdma_write(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t remote_addr)
{
	vvb_wr_rdma(qx, VRDMA_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void vvb_wr_rdma_write_imm(struct ibv_qp_ex *qx, uint32_t rkey,
				  uint64_t remote_addr, __be32 imm)
{
	vvb_wr_rdma(qx, VRDMA_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr, imm);
}

static void vvb_wr_rdma_read(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t remote_addr)
{
	vvb_wr_rdma(qx, VRDMA_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void vvb_wr_send(struct ibv_qp_ex *qx)
{
	vvb_wr_new(qx, VRDMA_WR_SEND);
}

static void vvb_wr_send_imm(struct ibv_qp_ex *qx, __be32 imm)
{
	struct vrdma_send_wr *v = vvb_wr_new(qx, VRDMA_WR_SEND_WITH_IMM);

	if (v)
		v->imm_data = imm;
}

static void vvb_wr_atomic(struct ibv_qp_ex *qx, enum vrdma_wr_opcode op, uint32_t rkey,
			  uint64_t remote_addr, uint64_t compare_add, uint64_t swap)
{
	struct vrdma_send_wr *v = vvb_wr_new(qx, op);

	if (!v)
		return;
	v->wr.atomic.rkey = rkey;
	v->wr.atomic.remote_addr = remote_addr;
	v->wr.atomic.compare_add = compare_add;
	v->wr.atomic.swap = swap;
}

static void vvb_wr_cmp_swp(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t remote_addr,
			   uint64_t compare, uint64_t swap)
{
	vvb_wr_atomic(qx, VRDMA_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr, compare, swap);
}

static void vvb_wr_fetch_add(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t remote_addr,
			     uint64_t add)
{
	vvb_wr_atomic(qx, VRDMA_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr, add, 0);
}

static void vvb_wr_set_sge(struct ibv_qp_ex *qx, uint32_t lkey, uint64_t addr,
			   uint32_t length)
{
	struct vrdma_send_wr *v = vvb_wr_last(vvb_qx(qx));

	if (!v)
		return;
	v->sg_list[0].addr = addr;
	v->sg_list[0].length = length;
	v->sg_list[0].lkey = lkey;
	v->num_sge = 1;
}

static void vvb_wr_set_sge_list(struct ibv_qp_ex *qx, size_t num_sge,
				const struct ibv_sge *sg_list)
{
	struct vvb_qp *q = vvb_qx(qx);
	struct vrdma_send_wr *v = vvb_wr_last(q);
	size_t k;

	if (!v)
		return;
	if (num_sge > q->cap.max_send_sge) {
		vvb_fail(q, EINVAL);
		return;
	}
	for (k = 0; k < num_sge; k++) {
		v->sg_list[k].addr = sg_list[k].addr;
		v->sg_list[k].length = sg_list[k].length;
		v->sg_list[k].lkey = sg_list[k].lkey;
	}
	v->num_sge = (int)num_sge;
}

static void vvb_wr_set_inline_data_list(struct ibv_qp_ex *qx, size_t num_buf,
					const struct ibv_data_buf *buf_list)
{
	struct vvb_qp *q = vvb_qx(qx);
	struct vrdma_send_wr *v = vvb_wr_last(q);
	size_t total = 0, k;
	uint8_t *slot;

	if (!v)
		return;
	for (k = 0; k < num_buf; k++)
		total += buf_list[k].length;
	if (total > q->cap.max_inline_data || v->opcode == VRDMA_WR_RDMA_READ ||
	    v->opcode == VRDMA_WR_ATOMIC_CMP_AND_SWP ||
	    v->opcode == VRDMA_WR_ATOMIC_FETCH_AND_ADD) {
		vvb_fail(q, EINVAL);
		return;
	}
	v->num_sge = 0;
	if (!total)
		return;
	/* copied now: the caller may reuse its buffers after this call */
	slot = vvb_inline_slot(q, q->nbatch - 1);
	total = 0;
	for (k = 0; k < num_buf; k++) {
		memcpy(slot + total, buf_list[k].addr, buf_list[k].length);
		total += buf_list[k].length;
	}
	v->sg_list[0].addr = (uintptr_t)slot;
	v->sg_list[0].length = (uint32_t)total;
	v->sg_list[0].lkey = q->imr->lkey;
	v->num_sge = 1;
}

static void vvb_wr_set_inline_data(struct ibv_qp_ex *qx, void *addr, size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	vvb_wr_set_inline_data_list(qx, 1, &b);
}

static void vvb_wr_start(struct ibv_qp_ex *qx)
{
	struct vvb_qp *q = vvb_qx(qx);

	vvb_lock(&q->sq_lock);
	q->nbatch = 0;
	q->batch_err = 0;
}

static int vvb_wr_complete(struct ibv_qp_ex *qx)
{
	struct vvb_qp *q = vvb_qx(qx);
	uint32_t posted;
	int rc = q->batch_err;

	if (!rc)
		rc = vvb_sq_post(q, q->nbatch, &posted);
	q->nbatch = 0;
	q->batch_err = 0;
	vvb_unlock(&q->sq_lock);
	return rc;
}

static void vvb_wr_abort(struct ibv_qp_ex *qx)
{
	struct vvb_qp *q = vvb_qx(qx);

	q->nbatch = 0;
	q->batch_err = 0;
	vvb_unlock(&q->sq_lock);
}

/* ---- what vrdma has not: a later wr_complete() fails EOPNOTSUPP ---- */

static void vvb_wr_bind_mw(struct ibv_qp_ex *qx, struct ibv_mw *mw, uint32_t rkey,
			   const struct ibv_mw_bind_info *info)
{
	(void)mw; (void)rkey; (void)info;
	vvb_fail(vvb_qx(qx), EOPNOTSUPP);
}

static void vvb_wr_local_inv(struct ibv_qp_ex *qx, uint32_t rkey)
{
	(void)rkey;
	vvb_fail(vvb_qx(qx), EOPNOTSUPP);
}

static void vvb_wr_send_inv(struct ibv_qp_ex *qx, uint32_t rkey)
{
	(void)rkey;
	vvb_fail(vvb_qx(qx), EOPNOTSUPP);
}

static void vvb_wr_send_tso(struct ibv_qp_ex *qx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr; (void)hdr_sz; (void)mss;
	vvb_fail(vvb_qx(qx), EOPNOTSUPP);
}

static void vvb_wr_set_ud_addr(struct ibv_qp_ex *qx, struct ibv_ah *ah, uint32_t qpn,
			       uint32_t qkey)
{
	(void)ah; (void)qpn; (void)qkey;
	vvb_fail(vvb_qx(qx), EOPNOTSUPP);
}

static void vvb_wr_set_xrc_srqn(struct ibv_qp_ex *qx, uint32_t srqn)
{
	(void)srqn;
	vvb_fail(vvb_qx(qx), EOPNOTSUPP);
}

static void vvb_wr_atomic_write(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr,
				const void *wr)
{
	(void)rkey; (void)addr; (void)wr;
	vvb_fail(vvb_qx(qx), EOPNOTSUPP);
}

void vvb_wr_init(struct vvb_qp *q)
{
	struct ibv_qp_ex *qx = &q->qpx;

	qx->wr_atomic_cmp_swp = vvb_wr_cmp_swp;
	qx->wr_atomic_fetch_add = vvb_wr_fetch_add;
	qx->wr_bind_mw = vvb_wr_bind_mw;
	qx->wr_local_inv = vvb_wr_local_inv;
	qx->wr_rdma_read = vvb_wr_rdma_read;
	qx->wr_rdma_write = vvb_wr_rdma_write;
	qx->wr_rdma_write_imm = vvb_wr_rdma_write_imm;
	qx->wr_send = vvb_wr_send;
	qx->wr_send_imm = vvb_wr_send_imm;
	qx->wr_send_inv = vvb_wr_send_inv;
	qx->wr_send_tso = vvb_wr_send_tso;
	qx->wr_set_ud_addr = vvb_wr_set_ud_addr;
	qx->wr_set_xrc_srqn = vvb_wr_set_xrc_srqn;
	qx->wr_set_inline_data = vvb_wr_set_inline_data;
	qx->wr_set_inline_data_list = vvb_wr_set_inline_data_list;
	qx->wr_set_sge = vvb_wr_set_sge;
	qx->wr_set_sge_list = vvb_wr_set_sge_list;
	qx->wr_start = vvb_wr_start;
	qx->wr_complete = vvb_wr_complete;
	qx->wr_abort = vvb_wr_abort;
	qx->wr_atomic_write = vvb_wr_atomic_write;
}
