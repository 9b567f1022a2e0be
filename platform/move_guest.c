// SPDX-License-Identifier: MIT
/*
 * Moving pages of the program onto shared pages and back (libvrdma/pin.c),
 * for both platforms: their shares are plain mmap'd mappings.
 *
 * The moves use the raw mremap system call, not glibc's mremap(): other
 * libraries in the process hook that symbol, and a hook that forwards
 * fewer arguments than it was given (UCX's libucm drops the fifth, the
 * new address) puts the pages wherever its garbage points -- at address
 * 0, say -- and a registration would succeed over pages the program no
 * longer has.  The result is checked all the same: the pages are where
 * they were asked to go, or the move failed.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "vplat_impl.h"

static void *vplat_mremap_raw(void *from, size_t len, int flags, void *to)
{
	return (void *)syscall(SYS_mremap, from, len, len, flags, to);
}

/*
 * The move put the len bytes of pages from `from` at `got`, not at `to`:
 * the program's pages at `to` are untouched.  Move them back to `from`;
 * failing that, unmap them and keep `from` reserved, so that what the
 * caller unmaps at `from` on its error path is still its own.
 */
static void vplat_move_undo(void *from, void *got, size_t len)
{
	void *back;

	if (got == from)
		return;		/* never left */
	back = vplat_mremap_raw(got, len, MREMAP_MAYMOVE | MREMAP_FIXED, from);
	if (back == from)
		return;
	if (back != MAP_FAILED)
		got = back;	/* misplaced again: these pages go */
	if (munmap(got, len))
		vlog_err("vrdma: cannot unmap %zu misplaced bytes at %p: %s", len, got,
			 strerror(errno));
	if (mmap(from, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		 -1, 0) != from)
		vlog_err("vrdma: cannot reserve %p again: %s", from, strerror(errno));
}

int vplat_move_pages(void *from, void *to, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	void *got;
	int err;

	if (!from || !to || !len || ((uintptr_t)from | (uintptr_t)to | len) & (pg - 1))
		return -EINVAL;
	got = vplat_mremap_raw(from, len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	if (got == to)
		return 0;
	if (got == MAP_FAILED) {
		err = errno;
		return -err;
	}
	vlog_err("vrdma: moving %zu bytes of pages to %p put them at %p; refused",
		 len, to, got);
	vplat_move_undo(from, got, len);
	return -EFAULT;
}

int vplat_share_move(struct vplat_share *s, void *addr)
{
	size_t len = (size_t)s->npages * (size_t)sysconf(_SC_PAGESIZE);
	int rc;

	if (!s->addr)
		return -EINVAL;
	rc = vplat_move_pages(s->addr, addr, len);
	if (rc)
		return rc;
	s->addr = addr;
	return 0;
}

void vplat_share_disown(struct vplat_share *s)
{
	s->addr = NULL;
}
