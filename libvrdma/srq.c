// SPDX-License-Identifier: MIT
/*
 * Shared receive queues.  dom0 hands an SRQ's receives to its QPs in
 * posting order, but their completions reach the CQs of several QPs,
 * which the app polls in any order: each receive CQE names its slot
 * (srq_idx), checked against what is outstanding.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vlib.h"

static uint32_t vlib_srq_pow2(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

void vlib_srq_free(struct vlib_srq *s)
{
	pthread_mutex_destroy(&s->lock);
	free(s->slot);
	free(s->done);
	free(s);
}

struct vrdma_srq *vrdma_create_srq(struct vrdma_pd *pd, struct vrdma_srq_init_attr *attr)
{
	struct vrdma_req req = { .opcode = VRDMA_CMD_CREATE_SRQ };
	struct vrdma_device *dev;
	struct vlib_srq *s;
	uint32_t out[4], n;
	int rc;

	if (!pd || !pd->device || !attr || !attr->max_wr || attr->max_wr > VRDMA_MAX_WR ||
	    !attr->max_sge || attr->max_sge > pd->device->fe.max_sge) {
		errno = EINVAL;
		return NULL;
	}
	dev = pd->device;
	if (vlib_broken(dev))
		return NULL;
	if (!dev->fe.feat_srq) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	n = vlib_srq_pow2(attr->max_wr);
	s = calloc(1, sizeof(*s));
	if (s) {
		s->slot = calloc(n, sizeof(*s->slot));
		s->done = calloc(n, 1);
	}
	if (!s || !s->slot || !s->done) {
		rc = -ENOMEM;
		goto err_free;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->mask = n - 1;
	req.u.create_srq.pd = pd->handle;
	req.u.create_srq.max_wr = attr->max_wr;
	req.u.create_srq.max_sge = attr->max_sge;
	rc = vfe_cmd(&dev->fe, &req, out);
	if (rc)
		goto err_free;
	s->pub.device = dev;
	s->pub.pd = pd;
	s->pub.srq_context = attr->srq_context;
	s->pub.handle = out[0];
	s->pub.max_wr = attr->max_wr;
	s->pub.max_sge = attr->max_sge;
	pthread_mutex_lock(&dev->obj_lock);
	vlib_pd(pd)->users++;
	s->next = dev->srqs;
	dev->srqs = s;
	pthread_mutex_unlock(&dev->obj_lock);
	return &s->pub;

err_free:
	if (s && s->slot)
		pthread_mutex_destroy(&s->lock);
	if (s) {
		free(s->slot);
		free(s->done);
	}
	free(s);
	errno = -rc;
	return NULL;
}

int vrdma_destroy_srq(struct vrdma_srq *srq)
{
	struct vrdma_device *dev;
	struct vlib_srq *s;
	int rc;

	if (!srq || !srq->device)
		return EINVAL;
	dev = srq->device;
	s = vlib_srq(srq);
	pthread_mutex_lock(&dev->obj_lock);
	if (s->users) {
		pthread_mutex_unlock(&dev->obj_lock);
		return EBUSY;
	}
	VLIB_UNLINK(&dev->srqs, s);
	pthread_mutex_unlock(&dev->obj_lock);
	rc = vlib_destroy_cmd(dev, VRDMA_CMD_DESTROY_SRQ, srq->handle, false);
	if (rc) {
		VLIB_LINK(dev, &dev->srqs, s);
		return vlib_ret(rc);
	}
	pthread_mutex_lock(&dev->obj_lock);
	vlib_pd(srq->pd)->users--;
	pthread_mutex_unlock(&dev->obj_lock);
	vlib_srq_free(s);
	return 0;
}

int vrdma_post_srq_recv(struct vrdma_srq *srq, struct vrdma_recv_wr *wr,
			struct vrdma_recv_wr **bad_wr)
{
	struct vrdma_device *dev;
	struct vlib_srq *s;
	struct vrdma_req r;
	int rc = 0;

	if (bad_wr)
		*bad_wr = wr;
	if (!srq || !srq->device || !wr || !bad_wr)
		return EINVAL;
	s = vlib_srq(srq);
	dev = srq->device;
	pthread_mutex_lock(&s->lock);
	vfe_ring_lock(&dev->fe);
	for (; wr; wr = wr->next) {
		struct vrdma_sge_ext ext[VRDMA_SGE_EXT_ENTRIES(VRDMA_MAX_SGE)];
		uint32_t total, nx;

		memset(&r, 0, sizeof(r));
		r.opcode = VRDMA_OP_SRQ_RECV;
		r.handle = srq->handle;
		r.id = VLIB_ONCE(wr->wr_id);
		rc = vlib_sges(&r, ext, &nx, VLIB_ONCE(wr->sg_list), VLIB_ONCE(wr->num_sge),
			       srq->max_sge, &total);
		if (rc)
			break;
		if (s->posted - s->retired >= srq->max_wr) {
			rc = -ENOMEM;
			break;
		}
		rc = nx ? vfe_ring_put_ext(&dev->fe, &r, ext, nx) : vfe_ring_put(&dev->fe, &r);
		if (rc)
			break;
		s->slot[s->posted & s->mask].wr_id = r.id;
		s->slot[s->posted & s->mask].len = total;
		s->slot[s->posted & s->mask].wc = VRDMA_WC_RECV;
		s->posted++;
	}
	if (vfe_ring_unlock(&dev->fe) && !rc)
		rc = -EIO;
	pthread_mutex_unlock(&s->lock);
	*bad_wr = wr;
	return vlib_ret(rc);
}

/* A receive CQE from the SRQ: the slot it names is outstanding, not done
 * yet, and says the same wr_id; then it is done, and the oldest done
 * slots are free again. */
int vlib_srq_retire(struct vlib_srq *s, const struct vrdma_cqe *e)
{
	const struct vlib_slot *sl;
	uint32_t i = e->srq_idx & s->mask;
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	sl = &s->slot[i];
	if ((uint32_t)(e->srq_idx - s->retired) >= (uint32_t)(s->posted - s->retired) ||
	    s->done[i] || e->wr_id != sl->wr_id ||
	    (e->opcode == VRDMA_WC_RECV && e->byte_len > sl->len)) {
		rc = -EPROTO;
		goto out;
	}
	s->done[i] = 1;
	while (s->retired != s->posted && s->done[s->retired & s->mask]) {
		s->done[s->retired & s->mask] = 0;
		s->retired++;
	}
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* obj_lock held. */
struct vlib_srq *vlib_srq_find(struct vrdma_device *dev, uint32_t handle)
{
	struct vlib_srq *s;

	for (s = dev->srqs; s; s = s->next)
		if (s->pub.handle == handle)
			return s;
	return NULL;
}
