// SPDX-License-Identifier: MIT
/* A stand-in libefa.so.1 for vrdma's private libdir (see mlx5.c). */
#include <errno.h>
#include <stddef.h>

#include <infiniband/efadv.h>

struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ibvctx,
				  struct ibv_qp_init_attr_ex *attr_ex,
				  struct efadv_qp_init_attr *efa_attr, uint32_t inlen)
{
	(void)ibvctx; (void)attr_ex; (void)efa_attr; (void)inlen;
	errno = EOPNOTSUPP;
	return NULL;
}

int efadv_query_device(struct ibv_context *ibvctx, struct efadv_device_attr *attr,
		       uint32_t inlen)
{
	(void)ibvctx; (void)attr; (void)inlen;
	return EOPNOTSUPP;
}
