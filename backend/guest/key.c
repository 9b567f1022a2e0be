// SPDX-License-Identifier: MIT
/*
 * Memory keys (issue 12): an lkey/rkey is one random 32-bit draw whose
 * low VBE_KEY_IDX_BITS name a key slot (vbe.h), redrawn while that slot
 * is taken.  So the key is uniform over the keys of free slots: its tag's
 * 19 bits and log2(free slots) >= 12 bits are unpredictable, >= 31 in
 * all.  The lookup indexes the key map by the slot bits and compares the
 * whole key.
 *
 * A key's tag also places its MR on the RDMA device: the device window
 * is the key slot with the tag's low VBE_KEY_WIN_TAG_BITS (vbe.h,
 * backend/device/verbs.h).  Those bits are never 0 or all ones
 * (vbe_key_wtag_ok) and never those of the slot's previous
 * key, which vbe_key_wtags remembers per slot: a peer's cached
 * translation of that key, whose device rkey the driver may hand to
 * the slot's next MR, then aims at a window that MR is not in.  That
 * takes 3 of the 2^15 window tags out of a draw: less than 0.001 bit of
 * the key's unpredictable ones.
 *
 * The random bits come from the kernel's CSPRNG (getrandom(2)) in
 * batches, so a registration costs a few loads, not a system call.  It
 * never blocks: before the kernel's pool is ready (early boot) the call
 * fails and REG_MR is refused with NOMEM rather than made guessable.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "log.h"
#include "../vbe.h"

/* n bytes of the node's pool: 0 or -errno (EAGAIN: kernel pool not ready). */
static int vbe_rng_take(struct vbe_node *n, uint8_t *out, size_t len)
{
	struct vbe_rng *r = &n->rng;
	ssize_t got;

	if (r->left < len) {
		got = (r->fill ? r->fill : getrandom)(r->buf, sizeof(r->buf), GRND_NONBLOCK);
		if (got < 0 || (size_t)got < len) {
			int err = got < 0 ? errno : EAGAIN;

			if (!r->warned++)
				vlog_warn("getrandom: %s: memory registrations refused until"
					  " the kernel's random pool is ready", strerror(err));
			return -err;
		}
		r->left = (uint32_t)got;
	}
	/* Taken from the end; used bytes are wiped (a core dump of vrdmad
	 * should not hold keys a guest has not been given yet). */
	r->left -= (uint32_t)len;
	memcpy(out, r->buf + r->left, len);
	explicit_bzero(r->buf + r->left, len);
	return 0;
}

/* Draws per registration before giving up: each finds a free key slot
 * with probability >= 1/2 (vbe.h), so all of them fail once in 2^64. */
#define VBE_KEY_DRAWS	64

int vbe_key_new(struct vbe_guest *g, uint32_t idx, uint32_t *key)
{
	uint32_t old = g->mrs[idx].key, k, w, i;
	uint16_t *wtags = vbe_key_wtags(g);
	const struct vbe_mr *m;
	uint8_t b[4];
	int rc;

	for (i = 0; i < VBE_KEY_DRAWS; i++) {
		rc = vbe_rng_take(g->node, b, sizeof(b));
		if (rc)
			return rc;
		k = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
		    (uint32_t)b[3] << 24;
		m = vbe_mr_key(g, k);
		w = vbe_key_wtag(k);
		/* Window tags 0 and all ones are never used (vbe_key_wtag_ok;
		 * so no tag 0 either: key 0 marks an empty key-table entry),
		 * nor the slot's previous key's
		 * (so never that key: a stale key then fails for sure).  Never
		 * the MR's previous key (vbe_vx_guest_sync tells a replaced MR
		 * by its key).  A taken slot is redrawn as a whole, so the slot
		 * stays uniform (MR idx is taken already: its previous slot is
		 * free for it). */
		if (!vbe_key_wtag_ok(k) || w == wtags[vbe_key_idx(k)] || k == old ||
		    (m != &g->mrs[idx] && m->s.used && vbe_key_idx(m->key) == vbe_key_idx(k)))
			continue;
		wtags[vbe_key_idx(k)] = (uint16_t)w;
		*key = k;
		return 0;
	}
	return -EAGAIN;
}

/* The waiter's one blocking getrandom: it makes Linux (>= 5.18) seed the
 * pool at once from CPU jitter, which a GRND_NONBLOCK caller never does
 * (a fresh VM without a hardware RNG can go minutes without it). */
static pthread_mutex_t vbe_seed_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t vbe_seed_cond = PTHREAD_COND_INITIALIZER;
static bool vbe_seeded;

static void *vbe_seed_thread(void *arg)
{
	uint8_t b;

	(void)arg;
	while (getrandom(&b, 1, 0) < 0 && errno == EINTR)
		;
	pthread_mutex_lock(&vbe_seed_lock);
	vbe_seeded = true;
	pthread_cond_broadcast(&vbe_seed_cond);
	pthread_mutex_unlock(&vbe_seed_lock);
	return NULL;
}

int vbe_rng_wait(int timeout_ms)
{
	struct timespec ts;
	pthread_attr_t at;
	pthread_t th;
	uint8_t b;
	int rc = 0;

	if (getrandom(&b, 1, GRND_NONBLOCK) == 1)
		return 0;
	vlog_info("waiting up to %d ms for the kernel's random pool (memory keys)",
		  timeout_ms);
	if (pthread_attr_init(&at))
		return -ENOMEM;
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	rc = -pthread_create(&th, &at, vbe_seed_thread, NULL);
	pthread_attr_destroy(&at);
	if (rc)
		return rc;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&vbe_seed_lock);
	while (!vbe_seeded && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&vbe_seed_cond, &vbe_seed_lock, &ts);
	rc = vbe_seeded ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&vbe_seed_lock);
	return rc;
}
