/* SPDX-License-Identifier: MIT */
/*
 * Reduction kernels of the collectives, one copy for dom0 (the offload)
 * and for the guest (the fallback): both must produce the same bits, so
 * both call these functions and nothing else to combine vectors.
 *
 * Types: int32, int64, uint32, uint64 (two's complement), float, double
 * (IEEE 754 binary32/binary64).  Ops: sum, prod, min, max, band, bor,
 * bxor; the bitwise ops on float and double are refused (-EINVAL).
 *
 * Integers: sum and prod wrap modulo 2^32 or 2^64 for signed types too
 * (computed in unsigned arithmetic: no overflow trap, no undefined
 * behaviour); min and max compare as signed or unsigned by the type.
 *
 * Floats, every op:
 *   - a NaN result is always the canonical quiet NaN, positive with a zero
 *     payload (float 0x7fc00000, double 0x7ff8000000000000), whatever the
 *     NaNs that produced it (sign, payload, signalling): which operand's
 *     payload a CPU keeps depends on the operand order an instruction got,
 *     so keeping payloads would make bits depend on code generation.
 *   - sum and prod are IEEE addition and multiplication, rounded to
 *     nearest-even, subnormals kept.  The kernels run in that environment
 *     whatever the caller set (on x86 MXCSR is set for the call and
 *     restored: a program built with -ffast-math runs with flush-to-zero,
 *     and its fallback must still match dom0).
 *   - min and max are IEEE 754-2019 minimum and maximum: a NaN operand
 *     wins (the result is the canonical NaN), and -0.0 < +0.0, so
 *     min(-0.0, +0.0) is -0.0 and max(-0.0, +0.0) is +0.0 in either
 *     operand order.  Both are then associative and commutative, so their
 *     results do not depend on the reduction order; sum and prod do.
 *
 * The order: a reduction of the contributions m0, m1, ..., m(n-1) is,
 * element by element, ((m0 OP m1) OP m2) ... OP m(n-1), left to right
 * (vcoll_fold).  Every op is commutative bit for bit (a OP b == b OP a,
 * NaNs canonical), but float sum and prod are not associative: another
 * grouping gives other bits (1e16 + -1e16 + 1 is 1 left to right, and 0
 * grouped as 1e16 + (-1e16 + 1)).  A collective's order is therefore part
 * of its definition (docs/collectives.md: a node's members are folded
 * first, then the nodes' partial results), and both implementations
 * reach the same grouping through these calls.
 *
 * Elements are independent: a vector may be split into chunks at element
 * boundaries, each chunk reduced by its own call, and the bits are the
 * same as in one call.  Buffers need no alignment.  The loops are plain C
 * that the compiler vectorizes at -O2 for the build's instruction set.
 *
 * Every call returns 0 or -errno and writes nothing when it fails.
 */
#ifndef VRDMA_VCOLL_REDUCE_H
#define VRDMA_VCOLL_REDUCE_H

#include <stddef.h>
#include <stdint.h>

/* Datatypes; 0 is no type, so a zeroed field is refused. */
enum vcoll_type {
	VCOLL_INT32 = 1,
	VCOLL_INT64 = 2,
	VCOLL_UINT32 = 3,
	VCOLL_UINT64 = 4,
	VCOLL_FLOAT = 5,
	VCOLL_DOUBLE = 6,
};
#define VCOLL_TYPE_MAX VCOLL_DOUBLE

/* Operations; 0 is no op. */
enum vcoll_op {
	VCOLL_SUM = 1,
	VCOLL_PROD = 2,
	VCOLL_MIN = 3,
	VCOLL_MAX = 4,
	VCOLL_BAND = 5,
	VCOLL_BOR = 6,
	VCOLL_BXOR = 7,
};
#define VCOLL_OP_MAX VCOLL_BXOR

/* Bytes of one element of type; 0 for an unknown type. */
size_t vcoll_type_size(uint32_t type);
/* "int32", "sum", ...; "?" for an unknown value. */
const char *vcoll_type_name(uint32_t type);
const char *vcoll_op_name(uint32_t op);

/*
 * Can (type, op) reduce count elements?  -EINVAL: unknown type or op, or
 * a bitwise op on float or double; -EOVERFLOW: count elements do not fit
 * in PTRDIFF_MAX bytes.  On success *bytes (if not NULL) is their length.
 */
int vcoll_check(uint32_t type, uint32_t op, size_t count, size_t *bytes);

/*
 * dst[i] = dst[i] OP src[i] for i < count.  dst and src must not overlap
 * (-EINVAL if they do, or if either is NULL while count > 0).
 */
int vcoll_combine(uint32_t type, uint32_t op, void *dst, const void *src, size_t count);

/*
 * dst[i] = ((srcs[0][i] OP srcs[1][i]) OP srcs[2][i]) ... OP srcs[nsrc-1][i]
 * for i < count, the one reduction order; nsrc >= 1 (one source: a plain
 * copy, NaNs unchanged).
 * dst may be srcs[0] itself (in place) but must not overlap any other
 * source, nor srcs[0] partly; the sources may overlap each other.  A long
 * vector with three or more sources is done in cache-sized blocks, each
 * element still in the order above.
 */
int vcoll_fold(uint32_t type, uint32_t op, void *dst, const void *const srcs[], size_t nsrc,
	       size_t count);

#endif /* VRDMA_VCOLL_REDUCE_H */
