// SPDX-License-Identifier: MIT
/*
 * The collectives: MPI_Allreduce, MPI_Reduce, MPI_Bcast, MPI_Barrier and
 * MPI_Allgather on the communicator's vrdma team when vrdma can serve the
 * call, else the PMPI_ version (vmpi.h: the choice is the same in every
 * rank).  vrdma can serve:
 *   - reductions of MPI_INT, MPI_LONG, ... MPI_FLOAT, MPI_DOUBLE with
 *     MPI_SUM, PROD, MIN, MAX, BAND, BOR, BXOR (mpi_types.c);
 *   - broadcasts and gathers of any datatype that is one run of bytes;
 *   - vectors of at most 1 GiB.
 * MPI_IN_PLACE is honoured as MPI defines it; a count of 0 is a call like
 * any other (every rank still takes part).
 */
#include "vmpi.h"

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
		  MPI_Op op, MPI_Comm comm)
{
	struct vmpi_team *t;
	uint32_t type, vop;
	int r;

	if (!vmpi_reduction(datatype, op, count, &type, &vop) || !(t = vmpi_team_get(comm)))
		return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
	/* in place: this rank's vector is in recvbuf, and the result goes
	 * over it (vrdma reads each chunk before it writes it) */
	r = vrdma_allreduce(t->team, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvbuf,
			    (size_t)count, type, vop, vmpi_conf()->timeout_ms);
	if (r)
		vmpi_fatal(t, "MPI_Allreduce", r);
	return MPI_SUCCESS;
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
	       MPI_Op op, int root, MPI_Comm comm)
{
	struct vmpi_team *t;
	uint32_t type, vop;
	int r;

	if (!vmpi_reduction(datatype, op, count, &type, &vop) || !(t = vmpi_team_get(comm)) ||
	    root < 0 || root >= t->size)
		return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
	/* recvbuf is the root's only: elsewhere MPI lets it be anything */
	if (t->rank != root)
		recvbuf = NULL;
	else if (sendbuf == MPI_IN_PLACE)
		sendbuf = recvbuf;
	r = vrdma_reduce(t->team, sendbuf, recvbuf, (size_t)count, type, vop, (uint32_t)root,
			 vmpi_conf()->timeout_ms);
	if (r)
		vmpi_fatal(t, "MPI_Reduce", r);
	return MPI_SUCCESS;
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
	struct vmpi_team *t;
	size_t bytes;
	int r;

	if (!vmpi_contig(datatype, count, &bytes) || bytes > VMPI_MAX_BYTES ||
	    !(t = vmpi_team_get(comm)) || root < 0 || root >= t->size)
		return PMPI_Bcast(buffer, count, datatype, root, comm);
	r = vrdma_bcast(t->team, buffer, bytes, (uint32_t)root, vmpi_conf()->timeout_ms);
	if (r)
		vmpi_fatal(t, "MPI_Bcast", r);
	return MPI_SUCCESS;
}

int MPI_Barrier(MPI_Comm comm)
{
	struct vmpi_team *t = vmpi_team_get(comm);
	int r;

	if (!t)
		return PMPI_Barrier(comm);
	r = vrdma_barrier(t->team, vmpi_conf()->timeout_ms);
	if (r)
		vmpi_fatal(t, "MPI_Barrier", r);
	return MPI_SUCCESS;
}

/*
 * Each rank's block is recvcount recvtype (and as many bytes of sendtype);
 * vrdma gathers blocks of bytes, rank r's at r * bytes.  In place, this
 * rank's block is already there, and vrdma takes it from there.
 */
int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
	struct vmpi_team *t;
	size_t bytes, sbytes = 0;
	const void *src = sendbuf;
	int r;

	if (!vmpi_contig(recvtype, recvcount, &bytes) ||
	    (sendbuf != MPI_IN_PLACE &&
	     (!vmpi_contig(sendtype, sendcount, &sbytes) || sbytes != bytes)) ||
	    !(t = vmpi_team_get(comm)) || bytes > VMPI_MAX_BYTES / (size_t)t->size)
		return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
				      comm);
	if (sendbuf == MPI_IN_PLACE)
		src = (char *)recvbuf + (size_t)t->rank * bytes;
	r = vrdma_allgather(t->team, src, recvbuf, bytes, vmpi_conf()->timeout_ms);
	if (r)
		vmpi_fatal(t, "MPI_Allgather", r);
	return MPI_SUCCESS;
}
