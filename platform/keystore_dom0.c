// SPDX-License-Identifier: MIT
/*
 * In-memory xenstore for the plain host.  A flat table of (path, value)
 * pairs and a flat table of watches.  Exact lookups (read, write) go
 * through a hash index and per-owner counts are kept, so a full store
 * (HD_MAX_GUESTS x HD_MAX_KEYS) does not cost a scan per operation
 * (review I6); list, remove and directory reads still scan, they are
 * rare.  Parents are implicit: a path with children but no value reads
 * as "" (xenstore directories).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "keystore.h"
#include "vplat.h"

struct ks_ent {
	char *path;
	char *val;
	uint32_t owner;
};

struct ks_watch {
	char *path;
	void *owner;
	uint64_t token;
};

/* Keys held per owner (domid), against ks_write's max_owned. */
struct ks_own {
	uint32_t owner;
	unsigned n;
};

struct ks {
	struct ks_ent *ents;
	size_t nents, cap;
	uint32_t *hash;			/* entry index + 1, 0 = empty; open addressing */
	size_t hsize;			/* power of two, >= 2 * cap */
	struct ks_own *owns;
	size_t nowns, ocap;
	struct ks_watch *watches;
	size_t nwatches, wcap;
	ks_fire_fn *fire;
	void *fire_arg;
};

int ks_new(ks_fire_fn *fire, void *arg, struct ks **out)
{
	struct ks *ks = calloc(1, sizeof(*ks));

	if (!ks)
		return -ENOMEM;
	ks->fire = fire;
	ks->fire_arg = arg;
	*out = ks;
	return 0;
}

void ks_free(struct ks *ks)
{
	size_t i;

	if (!ks)
		return;
	for (i = 0; i < ks->nents; i++) {
		free(ks->ents[i].path);
		free(ks->ents[i].val);
	}
	for (i = 0; i < ks->nwatches; i++)
		free(ks->watches[i].path);
	free(ks->ents);
	free(ks->hash);
	free(ks->owns);
	free(ks->watches);
	free(ks);
}

static int ks_comp_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' ||
	       c == ':' || c == '@';
}

int ks_path_ok(const char *path)
{
	const char *p = path, *comp;
	size_t len = strnlen(path, VPLAT_KEY_MAX);

	if (len == 0 || len >= VPLAT_KEY_MAX || path[0] != '/')
		return 0;
	if (len == 1)
		return 1;
	while (*p == '/') {
		comp = ++p;
		while (ks_comp_char_ok(*p))
			p++;
		if (p == comp)
			return 0;	/* empty component or trailing '/' */
		if ((p - comp == 1 && comp[0] == '.') ||
		    (p - comp == 2 && comp[0] == '.' && comp[1] == '.'))
			return 0;
	}
	return *p == '\0';
}

int ks_path_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* FNV-1a: paths are short and not chosen to collide with our seed-less
 * table any better than the per-owner key limit allows. */
static size_t ks_hash(const char *path)
{
	uint32_t h = 2166136261u;

	while (*path)
		h = (h ^ (uint8_t)*path++) * 16777619u;
	return h;
}

static void ks_hash_put(struct ks *ks, size_t idx)
{
	size_t m = ks->hsize - 1, i = ks_hash(ks->ents[idx].path) & m;

	while (ks->hash[i])
		i = (i + 1) & m;
	ks->hash[i] = (uint32_t)idx + 1;
}

/* Rebuild the index for at least `cap` entries (growth, after removals). */
static int ks_rehash(struct ks *ks, size_t cap)
{
	size_t size = ks->hsize ? ks->hsize : 128, i;
	uint32_t *h;

	while (size < 2 * cap)
		size *= 2;
	h = calloc(size, sizeof(*h));
	if (!h)
		return -ENOMEM;
	free(ks->hash);
	ks->hash = h;
	ks->hsize = size;
	for (i = 0; i < ks->nents; i++)
		ks_hash_put(ks, i);
	return 0;
}

static struct ks_ent *ks_find(struct ks *ks, const char *path)
{
	size_t m = ks->hsize - 1, i;

	if (!ks->hsize)
		return NULL;
	for (i = ks_hash(path) & m; ks->hash[i]; i = (i + 1) & m)
		if (strcmp(ks->ents[ks->hash[i] - 1].path, path) == 0)
			return &ks->ents[ks->hash[i] - 1];
	return NULL;
}

static struct ks_own *ks_own(struct ks *ks, uint32_t owner)
{
	size_t i;

	for (i = 0; i < ks->nowns; i++)
		if (ks->owns[i].owner == owner)
			return &ks->owns[i];
	return NULL;
}

static int ks_own_add(struct ks *ks, uint32_t owner)
{
	struct ks_own *o = ks_own(ks, owner);

	if (!o) {
		if (ks->nowns == ks->ocap) {
			size_t ncap = ks->ocap ? ks->ocap * 2 : 16;
			struct ks_own *n = realloc(ks->owns, ncap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			ks->owns = n;
			ks->ocap = ncap;
		}
		o = &ks->owns[ks->nowns++];
		o->owner = owner;
		o->n = 0;
	}
	o->n++;
	return 0;
}

static void ks_own_drop(struct ks *ks, uint32_t owner)
{
	struct ks_own *o = ks_own(ks, owner);

	if (o && !--o->n)
		*o = ks->owns[--ks->nowns];
}

/* Fire every watch at or above path; also below it when removing. */
static void ks_fire(struct ks *ks, const char *path, int removed)
{
	size_t i;

	for (i = 0; i < ks->nwatches; i++) {
		struct ks_watch *w = &ks->watches[i];

		if (ks_path_below(path, w->path))
			ks->fire(ks->fire_arg, w->owner, w->token, path);
		else if (removed && ks_path_below(w->path, path))
			ks->fire(ks->fire_arg, w->owner, w->token, w->path);
	}
}

static unsigned ks_count_owner(struct ks *ks, uint32_t owner)
{
	struct ks_own *o = ks_own(ks, owner);

	return o ? o->n : 0;
}

int ks_write(struct ks *ks, const char *path, const char *val, uint32_t owner,
	     unsigned max_owned)
{
	struct ks_ent *e;
	char *v;

	if (!ks_path_ok(path) || strlen(path) == 1)
		return -EINVAL;
	if (strnlen(val, VPLAT_VAL_MAX) >= VPLAT_VAL_MAX)
		return -E2BIG;
	v = strdup(val);
	if (!v)
		return -ENOMEM;
	e = ks_find(ks, path);
	if (e) {
		free(e->val);
		e->val = v;
		goto fire;
	}
	if (max_owned && ks_count_owner(ks, owner) >= max_owned) {
		free(v);
		return -ENOSPC;
	}
	if (ks->nents == ks->cap) {
		size_t ncap = ks->cap ? ks->cap * 2 : 64;
		struct ks_ent *n = realloc(ks->ents, ncap * sizeof(*n));

		if (!n) {
			free(v);
			return -ENOMEM;
		}
		ks->ents = n;
		ks->cap = ncap;
	}
	/* Keep the index at most half full. */
	if (ks->hsize < 2 * ks->cap && ks_rehash(ks, ks->cap)) {
		free(v);
		return -ENOMEM;
	}
	e = &ks->ents[ks->nents];
	e->path = strdup(path);
	if (!e->path || ks_own_add(ks, owner)) {
		free(e->path);
		free(v);
		return -ENOMEM;
	}
	e->val = v;
	e->owner = owner;
	ks_hash_put(ks, ks->nents);
	ks->nents++;
fire:
	ks_fire(ks, path, 0);
	return 0;
}

int ks_read(struct ks *ks, const char *path, char *buf, size_t len)
{
	struct ks_ent *e = ks_find(ks, path);
	size_t i, n;

	if (!e) {
		for (i = 0; i < ks->nents; i++)
			if (ks_path_below(ks->ents[i].path, path))
				break;
		if (i == ks->nents)
			return -ENOENT;
		if (len)
			buf[0] = '\0';
		return 0;
	}
	n = strlen(e->val);
	if (n + 1 > len)
		return -E2BIG;
	memcpy(buf, e->val, n + 1);
	return (int)n;
}

int ks_rm(struct ks *ks, const char *path)
{
	size_t i = 0;
	int found = 0;

	while (i < ks->nents) {
		struct ks_ent *e = &ks->ents[i];

		if (!ks_path_below(e->path, path)) {
			i++;
			continue;
		}
		free(e->path);
		free(e->val);
		ks_own_drop(ks, e->owner);
		ks->ents[i] = ks->ents[--ks->nents];
		found = 1;
	}
	if (!found)
		return -ENOENT;
	/* Entries moved: rebuild the index (same size, cannot fail). */
	memset(ks->hash, 0, ks->hsize * sizeof(*ks->hash));
	for (i = 0; i < ks->nents; i++)
		ks_hash_put(ks, i);
	ks_fire(ks, path, 1);
	return 0;
}

/* Is name (length n) already in the "a\0b\0" buffer of used bytes? */
static int ks_listed(const char *buf, size_t used, const char *name, size_t n)
{
	size_t off = 0;

	while (off < used) {
		size_t l = strlen(buf + off);

		if (l == n && memcmp(buf + off, name, n) == 0)
			return 1;
		off += l + 1;
	}
	return 0;
}

int ks_list(struct ks *ks, const char *path, char *buf, size_t len, unsigned *count)
{
	size_t plen = strlen(path), used = 0, i;

	if (plen == 1)
		plen = 0;	/* root: children start right after "/" */
	*count = 0;
	for (i = 0; i < ks->nents; i++) {
		const char *p = ks->ents[i].path, *name, *end;
		size_t n;

		if (!ks_path_below(p, path) || p[plen] != '/')
			continue;
		name = p + plen + 1;
		end = strchr(name, '/');
		n = end ? (size_t)(end - name) : strlen(name);
		if (ks_listed(buf, used, name, n))
			continue;
		if (used + n + 1 > len)
			return -E2BIG;
		memcpy(buf + used, name, n);
		buf[used + n] = '\0';
		used += n + 1;
		(*count)++;
	}
	return (int)used;
}

int ks_watch(struct ks *ks, const char *path, void *owner, uint64_t token)
{
	struct ks_watch *w;

	if (!ks_path_ok(path))
		return -EINVAL;
	if (ks->nwatches == ks->wcap) {
		size_t ncap = ks->wcap ? ks->wcap * 2 : 16;
		struct ks_watch *n = realloc(ks->watches, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		ks->watches = n;
		ks->wcap = ncap;
	}
	w = &ks->watches[ks->nwatches];
	w->path = strdup(path);
	if (!w->path)
		return -ENOMEM;
	w->owner = owner;
	w->token = token;
	ks->nwatches++;
	/* xenstore fires every new watch once, so callers need no initial read race. */
	ks->fire(ks->fire_arg, owner, token, path);
	return 0;
}

static void ks_unwatch_if(struct ks *ks, void *owner, int any_token, uint64_t token)
{
	size_t i = 0;

	while (i < ks->nwatches) {
		struct ks_watch *w = &ks->watches[i];

		if (w->owner != owner || (!any_token && w->token != token)) {
			i++;
			continue;
		}
		free(w->path);
		ks->watches[i] = ks->watches[--ks->nwatches];
	}
}

void ks_unwatch(struct ks *ks, void *owner, uint64_t token)
{
	ks_unwatch_if(ks, owner, 0, token);
}

void ks_unwatch_owner(struct ks *ks, void *owner)
{
	ks_unwatch_if(ks, owner, 1, 0);
}

unsigned ks_watch_count(struct ks *ks, void *owner)
{
	unsigned n = 0;
	size_t i;

	for (i = 0; i < ks->nwatches; i++)
		n += ks->watches[i].owner == owner;
	return n;
}
