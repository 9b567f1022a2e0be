// SPDX-License-Identifier: MIT
/*
 * Registering memory the app allocated itself (malloc, memalign, mmap).
 *
 * dom0 can only map pages the guest shared (on Xen: pages of the grant
 * driver), so the pages under such a range are moved in place: fresh
 * shared pages get the contents, then are moved over the app's range
 * (vplat_move_pages: the raw mremap, checked to land there), and the app
 * goes on at the same addresses, zero copy from then on.  A "pin" is one such run of pages; a pinned buffer (one per
 * MR range) is attached to dom0 from the refs of the pins under it, so
 * MRs may overlap and share pages.  When the last buffer over a pin goes,
 * its pages are moved back onto private memory and the grants end.
 *
 * Rules (vrdma_reg_mr(3)): the range must be readable, private memory
 * (not a shared file mapping); while a pin is made or undone, other
 * threads must not write the pages it covers, including the rest of the
 * first and last page; a fork()ed child shares pinned pages with its
 * parent until they are unpinned.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "vlib.h"
#include "log.h"

#define VLIB_PG		((uintptr_t)VRDMA_PAGE_SIZE)

enum vlib_maps_want {
	VLIB_MAPS_PRIVATE,	/* to pin: readable private memory, not a stack */
	VLIB_MAPS_OURS,		/* pinned: still the share's mapping */
};

/* A pinned range is mapped from our share: the plain host's memfd or
 * Xen's grant allocator. */
static bool vlib_maps_ours(const char *path)
{
	return strstr(path, "vrdma-share") || strstr(path, "/dev/xen/gntalloc");
}

/* The calling thread's stack overlaps [a, b): its own writes while the
 * pages move (return addresses, locals) would be lost. */
static bool vlib_pin_own_stack(uintptr_t a, uintptr_t b)
{
	pthread_attr_t attr;
	void *lo;
	size_t len;
	bool hit = false;

	if (pthread_getattr_np(pthread_self(), &attr))
		return false;
	if (!pthread_attr_getstack(&attr, &lo, &len))
		hit = a < (uintptr_t)lo + len && (uintptr_t)lo < b;
	pthread_attr_destroy(&attr);
	return hit;
}

/*
 * Walk /proc/self/maps over [a, b): every page must be mapped and, for
 * VLIB_MAPS_PRIVATE, readable private memory that is no stack (moving a
 * shared file mapping would cut it off its file); for VLIB_MAPS_OURS,
 * still our share's mapping (the program may have unmapped or replaced
 * it).  *prot (PRIVATE): the protection to give the moved pages back (the
 * most common one; mixed ranges get read/write).
 */
static int vlib_maps_check(uintptr_t a, uintptr_t b, enum vlib_maps_want want, int *prot)
{
	char *line = NULL, perm[5];
	unsigned long lo, hi;
	size_t cap = 0;
	uintptr_t at = a;
	int off, rc = -EFAULT;
	FILE *f;

	if (want == VLIB_MAPS_PRIVATE && vlib_pin_own_stack(a, b))
		return -EFAULT;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	if (prot)
		*prot = -1;
	/* getline: a line may be longer than any fixed buffer (long paths). */
	while (at < b && getline(&line, &cap, f) > 0) {
		const char *path;
		int pr;

		off = 0;
		if (sscanf(line, "%lx-%lx %4s %*s %*s %*s%n", &lo, &hi, perm, &off) != 3)
			break;
		if (hi <= at)
			continue;
		path = line + off;
		if (lo > at || perm[0] != 'r')
			break;	/* a hole, or unreadable */
		if (want == VLIB_MAPS_OURS) {
			if (perm[3] != 's' || !vlib_maps_ours(path))
				break;
		} else {
			if (perm[3] != 'p' || strstr(path, "[stack"))
				break;
			pr = PROT_READ | (perm[1] == 'w' ? PROT_WRITE : 0) |
			     (perm[2] == 'x' ? PROT_EXEC : 0);
			*prot = *prot == -1 || *prot == pr ? pr : PROT_READ | PROT_WRITE;
		}
		at = hi;
	}
	if (at >= b)
		rc = 0;
	free(line);
	fclose(f);
	if (rc)
		vlog_dbg("vrdma: reg_mr: %#lx..%#lx is not %s", (unsigned long)a,
			 (unsigned long)b, want == VLIB_MAPS_OURS ? "pinned any more" :
			 "readable private memory off the stack");
	return rc;
}

/*
 * Whole pages are copied, with whatever else lives on them (other heap
 * objects, an allocator's or a sanitizer's red zones): word by word
 * through volatile pointers, so no memcpy interceptor judges the bytes.
 */
__attribute__((no_sanitize_address))
static void vlib_pin_words(void *dst, const void *src, size_t len)
{
	volatile uint64_t *d = dst;
	const volatile uint64_t *s = src;
	size_t i;

	for (i = 0; i < len / sizeof(*d); i++)
		d[i] = s[i];
}

/* Copy len bytes (whole pages) at src into dst without faulting on a bad
 * src: the kernel copies, or words once the range was checked readable. */
static int vlib_pin_copy(void *dst, const void *src, size_t len)
{
	struct iovec l = { dst, len }, r = { (void *)src, len };
	ssize_t n = process_vm_readv(getpid(), &l, 1, &r, 1, 0);

	if (n == (ssize_t)len)
		return 0;
	if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
		vlib_pin_words(dst, src, len);
		return 0;
	}
	return -EFAULT;
}

/* A new pin over [addr, addr+len), page aligned, no pin there yet. */
static int vlib_pin_new(struct vrdma_device *dev, uint8_t *addr, size_t len,
			struct vlib_pin **out)
{
	struct vlib_pin *p;
	int rc;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	rc = vlib_maps_check((uintptr_t)addr, (uintptr_t)addr + len, VLIB_MAPS_PRIVATE,
			     &p->prot);
	if (rc)
		goto err_free;
	rc = vfe_share(&dev->fe, (uint32_t)(len / VLIB_PG), 1, &p->share);
	if (rc)
		goto err_free;
	rc = vlib_pin_copy(vplat_share_addr(p->share), addr, len);
	if (rc)
		goto err_unshare;
	rc = vplat_share_move(p->share, addr);
	if (rc)
		goto err_unshare;
	if (p->prot != (PROT_READ | PROT_WRITE))
		mprotect(addr, len, p->prot);
	p->addr = addr;
	p->len = len;
	p->next = dev->pins;
	dev->pins = p;
	*out = p;
	return 0;

err_unshare:
	vfe_unshare(&dev->fe, p->share);
err_free:
	free(p);
	return rc;
}

/* Move a pin's pages back onto private memory and end its share.  If no
 * memory is left for that, the pages stay shared (and working). */
static int vlib_pin_undo(struct vrdma_device *dev, struct vlib_pin *p)
{
	void *priv;
	int rc;

	/* Unmapped, replaced or made unreadable by the program meanwhile:
	 * nothing of ours to move back there; the share just ends. */
	if (vlib_maps_check((uintptr_t)p->addr, (uintptr_t)p->addr + p->len,
			    VLIB_MAPS_OURS, NULL)) {
		vplat_share_disown(p->share);
		vfe_unshare(&dev->fe, p->share);
		return 0;
	}
	priv = mmap(NULL, p->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (priv == MAP_FAILED) {
		vlog_warn("vrdma: cannot give %zu bytes back to private memory: %s",
			  p->len, strerror(errno));
		return -ENOMEM;
	}
	if (vlib_pin_copy(priv, p->addr, p->len)) {
		munmap(priv, p->len);
		return -EFAULT;	/* checked readable above: raced the program */
	}
	rc = vplat_move_pages(priv, p->addr, p->len);
	if (rc) {
		/* The shared pages stay under the program's addresses. */
		vlog_warn("vrdma: cannot move %zu bytes back: %s", p->len, strerror(-rc));
		munmap(priv, p->len);
		return rc;
	}
	if (p->prot != (PROT_READ | PROT_WRITE))
		mprotect(p->addr, p->len, p->prot);
	vplat_share_disown(p->share);	/* its mapping is gone: replaced */
	vfe_unshare(&dev->fe, p->share);
	return 0;
}

/* A pin whose pages the program unmapped or replaced: off the list, its
 * share ended; freed once no buffer uses it (pin_lock held). */
static void vlib_pin_forget(struct vrdma_device *dev, struct vlib_pin *p)
{
	struct vlib_pin **pp;

	for (pp = &dev->pins; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	vplat_share_disown(p->share);
	vfe_unshare(&dev->fe, p->share);
	p->share = NULL;
	p->gone = true;
	if (!p->users)
		free(p);
}

/* The pin lending page pg, if it is still mapped there (the program may
 * have unmapped its memory and mapped new memory at the same address: a
 * stale pin must not back a new MR). */
static struct vlib_pin *vlib_pin_at(struct vrdma_device *dev, uintptr_t pg)
{
	struct vlib_pin *p;

	for (p = dev->pins; p; p = p->next) {
		if (pg < (uintptr_t)p->addr || pg >= (uintptr_t)p->addr + p->len)
			continue;
		if (!vlib_maps_check(pg, pg + VLIB_PG, VLIB_MAPS_OURS, NULL))
			return p;
		vlib_pin_forget(dev, p);
		return NULL;
	}
	return NULL;
}

/* Remember p among the buffer's pins once, and take a use of it. */
static void vlib_pin_use(struct vlib_buf *b, struct vlib_pin *p)
{
	unsigned i;

	for (i = 0; i < b->npins; i++)
		if (b->pins[i] == p)
			return;
	b->pins[b->npins++] = p;
	p->users++;
}

static void vlib_pin_unuse(struct vrdma_device *dev, struct vlib_buf *b)
{
	struct vlib_pin **pp, *p;
	unsigned i;

	for (i = 0; i < b->npins; i++) {
		p = b->pins[i];
		if (--p->users)
			continue;
		if (p->gone) {
			free(p);	/* forgotten already (vlib_pin_forget) */
			continue;
		}
		if (vlib_pin_undo(dev, p))
			continue;	/* kept, unused; a later MR may take it */
		for (pp = &dev->pins; *pp; pp = &(*pp)->next)
			if (*pp == p) {
				*pp = p->next;
				break;
			}
		free(p);
	}
	free(b->pins);
	b->pins = NULL;
	b->npins = 0;
}

/*
 * A buffer over the pages of [addr, addr+len): pins what is not pinned
 * yet, attaches the pages to dom0.  The buffer is linked on dev->bufs.
 */
int vlib_pin_buf(struct vrdma_device *dev, void *addr, size_t len, struct vlib_buf **out)
{
	uintptr_t a = (uintptr_t)addr & ~(VLIB_PG - 1), pg, run;
	uintptr_t e = ((uintptr_t)addr + len + VLIB_PG - 1) & ~(VLIB_PG - 1);
	uint32_t npages, i;
	struct vlib_pin *p;
	struct vlib_buf *b;
	uint32_t *refs;
	int rc;

	if (e <= a || (uintptr_t)addr + len < (uintptr_t)addr)
		return -EFAULT;
	if ((e - a) / VLIB_PG > dev->fe.max_buf_pages)
		return -EINVAL;
	npages = (uint32_t)((e - a) / VLIB_PG);
	b = calloc(1, sizeof(*b));
	refs = malloc(sizeof(*refs) * npages);
	if (b)
		b->pins = calloc(npages, sizeof(*b->pins));	/* at most one per page */
	if (!b || !refs || !b->pins) {
		rc = -ENOMEM;
		goto err_free;
	}
	pthread_mutex_lock(&dev->pin_lock);
	for (pg = a; pg < e;) {
		p = vlib_pin_at(dev, pg);
		if (!p) {
			/* The run of pages no pin covers yet gets one. */
			for (run = pg + VLIB_PG; run < e && !vlib_pin_at(dev, run); run += VLIB_PG)
				;
			rc = vlib_pin_new(dev, (uint8_t *)pg, run - pg, &p);
			if (rc)
				goto err_unuse;
		}
		vlib_pin_use(b, p);
		for (; pg < e && pg < (uintptr_t)p->addr + p->len; pg += VLIB_PG) {
			i = (uint32_t)((pg - a) / VLIB_PG);
			refs[i] = vplat_share_refs(p->share)[(pg - (uintptr_t)p->addr) / VLIB_PG];
		}
	}
	rc = vlib_buf_attach(dev, refs, npages, &b->handle);
	if (rc)
		goto err_unuse;
	pthread_mutex_unlock(&dev->pin_lock);
	free(refs);
	b->addr = (uint8_t *)a;
	b->len = e - a;
	VLIB_LINK(dev, &dev->bufs, b);
	*out = b;
	return 0;

err_unuse:
	vlib_pin_unuse(dev, b);
	pthread_mutex_unlock(&dev->pin_lock);
err_free:
	if (b)
		free(b->pins);
	free(b);
	free(refs);
	return rc;
}

/* The buffer is detached (or the device is going): drop its pin uses. */
void vlib_pin_buf_free(struct vrdma_device *dev, struct vlib_buf *b)
{
	pthread_mutex_lock(&dev->pin_lock);
	vlib_pin_unuse(dev, b);
	pthread_mutex_unlock(&dev->pin_lock);
}

/* vrdma_close(): every pin goes, the app keeps its memory. */
void vlib_pin_close(struct vrdma_device *dev)
{
	struct vlib_pin *p;

	pthread_mutex_lock(&dev->pin_lock);
	while ((p = dev->pins)) {
		dev->pins = p->next;
		if (vlib_pin_undo(dev, p)) {
			/* The app keeps the shared pages mapped; the share ends. */
			vplat_share_disown(p->share);
			vfe_unshare(&dev->fe, p->share);
		}
		free(p);
	}
	pthread_mutex_unlock(&dev->pin_lock);
}
