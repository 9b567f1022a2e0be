// SPDX-License-Identifier: MIT
/*
 * A plain MPI program (no vrdma call) that checks what it receives, for
 * tests/middleware.sh (Open MPI over vrdma) and scripts/bench.sh.
 *
 *   mpi_check           ping-pong between ranks 2k and 2k+1 (8 B .. 4 MiB),
 *                       Allreduce, Bcast from each rank in turn, Alltoall of
 *                       several sizes; every byte checked.  Rank 0 prints
 *                       "mpi_check: N ranks, all correct, B bytes between
 *                       ranks" (B: what must have crossed between ranks, a
 *                       lower bound: Allreduce is not counted) and every
 *                       rank exits 0; a mismatch is printed by the rank
 *                       that saw it and all exit 1.
 *   mpi_check --bench   rank 0 and 1: ping-pong latency (half round trip)
 *                       and windowed bandwidth per size, then Allreduce on
 *                       every rank, in the columns of the OSU benchmarks.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LEN		(4u << 20)
#define ROUNDS		4		/* ping-pongs per size, each its own pattern */

static int rank, nranks, bad;
static uint64_t crossed;		/* bytes that had to cross between ranks */

/* The byte at index i of a buffer `who` filled for round `round`. */
static unsigned char pat(int who, size_t i, int round)
{
	return (unsigned char)(who * 31 + i * 7 + round * 13 + (i >> 9));
}

static void fill(unsigned char *b, size_t len, int who, int round)
{
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = pat(who, i, round);
}

/* 0 if b holds who's pattern for round; else the mismatch is printed. */
static int expect(const unsigned char *b, size_t len, int who, int round, const char *what)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (b[i] != pat(who, i, round)) {
			fprintf(stderr, "rank %d: %s of %zu bytes: byte %zu is %#x, not %#x\n",
				rank, what, len, i, b[i], pat(who, i, round));
			bad = 1;
			return -1;
		}
	}
	return 0;
}

static const size_t pp_sizes[] = { 8, 64, 512, 4096, 32768, 262144, 1u << 20, 4u << 20 };
static const size_t bc_sizes[] = { 8, 4096, 65536, 1u << 20, 4u << 20 };
static const size_t a2a_sizes[] = { 8, 1024, 65536, 1u << 20 };	/* per peer */
static const int ar_counts[] = { 1, 7, 1024, 65536, 524288 };	/* int64: 4 MiB */
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Ranks 2k and 2k+1 (the last of an odd number sits out). */
static void check_pingpong(unsigned char *b)
{
	int peer = rank ^ 1, r;
	size_t k;

	if (peer >= nranks)
		return;
	for (k = 0; k < N(pp_sizes); k++) {
		size_t len = pp_sizes[k];

		for (r = 0; r < ROUNDS; r++) {
			if (rank & 1) {
				MPI_Recv(b, (int)len, MPI_BYTE, peer, r, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				expect(b, len, peer, r, "ping");
				fill(b, len, rank, r);
				MPI_Send(b, (int)len, MPI_BYTE, peer, r, MPI_COMM_WORLD);
			} else {
				fill(b, len, rank, r);
				MPI_Send(b, (int)len, MPI_BYTE, peer, r, MPI_COMM_WORLD);
				MPI_Recv(b, (int)len, MPI_BYTE, peer, r, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				expect(b, len, peer, r, "pong");
			}
		}
		if (!(rank & 1))	/* one pair's bytes, counted once */
			crossed += 2ull * ROUNDS * len;
	}
}

static void check_allreduce(int64_t *in, int64_t *out)
{
	int64_t ranks_sum = (int64_t)nranks * (nranks + 1) / 2;
	size_t k;
	int i;

	for (k = 0; k < N(ar_counts); k++) {
		int n = ar_counts[k];

		for (i = 0; i < n; i++)
			in[i] = (int64_t)(rank + 1) * (i % 1000 + 1);
		MPI_Allreduce(in, out, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
		for (i = 0; i < n; i++) {
			if (out[i] != ranks_sum * (i % 1000 + 1)) {
				fprintf(stderr, "rank %d: Allreduce of %d: element %d is %lld, not %lld\n",
					rank, n, i, (long long)out[i],
					(long long)(ranks_sum * (i % 1000 + 1)));
				bad = 1;
				break;
			}
		}
	}
}

static void check_bcast(unsigned char *b)
{
	size_t k;
	int root;

	for (k = 0; k < N(bc_sizes); k++) {
		for (root = 0; root < nranks; root++) {
			size_t len = bc_sizes[k];

			if (rank == root)
				fill(b, len, root, (int)k);
			else
				memset(b, 0, len);
			MPI_Bcast(b, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
			expect(b, len, root, (int)k, "Bcast");
			if (rank == 0)
				crossed += (uint64_t)(nranks - 1) * len;
		}
	}
}

/* Block j of rank i's send buffer is pat(i * nranks + j): rank j's block i. */
static void check_alltoall(unsigned char *s, unsigned char *d)
{
	size_t k;
	int j;

	for (k = 0; k < N(a2a_sizes); k++) {
		size_t len = a2a_sizes[k];

		for (j = 0; j < nranks; j++)
			fill(s + j * len, len, rank * nranks + j, (int)k);
		memset(d, 0, len * nranks);
		MPI_Alltoall(s, (int)len, MPI_BYTE, d, (int)len, MPI_BYTE, MPI_COMM_WORLD);
		for (j = 0; j < nranks; j++)
			if (expect(d + j * len, len, j * nranks + rank, (int)k, "Alltoall"))
				break;
		if (rank == 0)
			crossed += (uint64_t)nranks * (nranks - 1) * len;
	}
}

/* ---- --bench: the OSU benchmarks' shape ---- */

static int iters_for(size_t len)
{
	return len <= 8192 ? 2000 : len <= 262144 ? 200 : 40;
}

/* Half round trip in us, as osu_latency. */
static double bench_lat(unsigned char *b, size_t len)
{
	int i, n = iters_for(len), skip = n / 10;
	double t0 = 0;

	MPI_Barrier(MPI_COMM_WORLD);
	for (i = 0; i < n + skip; i++) {
		if (i == skip)
			t0 = MPI_Wtime();
		if (rank == 0) {
			MPI_Send(b, (int)len, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(b, (int)len, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			MPI_Recv(b, (int)len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(b, (int)len, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
		}
	}
	return (MPI_Wtime() - t0) * 1e6 / (2.0 * n);
}

/* MB/s (10^6 bytes) of a window of 64 sends, then a 4-byte reply, as osu_bw. */
#define WINDOW 64
static double bench_bw(unsigned char *b, size_t len)
{
	MPI_Request req[WINDOW];
	int i, w, n = iters_for(len) / 10 + 4, skip = 2;
	double t0 = 0;
	char ack[4] = { 0 };

	MPI_Barrier(MPI_COMM_WORLD);
	for (i = 0; i < n + skip; i++) {
		if (i == skip)
			t0 = MPI_Wtime();
		if (rank == 0) {
			for (w = 0; w < WINDOW; w++)
				MPI_Isend(b, (int)len, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &req[w]);
			MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
			MPI_Recv(ack, 4, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			for (w = 0; w < WINDOW; w++)
				MPI_Irecv(b, (int)len, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &req[w]);
			MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
			MPI_Send(ack, 4, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
		}
	}
	return (double)len * WINDOW * n / ((MPI_Wtime() - t0) * 1e6);
}

/* Average us per Allreduce of len bytes (int64 sums) over every rank. */
static double bench_allreduce(int64_t *in, int64_t *out, size_t len)
{
	int i, n = iters_for(len), skip = n / 10, cnt = (int)(len / 8);
	double t0 = 0, t, sum;

	MPI_Barrier(MPI_COMM_WORLD);
	for (i = 0; i < n + skip; i++) {
		if (i == skip)
			t0 = MPI_Wtime();
		MPI_Allreduce(in, out, cnt, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	}
	t = (MPI_Wtime() - t0) * 1e6 / n;
	MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	return sum / nranks;
}

static void bench(unsigned char *b, int64_t *in, int64_t *out)
{
	size_t len;
	double lat, bw;

	memset(b, 1, MAX_LEN);
	memset(in, 1, MAX_LEN);
	if (rank == 0)
		printf("# ping-pong, ranks 0 and 1\n# %-10s %14s %16s\n", "Size", "Latency (us)",
		       "Bandwidth (MB/s)");
	for (len = 1; len <= MAX_LEN; len *= 4) {
		lat = bench_lat(b, len);
		bw = bench_bw(b, len);
		if (rank == 0)
			printf("%-12zu %14.2f %16.2f\n", len, lat, bw);
	}
	if (rank == 0)
		printf("# Allreduce (int64 sum), %d ranks\n# %-10s %18s\n", nranks, "Size",
		       "Avg Latency (us)");
	for (len = 8; len <= MAX_LEN; len *= 8) {
		lat = bench_allreduce(in, out, len);
		if (rank == 0)
			printf("%-12zu %18.2f\n", len, lat);
	}
}

int main(int argc, char **argv)
{
	unsigned char *b, *s;
	int64_t *in, *out;
	int any = 0, do_bench = argc > 1 && !strcmp(argv[1], "--bench");
	size_t blen;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	/* b: the largest message, or an Alltoall's receive buffer */
	blen = (size_t)nranks << 20 > MAX_LEN ? (size_t)nranks << 20 : MAX_LEN;
	b = malloc(blen);
	s = malloc((size_t)nranks << 20);
	in = malloc(MAX_LEN);
	out = malloc(MAX_LEN);
	if (!b || !s || !in || !out || nranks < 2) {
		fprintf(stderr, "rank %d: %s\n", rank, nranks < 2 ? "needs 2 ranks or more" :
			"out of memory");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (do_bench) {
		bench(b, in, out);
	} else {
		check_pingpong(b);
		check_allreduce(in, out);
		check_bcast(b);
		check_alltoall(s, b);
	}
	MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (rank == 0 && !do_bench)
		printf("mpi_check: %d ranks, %s, %llu bytes between ranks\n", nranks,
		       any ? "MISMATCHES" : "all correct", (unsigned long long)crossed);
	free(out);
	free(in);
	free(s);
	free(b);
	MPI_Finalize();
	return any ? 1 : 0;
}
