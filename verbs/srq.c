// SPDX-License-Identifier: MIT
/*
 * Shared receive queues over libvrdma's (vrdma_create_srq(3)): basic
 * SRQs only (no XRC, no tag matching).  A QP on one (ibv_create_qp with
 * init_attr->srq) takes its receives from it; their completions arrive on
 * the receiving QP's recv CQ with that QP in wc.qp_num.  No limit event:
 * vrdma raises no SRQ_LIMIT_REACHED, so arming srq_limit is EOPNOTSUPP.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vvb.h"

static void vvb_srq_free(struct vvb_srq *s)
{
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->ibsrq.mutex);
	pthread_cond_destroy(&s->ibsrq.cond);
	free(s->rwr);
	free(s->rsge);
	free(s);
}

static struct ibv_srq *vvb_srq_new(struct ibv_context *c, struct ibv_pd *pd, void *srq_context,
				   struct ibv_srq_attr *attr)
{
	struct vrdma_srq_init_attr va;
	struct vvb_context *ctx;
	struct vvb_srq *s;
	int rc;

	if (!c || !pd || !attr || pd->context != c) {
		rc = EINVAL;
		goto err;
	}
	ctx = vvb_ctx(c);
	s = calloc(1, sizeof(*s));
	if (!s) {
		rc = ENOMEM;
		goto err;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->ibsrq.mutex, NULL);
	pthread_cond_init(&s->ibsrq.cond, NULL);
	/* 0 means "the least", as for QP caps; srq_limit is ignored here */
	s->max_wr = attr->max_wr ? attr->max_wr : 1;
	s->max_sge = attr->max_sge ? attr->max_sge : 1;
	if (s->max_wr > ctx->dattr.max_qp_wr || s->max_sge > ctx->dattr.max_sge) {
		rc = EINVAL;
		goto err_free;
	}
	s->rwr = calloc(s->max_wr, sizeof(*s->rwr));
	s->rsge = calloc((size_t)s->max_wr * s->max_sge, sizeof(*s->rsge));
	if (!s->rwr || !s->rsge) {
		rc = ENOMEM;
		goto err_free;
	}
	memset(&va, 0, sizeof(va));
	va.srq_context = s;
	va.max_wr = s->max_wr;
	va.max_sge = s->max_sge;
	s->vsrq = vrdma_create_srq(vvb_pd(pd)->vpd, &va);
	if (!s->vsrq) {
		rc = errno;		/* EOPNOTSUPP: dom0 without feature-srq */
		goto err_free;
	}
	s->ibsrq.context = c;
	s->ibsrq.srq_context = srq_context;
	s->ibsrq.pd = pd;
	s->ibsrq.handle = s->vsrq->handle;
	attr->max_wr = s->max_wr;		/* verbs reports what was granted */
	attr->max_sge = s->max_sge;
	return &s->ibsrq;

err_free:
	vvb_srq_free(s);
err:
	errno = rc;
	return NULL;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	return vvb_srq_new(pd->context, pd, attr->srq_context, &attr->attr);
}

/* ibv_create_srq_ex() comes here for what the inline wrapper does not
 * hand to ibv_create_srq(): a basic SRQ with extra mask bits, or XRC/TM. */
struct ibv_srq *vvb_create_srq_ex(struct ibv_context *c, struct ibv_srq_init_attr_ex *ia)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE |
			       IBV_SRQ_INIT_ATTR_CQ;

	if (!c || !ia || !(ia->comp_mask & IBV_SRQ_INIT_ATTR_PD)) {
		errno = EINVAL;
		return NULL;
	}
	/* A CQ matters to XRC SRQs only; a basic one ignores it. */
	if ((ia->comp_mask & ~known) ||
	    ((ia->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && ia->srq_type != IBV_SRQT_BASIC)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return vvb_srq_new(c, ia->pd, ia->srq_context, &ia->attr);
}

/*
 * No resizing and no limit event: max_wr is accepted when it is the
 * current size, srq_limit when it is 0 (disarmed); anything else is
 * EOPNOTSUPP.
 */
int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct vvb_srq *s;

	if (!srq || !attr || (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)))
		return EINVAL;
	s = vvb_srq(srq);
	if ((mask & IBV_SRQ_MAX_WR) && attr->max_wr != s->max_wr)
		return EOPNOTSUPP;
	if ((mask & IBV_SRQ_LIMIT) && attr->srq_limit)
		return EOPNOTSUPP;
	return 0;
}

int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct vvb_srq *s;

	if (!srq || !attr)
		return EINVAL;
	s = vvb_srq(srq);
	attr->max_wr = s->max_wr;
	attr->max_sge = s->max_sge;
	attr->srq_limit = 0;
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	struct vvb_srq *s;
	int rc;

	if (!srq)
		return EINVAL;
	s = vvb_srq(srq);
	rc = vrdma_destroy_srq(s->vsrq);	/* EBUSY while a QP uses it */
	if (rc)
		return rc;
	vvb_srq_free(s);
	return 0;
}

static int vvb_srq_post(void *obj, struct vrdma_recv_wr *wr, struct vrdma_recv_wr **bad)
{
	return vrdma_post_srq_recv(obj, wr, bad);
}

/* As vvb_post_recv: at most max_wr at a time (more could not be
 * outstanding). */
int vvb_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct vvb_srq *s = vvb_srq(srq);
	int rc;

	pthread_mutex_lock(&s->lock);
	rc = vvb_recv_chain(wr, bad, s->rwr, s->rsge, s->max_wr, s->max_sge, vvb_srq_post,
			    s->vsrq);
	pthread_mutex_unlock(&s->lock);
	return rc;
}
