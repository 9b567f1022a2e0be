// SPDX-License-Identifier: MIT
/*
 * dom0's per-hop latency trace (lat.h): `vrdmactl trace lat N` arms it
 * for the next N stamps of the data path, `trace dump` prints them, one
 * line each, in the format libvrdma writes a guest's (vrdmactl(8);
 * scripts/lat-trace.sh reads both):
 *
 *   vlt dom0 hz <Hz> <how> node=<name> stamps=<n> cap=<N> full=<0|1>
 *   vlt dom0 <kind> <clock> <qpn> <id> [op=<op> st=<status>] [st=<status>]
 *            [to=<qpn>] [n=<count>] dom=<domid>
 *
 * `trace off` disarms it and gives the memory back; `trace` says where
 * it stands.
 */
#include <errno.h>
#include <string.h>

#include "../vbe.h"
#include "lat.h"

struct vlt vbe_lt_trace;

/* JSON builds an object per stamp (hundreds of bytes each in json-c):
 * past this many, the text answer only. */
#define VBE_LT_JSON_MAX	65536u

static const char *const vbe_lt_names[VBE_LT_NKINDS] = {
	[VBE_LT_PULL] = "pull", [VBE_LT_RPULL] = "rpull", [VBE_LT_COPY] = "copy",
	[VBE_LT_DPOST] = "dpost", [VBE_LT_DSEND] = "dsend", [VBE_LT_DRECV] = "drecv",
	[VBE_LT_CQE] = "cqe", [VBE_LT_PUB] = "pub", [VBE_LT_KICK] = "kick",
};

/* A CQE's opcode (wire.h VRDMA_WC_*) as the guest's trace names it. */
static const char *vbe_lt_op(unsigned op)
{
	static const char *const ops[] = {
		[VRDMA_WC_SEND] = "send", [VRDMA_WC_WRITE] = "write", [VRDMA_WC_READ] = "read",
		[VRDMA_WC_CMP_SWAP] = "cswap", [VRDMA_WC_FETCH_ADD] = "fadd",
		[VRDMA_WC_RECV] = "recv", [VRDMA_WC_RECV_IMM] = "recv_imm",
	};

	return op < sizeof(ops) / sizeof(ops[0]) && ops[op] ? ops[op] : "?";
}

void vbe_lt_put(unsigned kind, uint32_t qpn, uint64_t id, uint32_t aux, uint32_t dom)
{
	vlt_put(&vbe_lt_trace, kind, qpn, id, aux, dom);
}

void vbe_lt_wr_put(unsigned kind, const struct vbe_guest *g, const struct vbe_qp *qp,
		   const struct vbe_wqe *w, uint32_t aux)
{
	if (kind == VBE_LT_PULL && w->opcode == VRDMA_OP_RECV)
		kind = VBE_LT_RPULL;
	vlt_put(&vbe_lt_trace, kind, qp->qpn, w->id, aux, g->domid);
}

void vbe_lt_copy_put(const struct vbe_qp *qp, const struct vbe_guest *pg,
		     const struct vbe_qp *pqp)
{
	vlt_put(&vbe_lt_trace, VBE_LT_COPY, qp->qpn, qp->sq.count ? qp->sq.e[qp->sq.head].id : 0,
		pqp->qpn, pg->domid);
}

void vbe_lt_cqe_put(const struct vbe_guest *g, const struct vrdma_cqe *c)
{
	const struct vbe_qp *qp = g->qps ? VBE_GET(g->qps, VBE_MAX_QPS, c->qp) : NULL;

	vlt_put(&vbe_lt_trace, VBE_LT_CQE, qp ? qp->qpn : 0, c->wr_id,
		(uint32_t)c->opcode << 8 | c->status, g->domid);
}

void vbe_lt_pub_put(const struct vbe_guest *g, uint32_t cqi)
{
	const struct vbe_cq *cq = &g->cqs[cqi];

	vlt_put(&vbe_lt_trace, VBE_LT_PUB, 0, vbe_handle(&cq->s, cqi), cq->prod - cq->pub,
		g->domid);
}

void vbe_lt_kick_put(const struct vbe_guest *g)
{
	vlt_put(&vbe_lt_trace, VBE_LT_KICK, 0, 0, 0, g->domid);
}

static void vbe_lt_rec(const struct vlt_rec *r, struct vout *o)
{
	unsigned k = r->kind < VBE_LT_NKINDS ? r->kind : VBE_LT_NKINDS;
	const char *name = k < VBE_LT_NKINDS ? vbe_lt_names[k] : "?";

	vout_obj(o, NULL);
	vout_str(o, "kind", name, "vlt dom0 %s", name);
	vout_u64(o, "t", r->t, " %llu", (unsigned long long)r->t);
	vout_u64(o, "qpn", r->qpn, " %u", r->qpn);
	vout_u64(o, "id", r->id, " %llu", (unsigned long long)r->id);
	switch (k) {
	case VBE_LT_CQE:
		vout_str(o, "op", vbe_lt_op(r->aux >> 8), " op=%s", vbe_lt_op(r->aux >> 8));
		vout_u64(o, "st", r->aux & 0xff, " st=%u", r->aux & 0xff);
		break;
	case VBE_LT_DSEND:
	case VBE_LT_DRECV:
		vout_u64(o, "st", r->aux, " st=%u", r->aux);
		break;
	case VBE_LT_COPY:
		vout_u64(o, "to", r->aux, " to=%u", r->aux);
		break;
	case VBE_LT_PUB:
		vout_u64(o, "n", r->aux, " n=%u", r->aux);
		break;
	default:
		break;
	}
	vout_u64(o, "dom", r->dom, " dom=%u\n", r->dom);
	vout_end(o);
}

static int vbe_lt_dump(struct vbe_node *n, struct vout *o)
{
	uint32_t i, cnt = vlt_count(&vbe_lt_trace);
	char how[64];
	uint64_t hz;

	if (!vbe_lt_trace.rec)
		return vout_err(o, -ENOENT, "trace dump: no latency trace (vrdmactl trace lat N "
				"arms one)");
	if (vout_json(o) && cnt > VBE_LT_JSON_MAX)
		return vout_err(o, -E2BIG, "trace dump: %u stamps, more than %u in JSON: dump "
				"them as text (without -j)", cnt, VBE_LT_JSON_MAX);
	if (vlt_rate(&vbe_lt_trace, &hz, how, sizeof(how)))
		return vout_err(o, -EIO, "trace dump: the clock went backwards since arming");
	vout_u64(o, "hz", hz, "vlt dom0 hz %llu", (unsigned long long)hz);
	vout_str(o, "clock", how, " %s", how);
	vout_str(o, "node", n->name, " node=%s", n->name);
	vout_u64(o, "stamps", cnt, " stamps=%u", cnt);
	vout_u64(o, "cap", vbe_lt_trace.cap, " cap=%u", vbe_lt_trace.cap);
	vout_bool(o, "full", vlt_full(&vbe_lt_trace), " full=%d\n", vlt_full(&vbe_lt_trace));
	vout_arr(o, "events");
	for (i = 0; i < cnt && !o->err; i++)
		vbe_lt_rec(&vbe_lt_trace.rec[i], o);
	vout_end(o);
	return o->err;
}

static void vbe_lt_status(struct vout *o)
{
	uint32_t cnt = vlt_count(&vbe_lt_trace);
	bool full = vlt_full(&vbe_lt_trace);

	vout_bool(o, "armed", vbe_lt_trace.rec != NULL, "latency trace %s",
		  !vbe_lt_trace.rec ? "off" : full ? "full" : "armed");
	if (vbe_lt_trace.rec) {
		vout_u64(o, "stamps", cnt, ": %u", cnt);
		vout_u64(o, "cap", vbe_lt_trace.cap, " of %u stamps", vbe_lt_trace.cap);
		vout_jbool(o, "full", full);
	}
	vout_text(o, "\n");
}

int vbe_node_trace(struct vbe_node *n, int argc, char **argv, struct vout *o)
{
	uint32_t cap = 0;
	int err;

	if (!argc) {
		vbe_lt_status(o);
		return 0;
	}
	if (!strcmp(argv[0], "lat")) {
		err = argc == 2 ? vlt_parse(argv[1], &cap) : -EINVAL;
		if (err || cap < 1 || cap > VBE_LT_MAX)
			return vout_err(o, -EINVAL, "usage: trace lat N (N stamps, 1..%u)",
					VBE_LT_MAX);
		err = vlt_arm(&vbe_lt_trace, cap);
		if (err)
			return vout_err(o, err, "trace lat: %s", strerror(-err));
		vlog_info("latency trace armed for %u stamps", cap);
		vout_bool(o, "armed", true, "latency trace armed");
		vout_u64(o, "cap", cap, ": the next %u stamps\n", cap);
		return 0;
	}
	if (argc != 1)
		return vout_err(o, -EINVAL, "usage: trace [lat N | dump | off]");
	if (!strcmp(argv[0], "dump"))
		return vbe_lt_dump(n, o);
	if (!strcmp(argv[0], "off")) {
		vout_bool(o, "was_armed", vbe_lt_trace.rec != NULL, "latency trace off%s\n",
			  vbe_lt_trace.rec ? "" : " (it was not armed)");
		vlt_disarm(&vbe_lt_trace);
		return 0;
	}
	return vout_err(o, -EINVAL, "trace: unknown '%.32s' (try: trace [lat N | dump | off])",
			argv[0]);
}

void vbe_lt_fini(void)
{
	vlt_disarm(&vbe_lt_trace);
}
