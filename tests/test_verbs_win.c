// SPDX-License-Identifier: MIT
/*
 * Check suite for the device windows of backend/device/verbs.h: each
 * device MR sits at win(K) << 36 | page offset, win(K) being the key's
 * slot and the low 15 bits of its tag, so every MR vrdma allows (64 GiB)
 * is reachable from another node.  Key-table entries carry lengths up to
 * 64 GiB (byte 25: length bits 32..39); a translation that passes never
 * leaves its key's window; two keys of one key slot whose window tags
 * differ (key.c's rule for a slot's next key) never share a byte of
 * device address space.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../backend/device/verbs.h"
#include "ck_run.h"

#define GIB		(1ull << 30)
#define RW		(VRDMA_ACC_LOCAL_WRITE | VRDMA_ACC_REMOTE_WRITE | VRDMA_ACC_REMOTE_READ)

static struct vbe_rkt ent(uint32_t gkey, uint64_t iova, uint64_t len, uint32_t pgoff)
{
	struct vbe_rkt e = {
		.gkey = gkey, .rkey = 0x4d00, .iova = iova, .length = len,
		.access = RW, .pd = 3, .pgoff = pgoff,
	};
	return e;
}

static bool same(const struct vbe_rkt *a, const struct vbe_rkt *b)
{
	return a->gkey == b->gkey && a->rkey == b->rkey && a->iova == b->iova &&
	       a->length == b->length && a->access == b->access && a->pd == b->pd &&
	       a->pgoff == b->pgoff;
}

/* The entry's bytes with one byte changed and the check word made to fit
 * again: what a broken or lying peer can send that passes the sum. */
static void poke(uint8_t *buf, unsigned i, uint8_t v)
{
	uint32_t sum;

	buf[i] = v;
	sum = vbe_vx_rkt_sum(buf);
	buf[28] = (uint8_t)sum;
	buf[29] = (uint8_t)(sum >> 8);
	buf[30] = (uint8_t)(sum >> 16);
	buf[31] = (uint8_t)(sum >> 24);
}

/* xorshift32: reproducible "random" mixes. */
static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* A key as key.c makes them: window tag neither 0 nor all ones. */
static uint32_t rnd_key(uint32_t *s)
{
	uint32_t k;

	do
		k = rnd(s);
	while (!vbe_key_wtag_ok(k));
	return k;
}

START_TEST(test_win_layout)
{
	const uint32_t K = 0xa5c3e105u;		/* tag 0x52e1f, key slot 0x105 */

	ck_assert_uint_eq(VBE_VX_WIN_BITS, 28);
	ck_assert(VBE_VX_WIN_LEN == 64 * GIB);
	ck_assert(VBE_VX_MR_MAX == (uint64_t)VRDMA_BUF_MAX_PAGES_IND * VRDMA_PAGE_SIZE);
	ck_assert_uint_eq(vbe_vx_win(K), 0x5c3e105);
	ck_assert_uint_eq(vbe_key_wtag(K), 0x2e1f);
	ck_assert(vbe_vx_va(K, 0x123) == ((uint64_t)0x5c3e105 << 36 | 0x123));
	/* Tag bits 15..18 are not in the window: the same window... */
	ck_assert(vbe_vx_va(K ^ 1u << 31, 0) == vbe_vx_va(K, 0));
	ck_assert(vbe_vx_va(K ^ 1u << 28, 0) == vbe_vx_va(K, 0));
	/* ... every other bit is. */
	for (unsigned bit = 0; bit < VBE_VX_WIN_BITS; bit++)
		ck_assert(vbe_vx_va(K ^ 1u << bit, 0) != vbe_vx_va(K, 0));
	/* The lowest window a key can have (window tag 1, slot 0) starts past
	 * the key table at iova 0; the last one ends at 2^64 exactly. */
	ck_assert(vbe_vx_va(1u << VBE_KEY_IDX_BITS, 0) >= (uint64_t)VBE_KEY_SLOTS * VBE_VX_RKT_ENT);
	ck_assert(vbe_vx_va(UINT32_MAX, 0) + (VBE_VX_WIN_LEN - 1) == UINT64_MAX);
	ck_assert(vbe_vx_win_fits(0, VBE_VX_WIN_LEN));
	ck_assert(vbe_vx_win_fits(VRDMA_PAGE_SIZE - 1, VBE_VX_WIN_LEN - (VRDMA_PAGE_SIZE - 1)));
	ck_assert(!vbe_vx_win_fits(1, VBE_VX_WIN_LEN));
	ck_assert(!vbe_vx_win_fits(VRDMA_PAGE_SIZE, 1));
}
END_TEST

/* An MR of 64 GiB, vrdma's largest: its entry round-trips with length
 * bits 32..39 in byte 25, and its first and last bytes translate. */
START_TEST(test_win_64g_entry)
{
	const uint32_t K = 0x3ac01fffu;
	const uint64_t iova = 0x7f0000000000ull;
	struct vbe_rkt e = ent(K, iova, VBE_VX_MR_MAX, 0), o;
	_Alignas(8) uint8_t buf[VBE_VX_RKT_ENT];
	uint64_t va;

	vbe_vx_rkt_pack(&e, buf);
	ck_assert_uint_eq(buf[16] | buf[17] | buf[18] | buf[19], 0);
	ck_assert_uint_eq(buf[25], 0x10);
	ck_assert_uint_eq(buf[26] | buf[27], 0);
	ck_assert_int_eq(vbe_vx_rkt_parse(buf, K, &o), 0);
	ck_assert(same(&o, &e));
	ck_assert(o.length == 64 * GIB);
	ck_assert_int_eq(vbe_vx_rkt_check(&o, K, 3, iova, VBE_VX_MR_MAX,
					  VRDMA_ACC_REMOTE_READ, &va), 0);
	ck_assert(va == vbe_vx_va(K, 0));
	ck_assert_int_eq(vbe_vx_rkt_check(&o, K, 3, iova + VBE_VX_MR_MAX - 1, 1,
					  VRDMA_ACC_REMOTE_WRITE, &va), 0);
	ck_assert(va == vbe_vx_va(K, 0) + VBE_VX_MR_MAX - 1);
	ck_assert(va >> VBE_VX_WIN_SHIFT == vbe_vx_win(K));
	ck_assert_int_eq(vbe_vx_rkt_check(&o, K, 3, iova + VBE_VX_MR_MAX - 1, 2,
					  VRDMA_ACC_REMOTE_WRITE, &va), VRDMA_WS_REM_ACCESS_ERR);
	/* No window ends at 2^64, where a device's range check wraps: a key
	 * of window tag all ones is refused, as one of tag 0; the highest
	 * window a key gets ends 64 GiB lower. */
	e = ent(0xffffffffu, iova, VBE_VX_MR_MAX - 0x80, 0x80);
	vbe_vx_rkt_pack(&e, buf);
	ck_assert_int_eq(vbe_vx_rkt_parse(buf, e.gkey, &o), -EPROTO);
	e = ent(0xffffdfffu, iova, VBE_VX_MR_MAX - 0x80, 0x80);	/* tag 0x7ffe */
	vbe_vx_rkt_pack(&e, buf);
	ck_assert_int_eq(vbe_vx_rkt_parse(buf, e.gkey, &o), 0);
	ck_assert_int_eq(vbe_vx_rkt_check(&o, e.gkey, 3, iova + e.length - 8, 8,
					  VRDMA_ACC_REMOTE_READ, &va), 0);
	ck_assert(va + 8 == (uint64_t)(vbe_vx_win(e.gkey) + 1) << VBE_VX_WIN_SHIFT);
	ck_assert(va + 8 == UINT64_MAX - (1ull << 49) + 1);	/* the top 8192 windows unused */
}
END_TEST

/* The cluster rig's case (tests/itest_bigmr.c): a WRITE at 4 GiB + 100
 * into an MR of 4 GiB + 8 KiB goes to win << 36 | pgoff + offset. */
START_TEST(test_win_far_write)
{
	const uint32_t K = 0x1234e105u;
	const uint64_t len = 4 * GIB + 8192, off = 4 * GIB + 100;
	const uint64_t iova = 0x7f1234560000ull;
	struct vbe_rkt e = ent(K, iova, len, 0x100), o;
	_Alignas(8) uint8_t buf[VBE_VX_RKT_ENT];
	uint64_t va;

	vbe_vx_rkt_pack(&e, buf);
	ck_assert_uint_eq(buf[25], 1);
	ck_assert_int_eq(vbe_vx_rkt_parse(buf, K, &o), 0);
	ck_assert(o.length == len);
	ck_assert_int_eq(vbe_vx_rkt_check(&o, K, 3, iova + off, 8000,
					  VRDMA_ACC_REMOTE_WRITE, &va), 0);
	ck_assert(va == ((uint64_t)vbe_vx_win(K) << 36 | 0x100) + off);
	ck_assert(va == ((uint64_t)0x234e105 << 36) + 0x100 + 4 * GIB + 100);
	/* READ of the MR's last 64 bytes; one more byte is out. */
	ck_assert_int_eq(vbe_vx_rkt_check(&o, K, 3, iova + len - 64, 64,
					  VRDMA_ACC_REMOTE_READ, &va), 0);
	ck_assert(va == vbe_vx_va(K, 0x100) + len - 64);
	ck_assert_int_eq(vbe_vx_rkt_check(&o, K, 3, iova + len - 63, 64,
					  VRDMA_ACC_REMOTE_READ, &va), VRDMA_WS_REM_ACCESS_ERR);
	/* Under 0xa6's 32-bit length it would have been 8 KiB: the WRITE is
	 * out of bounds there, in range here. */
	o.length = (uint32_t)len;
	ck_assert_int_eq(vbe_vx_rkt_check(&o, K, 3, iova + off, 8000,
					  VRDMA_ACC_REMOTE_WRITE, &va), VRDMA_WS_REM_ACCESS_ERR);
}
END_TEST

/* Entries a peer may not send: past 64 GiB, past the window, nonzero
 * where 0 is due, a key without a window tag.  Refused by parse, and by
 * the check on a copy that bypassed it. */
START_TEST(test_win_refused)
{
	const uint32_t K = 0x1234e105u;
	struct vbe_rkt e, o;
	_Alignas(8) uint8_t buf[VBE_VX_RKT_ENT];
	uint64_t va;
	unsigned i;
	static const struct { uint64_t len; uint32_t pgoff; } bad[] = {
		{ VBE_VX_MR_MAX + 1, 0 },		/* past 64 GiB */
		{ (1ull << 40) - 1, 0 },		/* all 40 bits */
		{ VBE_VX_MR_MAX, 1 },			/* past the window */
		{ VBE_VX_MR_MAX - 0xffe, 0xfff },	/* one byte past it */
		{ 8, VRDMA_PAGE_SIZE },			/* not a page offset */
	};

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e = ent(K, 0x10000, bad[i].len, bad[i].pgoff);
		vbe_vx_rkt_pack(&e, buf);
		ck_assert_int_eq(vbe_vx_rkt_parse(buf, K, &o), -EPROTO);
		ck_assert_uint_eq(o.gkey, 0);
		ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 3, 0x10000, 1, VRDMA_ACC_REMOTE_READ,
						  &va), VRDMA_WS_REM_ACCESS_ERR);
	}
	/* Byte 25 past bit 36 of the length, bytes 26 and 27 at all. */
	e = ent(K, 0x10000, 0x2000, 0);
	vbe_vx_rkt_pack(&e, buf);
	poke(buf, 25, 0x10);
	ck_assert_int_eq(vbe_vx_rkt_parse(buf, K, &o), -EPROTO);
	for (i = 26; i < 28; i++) {
		vbe_vx_rkt_pack(&e, buf);
		poke(buf, i, 0x01);
		ck_assert_int_eq(vbe_vx_rkt_parse(buf, K, &o), -EPROTO);
	}
	/* Byte 25 within 64 GiB is a length like any other. */
	vbe_vx_rkt_pack(&e, buf);
	poke(buf, 25, 0x0f);
	ck_assert_int_eq(vbe_vx_rkt_parse(buf, K, &o), 0);
	ck_assert(o.length == 0xf00002000ull);
	/* A tag whose window bits are 0 (bits 15..18 only): never a key. */
	e = ent(1u << 31 | 0x105, 0x10000, 0x2000, 0);
	vbe_vx_rkt_pack(&e, buf);
	ck_assert_int_eq(vbe_vx_rkt_parse(buf, e.gkey, &o), -EPROTO);
	/* The limit passes. */
	e = ent(K, 0x10000, VBE_VX_MR_MAX - 0xfff, 0xfff);
	vbe_vx_rkt_pack(&e, buf);
	ck_assert_int_eq(vbe_vx_rkt_parse(buf, K, &o), 0);
	ck_assert(same(&o, &e));
}
END_TEST

/*
 * Two keys of one key slot (the slot's key, deregistered, and its next
 * one) whose window tags differ, as key.c makes them: no translation that
 * passes for the one, even of a 64 GiB MR, reaches a byte of the other's
 * window.  A stale cache entry of the one, whose device rkey the driver
 * gave the other's MR, is refused by the device's bounds check.  With
 * equal window tags (what key.c forbids) they would share the window.
 */
START_TEST(test_win_same_slot)
{
	uint32_t seed = 0x5107u, k1, k2, n, bad = 0;
	uint64_t w1, w2, off, rlen, va;
	struct vbe_rkt e;

	for (n = 0; n < 100000; n++) {
		k1 = rnd_key(&seed);
		do	/* the slot's next key: same slot, another window tag */
			k2 = (rnd_key(&seed) & ~(uint32_t)(VBE_KEY_SLOTS - 1)) | vbe_key_idx(k1);
		while (vbe_key_wtag(k2) == vbe_key_wtag(k1));
		w1 = vbe_vx_va(k1, 0);
		w2 = vbe_vx_va(k2, 0);
		/* k1's MR as big as it gets; a WR anywhere in it. */
		e = ent(k1, 0x40000, VBE_VX_MR_MAX, 0);
		off = ((uint64_t)rnd(&seed) << 4) % VBE_VX_MR_MAX;
		rlen = 1 + rnd(&seed) % (VBE_VX_MR_MAX - off);
		if (vbe_vx_rkt_check(&e, k1, 3, 0x40000 + off, rlen, VRDMA_ACC_REMOTE_WRITE, &va) ||
		    /* disjoint windows... */
		    w1 >> VBE_VX_WIN_SHIFT == w2 >> VBE_VX_WIN_SHIFT ||
		    /* ... and the WR inside k1's: never k2's MR, wherever it is */
		    va >> VBE_VX_WIN_SHIFT != w1 >> VBE_VX_WIN_SHIFT ||
		    (va + rlen - 1) >> VBE_VX_WIN_SHIFT != w1 >> VBE_VX_WIN_SHIFT ||
		    (va <= w2 + (VBE_VX_WIN_LEN - 1) && va + rlen - 1 >= w2))
			bad++;
	}
	ck_assert_uint_eq(bad, 0);
	/* Tags that differ only above the window bits: one window. */
	k1 = 0x1234e105u;
	k2 = k1 ^ 0x90000000u;
	ck_assert_uint_eq(vbe_key_idx(k1), vbe_key_idx(k2));
	ck_assert(vbe_vx_va(k1, 0) == vbe_vx_va(k2, 0));
}
END_TEST

/* Any translation that passes for key K stays inside K's device window,
 * above the key table's [0, 256 KiB). */
START_TEST(test_win_random)
{
	uint32_t seed = 12345, K, pgoff, n, bad = 0;
	uint64_t len, off, rlen, va;
	struct vbe_rkt e;

	for (n = 0; n < 100000; n++) {
		K = rnd_key(&seed);
		pgoff = rnd(&seed) & (VRDMA_PAGE_SIZE - 1);
		len = n & 1 ? VBE_VX_WIN_LEN - pgoff - (rnd(&seed) & 0xff) :
			      1 + (rnd(&seed) & 0xfffff);
		e = ent(K, (uint64_t)rnd(&seed) << 20, len, pgoff);
		off = ((uint64_t)rnd(&seed) << 8 | (rnd(&seed) & 0xff)) % len;
		rlen = 1 + rnd(&seed) % (len - off);
		/* Counted, not asserted per case: Check's asserts are slow. */
		if (vbe_vx_rkt_check(&e, K, 3, e.iova + off, rlen, VRDMA_ACC_REMOTE_WRITE, &va) ||
		    va != vbe_vx_va(K, pgoff) + off ||
		    va >> VBE_VX_WIN_SHIFT != vbe_vx_win(K) ||
		    (va + rlen - 1) >> VBE_VX_WIN_SHIFT != vbe_vx_win(K) ||
		    va < (uint64_t)VBE_KEY_SLOTS * VBE_VX_RKT_ENT)
			bad++;
	}
	ck_assert_uint_eq(bad, 0);
}
END_TEST

static Suite *win_suite(void)
{
	Suite *s = suite_create("verbs_win");
	TCase *tc = tcase_create("pure");

	tcase_add_test(tc, test_win_layout);
	tcase_add_test(tc, test_win_64g_entry);
	tcase_add_test(tc, test_win_far_write);
	tcase_add_test(tc, test_win_refused);
	tcase_add_test(tc, test_win_same_slot);
	tcase_add_test(tc, test_win_random);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(win_suite());

	return ck_run(sr);
}
