// SPDX-License-Identifier: MIT
/*
 * The process's vrdma device, shared by every id as librdmacm shares
 * its contexts: opened once through our libibverbs (ibv_get_device_list
 * + ibv_open_device), kept open for the life of the process; a PD for
 * id->pd exists while some id is bound to the device.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vcm.h"

/* Opens the device once; dev_lock held. */
static int vcm_dev_open_locked(void)
{
	struct ibv_device_attr attr;
	struct ibv_device **list;
	int n = 0, rc;

	if (vcm.verbs)
		return 0;
	list = ibv_get_device_list(&n);
	if (!list)
		return errno ? errno : ENODEV;
	if (n < 1) {
		rc = ENODEV;
		goto out;
	}
	vcm.verbs = ibv_open_device(list[0]);
	if (!vcm.verbs) {
		rc = errno ? errno : ENODEV;
		goto out;
	}
	if (ibv_query_gid(vcm.verbs, VCM_PORT, 0, &vcm.gid) ||
	    ibv_query_device(vcm.verbs, &attr)) {
		ibv_close_device(vcm.verbs);
		vcm.verbs = NULL;
		rc = ENODEV;
		goto out;
	}
	vcm.max_rd_atom = attr.max_qp_rd_atom > 255 ? 255 : (uint8_t)attr.max_qp_rd_atom;
	rc = 0;
out:
	ibv_free_device_list(list);
	return rc;
}

int vcm_dev_open(void)
{
	int rc;

	pthread_mutex_lock(&vcm.dev_lock);
	rc = vcm_dev_open_locked();
	pthread_mutex_unlock(&vcm.dev_lock);
	return rc;
}

/* Binds @v to the device: id->verbs, id->pd, port 1. */
int vcm_dev_get(struct vcm_id *v)
{
	int rc = 0;

	if (v->has_dev)
		return 0;
	pthread_mutex_lock(&vcm.dev_lock);
	rc = vcm_dev_open_locked();
	if (rc)
		goto out;
	if (!vcm.pd) {
		vcm.pd = ibv_alloc_pd(vcm.verbs);
		if (!vcm.pd) {
			rc = errno ? errno : ENOMEM;
			goto out;
		}
	}
	vcm.dev_refs++;
	v->has_dev = 1;
	v->id.verbs = vcm.verbs;
	if (!v->id.pd)
		v->id.pd = vcm.pd;		/* else rdma_create_ep's, the program's */
	v->id.port_num = VCM_PORT;
	memcpy(&v->id.route.addr.addr.ibaddr.sgid, &vcm.gid, sizeof(vcm.gid));
	v->id.route.addr.addr.ibaddr.pkey = htobe16(0xffff);
out:
	pthread_mutex_unlock(&vcm.dev_lock);
	return rc;
}

void vcm_dev_put(struct vcm_id *v)
{
	if (!v->has_dev)
		return;
	pthread_mutex_lock(&vcm.dev_lock);
	v->has_dev = 0;
	/* The program's objects may still hold the PD: it goes when it can. */
	if (--vcm.dev_refs == 0 && vcm.pd && ibv_dealloc_pd(vcm.pd) == 0)
		vcm.pd = NULL;
	pthread_mutex_unlock(&vcm.dev_lock);
}

struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	int rc, n = 0;

	list = calloc(2, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	rc = vcm_dev_open();
	if (!rc)
		list[n++] = vcm.verbs;
	if (num_devices)
		*num_devices = n;
	return list;
}

void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}
