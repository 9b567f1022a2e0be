// SPDX-License-Identifier: MIT
/*
 * The node's RDMA device: one context, found through the rdma_cm
 * listener's address, one completion channel, one CQ per device QP.
 * Per guest: one PD, its MRs registered lazily (after a command batch
 * changed them, and before any WR of that guest reaches the device),
 * and its remote-key table (verbs.h).
 *
 * Fds (rdma_cm events, completion channel, async events) go into
 * vrdmad's loop through the node's fd callback; CQs are polled in
 * vbe_node_poll with a per-node budget.  Nothing here blocks: every fd
 * is non-blocking, address/route resolution has a time limit, and
 * teardown that may sleep runs on the reaper thread (verbs_reap.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>

#include "log.h"
#include "verbs.h"
#include "verbs_ud.h"
#include "../target.h"

static int vbe_vx_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* Bind a throwaway id to each IPv4 address: the first one that lands on
 * an RDMA device is ours (rxe0 over eth0 in the cluster rig). */
static int vbe_vx_find_addr(struct vbe_vx *vx, struct sockaddr_in *out)
{
	struct ifaddrs *ifa, *i;
	struct rdma_cm_id *id;
	int err = -ENODEV;

	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (i = ifa; i && err; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    (i->ifa_flags & IFF_LOOPBACK))
			continue;
		if (rdma_create_id(vx->ech, &id, NULL, RDMA_PS_TCP))
			break;
		if (!rdma_bind_addr(id, i->ifa_addr) && id->verbs) {
			memcpy(out, i->ifa_addr, sizeof(*out));
			err = 0;
		}
		rdma_destroy_id(id);
	}
	freeifaddrs(ifa);
	return err;
}

static int vbe_vx_parse_addr(const char *s, struct sockaddr_in *out)
{
	struct addrinfo hints = { .ai_family = AF_INET }, *res;

	/* Numeric first: a name lookup may wait on DNS. */
	hints.ai_flags = AI_NUMERICHOST;
	if (getaddrinfo(s, NULL, &hints, &res)) {
		hints.ai_flags = 0;
		if (getaddrinfo(s, NULL, &hints, &res))
			return -EADDRNOTAVAIL;
	}
	memcpy(out, res->ai_addr, sizeof(*out));
	freeaddrinfo(res);
	return 0;
}

static void vbe_vx_fds(struct vbe_node *n, struct vbe_vx *vx, int add)
{
	if (!n->fd_cb)
		return;
	n->fd_cb(n->fd_arg, vx->ech->fd, add);
	n->fd_cb(n->fd_arg, vx->cch->fd, add);
	n->fd_cb(n->fd_arg, vx->ctx->async_fd, add);
	if (vx->reap)
		n->fd_cb(n->fd_arg, vbe_reap_fd(vx), add);
	if (vbe_vud_fd(vx) >= 0)
		n->fd_cb(n->fd_arg, vbe_vud_fd(vx), add);
}

int vbe_vx_open(struct vbe_node *n, const struct vbe_node_cfg *cfg)
{
	struct ibv_device_attr da;
	struct sockaddr_in sin;
	struct vbe_vx *vx;
	char buf[INET_ADDRSTRLEN];
	int err;

	if (!cfg->rdma_addr || !strcmp(cfg->rdma_addr, "none"))
		return 0;
	vx = calloc(1, sizeof(*vx));
	if (!vx)
		return -ENOMEM;
	vx->node = n;
	vx->port = cfg->rdma_port ? (uint16_t)cfg->rdma_port : VBE_VX_PORT_DEF;
	vx->ech = rdma_create_event_channel();
	if (!vx->ech) {
		err = -errno;
		goto err_free;
	}
	err = vbe_vx_nonblock(vx->ech->fd);
	if (err)
		goto err_ech;
	if (cfg->rdma_addr[0])
		err = vbe_vx_parse_addr(cfg->rdma_addr, &sin);
	else
		err = vbe_vx_find_addr(vx, &sin);
	if (err)
		goto err_ech;
	sin.sin_port = htons(vx->port);
	if (rdma_create_id(vx->ech, &vx->lis, vx, RDMA_PS_TCP)) {
		err = -errno;
		goto err_ech;
	}
	if (rdma_bind_addr(vx->lis, (struct sockaddr *)&sin)) {
		err = -errno;
		goto err_lis;
	}
	if (!vx->lis->verbs) {
		err = -ENODEV;
		goto err_lis;
	}
	if (rdma_listen(vx->lis, VBE_LISTEN_BACKLOG)) {
		err = -errno;
		goto err_lis;
	}
	vx->ctx = vx->lis->verbs;
	if (ibv_query_device(vx->ctx, &da)) {
		err = -EIO;
		goto err_lis;
	}
	vx->max_sge = da.max_sge;
	/* Any QP may go to the device: guests are told the lower bound,
	 * never below the 4 every guest may ask for (a device of fewer
	 * refuses such a QP when it moves there, as before). */
	if ((uint32_t)da.max_sge < n->max_sge)
		n->max_sge = da.max_sge > VRDMA_WR_SGE ? (uint32_t)da.max_sge : VRDMA_WR_SGE;
	vx->cch = ibv_create_comp_channel(vx->ctx);
	if (!vx->cch) {
		err = -errno;
		goto err_lis;
	}
	err = vbe_vx_nonblock(vx->cch->fd);
	if (!err)
		err = vbe_vx_nonblock(vx->ctx->async_fd);
	if (err)
		goto err_cch;
	err = vbe_reap_start(vx);
	if (err)
		goto err_cch;
	memcpy(&vx->addr, &sin, sizeof(sin));
	/* Datagrams between nodes are an extra: without them, RC still runs. */
	err = vbe_vud_open(vx);
	if (err)
		vlog_warn("rdma: no datagrams between nodes: %s", strerror(-err));
	n->vx = vx;
	/* Teams across nodes: their links go through this device. */
	if (n->coll && !n->coll->off)
		n->coll->links = &vbe_vcl_ops;
	vbe_vx_fds(n, vx, 1);
	vlog_info("rdma: %s listening on %s:%u", ibv_get_device_name(vx->ctx->device),
		  inet_ntop(AF_INET, &sin.sin_addr, buf, sizeof(buf)), vx->port);
	return 0;

err_cch:
	ibv_destroy_comp_channel(vx->cch);
err_lis:
	rdma_destroy_id(vx->lis);
err_ech:
	rdma_destroy_event_channel(vx->ech);
err_free:
	free(vx);
	return err ? err : -EIO;
}

static void vbe_vx_guest_free(struct vbe_vx *vx, struct vbe_vguest *vg);

void vbe_vx_close(struct vbe_node *n)
{
	struct vbe_vx *vx = n->vx;
	uint32_t i;

	if (!vx)
		return;
	if (n->coll && n->coll->links == &vbe_vcl_ops)
		n->coll->links = NULL;
	for (i = 0; i < VBE_VX_MAX_QPS; i++)
		if (vx->qps[i].s.used)
			vbe_vx_qp_free(vx, &vx->qps[i]);
	for (i = 0; i < VBE_MAX_CONNS; i++) {
		if (vx->rconn[i].id)
			rdma_destroy_id(vx->rconn[i].id);
		if (vx->qreq[i].id)
			rdma_destroy_id(vx->qreq[i].id);
	}
	while (vx->guests)
		vbe_vx_guest_free(vx, vx->guests);
	vbe_vx_fds(n, vx, 0);	/* the reaper's eventfd too, before it closes */
	vbe_reap_stop(vx);	/* every CQ gone before the channel */
	vbe_vud_close(vx);
	vbe_vcl_close_all(vx);
	ibv_destroy_comp_channel(vx->cch);
	rdma_destroy_id(vx->lis);
	rdma_destroy_event_channel(vx->ech);
	free(vx);
	n->vx = NULL;
}

/* ---- per-guest device state ---- */

/* answer: DEREG_MR's, on the MR lane; returns the reaper's number for
 * the device MR's deregistration there, 0 if there is nothing to wait for. */
static uint64_t vbe_vx_mr_drop(struct vbe_vx *vx, struct vbe_vguest *vg, uint32_t i,
			       bool answer)
{
	uint64_t seq = 0;
	uint8_t *ent;

	/* Peers holding the key in their cache post to its device window:
	 * once the reaper deregistered the MR, nothing is there (the key
	 * slot's next key gets another window: key.c). */
	if (vg->mr[i])
		seq = vbe_reap_mr(vx, vg->mr[i], answer ? vg->ten : NULL);
	/* The key table is indexed by key slot: wipe the entry only if it
	 * is still this MR's (a newer MR of the slot may be in it already). */
	ent = vg->rkt + (size_t)vbe_key_idx(vg->key[i]) * VBE_VX_RKT_ENT;
	if (vbe_vx_rkt_gkey(ent) == vg->key[i])
		vbe_vx_rkt_write(ent, NULL);
	vg->mr[i] = NULL;
	vg->key[i] = 0;
	vg->addr[i] = NULL;
	return seq;
}

/* Unlink vg; the reaper frees it after the QPs queued before it. */
static void vbe_vx_guest_free(struct vbe_vx *vx, struct vbe_vguest *vg)
{
	struct vbe_vguest **p;

	for (p = &vx->guests; *p; p = &(*p)->next)
		if (*p == vg) {
			*p = vg->next;
			break;
		}
	vbe_reap_guest(vx, vg);
}

static uint8_t *vbe_vx_zalloc(size_t len)
{
	void *p;

	if (posix_memalign(&p, VRDMA_PAGE_SIZE, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

/* g's device state, made on first use; NULL if the device says no. */
struct vbe_vguest *vbe_vx_guest(struct vbe_vx *vx, struct vbe_guest *g)
{
	const size_t rkt_len = (size_t)VBE_KEY_SLOTS * VBE_VX_RKT_ENT;
	const size_t scr_len = (size_t)VBE_VX_MAX_QPS * VBE_VX_RKT_ENT;
	struct vbe_vguest *vg;

	for (vg = vx->guests; vg; vg = vg->next)
		if (vg->g == g && vg->domid == g->domid && vg->devid == g->devid)
			return vg;
	vg = calloc(1, sizeof(*vg));
	if (!vg)
		return NULL;
	vg->domid = g->domid;
	vg->devid = g->devid;
	vg->g = g;
	memcpy(vg->ten, g->tenant, sizeof(vg->ten));
	vg->cmds = UINT64_MAX;	/* first sync registers everything */
	vg->next = vx->guests;
	vx->guests = vg;
	vg->mr = calloc(VBE_MAX_MRS, sizeof(*vg->mr));
	vg->key = calloc(VBE_MAX_MRS, sizeof(*vg->key));
	vg->addr = calloc(VBE_MAX_MRS, sizeof(*vg->addr));
	vg->srqs = calloc(VBE_MAX_SRQS, sizeof(*vg->srqs));
	/* Page aligned: the kernel wants start and iova at the same page
	 * offset, and the table sits at iova 0. */
	vg->rkt = vbe_vx_zalloc(rkt_len);
	vg->scratch = vbe_vx_zalloc(scr_len);
	vg->pd = ibv_alloc_pd(vx->ctx);
	if (!vg->mr || !vg->key || !vg->addr || !vg->srqs || !vg->rkt || !vg->scratch ||
	    !vg->pd)
		goto err_free;
	/* iova 0: the peer finds a key's entry at its key slot * 32 without
	 * being told where. */
	vg->rkt_mr = ibv_reg_mr_iova(vg->pd, vg->rkt, rkt_len, 0, IBV_ACCESS_REMOTE_READ);
	vg->scratch_mr = ibv_reg_mr(vg->pd, vg->scratch, scr_len, IBV_ACCESS_LOCAL_WRITE);
	if (!vg->rkt_mr || !vg->scratch_mr)
		goto err_free;
	return vg;

err_free:
	vlog_warn("rdma: guest %u device %u: no device PD/MRs: %s", g->domid, g->devid,
		  strerror(errno));
	vbe_vx_guest_free(vx, vg);
	return NULL;
}

/* Device MRs registered on guest pages since start (logged once). */
static unsigned long vbe_vx_pinned;

/*
 * Bring the device MRs in line with g's MR table.  Cheap when no command
 * ran since the last call; called before any WR of g reaches the device
 * and after every node poll, so a key a guest hands out (only after its
 * REG_MR's CMD_DONE) is in the table before a peer can learn it.
 */
void vbe_vx_guest_sync(struct vbe_vx *vx, struct vbe_vguest *vg, struct vbe_guest *g)
{
	uint32_t i;

	if (vg->cmds == g->ctr.commands || !g->mrs)
		return;
	vg->cmds = g->ctr.commands;
	for (i = 0; i < VBE_MAX_MRS; i++) {
		const struct vbe_mr *m = &g->mrs[i];
		uint8_t *addr = m->s.used ? g->bufs[m->buf].addr + m->offset : NULL;
		struct vbe_rkt e;

		if (vg->key[i] && (!m->s.used || m->key != vg->key[i] || addr != vg->addr[i]))
			vbe_vx_mr_drop(vx, vg, i, false);
		if (!m->s.used || vg->key[i])
			continue;
		vg->key[i] = m->key;
		vg->addr[i] = addr;
		/* In the key's device window (verbs.h): a device rkey the
		 * driver hands out again does not take a stale key elsewhere. */
		errno = EFBIG;		/* past its key's window (verbs.h) */
		vg->mr[i] = vbe_vx_win_fits(vbe_vx_pgoff(addr), m->length) ?
			ibv_reg_mr_iova(vg->pd, addr, m->length,
					vbe_vx_va(m->key, vbe_vx_pgoff(addr)),
					vbe_vx_access(m->access)) : NULL;
		if (!vg->mr[i]) {
			static struct vlog_lim reg_lim;	/* a guest can ask again */

			/* WRs naming it fail LOC_PROT / REM_ACCESS: as a bad key. */
			vlog_limited(&reg_lim, VLOG_WARN, "rdma: guest %u: ibv_reg_mr %#x (%llu bytes): %s",
				     g->domid, m->key, (unsigned long long)m->length,
				     strerror(errno));
			continue;
		}
		/* Says once which memory path this dom0 runs (docs/rdma.md):
		 * the device pinned the guest's pages as dom0 maps them. */
		if (!vbe_vx_pinned++)
			vlog_info("rdma: zero copy: ibv_reg_mr pinned guest %u's mapped pages"
				  " (key %#x, %llu bytes)", g->domid, m->key,
				  (unsigned long long)m->length);
		e.gkey = m->key;
		e.rkey = vg->mr[i]->rkey;
		e.iova = m->iova;
		e.length = m->length;
		e.access = m->access;
		e.pd = m->pd;
		e.pgoff = vbe_vx_pgoff(addr);
		vbe_vx_rkt_write(vg->rkt + (size_t)vbe_key_idx(m->key) * VBE_VX_RKT_ENT, &e);
	}
	if (vg->nsrqs)
		vbe_vx_srq_sync(vx, vg, g);
}

/*
 * g drops the buffer map at [addr, addr + len): its device MRs go first.
 * Needed on Xen: gntdev's unmap of a page the device still pins is
 * deferred while munmap goes on, and the kernel then finds live grant
 * PTEs ("Bad page map") and later registrations fail (docs/rdma.md).
 * Returns 1 if the map was taken (unmapped once the reaper let go of the
 * pages), 0 if the caller unmaps it now.
 */
int vbe_vx_unpin(struct vbe_node *n, const struct vbe_guest *g, const uint8_t *addr,
		 size_t len, struct vplat_map *map)
{
	struct vbe_vguest *vg;
	uint32_t i;

	if (!n->vx)
		return 0;
	for (vg = n->vx->guests; vg; vg = vg->next) {
		if (vg->g != g || !vg->mr)
			continue;
		for (i = 0; i < VBE_MAX_MRS; i++)
			if (vg->key[i] && vg->addr[i] >= addr && vg->addr[i] < addr + len)
				vbe_vx_mr_drop(n->vx, vg, i, false);
	}
	return vbe_reap_defer_unmap(n->vx, map, g->ten, g->tenant,
				    (uint32_t)(len / VRDMA_PAGE_SIZE));
}

/*
 * g deregisters MR idx (key): its device MR goes now, not at the next
 * sync, and DEREG_MR's answer waits for the number returned (0: nothing
 * on the device to wait for) -- until then a peer holding the key could
 * still reach the pages (docs/security.md section 8).
 */
uint64_t vbe_vx_dereg(struct vbe_node *n, const struct vbe_guest *g, uint32_t idx,
		      uint32_t key)
{
	struct vbe_vguest *vg;

	if (!n->vx)
		return n->test_mr_lane.on ? ++n->test_mr_lane.queued : 0;
	if (idx >= VBE_MAX_MRS)
		return 0;
	for (vg = n->vx->guests; vg; vg = vg->next)
		if (vg->g == g && vg->mr && vg->key[idx] == key)
			return vbe_vx_mr_drop(n->vx, vg, idx, true);
	return 0;
}

bool vbe_vx_dereg_done(const struct vbe_node *n, const struct vbe_guest *g, uint64_t seq)
{
	if (!n->vx)
		return !n->test_mr_lane.on || n->test_mr_lane.done >= seq;
	return vbe_reap_mr_done(n->vx, seq, g->tenant);
}

unsigned vbe_vx_pending(const struct vbe_node *n)
{
	return n->vx ? vbe_reap_pending(n->vx) : 0;
}

/* Guests that left (or were disabled) give their device state back. */
static void vbe_vx_guests_reap(struct vbe_vx *vx)
{
	struct vbe_vguest *vg, *next;
	struct vbe_guest *g;

	for (vg = vx->guests; vg; vg = next) {
		next = vg->next;
		g = vbe_node_guest(vx->node, vg->domid, vg->devid);
		if (g && g == vg->g && !g->dead) {
			vbe_vx_guest_sync(vx, vg, g);
			continue;
		}
		if (!vg->nqps)
			vbe_vx_guest_free(vx, vg);
	}
}

/* ---- device QPs ---- */

struct vbe_vqp *vbe_vx_qp_new(struct vbe_vx *vx, struct vbe_guest *g, struct vbe_qp *qp)
{
	struct vbe_vguest *vg = vbe_vx_guest(vx, g);
	struct vbe_vqp *vq;
	uint32_t i;

	if (!vg || vg->nqps >= VBE_VX_GUEST_QPS)
		return NULL;
	/* The table is the node's: a tenant's guests share a quarter of it. */
	if (vbe_tenant_quota(g, VBE_TQ_DEVQPS, 1))
		return NULL;
	i = VBE_TAKE(vx->qps, VBE_VX_MAX_QPS);
	if (i == UINT32_MAX)
		return NULL;
	vq = &vx->qps[i];
	memset((char *)vq + sizeof(vq->s), 0, sizeof(*vq) - sizeof(vq->s));
	vq->domid = g->domid;
	vq->devid = g->devid;
	vq->qp = qp->handle;
	vq->vg = vg;
	vq->gserial = g->serial;
	vg->nqps++;
	g->dev_qps++;
	qp->vx_qp = vbe_handle(&vq->s, i);
	vbe_vx_guest_sync(vx, vg, g);
	return vq;
}

/* The device QP on vq->id, in the guest's PD, sized like the guest QP
 * (+1 send slot for a key-table READ). */
int vbe_vx_qp_create(struct vbe_vx *vx, struct vbe_vqp *vq, struct vbe_qp *qp)
{
	struct vbe_guest *g = vbe_node_guest(vx->node, vq->domid, vq->devid);
	uint32_t sge = qp->max_sge ? qp->max_sge : 1, nrecv = qp->rq.size;
	struct ibv_srq *srq = NULL;
	struct ibv_qp_init_attr a;

	if (vq->id->verbs != vx->ctx)
		return -EXDEV;		/* routed to another device: one only */
	if (sge > (uint32_t)vx->max_sge || !g)
		return -EINVAL;
	if (qp->srq) {
		/* Any of the SRQ's receives may complete on this QP's CQ. */
		srq = vbe_vx_srq_get(vx, vq->vg, g, qp->srq - 1);
		if (!srq)
			return -ENOMEM;
		nrecv = g->srqs[qp->srq - 1].rq.size;
	}
	vq->cq = ibv_create_cq(vx->ctx, (int)(qp->sq.size + nrecv + 1),
			       (void *)(uintptr_t)vbe_handle(&vq->s, (uint32_t)(vq - vx->qps)),
			       vx->cch, 0);
	if (!vq->cq)
		return -errno;
	if (ibv_req_notify_cq(vq->cq, 0))
		goto err_cq;
	memset(&a, 0, sizeof(a));
	a.send_cq = vq->cq;
	a.recv_cq = vq->cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = qp->sq.size + 1;
	a.cap.max_recv_wr = srq ? 0 : qp->rq.size;
	a.cap.max_send_sge = sge;
	a.cap.max_recv_sge = srq ? 0 : sge;
	a.srq = srq;
	if (rdma_create_qp(vq->id, vq->vg->pd, &a))
		goto err_cq;
	if (srq) {
		vq->srq1 = qp->srq;
		vq->vg->srqs[qp->srq - 1]->qps++;
		vbe_vx_srq_fill(vx, vq->vg, g, qp->srq - 1);
	}
	return 0;

err_cq:
	ibv_destroy_cq(vq->cq);
	vq->cq = NULL;
	return -EIO;
}

/* Give back the device credits vq holds (issue 5's per-guest bound on
 * outstanding device work); the guest may be gone already. */
void vbe_vx_credits_return(struct vbe_vx *vx, struct vbe_vqp *vq)
{
	struct vbe_guest *g = vbe_node_guest(vx->node, vq->domid, vq->devid);

	for (; vq->credits; vq->credits--)
		if (g)
			vbe_credit_put(g);
	vbe_dev_put(vx->node, g, vq->inflight);
	vq->inflight = 0;
}

/* The slot is free at once; the device objects go on the reaper (their
 * teardown can sleep).  CQ events counted so far are acked there; later
 * ones find no vq and are acked on arrival. */
void vbe_vx_qp_free(struct vbe_vx *vx, struct vbe_vqp *vq)
{
	vbe_vx_credits_return(vx, vq);
	if (vq->srq1 && vq->vg && vq->vg->srqs[vq->srq1 - 1] &&
	    vq->vg->srqs[vq->srq1 - 1]->qps)
		vq->vg->srqs[vq->srq1 - 1]->qps--;
	if (vq->id || vq->cq)
		vbe_reap_qp(vx, vq->id, vq->state == VBE_VQ_UP, vq->cq, vq->cq_events);
	if (vq->vg) {
		struct vbe_guest *g = vbe_node_guest(vx->node, vq->domid, vq->devid);

		vq->vg->nqps--;
		/* A guest that is gone took its count with it (another
		 * incarnation of the device may stand at its address). */
		if (g && g->serial == vq->gserial)
			g->dev_qps--;
	}
	memset((char *)vq + sizeof(vq->s), 0, sizeof(*vq) - sizeof(vq->s));
	vbe_slot_free(&vq->s);
}

struct vbe_vqp *vbe_vx_qp_find(struct vbe_vx *vx, const struct vbe_guest *g,
			       const struct vbe_qp *qp)
{
	/* The hint is a handle: a freed slot's generation moved on. */
	struct vbe_vqp *vq = VBE_GET(vx->qps, VBE_VX_MAX_QPS, qp->vx_qp);

	if (vq && vq->qp == qp->handle && vq->domid == g->domid &&
	    vq->devid == g->devid && vq->vg && vq->vg->g == g)
		return vq;
	return NULL;
}

/* The guest QP behind vq, if both are still there. */
struct vbe_qp *vbe_vx_guest_qp(struct vbe_vx *vx, struct vbe_vqp *vq,
			       struct vbe_guest **pg)
{
	struct vbe_guest *g = vbe_node_guest(vx->node, vq->domid, vq->devid);

	if (!g || g->dead || !g->qps || !vq->vg || vq->vg->g != g)
		return NULL;
	*pg = g;
	return VBE_GET(g->qps, VBE_MAX_QPS, vq->qp);
}

/* ---- loop hooks ---- */

static void vbe_vx_async(struct vbe_vx *vx)
{
	struct ibv_async_event ev;
	uint32_t i;

	while (!ibv_get_async_event(vx->ctx, &ev)) {
		struct ibv_qp *q = NULL;

		if (ev.event_type == IBV_EVENT_QP_FATAL ||
		    ev.event_type == IBV_EVENT_QP_REQ_ERR ||
		    ev.event_type == IBV_EVENT_QP_ACCESS_ERR)
			q = ev.element.qp;
		vlog_dbg("rdma: async event %s", ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
		for (i = 0; q && i < VBE_VX_MAX_QPS; i++)
			if (vx->qps[i].s.used && vx->qps[i].id && vx->qps[i].id->qp == q)
				vbe_vx_qp_lost(vx, &vx->qps[i], false);
	}
}

void vbe_vx_fd_ready(struct vbe_node *n, int fd)
{
	struct vbe_vx *vx = n->vx;
	struct ibv_cq *cq;
	void *cctx;

	if (!vx)
		return;
	if (fd == vx->ech->fd) {
		vbe_rcm_events(vx);
	} else if (fd == vx->cch->fd) {
		/* Only re-arms; vbe_vx_poll reads the CQs. */
		while (!ibv_get_cq_event(vx->cch, &cq, &cctx)) {
			struct vbe_vqp *vq = VBE_GET(vx->qps, VBE_VX_MAX_QPS,
						    (uint32_t)(uintptr_t)cctx);

			if (vq && vq->cq == cq)
				vq->cq_events++;
			else if (!vbe_vud_cq_event(vx, cq) && !vbe_vcl_cq_event(vx, cq))
				ibv_ack_cq_events(cq, 1);
		}
	} else if (fd == vx->ctx->async_fd) {
		vbe_vx_async(vx);
	} else if (fd == vbe_reap_fd(vx)) {
		vbe_reap_poll(vx);	/* reads it; held answers go at the poll */
	} else if (fd == vbe_vud_fd(vx)) {
		vbe_vud_events(vx);
	}
}

int vbe_vx_poll_cq(struct vbe_vx *vx, struct vbe_vqp *vq, int budget)
{
	struct ibv_wc wc[VBE_VX_CQ_BATCH];
	int i, k, done = 0;

	while (done < budget && vq->s.used && vq->cq) {
		k = ibv_poll_cq(vq->cq, VBE_VX_CQ_BATCH, wc);
		if (k <= 0)
			break;
		/* vbe_vx_cqe may free vq (guest gone): re-check per entry. */
		for (i = 0; i < k && vq->s.used; i++)
			vbe_vx_cqe(vx, vq, &wc[i]);
		done += k;
	}
	return done;
}

int vbe_vx_poll(struct vbe_node *n)
{
	struct vbe_vx *vx = n->vx;
	int done = 0;
	uint32_t i;

	if (!vx)
		return 0;
	vbe_reap_poll(vx);
	for (i = 0; i < VBE_VX_MAX_QPS && done < VBE_VX_POLL_CQES; i++)
		if (vx->qps[i].s.used && vx->qps[i].cq)
			done += vbe_vx_poll_cq(vx, &vx->qps[i], VBE_VX_POLL_CQES - done);
	if (done < VBE_VX_POLL_CQES)
		done += vbe_vud_poll(vx, VBE_VX_POLL_CQES - done);
	if (done < VBE_VX_POLL_CQES)
		done += vbe_vcl_poll(vx, VBE_VX_POLL_CQES - done);
	vbe_vx_guests_reap(vx);
	return done;
}

int vbe_vx_arm(struct vbe_node *n)
{
	struct vbe_vx *vx = n->vx;
	int more = 0;
	uint32_t i;

	if (!vx)
		return 0;
	for (i = 0; i < VBE_VX_MAX_QPS; i++) {
		struct vbe_vqp *vq = &vx->qps[i];

		if (!vq->s.used || !vq->cq)
			continue;
		ibv_req_notify_cq(vq->cq, 0);
		/* A completion that landed before the arm raises no event. */
		if (vbe_vx_poll_cq(vx, vq, VBE_VX_POLL_CQES))
			more = 1;
	}
	if (vbe_vud_arm(vx))
		more = 1;
	if (vbe_vcl_arm(vx))
		more = 1;
	return more;
}

void vbe_vx_tick(struct vbe_node *n, int64_t now_ms)
{
	struct vbe_vx *vx = n->vx;
	uint32_t i;

	if (!vx)
		return;
	vbe_reap_poll(vx);
	vbe_rcm_tick(vx, now_ms);
	vbe_vud_tick(vx, now_ms);
	/* Device QPs whose guest QP is gone without telling us. */
	for (i = 0; i < VBE_VX_MAX_QPS; i++) {
		struct vbe_vqp *vq = &vx->qps[i];
		struct vbe_guest *g;

		if (vq->s.used && !vbe_vx_guest_qp(vx, vq, &g))
			vbe_vx_qp_free(vx, vq);
	}
	vbe_vx_guests_reap(vx);
}

/* The node's GID when it has a device: its RDMA address as RoCE v2 names
 * it (IPv4-mapped), which is also where its vrdmad listens. */
int vbe_vx_gid(const struct vbe_node *n, uint8_t gid[16])
{
	const struct vbe_vx *vx = n->vx;
	const struct sockaddr_in *sin;

	if (!vx || vx->addr.ss_family != AF_INET)
		return -ENODEV;
	sin = (const struct sockaddr_in *)&vx->addr;
	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	memcpy(gid + 12, &sin->sin_addr, 4);
	return 0;
}
