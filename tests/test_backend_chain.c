// SPDX-License-Identifier: MIT
/*
 * Teams across nodes (backend/coll/chain.c, chain_run.c): one node's
 * vrdmad against the other nodes, which the test plays through the link
 * seam (chain_peer.c): agreeing (JOINED, VERDICT, START) and the chunks
 * of an operation both ways with the bits of the one order, as node 0,
 * as the last node and as a middle one.  test_backend_chainbad.c: what
 * fails.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "chain_peer.h"
#include "../common/coll/vcoll_reduce.h"

/* ---- agreeing, then chunks both ways ---- */

/* Node 0 of 2, two members here: JOINED out, VERDICT in, START out with
 * the chunk the most members of a node allow; an allreduce of floats in
 * two chunks: the prefix out is rank 0 + rank 1, the result that comes
 * back is written into both, whole, then completed. */
START_TEST(chain_first)
{
	static const char *const L[] = { "n1", "n1", "n2", "n2" };
	enum { COUNT = 5000 };
	struct tg g[2];
	uint32_t t[2], groups[3];
	float *v[2], p0[COUNT], res[COUNT];
	const void *src[2];
	struct tmsg m;

	links_on();
	tg_full(&g[0], 5);
	tg_full(&g[1], 6);
	ck_assert_int_eq(join(&g[0], L, 4, 0, &t[0]), VRDMA_CS_OK);
	ck_assert_int_eq(join(&g[1], L, 4, 1, &t[1]), VRDMA_CS_OK);
	poll_n(1);
	ck_assert_ptr_null(lk[VBE_CL_PREV]);
	ck_assert_str_eq(peer_name[VBE_CL_NEXT], "n2");
	m = take(VBE_CL_NEXT, VBE_CM_JOINED);
	ck_assert_uint_eq(m.h.nlocal, 2);
	ck_assert_uint_eq(m.h.len, 8);	/* two domains: two tenants */
	memcpy(groups, m.pl, 8);
	free(m.pl);
	groups[2] = 0x99;
	put_ctl(VBE_CL_NEXT, VBE_CM_VERDICT, 0, 64, 0, groups, 3);
	poll_n(1);
	m = take(VBE_CL_NEXT, VBE_CM_START);
	ck_assert_uint_eq(m.h.chunk, vbe_coll_chunk_len(64));	/* 16 KiB */
	ck_assert_uint_eq(m.h.flags, 0);
	free(m.pl);
	ck_assert_int_eq(team_evt(&g[0]), VRDMA_CS_OK);
	ck_assert_int_eq(team_evt(&g[1]), VRDMA_CS_OK);

	for (unsigned i = 0; i < 2; i++) {
		v[i] = (float *)(g[i].mem + VEC);
		for (unsigned k = 0; k < COUNT; k++)
			v[i][k] = (float)(k % 97) * 0.1f + (float)i / 3.0f;
		post_op(&g[i], t[i], 1, VRDMA_COLL_ALLREDUCE, VRDMA_COLL_FLOAT, VRDMA_COLL_SUM, 0,
			COUNT, 4 * COUNT, 0, 4 * COUNT);
	}
	src[0] = v[0];
	src[1] = v[1];
	ck_assert_int_eq(vcoll_fold(VRDMA_COLL_FLOAT, VRDMA_COLL_SUM, p0, src, 2, COUNT), 0);
	poll_n(2);
	m = take(VBE_CL_NEXT, VBE_CM_FWD);
	ck_assert_uint_eq(m.h.seq, 1);
	ck_assert_uint_eq(m.h.off, 0);
	ck_assert_uint_eq(m.h.len, 16384);
	ck_assert_uint_eq(m.h.count, COUNT);
	ck_assert_mem_eq(m.pl, p0, 16384);
	free(m.pl);
	m = take(VBE_CL_NEXT, VBE_CM_FWD);
	ck_assert_uint_eq(m.h.off, 16384);
	ck_assert_uint_eq(m.h.len, 4 * COUNT - 16384);
	ck_assert_mem_eq(m.pl, (uint8_t *)p0 + 16384, 4 * COUNT - 16384);
	free(m.pl);
	expect_no_cqe(&g[0]);

	for (unsigned k = 0; k < COUNT; k++)
		res[k] = p0[k] * 3.0f + 1.0f;
	put_chunk(VBE_CL_NEXT, VBE_CM_BWD, 0, 1, VRDMA_COLL_ALLREDUCE, VRDMA_COLL_FLOAT,
		  VRDMA_COLL_SUM, 0, COUNT, 0, 16384, res);
	poll_n(1);
	expect_no_cqe(&g[0]);		/* half of it */
	ck_assert_mem_eq(v[1], res, 16384);
	put_chunk(VBE_CL_NEXT, VBE_CM_BWD, 0, 1, VRDMA_COLL_ALLREDUCE, VRDMA_COLL_FLOAT,
		  VRDMA_COLL_SUM, 0, COUNT, 16384, 4 * COUNT - 16384, (uint8_t *)res + 16384);
	poll_n(1);
	for (unsigned i = 0; i < 2; i++) {
		expect_cqe(&g[i], 101, VRDMA_WS_SUCCESS);
		ck_assert_mem_eq(v[i], res, 4 * COUNT);
	}
	nothing_sent();
	gone(&g[0]);
	gone(&g[1]);
	ck_assert_uint_eq(closed, 1);
	ck_assert_uint_eq(node->coll->nspans, 0);
}
END_TEST

/* The last of 2: the result is prefix OP its own, in that order (doubles:
 * the bits tell), written here and sent back chunk by chunk. */
START_TEST(chain_last)
{
	enum { COUNT = 1000 };
	double pre[COUNT], res[COUNT], *v;
	const void *src[2];
	struct tmsg m;
	struct tg g;
	uint32_t t;

	links_on();
	form_last(&g, &t, 4096);
	v = (double *)(g.mem + VEC);
	for (unsigned k = 0; k < COUNT; k++) {
		v[k] = 1.0 / (k + 3);
		pre[k] = 1e16 + k;
	}
	src[0] = pre;
	src[1] = v;
	ck_assert_int_eq(vcoll_fold(VRDMA_COLL_DOUBLE, VRDMA_COLL_SUM, res, src, 2, COUNT), 0);
	post_op(&g, t, 1, VRDMA_COLL_ALLREDUCE, VRDMA_COLL_DOUBLE, VRDMA_COLL_SUM, 0, COUNT,
		8 * COUNT, 0, 8 * COUNT);
	poll_n(1);
	nothing_sent();				/* the prefix first */
	for (uint32_t off = 0; off < 8 * COUNT; off += 4096) {
		uint32_t len = 8 * COUNT - off < 4096 ? 8 * COUNT - off : 4096;

		put_chunk(VBE_CL_PREV, VBE_CM_FWD, 0, 1, VRDMA_COLL_ALLREDUCE, VRDMA_COLL_DOUBLE,
			  VRDMA_COLL_SUM, 0, COUNT, off, len, (uint8_t *)pre + off);
		poll_n(1);
		m = take(VBE_CL_PREV, VBE_CM_BWD);
		ck_assert_uint_eq(m.h.off, off);
		ck_assert_uint_eq(m.h.len, len);
		ck_assert_mem_eq(m.pl, (uint8_t *)res + off, len);
		free(m.pl);
	}
	expect_cqe(&g, 101, VRDMA_WS_SUCCESS);
	ck_assert_mem_eq(v, res, 8 * COUNT);
	gone(&g);
}
END_TEST

/* The middle of 3: agreeing passes both ways; a bcast from a rank after
 * it goes forward EMPTY and comes back with the root's bytes; an
 * allgather goes forward with this node's block laid over the prefix. */
START_TEST(chain_middle)
{
	static const char *const L[] = { "n0", "n1", "n2" };
	static const uint32_t ga = 0x11, gb[3] = { 0x11, 0, 0x22 };
	uint8_t data[6000], blocks[300];
	uint32_t groups[3];
	struct tmsg m;
	struct tg g;
	uint32_t t;

	links_on();
	tg_full(&g, 5);
	ck_assert_int_eq(join(&g, L, 3, 1, &t), VRDMA_CS_OK);
	poll_n(1);
	ck_assert_str_eq(peer_name[VBE_CL_PREV], "n0");
	ck_assert_str_eq(peer_name[VBE_CL_NEXT], "n2");
	put_ctl(VBE_CL_PREV, VBE_CM_JOINED, 0, 1, 0, &ga, 1);
	poll_n(1);
	m = take(VBE_CL_NEXT, VBE_CM_JOINED);
	ck_assert_uint_eq(m.h.len, 8);
	memcpy(groups, m.pl, 8);
	free(m.pl);
	ck_assert_uint_eq(groups[1], ga);
	memcpy(groups, gb, sizeof(groups));
	groups[1] = vbe_policy_ghash(node, vbe_node_guest(node, 5, 0)->tenant);
	put_ctl(VBE_CL_NEXT, VBE_CM_VERDICT, 0, 1, 0, groups, 3);
	poll_n(1);
	m = take(VBE_CL_PREV, VBE_CM_VERDICT);
	ck_assert_uint_eq(m.h.len, 12);
	free(m.pl);
	put_ctl(VBE_CL_PREV, VBE_CM_START, 0, 0, 4096, NULL, 0);
	poll_n(1);
	m = take(VBE_CL_NEXT, VBE_CM_START);
	ck_assert_uint_eq(m.h.chunk, 4096);
	free(m.pl);
	ck_assert_int_eq(team_evt(&g), VRDMA_CS_OK);

	/* bcast of 6000 bytes from rank 2 (node 2) */
	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 1);
	memset(g.mem + VEC, 0, sizeof(data));
	post_op(&g, t, 1, VRDMA_COLL_BCAST, 0, 0, 2, sizeof(data), 0, 0, sizeof(data));
	for (uint32_t off = 0; off < sizeof(data); off += 4096) {
		uint32_t len = sizeof(data) - off < 4096 ? sizeof(data) - off : 4096;

		put_chunk(VBE_CL_PREV, VBE_CM_FWD, VBE_CMF_EMPTY, 1, VRDMA_COLL_BCAST, 0, 0, 2,
			  sizeof(data), off, len, NULL);
		poll_n(1);
		m = take(VBE_CL_NEXT, VBE_CM_FWD);
		ck_assert_uint_eq(m.h.flags, VBE_CMF_EMPTY);
		ck_assert_uint_eq(m.h.len, len);
		free(m.pl);
	}
	for (uint32_t off = 0; off < sizeof(data); off += 4096) {
		uint32_t len = sizeof(data) - off < 4096 ? sizeof(data) - off : 4096;

		put_chunk(VBE_CL_NEXT, VBE_CM_BWD, 0, 1, VRDMA_COLL_BCAST, 0, 0, 2, sizeof(data),
			  off, len, data + off);
		poll_n(1);
		m = take(VBE_CL_PREV, VBE_CM_BWD);
		ck_assert_mem_eq(m.pl, data + off, len);
		free(m.pl);
	}
	expect_cqe(&g, 101, VRDMA_WS_SUCCESS);
	ck_assert_mem_eq(g.mem + VEC, data, sizeof(data));

	/* allgather of 100 bytes each: block 1 is this node's */
	memset(blocks, 0xaa, 100);
	memset(blocks + 100, 0, 200);
	memset(g.mem + VEC, 0xbb, 100);
	post_op(&g, t, 2, VRDMA_COLL_ALLGATHER, 0, 0, 0, 100, 100, 1024, 300);
	put_chunk(VBE_CL_PREV, VBE_CM_FWD, 0, 2, VRDMA_COLL_ALLGATHER, 0, 0, 0, 100, 0, 300,
		  blocks);
	poll_n(1);
	m = take(VBE_CL_NEXT, VBE_CM_FWD);
	ck_assert_uint_eq(m.pl[0], 0xaa);
	ck_assert_uint_eq(m.pl[150], 0xbb);
	ck_assert_uint_eq(m.pl[299], 0);
	memset(m.pl + 200, 0xcc, 100);
	put_chunk(VBE_CL_NEXT, VBE_CM_BWD, 0, 2, VRDMA_COLL_ALLGATHER, 0, 0, 0, 100, 0, 300,
		  m.pl);
	poll_n(1);
	free(take(VBE_CL_PREV, VBE_CM_BWD).pl);
	expect_cqe(&g, 102, VRDMA_WS_SUCCESS);
	ck_assert_uint_eq(g.mem[VEC + 1024], 0xaa);
	ck_assert_uint_eq(g.mem[VEC + 1124], 0xbb);
	ck_assert_uint_eq(g.mem[VEC + 1323], 0xcc);
	free(m.pl);
	gone(&g);
	ck_assert_uint_eq(closed, 2);
}
END_TEST

TCase *backend_chain_tcase(void)
{
	TCase *t = tcase_create("chain");

	tcase_add_checked_fixture(t, tg_setup, chain_teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, chain_first);
	tcase_add_test(t, chain_last);
	tcase_add_test(t, chain_middle);
	return t;
}
