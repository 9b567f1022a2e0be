// SPDX-License-Identifier: MIT
/*
 * Teams dom0 runs (the offload, feature-coll): joined at create, then
 * every operation cut into pieces that fit the team's staging slots.  A
 * piece is one OP_COLL: this member's part copied into a slot's send
 * area and posted; once its CQE says dom0 wrote the slot's receive area,
 * the result is copied out.  The program's buffers are any memory, the
 * staging is registered once.
 *
 * Every member cuts an operation the same way (the units below, at most
 * what a slot holds), and elements are independent, so the pieces give
 * the bits of the whole: dom0 folds a one-node team in rank order, as
 * the fallback does (vct.h).  ALLGATHER cuts each member's block into
 * the same sub-ranges and puts each piece of it in its place.
 *
 * Two pieces of one operation may be in flight, a slot each, so the
 * copies of one overlap dom0's work on the other.  An operation's first
 * piece waits until the one before is done: as in the fallback, an
 * operation reads the program's buffers only once every earlier one
 * completed.
 *
 * The device side (TEAM_JOIN, EVT_TEAM, OP_COLL, the CQE checks) is
 * libvrdma's team_dev.c, reached through dev->team_ops (vlib.h says why).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vct.h"
#include "../vlib.h"

#define VCT_OFF_SLOTS	2		/* pieces in flight */
/* A slot's send area, and its receive area: a multiple of every element,
 * and dom0's own chunk (backend/coll).  The staging is 4 of them, 256
 * pages: a Xen domU shares 1024 by default, every process together. */
#define VCT_OFF_AREA	(256u << 10)

_Static_assert(VCT_OFF_SLOTS <= VRDMA_TEAM_DEPTH, "pieces in flight fit dom0's depth");
_Static_assert(VCT_OFF_AREA / VRDMA_TEAM_MAX_SIZE >= 1, "an ALLGATHER piece holds a byte");

/* A piece: units [off, off + n) of operation @op, the OP_COLL @wseq. */
struct vct_piece {
	uint64_t op;
	uint64_t off, n;
	uint64_t wseq;
	bool last;			/* the operation's last piece */
};

struct vct_off {
	const struct vlib_team_ops *ops;
	struct vlib_team *dt;		/* NULL once left */
	uint8_t *send[VCT_OFF_SLOTS], *recv[VCT_OFF_SLOTS];
	uint64_t wseq;			/* OP_COLLs posted */
	uint64_t iss_op, iss_off;	/* the next piece: operation, its units
					 * already in pieces */
	struct vct_piece fly[VCT_OFF_SLOTS];	/* in flight, oldest at head */
	unsigned head, nfly;
};

/* An operation's units (what pieces cut) and how many a piece holds. */
static uint64_t vct_off_units(const struct vrdma_team *t, const struct vct_op *op,
			      uint64_t *most)
{
	switch (op->a.kind) {
	case VRDMA_COLL_ALLREDUCE:
	case VRDMA_COLL_REDUCE:
		*most = VCT_OFF_AREA / op->tsize;	/* elements */
		return op->a.count;
	case VRDMA_COLL_BCAST:
		*most = VCT_OFF_AREA;			/* bytes */
		return op->a.count;
	case VRDMA_COLL_ALLGATHER:
		*most = VCT_OFF_AREA / t->size;		/* bytes of each block */
		return op->a.count;
	default:					/* BARRIER: one, empty */
		*most = 1;
		return 0;
	}
}

/* A piece of @n units: this member's send and receive bytes (wire.h,
 * struct vrdma_coll_wr: 0 where it reads or writes nothing). */
static void vct_off_lens(const struct vrdma_team *t, const struct vct_op *op, uint64_t n,
			 uint32_t *sl, uint32_t *rl)
{
	const struct vrdma_coll_args *a = &op->a;
	uint32_t b = (uint32_t)(n * op->tsize);		/* <= VCT_OFF_AREA */

	*sl = *rl = 0;
	switch (a->kind) {
	case VRDMA_COLL_ALLREDUCE:
		*sl = *rl = b;
		break;
	case VRDMA_COLL_REDUCE:
		*sl = b;
		*rl = a->root == t->rank ? b : 0;
		break;
	case VRDMA_COLL_BCAST:
		*(a->root == t->rank ? sl : rl) = b;
		break;
	case VRDMA_COLL_ALLGATHER:
		*sl = b;
		*rl = b * t->size;
		break;
	}
}

/* Piece @p into slot @s: this member's part copied in, its OP_COLL. */
static void vct_off_fill(const struct vrdma_team *t, const struct vct_op *op,
			 const struct vct_piece *p, unsigned s, struct vrdma_coll_wr *w)
{
	const struct vrdma_coll_args *a = &op->a;
	const struct vct_off *o = t->off;
	const uint8_t *src;
	uint32_t sl, rl;

	vct_off_lens(t, op, p->n, &sl, &rl);
	memset(w, 0, sizeof(*w));
	w->kind = (uint8_t)a->kind;
	w->type = (uint8_t)a->type;
	w->op = (uint8_t)a->op;
	w->root = a->root;
	w->count = p->n;
	w->seq = p->wseq;
	if (sl) {
		/* BCAST: the root's data is in its recvbuf (vct_check_args). */
		src = a->kind == VRDMA_COLL_BCAST ? a->recvbuf : a->sendbuf;
		memcpy(o->send[s], src + p->off * op->tsize, sl);
		w->sge[0].addr = (uintptr_t)o->send[s];
		w->sge[0].length = sl;
		w->sge[0].lkey = t->mr->lkey;
	}
	if (rl) {
		w->sge[1].addr = (uintptr_t)o->recv[s];
		w->sge[1].length = rl;
		w->sge[1].lkey = t->mr->lkey;
	}
}

/* Piece @p is back in slot @s: its result into the program's buffer. */
static void vct_off_deliver(const struct vrdma_team *t, const struct vct_op *op,
			    const struct vct_piece *p, unsigned s)
{
	const struct vrdma_coll_args *a = &op->a;
	const uint8_t *r = t->off->recv[s];
	uint8_t *dst = a->recvbuf;
	uint32_t sl, rl, q;

	vct_off_lens(t, op, p->n, &sl, &rl);
	if (!rl)
		return;
	if (a->kind != VRDMA_COLL_ALLGATHER) {
		memcpy(dst + p->off * op->tsize, r, rl);
		return;
	}
	for (q = 0; q < t->size; q++)	/* block q's piece, where block q goes */
		memcpy(dst + (uint64_t)q * a->count + p->off, r + (uint64_t)q * p->n, p->n);
}

/* Post the pieces that may go now, with one notification.  0 or -errno. */
static int vct_off_issue(struct vrdma_team *t)
{
	struct vrdma_coll_wr w[VCT_OFF_SLOTS];
	struct vct_off *o = t->off;
	unsigned k = 0;
	int rc;

	while (o->nfly + k < VCT_OFF_SLOTS && o->iss_op < t->next_seq) {
		const struct vct_op *op = &t->ops[o->iss_op % VCT_PENDING];
		struct vct_piece *p = &o->fly[(o->head + o->nfly + k) % VCT_OFF_SLOTS];
		uint64_t most, units = vct_off_units(t, op, &most);

		/* A new operation only once every earlier one is done. */
		if (!o->iss_off && o->nfly + k)
			break;
		p->op = op->seq;
		p->off = o->iss_off;
		p->n = units - o->iss_off < most ? units - o->iss_off : most;
		p->wseq = o->wseq + k + 1;
		p->last = o->iss_off + p->n >= units;
		vct_off_fill(t, op, p, (unsigned)(p->wseq % VCT_OFF_SLOTS), &w[k]);
		k++;
		if (p->last) {
			o->iss_op++;
			o->iss_off = 0;
		} else {
			o->iss_off += p->n;
		}
	}
	if (!k)
		return 0;
	rc = o->ops->post(o->dt, w, k);
	o->wseq += k;
	o->nfly += k;
	/* An error breaks the team: counts do not matter.  A ring full for
	 * seconds is a dom0 that does not answer. */
	return rc == -EAGAIN ? -ETIMEDOUT : rc;
}

/* An OP_COLL's error status, as coll.h's errors. */
static int vct_off_status(enum vrdma_wc_status st)
{
	switch (st) {
	case VRDMA_WC_REM_INV_REQ_ERR:	return -EPROTO;		/* members disagree */
	case VRDMA_WC_RETRY_EXC_ERR:	return -ECONNRESET;	/* a member left */
	case VRDMA_WC_LOC_PROT_ERR:	return -EFAULT;		/* not our staging? */
	case VRDMA_WC_WR_FLUSH_ERR:	return -ECONNRESET;	/* failed before: a
								 * break we heard of
								 * stops us first */
	default:			return -EIO;
	}
}

/* Take the CQEs at hand, in order.  How many, or -errno. */
static int vct_off_reap(struct vrdma_team *t)
{
	struct vrdma_wc wc[VCT_OFF_SLOTS];
	struct vct_off *o = t->off;
	int n, i;

	n = vrdma_poll_cq(t->cq, VCT_OFF_SLOTS, wc);
	if (n < 0)
		return -errno;
	for (i = 0; i < n; i++) {
		struct vct_piece *p = &o->fly[o->head];
		const struct vct_op *op;

		/* team_dev.c matched it to our oldest OP_COLL already. */
		if (!o->nfly || wc[i].opcode != VLIB_WC_COLL || wc[i].wr_id != p->wseq)
			return -EIO;
		op = &t->ops[p->op % VCT_PENDING];
		if (wc[i].status != VRDMA_WC_SUCCESS)
			return vct_off_status(wc[i].status);
		vct_off_deliver(t, op, p, (unsigned)(p->wseq % VCT_OFF_SLOTS));
		o->head = (o->head + 1) % VCT_OFF_SLOTS;
		o->nfly--;
		if (p->last) {
			t->done_seq = p->op;
			t->nops++;
			t->nbytes += op->vbytes;
		}
	}
	return n;
}

/* Leave dom0's team: it fails the team for the other members at once
 * (RETRY_EXC_ERR: ECONNRESET), as the fallback's closed links do. */
static void vct_off_leave(struct vct_off *o)
{
	if (o->dt)
		(void)o->ops->leave(o->dt);	/* the record goes whatever */
	o->dt = NULL;
}

void vct_off_break(struct vrdma_team *t, int err)
{
	if (!t->err)
		t->err = err;
	vct_off_leave(t->off);
}

int vct_off_progress(struct vrdma_team *t)
{
	int rc;

	if (t->err)
		return -t->err;
	do {
		rc = vct_off_issue(t);
		if (!rc)
			rc = vct_off_reap(t);
	} while (rc > 0);
	if (rc)
		vct_off_break(t, -rc);
	return rc;
}

/* Back to what create had before vct_off_create: left, staging and CQ
 * gone, so that the fallback builds its own. */
void vct_off_free(struct vrdma_team *t)
{
	if (!t->off)
		return;
	vct_off_leave(t->off);	/* first: dom0 writes our MR and CQ until then */
	vct_free_area(t);
	free(t->off);
	t->off = NULL;
}

static int vct_off_no(struct vrdma_team *t, const char *why)
{
	snprintf(t->why, sizeof(t->why), "%s", why);
	return 1;
}

/* The staging slots and the node list in one registered area, the team's
 * CQ.  0 or -errno. */
static int vct_off_build(struct vrdma_team *t, const struct vrdma_team_attr *a,
			 size_t list_len)
{
	size_t area = (list_len + 4095) & ~(size_t)4095, len;
	struct vct_off *o = t->off;
	uint8_t *p;
	uint32_t r;
	unsigned s;

	t->memlen = area + 2 * (size_t)VCT_OFF_SLOTS * VCT_OFF_AREA;
	t->mem = vrdma_alloc_buf(t->dev, t->memlen);
	if (!t->mem)
		return -errno;
	t->mr = vrdma_reg_mr(t->pd, t->mem, t->memlen, VRDMA_ACCESS_LOCAL_WRITE);
	if (!t->mr)
		return -errno;
	t->cq = vrdma_create_cq(t->dev, VRDMA_TEAM_DEPTH, t);
	if (!t->cq)
		return -errno;
	/* The list stays as it is while dom0 may compare it. */
	for (p = t->mem, r = 0; r < a->size; r++, p += len) {
		len = strlen(a->nodes[r]) + 1;
		memcpy(p, a->nodes[r], len);
	}
	for (s = 0; s < VCT_OFF_SLOTS; s++) {
		o->send[s] = t->mem + area + 2 * (size_t)s * VCT_OFF_AREA;
		o->recv[s] = o->send[s] + VCT_OFF_AREA;
	}
	return 0;
}

/*
 * At create (vct_shape done): dom0 runs the team if it can.  0: it does
 * (t->off is set); 1: the members run it, t->why says why; -errno: the
 * create fails.  A team across nodes only with feature-coll-nodes (the
 * vrdmads run it together); a vrdmad without it would answer NOENT.
 */
int vct_off_create(struct vrdma_team *t, const struct vrdma_team_attr *a, int timeout_ms)
{
	struct vrdma_device *dev = t->dev;
	const char *env = getenv("VRDMA_COLL_OFFLOAD");
	const char *me = vrdma_node_name(dev);
	struct vrdma_cmd_team_join j = { .size = a->size, .rank = a->rank };
	const char *self = NULL;
	size_t list_len = 0;
	uint32_t r;
	int rc;

	if (!dev->fe.feat_coll || !dev->team_ops)
		return vct_off_no(t, "no offload in this vrdmad");
	if (a->size == 1)	/* a copy here beats a round trip to dom0 */
		return vct_off_no(t, "one member");
	for (r = 0; r < a->size; r++) {
		if (strcmp(a->nodes[r], me) && !dev->fe.feat_coll_nodes)
			return vct_off_no(t, "members on other nodes");
		list_len += strlen(a->nodes[r]) + 1;
	}
	/* Not wanted here: still joined, with F_SELF, so that dom0 tells
	 * every member to fall back, not only this one. */
	if (a->flags & VRDMA_TEAM_NO_OFFLOAD)
		self = "VRDMA_TEAM_NO_OFFLOAD";
	else if (env && (!strcmp(env, "0") || !strcmp(env, "off")))
		self = "VRDMA_COLL_OFFLOAD=0";
	t->off = calloc(1, sizeof(*t->off));
	if (!t->off)
		return -ENOMEM;
	t->off->ops = dev->team_ops;
	t->off->iss_op = 1;
	rc = vct_off_build(t, a, list_len);
	if (rc)
		goto undo;
	memcpy(j.key, a->key, sizeof(j.key));
	j.list_lkey = t->mr->lkey;
	j.list_len = (uint32_t)list_len;
	j.list_addr = (uintptr_t)t->mem;
	j.flags = self ? VRDMA_TEAM_F_SELF : 0;
	rc = t->off->ops->join(t->pd, t->cq, &j, &t->off->dt);
	if (rc == -ENOENT) {
		rc = vct_off_no(t, self ? self : "dom0 does not run this team");
		goto undo;
	}
	/* The team under this key has another size or list, or failed so
	 * already: members that disagree (coll.h), as EVT_TEAM's INVAL. */
	if (rc == -EINVAL || rc == -EEXIST)
		rc = -EPROTO;
	if (!rc)
		rc = t->off->ops->ready(t->off->dt, timeout_ms);
	if (rc == -ENOENT)
		rc = vct_off_no(t, self ? self : "a member or dom0 chose the fallback");
	else if (!rc && self)
		rc = -EPROTO;		/* dom0 ignored F_SELF */
	if (rc)
		goto undo;
	return 0;
undo:
	vct_off_free(t);
	return rc;
}
