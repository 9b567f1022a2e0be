// SPDX-License-Identifier: MIT
/* Shareable buffers, protection domains and memory regions. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vlib.h"
#include "log.h"

/* Hand npages refs to dom0 through list pages and attach them (dom0 maps
 * them once); *handle names the buffer. */
int vlib_buf_attach(struct vrdma_device *dev, const uint32_t *refs, uint32_t npages,
		    uint32_t *handle)
{
	uint32_t nlist = (npages + VRDMA_REFS_PER_PAGE - 1) / VRDMA_REFS_PER_PAGE;
	struct vrdma_req req = { .opcode = VRDMA_CMD_ATTACH_BUF };
	struct vplat_share *list, *ind = NULL;
	const uint32_t *lrefs;
	uint32_t out_val[4];
	uint32_t i, n;
	int rc;

	if (!npages || npages > dev->fe.max_buf_pages)
		return -EINVAL;
	rc = vfe_share(&dev->fe, nlist, 0, &list);
	if (rc)
		return rc;
	memcpy(vplat_share_addr(list), refs, (size_t)npages * sizeof(uint32_t));
	lrefs = vplat_share_refs(list);
	n = nlist;
	if (nlist > VRDMA_BUF_LIST_REFS) {
		/* More list pages than the command names: pages of their
		 * refs (indirect, a dom0 of max-buf-pages took them). */
		n = (nlist + VRDMA_REFS_PER_PAGE - 1) / VRDMA_REFS_PER_PAGE;
		rc = vfe_share(&dev->fe, n, 0, &ind);
		if (rc)
			goto out;
		memcpy(vplat_share_addr(ind), lrefs, (size_t)nlist * sizeof(uint32_t));
		lrefs = vplat_share_refs(ind);
		req.u.attach_buf.indirect = 1;
	}
	req.u.attach_buf.npages = npages;
	req.u.attach_buf.nlist = (uint16_t)n;
	req.u.attach_buf.writable = 1;
	for (i = 0; i < n; i++)
		req.u.attach_buf.list_ref[i] = lrefs[i];
	rc = vfe_cmd(&dev->fe, &req, out_val);
	/* dom0 copied the refs while attaching: the list pages are done. */
	if (ind)
		vfe_unshare(&dev->fe, ind);
out:
	vfe_unshare(&dev->fe, list);
	if (!rc && out_val[1] != npages)
		rc = vfe_cmd_bad(&dev->fe, "ATTACH_BUF result with another page count");
	if (!rc)
		*handle = out_val[0];
	return rc;
}

/* Share npages fresh data pages and attach them. */
int vlib_buf_alloc(struct vrdma_device *dev, uint32_t npages, bool internal,
		   struct vlib_buf **out)
{
	struct vlib_buf *b;
	int rc;

	if (!npages || npages > dev->fe.max_buf_pages)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	rc = vfe_share(&dev->fe, npages, 1, &b->share);
	if (rc)
		goto err_free;
	rc = vlib_buf_attach(dev, vplat_share_refs(b->share), npages, &b->handle);
	if (rc)
		goto err_unshare_data;
	b->addr = vplat_share_addr(b->share);
	b->len = (size_t)npages * VRDMA_PAGE_SIZE;
	b->internal = internal;
	VLIB_LINK(dev, &dev->bufs, b);
	*out = b;
	return 0;

err_unshare_data:
	vfe_unshare(&dev->fe, b->share);
err_free:
	free(b);
	return rc;
}

/* Detach and unshare.  Not forced: EBUSY while MRs use it, and a failed
 * DETACH keeps the buffer. */
int vlib_buf_free(struct vrdma_device *dev, struct vlib_buf *b, bool force)
{
	int rc;

	pthread_mutex_lock(&dev->obj_lock);
	if (b->mrs && !force) {
		pthread_mutex_unlock(&dev->obj_lock);
		return -EBUSY;
	}
	VLIB_UNLINK(&dev->bufs, b);
	pthread_mutex_unlock(&dev->obj_lock);

	rc = vlib_destroy_cmd(dev, VRDMA_CMD_DETACH_BUF, b->handle, force);
	if (rc) {
		VLIB_LINK(dev, &dev->bufs, b);
		return rc;
	}
	vfe_unshare(&dev->fe, b->share);
	free(b);
	return 0;
}

/* An MR left a pinned buffer (obj_lock held): true if it was the last one;
 * the buffer is then off the list, for the caller to vlib_pinned_drop(). */
static bool vlib_pinned_last(struct vrdma_device *dev, struct vlib_buf *b)
{
	if (!b->pins || b->mrs)
		return false;
	return VLIB_UNLINK(&dev->bufs, b);
}

/* Detach a pinned buffer and give its pages back to the app. */
static void vlib_pinned_drop(struct vrdma_device *dev, struct vlib_buf *b)
{
	vlib_destroy_cmd(dev, VRDMA_CMD_DETACH_BUF, b->handle, true);
	vlib_pin_buf_free(dev, b);
	free(b);
}

void *vrdma_alloc_buf(struct vrdma_device *dev, size_t length)
{
	struct vlib_buf *b;
	size_t npages;
	int rc;

	if (!dev || !length) {
		errno = EINVAL;
		return NULL;
	}
	if (vlib_broken(dev))
		return NULL;
	/* In pages: max_buf_pages * 4 KiB is past a 32-bit size_t. */
	npages = length / VRDMA_PAGE_SIZE + (length % VRDMA_PAGE_SIZE != 0);
	if (npages > dev->fe.max_buf_pages) {
		errno = EINVAL;
		return NULL;
	}
	rc = vlib_buf_alloc(dev, (uint32_t)npages, false, &b);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	return b->addr;
}

static struct vlib_buf *vlib_buf_find(struct vrdma_device *dev, const void *addr)
{
	struct vlib_buf *b;

	for (b = dev->bufs; b; b = b->next)
		if (!b->internal && !b->pins && b->addr == addr)
			return b;
	return NULL;
}

int vrdma_free_buf(struct vrdma_device *dev, void *addr)
{
	struct vlib_buf *b;

	if (!dev || !addr)
		return EINVAL;
	pthread_mutex_lock(&dev->obj_lock);
	b = vlib_buf_find(dev, addr);
	pthread_mutex_unlock(&dev->obj_lock);
	if (!b)
		return EINVAL;
	return vlib_ret(vlib_buf_free(dev, b, false));
}

struct vrdma_pd *vrdma_alloc_pd(struct vrdma_device *dev)
{
	struct vrdma_req req = { .opcode = VRDMA_CMD_ALLOC_PD };
	uint32_t out[4];
	struct vlib_pd *p;
	int rc;

	if (!dev) {
		errno = EINVAL;
		return NULL;
	}
	if (vlib_broken(dev))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	rc = vfe_cmd(&dev->fe, &req, out);
	if (rc) {
		free(p);
		errno = -rc;
		return NULL;
	}
	p->pub.device = dev;
	p->pub.handle = out[0];
	VLIB_LINK(dev, &dev->pds, p);
	return &p->pub;
}

int vlib_dealloc_pd(struct vlib_pd *p, bool force)
{
	struct vrdma_device *dev = p->pub.device;
	int rc;

	pthread_mutex_lock(&dev->obj_lock);
	if (p->users && !force) {
		pthread_mutex_unlock(&dev->obj_lock);
		return -EBUSY;
	}
	VLIB_UNLINK(&dev->pds, p);
	pthread_mutex_unlock(&dev->obj_lock);

	rc = vlib_destroy_cmd(dev, VRDMA_CMD_DEALLOC_PD, p->pub.handle, force);
	if (rc) {
		VLIB_LINK(dev, &dev->pds, p);
		return rc;
	}
	free(p);
	return 0;
}

int vrdma_dealloc_pd(struct vrdma_pd *pd)
{
	if (!pd || !pd->device)
		return EINVAL;
	return vlib_ret(vlib_dealloc_pd(vlib_pd(pd), false));
}

static int vlib_access(int access, uint32_t *wire)
{
	const int known = VRDMA_ACCESS_LOCAL_WRITE | VRDMA_ACCESS_REMOTE_WRITE |
			  VRDMA_ACCESS_REMOTE_READ | VRDMA_ACCESS_REMOTE_ATOMIC;

	if (access & ~known)
		return -EINVAL;
	*wire = 0;
	if (access & VRDMA_ACCESS_LOCAL_WRITE)
		*wire |= VRDMA_ACC_LOCAL_WRITE;
	if (access & VRDMA_ACCESS_REMOTE_WRITE)
		*wire |= VRDMA_ACC_REMOTE_WRITE;
	if (access & VRDMA_ACCESS_REMOTE_READ)
		*wire |= VRDMA_ACC_REMOTE_READ;
	if (access & VRDMA_ACCESS_REMOTE_ATOMIC)
		*wire |= VRDMA_ACC_REMOTE_ATOMIC;
	return 0;
}

/* The buffer holding [addr, addr+len), reserved for an MR (obj_lock). */
static struct vlib_buf *vlib_buf_range(struct vrdma_device *dev,
				       const uint8_t *addr, size_t len)
{
	struct vlib_buf *b;

	for (b = dev->bufs; b; b = b->next) {
		if (b->internal || addr < b->addr || addr >= b->addr + b->len)
			continue;
		if (len > (size_t)(b->addr + b->len - addr))
			return NULL;
		return b;
	}
	return NULL;
}

static struct vrdma_mr *vlib_reg_mr(struct vrdma_pd *pd, void *addr, size_t length,
				    int access)
{
	struct vrdma_device *dev = pd->device;
	struct vrdma_req req = { .opcode = VRDMA_CMD_REG_MR };
	struct vlib_pd *p = vlib_pd(pd);
	struct vlib_buf *b;
	struct vlib_mr *m;
	uint32_t out[4];
	bool last;
	int rc;

	rc = vlib_access(access, &req.u.reg_mr.access);
	if (rc)
		goto err;
	m = calloc(1, sizeof(*m));
	if (!m) {
		rc = -ENOMEM;
		goto err;
	}
	pthread_mutex_lock(&dev->obj_lock);
	b = vlib_buf_range(dev, addr, length);
	if (b) {
		b->mrs++;	/* pins the buffer and the PD during the command */
		p->users++;
	}
	pthread_mutex_unlock(&dev->obj_lock);
	if (!b) {
		/* The app's own memory: move it onto shared pages (pin.c). */
		rc = vlib_pin_buf(dev, addr, length, &b);
		if (rc)
			goto err_free;
		pthread_mutex_lock(&dev->obj_lock);
		b->mrs++;
		p->users++;
		pthread_mutex_unlock(&dev->obj_lock);
	}
	req.u.reg_mr.pd = pd->handle;
	req.u.reg_mr.buf = b->handle;
	req.u.reg_mr.offset = (uint64_t)((uint8_t *)addr - b->addr);
	req.u.reg_mr.length = length;
	req.u.reg_mr.iova = (uint64_t)(uintptr_t)addr;
	rc = vfe_cmd(&dev->fe, &req, out);
	if (rc)
		goto err_unpin;

	m->pub.device = dev;
	m->pub.pd = pd;
	m->pub.addr = addr;
	m->pub.length = length;
	m->pub.handle = out[0];
	m->pub.lkey = out[1];
	m->pub.rkey = out[2];
	m->buf = b;
	VLIB_LINK(dev, &dev->mrs, m);
	return &m->pub;

err_unpin:
	pthread_mutex_lock(&dev->obj_lock);
	b->mrs--;
	p->users--;
	last = vlib_pinned_last(dev, b);
	pthread_mutex_unlock(&dev->obj_lock);
	if (last)
		vlib_pinned_drop(dev, b);
err_free:
	free(m);
err:
	errno = -rc;
	return NULL;
}

struct vrdma_mr *vrdma_reg_mr(struct vrdma_pd *pd, void *addr, size_t length,
			      int access)
{
	if (!pd || !pd->device || !addr || !length) {
		errno = EINVAL;
		return NULL;
	}
	if (vlib_broken(pd->device))
		return NULL;
	return vlib_reg_mr(pd, addr, length, access);
}

int vlib_dereg_mr(struct vlib_mr *m, bool force)
{
	struct vrdma_device *dev = m->pub.device;
	bool last;
	int rc;

	rc = vlib_destroy_cmd(dev, VRDMA_CMD_DEREG_MR, m->pub.handle, force);
	if (rc)
		return rc;
	pthread_mutex_lock(&dev->obj_lock);
	VLIB_UNLINK(&dev->mrs, m);
	m->buf->mrs--;
	vlib_pd(m->pub.pd)->users--;
	/* The last MR over the app's own memory gives its pages back. */
	last = vlib_pinned_last(dev, m->buf);
	pthread_mutex_unlock(&dev->obj_lock);
	if (last)
		vlib_pinned_drop(dev, m->buf);
	free(m);
	return 0;
}

int vrdma_dereg_mr(struct vrdma_mr *mr)
{
	if (!mr || !mr->device)
		return EINVAL;
	return vlib_ret(vlib_dereg_mr(vlib_mr(mr), false));
}
