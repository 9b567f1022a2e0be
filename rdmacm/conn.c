// SPDX-License-Identifier: MIT
/*
 * Connections: rdma_connect sends a REQ over TCP, rdma_accept moves the
 * QP to RTS and answers REP, rdma_reject answers REJ, rdma_disconnect
 * moves the QP to ERR (posted WRs flush) and sends DREQ.  The engine
 * (engine.c) takes it from there and queues the events.  UD ids send
 * SIDR_REQ and answer SIDR_REP instead (ud.c).  On a synchronous id each
 * call returns once its event is in (sync.c).
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vcm.h"

/* Our side of a REQ or REP: the QP's number, or conn_param's. */
static int vcm_local_param(struct vcm_id *v, const struct rdma_conn_param *p,
			   size_t max_pdata)
{
	uint8_t max = vcm.max_rd_atom;

	if (p && p->private_data_len > max_pdata)
		return EINVAL;
	if (p && p->private_data_len && !p->private_data)
		return EINVAL;
	if (p && ((p->responder_resources != RDMA_MAX_RESP_RES &&
		   p->responder_resources > max) ||
		  (p->initiator_depth != RDMA_MAX_INIT_DEPTH &&
		   p->initiator_depth > max)))
		return EINVAL;
	if (!v->id.qp && (!p || !p->qp_num))
		return EINVAL;			/* nothing to connect */
	v->qpn = v->id.qp ? v->id.qp->qp_num : (p->qp_num & 0xffffff);
	if (p) {
		v->responder_resources = p->responder_resources == RDMA_MAX_RESP_RES ?
					 max : p->responder_resources;
		v->initiator_depth = p->initiator_depth == RDMA_MAX_INIT_DEPTH ?
				     max : p->initiator_depth;
		v->retry_count = p->retry_count;
		v->rnr_retry_count = p->rnr_retry_count;
	}
	return 0;
}

static void vcm_msg_fill(struct vcm_msg *m, const struct vcm_id *v,
			 const struct rdma_conn_param *p)
{
	memcpy(m->gid, vcm.gid.raw, sizeof(m->gid));
	m->qpn = htobe32(v->qpn);
	m->psn = htobe32(v->psn);
	m->responder_resources = v->responder_resources;
	m->initiator_depth = v->initiator_depth;
	m->retry_count = v->retry_count;
	m->rnr_retry_count = v->rnr_retry_count;
	m->srq = v->id.qp ? v->id.qp->srq != NULL : (p && p->srq);
	if (p) {
		m->flow_control = p->flow_control;
		m->pdata_len = p->private_data_len;
		if (p->private_data_len)
			memcpy(m->pdata, p->private_data, p->private_data_len);
	}
}

/*
 * (Re)starts the TCP connect: a fresh socket after a refusal, bound again
 * where the program bound the id.  0, or why it failed at once.
 */
int vcm_connect_start_locked(struct vcm_id *v)
{
	struct sockaddr *dst = &v->id.route.addr.dst_addr;
	int fd = v->fd;

	if (fd < 0) {
		fd = vcm_socket(dst->sa_family, v->afonly);
		if (fd < 0)
			return errno;
		v->fd = fd;
		if (v->bound && bind(fd, &v->id.route.addr.src_addr,
				     vcm_addr_len(&v->id.route.addr.src_addr)) < 0)
			return errno;
	}
	v->state = VCM_CONNECTING;
	v->deadline = v->connect_until;
	if (connect(fd, dst, vcm_addr_len(dst)) < 0 && errno != EINPROGRESS)
		return errno;
	return 0;
}

/*
 * A refused connect is tried again for VCM_REFUSED_MS: a listener may be
 * a moment from listening (perftest -R listens again on its port right
 * after the first exchange, and its connector gives up on REJECTED).
 */
void vcm_connect_failed_locked(struct vcm_id *v, int err)
{
	uint64_t now = vcm_now();

	if (err == ECONNREFUSED && now + VCM_RETRY_MS < v->refused_until) {
		vcm_close_locked(v, VCM_CONNECT_WAIT);
		v->deadline = now + VCM_RETRY_MS;
		return;
	}
	/* nobody answers a SIDR_REQ either: the kernel's is UNREACHABLE */
	vcm_fail_connect_locked(v, err == ECONNREFUSED && !vcm_is_ud(v) ?
				RDMA_CM_EVENT_REJECTED : RDMA_CM_EVENT_UNREACHABLE, -err);
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct vcm_id *v;
	int rc;

	if (!id)
		return vcm_fail(EINVAL);
	v = vcm_id_of(id);
	rc = vcm_is_ud(v) ? vcm_ud_fence(v) : 0;
	if (rc)
		return vcm_fail(rc);
	pthread_mutex_lock(&vcm.lock);
	if (v->state != VCM_ROUTE_RESOLVED) {
		rc = EINVAL;
		goto out;
	}
	if (vcm_is_ud(v)) {
		rc = vcm_ud_connect_locked(v, conn_param);
		if (rc)
			goto out;
	} else {
		rc = vcm_local_param(v, conn_param, VCM_REQ_PDATA);
		if (rc)
			goto out;
		if (!conn_param)
			v->responder_resources = v->initiator_depth = vcm.max_rd_atom;
		vcm_msg_init(&v->out, VCM_MSG_REQ);
		vcm_msg_fill(&v->out, v, conn_param);
	}

	v->connect_until = vcm_now() + VCM_CONNECT_MS;
	v->refused_until = vcm_now() + VCM_REFUSED_MS;
	rc = vcm_connect_start_locked(v);
	if (rc == EMFILE || rc == ENFILE || rc == ENOBUFS || rc == ENOMEM) {
		vcm_close_locked(v, VCM_ROUTE_RESOLVED);
		goto out;			/* no socket: the call fails */
	}
	/* Refused or unreachable at once is still an event, as with rdma_cm. */
	if (rc)
		vcm_connect_failed_locked(v, rc);
	rc = 0;
	vcm_engine_wake_locked();
out:
	pthread_mutex_unlock(&vcm.lock);
	if (!rc)
		rc = vcm_complete(v);
	return rc ? vcm_fail(rc) : 0;
}

/*
 * Moves the QP to RTS (the peer named from its REQ), then REP; the
 * acceptor's ESTABLISHED follows the connector's RTU (engine.c).
 */
int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct vcm_msg m;
	struct vcm_id *v;
	int rc;

	if (!id)
		return vcm_fail(EINVAL);
	v = vcm_id_of(id);
	if (vcm_is_ud(v)) {
		rc = vcm_ud_accept(v, conn_param);
		return rc ? vcm_fail(rc) : 0;
	}
	pthread_mutex_lock(&vcm.lock);
	if (v->state != VCM_REQ_RCVD) {
		rc = v->state == VCM_CLOSED ? ECONNRESET : EINVAL;
		goto out;
	}
	/* Without parameters, answer what the connector asked for. */
	v->responder_resources = v->peer.initiator_depth < vcm.max_rd_atom ?
				 v->peer.initiator_depth : vcm.max_rd_atom;
	v->initiator_depth = v->peer.responder_resources < vcm.max_rd_atom ?
			     v->peer.responder_resources : vcm.max_rd_atom;
	v->retry_count = v->peer.retry_count;
	v->rnr_retry_count = v->peer.rnr_retry_count;
	rc = vcm_local_param(v, conn_param, VCM_REP_PDATA);
	pthread_mutex_unlock(&vcm.lock);
	if (rc)
		return vcm_fail(rc);

	if (id->qp) {
		rc = vcm_qp_connect(v);
		if (rc)
			return vcm_fail(rc);
	}

	pthread_mutex_lock(&vcm.lock);
	if (v->state != VCM_REQ_RCVD) {
		rc = ECONNRESET;		/* the connector went meanwhile */
		goto out;
	}
	vcm_msg_init(&m, VCM_MSG_REP);
	vcm_msg_fill(&m, v, conn_param);
	rc = vcm_msg_send(v->fd, &m);
	if (rc) {
		vcm_close_locked(v, VCM_CLOSED);
		goto out;
	}
	v->state = VCM_REP_SENT;
	v->deadline = vcm_now() + VCM_REPLY_MS;
	vcm_engine_wake_locked();
out:
	pthread_mutex_unlock(&vcm.lock);
	if (!rc)
		rc = vcm_complete(v);		/* ESTABLISHED: the RTU */
	return rc ? vcm_fail(rc) : 0;
}

/* REJECTED on the connector with status 28 (consumer defined), as IB. */
int rdma_reject(struct rdma_cm_id *id, const void *private_data,
		uint8_t private_data_len)
{
	struct vcm_msg m;
	struct vcm_id *v;
	int rc = 0;

	if (!id || (private_data_len && !private_data))
		return vcm_fail(EINVAL);
	v = vcm_id_of(id);
	if (private_data_len > (vcm_is_ud(v) ? VCM_SIDR_REP_PDATA : VCM_REJ_PDATA))
		return vcm_fail(EINVAL);
	pthread_mutex_lock(&vcm.lock);
	if (v->state == VCM_REQ_RCVD && vcm_is_ud(v)) {
		vcm_ud_refuse_locked(v, private_data, private_data_len);
	} else if (v->state == VCM_REQ_RCVD) {
		vcm_msg_init(&m, VCM_MSG_REJ);
		m.status = (int32_t)htobe32(VCM_REJ_CONSUMER);
		m.pdata_len = private_data_len;
		if (private_data_len)
			memcpy(m.pdata, private_data, private_data_len);
		vcm_msg_send(v->fd, &m);
		vcm_close_locked(v, VCM_CLOSED);
	} else if (v->state != VCM_CLOSED) {
		rc = EINVAL;
	}
	pthread_mutex_unlock(&vcm.lock);
	return rc ? vcm_fail(rc) : 0;
}

int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
		    uint8_t private_data_len)
{
	return rdma_reject(id, private_data, private_data_len);
}

/* rdma_connect without a QP on the id: the program moved its own QP to
 * RTS after CONNECT_RESPONSE; the RTU tells the acceptor. */
int rdma_establish(struct rdma_cm_id *id)
{
	struct vcm_msg m;
	struct vcm_id *v;
	int rc;

	if (!id)
		return vcm_fail(EINVAL);
	v = vcm_id_of(id);
	pthread_mutex_lock(&vcm.lock);
	if (v->state != VCM_REP_RCVD) {
		rc = v->state == VCM_CLOSED ? ECONNRESET : EINVAL;
		goto out;
	}
	vcm_msg_init(&m, VCM_MSG_RTU);
	rc = vcm_msg_send(v->fd, &m);
	if (rc) {
		vcm_close_locked(v, VCM_CLOSED);
		goto out;
	}
	v->state = VCM_CONNECTED;
	vcm_engine_wake_locked();
out:
	pthread_mutex_unlock(&vcm.lock);
	return rc ? vcm_fail(rc) : 0;
}

/*
 * The QP goes to ERR first (its WRs flush), then DREQ; both sides get
 * DISCONNECTED (the peer at once, this side on DREP, EOF or
 * VCM_DREP_MS).  After the peer's DISCONNECTED it only flushes the QP.
 */
int rdma_disconnect(struct rdma_cm_id *id)
{
	struct vcm_msg m;
	struct vcm_id *v;
	int rc = 0, wait;

	if (!id)
		return vcm_fail(EINVAL);
	v = vcm_id_of(id);
	if (vcm_is_ud(v))
		return vcm_fail(EINVAL);	/* no connection: as the IB CM's SIDR */
	pthread_mutex_lock(&vcm.lock);
	switch (v->state) {
	case VCM_CONNECTED:
	case VCM_REP_SENT:
	case VCM_REP_RCVD:
	case VCM_DISCONNECTING:
	case VCM_CLOSED:
		break;
	default:
		rc = EINVAL;
		break;
	}
	pthread_mutex_unlock(&vcm.lock);
	if (rc)
		return vcm_fail(rc);
	if (id->qp)
		vcm_qp_error(v);

	pthread_mutex_lock(&vcm.lock);
	if (v->state == VCM_CONNECTED || v->state == VCM_REP_SENT ||
	    v->state == VCM_REP_RCVD) {
		vcm_msg_init(&m, VCM_MSG_DREQ);
		if (vcm_msg_send(v->fd, &m)) {
			vcm_close_locked(v, VCM_CLOSED);
			if (!v->disc_queued) {
				struct vcm_event *e = vcm_event_new(v, RDMA_CM_EVENT_DISCONNECTED, 0);

				v->disc_queued = 1;
				if (e)
					vcm_event_queue_locked(e);
			}
		} else {
			v->state = VCM_DISCONNECTING;
			v->deadline = vcm_now() + VCM_DREP_MS;
			vcm_engine_wake_locked();
		}
	}
	/* A synchronous id waits for its DISCONNECTED, unless it took it
	 * already (the peer's disconnect came first). */
	wait = v->state == VCM_DISCONNECTING || (v->id.channel &&
		vcm_container_of(v->id.channel, struct vcm_channel, ch)->head);
	pthread_mutex_unlock(&vcm.lock);
	rc = wait ? vcm_complete(v) : 0;
	return rc ? vcm_fail(rc) : 0;
}

/* IBV_EVENT_COMM_EST and friends: nothing to learn here. */
int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	(void)event;
	return id ? 0 : vcm_fail(EINVAL);
}
