// SPDX-License-Identifier: MIT
/*
 * Memory keys (issue 12): an lkey/rkey is VBE_KEY_TAG_BITS random bits
 * above the MR's slot index (vbe.h).  The lookup indexes by the low bits
 * and compares the whole key, so a guess must hit 24 bits nobody outside
 * dom0 saw: one try in 2^24, whatever the guesser knows about slots.
 *
 * The random bits come from the kernel's CSPRNG (getrandom(2)) in
 * batches, so a registration costs a few loads, not a system call.  It
 * never blocks: before the kernel's pool is ready (early boot) the call
 * fails and REG_MR is refused with NOMEM rather than made guessable.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "log.h"
#include "vbe.h"

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

int vbe_key_new(struct vbe_node *n, uint32_t idx, uint32_t old, uint32_t *key)
{
	uint8_t b[3] = { 0 };
	uint32_t tag;
	int rc;

	_Static_assert(VBE_KEY_TAG_BITS == 8 * sizeof(b), "tag bytes");
	do {
		rc = vbe_rng_take(n, b, sizeof(b));
		if (rc)
			return rc;
		tag = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16;
		*key = tag << VBE_KEY_IDX_BITS | idx;
		/* Tag 0 is never used (key 0 marks an empty key-table entry).
		 * Never the slot's previous key: a stale key then fails for
		 * sure, and vbe_vx_guest_sync tells a replaced MR by its key. */
	} while (!tag || *key == old);
	return 0;
}
