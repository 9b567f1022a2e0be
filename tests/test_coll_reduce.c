// SPDX-License-Identifier: MIT
/*
 * The reduction kernels of the collectives (common/coll/vcoll_reduce.h):
 * every type and op against a plain scalar reference written here, over
 * counts with odd tails, unaligned buffers, chunks, in place, one to five
 * sources; the fold order; the NaN and signed-zero rules; the
 * floating-point environment of the call; what is refused.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll/vcoll_reduce.h"
#include "ck_run.h"

#define NAN32 UINT32_C(0x7fc00000)
#define NAN64 UINT64_C(0x7ff8000000000000)
#define MAXSRC 5
#define BIG ((1u << 20) + 3)

static const size_t counts[] = { 0, 1, 3, 7, 64, 1000, BIG };

/* ---- the reference: one element at a time, the obvious way ---- */

static int is_float(uint32_t t)
{
	return t == VCOLL_FLOAT || t == VCOLL_DOUBLE;
}

static int is_bitwise(uint32_t op)
{
	return op == VCOLL_BAND || op == VCOLL_BOR || op == VCOLL_BXOR;
}

#define REF_UINT(U, x, y, op)								\
	((op) == VCOLL_SUM ? (U)((x) + (y)) : (op) == VCOLL_PROD ? (U)((x) * (y)) :	\
	 (op) == VCOLL_BAND ? ((x) & (y)) : (op) == VCOLL_BOR ? ((x) | (y)) : ((x) ^ (y)))

static uint64_t ref_int(uint32_t t, uint32_t op, uint64_t a, uint64_t b)
{
	int w32 = t == VCOLL_INT32 || t == VCOLL_UINT32;
	int sgn = t == VCOLL_INT32 || t == VCOLL_INT64;

	if (op == VCOLL_MIN || op == VCOLL_MAX) {
		int lt;

		if (sgn)
			lt = w32 ? (int32_t)a < (int32_t)b : (int64_t)a < (int64_t)b;
		else
			lt = a < b;
		return (op == VCOLL_MIN) == lt ? a : b;
	}
	if (w32)
		return REF_UINT(uint32_t, (uint32_t)a, (uint32_t)b, op);
	return REF_UINT(uint64_t, a, b, op);
}

static double ref_float(uint32_t op, double a, double b, int *nan)
{
	*nan = 0;
	if (op == VCOLL_SUM || op == VCOLL_PROD) {
		double r = op == VCOLL_SUM ? a + b : a * b;

		*nan = isnan(r);
		return r;
	}
	if (isnan(a) || isnan(b)) {
		*nan = 1;
		return 0;
	}
	if (a != b)
		return (op == VCOLL_MIN) == (a < b) ? a : b;
	/* equal: +0.0 and -0.0, min takes the negative one */
	return (op == VCOLL_MIN) == !!signbit(a) ? a : b;
}

/* r = a OP b for one element at byte addresses of any alignment */
static void ref_elem(uint32_t t, uint32_t op, void *r, const void *a, const void *b)
{
	if (t == VCOLL_FLOAT) {
		float x, y, z;
		uint32_t n = NAN32;
		int nan;

		memcpy(&x, a, 4);
		memcpy(&y, b, 4);
		/* float arithmetic, not double: rounding must be binary32's */
		if (op == VCOLL_SUM || op == VCOLL_PROD) {
			z = op == VCOLL_SUM ? x + y : x * y;
			nan = isnan(z);
		} else {
			z = (float)ref_float(op, x, y, &nan);
		}
		memcpy(r, nan ? (void *)&n : (void *)&z, 4);
	} else if (t == VCOLL_DOUBLE) {
		double x, y, z;
		uint64_t n = NAN64;
		int nan;

		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		z = ref_float(op, x, y, &nan);
		memcpy(r, nan ? (void *)&n : (void *)&z, 8);
	} else if (t == VCOLL_INT32 || t == VCOLL_UINT32) {
		uint32_t x, y, z;

		memcpy(&x, a, 4);
		memcpy(&y, b, 4);
		z = (uint32_t)ref_int(t, op, x, y);
		memcpy(r, &z, 4);
	} else {
		uint64_t x, y, z;

		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		z = ref_int(t, op, x, y);
		memcpy(r, &z, 8);
	}
}

/* out = ((s0 OP s1) OP s2) ..., element by element */
static void ref_fold(uint32_t t, uint32_t op, void *out, void *const s[], size_t nsrc, size_t n)
{
	size_t es = vcoll_type_size(t);

	memcpy(out, s[0], n * es);
	for (size_t j = 1; j < nsrc; j++)
		for (size_t i = 0; i < n; i++)
			ref_elem(t, op, (char *)out + i * es, (char *)out + i * es,
				 (char *)s[j] + i * es);
}

/* ---- data: random bits, plus the values where rules bite ---- */

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t gen_double(void)
{
	static const uint64_t special[] = {
		0, UINT64_C(0x8000000000000000),			/* +-0 */
		UINT64_C(0x7ff0000000000000), UINT64_C(0xfff0000000000000),	/* +-inf */
		UINT64_C(0x7ff8000000000123), UINT64_C(0xfff8000000000000),	/* qNaNs */
		UINT64_C(0x7ff0000000000001),				/* sNaN */
		1, UINT64_C(0x800fffffffffffff),			/* subnormals */
		UINT64_C(0x7fefffffffffffff), UINT64_C(0x0010000000000000),	/* max, min */
	};
	uint64_t r = rnd();
	double d;

	if (r % 8 == 0)
		return special[(r >> 8) % (sizeof(special) / sizeof(special[0]))];
	/* a moderate magnitude, so sums round and products stay finite mostly */
	d = ldexp((double)(r >> 11) / 9007199254740992.0, (int)((r >> 3) % 64) - 32);
	if (r & 4)
		d = -d;
	memcpy(&r, &d, 8);
	return r;
}

static uint32_t gen_float(void)
{
	static const uint32_t special[] = {
		0, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00123u, 0xffc00000u,
		0x7f800001u, 1, 0x807fffffu, 0x7f7fffffu, 0x00800000u,
	};
	uint64_t r = rnd();
	float f;
	uint32_t u;

	if (r % 8 == 0)
		return special[(r >> 8) % (sizeof(special) / sizeof(special[0]))];
	f = ldexpf((float)(r >> 40) / 16777216.0f, (int)((r >> 3) % 32) - 16);
	if (r & 4)
		f = -f;
	memcpy(&u, &f, 4);
	return u;
}

static uint64_t gen_int(void)
{
	static const uint64_t special[] = {
		0, 1, UINT64_MAX, UINT64_C(0x7fffffff), UINT64_C(0x80000000),
		UINT64_C(0x7fffffffffffffff), UINT64_C(0x8000000000000000),
	};
	uint64_t r = rnd();

	if (r % 8 == 0)
		return special[(r >> 8) % (sizeof(special) / sizeof(special[0]))];
	return r % 4 == 1 ? r % 1000 : rnd();
}

/* Source j of a test; some elements equal (or the signed-zero twin of) s0's. */
static void fill(uint32_t t, void *buf, const void *s0, size_t n)
{
	size_t es = vcoll_type_size(t);

	for (size_t i = 0; i < n; i++) {
		char *e = (char *)buf + i * es;
		uint64_t v = t == VCOLL_DOUBLE ? gen_double() : t == VCOLL_FLOAT ? gen_float()
									  : gen_int();

		if (s0 && rnd() % 16 == 0) {
			memcpy(&v, (const char *)s0 + i * es, es);
			if (rnd() & 1)	/* +0 <-> -0, and x <-> -x */
				v ^= es == 8 ? UINT64_C(1) << 63 : UINT64_C(1) << 31;
		}
		memcpy(e, &v, es);	/* little-endian: the low bytes */
	}
}

/* ---- the matrix: every type x op x count ---- */

struct bufs {
	void *src[MAXSRC], *ref, *out;
	void *mem[MAXSRC + 2];
};

/* Buffers for n elements at byte offset off (0: aligned) from malloc's. */
static void bufs_make(struct bufs *b, uint32_t t, size_t n, size_t nsrc, size_t off)
{
	size_t bytes = n * vcoll_type_size(t) + 8;

	for (size_t j = 0; j < MAXSRC + 2; j++) {
		b->mem[j] = malloc(bytes);
		ck_assert_ptr_nonnull(b->mem[j]);
	}
	for (size_t j = 0; j < MAXSRC; j++)
		b->src[j] = (char *)b->mem[j] + (j < nsrc ? off : 0);
	b->ref = (char *)b->mem[MAXSRC] + off;
	b->out = (char *)b->mem[MAXSRC + 1] + (off ? 8 - off : 0);
	for (size_t j = 0; j < nsrc; j++)
		fill(t, b->src[j], j ? b->src[0] : NULL, n);
}

static void bufs_free(struct bufs *b)
{
	for (size_t j = 0; j < MAXSRC + 2; j++)
		free(b->mem[j]);
}

/* fold in chunks of random lengths: the same bits as one call */
static void fold_chunked(uint32_t t, uint32_t op, const struct bufs *b, size_t nsrc, size_t n)
{
	size_t es = vcoll_type_size(t), off = 0;

	while (off < n) {
		size_t len = 1 + rnd() % (rnd() & 1 ? 37 : 5000);
		const void *s[MAXSRC];

		if (len > n - off)
			len = n - off;
		for (size_t j = 0; j < nsrc; j++)
			s[j] = (const char *)b->src[j] + off * es;
		ck_assert_int_eq(vcoll_fold(t, op, (char *)b->out + off * es, s, nsrc, len), 0);
		off += len;
	}
}

static void check_one(uint32_t t, uint32_t op, size_t n, size_t nsrc, size_t off)
{
	size_t es = vcoll_type_size(t), bytes = n * es;
	struct bufs b;
	const void *s[MAXSRC];

	bufs_make(&b, t, n, nsrc, off);
	ref_fold(t, op, b.ref, b.src, nsrc, n);
	for (size_t j = 0; j < nsrc; j++)
		s[j] = b.src[j];

	/* one call */
	memset(b.out, 0xa5, bytes);
	ck_assert_int_eq(vcoll_fold(t, op, b.out, s, nsrc, n), 0);
	ck_assert_msg(memcmp(b.out, b.ref, bytes) == 0, "fold %s %s n=%zu nsrc=%zu off=%zu",
		      vcoll_type_name(t), vcoll_op_name(op), n, nsrc, off);

	/* chunks */
	memset(b.out, 0x5a, bytes);
	fold_chunked(t, op, &b, nsrc, n);
	ck_assert_msg(memcmp(b.out, b.ref, bytes) == 0, "chunked %s %s n=%zu nsrc=%zu",
		      vcoll_type_name(t), vcoll_op_name(op), n, nsrc);

	/* combine, source after source: the same order */
	memcpy(b.out, b.src[0], bytes);
	for (size_t j = 1; j < nsrc; j++)
		ck_assert_int_eq(vcoll_combine(t, op, b.out, b.src[j], n), 0);
	ck_assert_msg(memcmp(b.out, b.ref, bytes) == 0, "combine %s %s n=%zu",
		      vcoll_type_name(t), vcoll_op_name(op), n);

	/* in place: dst is srcs[0] */
	s[0] = b.src[0];
	ck_assert_int_eq(vcoll_fold(t, op, b.src[0], s, nsrc, n), 0);
	ck_assert_msg(memcmp(b.src[0], b.ref, bytes) == 0, "in place %s %s n=%zu",
		      vcoll_type_name(t), vcoll_op_name(op), n);
	bufs_free(&b);
}

START_TEST(every_type_op_count)
{
	uint32_t t = 1 + (uint32_t)_i / VCOLL_OP_MAX, op = 1 + (uint32_t)_i % VCOLL_OP_MAX;

	rng = 0x9e3779b97f4a7c15u + (uint64_t)_i;
	if (is_float(t) && is_bitwise(op)) {
		ck_assert_int_eq(vcoll_check(t, op, 1, NULL), -EINVAL);
		return;
	}
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		size_t n = counts[c];

		if (n == BIG) {
			check_one(t, op, n, 2, 0);
			check_one(t, op, n, 3, 0);	/* blocked: three sources */
			continue;
		}
		for (size_t nsrc = 1; nsrc <= MAXSRC; nsrc++)
			check_one(t, op, n, nsrc, 0);
		/* unaligned: sources at off, dst at 8 - off */
		for (size_t off = 1; off < 8; off += 2)
			check_one(t, op, n, 3, off);
	}
}
END_TEST

/* ---- the order ---- */

static double fold3d(double a, double b, double c, size_t n)
{
	double *v = malloc(4 * n * sizeof(double)), r;
	const void *s[3] = { v, v + n, v + 2 * n };

	ck_assert_ptr_nonnull(v);
	for (size_t i = 0; i < n; i++) {
		v[i] = a;
		v[n + i] = b;
		v[2 * n + i] = c;
	}
	ck_assert_int_eq(vcoll_fold(VCOLL_DOUBLE, VCOLL_SUM, v + 3 * n, s, 3, n), 0);
	/* the vector part and the tail agree */
	for (size_t i = 1; i < n; i++)
		ck_assert(memcmp(&v[3 * n], &v[3 * n + i], sizeof(double)) == 0);
	r = v[3 * n];
	free(v);
	return r;
}

START_TEST(fold_is_left_to_right)
{
	/* (1e16 + -1e16) + 1 = 1; grouped 1e16 + (-1e16 + 1) it is 0 */
	ck_assert(fold3d(1e16, -1e16, 1, 67) == 1.0);
	ck_assert(fold3d(1e16, -1e16, 1, 1) == 1.0);
	/* (1e16 + 1) rounds to 1e16 first: 0 */
	ck_assert(fold3d(1e16, 1, -1e16, 67) == 0.0);
	ck_assert(fold3d(1, 1e16, -1e16, 67) == 0.0);

	/* the other grouping really is other bits: b + c first, then a + (b+c) */
	double a = 1e16, b = -1e16, c = 1;
	double bc = b, aa = a;

	ck_assert_int_eq(vcoll_combine(VCOLL_DOUBLE, VCOLL_SUM, &bc, &c, 1), 0);
	ck_assert_int_eq(vcoll_combine(VCOLL_DOUBLE, VCOLL_SUM, &aa, &bc, 1), 0);
	ck_assert(aa == 0.0);

	/* float: (1e8 + -1e8) + 1 = 1, (1e8 + 1) + -1e8 = 0 */
	float f[3] = { 1e8f, -1e8f, 1.0f }, g[3] = { 1e8f, 1.0f, -1e8f }, r;
	const void *fs[3] = { &f[0], &f[1], &f[2] }, *gs[3] = { &g[0], &g[1], &g[2] };

	ck_assert_int_eq(vcoll_fold(VCOLL_FLOAT, VCOLL_SUM, &r, fs, 3, 1), 0);
	ck_assert(r == 1.0f);
	ck_assert_int_eq(vcoll_fold(VCOLL_FLOAT, VCOLL_SUM, &r, gs, 3, 1), 0);
	ck_assert(r == 0.0f);
}
END_TEST

/* ---- NaN and signed zeros, in a vector long enough for both paths ---- */

#define RN 67

static uint64_t op_bits(uint32_t t, uint32_t op, uint64_t a, uint64_t b)
{
	size_t es = vcoll_type_size(t);
	uint64_t va[RN], vb[RN], out[RN];	/* big enough for either width */
	const void *s[2] = { va, vb };

	for (size_t i = 0; i < RN; i++) {
		memcpy((char *)va + i * es, &a, es);
		memcpy((char *)vb + i * es, &b, es);
	}
	ck_assert_int_eq(vcoll_fold(t, op, out, s, 2, RN), 0);
	for (size_t i = 1; i < RN; i++)
		ck_assert(memcmp(out, (char *)out + i * es, es) == 0);
	uint64_t r = 0;

	memcpy(&r, out, es);
	return r;
}

START_TEST(nan_and_signed_zero_rules)
{
	const uint64_t P0 = 0, N0 = UINT64_C(1) << 63, ONE = UINT64_C(0x3ff0000000000000);
	const uint64_t INF = UINT64_C(0x7ff0000000000000), NINF = INF | N0;
	const uint64_t NANS[] = { UINT64_C(0x7ff8000000000123), UINT64_C(0xfff8000000000000),
				  UINT64_C(0x7ff0000000000001) };
	const uint32_t ops[] = { VCOLL_SUM, VCOLL_PROD, VCOLL_MIN, VCOLL_MAX };
	const uint32_t f1 = 0x3f800000u, fnan = 0xffc00777u, fsnan = 0x7f800001u;

	/* any NaN in, canonical NaN out, either operand order */
	for (size_t k = 0; k < 3; k++)
		for (size_t o = 0; o < 4; o++) {
			ck_assert(op_bits(VCOLL_DOUBLE, ops[o], NANS[k], ONE) == NAN64);
			ck_assert(op_bits(VCOLL_DOUBLE, ops[o], ONE, NANS[k]) == NAN64);
			ck_assert(op_bits(VCOLL_DOUBLE, ops[o], NANS[k], NANS[(k + 1) % 3]) == NAN64);
		}
	for (size_t o = 0; o < 4; o++) {
		ck_assert(op_bits(VCOLL_FLOAT, ops[o], fnan, f1) == NAN32);
		ck_assert(op_bits(VCOLL_FLOAT, ops[o], f1, fsnan) == NAN32);
	}
	/* a NaN made here (x86's default NaN is negative): canonical too */
	ck_assert(op_bits(VCOLL_DOUBLE, VCOLL_SUM, INF, NINF) == NAN64);
	ck_assert(op_bits(VCOLL_DOUBLE, VCOLL_PROD, INF, P0) == NAN64);
	ck_assert(op_bits(VCOLL_FLOAT, VCOLL_SUM, 0x7f800000u, 0xff800000u) == NAN32);
	/* min/max: -0 < +0 in either order; an infinity is a number */
	ck_assert(op_bits(VCOLL_DOUBLE, VCOLL_MIN, P0, N0) == N0);
	ck_assert(op_bits(VCOLL_DOUBLE, VCOLL_MIN, N0, P0) == N0);
	ck_assert(op_bits(VCOLL_DOUBLE, VCOLL_MAX, P0, N0) == P0);
	ck_assert(op_bits(VCOLL_DOUBLE, VCOLL_MAX, N0, P0) == P0);
	ck_assert(op_bits(VCOLL_DOUBLE, VCOLL_MIN, N0, N0) == N0);
	ck_assert(op_bits(VCOLL_DOUBLE, VCOLL_MAX, P0, P0) == P0);
	ck_assert(op_bits(VCOLL_DOUBLE, VCOLL_MIN, NINF, ONE) == NINF);
	ck_assert(op_bits(VCOLL_DOUBLE, VCOLL_MAX, ONE, INF) == INF);
	ck_assert(op_bits(VCOLL_FLOAT, VCOLL_MIN, 0, 0x80000000u) == 0x80000000u);
	ck_assert(op_bits(VCOLL_FLOAT, VCOLL_MAX, 0x80000000u, 0) == 0);
	/* sums keep IEEE's zero signs: -0 + -0 = -0, -0 + +0 = +0 */
	ck_assert(op_bits(VCOLL_DOUBLE, VCOLL_SUM, N0, N0) == N0);
	ck_assert(op_bits(VCOLL_DOUBLE, VCOLL_SUM, N0, P0) == P0);
}
END_TEST

/* ---- the caller's floating-point environment does not matter ---- */

START_TEST(default_fp_environment)
{
#if defined(__x86_64__)
	const unsigned odd = 0x1f80u | 0x8000u | 0x0040u | 0x4000u;	/* FTZ DAZ round up */
	double tiny = 0x1p-1074, one = 1.0, eps = 0x1p-60, r1 = -1, r2 = -1;
	const void *s1[2] = { &tiny, &tiny }, *s2[2] = { &one, &eps };
	unsigned before, after1, after2;
	int rc1, rc2, rc3;

	before = __builtin_ia32_stmxcsr();
	__builtin_ia32_ldmxcsr(odd);
	rc1 = vcoll_fold(VCOLL_DOUBLE, VCOLL_SUM, &r1, s1, 2, 1);
	after1 = __builtin_ia32_stmxcsr();
	rc2 = vcoll_fold(VCOLL_DOUBLE, VCOLL_SUM, &r2, s2, 2, 1);
	rc3 = vcoll_combine(VCOLL_DOUBLE, VCOLL_SUM, &one, &eps, 1);
	after2 = __builtin_ia32_stmxcsr();
	__builtin_ia32_ldmxcsr(before);
	ck_assert(rc1 == 0 && rc2 == 0 && rc3 == 0);
	ck_assert_uint_eq(after1 & 0xffc0u, odd);	/* the caller's mode is back */
	ck_assert_uint_eq(after2 & 0xffc0u, odd);
	ck_assert(r1 == 0x1p-1073);	/* DAZ would give 0 */
	ck_assert(r2 == 1.0);		/* rounding up would give 1 + 2^-52 */
	ck_assert(one == 1.0);
#endif
}
END_TEST

/* ---- what is refused, and that a refusal writes nothing ---- */

START_TEST(refused)
{
	uint32_t a[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, b[8] = { 0 }, keep[8];
	const void *s[3] = { b, b, b };
	size_t bytes = 0;

	memcpy(keep, a, sizeof(a));
	for (uint32_t op = VCOLL_BAND; op <= VCOLL_BXOR; op++) {
		ck_assert_int_eq(vcoll_check(VCOLL_FLOAT, op, 1, NULL), -EINVAL);
		ck_assert_int_eq(vcoll_check(VCOLL_DOUBLE, op, 0, NULL), -EINVAL);
		ck_assert_int_eq(vcoll_combine(VCOLL_FLOAT, op, a, b, 8), -EINVAL);
		ck_assert_int_eq(vcoll_fold(VCOLL_DOUBLE, op, a, s, 2, 4), -EINVAL);
	}
	ck_assert_int_eq(vcoll_check(0, VCOLL_SUM, 1, NULL), -EINVAL);
	ck_assert_int_eq(vcoll_check(VCOLL_TYPE_MAX + 1, VCOLL_SUM, 1, NULL), -EINVAL);
	ck_assert_int_eq(vcoll_check(VCOLL_INT32, 0, 1, NULL), -EINVAL);
	ck_assert_int_eq(vcoll_check(VCOLL_INT32, VCOLL_OP_MAX + 1, 1, NULL), -EINVAL);
	ck_assert_int_eq(vcoll_check(UINT32_MAX, UINT32_MAX, 1, NULL), -EINVAL);
	/* count * size beyond PTRDIFF_MAX; just under is fine */
	ck_assert_int_eq(vcoll_check(VCOLL_INT32, VCOLL_SUM, SIZE_MAX / 4 + 1, NULL), -EOVERFLOW);
	ck_assert_int_eq(vcoll_check(VCOLL_DOUBLE, VCOLL_SUM, PTRDIFF_MAX / 8 + 1, NULL),
			 -EOVERFLOW);
	ck_assert_int_eq(vcoll_check(VCOLL_UINT64, VCOLL_SUM, SIZE_MAX, NULL), -EOVERFLOW);
	ck_assert_int_eq(vcoll_combine(VCOLL_UINT32, VCOLL_SUM, a, b, SIZE_MAX / 2), -EOVERFLOW);
	ck_assert_int_eq(vcoll_fold(VCOLL_UINT32, VCOLL_SUM, a, s, 2, SIZE_MAX / 4 + 2),
			 -EOVERFLOW);
	ck_assert_int_eq(vcoll_check(VCOLL_DOUBLE, VCOLL_SUM, PTRDIFF_MAX / 8, &bytes), 0);
	ck_assert(bytes == (size_t)PTRDIFF_MAX / 8 * 8);
	/* missing buffers or sources */
	ck_assert_int_eq(vcoll_combine(VCOLL_UINT32, VCOLL_SUM, NULL, b, 1), -EINVAL);
	ck_assert_int_eq(vcoll_combine(VCOLL_UINT32, VCOLL_SUM, a, NULL, 1), -EINVAL);
	ck_assert_int_eq(vcoll_fold(VCOLL_UINT32, VCOLL_SUM, a, s, 0, 1), -EINVAL);
	ck_assert_int_eq(vcoll_fold(VCOLL_UINT32, VCOLL_SUM, a, NULL, 2, 1), -EINVAL);
	ck_assert_int_eq(vcoll_fold(VCOLL_UINT32, VCOLL_SUM, NULL, s, 2, 1), -EINVAL);
	s[1] = NULL;
	ck_assert_int_eq(vcoll_fold(VCOLL_UINT32, VCOLL_SUM, a, s, 2, 1), -EINVAL);
	/* nothing to do: fine, even without buffers */
	ck_assert_int_eq(vcoll_combine(VCOLL_UINT32, VCOLL_SUM, NULL, NULL, 0), 0);
	ck_assert_int_eq(vcoll_fold(VCOLL_UINT32, VCOLL_SUM, NULL, s, 1, 0), 0);
	/* dst overlapping a source (other than being srcs[0] exactly) */
	ck_assert_int_eq(vcoll_combine(VCOLL_UINT32, VCOLL_SUM, a, a, 4), -EINVAL);
	ck_assert_int_eq(vcoll_combine(VCOLL_UINT32, VCOLL_SUM, a + 1, a, 4), -EINVAL);
	ck_assert_int_eq(vcoll_combine(VCOLL_UINT32, VCOLL_SUM, a, a + 3, 4), -EINVAL);
	s[0] = b;
	s[1] = a + 2;
	ck_assert_int_eq(vcoll_fold(VCOLL_UINT32, VCOLL_SUM, a, s, 2, 4), -EINVAL);
	s[0] = a + 1;
	s[1] = b;
	ck_assert_int_eq(vcoll_fold(VCOLL_UINT32, VCOLL_SUM, a, s, 2, 4), -EINVAL);
	s[0] = a;
	s[1] = a;
	ck_assert_int_eq(vcoll_fold(VCOLL_UINT32, VCOLL_SUM, a, s, 2, 4), -EINVAL);
	ck_assert(memcmp(a, keep, sizeof(a)) == 0);
	/* adjacent is not overlapping; sources may overlap each other */
	s[0] = a + 4;
	s[1] = a + 4;
	ck_assert_int_eq(vcoll_fold(VCOLL_UINT32, VCOLL_SUM, a, s, 2, 4), 0);
	ck_assert_uint_eq(a[0], 10);
	ck_assert_uint_eq(a[3], 16);
}
END_TEST

START_TEST(names_and_sizes)
{
	ck_assert_uint_eq(vcoll_type_size(VCOLL_INT32), 4);
	ck_assert_uint_eq(vcoll_type_size(VCOLL_UINT64), 8);
	ck_assert_uint_eq(vcoll_type_size(VCOLL_FLOAT), 4);
	ck_assert_uint_eq(vcoll_type_size(VCOLL_DOUBLE), 8);
	ck_assert_uint_eq(vcoll_type_size(0), 0);
	ck_assert_uint_eq(vcoll_type_size(99), 0);
	ck_assert_str_eq(vcoll_type_name(VCOLL_UINT32), "uint32");
	ck_assert_str_eq(vcoll_type_name(0), "?");
	ck_assert_str_eq(vcoll_op_name(VCOLL_BXOR), "bxor");
	ck_assert_str_eq(vcoll_op_name(VCOLL_OP_MAX + 1), "?");
}
END_TEST

static Suite *coll_reduce_suite(void)
{
	Suite *s = suite_create("coll_reduce");
	TCase *tc = tcase_create("kernels");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, every_type_op_count, 0, VCOLL_TYPE_MAX * VCOLL_OP_MAX);
	tcase_add_test(tc, fold_is_left_to_right);
	tcase_add_test(tc, nan_and_signed_zero_rules);
	tcase_add_test(tc, default_fp_environment);
	tcase_add_test(tc, refused);
	tcase_add_test(tc, names_and_sizes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run(srunner_create(coll_reduce_suite()));
}
