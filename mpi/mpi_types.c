// SPDX-License-Identifier: MIT
/*
 * MPI datatypes and ops as vrdma's (vrdma/coll.h): the predefined integer
 * types by their size (MPI_LONG is 4 or 8 bytes by the ABI), float and
 * double, and the ops vcoll reduces.  Anything else -- other types,
 * derived types, user ops, MPI_LAND, bitwise ops on floats -- is MPI's.
 */
#include "vmpi.h"

/* 0: not one of vrdma's types */
static uint32_t vmpi_type(MPI_Datatype dt)
{
	int size = 0;
	enum { SIGNED = 1, UNSIGNED, FLOATING } kind = 0;

	if (dt == MPI_DATATYPE_NULL)
		return 0;
	if (dt == MPI_INT || dt == MPI_LONG || dt == MPI_LONG_LONG ||
	    dt == MPI_LONG_LONG_INT || dt == MPI_INT32_T || dt == MPI_INT64_T)
		kind = SIGNED;
	else if (dt == MPI_UNSIGNED || dt == MPI_UNSIGNED_LONG || dt == MPI_UNSIGNED_LONG_LONG ||
		 dt == MPI_UINT32_T || dt == MPI_UINT64_T)
		kind = UNSIGNED;
	else if (dt == MPI_FLOAT || dt == MPI_DOUBLE)
		kind = FLOATING;
	else
		return 0;
	if (PMPI_Type_size(dt, &size) != MPI_SUCCESS)
		return 0;
	switch (kind) {
	case SIGNED:
		return size == 4 ? VRDMA_COLL_INT32 : size == 8 ? VRDMA_COLL_INT64 : 0;
	case UNSIGNED:
		return size == 4 ? VRDMA_COLL_UINT32 : size == 8 ? VRDMA_COLL_UINT64 : 0;
	case FLOATING:
		/* binary32 and binary64: what vcoll's kernels compute */
		if (dt == MPI_FLOAT)
			return size == 4 && sizeof(float) == 4 ? VRDMA_COLL_FLOAT : 0;
		return size == 8 && sizeof(double) == 8 ? VRDMA_COLL_DOUBLE : 0;
	}
	return 0;
}

static uint32_t vmpi_op(MPI_Op op)
{
	if (op == MPI_SUM)
		return VRDMA_COLL_SUM;
	if (op == MPI_PROD)
		return VRDMA_COLL_PROD;
	if (op == MPI_MIN)
		return VRDMA_COLL_MIN;
	if (op == MPI_MAX)
		return VRDMA_COLL_MAX;
	if (op == MPI_BAND)
		return VRDMA_COLL_BAND;
	if (op == MPI_BOR)
		return VRDMA_COLL_BOR;
	if (op == MPI_BXOR)
		return VRDMA_COLL_BXOR;
	return 0;
}

/*
 * Can vrdma reduce count elements of dt with op?  1 with vrdma's type and
 * op, else 0.  Only arguments every rank passes alike decide.
 */
int vmpi_reduction(MPI_Datatype dt, MPI_Op op, int count, uint32_t *type, uint32_t *vop)
{
	uint32_t t = vmpi_type(dt), o = vmpi_op(op);
	size_t esize = t == VRDMA_COLL_INT32 || t == VRDMA_COLL_UINT32 ||
		       t == VRDMA_COLL_FLOAT ? 4 : 8;

	if (!t || !o || count < 0 || (size_t)count > VMPI_MAX_BYTES / esize)
		return 0;
	if (o >= VRDMA_COLL_BAND && (t == VRDMA_COLL_FLOAT || t == VRDMA_COLL_DOUBLE))
		return 0;	/* MPI refuses these too: its error, not ours */
	*type = t;
	*vop = o;
	return 1;
}

/*
 * Is a buffer of count dt one run of bytes from its address (size equal
 * to extent and true extent, both lower bounds 0)?  1 with *bytes, else
 * 0: derived types with holes or offsets are MPI's.
 */
int vmpi_contig(MPI_Datatype dt, int count, size_t *bytes)
{
	MPI_Aint lb, extent, tlb, textent;
	int size;

	if (dt == MPI_DATATYPE_NULL || count < 0 ||
	    PMPI_Type_size(dt, &size) != MPI_SUCCESS ||
	    PMPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS ||
	    PMPI_Type_get_true_extent(dt, &tlb, &textent) != MPI_SUCCESS)
		return 0;
	if (size < 0 || lb != 0 || tlb != 0 || extent != size || textent != size)
		return 0;
	*bytes = (size_t)count * (size_t)size;
	return 1;
}
