// SPDX-License-Identifier: MIT
/*
 * Connecting the links of teams across nodes (verbs_colli.h): rdma_cm on
 * vrdmad's own port.  The lower node of a pair connects; its REQ carries
 * a coll hello (first byte 0xb0, which a vrdmad without teams across
 * nodes refuses as not its protocol: the team then runs in its members).
 * The other node accepts only from the address its own list names for
 * the node before it, for a team of that key, list and size whose place
 * before its own is the sender's.  If that team is not there yet (its
 * members still joining) it refuses NOENT and the connector tries again
 * every VBE_VCL_RETRY_MS while the chain keeps the link; any other
 * refusal, or an error once up, is the link going down.
 */
#include <errno.h>
#include <string.h>

#include "log.h"
#include "verbs_colli.h"

#define VBE_VCL_MAGIC		0xb0
#define VBE_VCL_VERSION		1

struct vbe_vcl_hello {
	uint8_t  magic, version;
	uint16_t from;			/* the sender's place in the layout */
	uint32_t hash;			/* its team's list (and size) */
	uint8_t  key[16];
	uint64_t addr;			/* its in area's iova (0) */
	uint32_t rkey;
	uint32_t size;
	uint8_t  reserved[8];
};
_Static_assert(sizeof(struct vbe_vcl_hello) == 48, "the coll hello is 48 bytes");
_Static_assert(sizeof(struct vbe_vcl_hello) <= 56, "it fits a REQ's private data");

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
	h->addr = 0;
	h->rkey = c->in_mr->rkey;
	h->size = c->size;
}

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

int vbe_vcl_repost(struct vbe_vcl *c)
{
	return vbe_vcl_post_recv(c);
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

/* Connector: the next try, from address resolution. */
void vbe_vcl_try(struct vbe_vcl *c)
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

/* Connector: one more try later; acceptor: wait for the next REQ. */
static void vbe_vcl_again(struct vbe_vcl *c)
{
	vbe_vcl_drop_id(c);
	c->state = c->l.dir == VBE_CL_NEXT ? VBE_VCL_IDLE : VBE_VCL_WAIT;
	c->retry_ms = vplat_now_ms() + VBE_VCL_RETRY_MS;
}

static void vbe_vcl_up(struct vbe_vcl *c, const void *pd, size_t len)
{
	struct vbe_vcl_hello h;

	if (vbe_vcl_unpack(pd, len, &h) || memcmp(h.key, c->key, 16) || h.hash != c->hash ||
	    h.size != c->size || h.from != c->from + 1) {
		vbe_vcl_down(c, "the other node's answer is not this team's");
		return;
	}
	c->peer_addr = h.addr;
	c->peer_rkey = h.rkey;
	c->state = VBE_VCL_UP;
	c->l.up = true;
	vbe_chain_link_state(&c->l);
}

static bool vbe_vcl_same_host(const struct sockaddr *a, const struct sockaddr_storage *b)
{
	return a && a->sa_family == AF_INET && b->ss_family == AF_INET &&
	       ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
	       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
}

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
	/* Only the node the list puts before ours may take that place. */
	for (i = 0; vc && i < VBE_VCL_MAX && !c; i++)
		if (vc->l[i] && vc->l[i]->state == VBE_VCL_WAIT &&
		    !memcmp(vc->l[i]->key, h.key, 16) && vc->l[i]->from == (uint32_t)h.from + 1 &&
		    vbe_vcl_same_host(rdma_get_peer_addr(id), &vc->l[i]->dst))
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
		vbe_vcl_again(c);
		return;
	}
	c->state = VBE_VCL_CONN;
}

void vbe_vcl_event(struct vbe_vx *vx, enum rdma_cm_event_type type, struct rdma_cm_id *id,
		   uintptr_t ctx, const uint8_t *pd, size_t len)
{
	uint32_t i = (uint32_t)(ctx & ~VBE_VCL_CTX);
	struct vbe_vcl *c = vx->vcl && i < VBE_VCL_MAX ? vx->vcl->l[i] : NULL;
	uint8_t pdata[VRDMA_PDATA_MAX];
	struct vbe_vcl_hello me;
	struct rdma_conn_param p;
	uint32_t plen;
	uint16_t st;

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
		if (c->l.dir == VBE_CL_NEXT) {
			vbe_vcl_up(c, pd, len);
		} else {
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
		/* before it is up, either side tries again */
		if (c->state != VBE_VCL_UP)
			vbe_vcl_again(c);
		else
			vbe_vcl_down(c, "the connection failed");
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/* What landed before the other node left is still ours; the
		 * poll may free a closing link: look it up again. */
		vbe_vcl_poll(vx, VBE_VX_POLL_CQES);
		c = vx->vcl->l[i];
		if (!c || c->id != id)
			break;
		if (c->state != VBE_VCL_UP && !c->closing)
			vbe_vcl_again(c);
		else
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
		else if (c && c->state == VBE_VCL_IDLE && c->l.dir == VBE_CL_NEXT && !c->id &&
			 now_ms >= c->retry_ms)
			vbe_vcl_try(c);
	}
}
