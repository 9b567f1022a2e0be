// SPDX-License-Identifier: MIT
/*
 * Teams across nodes, running (chain.c made them): each operation is cut
 * into chunks of START's length and each chunk goes down the chain and
 * back, as docs/collectives.md's order says:
 *
 *   forward   node k: P(k) = its members' sends folded in rank order;
 *             prefix = k ? FWD from k-1 OP P(k) : P(k); FWD to k+1, or
 *             at the last node the result: written to its members and
 *             sent back as BWD
 *   backward  node k < K-1: BWD from k+1 written to its members, passed
 *             on to k-1
 *
 * Bcast and allgather use the same passes: the forward one carries the
 * root's data from its node on (EMPTY before it), or the blocks of nodes
 * 0..k, and the backward one the whole.  A node forwards chunk c + 1 while
 * chunk c comes back, as far as the links' slots let it; operations
 * complete in order, when their last chunk came back.  Node 0 chooses a
 * chunk's length (START's, less if its members' budgets pay less); the
 * others take it as it comes and check it against their own members'
 * operation.
 */
#include <errno.h>
#include <string.h>

#include "../vbe.h"
#include "coll.h"
#include "link.h"
#include "../../common/coll/vcoll_reduce.h"

#define VBE_CH_Q(m, seq)	(&(m)->q[(seq) % VRDMA_TEAM_DEPTH])

static bool vbe_chain_posted(const struct vbe_team *t, uint64_t seq)
{
	for (uint32_t i = 0; i < t->nlocal; i++)
		if (t->m[t->local[i]]->posted < seq)
			return false;
	return true;
}

/* The operation seq of this node's members, agreed: 0, or the status. */
static uint8_t vbe_chain_op(const struct vbe_team *t, uint64_t seq, struct vbe_cx *x)
{
	const struct vrdma_coll_wr *w = &VBE_CH_Q(t->m[t->local[0]], seq)->w;

	for (uint32_t i = 1; i < t->nlocal; i++)
		if (!vbe_coll_same(&VBE_CH_Q(t->m[t->local[i]], seq)->w, w))
			return VRDMA_WS_REM_INV_REQ_ERR;
	return vbe_coll_check_op(w, t->size, x);
}

/* Does a FWD or BWD say the operation x says? */
static bool vbe_chain_same(const struct vbe_cmsg *h, const struct vbe_cx *x)
{
	return h->kind == x->w->kind && h->ctype == x->w->type && h->op == x->w->op &&
	       h->root == x->w->root && h->count == x->w->count && !h->nlocal && !h->chunk &&
	       !h->status;
}

/* Is a chunk of len at off what the vector and START allow? */
static bool vbe_chain_len_ok(const struct vbe_cspan *s, const struct vbe_cx *x, uint64_t off,
			     uint64_t len, uint64_t upto)
{
	if (!x->vbytes)
		return !len && !off;
	return len && len <= s->chunk && len % x->es == 0 && off + len <= upto;
}

/* This node's members' ranges of op seq, by local index (NULL: none);
 * *bad the rank whose range is not its own. */
static int vbe_chain_ranges(const struct vbe_team *t, const struct vbe_cx *x, uint64_t seq,
			    uint8_t **sp, uint8_t **rp, uint32_t *bad)
{
	for (uint32_t i = 0; i < t->nlocal; i++) {
		int rc = vbe_coll_range(t, x, t->local[i], seq, &sp[i], &rp[i]);

		if (rc) {
			*bad = t->local[i];
			return rc;
		}
	}
	return 0;
}

/*
 * What this node's members can pay for a chunk of len touching their
 * send ranges (reads) or receive ranges (writes): node 0 cuts its chunk
 * to that (powers of two down to 64 bytes, as run.c), the others, whose
 * length is given, wait for a budget that is not spent.  0: wait.
 */
static uint64_t vbe_chain_afford(const struct vbe_team *t, const struct vbe_cx *x,
				 uint64_t len, bool reads, bool cut)
{
	uint64_t pow = len, sl, rl, can;
	uint32_t i;

	for (i = 0; i < t->nlocal; i++)
		t->m[t->local[i]]->g->coll->ways = 0;
	for (i = 0; i < t->nlocal; i++) {
		vbe_coll_lens(t, x, t->local[i], &sl, &rl);
		t->m[t->local[i]]->g->coll->ways += reads ? sl != 0 : rl != 0;
	}
	for (i = 0; i < t->nlocal && len; i++) {
		const struct vbe_guest *g = t->m[t->local[i]]->g;

		if (!g->coll->ways)
			continue;
		if (!cut) {
			len = g->budget_bytes ? len : 0;
			continue;
		}
		can = g->budget_bytes / g->coll->ways;
		while (pow > 64 && pow > can)
			pow >>= 1;
		if (pow < len)
			len = pow > can ? 0 : pow;
	}
	return len;
}

/* Each member pays for its ranges of the chunk; so does the poll. */
static void vbe_chain_charge(const struct vbe_team *t, uint8_t *const *p, uint64_t len,
			     uint64_t *budget)
{
	for (uint32_t i = 0; i < t->nlocal; i++)
		if (p[i]) {
			vbe_budget_charge(t->m[t->local[i]]->g, len);
			*budget -= len < *budget ? len : *budget;
		}
}

static void vbe_chain_write(const struct vbe_team *t, uint8_t *const *rp, uint64_t off,
			    const uint8_t *src, uint64_t len)
{
	for (uint32_t i = 0; i < t->nlocal; i++)
		if (rp[i])
			memcpy(rp[i] + off, src, len);
}

/* Operation seq is whole here: every member's completion, in order. */
static void vbe_chain_done(struct vbe_node *n, struct vbe_team *t, const struct vbe_cx *x,
			   uint64_t seq)
{
	for (uint32_t i = 0; i < t->nlocal; i++)
		vbe_coll_done_rank(t, x, t->local[i], seq);
	t->done = seq;
	t->ops++;
	t->bytes += x->vbytes;
	n->coll->ops++;
	n->coll->bytes += x->vbytes;
}

/* The forward chunk into dst (VBE_CMF_EMPTY if it has no data yet). */
static int vbe_chain_make(struct vbe_coll_node *cn, const struct vbe_team *t,
			  const struct vbe_cx *x, uint8_t *const *sp, const struct vbe_cmsg *in,
			  const uint8_t *pl, uint64_t off, uint64_t len, uint8_t *dst,
			  uint8_t *flags)
{
	const struct vrdma_coll_wr *w = x->w;
	const void **src = cn->src;
	uint32_t i, n = 0;

	switch (w->kind) {
	case VBE_CK_ALLREDUCE:
	case VBE_CK_REDUCE:
		for (i = 0; i < t->nlocal; i++)
			src[n++] = sp[i] + off;
		if (!in)
			return vcoll_fold(w->type, w->op, dst, src, n, len / x->es);
		if (n > 1) {
			if (vcoll_fold(w->type, w->op, cn->scratch, src, n, len / x->es))
				return -EINVAL;
			src[0] = cn->scratch;
		}
		src[1] = src[0];
		src[0] = pl;
		return vcoll_fold(w->type, w->op, dst, src, 2, len / x->es);
	case VBE_CK_BCAST:
		for (i = 0; i < t->nlocal && t->local[i] != w->root; i++)
			;
		if (i < t->nlocal)
			memcpy(dst, sp[i] + off, len);
		else if (in && !(in->flags & VBE_CMF_EMPTY))
			memcpy(dst, pl, len);
		else
			*flags |= VBE_CMF_EMPTY;
		return 0;
	case VBE_CK_ALLGATHER:
		if (in)
			memcpy(dst, pl, len);
		else
			memset(dst, 0, len);
		for (i = 0; i < t->nlocal; i++) {
			uint64_t lo = (uint64_t)t->local[i] * w->count, hi = lo + w->count;
			uint64_t blk = lo;

			lo = lo < off ? off : lo;
			hi = hi > off + len ? off + len : hi;
			if (lo < hi)
				memcpy(dst + (lo - off), sp[i] + (lo - blk), hi - lo);
		}
		return 0;
	default:		/* BARRIER */
		return 0;
	}
}

/* 1 a chunk went forward, 0 waiting, -errno (*ws the members' status). */
static int vbe_chain_fwd(struct vbe_node *n, struct vbe_team *t, uint64_t *budget, uint8_t *ws)
{
	struct vbe_coll_node *cn = n->coll;
	struct vbe_cspan *s = t->span;
	struct vbe_clink *prev = s->l[VBE_CL_PREV], *next = s->l[VBE_CL_NEXT];
	bool last = !next;
	const uint8_t *pl = NULL;
	struct vbe_cmsg in, *o;
	struct vbe_cx x;
	uint64_t len;
	uint32_t bad;
	uint8_t flags = 0;
	int rc;

	if (!vbe_chain_posted(t, s->fseq))
		return 0;
	*ws = vbe_chain_op(t, s->fseq, &x);
	if (*ws)
		return -EINVAL;
	*ws = VRDMA_WS_RETRY_EXC_ERR;
	len = x.vbytes - s->foff < s->chunk ? x.vbytes - s->foff : s->chunk;
	if (prev) {
		rc = vbe_cmsg_get(prev, &in, &pl);
		if (rc <= 0)
			return rc;
		/* EMPTY: no node before this one holds the root */
		if (in.type != VBE_CM_FWD || in.seq != s->fseq || in.off != s->foff ||
		    !vbe_chain_len_ok(s, &x, in.off, in.len, x.vbytes) ||
		    (in.flags & ~VBE_CMF_EMPTY) ||
		    ((in.flags & VBE_CMF_EMPTY) &&
		     (x.w->kind != VBE_CK_BCAST || s->node_of[x.w->root] < s->k)))
			return -EPROTO;
		if (!vbe_chain_same(&in, &x)) {
			*ws = VRDMA_WS_REM_INV_REQ_ERR;		/* members that disagree */
			return -EINVAL;
		}
		len = in.len;
	}
	o = vbe_chain_slot(last ? prev : next, last ? VBE_CM_BWD : VBE_CM_FWD);
	if (!o)
		return 0;
	len = vbe_chain_afford(t, &x, len, true, !prev);
	if (!len && x.vbytes)
		return 0;
	rc = vbe_chain_ranges(t, &x, s->fseq, cn->sp, cn->rp, &bad);
	if (rc) {
		s->bad = bad;
		return rc;
	}
	if (vbe_chain_make(cn, t, &x, cn->sp, prev ? &in : NULL, pl, s->foff, len,
			   (uint8_t *)o + VBE_CL_HDR, &flags))
		return -EINVAL;
	o->seq = s->fseq;
	o->off = s->foff;
	o->len = (uint32_t)len;
	o->flags = flags;
	o->kind = x.w->kind;
	o->ctype = x.w->type;
	o->op = x.w->op;
	o->root = x.w->root;
	o->count = x.w->count;
	rc = vbe_chain_put(n, last ? prev : next, flags & VBE_CMF_EMPTY ? 0 : (uint32_t)len);
	if (rc)
		return rc;
	if (prev)
		vbe_chain_used(n, prev);
	vbe_chain_charge(t, cn->sp, len, budget);
	if (last) {
		/* the result: here at once, and on its way back */
		vbe_chain_write(t, cn->rp, s->foff, (uint8_t *)o + VBE_CL_HDR, len);
		vbe_chain_charge(t, cn->rp, len, budget);
	}
	s->foff += len;
	if (s->foff >= x.vbytes) {
		if (last)
			vbe_chain_done(n, t, &x, s->fseq);
		s->fseq++;
		s->foff = 0;
		if (last)
			s->bseq = s->fseq;
	}
	return 1;
}

/* 1 a chunk came back, 0 waiting, -errno (*ws the members' status). */
static int vbe_chain_bwd(struct vbe_node *n, struct vbe_team *t, uint64_t *budget, uint8_t *ws)
{
	struct vbe_coll_node *cn = n->coll;
	struct vbe_cspan *s = t->span;
	struct vbe_clink *prev = s->l[VBE_CL_PREV], *next = s->l[VBE_CL_NEXT];
	const uint8_t *pl;
	struct vbe_cmsg in, *o = NULL;
	struct vbe_cx x;
	uint8_t *res;
	uint32_t bad;
	int rc;

	*ws = VRDMA_WS_RETRY_EXC_ERR;
	if (!next)
		return 0;		/* the last node's results go back as made */
	rc = vbe_cmsg_get(next, &in, &pl);
	if (rc <= 0)
		return rc;
	if (in.type == VBE_CM_ABORT)
		return -EPROTO;		/* vbe_chain_pass reads it */
	/* nothing comes back that did not go forward */
	if (in.type != VBE_CM_BWD || in.seq != s->bseq || s->bseq > s->fseq ||
	    (s->bseq == s->fseq && in.off >= s->foff) || in.off != s->boff || in.flags)
		return -EPROTO;
	if (vbe_chain_op(t, s->bseq, &x) || !vbe_chain_same(&in, &x) ||
	    !vbe_chain_len_ok(s, &x, in.off, in.len, s->bseq < s->fseq ? x.vbytes : s->foff))
		return -EPROTO;
	if (prev) {
		o = vbe_chain_slot(prev, VBE_CM_BWD);
		if (!o)
			return 0;
	}
	if (x.vbytes && !vbe_chain_afford(t, &x, in.len, false, false))
		return 0;
	rc = vbe_chain_ranges(t, &x, s->bseq, cn->sp, cn->rp, &bad);
	if (rc) {
		s->bad = bad;
		return rc;
	}
	/* Read once out of the slot the peer can write: every member here
	 * and the node before get the same bits. */
	res = o ? (uint8_t *)o + VBE_CL_HDR : cn->scratch;
	memcpy(res, pl, in.len);
	vbe_chain_write(t, cn->rp, s->boff, res, in.len);
	if (o) {
		memcpy(o, &in, sizeof(*o));
		rc = vbe_chain_put(n, prev, in.len);
		if (rc)
			return rc;
	}
	vbe_chain_used(n, next);
	vbe_chain_charge(t, cn->rp, in.len, budget);
	s->boff += in.len;
	if (s->boff >= x.vbytes) {
		vbe_chain_done(n, t, &x, s->bseq);
		s->bseq++;
		s->boff = 0;
	}
	return 1;
}

/* An ABORT at the head of either link: its status, else 0. */
static uint8_t vbe_chain_aborted(const struct vbe_cspan *s)
{
	const uint8_t *pl;
	struct vbe_cmsg h;

	for (unsigned d = 0; d < 2; d++)
		if (s->l[d] && vbe_cmsg_get(s->l[d], &h, &pl) > 0 && h.type == VBE_CM_ABORT &&
		    (h.status == VRDMA_WS_REM_INV_REQ_ERR || h.status == VRDMA_WS_RETRY_EXC_ERR))
			return (uint8_t)h.status;
	return 0;
}

/* The team fails with ws here; the neighbours hear ws if there is room,
 * else see their link go. */
static void vbe_chain_fail(struct vbe_node *n, struct vbe_team *t, uint8_t ws)
{
	struct vbe_cspan *s = t->span;
	struct vbe_cmsg *o;

	for (unsigned d = 0; d < 2; d++)
		if (s->l[d] && (o = vbe_chain_slot(s->l[d], VBE_CM_ABORT))) {
			o->status = ws;
			vbe_chain_put(n, s->l[d], 0);
		}
	vbe_coll_fail(t, ws);
	n->coll->fails++;
}

/* A running team's chunks, both ways, while the budgets last. */
static void vbe_chain_pass(struct vbe_node *n, struct vbe_team *t, uint64_t *budget)
{
	struct vbe_cspan *s = t->span;
	uint8_t ws = 0, aws;
	int b = 0, f = 0;

	s->moved = 0;
	s->bad = UINT32_MAX;
	for (unsigned k = 0; k < VBE_COLL_ROUND_CHUNKS && *budget; k++) {
		b = vbe_chain_bwd(n, t, budget, &ws);
		if (b >= 0)
			f = vbe_chain_fwd(n, t, budget, &ws);
		if (b < 0 || f < 0 || (!b && !f))
			break;
		s->moved++;
	}
	if (b >= 0 && f >= 0)
		return;
	aws = vbe_chain_aborted(s);
	if (aws) {
		vlog_info("vrdmad: team %llu: node %s or %s failed it", (unsigned long long)t->serial,
			  s->peer[VBE_CL_PREV], s->peer[VBE_CL_NEXT]);
		vbe_chain_fail(n, t, aws);	/* and tells the nodes further on */
		return;
	}
	if (b == -EPROTO || f == -EPROTO)
		vlog_warn("vrdmad: team %llu: node %s or %s sent what the chain does not allow",
			  (unsigned long long)t->serial, s->peer[VBE_CL_PREV],
			  s->peer[VBE_CL_NEXT]);
	else if (ws == VRDMA_WS_REM_INV_REQ_ERR)
		vlog_warn("vrdmad: team %llu: members disagree on operation %llu",
			  (unsigned long long)t->serial, (unsigned long long)s->fseq);
	else if ((b == -EFAULT || f == -EFAULT) && s->bad < t->size && t->m[s->bad]) {
		/* that member's own operation ends LOC_PROT_ERR, as on one node */
		struct vbe_cmember *m = t->m[s->bad];

		vlog_warn("vrdmad: %s: team %llu rank %u: a range that is not its own",
			  m->g->name, (unsigned long long)t->serial, s->bad);
		if (m->cdone < m->posted) {
			vbe_coll_cqe(m, m->q[(m->cdone + 1) % VRDMA_TEAM_DEPTH].id,
				     VRDMA_WS_LOC_PROT_ERR, 0);
			m->cdone++;
		}
	}
	vbe_chain_fail(n, t, ws);
}

/* Every team across nodes: agreeing, running, or broken.  Chunks run. */
int vbe_chain_run(struct vbe_node *n, uint64_t *budget)
{
	struct vbe_team *t, *next, **tail;
	int work = 0;

	/* the first of the last poll goes last: none is always served first */
	t = n->coll->spans;
	if (t && t->span->next) {
		n->coll->spans = t->span->next;
		for (tail = &n->coll->spans; *tail; tail = &(*tail)->span->next)
			;
		*tail = t;
		t->span->next = NULL;
	}
	for (t = n->coll->spans; t; t = next) {
		next = t->span->next;
		if (t->span->phase == VBE_SP_JOINING || t->span->phase == VBE_SP_OVER)
			continue;
		/* What came before a link broke is taken first: the last
		 * chunk of a result may be in a slot already. */
		if (t->span->phase == VBE_SP_RUN && t->state == VBE_TEAM_READY && *budget) {
			vbe_chain_pass(n, t, budget);
			work += (int)t->span->moved;
		}
		if (vbe_chain_broken(n, t))
			continue;
		if (t->span->phase > VBE_SP_JOINING && t->span->phase < VBE_SP_RUN)
			vbe_chain_form(n, t);
	}
	return work;
}
