/* SPDX-License-Identifier: MIT */
/*
 * Stub of platform/vplat.h for backend unit tests: one process plays dom0
 * and every guest.  Keys live in memory, "grant refs" name pages of
 * memfds the test shares (so the backend's mapping really aliases the
 * guest's pages), channels are eventfds.
 */
#ifndef VRDMA_STUB_PLAT_H
#define VRDMA_STUB_PLAT_H

#include <stdbool.h>
#include <stdint.h>

#include "vplat.h"

/* Forget every key, watch and grant (between tests in one process). */
void stub_reset(void);
struct vplat *stub_open(uint32_t domid);	/* domid 0 = dom0 role */
/* Run every instance's pending watches until quiet. */
void stub_run(void);
unsigned stub_live_maps(void);
unsigned stub_live_binds(void);		/* dom0-side channels */
unsigned stub_list_calls(void);		/* vplat_key_list calls since the reset */
unsigned stub_read_calls(void);		/* vplat_key_read calls since the reset */
/* Fire Xen's special watch VPLAT_WATCH_INTRODUCE or _RELEASE (the test
 * writes or removes /local/domain/<domid> itself). */
void stub_domain_event(const char *which);
/* The next n vplat_key_list (STUB_FAIL_LIST) or vplat_watch
 * (STUB_FAIL_WATCH) calls fail with err; stub_fail_left: how many are
 * still to fail. */
enum stub_fail_op { STUB_FAIL_LIST, STUB_FAIL_WATCH, STUB_FAIL_N };
void stub_fail(enum stub_fail_op op, int err, unsigned n);
unsigned stub_fail_left(enum stub_fail_op op);
/* Revoke one grant (the ref becomes bad). */
void stub_revoke(uint32_t ref);
/* Keep up to n unmapped mappings and hand one out again when the same
 * refs are mapped (fuzz harnesses: no munmap and page faults per input);
 * 0, the default, unmaps at once.  A kept mapping is poisoned under ASan,
 * so a use after vplat_unmap is still caught.  _drop unmaps the kept. */
void stub_map_cache(unsigned n);
/* The node's budget vplat_map_limits reports, and maps stop at (a map
 * costs its runs of contiguous pages, as on the plain host); stub_reset
 * puts back 32768 maps, pages unbounded. */
void stub_map_limits(uint64_t maps, uint64_t pages);
void stub_map_cache_drop(void);
/* While held, p's watch events wait (stub_run and vplat_process skip
 * them): that side is busy, as a loaded dom0 is, while the other acts. */
void stub_hold(struct vplat *p, bool held);
/* fn(arg) once, the next time the key `path` (absolute) is read (before
 * the read: the other side acted just before this one looked) or written
 * (after the write): the ordering of two sides' xenstore calls. */
enum stub_hook_op { STUB_HOOK_READ, STUB_HOOK_WRITE, STUB_HOOK_N };
void stub_hook(enum stub_hook_op op, const char *path, void (*fn)(void *arg), void *arg);

#endif /* VRDMA_STUB_PLAT_H */
