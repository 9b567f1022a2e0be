// SPDX-License-Identifier: MIT
/*
 * QPs on an id, through our libibverbs: created RC and moved to INIT at
 * once, to RTR (the peer's GID and QP number from the handshake) and RTS
 * at connect / accept, to ERR at disconnect.  A QP made on an id allows
 * remote write, read and atomics (rdma_cm grants read and atomics once
 * responder resources are asked for; vrdma has no use for the limit).
 * A UD id's QP is UD and goes to RTS at once (ud.c), as librdmacm's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vcm.h"

#define VCM_QP_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* vcm.lock held by the caller or not needed: the fields read are set
 * once the peer is known, before the program can ask. */
static int vcm_qp_attr(struct vcm_id *v, struct ibv_qp_attr *a, int *mask)
{
	enum ibv_qp_state s = a->qp_state;

	memset(a, 0, sizeof(*a));
	a->qp_state = s;
	if (vcm_is_ud(v))
		return vcm_ud_qp_attr(a, mask);
	switch (s) {
	case IBV_QPS_INIT:
		a->pkey_index = 0;
		a->port_num = VCM_PORT;
		a->qp_access_flags = VCM_QP_ACCESS;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		return 0;
	case IBV_QPS_RTR:
		if (!v->peer_known)
			return EINVAL;
		a->path_mtu = IBV_MTU_4096;
		a->dest_qp_num = v->peer.qpn;
		a->rq_psn = v->peer.psn;
		a->max_dest_rd_atomic = v->responder_resources;
		a->min_rnr_timer = VCM_MIN_RNR_TIMER;
		a->ah_attr.is_global = 1;
		memcpy(a->ah_attr.grh.dgid.raw, v->peer.gid, 16);
		a->ah_attr.grh.sgid_index = 0;
		a->ah_attr.grh.hop_limit = VCM_HOP_LIMIT;
		a->ah_attr.port_num = VCM_PORT;
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		return 0;
	case IBV_QPS_RTS:
		if (!v->peer_known)
			return EINVAL;
		a->timeout = VCM_ACK_TIMEOUT;
		a->retry_cnt = v->retry_count > 7 ? 7 : v->retry_count;
		a->rnr_retry = v->rnr_retry_count > 7 ? 7 : v->rnr_retry_count;
		a->sq_psn = v->psn;
		a->max_rd_atomic = v->initiator_depth;
		*mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
		return 0;
	case IBV_QPS_ERR:
	case IBV_QPS_RESET:
		*mask = IBV_QP_STATE;
		return 0;
	default:
		return EINVAL;
	}
}

int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
		      int *qp_attr_mask)
{
	int rc;

	if (!id || !qp_attr || !qp_attr_mask || !id->verbs)
		return vcm_fail(EINVAL);
	pthread_mutex_lock(&vcm.lock);
	rc = vcm_qp_attr(vcm_id_of(id), qp_attr, qp_attr_mask);
	pthread_mutex_unlock(&vcm.lock);
	return rc ? vcm_fail(rc) : 0;
}

static int vcm_qp_to(struct vcm_id *v, enum ibv_qp_state s)
{
	struct ibv_qp_attr a;
	int mask, rc;

	a.qp_state = s;
	pthread_mutex_lock(&vcm.lock);
	rc = vcm_qp_attr(v, &a, &mask);
	pthread_mutex_unlock(&vcm.lock);
	if (rc)
		return rc;
	return ibv_modify_qp(v->id.qp, &a, mask);
}

/* INIT -> RTR -> RTS with the peer from the handshake (UD: no peer). */
int vcm_qp_connect(struct vcm_id *v)
{
	int rc;

	rc = vcm_qp_to(v, IBV_QPS_RTR);
	if (!rc)
		rc = vcm_qp_to(v, IBV_QPS_RTS);
	return rc;
}

int vcm_qp_error(struct vcm_id *v)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	return v->id.qp ? ibv_modify_qp(v->id.qp, &a, IBV_QP_STATE) : 0;
}

static void vcm_destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		if (id->send_cq == id->recv_cq)
			id->send_cq = NULL;
		id->recv_cq = NULL;
	}
	if (id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		id->recv_cq_channel = NULL;
	}
	if (id->send_cq) {
		ibv_destroy_cq(id->send_cq);
		id->send_cq = NULL;
	}
	if (id->send_cq_channel) {
		ibv_destroy_comp_channel(id->send_cq_channel);
		id->send_cq_channel = NULL;
	}
}

/* CQs the program left to us, each with its channel, as librdmacm. */
static int vcm_create_cq(struct rdma_cm_id *id, struct ibv_comp_channel **ch,
			 struct ibv_cq **cq, uint32_t depth)
{
	*ch = ibv_create_comp_channel(id->verbs);
	if (!*ch)
		return errno ? errno : ENOMEM;
	*cq = ibv_create_cq(id->verbs, (int)(depth ? depth : 1), id, *ch, 0);
	if (!*cq)
		return errno ? errno : ENOMEM;
	return 0;
}

int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_init_attr_ex a;
	struct vcm_id *v;
	struct ibv_qp *qp;
	int rc;

	if (!id || !attr)
		return vcm_fail(EINVAL);
	v = vcm_id_of(id);
	if (!id->verbs)
		return vcm_fail(EINVAL);	/* not bound to the device yet */
	if (id->qp)
		return vcm_fail(EINVAL);
	a = *attr;
	if (!(a.comp_mask & IBV_QP_INIT_ATTR_PD) || !a.pd) {
		a.pd = id->pd;
		a.comp_mask |= IBV_QP_INIT_ATTR_PD;
	}
	if (!a.pd || a.pd->context != id->verbs)
		return vcm_fail(EINVAL);
	if (a.qp_type != IBV_QPT_RC && a.qp_type != IBV_QPT_UD)
		return vcm_fail(EOPNOTSUPP);	/* vrdma has RC and UD QPs */
	if (a.qp_type != id->qp_type)
		return vcm_fail(EINVAL);	/* the port space's type */
	if (!a.send_cq || !a.recv_cq) {
		if (!a.recv_cq) {
			rc = vcm_create_cq(id, &id->recv_cq_channel, &id->recv_cq,
					   a.cap.max_recv_wr);
			if (rc)
				goto err_cqs;
			a.recv_cq = id->recv_cq;
		}
		if (!a.send_cq) {
			rc = vcm_create_cq(id, &id->send_cq_channel, &id->send_cq,
					   a.cap.max_send_wr);
			if (rc)
				goto err_cqs;
			a.send_cq = id->send_cq;
		}
		v->own_cqs = 1;
	}
	qp = ibv_create_qp_ex(id->verbs, &a);
	if (!qp) {
		rc = errno ? errno : ENOMEM;
		goto err_cqs;
	}
	id->qp = qp;
	rc = vcm_qp_to(v, IBV_QPS_INIT);
	if (!rc && vcm_is_ud(v))
		rc = vcm_qp_connect(v);
	if (rc)
		goto err_qp;
	attr->cap = a.cap;
	attr->send_cq = a.send_cq;
	attr->recv_cq = a.recv_cq;
	return 0;

err_qp:
	ibv_destroy_qp(qp);
	id->qp = NULL;
err_cqs:
	if (v->own_cqs || id->send_cq || id->recv_cq)
		vcm_destroy_cqs(id);
	v->own_cqs = 0;
	return vcm_fail(rc);
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex a;
	int rc;

	if (!id || !qp_init_attr)
		return vcm_fail(EINVAL);
	memset(&a, 0, sizeof(a));
	a.qp_context = qp_init_attr->qp_context;
	a.send_cq = qp_init_attr->send_cq;
	a.recv_cq = qp_init_attr->recv_cq;
	a.srq = qp_init_attr->srq;
	a.cap = qp_init_attr->cap;
	a.qp_type = qp_init_attr->qp_type;
	a.sq_sig_all = qp_init_attr->sq_sig_all;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd ? pd : id->pd;
	rc = rdma_create_qp_ex(id, &a);
	if (rc)
		return rc;
	qp_init_attr->cap = a.cap;
	qp_init_attr->send_cq = a.send_cq;
	qp_init_attr->recv_cq = a.recv_cq;
	return 0;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct vcm_id *v;

	if (!id)
		return;
	v = vcm_id_of(id);
	if (id->qp) {
		ibv_destroy_qp(id->qp);
		id->qp = NULL;
	}
	if (v->own_cqs)
		vcm_destroy_cqs(id);
	v->own_cqs = 0;
}
