/* SPDX-License-Identifier: MIT */
/*
 * The plain host's xenstore: an in-memory key store inside vrdmad with
 * xenstore paths and watch semantics.  No permissions here; the caller
 * (host_dom0.c) decides who may touch what.  Single-threaded.
 */
#ifndef VRDMA_KEYSTORE_H
#define VRDMA_KEYSTORE_H

#include <stddef.h>
#include <stdint.h>

struct ks;

/*
 * A watch fired: owner/token are what ks_watch() was given, path is what
 * changed (or the watched path itself at registration).  Must not call
 * back into the store: queue the event and deliver it later.
 */
typedef void ks_fire_fn(void *arg, void *owner, uint64_t token, const char *path);

int  ks_new(ks_fire_fn *fire, void *arg, struct ks **out);
void ks_free(struct ks *ks);

/* "/" or "/comp(/comp)*", comps of [A-Za-z0-9_.:@-], no "." or "..". */
int  ks_path_ok(const char *path);
/* path is dir or lies below it (component-wise). */
int  ks_path_below(const char *path, const char *dir);

/* Create or replace; a new key counts against owner, refused with -ENOSPC
 * once owner holds max_owned keys (0 = no limit). */
int  ks_write(struct ks *ks, const char *path, const char *val, uint32_t owner,
	      unsigned max_owned);
/* Value length, or -ENOENT; a directory without a value reads as "". */
int  ks_read(struct ks *ks, const char *path, char *buf, size_t len);
/* Remove path and its subtree; -ENOENT if nothing was there. */
int  ks_rm(struct ks *ks, const char *path);
/* Child names "a\0b\0" (not double-terminated); bytes used or -E2BIG. */
int  ks_list(struct ks *ks, const char *path, char *buf, size_t len, unsigned *count);

/* Fires once now, then on every change at or below path (or of a parent
 * that is removed). */
int  ks_watch(struct ks *ks, const char *path, void *owner, uint64_t token);
void ks_unwatch(struct ks *ks, void *owner, uint64_t token);
void ks_unwatch_owner(struct ks *ks, void *owner);
unsigned ks_watch_count(struct ks *ks, void *owner);

#endif /* VRDMA_KEYSTORE_H */
