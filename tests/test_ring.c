// SPDX-License-Identifier: MIT
/* Ring index logic (common/vring.h): wrap-around, sanity, notification
 * suppression -- the rules both halves of the driver rely on. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vring.h"
#include "ck_run.h"

START_TEST(sane_accepts_full_and_empty)
{
	ck_assert(vring_sane(0, 0, 256));
	ck_assert(vring_sane(256, 0, 256));
	ck_assert(!vring_sane(257, 0, 256));
	/* producer behind consumer is as impossible as too far ahead */
	ck_assert(!vring_sane(5, 6, 256));
}
END_TEST

START_TEST(sane_across_wrap)
{
	uint32_t cons = UINT32_MAX - 3;

	ck_assert(vring_sane(cons + 10, cons, 16));	/* prod wrapped to 6 */
	ck_assert(!vring_sane(cons + 17, cons, 16));
}
END_TEST

START_TEST(notify_only_when_event_crossed)
{
	/* consumer armed at 5: a batch 3..6 crosses it, 6..9 does not */
	ck_assert(vring_need_notify(5, 3, 6));
	ck_assert(vring_need_notify(5, 4, 5));
	ck_assert(!vring_need_notify(5, 5, 9));
	ck_assert(!vring_need_notify(5, 0, 4));
	/* across the 2^32 wrap */
	ck_assert(vring_need_notify(2, UINT32_MAX - 1, 3));
}
END_TEST

START_TEST(push_and_arm_protocol)
{
	struct vrdma_ring_ctl c;

	memset(&c, 0, sizeof(c));
	/* consumer idle and armed at cons+1 = 1: first push notifies */
	ck_assert(!vring_arm(&c, 0));
	ck_assert(vring_push(&c, 0, 4));
	/* consumer busy-polls: disarmed, pushes stay silent */
	vring_disarm(&c, 4);
	ck_assert(!vring_push(&c, 4, 8));
	ck_assert(!vring_push(&c, 8, 100));
	/* consumer caught up and arms: arm sees nothing pending */
	vring_consumed(&c, 100);
	ck_assert(!vring_arm(&c, 100));
	ck_assert(vring_push(&c, 100, 101));
	/* arm with work pending reports it: do not sleep */
	ck_assert(vring_arm(&c, 100));
}
END_TEST

START_TEST(one_notification_per_batch)
{
	struct vrdma_ring_ctl c;
	uint32_t prod = 0, notes = 0;
	int i;

	memset(&c, 0, sizeof(c));
	vring_arm(&c, 0);
	/* one batch of 32: one notification, however many entries */
	notes += vring_push(&c, prod, prod + 32);
	prod += 32;
	/* nobody re-armed: later batches are silent */
	for (i = 0; i < 10; i++, prod += 3)
		notes += vring_push(&c, prod, prod + 3);
	ck_assert_uint_eq(notes, 1);
}
END_TEST

START_TEST(layout_offsets)
{
	ck_assert_uint_eq(vring_req_off(), VRDMA_PAGE_SIZE);
	/* 256 x 128 B = 8 pages of requests, then the event ring */
	ck_assert_uint_eq(vring_evt_off(8), 9 * VRDMA_PAGE_SIZE);
	ck_assert_uint_eq(vrdma_sring_pages(8, 6), 10);
	/* tiny rings still take whole pages */
	ck_assert_uint_eq(vring_evt_off(1), 2 * VRDMA_PAGE_SIZE);
	ck_assert_uint_eq(vrdma_sring_pages(1, 1), 3);
	ck_assert_uint_eq(vrdma_cq_pages(6), 2);
	ck_assert_uint_eq(vrdma_cq_pages(10), 17);
}
END_TEST

static Suite *ring_suite(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("indexes");

	tcase_add_test(tc, sane_accepts_full_and_empty);
	tcase_add_test(tc, sane_across_wrap);
	tcase_add_test(tc, notify_only_when_event_crossed);
	tcase_add_test(tc, push_and_arm_protocol);
	tcase_add_test(tc, one_notification_per_batch);
	tcase_add_test(tc, layout_offsets);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ring_suite());

	return ck_run(sr);
}
