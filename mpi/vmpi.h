/* SPDX-License-Identifier: MIT */
/*
 * libvrdma-mpi.so: MPI's collectives on vrdma teams for unmodified MPI
 * programs, through the profiling interface (an MPI_Allreduce here that
 * calls vrdma_allreduce() or PMPI_Allreduce).  Internal header.
 *
 * The one rule every file keeps: whether a call goes to vrdma or to MPI
 * is the same in every rank of the communicator, or the ranks wait for
 * each other in two different collectives for ever.  So it is derived
 * only from what every rank passes alike (datatype, op, count, root),
 * the environment (the same in every rank: mpirun -x) and the
 * communicator's team state, which its ranks decide together.
 *
 *   mpi_types.c   MPI datatypes and ops to vrdma's, contiguous buffers
 *   mpi_team.c    the device, one team per communicator (an attribute),
 *                 MPI_Comm_free and MPI_Finalize
 *   vrdma_mpi.c   the collectives
 *
 * Errors: a team that cannot be built means MPI's own collectives for
 * that communicator; a vrdma error once the team exists ends the job
 * (vmpi_fatal), since the ranks can no longer agree on what they hold.
 */
#ifndef VMPI_H
#define VMPI_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "vrdma/coll.h"

/* vrdma's limit on one operation's vector (vrdma_coll_post: EOVERFLOW);
 * larger ones go to MPI, decided from the count every rank passes. */
#define VMPI_MAX_BYTES		((size_t)1 << 30)

/* env VRDMA_COLL */
enum vmpi_mode {
	VMPI_OFF,		/* every call to MPI */
	VMPI_ON,		/* teams as vrdmad decides (offload or not) */
	VMPI_GUEST,		/* teams in the guests: VRDMA_TEAM_NO_OFFLOAD */
};

/* A communicator's team: its attribute's value, from its first call that
 * vrdma can serve until MPI_Comm_free or MPI_Finalize. */
struct vmpi_team {
	MPI_Comm comm;
	struct vrdma_team *team;	/* NULL: MPI's own collectives */
	int rank, size;
	struct vmpi_team *prev, *next;	/* every live one (vmpi_lock) */
};

struct vmpi_conf {
	enum vmpi_mode mode;
	int timeout_ms;			/* VRDMA_COLL_TIMEOUT_MS */
	int verbose;			/* VRDMA_COLL_VERBOSE */
};

/* mpi_team.c */
const struct vmpi_conf *vmpi_conf(void);
struct vmpi_team *vmpi_team_get(MPI_Comm comm);
void vmpi_fatal(const struct vmpi_team *t, const char *call, int err)
	__attribute__((noreturn));

/* mpi_types.c */
int vmpi_reduction(MPI_Datatype dt, MPI_Op op, int count, uint32_t *type, uint32_t *vop);
int vmpi_contig(MPI_Datatype dt, int count, size_t *bytes);

#endif /* VMPI_H */
