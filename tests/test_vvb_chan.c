// SPDX-License-Identifier: MIT
/*
 * Completion channels through vrdma's libibverbs (verbs/chan.c) against a
 * live vrdmad, as a verbs program uses them: CQs A and B on one channel,
 * each the send CQ of one of two connected RC QPs (WRITEs complete there),
 * the receive CQ C without a channel.  What ibv_req_notify_cq(3) and the
 * kernel's event queue give a program, and perftest's ib_send_lat -e
 * counts on:
 *   - events come in the order their completions came: A's completion,
 *     then B's, gives A's event first (the completions polled by the
 *     program, or left to the channel);
 *   - an arm fires for the next completion only: one already queued (the
 *     program re-arms before it polls) gives no event, the next CQ to
 *     complete gives the next event, the queued completion is still
 *     polled;
 *   - one event per arm however many completions come, none for a CQ not
 *     armed;
 *   - a destroyed QP's completions an arm kept aside are gone with it;
 *   - an event loop (get, ack, arm, poll until empty) on another thread
 *     sees every completion of both CQs: no event is lost.
 * Nothing here waits on time but as a bound for a failure.
 */
#include <check.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tlive.h"
#include "tverbs.h"

#define T_DEPTH		16		/* send WRs per QP */
#define T_BUF		65536
#define T_WAIT_MS	20000		/* longest wait for a completion or event */
#define T_LOOP		500		/* WRITEs per QP in the event loop test */

struct vc {
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq[3];			/* A, B on the channel; C not */
	struct ibv_qp *qp[2];			/* send CQ A, B; receive CQ C */
	union ibv_gid gid;
	uint8_t *buf;
};

static struct vc v;
static const char *const names[2] = { "A", "B" };

static void vc_open(void)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC, .cap = { T_DEPTH, 1, 1, 1, 0 } };
	int64_t end = now_ms() + T_OPEN_MS;
	int i;

	memset(&v, 0, sizeof(v));
	for (;;) {			/* vrdmad may not listen yet */
		v.list = ibv_get_device_list(NULL);
		ck_assert_ptr_nonnull(v.list);
		if (v.list[0] || now_ms() > end)
			break;
		ibv_free_device_list(v.list);
		usleep(20000);
	}
	ck_assert_msg(v.list[0] != NULL, "no verbs device");
	v.ctx = ibv_open_device(v.list[0]);
	ck_assert_ptr_nonnull(v.ctx);
	ck_assert_int_eq(ibv_query_gid(v.ctx, 1, 0, &v.gid), 0);
	v.pd = ibv_alloc_pd(v.ctx);
	ck_assert_ptr_nonnull(v.pd);
	v.buf = calloc(1, T_BUF);
	ck_assert_ptr_nonnull(v.buf);
	v.mr = ibv_reg_mr(v.pd, v.buf, T_BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ck_assert_ptr_nonnull(v.mr);
	v.ch = ibv_create_comp_channel(v.ctx);
	ck_assert_ptr_nonnull(v.ch);
	for (i = 0; i < 3; i++) {
		v.cq[i] = ibv_create_cq(v.ctx, 4 * T_DEPTH, i < 2 ? (void *)names[i] : NULL,
					i < 2 ? v.ch : NULL, 0);
		ck_assert_ptr_nonnull(v.cq[i]);
	}
	ck_assert_int_eq(ibv_destroy_comp_channel(v.ch), EBUSY);	/* CQs on it */
	ia.recv_cq = v.cq[2];
	for (i = 0; i < 2; i++) {
		ia.send_cq = v.cq[i];
		v.qp[i] = ibv_create_qp(v.pd, &ia);
		ck_assert_msg(v.qp[i] != NULL, "create_qp: %s", strerror(errno));
	}
	tv_qp_init(v.qp[0]);
	tv_qp_init(v.qp[1]);
	tv_qp_rts(v.qp[0], &v.gid, v.qp[1]->qp_num);
	tv_qp_rts(v.qp[1], &v.gid, v.qp[0]->qp_num);
}

static void vc_close(void)
{
	int i;

	for (i = 0; i < 2; i++)
		if (v.qp[i])
			ck_assert_int_eq(ibv_destroy_qp(v.qp[i]), 0);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(ibv_destroy_cq(v.cq[i]), 0);
	ck_assert_int_eq(ibv_destroy_comp_channel(v.ch), 0);
	ck_assert_int_eq(ibv_dereg_mr(v.mr), 0);
	ck_assert_int_eq(ibv_dealloc_pd(v.pd), 0);
	ck_assert_int_eq(ibv_close_device(v.ctx), 0);
	ibv_free_device_list(v.list);
	free(v.buf);
}

static void vc_arm(int i)
{
	ck_assert_int_eq(ibv_req_notify_cq(v.cq[i], 0), 0);
}

/* n signaled 8-byte WRITEs on QP i (completing on CQ i), ids from id. */
static void vc_write(int i, uint64_t id, int n)
{
	struct ibv_send_wr w[T_DEPTH], *bad = NULL;
	struct ibv_sge s[T_DEPTH];
	int k;

	ck_assert_int_le(n, T_DEPTH);
	for (k = 0; k < n; k++) {
		s[k] = (struct ibv_sge){ (uintptr_t)v.buf + 8 * k, 8, v.mr->lkey };
		w[k] = (struct ibv_send_wr){ .wr_id = id + (uint64_t)k, .sg_list = &s[k],
					     .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
					     .send_flags = IBV_SEND_SIGNALED,
					     .next = k + 1 < n ? &w[k + 1] : NULL,
					     .wr.rdma = { (uintptr_t)v.buf + T_BUF / 2 + 8 * k,
							  v.mr->rkey } };
	}
	ck_assert_int_eq(ibv_post_send(v.qp[i], w, &bad), 0);
}

/* CQ i's next completion, successful: its wr_id. */
static uint64_t vc_next(int i)
{
	int64_t end = now_ms() + T_WAIT_MS;
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(v.cq[i], 1, &wc)) == 0 && now_ms() < end)
		;
	ck_assert_msg(n == 1, "CQ %s: no completion (%d)", names[i], n);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.qp_num, v.qp[i]->qp_num);
	return wc.wr_id;
}

/* Is an event waiting in the channel (wait at most ms)? */
static int vc_ready(int ms)
{
	struct pollfd p = { .fd = v.ch->fd, .events = POLLIN };
	int rc = poll(&p, 1, ms);

	ck_assert_int_ge(rc, 0);
	return rc == 1;
}

/* The next event, acknowledged: which CQ (0 A, 1 B). */
static int vc_event(void)
{
	struct ibv_cq *cq;
	void *cq_ctx;
	int i;

	ck_assert_msg(vc_ready(T_WAIT_MS), "no event");
	ck_assert_int_eq(ibv_get_cq_event(v.ch, &cq, &cq_ctx), 0);
	ibv_ack_cq_events(cq, 1);
	for (i = 0; i < 2; i++)
		if (cq == v.cq[i]) {
			ck_assert_ptr_eq(cq_ctx, names[i]);
			return i;
		}
	ck_abort_msg("event for a CQ not on the channel");
	return -1;
}

START_TEST(test_order_polled)
{
	NEED_DAEMON();
	vc_open();
	vc_arm(0);
	vc_arm(1);
	/* B was created, and armed, after A: a scan would look at it first */
	vc_write(0, 1, 1);
	ck_assert_uint_eq(vc_next(0), 1);
	vc_write(1, 2, 1);
	ck_assert_uint_eq(vc_next(1), 2);
	ck_assert_int_eq(vc_event(), 0);
	ck_assert_int_eq(vc_event(), 1);
	ck_assert(!vc_ready(0));
	vc_close();
}
END_TEST

START_TEST(test_order_waited)
{
	NEED_DAEMON();
	vc_open();
	vc_arm(1);
	vc_arm(0);
	vc_write(0, 1, 1);
	ck_assert(vc_ready(T_WAIT_MS));		/* A's event is out */
	vc_write(1, 2, 1);
	ck_assert_int_eq(vc_event(), 0);
	ck_assert_int_eq(vc_event(), 1);
	/* the channel took nothing from the program */
	ck_assert_uint_eq(vc_next(0), 1);
	ck_assert_uint_eq(vc_next(1), 2);
	ck_assert(!vc_ready(0));
	vc_close();
}
END_TEST

START_TEST(test_arm_queued)
{
	NEED_DAEMON();
	vc_open();
	vc_arm(0);
	vc_write(0, 1, 1);
	ck_assert_int_eq(vc_event(), 0);
	/* re-armed before its completion is polled, as perftest does */
	vc_arm(0);
	vc_arm(1);
	vc_write(1, 2, 1);
	ck_assert_int_eq(vc_event(), 1);
	ck_assert_uint_eq(vc_next(0), 1);
	ck_assert_uint_eq(vc_next(1), 2);
	ck_assert(!vc_ready(0));
	/* A still armed: its next completion fires */
	vc_write(0, 3, 1);
	ck_assert_int_eq(vc_event(), 0);
	ck_assert_uint_eq(vc_next(0), 3);
	ck_assert(!vc_ready(0));
	vc_close();
}
END_TEST

START_TEST(test_one_per_arm)
{
	int k;

	NEED_DAEMON();
	vc_open();
	vc_arm(0);
	vc_write(0, 1, 3);
	for (k = 1; k <= 3; k++)
		ck_assert_uint_eq(vc_next(0), (uint64_t)k);
	ck_assert_int_eq(vc_event(), 0);
	ck_assert(!vc_ready(0));
	vc_write(1, 4, 1);			/* B never armed */
	ck_assert_uint_eq(vc_next(1), 4);
	ck_assert(!vc_ready(0));
	vc_close();
}
END_TEST

START_TEST(test_destroyed_qp)
{
	struct ibv_wc wc;

	NEED_DAEMON();
	vc_open();
	vc_arm(0);
	vc_write(0, 1, 2);
	ck_assert_int_eq(vc_event(), 0);
	vc_arm(0);		/* both completions set aside by now */
	ck_assert_int_eq(ibv_destroy_qp(v.qp[0]), 0);
	v.qp[0] = NULL;
	ck_assert_int_eq(ibv_poll_cq(v.cq[0], 1, &wc), 0);
	vc_close();		/* A destroyed while armed */
}
END_TEST

struct loop {
	int got[2];
	int rc;
};

/* get, ack, arm, poll until empty: until every completion is in. */
static void *vc_loop(void *arg)
{
	struct loop *l = arg;
	struct ibv_wc wc[8];
	struct ibv_cq *cq;
	void *cq_ctx;
	int i, n, k;

	while (l->got[0] < T_LOOP || l->got[1] < T_LOOP) {
		struct pollfd p = { .fd = v.ch->fd, .events = POLLIN };

		/* (no ck_assert off the test's thread) */
		if (poll(&p, 1, T_WAIT_MS) != 1) {
			l->rc = ETIMEDOUT;		/* an event lost */
			return NULL;
		}
		if (ibv_get_cq_event(v.ch, &cq, &cq_ctx)) {
			l->rc = errno;
			return NULL;
		}
		ibv_ack_cq_events(cq, 1);
		i = cq == v.cq[1];
		if (ibv_req_notify_cq(cq, 0)) {
			l->rc = EIO;
			return NULL;
		}
		while ((n = ibv_poll_cq(cq, 8, wc)) > 0) {
			for (k = 0; k < n; k++) {
				if (wc[k].status != IBV_WC_SUCCESS ||
				    wc[k].wr_id != (uint64_t)l->got[i]) {
					l->rc = EPROTO;		/* lost or out of order */
					return NULL;
				}
				__atomic_add_fetch(&l->got[i], 1, __ATOMIC_RELEASE);
			}
		}
		if (n < 0) {
			l->rc = errno;
			return NULL;
		}
	}
	return NULL;
}

START_TEST(test_event_loop)
{
	struct loop l = { { 0, 0 }, 0 };
	int sent[2] = { 0, 0 }, i;
	pthread_t th;

	NEED_DAEMON();
	vc_open();
	vc_arm(0);
	vc_arm(1);
	ck_assert_int_eq(pthread_create(&th, NULL, vc_loop, &l), 0);
	/* one WRITE in flight per QP: the loop's polls make the room */
	while ((sent[0] < T_LOOP || sent[1] < T_LOOP) && !l.rc) {
		for (i = 0; i < 2; i++) {
			if (sent[i] < T_LOOP &&
			    __atomic_load_n(&l.got[i], __ATOMIC_ACQUIRE) == sent[i]) {
				vc_write(i, (uint64_t)sent[i], 1);
				sent[i]++;
			}
		}
		sched_yield();
	}
	pthread_join(th, NULL);
	ck_assert_msg(l.rc == 0, "event loop: %s", strerror(l.rc));
	ck_assert_int_eq(l.got[0], T_LOOP);
	ck_assert_int_eq(l.got[1], T_LOOP);
	vc_close();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vvb_chan");
	TCase *live = tlive_tcase();

	tcase_add_test(live, test_order_polled);
	tcase_add_test(live, test_order_waited);
	tcase_add_test(live, test_arm_queued);
	tcase_add_test(live, test_one_per_arm);
	tcase_add_test(live, test_destroyed_qp);
	tcase_add_test(live, test_event_loop);
	suite_add_tcase(s, live);
	return tlive_main("test_vvb_chan", s);
}
