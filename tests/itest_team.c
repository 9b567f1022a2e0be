// SPDX-License-Identifier: MIT
/*
 * A member of a team across the rig's nodes (cluster rig, suite check):
 * the vrdma team API checked against a reference computed here, in the
 * one reduction order (docs/collectives.md).
 *
 *   itest_team KEY RANK NODE[,NODE...]
 *
 * KEY is any word, the same in every member (its bytes are the team's
 * key); NODE r is the node name of rank r's vrdma device.  Every member
 * creates the team, then runs the same operations: allreduce of int32
 * (1, 1001 and 300000 elements: several chunks), of float (whose last
 * bits tell the order) and of double in place; reduce to the last rank;
 * bcast of 70000 bytes from every rank; allgather of 5000 bytes each; a
 * barrier.  Each rank's contribution is a function of (rank, index),
 * so every member computes every result itself.  Prints an ITEST line
 * per check, then "itest_team: rank R of N: M checks, all correct, MODE,
 * digest D" (MODE offload or fallback, D an FNV-1a of every result),
 * and exits 0 only if every check passed.  Every wait has a limit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vrdma/vrdma.h"
#include "vrdma/coll.h"
#include "itest_lib.h"
#include "../common/coll/vcoll_reduce.h"

#define T_MS		60000
#define MAXN		64
#define BIG		300000

static uint32_t size, rank, nnodes;
static const char *nodes[MAXN];
static uint32_t node_of[MAXN];		/* layout: nodes by lowest rank */
static uint64_t digest = 0xcbf29ce484222325ull;
static long checks;

static void fnv(const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		digest = (digest ^ ((const uint8_t *)p)[i]) * 0x100000001b3ull;
}

static int32_t gi(uint32_t r, size_t i)
{
	return (int32_t)((r + 1) * 2654435761u ^ (uint32_t)i * 40503u);
}

static float gf(uint32_t r, size_t i)
{
	return (float)((gi(r, i) % 100000) / 7.0) * (r % 2 ? 1e-3f : 1e3f);
}

static double gd(uint32_t r, size_t i)
{
	return (double)(gi(r, i) % 1000003) / 11.0 + (double)r * 1e15;
}

/* The reference: per node its ranks folded in order, then the nodes. */
static void reference(uint32_t type, uint32_t op, void *out, size_t count, size_t es,
		      void (*gen)(uint32_t r, void *v, size_t count))
{
	void *in[MAXN], *part[MAXN];
	const void *src[MAXN];
	uint32_t k, r, n;

	for (r = 0; r < size; r++) {
		in[r] = malloc(count * es + 1);
		gen(r, in[r], count);
	}
	for (k = 0; k < nnodes; k++) {
		part[k] = malloc(count * es + 1);
		for (n = 0, r = 0; r < size; r++)
			if (node_of[r] == k)
				src[n++] = in[r];
		if (vcoll_fold(type, op, part[k], src, n, count))
			itest_die("the reference fold", EINVAL);
	}
	for (k = 0; k < nnodes; k++)
		src[k] = part[k];
	if (vcoll_fold(type, op, out, src, nnodes, count))
		itest_die("the reference fold", EINVAL);
	for (r = 0; r < size; r++)
		free(in[r]);
	for (k = 0; k < nnodes; k++)
		free(part[k]);
}

static void gen_i(uint32_t r, void *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((int32_t *)v)[i] = gi(r, i);
}

static void gen_f(uint32_t r, void *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((float *)v)[i] = gf(r, i);
}

static void gen_d(uint32_t r, void *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((double *)v)[i] = gd(r, i);
}

/* One check; what every member gets alike goes into the digest. */
static void check(const char *name, int err, const void *got, const void *want, size_t len)
{
	bool ok = !err && (!len || !memcmp(got, want, len));

	checks++;
	if (ok && strncmp(name, "reduce-", 7))
		fnv(got, len);
	itest_report(name, ok, "%s", err ? strerror(-err > 0 ? -err : err) :
		     ok ? "" : "wrong bytes");
}

static void reductions(struct vrdma_team *t)
{
	static const size_t counts[] = { 1, 1001, BIG };
	char name[64];
	size_t c;

	for (c = 0; c < 3; c++) {
		size_t n = counts[c];
		int32_t *s = malloc(4 * n), *r = malloc(4 * n), *w = malloc(4 * n);

		gen_i(rank, s, n);
		reference(VRDMA_COLL_INT32, VRDMA_COLL_SUM, w, n, 4, gen_i);
		snprintf(name, sizeof(name), "allreduce-int32-%zu", n);
		check(name, vrdma_allreduce(t, s, r, n, VRDMA_COLL_INT32, VRDMA_COLL_SUM, T_MS),
		      r, w, 4 * n);
		free(s);
		free(r);
		free(w);
	}
	{
		float *s = malloc(4 * BIG), *r = malloc(4 * BIG), *w = malloc(4 * BIG);

		gen_f(rank, s, BIG);
		reference(VRDMA_COLL_FLOAT, VRDMA_COLL_SUM, w, BIG, 4, gen_f);
		check("allreduce-float-order", vrdma_allreduce(t, s, r, BIG, VRDMA_COLL_FLOAT,
							       VRDMA_COLL_SUM, T_MS), r, w, 4 * BIG);
		reference(VRDMA_COLL_FLOAT, VRDMA_COLL_MAX, w, 5000, 4, gen_f);
		memset(r, 0, 4 * 5000);
		check("reduce-float-max", vrdma_reduce(t, s, r, 5000, VRDMA_COLL_FLOAT,
						       VRDMA_COLL_MAX, size - 1, T_MS),
		      r, w, rank == size - 1 ? 4 * 5000 : 0);
		free(s);
		free(r);
		free(w);
	}
	{
		double *v = malloc(8 * 20000), *w = malloc(8 * 20000);

		gen_d(rank, v, 20000);
		reference(VRDMA_COLL_DOUBLE, VRDMA_COLL_PROD, w, 20000, 8, gen_d);
		check("allreduce-double-in-place",
		      vrdma_allreduce(t, v, v, 20000, VRDMA_COLL_DOUBLE, VRDMA_COLL_PROD, T_MS),
		      v, w, 8 * 20000);
		free(v);
		free(w);
	}
}

static void moves(struct vrdma_team *t)
{
	uint8_t *b = malloc(70000), *w = malloc(70000), *g, *gw;
	char name[64];
	uint32_t r;

	for (r = 0; r < size; r++) {
		itest_fill(w, 70000, 100 + r);
		if (rank == r)
			memcpy(b, w, 70000);
		else
			memset(b, 0, 70000);
		snprintf(name, sizeof(name), "bcast-from-%u", r);
		check(name, vrdma_bcast(t, b, 70000, r, T_MS), b, w, 70000);
	}
	g = malloc((size_t)size * 5000);
	gw = malloc((size_t)size * 5000);
	for (r = 0; r < size; r++)
		itest_fill(gw + (size_t)r * 5000, 5000, 300 + r);
	check("allgather", vrdma_allgather(t, gw + (size_t)rank * 5000, g, 5000, T_MS), g, gw,
	      (size_t)size * 5000);
	check("barrier", vrdma_barrier(t, T_MS), NULL, NULL, 0);
	free(b);
	free(w);
	free(g);
	free(gw);
}

int main(int argc, char **argv)
{
	struct vrdma_team_attr a;
	struct vrdma_team_info info;
	struct vrdma_device *dev;
	struct vrdma_team *t;
	struct vrdma_pd *pd;
	char *list, *tok, *save = NULL;
	uint32_t r, k;

	if (argc != 4) {
		fprintf(stderr, "usage: itest_team KEY RANK NODE[,NODE...]\n");
		return 2;
	}
	list = strdup(argv[3]);
	for (tok = strtok_r(list, ",", &save); tok && size < MAXN; tok = strtok_r(NULL, ",", &save))
		nodes[size++] = tok;
	rank = (uint32_t)strtoul(argv[2], NULL, 10);
	if (!size || rank >= size) {
		fprintf(stderr, "itest_team: rank %s of %u nodes named\n", argv[2], size);
		return 2;
	}
	for (r = 0; r < size; r++) {
		for (k = 0; k < r && strcmp(nodes[k], nodes[r]); k++)
			;
		node_of[r] = k < r ? node_of[k] : nnodes++;
	}
	memset(&a, 0, sizeof(a));
	memcpy(a.key, argv[1], strnlen(argv[1], sizeof(a.key)));
	a.size = size;
	a.rank = rank;
	a.nodes = nodes;
	dev = vrdma_open(NULL, T_MS);
	if (!dev)
		itest_die("vrdma_open", errno);
	pd = vrdma_alloc_pd(dev);
	if (!pd)
		itest_die("vrdma_alloc_pd", errno);
	t = vrdma_team_create(pd, &a, T_MS);
	if (!t)
		itest_die("vrdma_team_create", errno);
	reductions(t);
	moves(t);
	if (vrdma_team_query(t, &info))
		itest_die("vrdma_team_query", errno);
	printf("itest_team: rank %u of %u on %u nodes: %ld checks, %s, %s%s%s, digest %016llx\n",
	       rank, size, info.nnodes, checks, itest_failures ? "FAILURES" : "all correct",
	       info.mode == VRDMA_TEAM_OFFLOAD ? "offload" : "fallback",
	       info.why[0] ? ": " : "", info.why, (unsigned long long)digest);
	fflush(stdout);
	if (vrdma_team_destroy(t))
		itest_die("vrdma_team_destroy", errno);
	vrdma_dealloc_pd(pd);
	vrdma_close(dev);
	free(list);
	return itest_failures ? 1 : 0;
}
