// SPDX-License-Identifier: MIT
/*
 * Check suite for backend/verbs_map.c: what the RDMA-device path says
 * to the guest (statuses) and to the other node (private data, key
 * table entries).  Hostile inputs: short, oversized, wrong magic.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../backend/verbs.h"

START_TEST(test_status_map)
{
	static const struct { int ibv; uint8_t ws; } m[] = {
		{ IBV_WC_SUCCESS, VRDMA_WS_SUCCESS },
		{ IBV_WC_LOC_LEN_ERR, VRDMA_WS_LOC_LEN_ERR },
		{ IBV_WC_LOC_QP_OP_ERR, VRDMA_WS_LOC_QP_OP_ERR },
		{ IBV_WC_LOC_PROT_ERR, VRDMA_WS_LOC_PROT_ERR },
		{ IBV_WC_LOC_ACCESS_ERR, VRDMA_WS_LOC_PROT_ERR },
		{ IBV_WC_WR_FLUSH_ERR, VRDMA_WS_WR_FLUSH_ERR },
		{ IBV_WC_REM_INV_REQ_ERR, VRDMA_WS_REM_INV_REQ_ERR },
		{ IBV_WC_REM_ACCESS_ERR, VRDMA_WS_REM_ACCESS_ERR },
		{ IBV_WC_REM_OP_ERR, VRDMA_WS_REM_OP_ERR },
		{ IBV_WC_RETRY_EXC_ERR, VRDMA_WS_RETRY_EXC_ERR },
		{ IBV_WC_RESP_TIMEOUT_ERR, VRDMA_WS_RETRY_EXC_ERR },
		{ IBV_WC_RNR_RETRY_EXC_ERR, VRDMA_WS_RNR_RETRY_EXC_ERR },
		{ IBV_WC_FATAL_ERR, VRDMA_WS_FATAL_ERR },
		{ IBV_WC_GENERAL_ERR, VRDMA_WS_FATAL_ERR },
		{ 12345, VRDMA_WS_FATAL_ERR },
		{ -1, VRDMA_WS_FATAL_ERR },
	};
	unsigned i;
	int s;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		ck_assert_uint_eq(vbe_vx_status(m[i].ibv), m[i].ws);
	/* Every status is one the guest knows. */
	for (s = -2; s < 64; s++)
		ck_assert_uint_lt(vbe_vx_status(s), VRDMA_WS_MAX);
}
END_TEST

START_TEST(test_access_map)
{
	ck_assert_int_eq(vbe_vx_access(0), 0);
	ck_assert_int_eq(vbe_vx_access(VRDMA_ACC_LOCAL_WRITE), IBV_ACCESS_LOCAL_WRITE);
	ck_assert_int_eq(vbe_vx_access(VRDMA_ACC_REMOTE_READ), IBV_ACCESS_REMOTE_READ);
	ck_assert_int_eq(vbe_vx_access(VRDMA_ACC_ALL),
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	/* Unknown bits never become device rights. */
	ck_assert_int_eq(vbe_vx_access(~VRDMA_ACC_ALL), 0);
}
END_TEST

static void hello_fill(struct vbe_vx_hello *h, uint32_t plen)
{
	uint32_t i;

	memset(h, 0, sizeof(*h));
	h->pd = 0x1234;
	h->qpn = 0xabcdef;
	h->rkt_rkey = 0xdeadbeef;
	h->svc_hash = 0x5eed1234;
	h->group = 0x600d0001;
	h->domid = 70000;
	h->pdata_len = plen;
	for (i = 0; i < plen; i++)
		h->pdata[i] = (uint8_t)(i * 7 + 1);
}

START_TEST(test_hello_roundtrip)
{
	struct vbe_vx_hello h, o;
	uint8_t buf[64];
	uint32_t plen;
	int len;

	/* rdma_cm's REQ carries at most 56 bytes of private data. */
	ck_assert_int_le(VBE_VX_HELLO_MAX, 56);
	for (plen = 0; plen <= VRDMA_PDATA_MAX; plen++) {
		hello_fill(&h, plen);
		len = vbe_vx_hello_pack(&h, buf, sizeof(buf));
		ck_assert_int_eq(len, VBE_VX_HELLO_HDR + (int)plen);
		ck_assert_int_eq(vbe_vx_hello_unpack(buf, (size_t)len, &o), 0);
		ck_assert_uint_eq(o.pd, h.pd);
		ck_assert_uint_eq(o.qpn, h.qpn);
		ck_assert_uint_eq(o.rkt_rkey, h.rkt_rkey);
		ck_assert(o.svc_hash == h.svc_hash);
		ck_assert_uint_eq(o.dest_qpn, 0);
		ck_assert_uint_eq(o.group, h.group);
		ck_assert_uint_eq(o.domid, h.domid);
		ck_assert_uint_eq(o.pdata_len, plen);
		ck_assert_mem_eq(o.pdata, h.pdata, plen ? plen : 1);
		/* rdma_cm may pad with zeros: longer is fine. */
		memset(buf + len, 0, sizeof(buf) - (size_t)len);
		ck_assert_int_eq(vbe_vx_hello_unpack(buf, sizeof(buf), &o), 0);
		ck_assert_uint_eq(o.pdata_len, plen);
	}
	/* A binding carries dest_qpn in the service hash's place. */
	hello_fill(&h, 0);
	h.svc_hash = 0;
	h.dest_qpn = 0x123456;
	len = vbe_vx_hello_pack(&h, buf, sizeof(buf));
	ck_assert_int_eq(vbe_vx_hello_unpack(buf, (size_t)len, &o), 0);
	ck_assert_uint_eq(o.dest_qpn, 0x123456);
	ck_assert_uint_eq(o.svc_hash, 0);
	ck_assert_uint_eq(o.group, h.group);
	h.svc_hash = 1;		/* both: not a hello anyone sends */
	ck_assert_int_eq(vbe_vx_hello_pack(&h, buf, sizeof(buf)), -EINVAL);
	/* Little endian on the wire, whatever the host. */
	hello_fill(&h, 0);
	vbe_vx_hello_pack(&h, buf, sizeof(buf));
	ck_assert_uint_eq(buf[0], VBE_VX_PD_MAGIC);
	ck_assert_uint_eq(buf[4], 0xef);
	ck_assert_uint_eq(buf[6], 0xab);
}
END_TEST

START_TEST(test_hello_hostile)
{
	struct vbe_vx_hello h, o;
	uint8_t buf[64];
	int len;

	hello_fill(&h, 32);
	ck_assert_int_eq(vbe_vx_hello_pack(&h, buf, 40), -ENOSPC);
	h.pdata_len = 33;
	ck_assert_int_eq(vbe_vx_hello_pack(&h, buf, sizeof(buf)), -EINVAL);
	hello_fill(&h, 16);
	len = vbe_vx_hello_pack(&h, buf, sizeof(buf));
	/* Truncated: header or pdata cut short. */
	ck_assert_int_eq(vbe_vx_hello_unpack(buf, (size_t)len - 1, &o), -EPROTO);
	ck_assert_int_eq(vbe_vx_hello_unpack(buf, VBE_VX_HELLO_HDR - 1, &o), -EPROTO);
	ck_assert_int_eq(vbe_vx_hello_unpack(NULL, 0, &o), -EPROTO);
	/* Wrong magic: not a vrdmad. */
	buf[0] ^= 0xff;
	ck_assert_int_eq(vbe_vx_hello_unpack(buf, (size_t)len, &o), -EPROTO);
	buf[0] ^= 0xff;
	/* pdata_len beyond the limit. */
	buf[1] = VRDMA_PDATA_MAX + 1;
	ck_assert_int_eq(vbe_vx_hello_unpack(buf, sizeof(buf), &o), -EPROTO);
	buf[1] = 16;
	/* QP number 0 or beyond 24 bits. */
	memset(buf + 4, 0, 4);
	ck_assert_int_eq(vbe_vx_hello_unpack(buf, (size_t)len, &o), -EPROTO);
	buf[7] = 1;
	ck_assert_int_eq(vbe_vx_hello_unpack(buf, (size_t)len, &o), -EPROTO);
	ck_assert_uint_eq(o.pdata_len, 0);
	buf[7] = 0;
	buf[4] = 1;
	ck_assert_int_eq(vbe_vx_hello_unpack(buf, (size_t)len, &o), 0);
	/* No group (policy.c hashes are never 0). */
	memset(buf + 16, 0, 4);
	ck_assert_int_eq(vbe_vx_hello_unpack(buf, (size_t)len, &o), -EPROTO);
	buf[16] = 1;
	/* A binding flag without the QP it binds to. */
	buf[1] = 16 | VBE_VX_HELLO_BIND;
	memset(buf + 12, 0, 4);
	ck_assert_int_eq(vbe_vx_hello_unpack(buf, (size_t)len, &o), -EPROTO);
}
END_TEST

START_TEST(test_reject)
{
	uint8_t pd[VRDMA_PDATA_MAX], out[VRDMA_PDATA_MAX], buf[VBE_VX_REJ_MAX];
	uint32_t olen;
	uint16_t st;
	int len;

	memset(pd, 0x5a, sizeof(pd));
	len = vbe_vx_rej_pack(VRDMA_CS_NOENT, pd, 5, buf, sizeof(buf));
	ck_assert_int_eq(len, VBE_VX_REJ_HDR + 5);
	ck_assert_int_eq(vbe_vx_rej_unpack(buf, (size_t)len, &st, out, &olen), 0);
	ck_assert_uint_eq(st, VRDMA_CS_NOENT);
	ck_assert_uint_eq(olen, 5);
	ck_assert_mem_eq(out, pd, 5);
	len = vbe_vx_rej_pack(VRDMA_CS_REFUSED, NULL, 0, buf, sizeof(buf));
	ck_assert_int_eq(vbe_vx_rej_unpack(buf, (size_t)len, &st, out, &olen), 0);
	ck_assert_uint_eq(st, VRDMA_CS_REFUSED);
	ck_assert_uint_eq(olen, 0);
	/* Refused by the listener node's policy (issue 12). */
	len = vbe_vx_rej_pack(VRDMA_CS_ACCESS, NULL, 0, buf, sizeof(buf));
	ck_assert_int_eq(vbe_vx_rej_unpack(buf, (size_t)len, &st, out, &olen), 0);
	ck_assert_uint_eq(st, VRDMA_CS_ACCESS);
	/* A status a listener never sends reads as REFUSED. */
	vbe_vx_rej_pack(VRDMA_CS_FAULT, NULL, 0, buf, sizeof(buf));
	ck_assert_int_eq(vbe_vx_rej_unpack(buf, VBE_VX_REJ_HDR, &st, out, &olen), 0);
	ck_assert_uint_eq(st, VRDMA_CS_REFUSED);
	/* No vrdmad header (kernel reject, other software): -EPROTO. */
	ck_assert_int_eq(vbe_vx_rej_unpack(NULL, 0, &st, out, &olen), -EPROTO);
	buf[0] = 0;
	ck_assert_int_eq(vbe_vx_rej_unpack(buf, sizeof(buf), &st, out, &olen), -EPROTO);
	buf[0] = VBE_VX_PD_MAGIC;
	buf[1] = 40;
	ck_assert_int_eq(vbe_vx_rej_unpack(buf, sizeof(buf), &st, out, &olen), -EPROTO);
	buf[1] = 10;
	ck_assert_int_eq(vbe_vx_rej_unpack(buf, VBE_VX_REJ_HDR + 9, &st, out, &olen), -EPROTO);
	ck_assert_int_eq(vbe_vx_rej_pack(0, pd, 33, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(vbe_vx_rej_pack(0, pd, 8, buf, 8), -ENOSPC);
}
END_TEST

START_TEST(test_rkt_roundtrip)
{
	struct vbe_rkt e = {
		.gkey = 0x0102a5, .rkey = 0x77665544, .iova = 0x7f0000001000ull,
		.length = 1ull << 33, .access = VRDMA_ACC_ALL, .pd = 3,
	}, o;
	uint8_t buf[VBE_VX_RKT_ENT];

	vbe_vx_rkt_pack(&e, buf);
	vbe_vx_rkt_unpack(buf, &o);
	ck_assert_mem_eq(&o, &e, sizeof(e));
	ck_assert_uint_eq(buf[0], 0xa5);
}
END_TEST

START_TEST(test_rkt_check)
{
	const uint32_t rw = VRDMA_ACC_LOCAL_WRITE | VRDMA_ACC_REMOTE_WRITE;
	const uint32_t K = 0xa5c3e105u;		/* tag 0x52e1f, key slot 0x105 */
	unsigned bit;
	struct vbe_rkt e = {
		.gkey = K, .rkey = 99, .iova = 0x10000, .length = 0x2000,
		.access = rw, .pd = 2,
	}, empty;

	/* Whole region, first and last byte. */
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0x10000, 0x2000,
					  VRDMA_ACC_REMOTE_WRITE), 0);
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0x11fff, 1,
					  VRDMA_ACC_REMOTE_WRITE), 0);
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0x12000, 0,
					  VRDMA_ACC_REMOTE_WRITE), 0);
	/* One byte outside, either end; a wrapping length. */
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0xffff, 2, VRDMA_ACC_REMOTE_WRITE),
			 VRDMA_WS_REM_ACCESS_ERR);
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0x11fff, 2, VRDMA_ACC_REMOTE_WRITE),
			 VRDMA_WS_REM_ACCESS_ERR);
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0x10001, UINT64_MAX,
					  VRDMA_ACC_REMOTE_WRITE), VRDMA_WS_REM_ACCESS_ERR);
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, UINT64_MAX, 1,
					  VRDMA_ACC_REMOTE_WRITE), VRDMA_WS_REM_ACCESS_ERR);
	/* Rights it was not given. */
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0x10000, 8, VRDMA_ACC_REMOTE_READ),
			 VRDMA_WS_REM_ACCESS_ERR);
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0x10000, 8,
					  VRDMA_ACC_REMOTE_ATOMIC), VRDMA_WS_REM_ACCESS_ERR);
	/* Another PD of the same guest, a stale or guessed key (other slot). */
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 1, 0x10000, 8, VRDMA_ACC_REMOTE_WRITE),
			 VRDMA_WS_REM_ACCESS_ERR);
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K ^ 0x200, 2, 0x10000, 8, VRDMA_ACC_REMOTE_WRITE),
			 VRDMA_WS_REM_ACCESS_ERR);
	/* The right slot with any one tag bit wrong (issue 12). */
	for (bit = VBE_KEY_IDX_BITS; bit < 32; bit++)
		ck_assert_int_eq(vbe_vx_rkt_check(&e, K ^ 1u << bit, 2, 0x10000, 8,
						  VRDMA_ACC_REMOTE_WRITE), VRDMA_WS_REM_ACCESS_ERR);
	/* An empty slot matches nothing, not even key 0. */
	memset(&empty, 0, sizeof(empty));
	ck_assert_int_eq(vbe_vx_rkt_check(&empty, 0, 0, 0, 0, 0), VRDMA_WS_REM_ACCESS_ERR);
}
END_TEST

START_TEST(test_wrid)
{
	uint64_t id = vbe_vx_wrid(VBE_VX_WR_RKT, 0xbeef, VBE_VX_MAX_QPS - 1);

	ck_assert_uint_eq(vbe_vx_wrid_kind(id), VBE_VX_WR_RKT);
	ck_assert_uint_eq(vbe_vx_wrid_gen(id), 0xbeef);
	ck_assert_uint_eq(vbe_vx_wrid_slot(id), VBE_VX_MAX_QPS - 1);
	id = vbe_vx_wrid(VBE_VX_WR_SQ, 1, 0);
	ck_assert_uint_eq(vbe_vx_wrid_kind(id), VBE_VX_WR_SQ);
	ck_assert_uint_eq(vbe_vx_wrid_slot(id), 0);
}
END_TEST

static Suite *verbs_suite(void)
{
	Suite *s = suite_create("verbs");
	TCase *tc = tcase_create("pure");

	tcase_add_test(tc, test_status_map);
	tcase_add_test(tc, test_access_map);
	tcase_add_test(tc, test_hello_roundtrip);
	tcase_add_test(tc, test_hello_hostile);
	tcase_add_test(tc, test_reject);
	tcase_add_test(tc, test_rkt_roundtrip);
	tcase_add_test(tc, test_rkt_check);
	tcase_add_test(tc, test_wrid);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(verbs_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
