// SPDX-License-Identifier: MIT
/*
 * What vrdma's librdmacm does not provide, each failing cleanly as
 * docs/rdmacm.md lists: synchronous ids and the endpoint calls built on
 * them (rdma_create_ep, rdma_get_request), SRQs through rdma_cm,
 * multicast (UD), ECE.
 */
#include <errno.h>

#include <rdma/rdma_verbs.h>

#include "vcm.h"

int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
		   struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	(void)id; (void)res; (void)pd; (void)qp_init_attr;
	return vcm_fail(EOPNOTSUPP);
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (id) {
		rdma_destroy_qp(id);
		rdma_destroy_id(id);
	}
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	(void)listen; (void)id;
	return vcm_fail(EINVAL);		/* only for synchronous listeners */
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
		    struct ibv_srq_init_attr *attr)
{
	(void)id; (void)pd; (void)attr;
	return vcm_fail(EOPNOTSUPP);
}

int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	(void)id; (void)attr;
	return vcm_fail(EOPNOTSUPP);
}

void rdma_destroy_srq(struct rdma_cm_id *id)
{
	(void)id;
}

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	(void)id; (void)addr; (void)context;
	return vcm_fail(EOPNOTSUPP);
}

int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	(void)id; (void)mc_join_attr; (void)context;
	return vcm_fail(EOPNOTSUPP);
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id; (void)addr;
	return vcm_fail(EOPNOTSUPP);
}

int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id; (void)ece;
	return vcm_fail(EOPNOTSUPP);
}

int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id; (void)ece;
	return vcm_fail(EOPNOTSUPP);
}
