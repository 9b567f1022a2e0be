// SPDX-License-Identifier: MIT
/*
 * The links of teams across nodes over the RDMA device (the transport
 * of backend/coll/link.h; docs/rdma.md "Teams' links between nodes";
 * verbs_colli.h has the area, verbs_collcm.c the connecting).  One RC
 * QP per link, on the node's own PD and CQ, not a guest's.
 *
 * Message i is an RDMA write with immediate (i's low 31 bits) from our
 * out slot i % 4 into the peer's in slot i % 4; the count of the peer's
 * messages we consumed is a write with immediate (VBE_VCL_IMM_USED) of
 * the 8-byte count into the peer's word.  Each takes one of the receives
 * without buffers that each side keeps posted.  A receiver checks the
 * immediate against its own count and room, and a count against what it
 * sent: anything else takes the link down.  So the chain's rules (room
 * only after the peer consumed) hold on the device too.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "log.h"
#include "verbs_colli.h"

uint64_t vbe_vcl_wrid(const struct vbe_vcl *c, unsigned kind)
{
	return (uint64_t)c->gen << 40 | (uint64_t)c->idx << 8 | kind;
}

static struct vbe_vcoll *vbe_vcl_node(struct vbe_vx *vx)
{
	struct vbe_vcoll *vc = vx->vcl;

	if (vc)
		return vc;
	vc = calloc(1, sizeof(*vc));
	if (!vc)
		return NULL;
	vc->pd = ibv_alloc_pd(vx->ctx);
	vc->cq = vc->pd ? ibv_create_cq(vx->ctx, VBE_VCL_MAX * (VBE_VCL_RECVS + VBE_VCL_SENDS),
					vc, vx->cch, 0) : NULL;
	if (!vc->cq || ibv_req_notify_cq(vc->cq, 0)) {
		if (vc->cq)
			ibv_destroy_cq(vc->cq);
		if (vc->pd)
			ibv_dealloc_pd(vc->pd);
		free(vc);
		return NULL;
	}
	vx->vcl = vc;
	return vc;
}

/* The id and its QP go (their completions are known stale by gen). */
void vbe_vcl_drop_id(struct vbe_vcl *c)
{
	if (!c->id)
		return;
	if (c->state == VBE_VCL_UP)
		rdma_disconnect(c->id);
	if (c->id->qp)
		rdma_destroy_qp(c->id);
	rdma_destroy_id(c->id);
	c->id = NULL;
	c->sends = 0;
	c->gen = ++c->vx->vcl->gen[c->idx];
}

void vbe_vcl_free(struct vbe_vcl *c)
{
	struct vbe_vcoll *vc = c->vx->vcl;

	vbe_vcl_drop_id(c);
	vc->l[c->idx] = NULL;
	vc->gen[c->idx]++;
	ibv_dereg_mr(c->out_mr);
	ibv_dereg_mr(c->in_mr);
	free(c->mem);
	free(c);
}

void vbe_vcl_down(struct vbe_vcl *c, const char *why)
{
	if (c->closing) {
		vbe_vcl_free(c);
		return;
	}
	if (c->state == VBE_VCL_DOWN)
		return;
	vlog_info("rdma: team link %u: %s", c->idx, why);
	vbe_vcl_drop_id(c);
	c->state = VBE_VCL_DOWN;
	c->l.down = true;
	vbe_chain_link_state(&c->l);
}

/* ---- the seam's ops ---- */

/* Node `peer` (a name from the team's list) as an address of vrdmad's
 * port: the connector's destination, the acceptor's only caller. */
static int vbe_vcl_resolve(struct vbe_vx *vx, const char *peer, struct sockaddr_storage *out)
{
	struct addrinfo hints = { .ai_family = AF_INET }, *res;
	char port[8];

	snprintf(port, sizeof(port), "%u", vx->port);
	hints.ai_flags = AI_NUMERICHOST;
	if (getaddrinfo(peer, port, &hints, &res)) {
		hints.ai_flags = 0;	/* a name: /etc/hosts is instant */
		if (getaddrinfo(peer, port, &hints, &res))
			return -ENOENT;
	}
	memcpy(out, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

static int vbe_vcl_open(struct vbe_node *n, struct vbe_team *t, enum vbe_cl_dir dir,
			const char *peer, struct vbe_clink **out)
{
	struct vbe_vx *vx = n->vx;
	struct vbe_vcoll *vc = vx ? vbe_vcl_node(vx) : NULL;
	struct vbe_vcl *c;
	uint32_t i;
	void *mem;

	if (!vc)
		return -ENODEV;
	for (i = 0; i < VBE_VCL_MAX && vc->l[i]; i++)
		;
	if (i == VBE_VCL_MAX)
		return -ENOSPC;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (vbe_vcl_resolve(vx, peer, &c->dst)) {
		vlog_warn("rdma: team link to %s: no such node", peer);
		free(c);
		return -ENOENT;
	}
	if (posix_memalign(&mem, VRDMA_PAGE_SIZE, VBE_VCL_AREA)) {
		free(c);
		return -ENOMEM;
	}
	memset(mem, 0, VBE_VCL_AREA);
	c->mem = mem;
	c->in_mr = ibv_reg_mr_iova(vc->pd, mem, VBE_VCL_IN_LEN, 0,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	c->out_mr = ibv_reg_mr(vc->pd, c->mem + VBE_VCL_OUT_OFF, VBE_CL_SLOTS * VBE_CL_SLOT,
			       IBV_ACCESS_LOCAL_WRITE);
	if (!c->in_mr || !c->out_mr) {
		if (c->in_mr)
			ibv_dereg_mr(c->in_mr);
		if (c->out_mr)
			ibv_dereg_mr(c->out_mr);
		free(mem);
		free(c);
		return -EIO;
	}
	c->vx = vx;
	c->idx = i;
	c->gen = vc->gen[i];
	c->l.t = t;
	c->l.dir = (uint8_t)dir;
	c->l.in = c->mem;
	c->l.out = c->mem + VBE_VCL_OUT_OFF;
	c->l.impl = c;
	memcpy(c->key, t->key, 16);
	c->hash = t->hash;
	c->size = t->size;
	c->from = t->span->k;
	vc->l[i] = c;
	*out = &c->l;
	if (dir == VBE_CL_PREV)
		c->state = VBE_VCL_WAIT;	/* node k-1 connects */
	else
		vbe_vcl_try(c);
	return 0;
}

static int vbe_vcl_post(struct vbe_vcl *c, uint64_t laddr, uint32_t len, uint32_t lkey,
			uint64_t raddr, uint32_t imm, unsigned flags)
{
	struct ibv_sge sg = { .addr = laddr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = vbe_vcl_wrid(c, VBE_VCL_WR_SEND), .sg_list = &sg, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .send_flags = IBV_SEND_SIGNALED | flags,
		.imm_data = htonl(imm),
		.wr = { .rdma = { .remote_addr = raddr, .rkey = c->peer_rkey } },
	}, *bad;

	if (c->state != VBE_VCL_UP || ibv_post_send(c->id->qp, &wr, &bad))
		return -EIO;
	c->sends++;
	return 0;
}

static int vbe_vcl_send(struct vbe_clink *l, uint32_t len)
{
	struct vbe_vcl *c = l->impl;
	uint64_t slot = (l->sent % VBE_CL_SLOTS) * VBE_CL_SLOT;
	int rc;

	if (c->sends >= VBE_VCL_SENDS - 1)
		return -EAGAIN;		/* cannot be: 4 messages and their counts */
	rc = vbe_vcl_post(c, (uintptr_t)l->out + slot, VBE_CL_HDR + len, c->out_mr->lkey,
			  c->peer_addr + slot, (uint32_t)l->sent & ~VBE_VCL_IMM_USED, 0);
	if (rc)
		vbe_vcl_down(c, "a message could not be posted");
	return rc;
}

static void vbe_vcl_consumed(struct vbe_clink *l)
{
	struct vbe_vcl *c = l->impl;
	uint64_t used = l->used;

	if (c->state != VBE_VCL_UP)
		return;			/* nobody to tell */
	if (c->sends >= VBE_VCL_SENDS - 1) {
		c->used_due = true;	/* the next completion sends it */
		return;
	}
	c->used_due = false;
	if (vbe_vcl_post(c, (uintptr_t)&used, sizeof(used), 0, c->peer_addr + VBE_VCL_WORD,
			 VBE_VCL_IMM_USED, IBV_SEND_INLINE))
		vbe_vcl_down(c, "a count could not be posted");
}

/* The chain is done with l.  What it sent last (the last chunk of a
 * result, an ABORT) is still on its way: the QP lingers until the device
 * says it landed, VBE_VCL_LINGER_MS at most, so that members who leave at
 * once do not take it from the others. */
static void vbe_vcl_close(struct vbe_clink *l)
{
	struct vbe_vcl *c = l->impl;

	c->l.t = NULL;
	if (c->state == VBE_VCL_UP && c->sends) {
		c->closing = true;
		c->close_ms = vplat_now_ms() + VBE_VCL_LINGER_MS;
		return;
	}
	vbe_vcl_free(c);
}

const struct vbe_clink_ops vbe_vcl_ops = {
	vbe_vcl_open, vbe_vcl_send, vbe_vcl_consumed, vbe_vcl_close,
};

/* ---- completions ---- */

bool vbe_vcl_cq_event(struct vbe_vx *vx, struct ibv_cq *cq)
{
	if (!vx->vcl || cq != vx->vcl->cq)
		return false;
	ibv_ack_cq_events(cq, 1);
	return true;
}

static void vbe_vcl_recv(struct vbe_vcl *c, const struct ibv_wc *wc)
{
	volatile const uint64_t *word;
	uint32_t imm;
	uint64_t v;

	if (wc->status != IBV_WC_SUCCESS || wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
	    !(wc->wc_flags & IBV_WC_WITH_IMM)) {
		vbe_vcl_down(c, wc->status ? ibv_wc_status_str(wc->status) : "not a write");
		return;
	}
	imm = ntohl(wc->imm_data);
	if (imm == VBE_VCL_IMM_USED) {
		word = (volatile const uint64_t *)(c->mem + VBE_VCL_WORD);
		v = *word;
		if (v > c->l.sent || v < c->l.peer_used) {
			vbe_vcl_down(c, "the other node counts what was never sent");
			return;
		}
		c->l.peer_used = v;
	} else if (imm != ((uint32_t)c->l.got & ~VBE_VCL_IMM_USED) ||
		   c->l.got - c->l.used >= VBE_CL_SLOTS) {
		vbe_vcl_down(c, "the other node wrote past its room");
		return;
	} else {
		c->l.got++;
	}
	if (vbe_vcl_repost(c)) {
		vbe_vcl_down(c, "no receive for the next message");
		return;
	}
	vbe_chain_kick(&c->l);
}

static void vbe_vcl_wc(struct vbe_vx *vx, const struct ibv_wc *wc)
{
	uint32_t i = (uint32_t)(wc->wr_id >> 8 & 0xffffffu);
	struct vbe_vcl *c = i < VBE_VCL_MAX ? vx->vcl->l[i] : NULL;

	/* A link or a QP that went; an acceptor's QP may deliver before its
	 * ESTABLISHED event: the chain reads nothing before the link is up. */
	if (!c || c->gen != (uint16_t)(wc->wr_id >> 40) ||
	    (c->state != VBE_VCL_UP && c->state != VBE_VCL_CONN))
		return;
	if (c->closing) {
		if ((wc->wr_id & 0xff) == VBE_VCL_WR_SEND && (!--c->sends || wc->status))
			vbe_vcl_free(c);
		return;
	}
	if ((wc->wr_id & 0xff) != VBE_VCL_WR_SEND) {
		vbe_vcl_recv(c, wc);
		return;
	}
	c->sends--;
	if (wc->status != IBV_WC_SUCCESS)
		vbe_vcl_down(c, ibv_wc_status_str(wc->status));
	else if (c->used_due)
		vbe_vcl_consumed(&c->l);
}

int vbe_vcl_poll(struct vbe_vx *vx, int budget)
{
	struct ibv_wc wc[VBE_VX_CQ_BATCH];
	int k, done = 0;

	while (vx->vcl && done < budget) {
		k = ibv_poll_cq(vx->vcl->cq, VBE_VX_CQ_BATCH, wc);
		if (k <= 0)
			break;
		for (int i = 0; i < k; i++)
			vbe_vcl_wc(vx, &wc[i]);
		done += k;
	}
	return done;
}

int vbe_vcl_arm(struct vbe_vx *vx)
{
	if (!vx->vcl)
		return 0;
	ibv_req_notify_cq(vx->vcl->cq, 0);
	return vbe_vcl_poll(vx, VBE_VX_POLL_CQES) > 0;
}

void vbe_vcl_close_all(struct vbe_vx *vx)
{
	struct vbe_vcoll *vc = vx->vcl;

	if (!vc)
		return;
	for (uint32_t i = 0; i < VBE_VCL_MAX; i++)	/* lingering: teams are gone */
		if (vc->l[i])
			vbe_vcl_free(vc->l[i]);
	ibv_destroy_cq(vc->cq);
	ibv_dealloc_pd(vc->pd);
	free(vc);
	vx->vcl = NULL;
}
