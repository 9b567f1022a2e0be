// SPDX-License-Identifier: MIT
/*
 * One vrdma device per process and one team per communicator.
 *
 * A communicator's team is built on its first collective that vrdma can
 * serve (so every rank builds it in the same call), out of band through
 * MPI itself: rank 0 draws the key and broadcasts it, the ranks gather
 * each other's node names (vrdma_node_name(), 32-byte slots), then all
 * call vrdma_team_create().  The ranks agree twice with a PMPI_Allreduce
 * (MIN) -- that every rank has a device before any waits in
 * vrdma_team_create(), and that every rank's create succeeded -- so a
 * rank that cannot join costs one try, and the communicator uses MPI's
 * own collectives from then on, in every rank alike.
 *
 * The result is the communicator's attribute (a keyval whose delete
 * callback destroys the team): a struct vmpi_team, or vmpi_none for "MPI
 * decides".  A duplicate communicator gets no copy and builds its own.
 * MPI_Comm_free and MPI_Finalize first wait for every rank
 * (PMPI_Barrier): a member that leaves while another still completes the
 * last operation would break it there.
 *
 * Locks: vmpi_lock guards the device, the keyval and the list of live
 * teams; a team itself is used by one thread at a time, as MPI orders a
 * communicator's collectives.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmpi.h"

#define VMPI_NAME_SLOT		32	/* a node name and its NUL */
#define VMPI_TIMEOUT_MS		60000

static pthread_mutex_t vmpi_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t vmpi_conf_once = PTHREAD_ONCE_INIT;
static struct vmpi_conf vmpi_cf;
static struct vmpi_team vmpi_none;	/* the attribute of "MPI decides" */
static struct vmpi_team *vmpi_teams;	/* live ones, newest first */
static int vmpi_keyval = MPI_KEYVAL_INVALID;

static struct {
	int tried, err;
	const char *what;		/* the call that failed */
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
} vmpi_dev;

static void vmpi_conf_read(void)
{
	const char *m = getenv("VRDMA_COLL"), *to = getenv("VRDMA_COLL_TIMEOUT_MS");
	const char *v = getenv("VRDMA_COLL_VERBOSE");
	char *end;
	long ms;

	vmpi_cf.mode = VMPI_ON;
	if (m && *m && strcmp(m, "on") && strcmp(m, "1")) {
		if (!strcmp(m, "off") || !strcmp(m, "0")) {
			vmpi_cf.mode = VMPI_OFF;
		} else if (!strcmp(m, "guest")) {
			vmpi_cf.mode = VMPI_GUEST;
		} else {
			fprintf(stderr, "vrdma-mpi: VRDMA_COLL=%.32s: want on, off or guest; "
				"MPI's own collectives\n", m);
			vmpi_cf.mode = VMPI_OFF;
		}
	}
	vmpi_cf.timeout_ms = VMPI_TIMEOUT_MS;
	if (to && *to) {
		errno = 0;
		ms = strtol(to, &end, 10);
		if (errno || *end || ms <= 0 || ms > INT_MAX)
			fprintf(stderr, "vrdma-mpi: VRDMA_COLL_TIMEOUT_MS=%.32s: want 1..%d ms; "
				"%d\n", to, INT_MAX, VMPI_TIMEOUT_MS);
		else
			vmpi_cf.timeout_ms = (int)ms;
	}
	vmpi_cf.verbose = v && *v && strcmp(v, "0");
}

const struct vmpi_conf *vmpi_conf(void)
{
	pthread_once(&vmpi_conf_once, vmpi_conf_read);
	return &vmpi_cf;
}

/* "MPI_COMM_WORLD", or what the communicator is when it has no name */
static void vmpi_comm_name(MPI_Comm comm, int size, char *buf, size_t len)
{
	char name[MPI_MAX_OBJECT_NAME] = "";
	int n = 0;

	if (PMPI_Comm_get_name(comm, name, &n) != MPI_SUCCESS || n <= 0 || !name[0])
		snprintf(buf, len, "a communicator of %d ranks", size);
	else
		snprintf(buf, len, "%s", name);
}

void vmpi_fatal(const struct vmpi_team *t, const char *call, int err)
{
	char name[MPI_MAX_OBJECT_NAME + 32];

	vmpi_comm_name(t->comm, t->size, name, sizeof(name));
	fprintf(stderr, "vrdma-mpi: %s on %s: %s (rank %d of %d)\n", call, name, strerror(err),
		t->rank, t->size);
	fflush(stderr);
	PMPI_Abort(MPI_COMM_WORLD, 1);
	abort();	/* PMPI_Abort does not return */
}

/* The process's device and protection domain: opened once, its error
 * kept (a rank without vrdmad should not wait again for every
 * communicator).  0 or an errno value. */
static int vmpi_device(void)
{
	int err;

	pthread_mutex_lock(&vmpi_lock);
	if (!vmpi_dev.tried) {
		vmpi_dev.tried = 1;
		vmpi_dev.what = "vrdma_open";
		vmpi_dev.dev = vrdma_open(NULL, vmpi_cf.timeout_ms);
		if (!vmpi_dev.dev) {
			vmpi_dev.err = errno ? errno : EIO;
		} else if (!(vmpi_dev.pd = vrdma_alloc_pd(vmpi_dev.dev))) {
			vmpi_dev.err = errno ? errno : EIO;
			vmpi_dev.what = "vrdma_alloc_pd";
			vrdma_close(vmpi_dev.dev);
			vmpi_dev.dev = NULL;
		}
		if (vmpi_dev.err)
			fprintf(stderr, "vrdma-mpi: %s: %s; MPI's own collectives\n",
				vmpi_dev.what, strerror(vmpi_dev.err));
	}
	err = vmpi_dev.err;
	pthread_mutex_unlock(&vmpi_lock);
	return err;
}

/* Out of the list of live teams, and the team destroyed. */
static void vmpi_team_end(struct vmpi_team *t)
{
	struct vrdma_team_info info;
	char name[MPI_MAX_OBJECT_NAME + 32];

	if (vmpi_cf.verbose && t->rank == 0 && !vrdma_team_query(t->team, &info)) {
		vmpi_comm_name(t->comm, t->size, name, sizeof(name));
		fprintf(stderr, "vrdma-mpi: %s: team of %u ranks on %u node%s, %s%s%s, "
			"%llu operations, %llu bytes\n", name, info.size, info.nnodes,
			info.nnodes == 1 ? "" : "s",
			info.mode == VRDMA_TEAM_OFFLOAD ? "offload" : "in the guests",
			info.mode == VRDMA_TEAM_OFFLOAD || !info.why[0] ? "" : ": ",
			info.mode == VRDMA_TEAM_OFFLOAD ? "" : info.why,
			(unsigned long long)info.ops, (unsigned long long)info.bytes);
	}
	pthread_mutex_lock(&vmpi_lock);
	if (t->prev)
		t->prev->next = t->next;
	else
		vmpi_teams = t->next;
	if (t->next)
		t->next->prev = t->prev;
	t->prev = t->next = NULL;
	pthread_mutex_unlock(&vmpi_lock);
	vrdma_team_destroy(t->team);
	t->team = NULL;
}

static int vmpi_attr_delete(MPI_Comm comm, int keyval, void *val, void *extra)
{
	struct vmpi_team *t;

	(void)comm; (void)keyval; (void)extra;
	if (val && val != &vmpi_none) {
		t = val;
		if (t->team)
			vmpi_team_end(t);
		free(t);
	}
	return MPI_SUCCESS;
}

static void vmpi_mpi_failed(MPI_Comm comm, int size, const char *call)
{
	struct vmpi_team t = { .comm = comm, .size = size };

	PMPI_Comm_rank(comm, &t.rank);
	vmpi_fatal(&t, call, EIO);
}

/* This rank's part before the ranks agree: its device and node name.
 * 0 or an errno value, *what the step that failed. */
static int vmpi_local(char mine[VMPI_NAME_SLOT], const char **what)
{
	const char *n;
	int err = vmpi_device();

	*what = vmpi_dev.what;
	if (err)
		return err;
	*what = "vrdma_node_name";
	n = vrdma_node_name(vmpi_dev.dev);
	if (!n)
		return errno ? errno : EIO;
	if (strlen(n) >= VMPI_NAME_SLOT)
		return ENAMETOOLONG;
	strcpy(mine, n);
	return 0;
}

/*
 * Build comm's team, collectively: every rank returns a team or every
 * rank NULL.  PMPI failures end the job (the ranks would disagree).
 */
static struct vrdma_team *vmpi_build(MPI_Comm comm, int rank, int size)
{
	struct vrdma_team_attr attr = { .size = (uint32_t)size, .rank = (uint32_t)rank };
	char mine[VMPI_NAME_SLOT] = "", (*names)[VMPI_NAME_SLOT] = NULL;
	const char **nodes = NULL, *what = "malloc";
	struct vrdma_team *team = NULL;
	int err = ENOMEM, ok, r;

	names = calloc((size_t)size, VMPI_NAME_SLOT);
	nodes = calloc((size_t)size, sizeof(*nodes));
	if (names && nodes)
		err = vmpi_local(mine, &what);
	if (!err && rank == 0) {
		what = "vrdma_team_key";
		err = vrdma_team_key(attr.key);
	}
	if (err && (what != vmpi_dev.what || vmpi_dev.err != err))	/* (said once) */
		fprintf(stderr, "vrdma-mpi: %s: %s; MPI's own collectives\n", what,
			strerror(err));
	/* every rank ready, or none waits in vrdma_team_create() */
	ok = !err;
	if (PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
		vmpi_mpi_failed(comm, size, "MPI_Allreduce (team agreement)");
	if (!ok)
		goto out;
	if (PMPI_Bcast(attr.key, VRDMA_TEAM_KEY_LEN, MPI_BYTE, 0, comm) != MPI_SUCCESS ||
	    PMPI_Allgather(mine, VMPI_NAME_SLOT, MPI_CHAR, names, VMPI_NAME_SLOT, MPI_CHAR,
			   comm) != MPI_SUCCESS)
		vmpi_mpi_failed(comm, size, "MPI_Bcast/MPI_Allgather (team key, nodes)");
	for (r = 0; r < size; r++) {
		names[r][VMPI_NAME_SLOT - 1] = '\0';
		nodes[r] = names[r];
	}
	attr.nodes = nodes;
	attr.flags = vmpi_cf.mode == VMPI_GUEST ? VRDMA_TEAM_NO_OFFLOAD : 0;
	team = vrdma_team_create(vmpi_dev.pd, &attr, vmpi_cf.timeout_ms);
	if (!team)
		fprintf(stderr, "vrdma-mpi: vrdma_team_create (rank %d of %d): %s; MPI's own "
			"collectives\n", rank, size, strerror(errno));
	ok = team != NULL;
	if (PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
		vmpi_mpi_failed(comm, size, "MPI_Allreduce (team agreement)");
	if (!ok && team) {
		vrdma_team_destroy(team);
		team = NULL;
	}
out:
	free(nodes);
	free(names);
	return team;
}

static int vmpi_keyval_get(void)
{
	int kv;

	pthread_mutex_lock(&vmpi_lock);
	if (vmpi_keyval == MPI_KEYVAL_INVALID &&
	    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, vmpi_attr_delete, &vmpi_keyval,
				    NULL) != MPI_SUCCESS)
		vmpi_keyval = MPI_KEYVAL_INVALID;
	kv = vmpi_keyval;
	pthread_mutex_unlock(&vmpi_lock);
	return kv;
}

/*
 * comm's team, built on the first call, or NULL: MPI's own collectives
 * (off, one rank, an intercommunicator, a team that could not be built).
 * The same answer in every rank of comm.
 */
struct vmpi_team *vmpi_team_get(MPI_Comm comm)
{
	struct vmpi_team *t;
	int inter = 0, size = 0, rank = 0, found = 0, kv;
	void *val = NULL;

	if (vmpi_conf()->mode == VMPI_OFF || comm == MPI_COMM_NULL ||
	    PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter ||
	    PMPI_Comm_size(comm, &size) != MPI_SUCCESS || size < 2 ||
	    size > VRDMA_TEAM_MAX_SIZE)
		return NULL;
	kv = vmpi_keyval_get();
	if (kv == MPI_KEYVAL_INVALID)
		vmpi_mpi_failed(comm, size, "MPI_Comm_create_keyval");
	if (PMPI_Comm_get_attr(comm, kv, &val, &found) != MPI_SUCCESS)
		vmpi_mpi_failed(comm, size, "MPI_Comm_get_attr");
	if (found)	/* (a team ended by MPI_Finalize has none) */
		return val == &vmpi_none || !((struct vmpi_team *)val)->team ? NULL : val;

	PMPI_Comm_rank(comm, &rank);
	t = calloc(1, sizeof(*t));
	if (!t) {	/* the others may have built theirs */
		struct vmpi_team e = { .comm = comm, .rank = rank, .size = size };

		vmpi_fatal(&e, "building a team", ENOMEM);
	}
	t->comm = comm;
	t->rank = rank;
	t->size = size;
	t->team = vmpi_build(comm, rank, size);
	if (!t->team) {
		free(t);
		t = NULL;
	}
	if (PMPI_Comm_set_attr(comm, kv, t ? (void *)t : (void *)&vmpi_none) != MPI_SUCCESS)
		vmpi_mpi_failed(comm, size, "MPI_Comm_set_attr");
	if (t) {
		pthread_mutex_lock(&vmpi_lock);
		t->next = vmpi_teams;
		if (vmpi_teams)
			vmpi_teams->prev = t;
		vmpi_teams = t;
		pthread_mutex_unlock(&vmpi_lock);
	}
	return t;
}

/* A team goes with its communicator, once every rank is done with it. */
int MPI_Comm_free(MPI_Comm *comm)
{
	void *val = NULL;
	int found = 0;

	if (vmpi_conf()->mode != VMPI_OFF && comm && *comm != MPI_COMM_NULL &&
	    vmpi_keyval != MPI_KEYVAL_INVALID &&
	    PMPI_Comm_get_attr(*comm, vmpi_keyval, &val, &found) == MPI_SUCCESS &&
	    found && val != &vmpi_none)
		PMPI_Barrier(*comm);
	return PMPI_Comm_free(comm);	/* vmpi_attr_delete destroys the team */
}

/*
 * Every team goes, then the device, before MPI ends: the barrier on
 * MPI_COMM_WORLD (every rank calls it whatever teams it holds: the mode
 * is the same everywhere) lets every rank finish its last operation.
 */
int MPI_Finalize(void)
{
	struct vmpi_team *t;

	if (vmpi_conf()->mode == VMPI_OFF)
		return PMPI_Finalize();
	PMPI_Barrier(MPI_COMM_WORLD);
	for (;;) {
		pthread_mutex_lock(&vmpi_lock);
		t = vmpi_teams;
		pthread_mutex_unlock(&vmpi_lock);
		if (!t)
			break;
		/* (the callback did not run: the attribute, now teamless,
		 * stays for MPI to delete) */
		if (PMPI_Comm_delete_attr(t->comm, vmpi_keyval) != MPI_SUCCESS)
			vmpi_team_end(t);
	}
	if (vmpi_keyval != MPI_KEYVAL_INVALID)
		PMPI_Comm_free_keyval(&vmpi_keyval);
	if (vmpi_dev.dev) {
		vrdma_dealloc_pd(vmpi_dev.pd);
		vrdma_close(vmpi_dev.dev);
		vmpi_dev.dev = NULL;
	}
	return PMPI_Finalize();
}
