// SPDX-License-Identifier: MIT
/* Protection domains and memory regions. */
#include <errno.h>
#include <stdlib.h>

#include "vvb.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct vvb_pd *pd;
	int rc;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->vpd = vrdma_alloc_pd(vvb_ctx(context)->vdev);
	if (!pd->vpd) {
		rc = errno;
		free(pd);
		errno = rc;
		return NULL;
	}
	pd->ibpd.context = context;
	pd->ibpd.handle = pd->vpd->handle;
	return &pd->ibpd;
}

int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct vvb_pd *pd;
	int rc;

	if (!ibpd)
		return EINVAL;
	pd = vvb_pd(ibpd);
	rc = vrdma_dealloc_pd(pd->vpd);
	if (rc)
		return rc;
	free(pd);
	return 0;
}

/* Verbs access flags to libvrdma's; 0 or EOPNOTSUPP for what vrdma
 * cannot do (on-demand paging, zero-based MRs, memory windows).  The
 * optional-range flags (relaxed ordering) are hints and ignored. */
int vvb_map_access(unsigned int a, int *va)
{
	const unsigned int hints = IBV_ACCESS_OPTIONAL_RANGE | IBV_ACCESS_HUGETLB;
	int v = 0;

	if (a & (IBV_ACCESS_ON_DEMAND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_MW_BIND))
		return EOPNOTSUPP;
	if (a & ~(hints | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC))
		return EINVAL;
	if (a & IBV_ACCESS_LOCAL_WRITE)
		v |= VRDMA_ACCESS_LOCAL_WRITE;
	if (a & IBV_ACCESS_REMOTE_WRITE)
		v |= VRDMA_ACCESS_REMOTE_WRITE;
	if (a & IBV_ACCESS_REMOTE_READ)
		v |= VRDMA_ACCESS_REMOTE_READ;
	if (a & IBV_ACCESS_REMOTE_ATOMIC)
		v |= VRDMA_ACCESS_REMOTE_ATOMIC;
	*va = v;
	return 0;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *ibpd, void *addr, size_t length,
				uint64_t iova, unsigned int access)
{
	struct vvb_mr *mr;
	int va, rc;

	if (!ibpd) {
		errno = EINVAL;
		return NULL;
	}
	/* libvrdma MRs are addressed by the process's virtual addresses. */
	if (iova != (uintptr_t)addr) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	rc = vvb_map_access(access, &va);
	if (rc) {
		errno = rc;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->vmr = vrdma_reg_mr(vvb_pd(ibpd)->vpd, addr, length, va);
	if (!mr->vmr) {
		rc = errno;
		free(mr);
		errno = rc;
		return NULL;
	}
	mr->ibmr.context = ibpd->context;
	mr->ibmr.pd = ibpd;
	mr->ibmr.addr = addr;
	mr->ibmr.length = length;
	mr->ibmr.handle = mr->vmr->handle;
	mr->ibmr.lkey = mr->vmr->lkey;
	mr->ibmr.rkey = mr->vmr->rkey;
	return &mr->ibmr;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
			       uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct vvb_mr *mr;
	int rc;

	if (!ibmr)
		return EINVAL;
	mr = vvb_container_of(ibmr, struct vvb_mr, ibmr);
	rc = vrdma_dereg_mr(mr->vmr);
	if (rc)
		return rc;
	free(mr);
	return 0;
}

int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
		 size_t length, int access)
{
	(void)mr; (void)flags; (void)pd; (void)addr; (void)length; (void)access;
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
				 uint64_t iova, int fd, int access)
{
	(void)pd; (void)offset; (void)length; (void)iova; (void)fd; (void)access;
	errno = EOPNOTSUPP;
	return NULL;
}
