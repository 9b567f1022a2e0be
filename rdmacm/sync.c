// SPDX-License-Identifier: MIT
/*
 * Synchronous ids, as librdmacm's (cma.c, ucma_complete): rdma_create_id
 * with no channel, rdma_create_ep and rdma_migrate_id to NULL give the id
 * a channel of its own.  rdma_resolve_addr, rdma_resolve_route,
 * rdma_connect, rdma_accept (RC) and rdma_disconnect then return once
 * their event is in: -1 with errno the event's (-status; ECONNREFUSED for
 * REJECTED) when it failed.  The event stays in id->event, which the next
 * such call, rdma_migrate_id or rdma_destroy_id acks.  A synchronous
 * listener's requests come through rdma_get_request, each on an id that
 * is synchronous too.  No wait is unbounded: every state an event
 * follows has its time limit in the engine.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vcm.h"

/* The id's event from the last synchronous call, done with. */
void vcm_sync_ack(struct vcm_id *v)
{
	if (v->id.event) {
		rdma_ack_cm_event(v->id.event);
		v->id.event = NULL;
	}
}

/* 0, or why the operation a synchronous id just started failed. */
int vcm_complete(struct vcm_id *v)
{
	struct rdma_cm_event *e;

	if (!v->sync)
		return 0;
	vcm_sync_ack(v);
	if (rdma_get_cm_event(v->id.channel, &e))
		return errno;
	v->id.event = e;
	if (!e->status)
		return 0;
	if (e->event == RDMA_CM_EVENT_REJECTED)
		return ECONNREFUSED;
	return e->status < 0 ? -e->status : e->status;
}

/*
 * A synchronous listener's CONNECT_REQUEST, as rdma_get_cm_event takes
 * it: the new id gets a channel of its own too.  0, or errno (then the
 * caller refuses the request).
 */
int vcm_sync_request(struct vcm_event *e)
{
	return rdma_migrate_id(e->ev.id, NULL) ? errno : 0;
}

/* Refuses a request taken from a synchronous listener and drops it. */
static void vcm_sync_refuse(struct rdma_cm_event *e)
{
	rdma_reject(e->id, NULL, 0);
	rdma_destroy_id(e->id);
	rdma_ack_cm_event(e);
}

/*
 * The next connection request on a synchronous listener, with the QP
 * rdma_create_ep was asked for made on it (the listener's PD).
 */
int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct ibv_qp_init_attr attr;
	struct rdma_cm_event *e;
	struct vcm_id *v;
	int rc = 0;

	if (!listen || !id)
		return vcm_fail(EINVAL);
	v = vcm_id_of(listen);
	if (!v->sync)
		return vcm_fail(EINVAL);	/* events come on the program's channel */
	vcm_sync_ack(v);
	if (rdma_get_cm_event(listen->channel, &e))
		return -1;
	if (e->event == RDMA_CM_EVENT_REJECTED)
		rc = ECONNREFUSED;
	else if (e->status)
		rc = e->status < 0 ? -e->status : e->status;
	else if (e->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		rc = EINVAL;
	if (rc) {
		listen->event = e;
		return vcm_fail(rc);
	}
	if (v->ep_attr) {
		attr = *v->ep_attr;
		if (rdma_create_qp(e->id, listen->pd, &attr)) {
			rc = errno;
			vcm_sync_refuse(e);
			return vcm_fail(rc);
		}
	}
	*id = e->id;
	(*id)->event = e;
	return 0;
}

/*
 * rdma_getaddrinfo's answer made an id: passive, bound to its source
 * address (rdma_listen next), the PD and QP attributes kept for
 * rdma_get_request; active, address and route resolved and the QP made.
 * The id is synchronous.  The QP type is the id's (the port space's).
 */
int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
		   struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm;
	struct vcm_id *v;
	int rc;

	if (!id || !res)
		return vcm_fail(EINVAL);
	rc = vcm_create_id(NULL, &cm, NULL, (enum rdma_port_space)res->ai_port_space,
			   (enum ibv_qp_type)res->ai_qp_type);
	if (rc)
		return vcm_fail(rc);
	v = vcm_id_of(cm);
	if (res->ai_flags & RAI_PASSIVE) {
		if (rdma_bind_addr(cm, res->ai_src_addr))
			goto err;
		if (pd)
			cm->pd = pd;
		if (qp_init_attr) {
			v->ep_attr = malloc(sizeof(*v->ep_attr));
			if (!v->ep_attr) {
				errno = ENOMEM;
				goto err;
			}
			*v->ep_attr = *qp_init_attr;
			v->ep_attr->qp_type = cm->qp_type;
		}
		*id = cm;
		return 0;
	}
	if (rdma_resolve_addr(cm, res->ai_src_addr, res->ai_dst_addr, 2000) ||
	    rdma_resolve_route(cm, 2000))
		goto err;
	if (qp_init_attr) {
		qp_init_attr->qp_type = cm->qp_type;
		if (rdma_create_qp(cm, pd, qp_init_attr))
			goto err;
	}
	*id = cm;
	return 0;

err:
	rc = errno;
	rdma_destroy_ep(cm);
	return vcm_fail(rc);
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
}
