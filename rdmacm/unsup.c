// SPDX-License-Identifier: MIT
/*
 * What vrdma's librdmacm does not provide, each failing cleanly as
 * docs/rdmacm.md lists: SRQs through rdma_cm, multicast (vrdma has no
 * multicast groups: ibv_attach_mcast fails too), ECE.
 */
#include <errno.h>

#include <rdma/rdma_verbs.h>

#include "vcm.h"

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
	(void)context;
	return vcm_fail(id && addr ? EOPNOTSUPP : EINVAL);
}

int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	(void)context;
	return vcm_fail(id && mc_join_attr ? EOPNOTSUPP : EINVAL);
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	return vcm_fail(id && addr ? EOPNOTSUPP : EINVAL);
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
