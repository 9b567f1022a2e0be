// SPDX-License-Identifier: MIT
/*
 * Reduction kernels of the collectives (vcoll_reduce.h has the rules).
 *
 * One pair of kernels per (type, op), found once per call in a table: no
 * per-element switch.  Each kernel is a plain loop over restrict
 * pointers in two parts: blocks of VC_BLK elements, whose inner loop
 * counts 0..VC_BLK-1, a constant multiple of every vector width, so
 * GCC's -O2 cost model ("very cheap": no epilogue, no alias versioning)
 * vectorizes it for the build's instruction set (SSE2 on plain x86-64,
 * AVX2 with -mavx2); then a scalar tail.  A loop over n elements alone
 * is not vectorized at -O2.  Each element is computed alone with exact
 * IEEE or integer operations, so the vector and the scalar code give the
 * same bits, and so do chunks of a vector.
 *
 * Float min and max work on the bit patterns (a float compare decides,
 * the bits are selected), which is how -0.0 < +0.0 is expressed without
 * a branch.  SSE2 has no 64-bit compare or multiply: with it alone int64,
 * uint64 and double min/max and 64-bit prod stay scalar; SSE4.2 or AVX2
 * vectorize them too (gcc -fopt-info-vec shows which loops are).
 */
#include <errno.h>
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "vcoll_reduce.h"

/* The rules need exact IEEE arithmetic with no excess precision. */
#if defined(__FAST_MATH__) || (defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__)
#error "vcoll_reduce.c needs IEEE semantics: build it without -ffast-math"
#endif
#if FLT_EVAL_METHOD != 0
#error "vcoll_reduce.c needs FLT_EVAL_METHOD 0 (SSE2 math): x87 rounding would differ from dom0's"
#endif

/* Element views of any alignment that may alias the caller's objects. */
typedef uint32_t vc_u32 __attribute__((aligned(1), may_alias));
typedef uint64_t vc_u64 __attribute__((aligned(1), may_alias));
typedef float vc_f32 __attribute__((aligned(1), may_alias));
typedef double vc_f64 __attribute__((aligned(1), may_alias));

#define VC_BLK 32		/* elements per vectorized block */
#define VC_FOLD_BLOCK 8192	/* bytes of dst per pass over 3+ sources */

#define VC_NAN32 UINT32_C(0x7fc00000)
#define VC_NAN64 UINT64_C(0x7ff8000000000000)

static inline float vc_f32_of(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static inline double vc_f64_of(uint64_t u)
{
	double f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* ---- one element: integers (signed sums in unsigned arithmetic) ---- */

#define VC_INT_OPS(U, I)								\
static inline U vc_##U##_sum(U a, U b) { return a + b; }			\
static inline U vc_##U##_prod(U a, U b) { return a * b; }			\
static inline U vc_##U##_band(U a, U b) { return a & b; }			\
static inline U vc_##U##_bor(U a, U b) { return a | b; }			\
static inline U vc_##U##_bxor(U a, U b) { return a ^ b; }			\
static inline U vc_##U##_min(U a, U b) { return a < b ? a : b; }		\
static inline U vc_##U##_max(U a, U b) { return a > b ? a : b; }		\
static inline U vc_##I##_min(U a, U b) { return (I)a < (I)b ? a : b; }		\
static inline U vc_##I##_max(U a, U b) { return (I)a > (I)b ? a : b; }

VC_INT_OPS(uint32_t, int32_t)
VC_INT_OPS(uint64_t, int64_t)

/* ---- one element: floats (any NaN result canonical) ---- */

static inline float vc_f32_sum(float a, float b)
{
	float r = a + b;

	return r == r ? r : vc_f32_of(VC_NAN32);
}

static inline float vc_f32_prod(float a, float b)
{
	float r = a * b;

	return r == r ? r : vc_f32_of(VC_NAN32);
}

static inline double vc_f64_sum(double a, double b)
{
	double r = a + b;

	return r == r ? r : vc_f64_of(VC_NAN64);
}

static inline double vc_f64_prod(double a, double b)
{
	double r = a * b;

	return r == r ? r : vc_f64_of(VC_NAN64);
}

/*
 * minimum/maximum on bit patterns: the smaller (larger) value; equal
 * values (only +0.0 and -0.0 differ then) give a | b for min (the sign
 * set if either has it) and a & b for max; a NaN gives the canonical NaN.
 */
#define VC_FLOAT_MINMAX(N, U, F, NAN)							\
static inline U vc_##N##_min(U a, U b)							\
{											\
	F fa = vc_##N##_of(a), fb = vc_##N##_of(b);					\
	U r = fa < fb ? a : fb < fa ? b : (a | b);					\
											\
	return fa != fa || fb != fb ? NAN : r;						\
}											\
static inline U vc_##N##_max(U a, U b)							\
{											\
	F fa = vc_##N##_of(a), fb = vc_##N##_of(b);					\
	U r = fa > fb ? a : fb > fa ? b : (a & b);					\
											\
	return fa != fa || fb != fb ? NAN : r;						\
}

VC_FLOAT_MINMAX(f32, uint32_t, float, VC_NAN32)
VC_FLOAT_MINMAX(f64, uint64_t, double, VC_NAN64)

/* ---- kernels: dst OP= src, and dst = x OP y ---- */

struct vc_kern {
	void (*k2)(void *d, const void *s, size_t n);
	void (*k3)(void *d, const void *x, const void *y, size_t n);
};

/*
 * The typed loops take restrict pointers; the void wrappers are what the
 * table holds (calling through a cast function pointer would be undefined).
 */
#define VC_KERNEL(NAME, T)								\
static void vc_k2_##NAME(T *restrict d, const T *restrict s, size_t n)		\
{											\
	size_t i = 0;									\
											\
	for (; i + VC_BLK <= n; i += VC_BLK)						\
		for (size_t j = 0; j < VC_BLK; j++)					\
			d[i + j] = vc_##NAME(d[i + j], s[i + j]);			\
	for (; i < n; i++)								\
		d[i] = vc_##NAME(d[i], s[i]);						\
}											\
static void vc_k3_##NAME(T *restrict d, const T *restrict x, const T *restrict y,	\
			 size_t n)							\
{											\
	size_t i = 0;									\
											\
	for (; i + VC_BLK <= n; i += VC_BLK)						\
		for (size_t j = 0; j < VC_BLK; j++)					\
			d[i + j] = vc_##NAME(x[i + j], y[i + j]);			\
	for (; i < n; i++)								\
		d[i] = vc_##NAME(x[i], y[i]);						\
}											\
static void vc_v2_##NAME(void *d, const void *s, size_t n)				\
{											\
	vc_k2_##NAME(d, s, n);								\
}											\
static void vc_v3_##NAME(void *d, const void *x, const void *y, size_t n)		\
{											\
	vc_k3_##NAME(d, x, y, n);							\
}

VC_KERNEL(uint32_t_sum, vc_u32)
VC_KERNEL(uint32_t_prod, vc_u32)
VC_KERNEL(uint32_t_band, vc_u32)
VC_KERNEL(uint32_t_bor, vc_u32)
VC_KERNEL(uint32_t_bxor, vc_u32)
VC_KERNEL(uint32_t_min, vc_u32)
VC_KERNEL(uint32_t_max, vc_u32)
VC_KERNEL(int32_t_min, vc_u32)
VC_KERNEL(int32_t_max, vc_u32)
VC_KERNEL(uint64_t_sum, vc_u64)
VC_KERNEL(uint64_t_prod, vc_u64)
VC_KERNEL(uint64_t_band, vc_u64)
VC_KERNEL(uint64_t_bor, vc_u64)
VC_KERNEL(uint64_t_bxor, vc_u64)
VC_KERNEL(uint64_t_min, vc_u64)
VC_KERNEL(uint64_t_max, vc_u64)
VC_KERNEL(int64_t_min, vc_u64)
VC_KERNEL(int64_t_max, vc_u64)
VC_KERNEL(f32_sum, vc_f32)
VC_KERNEL(f32_prod, vc_f32)
VC_KERNEL(f32_min, vc_u32)
VC_KERNEL(f32_max, vc_u32)
VC_KERNEL(f64_sum, vc_f64)
VC_KERNEL(f64_prod, vc_f64)
VC_KERNEL(f64_min, vc_u64)
VC_KERNEL(f64_max, vc_u64)

#define VC_K(NAME) { vc_v2_##NAME, vc_v3_##NAME }
/* Signed and unsigned share every op but min and max (two's complement). */
#define VC_INT_ROW(U, MM)								\
	[VCOLL_SUM] = VC_K(U##_sum), [VCOLL_PROD] = VC_K(U##_prod),			\
	[VCOLL_MIN] = VC_K(MM##_min), [VCOLL_MAX] = VC_K(MM##_max),			\
	[VCOLL_BAND] = VC_K(U##_band), [VCOLL_BOR] = VC_K(U##_bor),			\
	[VCOLL_BXOR] = VC_K(U##_bxor)
#define VC_FLOAT_ROW(N)									\
	[VCOLL_SUM] = VC_K(N##_sum), [VCOLL_PROD] = VC_K(N##_prod),			\
	[VCOLL_MIN] = VC_K(N##_min), [VCOLL_MAX] = VC_K(N##_max)

static const struct vc_kern vc_kerns[VCOLL_TYPE_MAX + 1][VCOLL_OP_MAX + 1] = {
	[VCOLL_INT32] = { VC_INT_ROW(uint32_t, int32_t) },
	[VCOLL_INT64] = { VC_INT_ROW(uint64_t, int64_t) },
	[VCOLL_UINT32] = { VC_INT_ROW(uint32_t, uint32_t) },
	[VCOLL_UINT64] = { VC_INT_ROW(uint64_t, uint64_t) },
	[VCOLL_FLOAT] = { VC_FLOAT_ROW(f32) },
	[VCOLL_DOUBLE] = { VC_FLOAT_ROW(f64) },
};

static const struct {
	uint8_t size;
	const char *name;
} vc_types[VCOLL_TYPE_MAX + 1] = {
	[VCOLL_INT32] = { 4, "int32" },
	[VCOLL_INT64] = { 8, "int64" },
	[VCOLL_UINT32] = { 4, "uint32" },
	[VCOLL_UINT64] = { 8, "uint64" },
	[VCOLL_FLOAT] = { 4, "float" },
	[VCOLL_DOUBLE] = { 8, "double" },
};

static const char *const vc_ops[VCOLL_OP_MAX + 1] = {
	[VCOLL_SUM] = "sum", [VCOLL_PROD] = "prod", [VCOLL_MIN] = "min", [VCOLL_MAX] = "max",
	[VCOLL_BAND] = "band", [VCOLL_BOR] = "bor", [VCOLL_BXOR] = "bxor",
};

/* ---- the floating-point environment of a call ---- */

/*
 * x86: MXCSR's control bits (DAZ, exception masks, rounding, FTZ) are set
 * to the default for the call -- round to nearest, subnormals kept,
 * exceptions masked (a NaN input never traps) -- and restored after.  The
 * kernels are called through the table, so no float operation of theirs
 * can be moved across the two.  Other CPUs: the caller's environment,
 * which must be the default one.
 */
#if defined(__x86_64__) || defined(__SSE2_MATH__)
#define VC_MXCSR_CTL 0xffc0u
#define VC_MXCSR_DFL 0x1f80u

static unsigned vc_fp_enter(uint32_t type)
{
	unsigned m;

	if (type != VCOLL_FLOAT && type != VCOLL_DOUBLE)
		return VC_MXCSR_DFL;
	m = __builtin_ia32_stmxcsr();
	if ((m & VC_MXCSR_CTL) != VC_MXCSR_DFL)
		__builtin_ia32_ldmxcsr((m & ~VC_MXCSR_CTL) | VC_MXCSR_DFL);
	return m;
}

static void vc_fp_leave(unsigned m)
{
	if ((m & VC_MXCSR_CTL) != VC_MXCSR_DFL)
		__builtin_ia32_ldmxcsr(m);
}
#else
static unsigned vc_fp_enter(uint32_t type)
{
	(void)type;
	return 0;
}

static void vc_fp_leave(unsigned m)
{
	(void)m;
}
#endif

/* ---- the calls ---- */

size_t vcoll_type_size(uint32_t type)
{
	return type <= VCOLL_TYPE_MAX ? vc_types[type].size : 0;
}

const char *vcoll_type_name(uint32_t type)
{
	return type <= VCOLL_TYPE_MAX && vc_types[type].name ? vc_types[type].name : "?";
}

const char *vcoll_op_name(uint32_t op)
{
	return op <= VCOLL_OP_MAX && vc_ops[op] ? vc_ops[op] : "?";
}

/* The kernels of (type, op) and the byte length of count elements. */
static int vc_prepare(uint32_t type, uint32_t op, size_t count, const struct vc_kern **k,
		      size_t *esize, size_t *bytes)
{
	if (type > VCOLL_TYPE_MAX || op > VCOLL_OP_MAX || !vc_kerns[type][op].k2)
		return -EINVAL;
	*esize = vc_types[type].size;
	if (count > (size_t)PTRDIFF_MAX / *esize)
		return -EOVERFLOW;
	*bytes = count * *esize;
	*k = &vc_kerns[type][op];
	return 0;
}

int vcoll_check(uint32_t type, uint32_t op, size_t count, size_t *bytes)
{
	const struct vc_kern *k;
	size_t esize, len;
	int rc;

	rc = vc_prepare(type, op, count, &k, &esize, &len);
	if (rc == 0 && bytes)
		*bytes = len;
	return rc;
}

/* Do [a, a+len) and [b, b+len) share a byte?  (len > 0; no overflow) */
static int vc_overlap(const void *a, const void *b, size_t len)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

	return x - y < len || y - x < len;
}

int vcoll_combine(uint32_t type, uint32_t op, void *dst, const void *src, size_t count)
{
	const struct vc_kern *k;
	size_t esize, bytes;
	unsigned fp;
	int rc;

	rc = vc_prepare(type, op, count, &k, &esize, &bytes);
	if (rc)
		return rc;
	if (count == 0)
		return 0;
	if (!dst || !src || vc_overlap(dst, src, bytes))
		return -EINVAL;
	fp = vc_fp_enter(type);
	k->k2(dst, src, count);
	vc_fp_leave(fp);
	return 0;
}

int vcoll_fold(uint32_t type, uint32_t op, void *dst, const void *const srcs[], size_t nsrc,
	       size_t count)
{
	const struct vc_kern *k;
	size_t esize, bytes, blk, off, n, j;
	int inplace;
	unsigned fp;
	int rc;

	rc = vc_prepare(type, op, count, &k, &esize, &bytes);
	if (rc)
		return rc;
	if (nsrc == 0 || !srcs)
		return -EINVAL;
	if (count == 0)
		return 0;
	if (!dst)
		return -EINVAL;
	inplace = srcs[0] == dst;
	for (j = 0; j < nsrc; j++)
		if (!srcs[j] || ((j || !inplace) && vc_overlap(dst, srcs[j], bytes)))
			return -EINVAL;
	if (nsrc == 1) {
		if (!inplace)
			memcpy(dst, srcs[0], bytes);
		return 0;
	}
	/*
	 * Two sources: one pass.  More: a block of dst at a time takes every
	 * source while it is still in the cache; each element sees the
	 * sources in the same order either way.
	 */
	blk = nsrc > 2 ? VC_FOLD_BLOCK / esize : count;
	fp = vc_fp_enter(type);
	for (off = 0; off < count; off += n) {
		size_t at = off * esize;
		char *d = (char *)dst + at;

		n = count - off < blk ? count - off : blk;
		if (inplace)
			k->k2(d, (const char *)srcs[1] + at, n);
		else
			k->k3(d, (const char *)srcs[0] + at, (const char *)srcs[1] + at, n);
		for (j = 2; j < nsrc; j++)
			k->k2(d, (const char *)srcs[j] + at, n);
	}
	vc_fp_leave(fp);
	return 0;
}
