// SPDX-License-Identifier: MIT
/*
 * The port active_mtu of vrdma's libibverbs (verbs/vvb.h vvb_ud_mtu):
 * the largest IB MTU whose bytes fit the device's max_ud_msg, so that a
 * program sizing its datagrams by it (ibv_ud_pingpong, UCX, libfabric)
 * never sends one the node cannot carry: 4096 between guests of a node,
 * 4064 (a 9000-byte device) 2048, 992 (rxe over 1500-byte Ethernet) 512;
 * 0, a libvrdma that predates max_ud_msg, 4096.  (ibv_query_port on a
 * live vrdmad: tests/verbs.sh ud_verbs.)
 */
#include <check.h>

#include "../verbs/vvb.h"
#include "ck_run.h"

START_TEST(test_ud_mtu)
{
	static const struct { uint32_t msg; enum ibv_mtu mtu; } m[] = {
		{ 4096, IBV_MTU_4096 }, { 4095, IBV_MTU_2048 }, { 4064, IBV_MTU_2048 },
		{ 2048, IBV_MTU_2048 }, { 2047, IBV_MTU_1024 }, { 1024, IBV_MTU_1024 },
		{ 992, IBV_MTU_512 }, { 512, IBV_MTU_512 }, { 511, IBV_MTU_256 },
		{ 256, IBV_MTU_256 }, { 100, IBV_MTU_256 }, { 8192, IBV_MTU_4096 },
		{ 0, IBV_MTU_4096 },
	};
	unsigned i;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		ck_assert_msg(vvb_ud_mtu(m[i].msg) == m[i].mtu, "max_ud_msg %u: %d, want %d",
			      m[i].msg, vvb_ud_mtu(m[i].msg), m[i].mtu);
}
END_TEST

static Suite *vvb_suite(void)
{
	Suite *s = suite_create("vvb_mtu");
	TCase *tc = tcase_create("mtu");

	tcase_add_test(tc, test_ud_mtu);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(vvb_suite());

	return ck_run(sr);
}
