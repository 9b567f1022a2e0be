// SPDX-License-Identifier: MIT
/*
 * The fallback's engine: one step (a chunk of the head operation) at a
 * time, as far as the completions at hand allow.  vct.h has the shape
 * and the flow-control rule; this file keeps to them:
 *   BEGIN   post the next step's receives, send what needs nothing
 *   NODE    (leader) every member's part is in: P(k)
 *   PREFIX  (leader k > 0) nodes 0..k-1 are in: prefix OP P(k)
 *   FINAL   the result is in: deliver it, pass it to the members
 *   DRAIN   every send of the step completed: the step is over
 */
#include <errno.h>
#include <string.h>

#include "vct.h"
#include "../../common/coll/vcoll_reduce.h"

#define VCT_WR_SEND	2u

static uint64_t vct_wr_id(const struct vrdma_team *t, const struct vct_link *l,
			  unsigned send, uint32_t step)
{
	return ((uint64_t)(l - t->links) << 2) | send | (step & 1);
}

int vct_post_recv(struct vrdma_team *t, struct vct_link *l, uint32_t step)
{
	struct vrdma_sge sge = {
		.addr = (uintptr_t)l->rslot[step & 1],
		.length = VCT_SLOT,
		.lkey = t->mr->lkey,
	};
	struct vrdma_recv_wr wr = {
		.wr_id = vct_wr_id(t, l, 0, step),
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;

	return -vrdma_post_recv(l->qp, &wr, &bad);
}

static void vct_chunk(const struct vrdma_team *t, const struct vct_op *op,
		      uint64_t *coff, uint32_t *clen)
{
	uint64_t off = (uint64_t)t->chunk * VCT_CHUNK;
	uint64_t left = op->vbytes - off;

	*coff = off;
	*clen = left < VCT_CHUNK ? (uint32_t)left : VCT_CHUNK;
}

/*
 * Rank r's part of the chunk [coff, coff + clen): where it lands in the
 * chunk and how long it is, and (if @src) where r's own buffer has it.
 */
static void vct_part(const struct vct_op *op, uint32_t r, uint64_t coff, uint32_t clen,
		     uint32_t *off, uint32_t *len, const uint8_t **src)
{
	const struct vrdma_coll_args *a = &op->a;
	uint64_t lo, hi;

	*off = 0;
	*len = 0;
	switch (a->kind) {
	case VRDMA_COLL_ALLREDUCE:
	case VRDMA_COLL_REDUCE:
		*len = clen;
		if (src)
			*src = (const uint8_t *)a->sendbuf + coff;
		break;
	case VRDMA_COLL_BCAST:
		if (r == a->root)
			*len = clen;
		if (src)
			*src = (const uint8_t *)a->recvbuf + coff;
		break;
	case VRDMA_COLL_ALLGATHER:
		lo = (uint64_t)r * a->count;
		hi = lo + a->count;
		if (lo < coff)
			lo = coff;
		if (hi > coff + clen)
			hi = coff + clen;
		if (hi > lo) {
			*off = (uint32_t)(lo - coff);
			*len = (uint32_t)(hi - lo);
			if (src)
				*src = (const uint8_t *)a->sendbuf + (lo - (uint64_t)r * a->count);
		}
		break;
	}
}

/* Bytes of the result member r gets: REDUCE only at the root, BCAST
 * everywhere but the root. */
static uint32_t vct_result_len(const struct vct_op *op, uint32_t r, uint32_t clen)
{
	if (op->a.kind == VRDMA_COLL_REDUCE && r != op->a.root)
		return 0;
	if (op->a.kind == VRDMA_COLL_BCAST && r == op->a.root)
		return 0;
	return clen;
}

/* 1: this step's message on @l is in; 0: not yet; -errno: it never will. */
static int vct_has(const struct vct_link *l, unsigned p)
{
	if (l->got[p])
		return 1;
	return l->dead ? -l->dead : 0;
}

static int vct_send(struct vrdma_team *t, struct vct_link *l, const struct vct_op *op,
		    uint8_t flags, uint32_t off, const uint8_t *payload, uint32_t len)
{
	uint8_t *h = l->hout[t->step & 1];
	struct vct_hdr hdr = {
		.magic = VCT_MAGIC, .step = t->step, .seq = op->seq,
		.count = op->a.count, .root = op->a.root,
		.kind = (uint8_t)op->a.kind, .type = (uint8_t)op->a.type,
		.op = (uint8_t)op->a.op, .flags = flags, .off = off, .len = len,
	};
	struct vrdma_sge sge[2] = {
		{ .addr = (uintptr_t)h, .length = VCT_HDR, .lkey = t->mr->lkey },
		{ .addr = (uintptr_t)payload, .length = len, .lkey = t->mr->lkey },
	};
	struct vrdma_send_wr wr = {
		.wr_id = vct_wr_id(t, l, VCT_WR_SEND, t->step),
		.sg_list = sge,
		.num_sge = len ? 2 : 1,
		.opcode = VRDMA_WR_SEND,
		.send_flags = VRDMA_SEND_SIGNALED,
	}, *bad;
	int rc;

	if (l->dead)
		return -l->dead;
	memcpy(h, &hdr, sizeof(hdr));
	rc = vrdma_post_send(l->qp, &wr, &bad);
	if (rc)
		return -rc;
	l->sending++;
	return 0;
}

/*
 * The message of this step on @l, checked against what this member's own
 * arguments say the sender must send: its payload, or NULL and -EPROTO in
 * *err.  @len_any: a BCAST prefix, 0 bytes or @len with VCT_F_DATA.
 */
static const uint8_t *vct_take(struct vrdma_team *t, struct vct_link *l, const struct vct_op *op,
			       uint32_t off, uint32_t len, bool len_any, int *err)
{
	unsigned p = t->step & 1;
	struct vct_hdr h;

	memcpy(&h, l->rslot[p], sizeof(h));
	l->got[p] = false;
	if (h.magic != VCT_MAGIC || h.step != t->step || h.seq != op->seq ||
	    h.count != op->a.count || h.root != op->a.root || h.kind != op->a.kind ||
	    h.type != op->a.type || h.op != op->a.op)
		goto bad;
	if (len_any) {
		if (h.flags & ~VCT_F_DATA || h.len != ((h.flags & VCT_F_DATA) ? len : 0))
			goto bad;
	} else if (h.flags != (op->a.kind == VRDMA_COLL_BCAST && len ? VCT_F_DATA : 0) ||
		   h.len != len) {
		goto bad;
	}
	if (h.off != off || l->rlen[p] != VCT_HDR + h.len)
		goto bad;
	return l->rslot[p] + VCT_HDR;
bad:
	*err = -EPROTO;
	return NULL;
}

/* The result's bytes into this member's own buffer. */
static void vct_deliver(struct vrdma_team *t, const struct vct_op *op, const uint8_t *acc,
			uint64_t coff, uint32_t clen)
{
	if (vct_result_len(op, t->rank, clen) && clen)
		memcpy((uint8_t *)op->a.recvbuf + coff, acc, clen);
}

static int vct_member_step(struct vrdma_team *t, const struct vct_op *op,
			   uint64_t coff, uint32_t clen)
{
	unsigned p = t->step & 1;
	const uint8_t *src = NULL, *res;
	uint32_t off, len;
	int rc = 0;

	switch (t->st) {
	case VCT_BEGIN:
		rc = vct_post_recv(t, t->up, t->step + 1);
		if (rc)
			return rc;
		vct_part(op, t->rank, coff, clen, &off, &len, &src);
		if (len)
			memcpy(t->out[p] + VCT_HDR, src, len);
		rc = vct_send(t, t->up, op, op->a.kind == VRDMA_COLL_BCAST && len ? VCT_F_DATA : 0,
			      off, t->out[p] + VCT_HDR, len);
		if (rc)
			return rc;
		t->st = VCT_FINAL;
		/* fall through */
	case VCT_FINAL:
		rc = vct_has(t->up, p);
		if (rc <= 0)
			return rc;
		res = vct_take(t, t->up, op, 0, vct_result_len(op, t->rank, clen), false, &rc);
		if (!res)
			return rc;
		vct_deliver(t, op, res, coff, clen);
		t->st = VCT_DRAIN;
		return 0;
	default:
		return 0;
	}
}

/*
 * ALLGATHER: every member of this node puts its part into @acc; parts of
 * different ranks never overlap, so the order does not matter.
 */
static int vct_place(struct vrdma_team *t, const struct vct_op *op, uint8_t *acc,
		     uint64_t coff, uint32_t clen)
{
	const uint8_t *src = NULL;
	uint32_t off, len, i;

	vct_part(op, t->rank, coff, clen, &off, &len, &src);
	if (len)
		memcpy(acc + off, src, len);
	for (i = 0; i + 1 < t->nmembers; i++) {
		struct vct_link *l = &t->mem0[i];

		vct_part(op, l->rank, coff, clen, &off, &len, NULL);
		if (len)
			memcpy(acc + off, l->rslot[t->step & 1] + VCT_HDR, len);
	}
	return 0;
}

/* NODE: take every member's part, combine P(k) into out[] (reductions)
 * or note where the root's data is (BCAST). */
static int vct_node(struct vrdma_team *t, const struct vct_op *op, uint64_t coff,
		    uint32_t clen, const uint8_t **pnode)
{
	unsigned p = t->step & 1;
	const void **sv = t->srcs;
	const uint8_t *src = NULL;
	uint32_t off, len, i;
	int rc = 0;

	/* A taken payload stays in its slot until step s + 2 reposts it. */
	for (i = 0; i + 1 < t->nmembers; i++) {
		struct vct_link *l = &t->mem0[i];

		vct_part(op, l->rank, coff, clen, &off, &len, NULL);
		sv[i + 1] = vct_take(t, l, op, off, len, false, &rc);
		if (!sv[i + 1])
			return rc;
	}
	*pnode = NULL;
	switch (op->a.kind) {
	case VRDMA_COLL_ALLREDUCE:
	case VRDMA_COLL_REDUCE:
		vct_part(op, t->rank, coff, clen, &off, &len, &src);
		sv[0] = src;
		rc = vcoll_fold(op->a.type, op->a.op, t->out[p] + VCT_HDR, sv, t->nmembers,
				clen / op->tsize);
		if (rc)
			return rc;
		*pnode = t->out[p] + VCT_HDR;
		break;
	case VRDMA_COLL_BCAST:
		if (op->a.root == t->rank) {
			vct_part(op, t->rank, coff, clen, &off, &len, &src);
			if (clen)	/* a 0-byte bcast may have no buffer */
				memcpy(t->out[p] + VCT_HDR, src, clen);
			*pnode = t->out[p] + VCT_HDR;
		}
		for (i = 0; i + 1 < t->nmembers; i++)
			if (t->mem0[i].rank == op->a.root)
				*pnode = sv[i + 1];
		break;
	}
	return 0;
}

/*
 * Nodes 0..k combined into t->acc: @prefix (nodes 0..k-1, NULL at node 0)
 * OP P(k) for reductions, in that order; for BCAST whichever holds the
 * root's data; for ALLGATHER this node's parts placed over the prefix.
 * Returns the VCT_F_DATA flag the combined payload carries.
 */
static uint8_t vct_combine(struct vrdma_team *t, const struct vct_op *op, uint8_t *prefix,
			   bool prefix_data, const uint8_t *pnode, uint64_t coff, uint32_t clen)
{
	const void *two[2];

	switch (op->a.kind) {
	case VRDMA_COLL_ALLREDUCE:
	case VRDMA_COLL_REDUCE:
		if (!prefix) {
			t->acc = (uint8_t *)pnode;
			break;
		}
		two[0] = prefix;
		two[1] = pnode;
		/* cannot fail: type, op and count were checked at the post */
		(void)vcoll_fold(op->a.type, op->a.op, prefix, two, 2, clen / op->tsize);
		t->acc = prefix;
		break;
	case VRDMA_COLL_BCAST:
		if (prefix && prefix_data) {
			t->acc = prefix;
			return VCT_F_DATA;
		}
		t->acc = (uint8_t *)pnode;
		return pnode && clen ? VCT_F_DATA : 0;
	case VRDMA_COLL_ALLGATHER:
		t->acc = prefix ? prefix : t->out[t->step & 1] + VCT_HDR;
		vct_place(t, op, t->acc, coff, clen);
		break;
	default:
		t->acc = t->out[t->step & 1] + VCT_HDR;
		break;
	}
	return 0;
}

/* The payload bytes a combined prefix or final carries. */
static uint32_t vct_acc_len(const struct vct_op *op, uint8_t flags, uint32_t clen)
{
	if (op->a.kind == VRDMA_COLL_BCAST && !(flags & VCT_F_DATA))
		return 0;
	return clen;
}

/* The result is in t->acc: into this leader's buffer and to its members. */
static int vct_to_members(struct vrdma_team *t, const struct vct_op *op, uint64_t coff,
			  uint32_t clen)
{
	uint8_t flags = op->a.kind == VRDMA_COLL_BCAST ? VCT_F_DATA : 0;
	uint32_t i, len;
	int rc;

	vct_deliver(t, op, t->acc, coff, clen);
	for (i = 0; i + 1 < t->nmembers; i++) {
		len = vct_result_len(op, t->mem0[i].rank, clen);
		rc = vct_send(t, &t->mem0[i], op, len ? flags : 0, 0, t->acc, len);
		if (rc)
			return rc;
	}
	t->st = VCT_DRAIN;
	return 0;
}

static int vct_leader_step(struct vrdma_team *t, const struct vct_op *op,
			   uint64_t coff, uint32_t clen)
{
	unsigned p = t->step & 1;
	const uint8_t *pnode = NULL, *res;
	uint8_t *prefix;
	uint8_t flags;
	uint32_t i;
	int rc = 0;

	switch (t->st) {
	case VCT_BEGIN:
		for (i = 0; i < t->nlinks; i++) {
			if (!t->links[i].recv)
				continue;
			rc = vct_post_recv(t, &t->links[i], t->step + 1);
			if (rc)
				return rc;
		}
		t->st = VCT_NODE;
		/* fall through */
	case VCT_NODE:
		for (i = 0; i + 1 < t->nmembers; i++) {
			rc = vct_has(&t->mem0[i], p);
			if (rc <= 0)
				return rc;
		}
		rc = vct_node(t, op, coff, clen, &pnode);
		if (rc)
			return rc;
		t->acc = (uint8_t *)pnode;
		if (t->node == 0) {
			flags = vct_combine(t, op, NULL, false, pnode, coff, clen);
			goto combined;
		}
		t->st = VCT_PREFIX;
		/* fall through */
	case VCT_PREFIX:
		rc = vct_has(t->prev, p);
		if (rc <= 0)
			return rc;
		prefix = (uint8_t *)vct_take(t, t->prev, op, 0, clen,
					     op->a.kind == VRDMA_COLL_BCAST, &rc);
		if (!prefix)
			return rc;
		flags = vct_combine(t, op, prefix, t->prev->rlen[p] > VCT_HDR, t->acc, coff, clen);
combined:
		if (op->a.kind == VRDMA_COLL_BCAST && t->node == t->nnodes - 1 && clen &&
		    !(flags & VCT_F_DATA))
			return -EPROTO;		/* no node had the root */
		if (t->next) {
			rc = vct_send(t, t->next, op, flags, 0, t->acc,
				      vct_acc_len(op, flags, clen));
			if (rc)
				return rc;
			t->st = VCT_FINAL;
			break;
		}
		for (i = 0; i + 1 < t->nnodes; i++) {
			rc = vct_send(t, &t->fin_out0[i], op, flags, 0, t->acc,
				      vct_acc_len(op, flags, clen));
			if (rc)
				return rc;
		}
		return vct_to_members(t, op, coff, clen);
	case VCT_FINAL:
		break;
	default:
		return 0;
	}
	/* VCT_FINAL */
	rc = vct_has(t->fin_in, p);
	if (rc <= 0)
		return rc;
	res = vct_take(t, t->fin_in, op, 0, vct_acc_len(op, VCT_F_DATA, clen), false, &rc);
	if (!res)
		return rc;
	t->acc = (uint8_t *)res;
	return vct_to_members(t, op, coff, clen);
}

/* Completions into the links' state.  0, or -errno: a failed WR. */
static int vct_drain(struct vrdma_team *t)
{
	struct vrdma_wc wc[16];
	struct vct_link *l;
	int n, i;

	for (;;) {
		n = vrdma_poll_cq(t->cq, 16, wc);
		if (n < 0)
			return -errno;
		for (i = 0; i < n; i++) {
			uint64_t li = wc[i].wr_id >> 2;
			unsigned p = wc[i].wr_id & 1;

			if (li >= t->nlinks)
				return -EPROTO;
			l = &t->links[li];
			if (wc[i].status != VRDMA_WC_SUCCESS) {
				int e = wc[i].status == VRDMA_WC_LOC_LEN_ERR ? EPROTO : ECONNRESET;

				if (wc[i].wr_id & VCT_WR_SEND)
					return -e;
				if (!l->dead)
					l->dead = e;
				continue;
			}
			if (wc[i].wr_id & VCT_WR_SEND) {
				if (!l->sending)
					return -EPROTO;
				l->sending--;
				continue;
			}
			if (l->got[p])
				return -EPROTO;
			l->got[p] = true;
			l->rlen[p] = wc[i].byte_len;
		}
		if (n < 16)
			return 0;
	}
}

static bool vct_sends_done(const struct vrdma_team *t)
{
	for (uint32_t i = 0; i < t->nlinks; i++)
		if (t->links[i].sending)
			return false;
	return true;
}

int vct_progress(struct vrdma_team *t)
{
	struct vct_op *op;
	uint64_t coff;
	uint32_t clen;
	int rc;

	if (t->err)
		return -t->err;
	rc = vct_drain(t);
	while (!rc && t->done_seq + 1 < t->next_seq) {
		op = &t->ops[(t->done_seq + 1) % VCT_PENDING];
		vct_chunk(t, op, &coff, &clen);
		if (t->st != VCT_DRAIN) {
			enum vct_state before = t->st;

			rc = t->is_leader ? vct_leader_step(t, op, coff, clen)
					  : vct_member_step(t, op, coff, clen);
			if (rc || (t->st != VCT_DRAIN && t->st == before))
				break;
			if (t->st != VCT_DRAIN)
				continue;
		}
		if (!vct_sends_done(t))
			break;
		t->step++;
		t->st = VCT_BEGIN;
		if (++t->chunk < op->nsteps)
			continue;
		t->chunk = 0;
		t->done_seq++;
		t->nops++;
		t->nbytes += op->vbytes;
	}
	if (rc)
		vct_break(t, -rc);
	return rc;
}

/*
 * Break the team with @err and leave it: every link's QP goes to error,
 * which dom0 passes on to the peer's QP as a disconnect.  A member waiting
 * for this one then fails with ECONNRESET at once, and in turn leaves, so
 * the whole team learns within a few hops rather than at each member's
 * timeout or when this member's program destroys the team.
 */
void vct_break(struct vrdma_team *t, int err)
{
	struct vrdma_qp_attr qa = { .qp_state = VRDMA_QPS_ERR };
	uint32_t i;

	if (t->err)
		return;
	t->err = err;
	for (i = 0; i < t->nlinks; i++)
		if (t->links[i].qp)	/* fails only on a broken device */
			(void)vrdma_modify_qp(t->links[i].qp, &qa, VRDMA_QP_STATE);
}
