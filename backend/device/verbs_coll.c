// SPDX-License-Identifier: MIT
/*
 * The links of teams across nodes over the RDMA device (the transport
 * of backend/coll/link.h; docs/collectives.md "Across nodes").  One RC
 * QP per link, on the node's own PD and CQ (not a guest's), connected
 * with rdma_cm on vrdmad's own port: the lower node of a pair connects,
 * its REQ carrying a coll hello (vbe_vcl_hello, first byte 0xb0, which a
 * vrdmad without teams across nodes refuses as not its protocol).
 *
 * Each link has one registered area: the 4 slots the peer writes into,
 * the 4 we send from, and the word in which the peer keeps the count of
 * our messages it consumed.  Message i is an RDMA write with immediate
 * (i's low 31 bits) from our out slot i % 4 into the peer's in slot i %
 * 4; a count is a write with immediate (VBE_VCL_IMM_USED) of the 8-byte
 * count into the peer's word.  Each consumes one of the receives, with
 * no buffer, that each side keeps posted.  So the chain's rules (room
 * only after the peer consumed) are kept by the device as well: the
 * peer's rkey covers our area and nothing else.
 *
 * The acceptor's team may not have reached its links yet (its members
 * still joining): it refuses the REQ NOENT and the connector tries again
 * every VBE_VCL_RETRY_MS while the chain keeps the link open.  Any other
 * refusal, or an error once up, is the link going down.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "log.h"
#include "verbs.h"
#include "../coll/link.h"

#define VBE_VCL_MAX		(4 * VBE_COLL_NODE_SPANS)	/* and lingering ones */
#define VBE_VCL_LINGER_MS	2000
#define VBE_VCL_RECVS		32
#define VBE_VCL_SENDS		64
#define VBE_VCL_RETRY_MS	250
#define VBE_VCL_IMM_USED	0x80000000u
#define VBE_VCL_AREA		(2 * VBE_CL_SLOTS * VBE_CL_SLOT + 64)
#define VBE_VCL_WORD		(2 * VBE_CL_SLOTS * VBE_CL_SLOT)	/* peer's count */

enum { VBE_VCL_WR_RECV = 1, VBE_VCL_WR_SEND };

enum vbe_vcl_state {
	VBE_VCL_IDLE,		/* connector: between tries */
	VBE_VCL_ADDR,		/* connector: resolving */
	VBE_VCL_ROUTE,
	VBE_VCL_CONN,		/* REQ sent / REQ accepted */
	VBE_VCL_WAIT,		/* acceptor: no REQ yet */
	VBE_VCL_UP,
	VBE_VCL_DOWN,
};

struct vbe_vcl {
	struct vbe_clink l;		/* the chain's view: first */
	struct vbe_vx *vx;
	uint32_t idx;
	uint16_t gen;
	enum vbe_vcl_state state;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t *mem;			/* VBE_VCL_AREA */
	uint64_t peer_addr;
	uint32_t peer_rkey;
	uint32_t sends;			/* posted, not completed */
	bool used_due;			/* a count to send when a send completes */
	bool closing;			/* the chain let go: its last sends land */
	int64_t close_ms;
	int64_t retry_ms;
	struct sockaddr_storage dst;	/* connector: the peer vrdmad */
	uint8_t key[16];
	uint32_t from, hash, size;	/* what our hello says */
};

struct vbe_vcoll {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct vbe_vcl *l[VBE_VCL_MAX];
	uint16_t gen[VBE_VCL_MAX];
};

static uint64_t vbe_vcl_wrid(const struct vbe_vcl *c, unsigned kind)
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

/* ---- the hello ---- */

#define VBE_VCL_MAGIC		0xb0
#define VBE_VCL_VERSION		1
#define VBE_VCL_HELLO		48

struct vbe_vcl_hello {
	uint8_t  magic, version;
	uint16_t from;			/* the sender's place in the layout */
	uint32_t hash;			/* its team's list (and size) */
	uint8_t  key[16];
	uint64_t addr;			/* its area; the peer writes there */
	uint32_t rkey;
	uint32_t size;
	uint8_t  reserved[8];
};
_Static_assert(sizeof(struct vbe_vcl_hello) == VBE_VCL_HELLO, "the coll hello is 48 bytes");
_Static_assert(VBE_VCL_HELLO <= 56, "it fits a REQ's private data");

bool vbe_vcl_is_hello(const void *pd, size_t len)
{
	return len >= 2 && ((const uint8_t *)pd)[0] == VBE_VCL_MAGIC;
}

static int vbe_vcl_unpack(const void *pd, size_t len, struct vbe_vcl_hello *h)
{
	if (len < sizeof(*h))
		return -EPROTO;
	memcpy(h, pd, sizeof(*h));
	for (unsigned i = 0; i < sizeof(h->reserved); i++)
		if (h->reserved[i])
			return -EPROTO;
	return h->magic == VBE_VCL_MAGIC && h->version == VBE_VCL_VERSION && h->rkey &&
	       h->size >= 2 && h->size <= VRDMA_TEAM_MAX && h->from < h->size ? 0 : -EPROTO;
}

static void vbe_vcl_pack(const struct vbe_vcl *c, struct vbe_vcl_hello *h)
{
	memset(h, 0, sizeof(*h));
	h->magic = VBE_VCL_MAGIC;
	h->version = VBE_VCL_VERSION;
	h->from = (uint16_t)c->from;
	h->hash = c->hash;
	memcpy(h->key, c->key, 16);
	h->addr = (uintptr_t)c->mem;
	h->rkey = c->mr->rkey;
	h->size = c->size;
}

/* ---- the QP ---- */

static void vbe_vcl_param(struct rdma_conn_param *p, const struct vbe_vcl_hello *h)
{
	memset(p, 0, sizeof(*p));
	p->private_data = h;
	p->private_data_len = sizeof(*h);
	p->retry_count = 7;
	p->rnr_retry_count = 6;		/* receives are always posted */
}

static int vbe_vcl_post_recv(struct vbe_vcl *c)
{
	struct ibv_recv_wr wr = { .wr_id = vbe_vcl_wrid(c, VBE_VCL_WR_RECV) }, *bad;

	return ibv_post_recv(c->id->qp, &wr, &bad) ? -EIO : 0;
}

static int vbe_vcl_qp(struct vbe_vcl *c)
{
	struct vbe_vcoll *vc = c->vx->vcl;
	struct ibv_qp_init_attr qa;
	uint8_t t = VBE_VX_ACK_TIMEOUT;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = vc->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = VBE_VCL_SENDS;
	qa.cap.max_recv_wr = VBE_VCL_RECVS;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = 8;
	if (rdma_set_option(c->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t)))
		vlog_dbg("rdma: cannot set the ack timeout: %s", strerror(errno));
	if (rdma_create_qp(c->id, vc->pd, &qa))
		return -errno;
	for (unsigned i = 0; i < VBE_VCL_RECVS; i++)
		if (vbe_vcl_post_recv(c))
			return -EIO;
	return 0;
}

/* The id and its QP go (their completions are known stale by gen). */
static void vbe_vcl_drop_id(struct vbe_vcl *c)
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

static void vbe_vcl_free(struct vbe_vcl *c)
{
	struct vbe_vcoll *vc = c->vx->vcl;

	vbe_vcl_drop_id(c);
	vc->l[c->idx] = NULL;
	vc->gen[c->idx]++;
	ibv_dereg_mr(c->mr);
	free(c->mem);
	free(c);
}

static void vbe_vcl_down(struct vbe_vcl *c, const char *why)
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

/* Connector: the next try, from address resolution. */
static void vbe_vcl_try(struct vbe_vcl *c)
{
	struct vbe_vx *vx = c->vx;
	struct sockaddr_storage src;

	c->state = VBE_VCL_IDLE;
	c->retry_ms = vplat_now_ms() + VBE_VCL_RETRY_MS;
	if (rdma_create_id(vx->ech, &c->id, (void *)(VBE_VCL_CTX | c->idx), RDMA_PS_TCP)) {
		c->id = NULL;
		return;
	}
	memcpy(&src, &vx->addr, sizeof(src));
	((struct sockaddr_in *)&src)->sin_port = 0;
	if (rdma_resolve_addr(c->id, (struct sockaddr *)&src, (struct sockaddr *)&c->dst,
			      VBE_VX_RESOLVE_MS)) {
		vbe_vcl_drop_id(c);
		return;
	}
	c->state = VBE_VCL_ADDR;
}

/* Connector: one more try later, unless the link was told it is over. */
static void vbe_vcl_again(struct vbe_vcl *c)
{
	vbe_vcl_drop_id(c);
	c->state = VBE_VCL_IDLE;
	c->retry_ms = vplat_now_ms() + VBE_VCL_RETRY_MS;
}

static void vbe_vcl_up(struct vbe_vcl *c, const void *pd, size_t len)
{
	struct vbe_vcl_hello h;

	if (vbe_vcl_unpack(pd, len, &h) || memcmp(h.key, c->key, 16) || h.hash != c->hash ||
	    h.size != c->size || h.from != (c->l.dir == VBE_CL_NEXT ? c->from + 1 : c->from - 1)) {
		vbe_vcl_down(c, "the other node's answer is not this team's");
		return;
	}
	c->peer_addr = h.addr;
	c->peer_rkey = h.rkey;
	c->state = VBE_VCL_UP;
	c->l.up = true;
	vbe_chain_link_state(&c->l);
}

/* ---- seam ops ---- */

static int vbe_vcl_open(struct vbe_node *n, struct vbe_team *t, enum vbe_cl_dir dir,
			const char *peer, struct vbe_clink **out)
{
	struct vbe_vx *vx = n->vx;
	struct vbe_vcoll *vc = vx ? vbe_vcl_node(vx) : NULL;
	struct addrinfo hints = { .ai_family = AF_INET }, *res;
	struct vbe_vcl *c;
	char port[8];
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
	if (posix_memalign(&mem, VRDMA_PAGE_SIZE, VBE_VCL_AREA)) {
		free(c);
		return -ENOMEM;
	}
	memset(mem, 0, VBE_VCL_AREA);
	c->mem = mem;
	c->mr = ibv_reg_mr(vc->pd, mem, VBE_VCL_AREA,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!c->mr) {
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
	c->l.out = c->mem + VBE_CL_SLOTS * VBE_CL_SLOT;
	c->l.impl = c;
	memcpy(c->key, t->key, 16);
	c->hash = t->hash;
	c->size = t->size;
	c->from = t->span->k;
	vc->l[i] = c;
	*out = &c->l;
	if (dir == VBE_CL_PREV) {
		c->state = VBE_VCL_WAIT;	/* node k-1 connects */
		return 0;
	}
	snprintf(port, sizeof(port), "%u", vx->port);
	hints.ai_flags = AI_NUMERICHOST;
	if (getaddrinfo(peer, port, &hints, &res)) {
		hints.ai_flags = 0;
		if (getaddrinfo(peer, port, &hints, &res)) {
			vlog_warn("rdma: team link to %s: no such node", peer);
			c->state = VBE_VCL_DOWN;
			c->l.down = true;
			return 0;
		}
	}
	memcpy(&c->dst, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
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
	rc = vbe_vcl_post(c, (uintptr_t)l->out + slot, VBE_CL_HDR + len, c->mr->lkey,
			  c->peer_addr + slot, (uint32_t)l->sent & ~VBE_VCL_IMM_USED, 0);
	if (rc)
		vbe_vcl_down(c, "a message could not be posted");
	return rc;
}

static void vbe_vcl_consumed(struct vbe_clink *l)
{
	struct vbe_vcl *c = l->impl;
	uint64_t used = l->used;

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

/* ---- rdma_cm ---- */

/* A REQ with a coll hello, on vrdmad's listener (cm_rdmacm.c). */
void vbe_vcl_request(struct vbe_vx *vx, struct rdma_cm_id *id, const void *pd, size_t len)
{
	struct vbe_vcoll *vc = vx->vcl;
	struct rdma_conn_param p;
	struct vbe_vcl_hello h, me;
	struct vbe_vcl *c = NULL;
	uint32_t i;

	if (vbe_vcl_unpack(pd, len, &h)) {
		vbe_rcm_reject(id, VRDMA_CS_REFUSED);
		return;
	}
	for (i = 0; vc && i < VBE_VCL_MAX && !c; i++)
		if (vc->l[i] && vc->l[i]->state == VBE_VCL_WAIT &&
		    !memcmp(vc->l[i]->key, h.key, 16) && vc->l[i]->from == (uint32_t)h.from + 1)
			c = vc->l[i];
	if (!c) {
		vbe_rcm_reject(id, VRDMA_CS_NOENT);	/* not yet: it tries again */
		return;
	}
	if (h.hash != c->hash || h.size != c->size) {
		vbe_rcm_reject(id, VRDMA_CS_REFUSED);
		vbe_vcl_down(c, "the other node's team has another member list");
		return;
	}
	id->context = (void *)(VBE_VCL_CTX | c->idx);
	c->id = id;
	if (vbe_vcl_qp(c)) {
		c->id = NULL;
		if (id->qp)
			rdma_destroy_qp(id);
		vbe_rcm_reject(id, VRDMA_CS_REFUSED);
		vbe_vcl_down(c, "no QP for it");
		return;
	}
	c->peer_addr = h.addr;
	c->peer_rkey = h.rkey;
	vbe_vcl_pack(c, &me);
	vbe_vcl_param(&p, &me);
	if (rdma_accept(id, &p)) {
		vbe_vcl_down(c, "the accept failed");
		return;
	}
	c->state = VBE_VCL_CONN;
}

void vbe_vcl_event(struct vbe_vx *vx, enum rdma_cm_event_type type, struct rdma_cm_id *id,
		   uintptr_t ctx, const uint8_t *pd, size_t len)
{
	uint32_t i = (uint32_t)(ctx & ~VBE_VCL_CTX);
	struct vbe_vcl *c = vx->vcl && i < VBE_VCL_MAX ? vx->vcl->l[i] : NULL;
	struct vbe_vcl_hello me;
	struct rdma_conn_param p;
	uint16_t st;
	uint32_t plen;
	uint8_t pdata[VRDMA_PDATA_MAX];

	if (!c || c->id != id)
		return;
	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		c->state = VBE_VCL_ROUTE;
		if (rdma_resolve_route(id, VBE_VX_RESOLVE_MS))
			vbe_vcl_again(c);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		vbe_vcl_pack(c, &me);
		vbe_vcl_param(&p, &me);
		if (vbe_vcl_qp(c) || rdma_connect(id, &p)) {
			vbe_vcl_again(c);
			break;
		}
		c->state = VBE_VCL_CONN;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (c->l.dir == VBE_CL_NEXT)
			vbe_vcl_up(c, pd, len);
		else {
			c->state = VBE_VCL_UP;
			c->l.up = true;
			vbe_chain_link_state(&c->l);
		}
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (c->l.dir == VBE_CL_NEXT &&
		    !vbe_vx_rej_unpack(pd, len, &st, pdata, &plen) && st == VRDMA_CS_NOENT)
			vbe_vcl_again(c);
		else
			vbe_vcl_down(c, "the other node refused it");
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		if (c->l.dir == VBE_CL_NEXT && c->state != VBE_VCL_UP)
			vbe_vcl_again(c);
		else
			vbe_vcl_down(c, "the connection failed");
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		vbe_vcl_down(c, "the other node left");
		break;
	default:
		break;
	}
}

void vbe_vcl_tick(struct vbe_vx *vx, int64_t now_ms)
{
	for (uint32_t i = 0; vx->vcl && i < VBE_VCL_MAX; i++) {
		struct vbe_vcl *c = vx->vcl->l[i];

		if (c && c->closing && now_ms >= c->close_ms)
			vbe_vcl_free(c);
		else if (c && c->state == VBE_VCL_IDLE && !c->id && now_ms >= c->retry_ms)
			vbe_vcl_try(c);
	}
}

/* ---- completions ---- */

bool vbe_vcl_cq_event(struct vbe_vx *vx, struct ibv_cq *cq)
{
	if (!vx->vcl || cq != vx->vcl->cq)
		return false;
	ibv_ack_cq_events(cq, 1);
	return true;
}

static void vbe_vcl_wc(struct vbe_vx *vx, const struct ibv_wc *wc)
{
	uint32_t i = (uint32_t)(wc->wr_id >> 8 & 0xffffffu), imm;
	struct vbe_vcl *c = i < VBE_VCL_MAX ? vx->vcl->l[i] : NULL;
	volatile const uint64_t *word;
	uint64_t v;

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
	if ((wc->wr_id & 0xff) == VBE_VCL_WR_SEND) {
		c->sends--;
		if (wc->status != IBV_WC_SUCCESS)
			vbe_vcl_down(c, ibv_wc_status_str(wc->status));
		else if (c->used_due)
			vbe_vcl_consumed(&c->l);
		return;
	}
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
	if (vbe_vcl_post_recv(c)) {
		vbe_vcl_down(c, "no receive for the next message");
		return;
	}
	vbe_chain_kick(&c->l);
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
