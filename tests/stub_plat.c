// SPDX-License-Identifier: MIT
/*
 * In-process stub of the platform seam for the backend's Check suite
 * (see stub_plat.h).  Deliberately simple: linear tables, no threads.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "stub_plat.h"

/* ASan, with clang or gcc: a cached mapping is poisoned while unmapped. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STUB_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(STUB_ASAN)
#define STUB_ASAN 1
#endif
#ifdef STUB_ASAN
#include <sanitizer/asan_interface.h>
#else
#define ASAN_POISON_MEMORY_REGION(a, n)		((void)(a), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(a, n)	((void)(a), (void)(n))
#endif

#define STUB_PAGE	4096u
#define STUB_MAX_PLAT	16
#define STUB_MAX_GRANTS	65536

struct vplat {
	uint32_t domid;
	int efd;
	bool raised;		/* efd written since vplat_process read it */
	bool held;		/* stub_hold: its watch events wait */
};

struct stub_key {
	char *path, *val;
	uint32_t hash;		/* of path: most lookups need no strcmp */
	struct stub_key *next;
};

struct stub_watch {
	struct vplat *p;
	char path[VPLAT_KEY_MAX];
	vplat_watch_fn *cb;
	void *arg;
	bool pending, removed;
	struct stub_watch *next;
};

struct stub_grant {
	uint32_t owner, peer;
	int fd;
	uint32_t page;
	bool writable, live;
};

struct vplat_share {
	void *addr;
	uint32_t *refs;
	uint32_t npages;
	int fd;
};

struct vplat_map {
	void *addr;
	size_t len;
	uint8_t *live;		/* vplat_map_live: cleared at unmap */
	uint32_t *refs;		/* with the map cache: what it maps */
	uint32_t n;
	int writable;
	unsigned epoch;		/* stub_reset count when mapped */
	bool cached;		/* unmapped, kept in stub_mcache */
	uint32_t cost;		/* runs, as the plain host counts them */
};

struct stub_chan {
	uint32_t guest, port;
	int to_back, to_front;
	int refs;
};

struct vplat_chan {
	struct stub_chan *c;
	bool back;
};

static struct vplat *stub_plats[STUB_MAX_PLAT];
static struct stub_key *stub_keys;
static struct stub_watch *stub_watches;
static struct stub_grant stub_grants[STUB_MAX_GRANTS];
static uint32_t stub_next_ref = 1;
static struct stub_chan *stub_chans[256];
static unsigned stub_maps, stub_binds, stub_lists, stub_reads;
/* vplat_map_limits: the node's budget (stub_map_limits), and what the
 * live maps hold of it. */
static struct vplat_map_limits stub_mlim = { 32768, UINT64_MAX };
static uint64_t stub_mcost, stub_mpages;
/* stub_map_cache: unmapped mappings kept for the same refs, newest last. */
static struct vplat_map **stub_mcache;
static unsigned stub_mcache_n, stub_mcache_max, stub_epoch;
static struct { int err; unsigned n; } stub_fails[STUB_FAIL_N];
static struct { char path[VPLAT_KEY_MAX]; void (*fn)(void *arg); void *arg; }
	stub_hooks[STUB_HOOK_N];

void stub_fail(enum stub_fail_op op, int err, unsigned n)
{
	stub_fails[op].err = err;
	stub_fails[op].n = n;
}

unsigned stub_fail_left(enum stub_fail_op op)
{
	return stub_fails[op].n;
}

/* 0, or the error an injected failure of op gives now. */
static int stub_failing(enum stub_fail_op op)
{
	if (!stub_fails[op].n)
		return 0;
	stub_fails[op].n--;
	return stub_fails[op].err;
}

void stub_reset(void)
{
	struct stub_watch *w;
	struct stub_key *k;

	while ((k = stub_keys)) {
		stub_keys = k->next;
		free(k->path);
		free(k->val);
		free(k);
	}
	while ((w = stub_watches)) {
		stub_watches = w->next;
		free(w);
	}
	stub_map_cache_drop();
	stub_epoch++;		/* refs are handed out again from 1 */
	memset(stub_grants, 0, sizeof(stub_grants));
	stub_next_ref = 1;
	stub_lists = 0;
	stub_reads = 0;
	memset(stub_fails, 0, sizeof(stub_fails));
	memset(stub_hooks, 0, sizeof(stub_hooks));
	stub_mlim = (struct vplat_map_limits){ 32768, UINT64_MAX };
}

void stub_map_limits(uint64_t maps, uint64_t pages)
{
	stub_mlim.maps = maps;
	stub_mlim.pages = pages;
}

void vplat_map_limits(const struct vplat *p, struct vplat_map_limits *l)
{
	(void)p;
	*l = stub_mlim;
}

uint32_t vplat_map_cost(const struct vplat_map *m)
{
	return m->cost;
}

/* A live map's share of the budget: taken, or given back. */
static void stub_map_charge(const struct vplat_map *m, bool take)
{
	stub_mcost = take ? stub_mcost + m->cost : stub_mcost - m->cost;
	stub_mpages = take ? stub_mpages + m->n : stub_mpages - m->n;
}

unsigned stub_list_calls(void)
{
	return stub_lists;
}

unsigned stub_read_calls(void)
{
	return stub_reads;
}

struct vplat *stub_open(uint32_t domid)
{
	struct vplat *p = calloc(1, sizeof(*p));
	int i;

	if (!p)
		return NULL;
	p->domid = domid;
	p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	for (i = 0; i < STUB_MAX_PLAT; i++)
		if (!stub_plats[i]) {
			stub_plats[i] = p;
			return p;
		}
	abort();
}

int vplat_open(const struct vplat_cfg *cfg, struct vplat **out)
{
	*out = stub_open(cfg->role == VPLAT_DOM0_ROLE ? VPLAT_DOM0 : 1);
	return *out ? 0 : -ENOMEM;
}

void vplat_close(struct vplat *p)
{
	struct stub_watch *w;
	int i;

	for (w = stub_watches; w; w = w->next)
		if (w->p == p)
			w->removed = true;
	for (i = 0; i < STUB_MAX_PLAT; i++)
		if (stub_plats[i] == p)
			stub_plats[i] = NULL;
	close(p->efd);
	free(p);
}

const char *vplat_kind(const struct vplat *p)
{
	(void)p;
	return "stub";
}

uint32_t vplat_domid(const struct vplat *p)
{
	return p->domid;
}

int vplat_fd(const struct vplat *p)
{
	return p->efd;
}

int vplat_process(struct vplat *p)
{
	struct stub_watch *w, **pw;
	uint64_t v;
	int rounds = 0;
	bool again = true;

	if (p->held)
		return 0;
	/* One eventfd write a wakeup and no read without one: a syscall
	 * costs the fuzzers more than the backend code they exercise. */
	if (p->raised) {
		p->raised = false;
		if (read(p->efd, &v, sizeof(v)) < 0)
			v = 0;
	}
	while (again && rounds++ < 10000) {
		again = false;
		for (w = stub_watches; w; w = w->next) {
			if (w->p != p || !w->pending || w->removed)
				continue;
			w->pending = false;
			w->cb(p, w->path, w->arg);
			again = true;
			break;	/* the list may have changed */
		}
	}
	for (pw = &stub_watches; (w = *pw);) {
		if (w->removed) {
			*pw = w->next;
			free(w);
		} else {
			pw = &w->next;
		}
	}
	return 0;
}

void stub_run(void)
{
	bool busy = true;
	int i, rounds = 0;
	struct stub_watch *w;

	while (busy && rounds++ < 1000) {
		busy = false;
		for (w = stub_watches; w; w = w->next)
			if (w->pending && !w->removed && !w->p->held)
				busy = true;
		for (i = 0; i < STUB_MAX_PLAT; i++)
			if (stub_plats[i])
				vplat_process(stub_plats[i]);
	}
}

void stub_hold(struct vplat *p, bool held)
{
	p->held = held;
}

void stub_hook(enum stub_hook_op op, const char *path, void (*fn)(void *arg), void *arg)
{
	snprintf(stub_hooks[op].path, sizeof(stub_hooks[op].path), "%s", path);
	stub_hooks[op].fn = fn;
	stub_hooks[op].arg = arg;
}

/* Run (and disarm) op's hook if it is set on `path`. */
static void stub_hook_run(enum stub_hook_op op, const char *path)
{
	void (*fn)(void *arg) = stub_hooks[op].fn;

	if (!fn || strcmp(stub_hooks[op].path, path))
		return;
	stub_hooks[op].fn = NULL;
	fn(stub_hooks[op].arg);
}

unsigned stub_live_maps(void)
{
	return stub_maps;
}

unsigned stub_live_binds(void)
{
	return stub_binds;
}

/* ---- grants ---- */

int vplat_share(struct vplat *p, uint32_t peer, uint32_t npages, int writable,
		struct vplat_share **out)
{
	struct vplat_share *s;
	uint32_t i;

	if (!npages || stub_next_ref + npages >= STUB_MAX_GRANTS)
		return -ENOMEM;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->refs = calloc(npages, sizeof(*s->refs));
	s->fd = memfd_create("stub-share", MFD_CLOEXEC);
	if (!s->refs || s->fd < 0 || ftruncate(s->fd, (off_t)npages * STUB_PAGE))
		abort();
	s->addr = mmap(NULL, (size_t)npages * STUB_PAGE, PROT_READ | PROT_WRITE,
		       MAP_SHARED, s->fd, 0);
	if (s->addr == MAP_FAILED)
		abort();
	s->npages = npages;
	for (i = 0; i < npages; i++) {
		struct stub_grant *gr = &stub_grants[stub_next_ref];

		gr->owner = p->domid;
		gr->peer = peer;
		gr->fd = s->fd;
		gr->page = i;
		gr->writable = writable;
		gr->live = true;
		s->refs[i] = stub_next_ref++;
	}
	*out = s;
	return 0;
}

void *vplat_share_addr(const struct vplat_share *s)
{
	return s->addr;
}

const uint32_t *vplat_share_refs(const struct vplat_share *s)
{
	return s->refs;
}

uint32_t vplat_share_npages(const struct vplat_share *s)
{
	return s->npages;
}

void stub_revoke(uint32_t ref)
{
	if (ref < STUB_MAX_GRANTS)
		stub_grants[ref].live = false;
}

void vplat_unshare(struct vplat_share *s)
{
	uint32_t i;

	stub_map_cache_drop();	/* (a cached mapping holds the memfd) */
	for (i = 0; i < s->npages; i++)
		stub_revoke(s->refs[i]);
	munmap(s->addr, (size_t)s->npages * STUB_PAGE);
	close(s->fd);
	free(s->refs);
	free(s);
}

static void stub_map_free(struct vplat_map *m)
{
	ASAN_UNPOISON_MEMORY_REGION(m->addr, m->len);
	munmap(m->addr, m->len);
	free(m->refs);
	free(m);
}

void stub_map_cache(unsigned n)
{
	stub_map_cache_drop();
	free(stub_mcache);
	stub_mcache = n ? calloc(n, sizeof(*stub_mcache)) : NULL;
	if (n && !stub_mcache)
		abort();
	stub_mcache_max = n;
}

void stub_map_cache_drop(void)
{
	while (stub_mcache_n)
		stub_map_free(stub_mcache[--stub_mcache_n]);
}

/* A kept mapping of exactly these refs, taken out of the cache. */
static struct vplat_map *stub_map_cached(const uint32_t *refs, uint32_t n, int writable)
{
	struct vplat_map *m;
	unsigned i;

	for (i = stub_mcache_n; i-- > 0;) {
		m = stub_mcache[i];
		if (m->n != n || m->writable != writable ||
		    memcmp(m->refs, refs, n * sizeof(*refs)))
			continue;
		memmove(&stub_mcache[i], &stub_mcache[i + 1],
			(stub_mcache_n - i - 1) * sizeof(*stub_mcache));
		stub_mcache_n--;
		ASAN_UNPOISON_MEMORY_REGION(m->addr, m->len);
		m->live = NULL;
		m->cached = false;
		return m;
	}
	return NULL;
}

int vplat_map(struct vplat *p, uint32_t domid, const uint32_t *refs, uint32_t n,
	      int writable, struct vplat_map **out)
{
	struct vplat_map *m;
	uint8_t *base;
	uint32_t i, j, runs = 0;

	if (!n || n > 65536)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		const struct stub_grant *gr;

		if (!refs[i] || refs[i] >= STUB_MAX_GRANTS)
			return -EFAULT;
		gr = &stub_grants[refs[i]];
		if (!gr->live || gr->owner != domid || gr->peer != p->domid ||
		    (writable && !gr->writable))
			return -EFAULT;
		runs += !i || gr->fd != stub_grants[refs[i - 1]].fd ||
			gr->page != stub_grants[refs[i - 1]].page + 1;
	}
	/* The platform's own backstop, as hd_map's and xd_map's. */
	if (runs > stub_mlim.maps - stub_mcost || n > stub_mlim.pages - stub_mpages)
		return -ENOMEM;
	/* (refs are never reused but after stub_reset, which empties it) */
	m = stub_mcache_max ? stub_map_cached(refs, n, writable) : NULL;
	if (m) {
		stub_maps++;
		stub_map_charge(m, true);
		*out = m;
		return 0;
	}
	base = mmap(NULL, (size_t)n * STUB_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	if (base == MAP_FAILED)
		return -ENOMEM;
	/* One mmap per run of consecutive pages of one memfd, as the plain
	 * host does: fewer system calls for the fuzz harnesses. */
	for (i = 0; i < n; i = j) {
		const struct stub_grant *gr = &stub_grants[refs[i]];

		for (j = i + 1; j < n && stub_grants[refs[j]].fd == gr->fd &&
			       stub_grants[refs[j]].page == gr->page + (j - i); j++)
			;
		if (mmap(base + (size_t)i * STUB_PAGE, (size_t)(j - i) * STUB_PAGE,
			 PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED | MAP_FIXED,
			 gr->fd, (off_t)gr->page * STUB_PAGE) == MAP_FAILED)
			abort();
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		abort();
	m->addr = base;
	m->len = (size_t)n * STUB_PAGE;
	m->n = n;
	m->writable = writable;
	m->epoch = stub_epoch;
	m->cost = runs;
	stub_map_charge(m, true);
	if (stub_mcache_max) {
		m->refs = malloc(n * sizeof(*refs));
		if (!m->refs)
			abort();
		memcpy(m->refs, refs, n * sizeof(*refs));
	}
	stub_maps++;
	*out = m;
	return 0;
}

void *vplat_map_addr(const struct vplat_map *m)
{
	return m->addr;
}

/* As the plain host: cleared at unmap, nothing else dies here. */
int vplat_map_live(struct vplat_map *m, size_t off, struct vplat_chan *c)
{
	(void)c;
	if (off >= m->len)
		return -EINVAL;
	m->live = (uint8_t *)m->addr + off;
	return 0;
}

/* Worth keeping: the cache is on and every ref still names what m maps. */
static bool stub_map_keep(const struct vplat_map *m)
{
	uint32_t i;

	if (!m->refs || !stub_mcache_max || m->epoch != stub_epoch)
		return false;
	for (i = 0; i < m->n; i++)
		if (!stub_grants[m->refs[i]].live)
			return false;
	return true;
}

void vplat_unmap(struct vplat_map *m)
{
	if (m->cached)
		abort();	/* unmapped twice */
	if (m->live)
		__atomic_store_n(m->live, 0, __ATOMIC_RELEASE);
	stub_maps--;
	stub_map_charge(m, false);
	if (!stub_map_keep(m)) {
		stub_map_free(m);
		return;
	}
	/* Kept: a use after the unmap is ASan's use-after-poison. */
	if (stub_mcache_n == stub_mcache_max) {
		stub_map_free(stub_mcache[0]);
		memmove(&stub_mcache[0], &stub_mcache[1],
			--stub_mcache_n * sizeof(*stub_mcache));
	}
	ASAN_POISON_MEMORY_REGION(m->addr, m->len);
	m->cached = true;
	stub_mcache[stub_mcache_n++] = m;
}

/* ---- channels ---- */

int vplat_chan_alloc(struct vplat *p, uint32_t peer, struct vplat_chan **out,
		     uint32_t *port)
{
	struct stub_chan *c = calloc(1, sizeof(*c));
	struct vplat_chan *h = calloc(1, sizeof(*h));
	uint32_t i;

	(void)peer;
	if (!c || !h)
		abort();
	for (i = 1; i < 256 && stub_chans[i]; i++)
		;
	if (i == 256)
		abort();
	c->guest = p->domid;
	c->port = i;
	c->to_back = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	c->to_front = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	c->refs = 1;
	stub_chans[i] = c;
	h->c = c;
	*port = i;
	*out = h;
	return 0;
}

int vplat_chan_bind(struct vplat *p, uint32_t domid, uint32_t port,
		    struct vplat_chan **out)
{
	struct vplat_chan *h;

	(void)p;
	if (port >= 256 || !stub_chans[port] || stub_chans[port]->guest != domid)
		return -ENOENT;
	h = calloc(1, sizeof(*h));
	if (!h)
		abort();
	h->c = stub_chans[port];
	h->back = true;
	h->c->refs++;
	stub_binds++;
	*out = h;
	return 0;
}

int vplat_notify(struct vplat_chan *c)
{
	uint64_t one = 1;

	if (write(c->back ? c->c->to_front : c->c->to_back, &one, sizeof(one)) < 0)
		return -errno;
	return 0;
}

int vplat_chan_fd(const struct vplat_chan *c)
{
	return c->back ? c->c->to_back : c->c->to_front;
}

int vplat_chan_ack(struct vplat_chan *c)
{
	uint64_t v;

	return read(vplat_chan_fd(c), &v, sizeof(v)) == sizeof(v);
}

int vplat_chan_wait(struct vplat_chan *c, int timeout_ms)
{
	struct pollfd pfd = { .fd = vplat_chan_fd(c), .events = POLLIN };

	if (timeout_ms < 0)
		return -EINVAL;
	if (poll(&pfd, 1, timeout_ms) <= 0)
		return -ETIMEDOUT;
	vplat_chan_ack(c);
	return 0;
}

void vplat_chan_close(struct vplat_chan *h)
{
	struct stub_chan *c = h->c;

	if (h->back)
		stub_binds--;
	else
		stub_chans[c->port] = NULL;
	if (--c->refs == 0) {
		close(c->to_back);
		close(c->to_front);
		free(c);
	}
	free(h);
}

/* ---- keys ---- */

static void stub_path(struct vplat *p, const char *path, char *out)
{
	if (path[0] == '/' || path[0] == '@')	/* '@': Xen's special watches */
		snprintf(out, VPLAT_KEY_MAX, "%s", path);
	else
		snprintf(out, VPLAT_KEY_MAX, "/local/domain/%u/%s", p->domid, path);
}

/* Is `a` equal to `b` or below it? */
static bool stub_under(const char *a, const char *b)
{
	size_t n = strlen(b);

	return !strncmp(a, b, n) && (a[n] == '\0' || a[n] == '/');
}

static void stub_raise(struct vplat *p)
{
	uint64_t one = 1;

	if (p->raised)
		return;
	p->raised = true;
	if (write(p->efd, &one, sizeof(one)) < 0)
		abort();
}

static void stub_fire(const char *path)
{
	struct stub_watch *w;

	for (w = stub_watches; w; w = w->next)
		if (!w->removed && (stub_under(path, w->path) || stub_under(w->path, path))) {
			w->pending = true;
			stub_raise(w->p);
		}
}

/* FNV-1a.  The fuzz harnesses look keys up by the thousand: strcmp on
 * each costs them much of their time (libFuzzer hooks it). */
static uint32_t stub_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

static struct stub_key *stub_find(const char *path)
{
	uint32_t h = stub_hash(path);
	struct stub_key *k;

	for (k = stub_keys; k; k = k->next)
		if (k->hash == h && !strcmp(k->path, path))
			return k;
	return NULL;
}

int vplat_key_write(struct vplat *p, const char *path, const char *val)
{
	char full[VPLAT_KEY_MAX];
	struct stub_key *k;

	stub_path(p, path, full);
	k = stub_find(full);
	if (!k) {
		k = calloc(1, sizeof(*k));
		if (!k)
			return -ENOMEM;
		k->path = strdup(full);
		k->hash = stub_hash(full);
		k->next = stub_keys;
		stub_keys = k;
	}
	free(k->val);
	k->val = strdup(val);
	stub_fire(full);
	stub_hook_run(STUB_HOOK_WRITE, full);
	return 0;
}

int vplat_key_printf(struct vplat *p, const char *path, const char *fmt, ...)
{
	char val[VPLAT_VAL_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	return vplat_key_write(p, path, val);
}

int vplat_key_read(struct vplat *p, const char *path, char *buf, size_t len)
{
	char full[VPLAT_KEY_MAX];
	struct stub_key *k;

	stub_reads++;
	stub_path(p, path, full);
	stub_hook_run(STUB_HOOK_READ, full);
	k = stub_find(full);
	if (!k)
		return -ENOENT;
	if (strlen(k->val) >= len)
		return -ERANGE;
	strcpy(buf, k->val);
	return 0;
}

/* The platform's parser: the backend sees keys as it does on a real one. */
int vplat_key_read_u32(struct vplat *p, const char *path, uint32_t *val)
{
	char buf[32];
	int err = vplat_key_read(p, path, buf, sizeof(buf));

	return err ? err : vplat_parse_u32(buf, val);
}

int vplat_key_rm(struct vplat *p, const char *path)
{
	char full[VPLAT_KEY_MAX];
	struct stub_key *k, **pk;

	stub_path(p, path, full);
	for (pk = &stub_keys; (k = *pk);) {
		if (stub_under(k->path, full)) {
			*pk = k->next;
			free(k->path);
			free(k->val);
			free(k);
		} else {
			pk = &k->next;
		}
	}
	stub_fire(full);
	return 0;
}

/* One process: nothing runs between the compare and the write. */
int vplat_key_cas(struct vplat *p, const char *path, const char *old, const char *val)
{
	char cur[VPLAT_VAL_MAX];
	int r = vplat_key_read(p, path, cur, sizeof(cur));

	if (r && r != -ENOENT)
		return r;
	if (old ? r || strcmp(cur, old) : !r)
		return -EEXIST;
	return vplat_key_write(p, path, val);
}

int vplat_key_list(struct vplat *p, const char *path, char *buf, size_t len,
		   unsigned *count)
{
	char full[VPLAT_KEY_MAX], name[VPLAT_KEY_MAX];
	struct stub_key *k;
	size_t used = 0, n;
	bool found = false;

	int err;

	stub_lists++;
	err = stub_failing(STUB_FAIL_LIST);
	if (err)
		return err;
	stub_path(p, path, full);
	n = strlen(full);
	*count = 0;
	buf[0] = '\0';
	for (k = stub_keys; k; k = k->next) {
		const char *d;
		bool dup = false;

		if (!stub_under(k->path, full) || !k->path[n])
			continue;
		found = true;
		snprintf(name, sizeof(name), "%s", k->path + n + 1);
		if (strchr(name, '/'))
			*strchr(name, '/') = '\0';
		for (d = buf; *d; d += strlen(d) + 1)
			if (!strcmp(d, name))
				dup = true;
		if (dup)
			continue;
		if (used + strlen(name) + 2 > len)
			return -ERANGE;
		strcpy(buf + used, name);
		used += strlen(name) + 1;
		buf[used] = '\0';
		(*count)++;
	}
	return found ? 0 : -ENOENT;
}

void stub_domain_event(const char *which)
{
	stub_fire(which);
}

int vplat_watch(struct vplat *p, const char *path, vplat_watch_fn *cb, void *arg)
{
	struct stub_watch *w;
	int err = stub_failing(STUB_FAIL_WATCH);

	if (err)
		return err;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->p = p;
	stub_path(p, path, w->path);
	w->cb = cb;
	w->arg = arg;
	w->pending = true;
	w->next = stub_watches;
	stub_watches = w;
	stub_raise(p);
	return 0;
}

void vplat_unwatch(struct vplat *p, const char *path, void *arg)
{
	char full[VPLAT_KEY_MAX];
	struct stub_watch *w;

	stub_path(p, path, full);
	for (w = stub_watches; w; w = w->next)
		if (w->p == p && w->arg == arg && !strcmp(w->path, full))
			w->removed = true;
}

int vplat_key_wait(struct vplat *p, const char *path, const char *want,
		   const char *const *stop, int timeout_ms)
{
	char val[VPLAT_VAL_MAX];
	int64_t end = vplat_now_ms() + timeout_ms;

	do {
		stub_run();
		if (!vplat_key_read(p, path, val, sizeof(val))) {
			if (!strcmp(val, want))
				return 0;
			for (; stop && *stop; stop++)
				if (!strcmp(val, *stop))
					return -ECONNRESET;
		}
	} while (vplat_now_ms() < end);
	return -ETIMEDOUT;
}

int64_t vplat_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
