// SPDX-License-Identifier: MIT
/*
 * In-memory xenstore for the plain host.  A flat table of (path, value)
 * pairs and a flat table of watches: the store holds a few keys per guest
 * and linear scans keep it obviously correct.  Parents are implicit: a
 * path with children but no value reads as "" (xenstore directories).
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

struct ks {
	struct ks_ent *ents;
	size_t nents, cap;
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

static struct ks_ent *ks_find(struct ks *ks, const char *path)
{
	size_t i;

	for (i = 0; i < ks->nents; i++)
		if (strcmp(ks->ents[i].path, path) == 0)
			return &ks->ents[i];
	return NULL;
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
	unsigned n = 0;
	size_t i;

	for (i = 0; i < ks->nents; i++)
		n += ks->ents[i].owner == owner;
	return n;
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
	e = &ks->ents[ks->nents];
	e->path = strdup(path);
	if (!e->path) {
		free(v);
		return -ENOMEM;
	}
	e->val = v;
	e->owner = owner;
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
		ks->ents[i] = ks->ents[--ks->nents];
		found = 1;
	}
	if (!found)
		return -ENOENT;
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
