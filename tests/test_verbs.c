// SPDX-License-Identifier: MIT
/*
 * Check suite for backend/device/verbs_map.c: what the RDMA-device path says
 * to the guest (statuses) and to the other node (private data, key
 * table entries), and the requester's cache of the peer's entries
 * against a model of the peer (its table and its device's checks).
 * Hostile inputs: short, oversized, wrong magic, torn or forged entries.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../backend/device/verbs.h"
#include "ck_run.h"

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
	/* A service named "group/svc" says so: the hash alone could match a
	 * bare name of another group (docs/tenants.md). */
	hello_fill(&h, 3);
	h.qualified = true;
	len = vbe_vx_hello_pack(&h, buf, sizeof(buf));
	ck_assert_int_eq(vbe_vx_hello_unpack(buf, (size_t)len, &o), 0);
	ck_assert(o.qualified);
	ck_assert_uint_eq(o.pdata_len, 3);
	ck_assert(o.svc_hash == h.svc_hash);
	h.svc_hash = 0;		/* qualified without a service */
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
	ck_assert_uint_eq(vbe_vx_magic_other(buf, (size_t)len), 0);
	buf[0] ^= 0xff;
	ck_assert_int_eq(vbe_vx_hello_unpack(buf, (size_t)len, &o), -EPROTO);
	ck_assert_uint_eq(vbe_vx_magic_other(buf, (size_t)len), 0);
	buf[0] ^= 0xff;
	/* An older vrdmad (0xa6: 4 GiB windows): refused, and named. */
	buf[0] = 0xa6;
	ck_assert_int_eq(vbe_vx_hello_unpack(buf, (size_t)len, &o), -EPROTO);
	ck_assert_uint_eq(vbe_vx_magic_other(buf, (size_t)len), 0xa6);
	ck_assert_uint_eq(vbe_vx_magic_other(buf, 0), 0);
	buf[0] = VBE_VX_PD_MAGIC;
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

/* An entry as vrdmad writes it: key, device rkey, iova, length... */
static struct vbe_rkt rkt_ent(uint32_t gkey, uint32_t rkey, uint64_t iova, uint64_t len,
			      uint32_t pd, uint32_t pgoff)
{
	struct vbe_rkt e = {
		.gkey = gkey, .rkey = rkey, .iova = iova, .length = len,
		.access = VRDMA_ACC_LOCAL_WRITE | VRDMA_ACC_REMOTE_WRITE |
			  VRDMA_ACC_REMOTE_READ,
		.pd = pd, .pgoff = pgoff,
	};
	return e;
}

static bool rkt_eq(const struct vbe_rkt *a, const struct vbe_rkt *b)
{
	return a->gkey == b->gkey && a->rkey == b->rkey && a->iova == b->iova &&
	       a->length == b->length && a->access == b->access && a->pd == b->pd &&
	       a->pgoff == b->pgoff;
}

START_TEST(test_rkt_roundtrip)
{
	struct vbe_rkt e = {
		.gkey = 0xa5c3e105u, .rkey = 0x77665544, .iova = 0x7f0000001234ull,
		.length = VBE_VX_MR_MAX - 0x234, .access = VRDMA_ACC_ALL, .pd = 255,
		.pgoff = 0x234,
	}, o;
	_Alignas(8) uint8_t buf[VBE_VX_RKT_ENT];

	vbe_vx_rkt_pack(&e, buf);
	ck_assert_int_eq(vbe_vx_rkt_parse(buf, e.gkey, &o), 0);
	ck_assert(rkt_eq(&o, &e));
	/* Little endian at the documented offsets (verbs.h). */
	ck_assert_uint_eq(buf[0], 0x05);
	ck_assert_uint_eq(buf[3], 0xa5);
	ck_assert_uint_eq(buf[4], 0x44);
	ck_assert_uint_eq(buf[8], 0x34);
	ck_assert_uint_eq(buf[16], 0xcc);	/* 64 GiB - 0x234: 0xf_ffff_fdcc */
	ck_assert_uint_eq(buf[19], 0xff);
	ck_assert_uint_eq(buf[25], 0x0f);	/* length bits 32..39 */
	ck_assert_uint_eq(buf[26] | buf[27], 0);
	ck_assert_uint_eq(buf[20], 255);
	ck_assert_uint_eq(buf[22], 0x34);
	ck_assert_uint_eq(buf[23], 0x02);
	ck_assert_uint_eq(buf[24], VRDMA_ACC_ALL);
	ck_assert_uint_eq((uint32_t)buf[28] | (uint32_t)buf[29] << 8 |
			  (uint32_t)buf[30] << 16 | (uint32_t)buf[31] << 24,
			  vbe_vx_rkt_sum(buf));
	/* Asked for another key (other tag, other slot), or for key 0. */
	ck_assert_int_eq(vbe_vx_rkt_parse(buf, e.gkey ^ 1u << 20, &o), -ENOENT);
	ck_assert_int_eq(vbe_vx_rkt_parse(buf, e.gkey ^ 1, &o), -ENOENT);
	ck_assert_int_eq(vbe_vx_rkt_parse(buf, 0, &o), -ENOENT);
	ck_assert_uint_eq(o.gkey, 0);

	/* Our own table: written with gkey last, wiped to zeros. */
	memset(buf, 0xee, sizeof(buf));
	vbe_vx_rkt_write(buf, &e);
	ck_assert_uint_eq(vbe_vx_rkt_gkey(buf), e.gkey);
	ck_assert_int_eq(vbe_vx_rkt_parse(buf, e.gkey, &o), 0);
	ck_assert(rkt_eq(&o, &e));
	vbe_vx_rkt_write(buf, NULL);
	ck_assert_uint_eq(vbe_vx_rkt_gkey(buf), 0);
	for (unsigned i = 0; i < sizeof(buf); i++)
		ck_assert_uint_eq(buf[i], 0);
	ck_assert_int_eq(vbe_vx_rkt_parse(buf, e.gkey, &o), -ENOENT);
}
END_TEST

/* A hostile or broken peer's entry, well formed (its check word fits):
 * refused field by field. */
START_TEST(test_rkt_hostile)
{
	const uint32_t K = 0xa5c3e105u;
	const struct vbe_rkt good = rkt_ent(K, 7, 0x10000, 0x2000, 2, 0);
	struct vbe_rkt e, o;
	_Alignas(8) uint8_t buf[VBE_VX_RKT_ENT];
	unsigned i, bit;

#define HOSTILE(field, val) do {					\
		e = good;						\
		e.field = (val);					\
		vbe_vx_rkt_pack(&e, buf);				\
		ck_assert_int_eq(vbe_vx_rkt_parse(buf, e.gkey, &o), -EPROTO); \
		ck_assert_uint_eq(o.gkey, 0);				\
	} while (0)
	HOSTILE(gkey, K & (VBE_KEY_SLOTS - 1));		/* tag 0: never a key */
	HOSTILE(length, 0);
	HOSTILE(length, VBE_VX_MR_MAX + 1);
	HOSTILE(length, (1ull << 40) - 1);
	HOSTILE(iova, UINT64_MAX - 0x1000);		/* wraps */
	HOSTILE(pd, VBE_MAX_PDS);
	HOSTILE(pd, 0xffff);
	HOSTILE(pgoff, VRDMA_PAGE_SIZE);
	HOSTILE(access, VRDMA_ACC_ALL + 1);
	HOSTILE(access, 0x80);
#undef HOSTILE
	/* Reserved bytes; length bits 36..39 (byte 25's high half). */
	for (i = 25; i < 28; i++) {
		vbe_vx_rkt_pack(&good, buf);
		buf[i] = i == 25 ? 0x10 : 1;
		buf[28] = (uint8_t)vbe_vx_rkt_sum(buf);
		buf[29] = (uint8_t)(vbe_vx_rkt_sum(buf) >> 8);
		buf[30] = (uint8_t)(vbe_vx_rkt_sum(buf) >> 16);
		buf[31] = (uint8_t)(vbe_vx_rkt_sum(buf) >> 24);
		ck_assert_int_eq(vbe_vx_rkt_parse(buf, K, &o), -EPROTO);
	}
	/* The limits themselves pass. */
	e = good;
	e.length = VBE_VX_MR_MAX - (VRDMA_PAGE_SIZE - 1);
	e.pgoff = VRDMA_PAGE_SIZE - 1;
	e.pd = VBE_MAX_PDS - 1;
	e.iova = UINT64_MAX - e.length;
	vbe_vx_rkt_pack(&e, buf);
	ck_assert_int_eq(vbe_vx_rkt_parse(buf, K, &o), 0);
	ck_assert(rkt_eq(&o, &e));
	e.length = VBE_VX_MR_MAX;
	e.pgoff = 0;
	e.iova = UINT64_MAX - e.length;
	vbe_vx_rkt_pack(&e, buf);
	ck_assert_int_eq(vbe_vx_rkt_parse(buf, K, &o), 0);
	ck_assert(rkt_eq(&o, &e));
	/* Any one bit of bytes 4..31 changed: the check word says so (each
	 * 32-bit word goes into the sum through a bijection). */
	for (bit = 32; bit < 8 * VBE_VX_RKT_ENT; bit++) {
		vbe_vx_rkt_pack(&good, buf);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		ck_assert_int_eq(vbe_vx_rkt_parse(buf, K, &o), -EAGAIN);
		ck_assert_uint_eq(o.gkey, 0);
	}
}
END_TEST

/* xorshift32: reproducible "random" mixes. */
static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/*
 * What a peer's READ can see while vbe_vx_rkt_write turns entry a into
 * b: each byte (or 4-byte word) from any of the writer's states
 *   0 a    1 a with gkey 0    2 b's body with gkey 0    3 b
 * (a or b all zero: an empty slot).  The reader must take only a whole
 * version: the one of the key it asked for, or nothing.
 */
static void torn_states(const struct vbe_rkt *a, const struct vbe_rkt *b,
			uint8_t st[4][VBE_VX_RKT_ENT])
{
	memset(st, 0, 4 * VBE_VX_RKT_ENT);
	if (a)
		vbe_vx_rkt_pack(a, st[0]);
	memcpy(st[1] + 4, st[0] + 4, VBE_VX_RKT_ENT - 4);
	if (b)
		vbe_vx_rkt_pack(b, st[3]);
	memcpy(st[2] + 4, st[3] + 4, VBE_VX_RKT_ENT - 4);
}

/* One snapshot: refused, or taken as exactly one whole version of the
 * key asked for.  Counted, not asserted (Check's asserts cost a pipe
 * write each in fork mode). */
static void torn_one(const uint8_t *buf, const struct vbe_rkt *a, const struct vbe_rkt *b,
		     uint32_t want, unsigned *taken, unsigned *refused, unsigned *mixed)
{
	struct vbe_rkt o;
	int rc = vbe_vx_rkt_parse(buf, want, &o);

	if (rc == -ENOENT || rc == -EAGAIN)
		(*refused)++;
	else if (!rc && ((a && a->gkey == want && rkt_eq(&o, a)) ||
			 (b && b->gkey == want && rkt_eq(&o, b))))
		(*taken)++;
	else
		(*mixed)++;
}

static void torn_case(const struct vbe_rkt *a, const struct vbe_rkt *b)
{
	uint8_t st[4][VBE_VX_RKT_ENT];
	_Alignas(8) uint8_t buf[VBE_VX_RKT_ENT];
	uint32_t want[2] = { a ? a->gkey : 0, b ? b->gkey : 0 }, seed = 0x9e3779b9u;
	unsigned taken = 0, refused = 0, mixed = 0, m, w, k, i;

	torn_states(a, b, st);
	for (k = 0; k < 2; k++) {
		if (!want[k] || (k && want[1] == want[0]))
			continue;
		/* Word by word (aligned 4-byte reads, as DMA does): all 4^8. */
		for (m = 0; m < 1u << 16; m++) {
			for (w = 0; w < 8; w++)
				memcpy(buf + 4 * w, st[(m >> 2 * w) & 3] + 4 * w, 4);
			torn_one(buf, a, b, want[k], &taken, &refused, &mixed);
		}
		/* Byte by byte. */
		for (m = 0; m < 100000; m++) {
			for (i = 0; i < VBE_VX_RKT_ENT; i++)
				buf[i] = st[rnd(&seed) & 3][i];
			torn_one(buf, a, b, want[k], &taken, &refused, &mixed);
		}
	}
	ck_assert_uint_eq(mixed, 0);
	/* Whole versions do get through. */
	ck_assert_uint_gt(taken, 0);
	ck_assert_uint_gt(refused, 0);
}

START_TEST(test_rkt_torn)
{
	const uint32_t K = 0xa5c3e105u, K2 = 0x1234e105u;	/* same key slot */
	struct vbe_rkt a = rkt_ent(K, 0x100, 0x7f0000000000ull, 0x2000, 1, 0),
		       b = rkt_ent(K2, 0x200, 0x7f0000100000ull, 0x1000, 2, 0x80),
		       a2 = rkt_ent(K, 0x300, 0x7f0000000000ull, 0x3000, 2, 0);

	torn_case(NULL, &a);		/* published */
	torn_case(&a, NULL);		/* wiped */
	torn_case(&a, &b);		/* the slot's next key, no wipe between */
	torn_case(&a, &a2);		/* the same key drawn again */
	/* Only the rkey differs: the old device rkey never passes with the
	 * new bounds, nor the reverse. */
	b = a;
	b.rkey = 0x101;
	b.length = 0x1000;
	torn_case(&a, &b);
}
END_TEST

START_TEST(test_rkt_check)
{
	const uint32_t rw = VRDMA_ACC_LOCAL_WRITE | VRDMA_ACC_REMOTE_WRITE;
	const uint32_t K = 0xa5c3e105u;		/* tag 0x52e1f, key slot 0x105 */
	const uint64_t W = vbe_vx_va(K, 0x123);	/* window 0x5c3e105 */
	unsigned bit;
	uint64_t va;
	struct vbe_rkt e = {
		.gkey = K, .rkey = 99, .iova = 0x10000, .length = 0x2000,
		.access = rw, .pd = 2, .pgoff = 0x123,
	}, empty;

	/* Whole region, first and last byte: at the key's device window. */
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0x10000, 0x2000,
					  VRDMA_ACC_REMOTE_WRITE, &va), 0);
	ck_assert(va == W);
	ck_assert(W == ((uint64_t)0x5c3e105 << 36 | 0x123));
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0x11fff, 1,
					  VRDMA_ACC_REMOTE_WRITE, &va), 0);
	ck_assert(va == W + 0x1fff);
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0x12000, 0,
					  VRDMA_ACC_REMOTE_WRITE, &va), 0);
	/* One byte outside, either end; a wrapping length. */
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0xffff, 2, VRDMA_ACC_REMOTE_WRITE, &va),
			 VRDMA_WS_REM_ACCESS_ERR);
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0x11fff, 2, VRDMA_ACC_REMOTE_WRITE, &va),
			 VRDMA_WS_REM_ACCESS_ERR);
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0x10001, UINT64_MAX,
					  VRDMA_ACC_REMOTE_WRITE, &va), VRDMA_WS_REM_ACCESS_ERR);
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, UINT64_MAX, 1,
					  VRDMA_ACC_REMOTE_WRITE, &va), VRDMA_WS_REM_ACCESS_ERR);
	/* Rights it was not given. */
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0x10000, 8, VRDMA_ACC_REMOTE_READ, &va),
			 VRDMA_WS_REM_ACCESS_ERR);
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0x10000, 8,
					  VRDMA_ACC_REMOTE_ATOMIC, &va), VRDMA_WS_REM_ACCESS_ERR);
	/* Another PD of the same guest, a stale or guessed key (other slot). */
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 1, 0x10000, 8, VRDMA_ACC_REMOTE_WRITE, &va),
			 VRDMA_WS_REM_ACCESS_ERR);
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K ^ 0x200, 2, 0x10000, 8,
					  VRDMA_ACC_REMOTE_WRITE, &va), VRDMA_WS_REM_ACCESS_ERR);
	/* The right slot with any one tag bit wrong (issue 12). */
	for (bit = VBE_KEY_IDX_BITS; bit < 32; bit++)
		ck_assert_int_eq(vbe_vx_rkt_check(&e, K ^ 1u << bit, 2, 0x10000, 8,
						  VRDMA_ACC_REMOTE_WRITE, &va),
				 VRDMA_WS_REM_ACCESS_ERR);
	/* A cached entry out of range (it passed parse, but the check does
	 * not rely on that). */
	e.length = VBE_VX_MR_MAX + 1;
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0x10000, 8, VRDMA_ACC_REMOTE_WRITE, &va),
			 VRDMA_WS_REM_ACCESS_ERR);
	e.length = VBE_VX_MR_MAX - 0x122;	/* pgoff 0x123: one byte past the window */
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0x10000, 8, VRDMA_ACC_REMOTE_WRITE, &va),
			 VRDMA_WS_REM_ACCESS_ERR);
	e.length = 0x2000;
	e.pgoff = VRDMA_PAGE_SIZE;
	ck_assert_int_eq(vbe_vx_rkt_check(&e, K, 2, 0x10000, 8, VRDMA_ACC_REMOTE_WRITE, &va),
			 VRDMA_WS_REM_ACCESS_ERR);
	/* An empty slot matches nothing, not even key 0. */
	memset(&empty, 0, sizeof(empty));
	ck_assert_int_eq(vbe_vx_rkt_check(&empty, 0, 0, 0, 0, 0, &va), VRDMA_WS_REM_ACCESS_ERR);
}
END_TEST

/* ---- the requester's cache, against a model of the peer ---- */

/* The peer node: its key table and its device's MRs (rkey, window). */
struct peer {
	_Alignas(8) uint8_t rkt[VBE_KEY_SLOTS][VBE_VX_RKT_ENT];
	struct { uint32_t rkey, key; uint64_t va, len; bool live; } mr[4];
	unsigned reads;
};

static struct peer P;

static void peer_reg(unsigned i, uint32_t key, uint32_t rkey, uint64_t iova, uint64_t len,
		     uint32_t pd)
{
	struct vbe_rkt e = rkt_ent(key, rkey, iova, len, pd, 0);

	P.mr[i].rkey = rkey;
	P.mr[i].key = key;
	P.mr[i].va = vbe_vx_va(key, 0);
	P.mr[i].len = len;
	P.mr[i].live = true;
	vbe_vx_rkt_write(P.rkt[vbe_key_idx(key)], &e);
}

static void peer_dereg(unsigned i)
{
	uint8_t *ent = P.rkt[vbe_key_idx(P.mr[i].key)];

	P.mr[i].live = false;
	if (vbe_vx_rkt_gkey(ent) == P.mr[i].key)
		vbe_vx_rkt_write(ent, NULL);
}

/* The responder's device: the MR a WR reaches (rkey, then bounds), or -1. */
static int peer_device(uint32_t rkey, uint64_t va, uint64_t len)
{
	unsigned i;

	for (i = 0; i < 4; i++)
		if (P.mr[i].live && P.mr[i].rkey == rkey)
			return va >= P.mr[i].va && len <= P.mr[i].len &&
			       va - P.mr[i].va <= P.mr[i].len - len ? (int)i : -1;
	return -1;
}

/* One WR's translation as target_verbs does it: READs as asked (the
 * entry as it is now, or `torn` of them torn), then the answer. */
static int xlate(struct vbe_rkc *c, uint32_t key, uint64_t addr, uint64_t len,
		 unsigned torn, uint32_t *rkey, uint64_t *va)
{
	_Alignas(8) uint8_t ent[VBE_VX_RKT_ENT];
	int st;

	while ((st = vbe_vx_rkc_get(c, key, 1, addr, len, VRDMA_ACC_REMOTE_WRITE, rkey,
				    va)) == VBE_VX_RKC_READ) {
		ck_assert(c->wait);
		ck_assert_uint_eq(c->want, key);
		memcpy(ent, P.rkt[vbe_key_idx(c->want)], sizeof(ent));
		if (torn) {
			torn--;
			ent[9] ^= 0x40;		/* iova's bytes from another moment */
		}
		P.reads++;
		vbe_vx_rkc_done(c, ent);
		ck_assert(!c->wait);
	}
	if (!st)
		vbe_vx_rkc_posted(c);
	return st;
}

START_TEST(test_rkc_basic)
{
	const uint32_t K = 0xa5c3e105u, K2 = 0x5a3c1e07u;
	struct vbe_rkc c;
	uint32_t rkey, i;
	uint64_t va;

	memset(&P, 0, sizeof(P));
	memset(&c, 0, sizeof(c));
	peer_reg(0, K, 0x1100, 0x40000, 0x2000, 1);
	/* Miss: one READ, then cached. */
	ck_assert_int_eq(xlate(&c, K, 0x40100, 16, 0, &rkey, &va), 0);
	ck_assert_uint_eq(P.reads, 1);
	ck_assert_uint_eq(rkey, 0x1100);
	ck_assert(va == vbe_vx_va(K, 0) + 0x100);
	ck_assert_int_eq(peer_device(rkey, va, 16), 0);
	ck_assert_int_eq(xlate(&c, K, 0x40000, 0x2000, 0, &rkey, &va), 0);
	ck_assert_uint_eq(P.reads, 1);
	/* Not in the table: one READ, REM_ACCESS_ERR, nothing cached. */
	ck_assert_int_eq(xlate(&c, K2, 0, 8, 0, &rkey, &va), VRDMA_WS_REM_ACCESS_ERR);
	ck_assert_uint_eq(P.reads, 2);
	ck_assert_uint_eq(c.want, 0);
	/* Key 0 is never looked up. */
	ck_assert_int_eq(xlate(&c, 0, 0, 8, 0, &rkey, &va), VRDMA_WS_REM_ACCESS_ERR);
	ck_assert_uint_eq(P.reads, 2);
	/* Asked again while a READ is out: refused, the READ stays. */
	ck_assert_int_eq(vbe_vx_rkc_get(&c, K2, 1, 0, 8, VRDMA_ACC_REMOTE_WRITE, &rkey, &va),
			 VBE_VX_RKC_READ);
	ck_assert_int_eq(vbe_vx_rkc_get(&c, K2, 1, 0, 8, VRDMA_ACC_REMOTE_WRITE, &rkey, &va),
			 VRDMA_WS_LOC_QP_OP_ERR);
	ck_assert(c.wait);
	/* The QP failed: nothing survives. */
	vbe_vx_rkc_forget(&c);
	ck_assert(!c.wait);
	ck_assert_int_eq(xlate(&c, K, 0x40100, 16, 0, &rkey, &va), 0);
	ck_assert_uint_eq(P.reads, 3);
	/* More keys than the cache holds: the oldest go, every one still
	 * translates right. */
	memset(&P, 0, sizeof(P));
	memset(&c, 0, sizeof(c));
	for (i = 0; i < 2 * VBE_VX_RKT_CACHE; i++) {
		uint32_t k = (i + 1) << VBE_KEY_IDX_BITS | (0x100 + i);
		struct vbe_rkt e = rkt_ent(k, 0x9000 + i, 0x1000 * i, 0x1000, 1, 0);

		vbe_vx_rkt_write(P.rkt[vbe_key_idx(k)], &e);
	}
	for (i = 0; i < 4 * VBE_VX_RKT_CACHE; i++) {
		uint32_t j = (i * 5) % (2 * VBE_VX_RKT_CACHE);
		uint32_t k = (j + 1) << VBE_KEY_IDX_BITS | (0x100 + j);

		ck_assert_int_eq(xlate(&c, k, 0x1000 * j + 8, 8, 0, &rkey, &va), 0);
		ck_assert_uint_eq(rkey, 0x9000 + j);
		ck_assert(va == vbe_vx_va(k, 0) + 8);
	}
}
END_TEST

/* A READ that overlapped the peer's writer: read again, a bounded number
 * of times, never taken. */
START_TEST(test_rkc_torn)
{
	const uint32_t K = 0xa5c3e105u;
	struct vbe_rkc c;
	uint32_t rkey;
	uint64_t va;
	_Alignas(8) uint8_t ent[VBE_VX_RKT_ENT];

	memset(&P, 0, sizeof(P));
	memset(&c, 0, sizeof(c));
	peer_reg(0, K, 0x1100, 0x40000, 0x2000, 1);
	ck_assert_int_eq(xlate(&c, K, 0x40100, 16, VBE_VX_RKT_TRIES - 1, &rkey, &va), 0);
	ck_assert_uint_eq(P.reads, VBE_VX_RKT_TRIES);
	ck_assert(va == vbe_vx_va(K, 0) + 0x100);
	vbe_vx_rkc_forget(&c);
	P.reads = 0;
	ck_assert_int_eq(xlate(&c, K, 0x40100, 16, VBE_VX_RKT_TRIES, &rkey, &va),
			 VRDMA_WS_REM_ACCESS_ERR);
	ck_assert_uint_eq(P.reads, VBE_VX_RKT_TRIES);
	ck_assert_uint_eq(c.want, 0);
	/* The next WR starts over. */
	ck_assert_int_eq(xlate(&c, K, 0x40100, 16, 0, &rkey, &va), 0);
	/* Malformed (check word fits, length 0): refused, not read again. */
	vbe_vx_rkc_forget(&c);
	P.reads = 0;
	{
		struct vbe_rkt e = rkt_ent(K, 0x1100, 0x40000, 0, 1, 0);

		vbe_vx_rkt_pack(&e, ent);
		memcpy(P.rkt[vbe_key_idx(K)], ent, sizeof(ent));
	}
	ck_assert_int_eq(xlate(&c, K, 0x40000, 0, 0, &rkey, &va), VRDMA_WS_REM_ACCESS_ERR);
	ck_assert_uint_eq(P.reads, 1);
}
END_TEST

/*
 * The residual risk of docs/security.md: the peer's guest deregisters K
 * and its driver hands K's device rkey to the MR registered next (K2,
 * the key slot's next key: key.c gave it another window tag).  Our
 * cache still says K -> that rkey; the WR still goes out, but into K's
 * window, where the MR with that rkey is not: the
 * device refuses it.  K2's memory is never reached through K.
 */
START_TEST(test_rkc_stale_rkey_reused)
{
	const uint32_t K = 0xa5c3e105u, K2 = 0x1234e105u, R = 0x4d00;
	struct vbe_rkc c;
	uint32_t rkey;
	uint64_t va, addr;

	memset(&P, 0, sizeof(P));
	memset(&c, 0, sizeof(c));
	peer_reg(0, K, R, 0x40000, 0x2000, 1);
	ck_assert_int_eq(xlate(&c, K, 0x40000, 8, 0, &rkey, &va), 0);
	ck_assert_int_eq(peer_device(rkey, va, 8), 0);
	/* Deregistered; then K2 in the same key slot with the same rkey,
	 * same iova and length, same PD: every field the requester checks
	 * would pass, and only the key differs. */
	peer_dereg(0);
	peer_reg(1, K2, R, 0x40000, 0x2000, 1);
	for (addr = 0x40000; addr < 0x42000; addr += 0x100) {
		ck_assert_int_eq(xlate(&c, K, addr, 0x100, 0, &rkey, &va), 0);
		ck_assert_uint_eq(P.reads, 1);		/* from the cache: stale */
		ck_assert_uint_eq(rkey, R);
		ck_assert_int_eq(peer_device(rkey, va, 0x100), -1);
	}
	/* Read afresh, K is simply not there. */
	vbe_vx_rkc_forget(&c);
	ck_assert_int_eq(xlate(&c, K, 0x40000, 8, 0, &rkey, &va), VRDMA_WS_REM_ACCESS_ERR);
	/* And K2's holder gets K2's MR. */
	ck_assert_int_eq(xlate(&c, K2, 0x40000, 8, 0, &rkey, &va), 0);
	ck_assert_int_eq(peer_device(rkey, va, 8), 1);
}
END_TEST

/* A cached entry that fails our check is read again before the WR fails:
 * the error is the entry's as the peer has it now (here: K drawn again
 * for a longer MR in another PD's place). */
START_TEST(test_rkc_stale_recheck)
{
	const uint32_t K = 0xa5c3e105u;
	struct vbe_rkc c;
	uint32_t rkey;
	uint64_t va;

	memset(&P, 0, sizeof(P));
	memset(&c, 0, sizeof(c));
	peer_reg(0, K, 0x1100, 0x40000, 0x1000, 1);
	ck_assert_int_eq(xlate(&c, K, 0x40000, 8, 0, &rkey, &va), 0);
	ck_assert_uint_eq(P.reads, 1);
	peer_dereg(0);
	peer_reg(1, K, 0x2200, 0x40000, 0x3000, 1);
	/* Beyond the cached length: read again, now within. */
	ck_assert_int_eq(xlate(&c, K, 0x41800, 8, 0, &rkey, &va), 0);
	ck_assert_uint_eq(P.reads, 2);
	ck_assert_uint_eq(rkey, 0x2200);
	ck_assert_int_eq(peer_device(rkey, va, 8), 1);
	/* Beyond both: one more READ, then the error (no loop). */
	ck_assert_int_eq(xlate(&c, K, 0x43000, 8, 0, &rkey, &va), VRDMA_WS_REM_ACCESS_ERR);
	ck_assert_uint_eq(P.reads, 3);
	/* The fresh entry stays cached and serves the next WR. */
	ck_assert_int_eq(xlate(&c, K, 0x42ff8, 8, 0, &rkey, &va), 0);
	ck_assert_uint_eq(P.reads, 3);
	/* A PD the entry does not have: read again once, refused. */
	ck_assert_int_eq(vbe_vx_rkc_get(&c, K, 2, 0x40000, 8, VRDMA_ACC_REMOTE_WRITE, &rkey,
					&va), VBE_VX_RKC_READ);
	vbe_vx_rkc_done(&c, P.rkt[vbe_key_idx(K)]);
	ck_assert_int_eq(vbe_vx_rkc_get(&c, K, 2, 0x40000, 8, VRDMA_ACC_REMOTE_WRITE, &rkey,
					&va), VRDMA_WS_REM_ACCESS_ERR);
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
	tcase_add_test(tc, test_rkt_hostile);
	tcase_add_test(tc, test_rkt_torn);
	tcase_add_test(tc, test_rkt_check);
	tcase_add_test(tc, test_rkc_basic);
	tcase_add_test(tc, test_rkc_torn);
	tcase_add_test(tc, test_rkc_stale_rkey_reused);
	tcase_add_test(tc, test_rkc_stale_recheck);
	tcase_add_test(tc, test_wrid);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(verbs_suite());

	return ck_run(sr);
}
