// SPDX-License-Identifier: MIT
/* Connection management by (node, service) names, as rdma_cm. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vlib.h"
#include "log.h"

static void vlib_listener_replay(struct vrdma_device *dev, uint32_t h);

struct vrdma_listener *vrdma_listen(struct vrdma_device *dev, const char *service)
{
	struct vrdma_req req = { .opcode = VRDMA_CMD_LISTEN };
	struct vrdma_listener *l;
	uint32_t out[4];
	int rc;

	if (!dev || !service || !*service) {
		errno = EINVAL;
		return NULL;
	}
	if (vlib_broken(dev))
		return NULL;
	rc = vlib_name(req.u.listen.service, service);
	if (rc)
		goto err;
	l = calloc(1, sizeof(*l));
	if (!l) {
		rc = -ENOMEM;
		goto err;
	}
	pthread_mutex_init(&l->lock, NULL);
	l->dev = dev;
	rc = vfe_cmd(&dev->fe, &req, out);
	if (rc) {
		pthread_mutex_destroy(&l->lock);
		free(l);
		goto err;
	}
	l->handle = out[0];
	/* Linked under evt_lock, then what came for it before, in order. */
	pthread_mutex_lock(&dev->fe.evt_lock);
	VLIB_LINK(dev, &dev->listeners, l);
	vlib_listener_replay(dev, l->handle);
	pthread_mutex_unlock(&dev->fe.evt_lock);
	return l;

err:
	errno = -rc;
	return NULL;
}

int vlib_close_listener(struct vrdma_listener *l, bool force)
{
	struct vrdma_device *dev = l->dev;
	int rc;

	rc = vlib_destroy_cmd(dev, VRDMA_CMD_UNLISTEN, l->handle, force);
	if (rc)
		return rc;
	pthread_mutex_lock(&dev->obj_lock);
	VLIB_UNLINK(&dev->listeners, l);
	pthread_mutex_unlock(&dev->obj_lock);
	/* The event consumer may hold it (found under obj_lock). */
	pthread_mutex_lock(&dev->fe.evt_lock);
	pthread_mutex_unlock(&dev->fe.evt_lock);
	pthread_mutex_destroy(&l->lock);
	free(l);
	return 0;
}

int vrdma_close_listener(struct vrdma_listener *l)
{
	if (!l || !l->dev)
		return EINVAL;
	return vlib_ret(vlib_close_listener(l, false));
}

static struct vrdma_listener *vlib_listener_find(struct vrdma_device *dev, uint32_t h)
{
	struct vrdma_listener *l;

	pthread_mutex_lock(&dev->obj_lock);
	for (l = dev->listeners; l; l = l->next)
		if (l->handle == h)
			break;
	pthread_mutex_unlock(&dev->obj_lock);
	return l;
}

/* evt_lock held: keep an event for a listener not linked yet; the oldest
 * kept gives way (its requester times out, as for a full queue). */
static void vlib_listener_stash(struct vrdma_device *dev, const struct vrdma_evt *e)
{
	struct vlib_lis_early *x = &dev->lis_early[0];

	for (unsigned i = 1; i < VLIB_LIS_EARLY && x->seq; i++)
		if (!dev->lis_early[i].seq || dev->lis_early[i].seq < x->seq)
			x = &dev->lis_early[i];
	x->e = *e;
	x->seq = ++dev->lis_early_seq;
	vlog_dbg("vrdma: event %u for listener %u kept until it is linked", e->type, e->handle);
}

/* evt_lock held, the listener of @h just linked: its early events, in
 * the order they came. */
static void vlib_listener_replay(struct vrdma_device *dev, uint32_t h)
{
	for (;;) {
		struct vlib_lis_early *x = NULL;

		for (unsigned i = 0; i < VLIB_LIS_EARLY; i++) {
			struct vlib_lis_early *y = &dev->lis_early[i];

			if (y->seq && y->e.handle == h && (!x || y->seq < x->seq))
				x = y;
		}
		if (!x)
			return;
		x->seq = 0;
		if (x->e.type == VRDMA_EVT_CONN_FROM)
			vlib_listener_from(dev, &x->e);
		else
			vlib_listener_event(dev, &x->e);
	}
}

/* CONN_FROM (evt_lock held; frontend checked the name's NUL): keep who
 * asks until the program wants to know. */
int vlib_listener_from(struct vrdma_device *dev, const struct vrdma_evt *e)
{
	struct vrdma_listener *l = vlib_listener_find(dev, e->handle);
	struct vlib_from *f;

	if (!l && e->id) {
		vlib_listener_stash(dev, e);
		return 0;
	}
	if (!l || !e->id)
		return 0;
	pthread_mutex_lock(&l->lock);
	f = &l->from[l->from_next++ % (2 * VLIB_LISTEN_QUEUE)];
	f->id = e->id;
	memcpy(f->peer.node, e->u.from.node, sizeof(f->peer.node));
	f->peer.domid = e->u.from.domid;
	f->peer.devid = e->u.from.devid;
	pthread_mutex_unlock(&l->lock);
	return 0;
}

int vrdma_get_request_peer(struct vrdma_listener *l, const struct vrdma_conn_req *req,
			   struct vrdma_conn_peer *peer)
{
	unsigned i;
	int rc = ENOENT;

	if (!l || !l->dev || !req || !peer || !req->id)
		return EINVAL;
	pthread_mutex_lock(&l->lock);
	for (i = 0; i < 2 * VLIB_LISTEN_QUEUE; i++)
		if (l->from[i].id == req->id) {
			*peer = l->from[i].peer;
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&l->lock);
	return rc;
}

/* CONN_REQUEST (evt_lock held): queue it; a full queue drops it and dom0
 * times the request out (the connecting side sees ETIMEDOUT). */
int vlib_listener_event(struct vrdma_device *dev, const struct vrdma_evt *e)
{
	struct vrdma_listener *l = vlib_listener_find(dev, e->handle);
	struct vrdma_conn_req *r;

	if (!l) {
		vlib_listener_stash(dev, e);
		return 0;
	}
	pthread_mutex_lock(&l->lock);
	if (l->count == VLIB_LISTEN_QUEUE) {
		pthread_mutex_unlock(&l->lock);
		vlog_warn("vrdma: listener queue full, connection request dropped");
		return 0;
	}
	r = &l->q[(l->head + l->count) % VLIB_LISTEN_QUEUE];
	memset(r, 0, sizeof(*r));
	r->id = e->id;
	r->peer_qp_num = e->u.conn.peer_qpn;
	r->private_data_len = e->u.conn.pdata_len;	/* checked <= max */
	memcpy(r->private_data, e->u.conn.pdata, r->private_data_len);
	l->count++;
	pthread_mutex_unlock(&l->lock);
	return 0;
}

static bool vlib_listener_ready(void *arg)
{
	struct vrdma_listener *l = arg;
	bool ready;

	pthread_mutex_lock(&l->lock);
	ready = l->count != 0;
	pthread_mutex_unlock(&l->lock);
	return ready;
}

int vrdma_get_request(struct vrdma_listener *l, struct vrdma_conn_req *req,
		      int timeout_ms)
{
	int rc;

	if (!l || !l->dev || !req || timeout_ms < 0)
		return EINVAL;
	rc = vfe_wait(&l->dev->fe, vlib_listener_ready, NULL, l, timeout_ms);
	if (rc)
		return vlib_ret(rc);
	pthread_mutex_lock(&l->lock);
	if (!l->count) {	/* another thread took it */
		pthread_mutex_unlock(&l->lock);
		return EAGAIN;
	}
	*req = l->q[l->head];
	l->head = (l->head + 1) % VLIB_LISTEN_QUEUE;
	l->count--;
	pthread_mutex_unlock(&l->lock);
	return 0;
}

static int vlib_pdata(uint8_t dst[VRDMA_PDATA_MAX], uint32_t *dst_len,
		      const void *src, size_t len)
{
	if (len > VRDMA_MAX_PRIVATE_DATA || (len && !src))
		return -EINVAL;
	if (len)
		memcpy(dst, src, len);
	*dst_len = (uint32_t)len;
	return 0;
}

int vrdma_accept(struct vrdma_listener *l, struct vrdma_qp *qp,
		 const struct vrdma_conn_req *creq,
		 const void *private_data, size_t private_data_len)
{
	struct vrdma_req req = { .opcode = VRDMA_CMD_ACCEPT };
	enum vrdma_qp_state st = VRDMA_QPS_RESET;
	int rc;

	if (!l || !l->dev || !qp || qp->device != l->dev || !creq)
		return EINVAL;
	rc = vlib_pdata(req.u.accept.pdata, &req.u.accept.pdata_len,
			private_data, private_data_len);
	if (rc)
		return vlib_ret(rc);
	/* RESET -> CONNECTING claims the QP against a concurrent connect. */
	if (!__atomic_compare_exchange_n(&qp->state, &st, VRDMA_QPS_CONNECTING, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return EINVAL;
	req.handle = qp->handle;
	req.u.accept.conn_id = creq->id;
	rc = vfe_cmd(&l->dev->fe, &req, NULL);
	st = VRDMA_QPS_CONNECTING;
	__atomic_compare_exchange_n(&qp->state, &st, rc ? VRDMA_QPS_RESET : VRDMA_QPS_RTS,
				    false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	if (rc == -ENOENT)	/* the connecting side gave up meanwhile */
		rc = -ECONNABORTED;
	return vlib_ret(rc);
}

int vrdma_reject(struct vrdma_listener *l, const struct vrdma_conn_req *creq)
{
	struct vrdma_req req = { .opcode = VRDMA_CMD_REJECT };

	if (!l || !l->dev || !creq)
		return EINVAL;
	req.handle = l->handle;
	req.u.accept.conn_id = creq->id;
	return vlib_ret(vfe_cmd(&l->dev->fe, &req, NULL));
}
