// SPDX-License-Identifier: MIT
/*
 * Address handles for UD QPs: a destination GID, kept in the guest (dom0
 * sees it in each UD send WR).  An AH's memory lives until vrdma_close(),
 * so a WR naming a destroyed one is refused (EINVAL) rather than read
 * freed memory; vrdma_create_ah() reuses destroyed ones.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vlib.h"

struct vrdma_ah *vrdma_create_ah(struct vrdma_pd *pd, const uint8_t dgid[VRDMA_GID_LEN])
{
	struct vrdma_device *dev;
	struct vlib_ah *a;

	if (!pd || !pd->device || !dgid) {
		errno = EINVAL;
		return NULL;
	}
	dev = pd->device;
	if (vlib_broken(dev))
		return NULL;
	pthread_mutex_lock(&dev->obj_lock);
	for (a = dev->ahs; a && __atomic_load_n(&a->live, __ATOMIC_ACQUIRE); a = a->next)
		;
	if (!a) {
		a = calloc(1, sizeof(*a));
		if (!a) {
			pthread_mutex_unlock(&dev->obj_lock);
			errno = ENOMEM;
			return NULL;
		}
		a->next = dev->ahs;
		dev->ahs = a;
	}
	a->pub.device = dev;
	a->pub.pd = pd;
	memcpy(a->pub.dgid, dgid, VRDMA_GID_LEN);
	vlib_pd(pd)->users++;
	__atomic_store_n(&a->live, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&dev->obj_lock);
	return &a->pub;
}

int vrdma_destroy_ah(struct vrdma_ah *ah)
{
	struct vrdma_device *dev;
	struct vlib_ah *a;
	int rc = EINVAL;

	if (!ah || !ah->device)
		return EINVAL;
	a = vlib_ah(ah);
	dev = ah->device;
	pthread_mutex_lock(&dev->obj_lock);
	if (__atomic_exchange_n(&a->live, 0, __ATOMIC_ACQ_REL)) {
		vlib_pd(ah->pd)->users--;
		rc = 0;
	}
	pthread_mutex_unlock(&dev->obj_lock);
	return rc;
}

/* A UD send WR's destination into w (the RC fields it shares space with
 * were written as zero): 0 or -EINVAL (opcode, AH). */
int vlib_send_ud(const struct vlib_qp *q, const struct vrdma_send_wr *wr,
		 struct vrdma_wr *w, uint32_t opc)
{
	struct vrdma_ah *ah = VLIB_ONCE(wr->wr.ud.ah);

	if ((opc != VRDMA_WR_SEND && opc != VRDMA_WR_SEND_WITH_IMM) || !ah ||
	    ah->device != q->pub.device || ah->pd != q->pub.pd ||
	    !__atomic_load_n(&vlib_ah(ah)->live, __ATOMIC_ACQUIRE))
		return -EINVAL;
	memcpy(w->ud.dgid, ah->dgid, sizeof(w->ud.dgid));
	w->ud.remote_qpn = VLIB_ONCE(wr->wr.ud.remote_qpn);
	w->ud.remote_qkey = VLIB_ONCE(wr->wr.ud.remote_qkey);
	if (w->ud.remote_qpn >= 1u << 24)
		return -EINVAL;
	return 0;
}
