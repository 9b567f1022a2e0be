// SPDX-License-Identifier: MIT
/*
 * UD ids (RDMA_PS_UDP, or RDMA_PS_IB with a UD QP from rdma_create_ep):
 * no connection, only what the IB CM's service ID resolution (SIDR)
 * gives.  rdma_connect sends a SIDR_REQ over the same TCP handshake as RC
 * ids (vcm_msg.h); a UD listener's CONNECT_REQUEST carries its private
 * data (param.ud); rdma_accept answers SIDR_REP with the QP's number and
 * Q_Key, rdma_reject with status IB_SIDR_REJECT, and both sides close.
 * The connector's ESTABLISHED carries param.ud: the acceptor's QP number,
 * its Q_Key and an address (GRH, the acceptor's GID) for ibv_create_ah.
 *
 * Nothing here grants anything: dom0 applies its rules where the
 * datagrams flow (a UD QP in RTS by that number, the Q_Key, the tenant
 * connect policy), as for RC QPs where they are bound.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "vcm.h"

/*
 * As librdmacm brings a UD QP up at rdma_create_qp: INIT with the port
 * space's Q_Key (RDMA_UDP_QKEY, what the kernel's rdma_cm gives UDP and
 * IB ids), then RTR, then RTS with PSN 0.
 */
int vcm_ud_qp_attr(struct ibv_qp_attr *a, int *mask)
{
	switch (a->qp_state) {
	case IBV_QPS_INIT:
		a->pkey_index = 0;
		a->port_num = VCM_PORT;
		a->qkey = RDMA_UDP_QKEY;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
		return 0;
	case IBV_QPS_RTS:
		a->sq_psn = 0;
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		return 0;
	case IBV_QPS_RTR:
	case IBV_QPS_ERR:
	case IBV_QPS_RESET:
		*mask = IBV_QP_STATE;
		return 0;
	default:
		return EINVAL;
	}
}

/*
 * Receives the program posted before rdma_connect / rdma_accept must be
 * in dom0's hands before the peer can send: dom0 drops a datagram that
 * finds no receive, and it reads each guest's ring in its own time.  A
 * PD's allocation is a command on that same ring (every context of the
 * process shares the one device), answered once every entry before it
 * is read; as on a NIC, a receive posted before the message left is
 * there for the first datagram.
 */
int vcm_ud_fence(struct vcm_id *v)
{
	struct ibv_pd *pd;

	if (!v->id.qp)
		return 0;			/* the program's own QP: its business */
	pd = ibv_alloc_pd(v->id.qp->context);
	if (!pd)
		return errno ? errno : ENOMEM;
	return ibv_dealloc_pd(pd);
}

static int vcm_ud_pdata_ok(const struct rdma_conn_param *p, size_t max)
{
	return !p || (p->private_data_len <= max &&
		      (!p->private_data_len || p->private_data));
}

/* The SIDR_REQ rdma_connect sends once TCP is up: no QP (SIDR names
 * none), private data up to 180 bytes. */
int vcm_ud_connect_locked(struct vcm_id *v, const struct rdma_conn_param *p)
{
	if (!vcm_ud_pdata_ok(p, VCM_SIDR_REQ_PDATA))
		return EINVAL;
	vcm_msg_init(&v->out, VCM_MSG_SIDR_REQ);
	memcpy(v->out.gid, vcm.gid.raw, sizeof(v->out.gid));
	if (p && p->private_data_len) {
		v->out.pdata_len = p->private_data_len;
		memcpy(v->out.pdata, p->private_data, p->private_data_len);
	}
	return 0;
}

static void vcm_sidr_rep(struct vcm_msg *m, int32_t status, uint32_t qpn,
			 const void *pdata, uint8_t len)
{
	vcm_msg_init(m, VCM_MSG_SIDR_REP);
	m->status = (int32_t)htobe32((uint32_t)status);
	memcpy(m->gid, vcm.gid.raw, sizeof(m->gid));
	m->qpn = htobe32(qpn & 0xffffff);
	m->qkey = htobe32(status ? 0 : RDMA_UDP_QKEY);
	m->pdata_len = len;
	if (len)
		memcpy(m->pdata, pdata, len);
}

/*
 * SIDR_REP naming the id's QP (or conn_param's qp_num), then the id has
 * nothing more to do: no ESTABLISHED on this side, as the kernel's.
 */
int vcm_ud_accept(struct vcm_id *v, const struct rdma_conn_param *p)
{
	struct vcm_msg m;
	uint32_t qpn;
	int rc;

	if (!vcm_ud_pdata_ok(p, VCM_SIDR_REP_PDATA))
		return EINVAL;
	if (!v->id.qp && (!p || !p->qp_num))
		return EINVAL;			/* nothing to name */
	qpn = v->id.qp ? v->id.qp->qp_num : p->qp_num;
	rc = vcm_ud_fence(v);
	if (rc)
		return rc;
	pthread_mutex_lock(&vcm.lock);
	if (v->state != VCM_REQ_RCVD) {
		rc = v->state == VCM_CLOSED ? ECONNRESET : EINVAL;
	} else {
		vcm_sidr_rep(&m, VCM_SIDR_SUCCESS, qpn, p ? p->private_data : NULL,
			     p ? p->private_data_len : 0);
		rc = vcm_msg_send(v->fd, &m);
		/* the SIDR_REQ was read whole: closing loses nothing in flight */
		vcm_close_locked(v, rc ? VCM_CLOSED : VCM_CONNECTED);
	}
	pthread_mutex_unlock(&vcm.lock);
	if (!rc)
		vcm_sync_ack(v);		/* nothing to wait for */
	return rc;
}

/* rdma_reject, or a request destroyed unanswered: status IB_SIDR_REJECT. */
void vcm_ud_refuse_locked(struct vcm_id *v, const void *pdata, uint8_t len)
{
	struct vcm_msg m;

	vcm_sidr_rep(&m, VCM_SIDR_REJECT, 0, pdata, len);
	vcm_msg_send(v->fd, &m);
	vcm_close_locked(v, VCM_CLOSED);
}

/* A UD listener's CONNECT_REQUEST: the SIDR_REQ's private data only. */
void vcm_ud_request(struct vcm_id *c, struct vcm_event *e)
{
	struct rdma_ud_param *u = &e->ev.param.ud;

	memcpy(e->pdata, c->peer.pdata, c->peer.pdata_len);
	u->private_data = c->peer.pdata_len ? e->pdata : NULL;
	u->private_data_len = c->peer.pdata_len;
}

/* ESTABLISHED's param.ud from a successful SIDR_REP (in v->peer). */
static void vcm_ud_established(struct vcm_id *v, struct vcm_event *e)
{
	struct rdma_ud_param *u = &e->ev.param.ud;

	u->ah_attr.is_global = 1;
	memcpy(u->ah_attr.grh.dgid.raw, v->peer.gid, 16);
	u->ah_attr.grh.sgid_index = 0;
	u->ah_attr.grh.hop_limit = VCM_HOP_LIMIT;
	u->ah_attr.port_num = VCM_PORT;
	u->qp_num = v->peer.qpn;
	u->qkey = v->peer.qkey;
}

/*
 * The connector's answer (vcm.lock held, state REQ_SENT): SIDR_REP is
 * ESTABLISHED or, with a status, UNREACHABLE with that status and the
 * private data, as the kernel's rdma_cm reports them; a REJ (no UD
 * listener there) or a close without an answer is UNREACHABLE too.
 */
void vcm_ud_on_reply(struct vcm_id *v, const struct vcm_msg *m, int rc)
{
	struct vcm_event *e;
	int32_t status;

	if (rc == EPROTO || (!rc && ((m->type != VCM_MSG_SIDR_REP && m->type != VCM_MSG_REJ) ||
				     m->pdata_len > VCM_SIDR_REP_PDATA))) {
		vcm_fail_connect_locked(v, RDMA_CM_EVENT_CONNECT_ERROR, -EPROTO);
		return;
	}
	if (rc) {
		vcm_fail_connect_locked(v, RDMA_CM_EVENT_UNREACHABLE, -ECONNREFUSED);
		return;
	}
	status = (int32_t)be32toh((uint32_t)m->status);
	if (m->type == VCM_MSG_REJ) {
		vcm_fail_connect_locked(v, RDMA_CM_EVENT_UNREACHABLE, status ? status : -ECONNREFUSED);
		return;
	}
	if (!status) {
		vcm_peer_from_msg(&v->peer, m);
		v->peer_known = 1;
	}
	e = vcm_event_new(v, status ? RDMA_CM_EVENT_UNREACHABLE : RDMA_CM_EVENT_ESTABLISHED,
			  status);
	vcm_close_locked(v, status ? VCM_CLOSED : VCM_CONNECTED);
	if (!e)
		return;				/* the program's wait ends by its limits */
	if (m->pdata_len) {
		memcpy(e->pdata, m->pdata, m->pdata_len);
		e->ev.param.ud.private_data = e->pdata;
		e->ev.param.ud.private_data_len = m->pdata_len;
	}
	if (!status) {
		memcpy(v->id.route.addr.addr.ibaddr.dgid.raw, v->peer.gid, 16);
		vcm_ud_established(v, e);
	}
	vcm_event_queue_locked(e);
}
