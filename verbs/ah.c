// SPDX-License-Identifier: MIT
/*
 * Address handles, for UD QPs: a libvrdma AH naming the destination's
 * GID.  An address without a GRH (LID only, as ibv_ud_pingpong makes by
 * default) names this node: vrdma's datagrams stay on one node.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vvb.h"

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	const uint8_t *gid;
	struct vvb_ah *a;
	int rc;

	if (!pd || !attr || (attr->port_num && attr->port_num != VVB_PORT)) {
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		errno = ENOMEM;
		return NULL;
	}
	gid = attr->is_global ? attr->grh.dgid.raw : vvb_ctx(pd->context)->gid;
	a->vah = vrdma_create_ah(vvb_pd(pd)->vpd, gid);
	if (!a->vah) {
		rc = errno;
		free(a);
		errno = rc;
		return NULL;
	}
	a->ibah.context = pd->context;
	a->ibah.pd = pd;
	return &a->ibah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	struct vvb_ah *a;
	int rc;

	if (!ah)
		return EINVAL;
	a = vvb_ah(ah);
	rc = vrdma_destroy_ah(a->vah);
	if (rc)
		return rc;
	free(a);
	return 0;
}

/* The address that answers a UD receive: its sender, named by the GRH's
 * source GID (every vrdma UD receive has a GRH).  As rdma-core, the GRH's
 * destination GID must be one of the port's (ibv_find_gid_index: ours has
 * one, the node's) and names the source GID index; any other is -1 with
 * errno EINVAL, what rdma-core's search past the table's end gives. */
int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
			struct ibv_wc *wc, struct ibv_grh *grh,
			struct ibv_ah_attr *ah_attr)
{
	if (!context || !wc || !ah_attr || port_num != VVB_PORT ||
	    ((wc->wc_flags & IBV_WC_GRH) && !grh)) {
		errno = EINVAL;
		return -1;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (wc->wc_flags & IBV_WC_GRH) {
		uint32_t vtf;

		if (memcmp(grh->dgid.raw, vvb_ctx(context)->gid, VRDMA_GID_LEN)) {
			errno = EINVAL;
			return -1;
		}
		memcpy(&vtf, &grh->version_tclass_flow, sizeof(vtf));
		vtf = be32toh(vtf);
		ah_attr->is_global = 1;
		ah_attr->grh.sgid_index = 0;
		ah_attr->grh.dgid = grh->sgid;
		ah_attr->grh.flow_label = vtf & 0xfffff;
		ah_attr->grh.traffic_class = (uint8_t)(vtf >> 20);
		ah_attr->grh.hop_limit = 0xff;
	}
	return 0;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
				     struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr a;

	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &a))
		return NULL;
	return ibv_create_ah(pd, &a);
}
