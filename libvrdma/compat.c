// SPDX-License-Identifier: MIT
/*
 * The VRDMA_1.0 versions of the calls whose arguments mean more in
 * VRDMA_1.1, for programs built against libvrdma 1.0.0 (the default,
 * @@VRDMA_1.1, is what a program built now binds to):
 *  - vrdma_qp_init_attr.qp_type took what was the struct's tail padding,
 *    which a 1.0 program may leave as garbage: its QPs are RC;
 *  - vrdma_query_device's max_sge: a 1.0 program sizes its SGE arrays by
 *    its VRDMA_MAX_SGE_PER_WR, 4;
 *  - VRDMA_QP_QKEY makes vrdma_modify_qp read vrdma_qp_attr.qkey, past
 *    the end of a 1.0 program's struct: refused, as the unknown bit was.
 * vrdma_query_qp needs no second version: it writes qkey for UD QPs
 * only, which a 1.0 program cannot create.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "vlib.h"

#define VLIB_MAX_SGE_1_0	4	/* VRDMA_MAX_SGE_PER_WR of 1.0.0 */

struct vrdma_qp *vlib_create_qp_srq_1_0(struct vrdma_pd *pd, struct vrdma_qp_init_attr *attr,
					struct vrdma_srq *srq);
struct vrdma_qp *vlib_create_qp_1_0(struct vrdma_pd *pd, struct vrdma_qp_init_attr *attr);
int vlib_query_device_1_0(struct vrdma_device *dev, struct vrdma_device_attr *attr);
int vlib_modify_qp_1_0(struct vrdma_qp *qp, const struct vrdma_qp_attr *attr, int mask);

__asm__(".symver vlib_create_qp_srq_1_0, vrdma_create_qp_srq@VRDMA_1.0");
struct vrdma_qp *vlib_create_qp_srq_1_0(struct vrdma_pd *pd, struct vrdma_qp_init_attr *attr,
					struct vrdma_srq *srq)
{
	struct vrdma_qp_init_attr a;

	if (!attr)
		return vrdma_create_qp_srq(pd, attr, srq);
	/* What a 1.0 program's struct holds; the rest is RC. */
	memset(&a, 0, sizeof(a));
	memcpy(&a, attr, offsetof(struct vrdma_qp_init_attr, qp_type));
	return vrdma_create_qp_srq(pd, &a, srq);
}

__asm__(".symver vlib_create_qp_1_0, vrdma_create_qp@VRDMA_1.0");
struct vrdma_qp *vlib_create_qp_1_0(struct vrdma_pd *pd, struct vrdma_qp_init_attr *attr)
{
	return vlib_create_qp_srq_1_0(pd, attr, NULL);
}

__asm__(".symver vlib_query_device_1_0, vrdma_query_device@VRDMA_1.0");
int vlib_query_device_1_0(struct vrdma_device *dev, struct vrdma_device_attr *attr)
{
	int rc = vrdma_query_device(dev, attr);

	if (!rc && attr->max_sge > VLIB_MAX_SGE_1_0)
		attr->max_sge = VLIB_MAX_SGE_1_0;
	return rc;
}

__asm__(".symver vlib_modify_qp_1_0, vrdma_modify_qp@VRDMA_1.0");
int vlib_modify_qp_1_0(struct vrdma_qp *qp, const struct vrdma_qp_attr *attr, int mask)
{
	if (mask & VRDMA_QP_QKEY)
		return EINVAL;
	return vrdma_modify_qp(qp, attr, mask);
}
