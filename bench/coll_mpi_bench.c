// SPDX-License-Identifier: MIT
/*
 * coll_mpi_bench: MPI_Allreduce (MPI_DOUBLE, MPI_SUM) and MPI_Bcast (root
 * 0) as the OSU micro-benchmarks' osu_allreduce and osu_bcast measure
 * them, in their columns.  A plain MPI program: scripts/bench-coll.sh runs
 * it through `vrdma-run --coll` with VRDMA_COLL=on, guest and off, so the
 * same binary times vrdma's offload, its fallback and MPI's own.
 *
 *   coll_mpi_bench [-s BYTES]... [-i ITERS]
 *       BYTES: message sizes (default 8, 1 MiB, 16 MiB; an Allreduce
 *       rounds down to whole doubles, at least one).  ITERS: iterations
 *       at 8 KiB and below (default 200); up to 1 MiB a tenth of it, above
 *       a fortieth, at least 2; a tenth more before them as warm-up.
 *
 * As OSU does: each call is timed alone between MPI_Wtime()s with an
 * MPI_Barrier after it (untimed), so no call overlaps the next; a rank's
 * latency is its average; Avg is the mean over the ranks, Min and Max
 * the lowest and highest rank.  Bandwidth, for 1 MiB and up: bytes over
 * Avg, in MB/s (10^6 bytes per second, OSU's unit).  After the timed
 * calls one more of each, untimed, with fresh contents, is checked in
 * every rank: a fast wrong answer is an error (exit 1), not a figure.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMB_MAX_SIZES	16
#define CMB_ALIGN	4096

static int cmb_rank, cmb_nranks;

static size_t cmb_iters(size_t len, int base)
{
	int n = len <= 8192 ? base : len <= (1u << 20) ? base / 10 : base / 40;

	return n < 2 ? 2 : (size_t)n;
}

/* One rank's average us over @n timed calls of @kind. */
static double cmb_time(int kind, void *sbuf, void *rbuf, size_t len, size_t n)
{
	size_t i, warm = n / 10 ? n / 10 : 1;
	double t = 0, t0;
	int cnt = kind == 'a' ? (int)(len / sizeof(double)) : (int)len;

	MPI_Barrier(MPI_COMM_WORLD);
	for (i = 0; i < warm + n; i++) {
		t0 = MPI_Wtime();
		if (kind == 'a')
			MPI_Allreduce(sbuf, rbuf, cnt, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		else
			MPI_Bcast(rbuf, cnt, MPI_BYTE, 0, MPI_COMM_WORLD);
		if (i >= warm)
			t += MPI_Wtime() - t0;
		MPI_Barrier(MPI_COMM_WORLD);
	}
	return t * 1e6 / (double)n;
}

/*
 * One untimed call with contents no earlier call had: every element of
 * the sum is exact in a double (small integers).  0, or 1 where this rank
 * saw a wrong byte or element.
 */
static int cmb_check(int kind, void *sbuf, void *rbuf, size_t len)
{
	size_t i, cnt = kind == 'a' ? len / sizeof(double) : len;
	double *s = sbuf, *r = rbuf;
	unsigned char *b = rbuf;

	if (kind == 'a') {
		for (i = 0; i < cnt; i++) {
			s[i] = (double)(cmb_rank + 1) * (double)(i % 1000 + 7);
			r[i] = -1.0;
		}
		MPI_Allreduce(s, r, (int)cnt, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		for (i = 0; i < cnt; i++) {
			double want = (double)cmb_nranks * (cmb_nranks + 1) / 2 * (double)(i % 1000 + 7);

			if (r[i] != want) {
				fprintf(stderr, "coll_mpi_bench: rank %d: Allreduce of %zu B: "
					"element %zu is %g, not %g\n", cmb_rank, len, i, r[i], want);
				return 1;
			}
		}
		return 0;
	}
	for (i = 0; i < cnt; i++)
		b[i] = cmb_rank ? 0 : (unsigned char)(i * 7 + 91);
	MPI_Bcast(b, (int)cnt, MPI_BYTE, 0, MPI_COMM_WORLD);
	for (i = 0; i < cnt; i++)
		if (b[i] != (unsigned char)(i * 7 + 91)) {
			fprintf(stderr, "coll_mpi_bench: rank %d: Bcast of %zu B: byte %zu is %#x\n",
				cmb_rank, len, i, b[i]);
			return 1;
		}
	return 0;
}

/* osu_allreduce's or osu_bcast's table, then the bandwidth lines.  The
 * number of ranks that saw a wrong result. */
static int cmb_run(int kind, void *sbuf, void *rbuf, const size_t *sizes, int nsizes, int base)
{
	double bw[CMB_MAX_SIZES], lat, mn, mx, sum;
	size_t len[CMB_MAX_SIZES], n;
	int k, bad = 0, anybad = 0, hdr = 0;

	if (!cmb_rank)
		printf("# coll_mpi_bench: %s, %d ranks (osu_%s's columns)\n"
		       "# %-10s %18s %18s %18s %12s\n",
		       kind == 'a' ? "MPI_Allreduce (MPI_DOUBLE, MPI_SUM)" : "MPI_Bcast (root 0)",
		       cmb_nranks, kind == 'a' ? "allreduce" : "bcast", "Size",
		       "Avg Latency(us)", "Min Latency(us)", "Max Latency(us)", "Iterations");
	for (k = 0; k < nsizes; k++) {
		len[k] = sizes[k];
		if (kind == 'a')
			len[k] = len[k] < sizeof(double) ? sizeof(double) :
				 len[k] / sizeof(double) * sizeof(double);
		n = cmb_iters(len[k], base);
		lat = cmb_time(kind, sbuf, rbuf, len[k], n);
		MPI_Reduce(&lat, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
		MPI_Reduce(&lat, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		MPI_Reduce(&lat, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
		bad |= cmb_check(kind, sbuf, rbuf, len[k]);
		bw[k] = sum > 0 ? (double)len[k] / (sum / cmb_nranks) : 0;	/* B/us = MB/s */
		if (!cmb_rank)
			printf("%-12zu %18.2f %18.2f %18.2f %12zu\n", len[k], sum / cmb_nranks, mn,
			       mx, n);
		fflush(stdout);
	}
	for (k = 0; k < nsizes && !cmb_rank; k++) {
		if (len[k] < (1u << 20))
			continue;
		if (!hdr++)
			printf("# %-10s %18s\n", "Size", "Bandwidth(MB/s)");
		printf("%-12zu %18.2f\n", len[k], bw[k]);
	}
	fflush(stdout);
	MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	return anybad;
}

static int cmb_usage(void)
{
	if (!cmb_rank)
		fprintf(stderr, "usage: coll_mpi_bench [-s BYTES]... [-i ITERS]\n");
	return 2;
}

int main(int argc, char **argv)
{
	size_t sizes[CMB_MAX_SIZES] = { 8, 1u << 20, 16u << 20 }, most = 0;
	int nsizes = 0, base = 200, i, bad, rc = 0, vlen;
	char ver[MPI_MAX_LIBRARY_VERSION_STRING];
	void *sbuf = NULL, *rbuf = NULL;
	char *end;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &cmb_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &cmb_nranks);
	for (i = 1; i < argc; i++) {
		unsigned long long v;

		if (i + 1 >= argc || (strcmp(argv[i], "-s") && strcmp(argv[i], "-i"))) {
			rc = cmb_usage();
			goto out;
		}
		v = strtoull(argv[i + 1], &end, 0);
		if (*end || !v || argv[i + 1][0] == '-' || v > (argv[i][1] == 's' ? 1u << 30 : 1u << 20)) {
			if (!cmb_rank)
				fprintf(stderr, "coll_mpi_bench: bad %s '%s' (%s)\n", argv[i],
					argv[i + 1], argv[i][1] == 's' ? "1 .. 1 GiB" : "1 .. 2^20");
			rc = 2;
			goto out;
		}
		if (argv[i][1] == 'i') {
			base = (int)v;
		} else if (nsizes == CMB_MAX_SIZES) {
			if (!cmb_rank)
				fprintf(stderr, "coll_mpi_bench: at most %d sizes\n", CMB_MAX_SIZES);
			rc = 2;
			goto out;
		} else {
			sizes[nsizes++] = (size_t)v;
		}
		i++;
	}
	if (!nsizes)
		nsizes = 3;
	for (i = 0; i < nsizes; i++)
		if (sizes[i] > most)
			most = sizes[i];
	most = (most + CMB_ALIGN - 1) / CMB_ALIGN * CMB_ALIGN;
	if (posix_memalign(&sbuf, CMB_ALIGN, most) || posix_memalign(&rbuf, CMB_ALIGN, most)) {
		fprintf(stderr, "coll_mpi_bench: rank %d: no memory for 2 x %zu bytes\n", cmb_rank,
			most);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	/* touched: no page faults in the timed calls */
	memset(sbuf, 0, most);
	memset(rbuf, 0, most);
	if (!cmb_rank) {
		MPI_Get_library_version(ver, &vlen);
		ver[strcspn(ver, "\n,")] = '\0';
		printf("# coll_mpi_bench: %s; %d ranks\n", ver, cmb_nranks);
	}
	bad = cmb_run('a', sbuf, rbuf, sizes, nsizes, base);
	bad += cmb_run('b', sbuf, rbuf, sizes, nsizes, base);
	if (bad) {
		if (!cmb_rank)
			fprintf(stderr, "coll_mpi_bench: %d wrong results\n", bad);
		rc = 1;
	}
out:
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return rc;
}
