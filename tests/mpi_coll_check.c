// SPDX-License-Identifier: MIT
/*
 * mpi_coll_check: a plain MPI program (no vrdma call) that checks what
 * MPI's collectives give, for libvrdma-mpi.so (tests/middleware.sh runs it
 * through vrdma-run --coll, with and without vrdma) and for any MPI.
 *
 *   - MPI_Allreduce and MPI_Reduce of the predefined integer types, float
 *     and double with SUM, PROD, MIN, MAX (and BAND, BOR, BXOR on
 *     integers): counts 0, 1, 1001, 1 MiB, 16 MiB, in place and not, at
 *     several roots; values whose results are exact in any order.
 *   - MPI_Bcast and MPI_Allgather (in place too) of several sizes and
 *     datatypes; MPI_Barrier (a counter in a shared window, every round).
 *   - Calls a wrapper must leave to MPI: MPI_SHORT, MPI_LAND, a user op,
 *     a strided datatype, MPI_COMM_SELF.
 *   - A sub-communicator (MPI_Comm_split, ranks reversed) and a duplicate.
 *
 * Rank 0 prints "N ranks, C checks, all correct, B bytes between ranks"
 * (B: a lower bound of what had to cross between ranks) and two FNV-1a
 * digests: "exact" of the exact results (the same under any correct MPI)
 * and "float" of allreduces of random floats, whose last bits depend on
 * the order of the additions.  A wrong result is printed by the rank
 * that saw it; every rank exits 1.
 *
 * MPI_COLL_CHECK_MAX_BYTES=N (every rank the same: mpirun -x) cuts every
 * vector above N bytes to N, for small machines (the Xen rig's domUs:
 * 256 MB and an emulated CPU, 1 MiB): the same checks and lines, and
 * digests comparable between runs with the same N.  Default 16 MiB, the
 * largest vector, so nothing is cut.
 */
#include <errno.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB		((size_t)1 << 20)
#define N(a)		(sizeof(a) / sizeof((a)[0]))
enum kind { SIGNED, UNSIGNED, FLOATING };

struct ty {
	MPI_Datatype dt;
	const char *name;
	enum kind kind;
	size_t size;
	int top;		/* unsigned MIN/MAX values may set the top bit */
};

static int rank, nranks;
static long checks, errors;
static uint64_t crossed;	/* bytes that had to reach rank 0 or its peers */
static size_t max_bytes = 16 * MIB;	/* MPI_COLL_CHECK_MAX_BYTES */
static uint64_t dig_exact = 0xcbf29ce484222325ull, dig_float = 0xcbf29ce484222325ull;
static struct ty types[12];
static size_t ntypes;
static MPI_Op ops[7];
static const char *const op_names[7] = { "sum", "prod", "min", "max", "band", "bor", "bxor" };
enum { SUM, PROD, MIN, MAX, BAND, BOR, BXOR };

static void fnv(uint64_t *h, const void *p, size_t len)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		*h = (*h ^ b[i]) * 0x100000001b3ull;
}

static void *xmalloc(size_t len)
{
	void *p = malloc(len ? len : 1);

	if (!p && fprintf(stderr, "mpi_coll_check: rank %d: no memory\n", rank))
		MPI_Abort(MPI_COMM_WORLD, 2);
	return p;
}

static void wrong(const char *what, size_t i, const char *got, const char *want)
{
	if (errors++ < 8)
		fprintf(stderr, "mpi_coll_check: rank %d: %s: element %zu is %s, not %s\n", rank,
			what, i, got, want);
}

static void expect(int ok, const char *what)
{
	checks++;
	if (!ok)
		wrong(what, 0, "wrong", "what MPI specifies");
}

/* count elements of size bytes, or as many as max_bytes holds */
static size_t upto(size_t count, size_t size)
{
	return count > max_bytes / size ? max_bytes / size : count;
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t mask(const struct ty *t)
{
	return t->size == 8 ? ~0ull : (1ull << (8 * t->size)) - 1;
}

/* rank r's element i for op, as the integer's bits or the float's value */
static uint64_t gen_int(const struct ty *t, int op, int r, size_t i)
{
	int64_t v;
	uint64_t m = mix(i * 131 + (uint64_t)r * 7 + (uint64_t)op);

	switch (op) {
	case SUM:
		v = (int64_t)((i * 7 + (size_t)r * 3) % 23) - (t->kind == SIGNED ? 11 : 0);
		break;
	case PROD:
		v = (i + 2 * (size_t)r) % 5 == 0 ? 2 : (i + 2 * (size_t)r) % 5 == 1 ? 3 : 1;
		if (t->kind == SIGNED && v == 3)
			v = -1;
		break;
	case MIN:
	case MAX:
		v = (int64_t)(m % 2001);
		if (t->kind == SIGNED)
			v -= 1000;
		if (t->size == 8)
			v *= (int64_t)1 << 33;
		if (t->top && m % 3 == 0)	/* the top bit: unsigned order */
			v += (int64_t)(1ull << (8 * t->size - 1));
		break;
	default:
		return m & mask(t);
	}
	return (uint64_t)v & mask(t);
}

static double gen_float(int op, int r, size_t i)
{
	switch (op) {
	case SUM:
		return (double)((i * 7 + (size_t)r * 3) % 23) - 11;
	case PROD:
		return (i + 2 * (size_t)r) % 5 == 0 ? 2 : (i + 2 * (size_t)r) % 5 == 1 ? -0.5 : 1;
	default:
		return ((double)(mix(i * 131 + (uint64_t)r * 7 + (uint64_t)op) % 2001) - 1000) / 4;
	}
}

static int64_t sext(const struct ty *t, uint64_t v)
{
	return t->size == 8 ? (int64_t)v : (int64_t)(int32_t)(uint32_t)v;
}

static uint64_t op_int(const struct ty *t, int op, uint64_t a, uint64_t b)
{
	int lt = t->kind == SIGNED ? sext(t, a) < sext(t, b) : a < b;

	switch (op) {
	case SUM:	return (a + b) & mask(t);
	case PROD:	return (a * b) & mask(t);
	case MIN:	return lt ? a : b;
	case MAX:	return lt ? b : a;
	case BAND:	return a & b;
	case BOR:	return a | b;
	default:	return a ^ b;
	}
}

/* Element i of rank r's vector (nr == 0), or of the reduction of ranks
 * 0..nr-1's, as its bytes: the low t->size of the value (little endian). */
static uint64_t elem(const struct ty *t, int op, int r, int nr, size_t i)
{
	uint64_t u;
	double d;
	float f;

	if (t->kind != FLOATING) {
		if (!nr)
			return gen_int(t, op, r, i);
		for (u = gen_int(t, op, 0, i), r = 1; r < nr; r++)
			u = op_int(t, op, u, gen_int(t, op, r, i));
		return u;
	}
	d = gen_float(op, nr ? 0 : r, i);
	for (r = 1; r < nr; r++) {
		double b = gen_float(op, r, i);

		d = op == SUM ? d + b : op == PROD ? d * b : op == MIN ? (d < b ? d : b) :
		    (d > b ? d : b);
	}
	f = (float)d;
	u = 0;
	memcpy(&u, t->size == 4 ? (void *)&f : (void *)&d, t->size);
	return u;
}

static void fill(const struct ty *t, int op, void *buf, size_t count, int crank)
{
	size_t i;
	uint64_t u;

	for (i = 0; i < count; i++) {
		u = elem(t, op, crank, 0, i);
		memcpy((char *)buf + i * t->size, &u, t->size);
	}
}

/* buf holds the reduction of the csize ranks' fill(); counted, digested */
static void check_red(const char *what, const struct ty *t, int op, const void *buf, size_t count,
		      int csize)
{
	char got[24], want[24];
	uint64_t g, w;
	size_t i;

	checks++;
	for (i = 0; i < count; i++) {
		g = 0;
		memcpy(&g, (const char *)buf + i * t->size, t->size);
		w = elem(t, op, 0, csize, i);
		if (g == w)
			continue;
		snprintf(got, sizeof(got), "%#llx", (unsigned long long)g);
		snprintf(want, sizeof(want), "%#llx", (unsigned long long)w);
		wrong(what, i, got, want);
		break;
	}
	fnv(&dig_exact, buf, count * t->size);
}

/* Allreduce, in place or not, and Reduce at root (in place or not) */
static void reduce_one(MPI_Comm comm, const struct ty *t, int op, size_t count, int how, int root)
{
	char what[128];
	int crank, csize;
	void *s, *d;

	count = upto(count, t->size);
	s = xmalloc(count * t->size), d = xmalloc(count * t->size);
	MPI_Comm_rank(comm, &crank);
	MPI_Comm_size(comm, &csize);
	if (how < 2)
		snprintf(what, sizeof(what), "allreduce %s %s count %zu%s", t->name, op_names[op],
			 count, how ? " in place" : "");
	else
		snprintf(what, sizeof(what), "reduce %s %s count %zu%s at root %d", t->name,
			 op_names[op], count, how == 3 ? " in place" : "", root);
	fill(t, op, s, count, crank);
	memset(d, 0xa5, count * t->size);
	/* in place: this rank's vector in d (memcpy returns d) */
	if (how == 0)
		MPI_Allreduce(s, d, (int)count, t->dt, ops[op], comm);
	else if (how == 1)
		MPI_Allreduce(MPI_IN_PLACE, memcpy(d, s, count * t->size), (int)count, t->dt,
			      ops[op], comm);
	else if (how == 3 && crank == root)
		MPI_Reduce(MPI_IN_PLACE, memcpy(d, s, count * t->size), (int)count, t->dt,
			   ops[op], root, comm);
	else	/* a non-root's recvbuf is not MPI's to touch: NULL */
		MPI_Reduce(s, crank == root ? d : NULL, (int)count, t->dt, ops[op], root, comm);
	if (how < 2 || crank == root)
		check_red(what, t, op, d, count, csize);
	/* every rank, or the root, needs every other's part: one vector;
	 * a communicator of one rank moves nothing */
	if (csize > 1)
		crossed += (how < 2 ? (uint64_t)csize : 1) * count * t->size;
	free(s), free(d);
}

static void check_reductions(MPI_Comm comm, int csize, int big)
{
	static const size_t counts[] = { 0, 1, 1001 };
	size_t k, c, n = 0;
	int op;

	for (k = 0; k < ntypes; k++) {
		const struct ty *t = &types[k];

		for (op = 0; op < 7; op++) {
			if (t->kind == FLOATING && op >= BAND)
				continue;
			for (c = 0; c < N(counts); c++)
				reduce_one(comm, t, op, counts[c], 0, 0);
			if (n == 0)
				reduce_one(comm, t, op, 0, 2, csize - 1);
			reduce_one(comm, t, op, 1001, 1, 0);
			reduce_one(comm, t, op, 1001, 2, (int)(n % (size_t)csize));
			reduce_one(comm, t, op, 1001, 3, (int)((n + 1) % (size_t)csize));
			if (k < 6 && big)	/* 1 MiB: the six C types, not their aliases */
				reduce_one(comm, t, op, MIB / t->size, n & 1, 0);
			n++;
		}
	}
	if (!big)
		return;
	reduce_one(comm, &types[0], SUM, 16 * MIB / 4, 0, 0);		/* int */
	reduce_one(comm, &types[5], SUM, 16 * MIB / 8, 1, 0);		/* double, in place */
	reduce_one(comm, &types[4], MAX, 16 * MIB / 4, 2, csize - 1);	/* float */
}

static unsigned char pat(size_t i, int who, int round)
{
	return (unsigned char)(i * 7 + (size_t)who * 31 + (size_t)round * 13 + (i >> 11));
}

static void check_bytes(const char *what, const unsigned char *b, size_t len, int who,
			int round)
{
	char got[8], want[8];
	size_t i;

	for (i = 0; i < len; i++) {
		if (b[i] == pat(i, who, round))
			continue;
		snprintf(got, sizeof(got), "%#x", b[i]);
		snprintf(want, sizeof(want), "%#x", pat(i, who, round));
		wrong(what, i, got, want);
		break;
	}
	fnv(&dig_exact, b, len);
}

/* count of dt (size bytes each, one run of bytes from its address) */
static void bcast_one(MPI_Comm comm, MPI_Datatype dt, const char *name, size_t size,
		      size_t count, int root, int round)
{
	unsigned char *b;
	char what[96];
	int crank, csize;
	size_t len, i;

	count = upto(count, size);
	len = count * size;
	b = xmalloc(len);
	MPI_Comm_rank(comm, &crank);
	MPI_Comm_size(comm, &csize);
	for (i = 0; i < len; i++)
		b[i] = crank == root ? pat(i, root, round) : 0xee;
	MPI_Bcast(b, (int)count, dt, root, comm);
	snprintf(what, sizeof(what), "bcast of %zu %s from %d", count, name, root);
	checks++;
	check_bytes(what, b, len, root, round);
	free(b);
	crossed += (uint64_t)(csize - 1) * len;
}

/* every rank's block of `each` bytes, sent as scount stype */
static void allgather_one(MPI_Comm comm, size_t each, int in_place, MPI_Datatype stype,
			  size_t ssize, int round)
{
	unsigned char *s, *d;
	char what[96];
	int crank, csize, r;
	size_t i;

	each = upto(each / ssize, ssize) * ssize;	/* whole send elements */
	s = xmalloc(each);
	MPI_Comm_rank(comm, &crank);
	MPI_Comm_size(comm, &csize);
	d = xmalloc(each * (size_t)csize);
	memset(d, 0xee, each * (size_t)csize);
	for (i = 0; i < each; i++)
		s[i] = pat(i, crank, round);
	if (in_place) {
		memcpy(d + (size_t)crank * each, s, each);
		MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d, (int)each, MPI_BYTE, comm);
	} else {
		MPI_Allgather(s, (int)(each / ssize), stype, d, (int)each, MPI_BYTE, comm);
	}
	snprintf(what, sizeof(what), "allgather of %zu bytes each%s", each,
		 in_place ? " in place" : "");
	checks++;
	for (r = 0; r < csize; r++)
		check_bytes(what, d + (size_t)r * each, each, r, round);
	free(s), free(d);
	crossed += (uint64_t)csize * (uint64_t)(csize - 1) * each;
}

static void check_bcast_allgather(MPI_Comm comm, int csize, int big)
{
	static const size_t bc[] = { 0, 1, 7, 4096, 65537, MIB + 3, 16 * MIB };
	static const size_t ag[] = { 0, 1, 13, 4096, 65541, MIB };
	MPI_Datatype tri, strided;
	size_t k;

	for (k = 0; k < N(bc) - !big; k++)
		bcast_one(comm, MPI_BYTE, "bytes", 1, bc[k], (int)(k % (size_t)csize), (int)k);
	bcast_one(comm, MPI_INT, "int", sizeof(int), 1001, csize - 1, 1);
	bcast_one(comm, MPI_SHORT, "short", sizeof(short), 333, csize / 2, 2);
	MPI_Type_contiguous(3, MPI_INT, &tri);
	MPI_Type_commit(&tri);
	bcast_one(comm, tri, "3 ints", 3 * sizeof(int), 5, 0, 3);
	/* a strided type: every other int (MPI's own broadcast) */
	MPI_Type_vector(64, 1, 2, MPI_INT, &strided);
	MPI_Type_commit(&strided);
	{
		int b[128], i, crank, ok = 1;

		MPI_Comm_rank(comm, &crank);
		for (i = 0; i < 128; i++)
			b[i] = crank == 0 || i % 2 ? i * 3 + 1 + crank * (i % 2) : -1;
		MPI_Bcast(b, 1, strided, 0, comm);
		for (i = 0; i < 128; i++)
			ok &= b[i] == (i % 2 ? i * 3 + 1 + crank : i * 3 + 1);
		expect(ok, "bcast of a strided type");
	}
	MPI_Type_free(&strided);
	for (k = 0; k < N(ag) - !big; k++) {
		allgather_one(comm, ag[k], 0, MPI_BYTE, 1, (int)k);
		allgather_one(comm, ag[k], 1, MPI_BYTE, 1, (int)k + 10);
	}
	allgather_one(comm, 3 * sizeof(int) * 100, 0, tri, 3 * sizeof(int), 20);
	MPI_Type_free(&tri);
}

/* Every rank adds one to a counter in node-shared memory, then the
 * barrier: after round k it must have seen every node-local rank's k. */
static void check_barrier(MPI_Comm comm)
{
	MPI_Comm node;
	MPI_Win win;
	long *ctr = NULL;
	int nl, k, r;

	MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
	MPI_Comm_size(node, &nl);
	MPI_Win_allocate_shared(sizeof(long), sizeof(long), MPI_INFO_NULL, node, &ctr, &win);
	MPI_Win_shared_query(win, 0, &(MPI_Aint){ 0 }, &(int){ 0 }, &ctr);
	MPI_Win_lock_all(0, win);
	MPI_Comm_rank(node, &r);
	if (r == 0)	/* (a window's memory starts undefined) */
		__atomic_store_n(ctr, 0, __ATOMIC_SEQ_CST);
	MPI_Win_sync(win);
	MPI_Barrier(node);
	for (k = 1; k <= 20; k++) {
		long c;

		usleep((useconds_t)((rank * 37 + k) % 5) * 300);
		__atomic_add_fetch(ctr, 1, __ATOMIC_SEQ_CST);
		MPI_Barrier(comm);
		c = __atomic_load_n(ctr, __ATOMIC_SEQ_CST);
		expect(c >= (long)k * nl && c <= (long)(k + 1) * nl,
		       "barrier: a rank left before every rank had come");
	}
	MPI_Win_unlock_all(win);
	MPI_Win_free(&win);
	MPI_Comm_free(&node);
}

static void user_max(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	int i, *a = in, *b = inout;

	(void)dt;
	for (i = 0; i < *len; i++)
		b[i] = a[i] > b[i] ? a[i] : b[i];
}

/* What a wrapper must leave to MPI, and MPI_COMM_SELF */
static void check_others(MPI_Comm comm, int csize)
{
	int x[5], d[5], i, r, crank, sum = 1, land = 1, umax = 1;
	short s[5], ds[5];
	MPI_Op um;

	MPI_Comm_rank(comm, &crank);
	for (i = 0; i < 5; i++)
		s[i] = (short)(crank + i), x[i] = (i + crank) % 3 != 0;
	MPI_Allreduce(s, ds, 5, MPI_SHORT, MPI_SUM, comm);
	MPI_Allreduce(x, d, 5, MPI_INT, MPI_LAND, comm);
	for (i = 0; i < 5; i++) {
		int all = 1;

		for (r = 0; r < csize; r++)
			all &= (i + r) % 3 != 0;
		sum &= ds[i] == (short)(csize * i + csize * (csize - 1) / 2);
		land &= !d[i] == !all;
		x[i] = (i * 5 + crank * 3) % 11;
	}
	MPI_Op_create(user_max, 1, &um);
	MPI_Allreduce(x, d, 0, MPI_INT, um, comm);
	MPI_Allreduce(x, d, 5, MPI_INT, um, comm);
	MPI_Op_free(&um);
	for (i = 0; i < 5; i++) {
		int m = 0;

		for (r = 0; r < csize; r++)
			m = (i * 5 + r * 3) % 11 > m ? (i * 5 + r * 3) % 11 : m;
		umax &= d[i] == m;
	}
	expect(sum, "allreduce of shorts");
	expect(land, "allreduce with MPI_LAND");
	expect(umax, "allreduce with a user op");
	MPI_Allreduce(&rank, &i, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
	expect(i == rank, "allreduce on MPI_COMM_SELF");
}

/* Allreduces of random floats: the digest of an order */
static void check_float_digest(MPI_Comm comm, int csize)
{
	static const size_t counts[] = { 1001, MIB / 8 };
	size_t k, i;

	for (k = 0; k < N(counts); k++) {
		size_t n = upto(counts[k], 8);
		double *s = xmalloc(n * 8), *d = xmalloc(n * 8);
		float *fs = xmalloc(n * 4), *fd = xmalloc(n * 4);

		for (i = 0; i < n; i++) {
			uint64_t m = mix((uint64_t)rank << 32 | i);

			s[i] = ((double)(m >> 11) / 9007199254740992.0 - 0.5) * (double)(1 << (m % 20));
			fs[i] = (float)s[i];
		}
		MPI_Allreduce(s, d, (int)n, MPI_DOUBLE, MPI_SUM, comm);
		MPI_Allreduce(fs, fd, (int)n, MPI_FLOAT, MPI_SUM, comm);
		fnv(&dig_float, d, n * 8);
		fnv(&dig_float, fd, n * 4);
		if (csize > 1)
			crossed += (uint64_t)csize * n * 12;
		free(s), free(d), free(fs), free(fd);
	}
}

/*
 * Does this MPI's own MIN and MAX order dt as unsigned?  Some compare
 * signed (Open MPI 4.1.2 to 4.1.4 MPI_UNSIGNED_LONG, open-mpi/ompi#10525;
 * MPICH 4.0.2 every unsigned type, pmodels/mpich#6083): for those the
 * values keep the top bit clear, so MPI's own collectives pass and the
 * digests of a run with and one without an offload stay comparable.
 */
static int orders_unsigned(MPI_Datatype dt, size_t size)
{
	uint64_t one = 1, top = 1ull << (8 * size - 1), a, b;

	a = top, b = one;
	MPI_Reduce_local(&one, &a, 1, dt, MPI_MIN);	/* (little endian) */
	MPI_Reduce_local(&top, &b, 1, dt, MPI_MAX);
	if (a == one && b == top)
		return 1;
	if (rank == 0)
		printf("mpi_coll_check: this MPI's own MPI_MIN and MPI_MAX order %s as signed: "
		       "its values stay below 2^%zu\n", types[ntypes].name, 8 * size - 1);
	return 0;
}

static void add_type(MPI_Datatype dt, const char *name, enum kind kind)
{
	struct ty *t = &types[ntypes];
	int size;

	MPI_Type_size(dt, &size);
	if (size != 4 && size != 8) {
		fprintf(stderr, "mpi_coll_check: %s has %d bytes, not 4 or 8\n", name, size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	*t = (struct ty){ dt, name, kind, (size_t)size, 0 };
	t->top = kind == UNSIGNED && orders_unsigned(dt, (size_t)size);
	ntypes++;
}

/* MPI_COLL_CHECK_MAX_BYTES into max_bytes; a bad value ends the job */
static void read_max_bytes(void)
{
	const char *v = getenv("MPI_COLL_CHECK_MAX_BYTES");
	unsigned long long n;
	char *end;

	if (!v || !*v)
		return;
	errno = 0;
	n = strtoull(v, &end, 10);
	/* 64 KiB or more: the cut is for the large vectors, never the
	 * 1001-element ones the odd-size checks are made of */
	if (errno || *end || *v == '-' || n < 64 * 1024 || n > SIZE_MAX) {
		fprintf(stderr, "mpi_coll_check: rank %d: MPI_COLL_CHECK_MAX_BYTES=%.32s: want "
			"bytes, 65536 or more\n", rank, v);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (n < max_bytes)
		max_bytes = (size_t)n;
	if (rank == 0)
		printf("mpi_coll_check: vectors of at most %zu bytes (MPI_COLL_CHECK_MAX_BYTES)\n",
		       max_bytes);
}

/* rank 0 says how far MPI_COMM_WORLD's run got: a run stopped by its
 * limit shows the part it was in */
static void progress(int big, const char *part, double t0)
{
	if (big && rank == 0)
		printf("mpi_coll_check: %s checked after %.1f s\n", part, MPI_Wtime() - t0);
}

static void run(MPI_Comm comm, int big)
{
	double t0 = MPI_Wtime();
	int csize;

	MPI_Comm_size(comm, &csize);
	check_reductions(comm, csize, big);
	progress(big, "reductions", t0);
	check_bcast_allgather(comm, csize, big);
	progress(big, "bcast and allgather", t0);
	check_barrier(comm);
	check_others(comm, csize);
	check_float_digest(comm, csize);
	progress(big, "barrier and the rest", t0);
}

int main(int argc, char **argv)
{
	MPI_Comm sub, dup;
	int any;

	/* line by line through mpirun's pipe, so a killed run keeps its lines */
	setvbuf(stdout, NULL, _IOLBF, 0);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	read_max_bytes();
	ops[SUM] = MPI_SUM, ops[PROD] = MPI_PROD, ops[MIN] = MPI_MIN, ops[MAX] = MPI_MAX;
	ops[BAND] = MPI_BAND, ops[BOR] = MPI_BOR, ops[BXOR] = MPI_BXOR;
	/* the six C types first (types[0] int, [4] float, [5] double): all
	 * 4 or 8 bytes on the ABIs vrdma runs on */
	add_type(MPI_INT, "int", SIGNED), add_type(MPI_LONG, "long", SIGNED);
	add_type(MPI_UNSIGNED, "unsigned", UNSIGNED);
	add_type(MPI_UNSIGNED_LONG, "unsigned long", UNSIGNED);
	add_type(MPI_FLOAT, "float", FLOATING), add_type(MPI_DOUBLE, "double", FLOATING);
	add_type(MPI_INT32_T, "int32_t", SIGNED), add_type(MPI_INT64_T, "int64_t", SIGNED);
	add_type(MPI_UINT32_T, "uint32_t", UNSIGNED), add_type(MPI_UINT64_T, "uint64_t", UNSIGNED);
	add_type(MPI_LONG_LONG, "long long", SIGNED);
	add_type(MPI_UNSIGNED_LONG_LONG, "unsigned long long", UNSIGNED);

	run(MPI_COMM_WORLD, 1);
	/* a sub-communicator in reverse rank order, and a duplicate: teams
	 * of their own beside MPI_COMM_WORLD's */
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, nranks - rank, &sub);
	run(sub, 0);
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	reduce_one(dup, &types[0], SUM, 1001, 0, 0);
	MPI_Comm_free(&dup);
	MPI_Comm_free(&sub);
	reduce_one(MPI_COMM_WORLD, &types[1], BXOR, 1001, 0, 0);

	/* LOR: an op no collective offload takes, so a broken fast path
	 * cannot vouch for itself */
	any = errors != 0;
	MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	if (rank == 0) {
		if (any)
			printf("mpi_coll_check: %d ranks: wrong results\n", nranks);
		else
			printf("mpi_coll_check: %d ranks, %ld checks, all correct, %llu bytes "
			       "between ranks\n", nranks, checks, (unsigned long long)crossed);
		printf("mpi_coll_check: digest exact %016llx\n", (unsigned long long)dig_exact);
		printf("mpi_coll_check: digest float %016llx\n", (unsigned long long)dig_float);
	}
	if (errors)
		fprintf(stderr, "mpi_coll_check: rank %d: %ld wrong results\n", rank, errors);
	MPI_Finalize();
	return any ? 1 : 0;
}
