// SPDX-License-Identifier: MIT
/*
 * Check suite for backend/device/verbs_udhdr.c: the header another node's
 * vrdmad puts before a datagram, and the sending node read off the 40
 * bytes the device wrote.  A peer vrdmad is not trusted: every field
 * out of range, every length that disagrees, a source the device did not
 * write is refused, and nothing of a refused header is left in *h.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "../backend/device/verbs_ud.h"
#include "ck_run.h"

static uint8_t buf[VBE_VUD_BUF + 64];

/* A datagram as rxe delivers it over RoCE v2 / IPv4 from 10.0.0.2:
 * 20 zero bytes, the IPv4 header, our header, len payload bytes. */
static size_t mk(uint32_t len)
{
	struct vbe_vud_hdr h = {
		.dqpn = 0x123456, .sqpn = 7, .qkey = 0x11111111, .imm = 0xabcd,
		.group = 0x5555, .len = len, .has_imm = true,
	};

	memset(buf, 0, sizeof(buf));
	buf[20] = 0x45;
	buf[32] = 10;
	buf[35] = 2;
	vbe_vud_pack(&h, buf + VRDMA_GRH_LEN);
	memset(buf + VRDMA_GRH_LEN + VBE_VUD_HDR, 0x5a, len);
	return VRDMA_GRH_LEN + VBE_VUD_HDR + len;
}

static void refused(size_t n, int want)
{
	static const struct vbe_vud_hdr zero;
	struct vbe_vud_hdr h;
	size_t off = 77;

	ck_assert_int_eq(vbe_vud_parse(buf, n, &h, &off), want);
	ck_assert(!memcmp(&h, &zero, sizeof(h)));
	ck_assert_uint_eq(off, 0);
}

START_TEST(test_roundtrip)
{
	static const uint8_t gid[16] = { [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 2 };
	struct vbe_vud_hdr h;
	uint32_t len;
	size_t off;

	for (len = 0; len <= VRDMA_UD_MTU; len += len < 8 ? 1 : 997) {
		size_t n = mk(len);

		ck_assert_int_eq(vbe_vud_parse(buf, n, &h, &off), 0);
		ck_assert_uint_eq(off, VRDMA_GRH_LEN + VBE_VUD_HDR);
		ck_assert_uint_eq(h.len, len);
		ck_assert_uint_eq(h.dqpn, 0x123456);
		ck_assert_uint_eq(h.sqpn, 7);
		ck_assert_uint_eq(h.qkey, 0x11111111);
		ck_assert_uint_eq(h.imm, 0xabcd);
		ck_assert_uint_eq(h.group, 0x5555);
		ck_assert(h.has_imm);
		ck_assert(!memcmp(h.sgid, gid, 16));
	}
	/* An IB GRH (IP version 6): the source GID as it is. */
	mk(8);
	memset(buf, 0, 40);
	buf[0] = 0x60;
	memset(buf + 8, 0xfe, 16);
	ck_assert_int_eq(vbe_vud_parse(buf, VRDMA_GRH_LEN + VBE_VUD_HDR + 8, &h, &off), 0);
	ck_assert_uint_eq(h.sgid[0], 0xfe);
	ck_assert_uint_eq(h.sgid[15], 0xfe);
}
END_TEST

static void put32(size_t at, uint32_t v)
{
	v = htole32(v);
	memcpy(buf + VRDMA_GRH_LEN + at, &v, 4);
}

START_TEST(test_hostile)
{
	size_t n;

	/* Lengths: short of a header, past a buffer, or not the header's. */
	n = mk(16);
	refused(0, -EMSGSIZE);
	refused(VRDMA_GRH_LEN + VBE_VUD_HDR - 1, -EMSGSIZE);
	refused(VBE_VUD_BUF + 1, -EMSGSIZE);
	refused(n - 1, -EMSGSIZE);
	refused(n + 1, -EMSGSIZE);
	mk(16);
	put32(24, 0xffffffffu);		/* a length that wraps */
	refused(n, -EMSGSIZE);
	mk(16);
	put32(24, VRDMA_UD_MTU + 1);
	refused(n, -EMSGSIZE);
	/* Fields: magic, unknown flags, reserved bytes, QP numbers, group. */
	mk(16);
	buf[VRDMA_GRH_LEN] ^= 1;
	refused(n, -EPROTO);
	mk(16);
	buf[VRDMA_GRH_LEN + 1] |= 0x80;
	refused(n, -EPROTO);
	mk(16);
	buf[VRDMA_GRH_LEN + 3] = 1;
	refused(n, -EPROTO);
	mk(16);
	put32(28, 1);
	refused(n, -EPROTO);
	mk(16);
	put32(4, 1u << 24);
	refused(n, -EPROTO);
	mk(16);
	put32(4, 0);
	refused(n, -EPROTO);
	mk(16);
	put32(8, 0xffffffffu);
	refused(n, -EPROTO);
	mk(16);
	put32(20, 0);
	refused(n, -EPROTO);
	/* A source the device did not write: neither GRH nor IPv4 header. */
	mk(16);
	buf[20] = 0x46;			/* IPv4 with options: not RoCE v2's */
	refused(n, -EPROTO);
	mk(16);
	buf[3] = 1;			/* the 20 bytes before the IPv4 header */
	refused(n, -EPROTO);
}
END_TEST

static Suite *vud_suite(void)
{
	Suite *s = suite_create("verbs_ud");
	TCase *tc = tcase_create("header");

	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_hostile);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(vud_suite());

	return ck_run(sr);
}
