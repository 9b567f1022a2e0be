// SPDX-License-Identifier: MIT
/*
 * libvrdma public API: misuse must give the documented errno, never a
 * crash.  Part 1 needs no daemon.  Part 2 starts $VRDMA_BUILD/sbin/vrdmad
 * on a private run dir per test (skipped with a message when the daemon
 * has not been built) and checks misuse against a live device, plus one
 * small end-to-end transfer.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vrdma/vrdma.h"
#include "tlive.h"
/* A few tests play a lying dom0 or a buggy library by touching library
 * internals (layout only, no internal calls). */
#include "../libvrdma/vlib.h"

#define T_CONN_MS	5000
#define LOOSE_MS	20000	/* "returned at all", not a timing claim */

static void private_run_dir(char *dir, size_t len)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, len, "%s/vrdma-api-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	setenv("VRDMA_RUN_DIR", dir, 1);
}

/* ---- part 1: no daemon ---- */

START_TEST(t_null_args)
{
	struct vrdma_send_wr *bad_s = (void *)1;
	struct vrdma_recv_wr *bad_r = (void *)1;
	struct vrdma_conn_req req;
	struct vrdma_wc wc;

	ck_assert_int_eq(vrdma_close(NULL), EINVAL);
	errno = 0;
	ck_assert_ptr_null(vrdma_node_name(NULL));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(vrdma_alloc_buf(NULL, 4096));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(vrdma_free_buf(NULL, NULL), EINVAL);
	errno = 0;
	ck_assert_ptr_null(vrdma_alloc_pd(NULL));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(vrdma_dealloc_pd(NULL), EINVAL);
	errno = 0;
	ck_assert_ptr_null(vrdma_reg_mr(NULL, &wc, sizeof(wc), 0));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(vrdma_dereg_mr(NULL), EINVAL);
	errno = 0;
	ck_assert_ptr_null(vrdma_create_cq(NULL, 16, NULL));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(vrdma_destroy_cq(NULL), EINVAL);
	errno = 0;
	ck_assert_int_eq(vrdma_poll_cq(NULL, 1, &wc), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(vrdma_wait_cq(NULL, 0), EINVAL);
	errno = 0;
	ck_assert_ptr_null(vrdma_create_qp(NULL, NULL));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(vrdma_destroy_qp(NULL), EINVAL);
	ck_assert_int_eq(vrdma_post_send(NULL, NULL, &bad_s), EINVAL);
	ck_assert_ptr_null(bad_s);
	ck_assert_int_eq(vrdma_post_recv(NULL, NULL, &bad_r), EINVAL);
	ck_assert_ptr_null(bad_r);
	ck_assert_int_eq(vrdma_post_send(NULL, NULL, NULL), EINVAL);
	ck_assert_int_eq(vrdma_post_recv(NULL, NULL, NULL), EINVAL);
	ck_assert_int_eq(vrdma_connect(NULL, NULL, "svc", NULL, 0, NULL, NULL, 10), EINVAL);
	errno = 0;
	ck_assert_ptr_null(vrdma_listen(NULL, "svc"));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(vrdma_close_listener(NULL), EINVAL);
	ck_assert_int_eq(vrdma_get_request(NULL, &req, 0), EINVAL);
	ck_assert_int_eq(vrdma_accept(NULL, NULL, NULL, NULL, 0), EINVAL);
	ck_assert_int_eq(vrdma_reject(NULL, NULL), EINVAL);
}
END_TEST

START_TEST(t_open_no_daemon)
{
	struct vrdma_device *dev;
	char dir[256];
	int64_t t0;

	private_run_dir(dir, sizeof(dir));
	t0 = now_ms();
	errno = 0;
	dev = vrdma_open(NULL, 1000);
	ck_assert_ptr_null(dev);
	ck_assert_msg(errno == ECONNREFUSED || errno == ENOENT, "errno %d (%s)",
		      errno, strerror(errno));
	ck_assert_int_lt(now_ms() - t0, LOOSE_MS);
	errno = 0;
	ck_assert_ptr_null(vrdma_open("host", 100));
	ck_assert_msg(errno == ECONNREFUSED || errno == ENOENT, "errno %d", errno);
	rm_run_dir(dir);
}
END_TEST

START_TEST(t_open_bad_args)
{
	errno = 0;
	ck_assert_ptr_null(vrdma_open("nonsense", 100));
	ck_assert_msg(errno == EINVAL || errno == EPROTONOSUPPORT, "errno %d", errno);
	errno = 0;
	ck_assert_ptr_null(vrdma_open(NULL, -1));
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(t_status_str)
{
	const char *seen[VRDMA_WC_GENERAL_ERR + 1];
	int s, t;

	for (s = VRDMA_WC_SUCCESS; s <= VRDMA_WC_GENERAL_ERR; s++) {
		seen[s] = vrdma_wc_status_str((enum vrdma_wc_status)s);
		ck_assert_ptr_nonnull(seen[s]);
		ck_assert_str_ne(seen[s], "unknown");
		for (t = 0; t < s; t++)
			ck_assert_str_ne(seen[s], seen[t]);
	}
	ck_assert_str_eq(vrdma_wc_status_str((enum vrdma_wc_status)1000), "unknown");
}
END_TEST

/* ---- part 2: a live vrdmad ---- */

/* Send SGEs of the QPs make_qp() creates: any list unless a test says. */
static uint32_t make_qp_send_sge = VRDMA_MAX_SGE_PER_WR;

static struct vrdma_qp *make_qp(struct vrdma_pd *pd, struct vrdma_cq *cq,
				uint32_t depth)
{
	struct vrdma_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq,
		.cap = { depth, depth, make_qp_send_sge, 1 },
	};
	struct vrdma_qp *qp = vrdma_create_qp(pd, &a);

	ck_assert_msg(qp != NULL, "create_qp: %s", strerror(errno));
	return qp;
}

START_TEST(t_live_mr)
{
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
	struct vrdma_mr *mr;
	uint8_t *buf;
	void *heap;

	NEED_DAEMON();
	dev = open_dev();
	ck_assert_ptr_nonnull(vrdma_node_name(dev));
	pd = vrdma_alloc_pd(dev);
	ck_assert_ptr_nonnull(pd);
	buf = vrdma_alloc_buf(dev, 8192);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(buf[100], 0);		/* zeroed */

	/* The program's own memory registers too (test_modify has more). */
	heap = malloc(8192);
	mr = vrdma_reg_mr(pd, heap, 4096, VRDMA_ACCESS_LOCAL_WRITE);
	ck_assert_msg(mr != NULL, "reg_mr(malloc): %s", strerror(errno));
	ck_assert_int_eq(vrdma_dereg_mr(mr), 0);
	free(heap);
	errno = 0;
	ck_assert_ptr_null(vrdma_reg_mr(pd, buf + 8000, 400, VRDMA_ACCESS_LOCAL_WRITE));
	ck_assert_int_eq(errno, EFAULT);
	errno = 0;
	ck_assert_ptr_null(vrdma_reg_mr(pd, buf, 0, 0));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(vrdma_reg_mr(pd, buf, 64, 1 << 20));
	ck_assert_int_eq(errno, EINVAL);

	mr = vrdma_reg_mr(pd, buf + 4096, 4096,
			  VRDMA_ACCESS_LOCAL_WRITE | VRDMA_ACCESS_REMOTE_READ);
	ck_assert_msg(mr != NULL, "reg_mr: %s", strerror(errno));
	ck_assert_ptr_eq(mr->addr, buf + 4096);
	ck_assert_int_eq(vrdma_free_buf(dev, buf), EBUSY);
	ck_assert_int_eq(vrdma_dealloc_pd(pd), EBUSY);
	ck_assert_int_eq(vrdma_free_buf(dev, buf + 1), EINVAL);
	ck_assert_int_eq(vrdma_dereg_mr(mr), 0);
	ck_assert_int_eq(vrdma_free_buf(dev, buf), 0);
	ck_assert_int_eq(vrdma_dealloc_pd(pd), 0);
	ck_assert_int_eq(vrdma_close(dev), 0);
}
END_TEST

/* The wait policy: env VRDMA_WAIT at open, the setter, AUTO resolved. */
START_TEST(t_live_wait_policy)
{
	struct vrdma_device *dev;
	struct vrdma_cq *cq;

	NEED_DAEMON();
	ck_assert_int_eq(vrdma_set_wait_policy(NULL, VRDMA_WAIT_CPU), EINVAL);
	ck_assert_int_eq(vrdma_get_wait_policy(NULL), -1);
	setenv("VRDMA_WAIT", "cpu", 1);
	dev = open_dev();
	unsetenv("VRDMA_WAIT");
	ck_assert_int_eq(vrdma_get_wait_policy(dev), VRDMA_WAIT_CPU);
	ck_assert_int_eq(vrdma_set_wait_policy(dev, (enum vrdma_wait_policy)7), EINVAL);
	ck_assert_int_eq(vrdma_get_wait_policy(dev), VRDMA_WAIT_CPU);
	ck_assert_int_eq(vrdma_set_wait_policy(dev, VRDMA_WAIT_LATENCY), 0);
	ck_assert_int_eq(vrdma_get_wait_policy(dev), VRDMA_WAIT_LATENCY);
	ck_assert_int_eq(vrdma_set_wait_policy(dev, VRDMA_WAIT_AUTO), 0);
	ck_assert_int_ne(vrdma_get_wait_policy(dev), VRDMA_WAIT_AUTO);
	/* Waits work under every policy. */
	cq = vrdma_create_cq(dev, 8, NULL);
	ck_assert_ptr_nonnull(cq);
	ck_assert_int_eq(vrdma_set_wait_policy(dev, VRDMA_WAIT_THROUGHPUT), 0);
	ck_assert_int_eq(vrdma_wait_cq(cq, 20), ETIMEDOUT);
	ck_assert_int_eq(vrdma_set_wait_policy(dev, VRDMA_WAIT_LATENCY), 0);
	ck_assert_int_eq(vrdma_wait_cq(cq, 20), ETIMEDOUT);
	ck_assert_int_eq(vrdma_close(dev), 0);
	setenv("VRDMA_WAIT", "bogus", 1);	/* said once, then auto */
	dev = open_dev();
	unsetenv("VRDMA_WAIT");
	ck_assert_int_ne(vrdma_get_wait_policy(dev), VRDMA_WAIT_AUTO);
	ck_assert_int_eq(vrdma_close(dev), 0);
}
END_TEST

START_TEST(t_live_cq_qp)
{
	struct vrdma_qp_init_attr a = { 0 };
	struct vrdma_send_wr wr[2], *bad = NULL;
	struct vrdma_device *dev;
	struct vrdma_cq *cq, *big;
	struct vrdma_wc wc;
	struct vrdma_pd *pd;
	struct vrdma_qp *qp;

	NEED_DAEMON();
	dev = open_dev();
	pd = vrdma_alloc_pd(dev);
	ck_assert_ptr_nonnull(pd);
	errno = 0;
	ck_assert_ptr_null(vrdma_create_cq(dev, 0, NULL));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(vrdma_create_cq(dev, (1 << VRDMA_CQ_ORDER_MAX) + 1, NULL));
	ck_assert_int_eq(errno, EINVAL);
	cq = vrdma_create_cq(dev, 6, NULL);
	ck_assert_msg(cq != NULL, "create_cq: %s", strerror(errno));
	ck_assert_int_eq(cq->cqe, 8);		/* rounded up */

	/* QPs may be deeper than their CQ, as in verbs (an overrun is a CQ
	 * error: tests/test_async.c). */
	a.send_cq = cq;
	a.recv_cq = cq;
	a.cap = (struct vrdma_qp_cap){ 8, 8, 1, 1 };
	qp = vrdma_create_qp(pd, &a);
	ck_assert_msg(qp != NULL, "create_qp 8/8 on a CQ of 8: %s", strerror(errno));
	ck_assert_int_eq(vrdma_destroy_qp(qp), 0);
	a.cap = (struct vrdma_qp_cap){ 0, 4, 1, 1 };
	errno = 0;
	ck_assert_ptr_null(vrdma_create_qp(pd, &a));
	ck_assert_int_eq(errno, EINVAL);
	a.cap = (struct vrdma_qp_cap){ 4, 4, VRDMA_MAX_SGE_PER_WR + 1, 1 };
	errno = 0;
	ck_assert_ptr_null(vrdma_create_qp(pd, &a));
	ck_assert_int_eq(errno, EINVAL);

	qp = make_qp(pd, cq, 4);
	ck_assert_int_eq(qp->state, VRDMA_QPS_RESET);
	big = vrdma_create_cq(dev, 64, NULL);
	ck_assert_ptr_nonnull(big);

	/* Not connected: EINVAL and bad_wr names the first WR. */
	memset(wr, 0, sizeof(wr));
	wr[0].opcode = VRDMA_WR_SEND;
	wr[0].next = &wr[1];
	wr[1].opcode = VRDMA_WR_SEND;
	ck_assert_int_eq(vrdma_post_send(qp, wr, &bad), EINVAL);
	ck_assert_ptr_eq(bad, &wr[0]);

	ck_assert_int_eq(vrdma_poll_cq(cq, 1, &wc), 0);
	ck_assert_int_eq(vrdma_wait_cq(cq, 20), ETIMEDOUT);
	ck_assert_int_eq(vrdma_destroy_cq(cq), EBUSY);
	ck_assert_int_eq(vrdma_dealloc_pd(pd), EBUSY);
	ck_assert_int_eq(vrdma_destroy_qp(qp), 0);
	ck_assert_int_eq(vrdma_destroy_cq(cq), 0);
	/* big and pd left open on purpose: vrdma_close cleans up. */
	ck_assert_int_eq(vrdma_close(dev), 0);
}
END_TEST

START_TEST(t_live_names)
{
	char long_name[VRDMA_MAX_NAME + 2];
	uint8_t pdata[VRDMA_MAX_PRIVATE_DATA + 1] = { 0 };
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	struct vrdma_qp *qp;

	NEED_DAEMON();
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = 0;
	dev = open_dev();
	pd = vrdma_alloc_pd(dev);
	cq = vrdma_create_cq(dev, 16, NULL);
	ck_assert_ptr_nonnull(cq);
	qp = make_qp(pd, cq, 4);
	errno = 0;
	ck_assert_ptr_null(vrdma_listen(dev, long_name));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(vrdma_listen(dev, ""));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(vrdma_connect(qp, NULL, long_name, NULL, 0, NULL, NULL, 100), EINVAL);
	ck_assert_int_eq(vrdma_connect(qp, long_name, "svc", NULL, 0, NULL, NULL, 100), EINVAL);
	ck_assert_int_eq(vrdma_connect(qp, NULL, "svc", pdata, sizeof(pdata), NULL, NULL, 100),
			 EINVAL);
	ck_assert_int_eq(vrdma_connect(qp, NULL, "svc", NULL, 0, NULL, NULL, -1), EINVAL);
	ck_assert_int_eq(qp->state, VRDMA_QPS_RESET);
	long_name[VRDMA_MAX_NAME] = 0;		/* exactly the maximum is fine */
	{
		struct vrdma_listener *l = vrdma_listen(dev, long_name);

		ck_assert_msg(l != NULL, "listen: %s", strerror(errno));
		ck_assert_int_eq(vrdma_close_listener(l), 0);
	}
	ck_assert_int_eq(vrdma_close(dev), 0);
}
END_TEST

START_TEST(t_live_connect_errors)
{
	struct vrdma_device *dev;
	struct vrdma_listener *l;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	struct vrdma_qp *qp;
	int64_t t0;
	int rc;

	NEED_DAEMON();
	dev = open_dev();
	pd = vrdma_alloc_pd(dev);
	cq = vrdma_create_cq(dev, 64, NULL);
	ck_assert_ptr_nonnull(cq);
	qp = make_qp(pd, cq, 4);

	rc = vrdma_connect(qp, NULL, "nobody-here", NULL, 0, NULL, NULL, T_CONN_MS);
	ck_assert_msg(rc == ECONNREFUSED, "connect to nobody: %d (%s)", rc, strerror(rc));
	ck_assert_int_eq(qp->state, VRDMA_QPS_RESET);
	rc = vrdma_connect(qp, "no-such-node", "svc", NULL, 0, NULL, NULL, T_CONN_MS);
	ck_assert_msg(rc == EHOSTUNREACH, "connect to no node: %d (%s)", rc, strerror(rc));

	/* A listener that never answers: the timeout is honoured. */
	l = vrdma_listen(dev, "silent");
	ck_assert_msg(l != NULL, "listen: %s", strerror(errno));
	t0 = now_ms();
	rc = vrdma_connect(qp, NULL, "silent", NULL, 0, NULL, NULL, 200);
	ck_assert_msg(rc == ETIMEDOUT, "connect to silent: %d (%s)", rc, strerror(rc));
	ck_assert_int_ge(now_ms() - t0, 190);	/* clocks round differently */
	ck_assert_int_lt(now_ms() - t0, LOOSE_MS);
	ck_assert_int_eq(vrdma_destroy_qp(qp), 0);
	ck_assert_int_eq(vrdma_close_listener(l), 0);
	ck_assert_int_eq(vrdma_close(dev), 0);
}
END_TEST

/* A connected pair on two devices (two guests of one vrdmad). */
struct side {
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	struct vrdma_qp *qp;
	uint8_t *buf;
	struct vrdma_mr *mr;
};

struct acceptor {
	struct vrdma_listener *l;
	struct vrdma_qp *qp;
	int rc;
};

static void *accept_one(void *arg)
{
	struct acceptor *a = arg;
	struct vrdma_conn_req req;

	a->rc = vrdma_get_request(a->l, &req, T_CONN_MS);
	if (!a->rc)
		a->rc = vrdma_accept(a->l, a->qp, &req, "srv", 3);
	return NULL;
}

static void side_init(struct side *s, uint32_t depth)
{
	s->dev = open_dev();
	s->pd = vrdma_alloc_pd(s->dev);
	ck_assert_ptr_nonnull(s->pd);
	s->cq = vrdma_create_cq(s->dev, 2 * (int)depth, NULL);
	ck_assert_ptr_nonnull(s->cq);
	s->qp = make_qp(s->pd, s->cq, depth);
	s->buf = vrdma_alloc_buf(s->dev, 65536);
	ck_assert_ptr_nonnull(s->buf);
	s->mr = vrdma_reg_mr(s->pd, s->buf, 65536, VRDMA_ACCESS_LOCAL_WRITE |
			     VRDMA_ACCESS_REMOTE_WRITE | VRDMA_ACCESS_REMOTE_READ);
	ck_assert_msg(s->mr != NULL, "reg_mr: %s", strerror(errno));
}

static void pair_connect(struct side *srv, struct side *cli, uint32_t depth)
{
	struct acceptor a = { 0 };
	char peer[VRDMA_MAX_PRIVATE_DATA];
	size_t peer_len = sizeof(peer);
	struct vrdma_listener *l;
	pthread_t th;
	int rc;

	side_init(srv, depth);
	side_init(cli, depth);
	l = vrdma_listen(srv->dev, "api-svc");
	ck_assert_msg(l != NULL, "listen: %s", strerror(errno));
	a.l = l;
	a.qp = srv->qp;
	ck_assert_int_eq(pthread_create(&th, NULL, accept_one, &a), 0);
	rc = vrdma_connect(cli->qp, "", "api-svc", "cli", 3, peer, &peer_len, T_CONN_MS);
	pthread_join(th, NULL);
	ck_assert_msg(rc == 0, "connect: %s", strerror(rc));
	ck_assert_msg(a.rc == 0, "accept: %s", strerror(a.rc));
	ck_assert_int_eq(peer_len, 3);
	ck_assert_mem_eq(peer, "srv", 3);
	ck_assert_int_eq(cli->qp->state, VRDMA_QPS_RTS);
	ck_assert_int_eq(srv->qp->state, VRDMA_QPS_RTS);
	ck_assert_int_eq(vrdma_close_listener(l), 0);
}

static int wait_one(struct vrdma_cq *cq, struct vrdma_wc *wc)
{
	return wait_one_ms(cq, wc, T_CONN_MS);
}

START_TEST(t_live_sq_overflow)
{
	struct vrdma_send_wr wr[5], *bad = NULL;
	struct vrdma_sge sge;
	struct side srv, cli;
	int i, rc;

	NEED_DAEMON();
	pair_connect(&srv, &cli, 4);
	sge = (struct vrdma_sge){ (uintptr_t)cli.buf, 8, cli.mr->lkey };
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < 5; i++) {
		wr[i].wr_id = (uint64_t)i;
		wr[i].next = i < 4 ? &wr[i + 1] : NULL;
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].opcode = VRDMA_WR_RDMA_WRITE;	/* unsignaled: slots stay */
		wr[i].wr.rdma.remote_addr = (uintptr_t)srv.buf;
		wr[i].wr.rdma.rkey = srv.mr->rkey;
	}
	rc = vrdma_post_send(cli.qp, wr, &bad);
	ck_assert_int_eq(rc, ENOMEM);
	ck_assert_ptr_eq(bad, &wr[4]);
	/* A malformed WR: bad_wr names it, nothing after it is posted. */
	wr[0].next = NULL;
	wr[0].num_sge = VRDMA_MAX_SGE_PER_WR + 1;
	ck_assert_int_eq(vrdma_post_send(cli.qp, wr, &bad), EINVAL);
	ck_assert_ptr_eq(bad, &wr[0]);
	ck_assert_int_eq(vrdma_close(cli.dev), 0);
	ck_assert_int_eq(vrdma_close(srv.dev), 0);
}
END_TEST

START_TEST(t_live_transfer)
{
	struct vrdma_send_wr swr = { 0 }, *sbad;
	struct vrdma_recv_wr rwr = { 0 }, *rbad;
	struct vrdma_sge ssge, rsge;
	struct side srv, cli;
	struct vrdma_wc wc;

	NEED_DAEMON();
	pair_connect(&srv, &cli, 8);

	/* SEND into a posted receive. */
	rsge = (struct vrdma_sge){ (uintptr_t)srv.buf, 256, srv.mr->lkey };
	rwr.wr_id = 7;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	ck_assert_int_eq(vrdma_post_recv(srv.qp, &rwr, &rbad), 0);
	memcpy(cli.buf, "hello vrdma", 12);
	ssge = (struct vrdma_sge){ (uintptr_t)cli.buf, 12, cli.mr->lkey };
	swr.wr_id = 9;
	swr.sg_list = &ssge;
	swr.num_sge = 1;
	swr.opcode = VRDMA_WR_SEND;
	swr.send_flags = VRDMA_SEND_SIGNALED;
	ck_assert_int_eq(vrdma_post_send(cli.qp, &swr, &sbad), 0);
	ck_assert_int_eq(wait_one(cli.cq, &wc), 1);
	ck_assert_msg(wc.status == VRDMA_WC_SUCCESS, "send: %s",
		      vrdma_wc_status_str(wc.status));
	ck_assert_int_eq(wc.wr_id, 9);
	ck_assert_int_eq(wc.opcode, VRDMA_WC_SEND_OP);
	ck_assert_int_eq(wait_one(srv.cq, &wc), 1);
	ck_assert_msg(wc.status == VRDMA_WC_SUCCESS, "recv: %s",
		      vrdma_wc_status_str(wc.status));
	ck_assert_int_eq(wc.wr_id, 7);
	ck_assert_int_eq(wc.opcode, VRDMA_WC_RECV_OP);
	ck_assert_int_eq(wc.byte_len, 12);
	ck_assert_str_eq((char *)srv.buf, "hello vrdma");

	/* RDMA READ back from the server's buffer. */
	memset(cli.buf + 4096, 0, 64);
	ssge = (struct vrdma_sge){ (uintptr_t)cli.buf + 4096, 12, cli.mr->lkey };
	swr.wr_id = 10;
	swr.opcode = VRDMA_WR_RDMA_READ;
	swr.wr.rdma.remote_addr = (uintptr_t)srv.buf;
	swr.wr.rdma.rkey = srv.mr->rkey;
	ck_assert_int_eq(vrdma_post_send(cli.qp, &swr, &sbad), 0);
	ck_assert_int_eq(wait_one(cli.cq, &wc), 1);
	ck_assert_msg(wc.status == VRDMA_WC_SUCCESS, "read: %s",
		      vrdma_wc_status_str(wc.status));
	ck_assert_int_eq(wc.opcode, VRDMA_WC_RDMA_READ_OP);
	ck_assert_str_eq((char *)cli.buf + 4096, "hello vrdma");

	/* Tear down in the documented order. */
	ck_assert_int_eq(vrdma_destroy_cq(cli.cq), EBUSY);
	ck_assert_int_eq(vrdma_destroy_qp(cli.qp), 0);
	ck_assert_int_eq(vrdma_destroy_cq(cli.cq), 0);
	ck_assert_int_eq(vrdma_dereg_mr(cli.mr), 0);
	ck_assert_int_eq(vrdma_free_buf(cli.dev, cli.buf), 0);
	ck_assert_int_eq(vrdma_dealloc_pd(cli.pd), 0);
	ck_assert_int_eq(vrdma_close(cli.dev), 0);
	ck_assert_int_eq(vrdma_close(srv.dev), 0);
}
END_TEST

/* Review C2: a destroyed QP's flushed completions stay in the CQ until
 * polled and are dropped then; a new QP beside them is fine (an overrun
 * would be a CQ error now, not a disabled guest).  CQ of 16, QP 1/15, 15
 * receives, destroy, repeat. */
START_TEST(t_live_cq_reuse_after_destroy)
{
	struct vrdma_qp_init_attr a = { 0 };
	struct vrdma_recv_wr rwr[15], *rbad;
	struct vrdma_device *dev;
	struct vrdma_sge sge;
	struct vrdma_wc wc[16];
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	struct vrdma_mr *mr;
	struct vrdma_qp *qp;
	uint8_t *buf;
	int i, round;

	NEED_DAEMON();
	dev = open_dev();
	pd = vrdma_alloc_pd(dev);
	ck_assert_ptr_nonnull(pd);
	cq = vrdma_create_cq(dev, 16, NULL);
	ck_assert_ptr_nonnull(cq);
	buf = vrdma_alloc_buf(dev, 4096);
	ck_assert_ptr_nonnull(buf);
	mr = vrdma_reg_mr(pd, buf, 4096, VRDMA_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	sge = (struct vrdma_sge){ (uintptr_t)buf, 64, mr->lkey };
	memset(rwr, 0, sizeof(rwr));
	for (i = 0; i < 15; i++) {
		rwr[i].wr_id = (uint64_t)i;
		rwr[i].next = i < 14 ? &rwr[i + 1] : NULL;
		rwr[i].sg_list = &sge;
		rwr[i].num_sge = 1;
	}
	a.send_cq = cq;
	a.recv_cq = cq;
	a.cap = (struct vrdma_qp_cap){ 1, 15, 1, 1 };
	for (round = 0; round < 8; round++) {
		qp = vrdma_create_qp(pd, &a);
		ck_assert_msg(qp != NULL, "round %d create_qp: %s", round, strerror(errno));
		ck_assert_int_eq(vrdma_post_recv(qp, rwr, &rbad), 0);
		ck_assert_int_eq(vrdma_destroy_qp(qp), 0);
		/* 15 flushed CQEs still sit in the CQ: polling drops
		 * them (their QP is gone). */
		ck_assert_int_eq(vrdma_poll_cq(cq, 16, wc), 0);
	}
	/* Still alive: a command works. */
	ck_assert_int_eq(vrdma_dealloc_pd(vrdma_alloc_pd(dev)), 0);
	ck_assert_int_eq(vrdma_close(dev), 0);
}
END_TEST

/* Make dom0 disable this guest: claim a receive retired that was not, so
 * the library posts more receives than the QP's depth. */
static void get_disabled(struct vrdma_qp *qp, struct vrdma_recv_wr *rwr)
{
	struct vrdma_recv_wr *rbad;

	ck_assert_int_eq(vrdma_post_recv(qp, rwr, &rbad), 0);
	vlib_qp(qp)->rq_retired++;
	ck_assert_int_eq(vrdma_post_recv(qp, rwr, &rbad), 0);
}

/* Review I3: a disabled device says EIO (the backend closed the device),
 * not ETIMEDOUT after a command timeout, and constructors say EIO, not
 * EINVAL from leftover CQ reservations. */
START_TEST(t_live_disabled_eio)
{
	struct vrdma_qp_init_attr a = { 0 };
	struct vrdma_recv_wr rwr = { 0 };
	struct vrdma_device *dev;
	struct vrdma_sge sge;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	struct vrdma_mr *mr;
	struct vrdma_qp *qp;
	uint8_t *buf;
	int rc;

	NEED_DAEMON();
	dev = open_dev();
	pd = vrdma_alloc_pd(dev);
	cq = vrdma_create_cq(dev, 2, NULL);
	ck_assert_ptr_nonnull(cq);
	buf = vrdma_alloc_buf(dev, 4096);
	ck_assert_ptr_nonnull(buf);
	mr = vrdma_reg_mr(pd, buf, 4096, VRDMA_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	sge = (struct vrdma_sge){ (uintptr_t)buf, 64, mr->lkey };
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	qp = make_qp(pd, cq, 1);
	get_disabled(qp, &rwr);

	/* Nothing will ever complete; the wait ends when the device breaks
	 * (EIO), well before its own limit (which would be ETIMEDOUT). */
	rc = vrdma_wait_cq(cq, LOOSE_MS);
	ck_assert_msg(rc == EIO, "wait_cq on a disabled device: %d (%s)", rc, strerror(rc));
	errno = 0;
	ck_assert_ptr_null(vrdma_alloc_pd(dev));
	ck_assert_int_eq(errno, EIO);
	a.send_cq = cq;
	a.recv_cq = cq;
	a.cap = (struct vrdma_qp_cap){ 1, 1, 1, 1 };
	errno = 0;
	ck_assert_ptr_null(vrdma_create_qp(pd, &a));
	ck_assert_int_eq(errno, EIO);
	errno = 0;
	ck_assert_ptr_null(vrdma_create_cq(dev, 4, NULL));
	ck_assert_int_eq(errno, EIO);
	errno = 0;
	ck_assert_ptr_null(vrdma_alloc_buf(dev, 4096));
	ck_assert_int_eq(errno, EIO);
	errno = 0;
	ck_assert_ptr_null(vrdma_listen(dev, "svc"));
	ck_assert_int_eq(errno, EIO);
	ck_assert_int_eq(vrdma_poll_cq(cq, 1, &(struct vrdma_wc){ 0 }), -1);
	/* Destroying still works locally; close needs no commands. */
	ck_assert_int_eq(vrdma_destroy_qp(qp), 0);
	ck_assert_int_eq(vrdma_dereg_mr(mr), 0);
	ck_assert_int_eq(vrdma_close(dev), 0);
}
END_TEST

/* A command issued just as dom0 disables the guest: EIO, not a 5 s
 * command timeout (ETIMEDOUT). */
START_TEST(t_live_disabled_cmd)
{
	struct vrdma_recv_wr rwr = { 0 };
	struct vrdma_device *dev;
	struct vrdma_sge sge;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	struct vrdma_mr *mr;
	struct vrdma_qp *qp;
	uint8_t *buf;

	NEED_DAEMON();
	dev = open_dev();
	pd = vrdma_alloc_pd(dev);
	cq = vrdma_create_cq(dev, 2, NULL);
	buf = vrdma_alloc_buf(dev, 4096);
	ck_assert_ptr_nonnull(buf);
	mr = vrdma_reg_mr(pd, buf, 4096, VRDMA_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	sge = (struct vrdma_sge){ (uintptr_t)buf, 64, mr->lkey };
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	qp = make_qp(pd, cq, 1);
	get_disabled(qp, &rwr);
	errno = 0;
	ck_assert_ptr_null(vrdma_alloc_pd(dev));
	ck_assert_msg(errno == EIO, "alloc_pd: %d (%s)", errno, strerror(errno));
	ck_assert_int_eq(vrdma_close(dev), 0);
}
END_TEST

/* Post one signaled SEND from cli into a receive on srv. */
static void send_one(struct side *srv, struct side *cli, uint64_t id)
{
	struct vrdma_send_wr swr = { 0 }, *sbad;
	struct vrdma_recv_wr rwr = { 0 }, *rbad;
	struct vrdma_sge ssge, rsge;

	rsge = (struct vrdma_sge){ (uintptr_t)srv->buf, 64, srv->mr->lkey };
	rwr.wr_id = id;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	ck_assert_int_eq(vrdma_post_recv(srv->qp, &rwr, &rbad), 0);
	ssge = (struct vrdma_sge){ (uintptr_t)cli->buf, 8, cli->mr->lkey };
	swr.wr_id = id;
	swr.sg_list = &ssge;
	swr.num_sge = 1;
	swr.opcode = VRDMA_WR_SEND;
	swr.send_flags = VRDMA_SEND_SIGNALED;
	ck_assert_int_eq(vrdma_post_send(cli->qp, &swr, &sbad), 0);
}

/* Wait (bounded) until n CQEs sit unpolled in cq. */
static void cq_wait_n(struct vrdma_cq *cq, uint32_t n)
{
	struct vlib_cq *c = vlib_cq(cq);
	int64_t end = now_ms() + T_CONN_MS;

	while (__atomic_load_n(&c->hdr->ring.prod, __ATOMIC_ACQUIRE) - c->cons < n &&
	       now_ms() < end)
		usleep(1000);
	ck_assert_uint_eq(__atomic_load_n(&c->hdr->ring.prod, __ATOMIC_ACQUIRE) - c->cons, n);
}

/* Minor review items: a send CQE must name the WR of its slot (wr_id); on
 * a bad CQE poll_cq returns the good ones first, then fails with EIO --
 * never a made-up completion. */
START_TEST(t_live_bad_cqe)
{
	struct side srv, cli;
	struct vrdma_wc wc[2];
	int n;

	NEED_DAEMON();
	pair_connect(&srv, &cli, 4);
	send_one(&srv, &cli, 1);
	send_one(&srv, &cli, 2);
	cq_wait_n(cli.cq, 2);
	/* Play a lying dom0: the second completion's wr_id is not ours. */
	vlib_qp(cli.qp)->sq_slot[1].wr_id = 99;
	n = vrdma_poll_cq(cli.cq, 2, wc);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(wc[0].wr_id, 1);
	ck_assert_int_eq(wc[0].status, VRDMA_WC_SUCCESS);
	errno = 0;
	ck_assert_int_eq(vrdma_poll_cq(cli.cq, 2, wc), -1);
	ck_assert_int_eq(errno, EIO);
	ck_assert_int_eq(vrdma_close(cli.dev), 0);
	ck_assert_int_eq(vrdma_close(srv.dev), 0);
}
END_TEST

/* The first completion polled is bad: -1 / EIO at once. */
START_TEST(t_live_bad_cqe_first)
{
	struct side srv, cli;
	struct vrdma_wc wc;

	NEED_DAEMON();
	pair_connect(&srv, &cli, 4);
	send_one(&srv, &cli, 5);
	cq_wait_n(srv.cq, 1);
	vlib_qp(srv.qp)->rq_slot[0].wr_id = 6;
	errno = 0;
	ck_assert_int_eq(vrdma_poll_cq(srv.cq, 1, &wc), -1);
	ck_assert_int_eq(errno, EIO);
	ck_assert_int_eq(vrdma_close(cli.dev), 0);
	ck_assert_int_eq(vrdma_close(srv.dev), 0);
}
END_TEST

struct waiter {
	struct vrdma_cq *cq;
	int rc;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	w->rc = vrdma_wait_cq(w->cq, LOOSE_MS);
	return NULL;
}

/* Several threads wait on one device: the one sleeping on the channel
 * wakes the others, and every waiter sees the completion. */
START_TEST(t_live_many_waiters)
{
	struct waiter w[3];
	struct side srv, cli;
	struct vrdma_wc wc;
	pthread_t th[3];
	int i;

	NEED_DAEMON();
	pair_connect(&srv, &cli, 4);
	for (i = 0; i < 3; i++) {
		w[i].cq = srv.cq;
		w[i].rc = -1;
		ck_assert_int_eq(pthread_create(&th[i], NULL, wait_thread, &w[i]), 0);
	}
	usleep(20000);	/* let them sleep (correct either way) */
	send_one(&srv, &cli, 3);
	for (i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(w[i].rc, 0);
	}
	ck_assert_int_eq(vrdma_poll_cq(srv.cq, 1, &wc), 1);
	ck_assert_int_eq(wc.wr_id, 3);
	ck_assert_int_eq(vrdma_close(cli.dev), 0);
	ck_assert_int_eq(vrdma_close(srv.dev), 0);
}
END_TEST

/* A send's ring entry is written whole: what the opcode does not use, the
 * reserved bytes and unused SGEs are zero, whatever the slot held before
 * and whatever the WR's unused fields say (nothing stale reaches dom0). */
START_TEST(t_live_send_entry_clean)
{
	struct vrdma_send_wr swr, *sbad;
	struct vrdma_recv_wr rwr = { 0 }, *rbad;
	struct vrdma_sge ssge, rsge;
	struct side srv, cli;
	struct vrdma_wc wc;
	struct vfe_dev *fe;
	struct vrdma_req *e, want;

	NEED_DAEMON();
	pair_connect(&srv, &cli, 4);
	rsge = (struct vrdma_sge){ (uintptr_t)srv.buf, 64, srv.mr->lkey };
	rwr.wr_id = 1;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	ck_assert_int_eq(vrdma_post_recv(srv.qp, &rwr, &rbad), 0);
	fe = &cli.dev->fe;
	e = &fe->req[fe->req_prod & (fe->req_size - 1)];
	memset(e, 0xa5, sizeof(*e));	/* not yet published: ours to scribble */
	memset(&swr, 0x5a, sizeof(swr));
	ssge = (struct vrdma_sge){ (uintptr_t)cli.buf, 8, cli.mr->lkey };
	swr.wr_id = 2;
	swr.next = NULL;
	swr.sg_list = &ssge;
	swr.num_sge = 1;
	swr.opcode = VRDMA_WR_SEND;
	swr.send_flags = VRDMA_SEND_SIGNALED;
	ck_assert_int_eq(vrdma_post_send(cli.qp, &swr, &sbad), 0);
	memset(&want, 0, sizeof(want));
	want.opcode = VRDMA_OP_SEND;
	want.num_sge = 1;
	want.flags = VRDMA_WR_F_SIGNALED;
	want.handle = cli.qp->handle;
	want.id = 2;
	want.u.wr.sge[0] = (struct vrdma_wire_sge){ ssge.addr, ssge.length, ssge.lkey };
	ck_assert_mem_eq(e, &want, sizeof(want));
	ck_assert_int_eq(wait_one(cli.cq, &wc), 1);
	ck_assert_int_eq(wc.status, VRDMA_WC_SUCCESS);
	ck_assert_int_eq(vrdma_close(cli.dev), 0);
	ck_assert_int_eq(vrdma_close(srv.dev), 0);
}
END_TEST

/* A send WR is checked while it is written into the ring entry: a bad
 * one says EINVAL, names itself in bad_wr and publishes nothing (the WRs
 * before it in the chain go); several SGEs are written as given, unused
 * ones zero. */
START_TEST(t_live_send_checks)
{
	struct vrdma_send_wr swr[2], *sbad;
	struct vrdma_sge ssge[3];
	struct side srv, cli;
	struct vrdma_wc wc;
	struct vfe_dev *fe;
	struct vrdma_req *e, want;
	uint32_t pushed;
	int i;

	NEED_DAEMON();
	pair_connect(&srv, &cli, 4);
	fe = &cli.dev->fe;
	e = &fe->req[fe->req_prod & (fe->req_size - 1)];
	memset(e, 0xa5, sizeof(*e));	/* not yet published: ours to scribble */
	memset(swr, 0, sizeof(swr));
	ssge[0] = (struct vrdma_sge){ (uintptr_t)cli.buf, 8, cli.mr->lkey };
	ssge[1] = (struct vrdma_sge){ (uintptr_t)cli.buf + 100, 4, cli.mr->lkey };
	ssge[2] = (struct vrdma_sge){ (uintptr_t)cli.buf + 200, 4, cli.mr->lkey };
	for (i = 0; i < 7; i++) {
		swr[0] = (struct vrdma_send_wr){
			.wr_id = 50 + (uint64_t)i, .sg_list = ssge, .num_sge = 1,
			.opcode = VRDMA_WR_RDMA_WRITE, .send_flags = VRDMA_SEND_SIGNALED,
		};
		swr[0].wr.rdma.remote_addr = (uintptr_t)srv.buf;
		swr[0].wr.rdma.rkey = srv.mr->rkey;
		switch (i) {
		case 0: swr[0].opcode = (enum vrdma_wr_opcode)99; break;
		case 1: swr[0].send_flags |= 1u << 7; break;
		case 2: swr[0].num_sge = -1; break;
		case 3: swr[0].num_sge = 2; swr[0].sg_list = NULL; break;
		case 4: swr[0].num_sge = VRDMA_MAX_SGE_PER_WR + 1; break;
		case 5: swr[0].opcode = VRDMA_WR_ATOMIC_FETCH_AND_ADD;
			swr[0].sg_list = &ssge[1];
			swr[0].num_sge = 2; break;		/* 8 bytes, two SGEs */
		case 6: swr[0].opcode = VRDMA_WR_ATOMIC_CMP_AND_SWP;
			swr[0].sg_list = &ssge[1]; break;	/* 4 bytes */
		}
		pushed = __atomic_load_n(&fe->sring->req.prod, __ATOMIC_ACQUIRE);
		sbad = NULL;
		ck_assert_msg(vrdma_post_send(cli.qp, swr, &sbad) == EINVAL, "bad WR %d", i);
		ck_assert_ptr_eq(sbad, &swr[0]);
		ck_assert_uint_eq(__atomic_load_n(&fe->sring->req.prod, __ATOMIC_ACQUIRE),
				  pushed);
	}
	ck_assert_int_eq(vrdma_poll_cq(cli.cq, 1, &wc), 0);

	/* A good WR with three SGEs, then a bad one: the first goes. */
	memcpy(cli.buf, "abcdefgh", 8);
	memcpy(cli.buf + 100, "ijkl", 4);
	memcpy(cli.buf + 200, "mnop", 4);
	memset(srv.buf, 0, 32);
	swr[0] = (struct vrdma_send_wr){
		.wr_id = 60, .next = &swr[1], .sg_list = ssge, .num_sge = 3,
		.opcode = VRDMA_WR_RDMA_WRITE, .send_flags = VRDMA_SEND_SIGNALED,
	};
	swr[0].wr.rdma.remote_addr = (uintptr_t)srv.buf;
	swr[0].wr.rdma.rkey = srv.mr->rkey;
	swr[1] = swr[0];
	swr[1].next = NULL;
	swr[1].wr_id = 61;
	swr[1].send_flags = ~0u;
	/* The entry still holds what the bad WRs above wrote (the last, a
	 * 4-byte CMP_SWAP, got as far as its SGE): the good WR rewrites all
	 * of it. */
	ck_assert_ptr_eq(e, &fe->req[fe->req_prod & (fe->req_size - 1)]);
	ck_assert_int_eq(vrdma_post_send(cli.qp, swr, &sbad), EINVAL);
	ck_assert_ptr_eq(sbad, &swr[1]);
	memset(&want, 0, sizeof(want));
	want.opcode = VRDMA_OP_WRITE;
	want.num_sge = 3;
	want.flags = VRDMA_WR_F_SIGNALED;
	want.handle = cli.qp->handle;
	want.id = 60;
	want.u.wr.remote_addr = (uintptr_t)srv.buf;
	want.u.wr.rkey = srv.mr->rkey;
	for (i = 0; i < 3; i++)
		want.u.wr.sge[i] = (struct vrdma_wire_sge){ ssge[i].addr, ssge[i].length,
							    ssge[i].lkey };
	ck_assert_mem_eq(e, &want, sizeof(want));
	ck_assert_int_eq(wait_one(cli.cq, &wc), 1);
	ck_assert_msg(wc.status == VRDMA_WC_SUCCESS, "write: %s",
		      vrdma_wc_status_str(wc.status));
	ck_assert_uint_eq(wc.wr_id, 60);
	ck_assert_int_eq(wc.byte_len, 16);
	ck_assert_mem_eq(srv.buf, "abcdefghijklmnop", 16);
	ck_assert_int_eq(vrdma_poll_cq(cli.cq, 1, &wc), 0);
	ck_assert_int_eq(vrdma_close(cli.dev), 0);
	ck_assert_int_eq(vrdma_close(srv.dev), 0);
}
END_TEST

/* The QP's own SGE limit holds below the wire's: a QP made for one send
 * SGE refuses two, and publishes nothing. */
START_TEST(t_live_send_qp_sge)
{
	struct vrdma_send_wr swr, *sbad = NULL;
	struct vrdma_sge ssge[2];
	struct side srv, cli;
	struct vfe_dev *fe;
	uint32_t pushed;

	NEED_DAEMON();
	make_qp_send_sge = 1;
	pair_connect(&srv, &cli, 4);
	make_qp_send_sge = VRDMA_MAX_SGE_PER_WR;
	fe = &cli.dev->fe;
	ssge[0] = (struct vrdma_sge){ (uintptr_t)cli.buf, 4, cli.mr->lkey };
	ssge[1] = (struct vrdma_sge){ (uintptr_t)cli.buf + 4, 4, cli.mr->lkey };
	swr = (struct vrdma_send_wr){
		.wr_id = 1, .sg_list = ssge, .num_sge = 2,
		.opcode = VRDMA_WR_RDMA_WRITE, .send_flags = VRDMA_SEND_SIGNALED,
	};
	swr.wr.rdma.remote_addr = (uintptr_t)srv.buf;
	swr.wr.rdma.rkey = srv.mr->rkey;
	pushed = __atomic_load_n(&fe->sring->req.prod, __ATOMIC_ACQUIRE);
	ck_assert_int_eq(vrdma_post_send(cli.qp, &swr, &sbad), EINVAL);
	ck_assert_ptr_eq(sbad, &swr);
	ck_assert_uint_eq(__atomic_load_n(&fe->sring->req.prod, __ATOMIC_ACQUIRE), pushed);
	swr.num_sge = 1;	/* the same WR with one SGE goes */
	ck_assert_int_eq(vrdma_post_send(cli.qp, &swr, &sbad), 0);
	ck_assert_int_eq(vrdma_close(cli.dev), 0);
	ck_assert_int_eq(vrdma_close(srv.dev), 0);
}
END_TEST

/* A broken device: the chain says EIO and names its first WR (dom0 got
 * none of it), not NULL. */
START_TEST(t_live_send_broken)
{
	struct vrdma_send_wr swr[3], *sbad = NULL;
	struct vrdma_sge ssge;
	struct side srv, cli;
	struct vfe_dev *fe;
	uint32_t pushed;
	int i;

	NEED_DAEMON();
	pair_connect(&srv, &cli, 4);
	fe = &cli.dev->fe;
	ssge = (struct vrdma_sge){ (uintptr_t)cli.buf, 8, cli.mr->lkey };
	for (i = 0; i < 3; i++) {
		swr[i] = (struct vrdma_send_wr){
			.wr_id = (uint64_t)i, .next = i < 2 ? &swr[i + 1] : NULL,
			.sg_list = &ssge, .num_sge = 1, .opcode = VRDMA_WR_RDMA_WRITE,
		};
		swr[i].wr.rdma.remote_addr = (uintptr_t)srv.buf;
		swr[i].wr.rdma.rkey = srv.mr->rkey;
	}
	pushed = __atomic_load_n(&fe->sring->req.prod, __ATOMIC_ACQUIRE);
	__atomic_store_n(&fe->broken, 1, __ATOMIC_RELEASE);	/* as dom0 breaking it */
	ck_assert_int_eq(vrdma_post_send(cli.qp, swr, &sbad), EIO);
	ck_assert_ptr_eq(sbad, &swr[0]);
	ck_assert_uint_eq(__atomic_load_n(&fe->sring->req.prod, __ATOMIC_ACQUIRE), pushed);
	vrdma_close(cli.dev);
	ck_assert_int_eq(vrdma_close(srv.dev), 0);
}
END_TEST

/* Several threads post to one QP and several poll its CQ (as verbs
 * allows): every signaled WR completes exactly once, none is lost. */
#define MT_POSTERS	4
#define MT_POLLERS	2
#define MT_WRS		20001	/* per poster; every third one unsignaled */

struct mt {
	struct side *cli, *srv;
	uint8_t seen[MT_POSTERS * MT_WRS];
	int done;		/* signaled completions seen (atomic) */
	int want;
	int err;		/* atomic: first failure, as a line number */
};

struct mt_arg {
	struct mt *m;
	int id;
};

static void mt_fail(struct mt *m, int line)
{
	int z = 0;

	__atomic_compare_exchange_n(&m->err, &z, line, false, __ATOMIC_SEQ_CST,
				    __ATOMIC_SEQ_CST);
}

static void *mt_post(void *arg)
{
	struct mt_arg *a = arg;
	struct mt *m = a->m;
	struct vrdma_send_wr wr = { 0 }, *bad;
	struct vrdma_sge sge;
	int64_t end = now_ms() + LOOSE_MS;
	int i, rc;

	sge = (struct vrdma_sge){ (uintptr_t)m->cli->buf + 8 * a->id, 8, m->cli->mr->lkey };
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = VRDMA_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)m->srv->buf + 8 * a->id;
	wr.wr.rdma.rkey = m->srv->mr->rkey;
	for (i = 0; i < MT_WRS && !__atomic_load_n(&m->err, __ATOMIC_ACQUIRE); i++) {
		wr.wr_id = (uint64_t)a->id * MT_WRS + i;
		wr.send_flags = i % 3 == 1 ? 0 : VRDMA_SEND_SIGNALED;
		while ((rc = vrdma_post_send(m->cli->qp, &wr, &bad)) == ENOMEM &&
		       now_ms() < end)
			sched_yield();	/* queue full: the pollers retire */
		if (rc) {
			mt_fail(m, __LINE__);
			break;
		}
	}
	return NULL;
}

static void *mt_poll(void *arg)
{
	struct mt *m = ((struct mt_arg *)arg)->m;
	int64_t end = now_ms() + LOOSE_MS;
	struct vrdma_wc wc[4];
	int i, n;

	while (__atomic_load_n(&m->done, __ATOMIC_ACQUIRE) < m->want &&
	       !__atomic_load_n(&m->err, __ATOMIC_ACQUIRE)) {
		if (now_ms() > end) {
			mt_fail(m, __LINE__);
			break;
		}
		n = vrdma_poll_cq(m->cli->cq, 4, wc);
		if (n < 0) {
			mt_fail(m, __LINE__);
			break;
		}
		for (i = 0; i < n; i++) {
			if (wc[i].status != VRDMA_WC_SUCCESS ||
			    wc[i].opcode != VRDMA_WC_RDMA_WRITE_OP ||
			    wc[i].wr_id >= MT_POSTERS * MT_WRS ||
			    wc[i].wr_id % MT_WRS % 3 == 1 ||
			    __atomic_exchange_n(&m->seen[wc[i].wr_id], 1, __ATOMIC_RELAXED))
				mt_fail(m, __LINE__);
			__atomic_add_fetch(&m->done, 1, __ATOMIC_RELEASE);
		}
		if (!n)
			sched_yield();
	}
	return NULL;
}

START_TEST(t_live_threads_post_poll)
{
	struct mt_arg a[MT_POSTERS + MT_POLLERS];
	pthread_t th[MT_POSTERS + MT_POLLERS];
	struct side srv, cli;
	struct vrdma_wc wc;
	struct mt *m;
	int i;

	NEED_DAEMON();
	pair_connect(&srv, &cli, 16);
	m = calloc(1, sizeof(*m));
	ck_assert_ptr_nonnull(m);
	m->cli = &cli;
	m->srv = &srv;
	m->want = MT_POSTERS * (MT_WRS - MT_WRS / 3);
	for (i = 0; i < MT_POSTERS + MT_POLLERS; i++) {
		a[i] = (struct mt_arg){ m, i };
		ck_assert_int_eq(pthread_create(&th[i], NULL,
						i < MT_POSTERS ? mt_post : mt_poll, &a[i]), 0);
	}
	for (i = 0; i < MT_POSTERS + MT_POLLERS; i++)
		pthread_join(th[i], NULL);
	ck_assert_msg(m->err == 0, "failed at test_api.c:%d", m->err);
	ck_assert_int_eq(m->done, m->want);
	ck_assert_int_eq(vrdma_poll_cq(cli.cq, 1, &wc), 0);
	free(m);
	ck_assert_int_eq(vrdma_close(cli.dev), 0);
	ck_assert_int_eq(vrdma_close(srv.dev), 0);
}
END_TEST

static Suite *api_suite(void)
{
	Suite *s = suite_create("api");
	TCase *tc = tcase_create("no-daemon");
	TCase *live = tlive_tcase();

	tcase_add_test(tc, t_null_args);
	tcase_add_test(tc, t_open_no_daemon);
	tcase_add_test(tc, t_open_bad_args);
	tcase_add_test(tc, t_status_str);
	suite_add_tcase(s, tc);

	tcase_add_test(live, t_live_mr);
	tcase_add_test(live, t_live_cq_qp);
	tcase_add_test(live, t_live_wait_policy);
	tcase_add_test(live, t_live_names);
	tcase_add_test(live, t_live_connect_errors);
	tcase_add_test(live, t_live_sq_overflow);
	tcase_add_test(live, t_live_transfer);
	tcase_add_test(live, t_live_cq_reuse_after_destroy);
	tcase_add_test(live, t_live_disabled_eio);
	tcase_add_test(live, t_live_disabled_cmd);
	tcase_add_test(live, t_live_bad_cqe);
	tcase_add_test(live, t_live_bad_cqe_first);
	tcase_add_test(live, t_live_many_waiters);
	tcase_add_test(live, t_live_send_entry_clean);
	tcase_add_test(live, t_live_send_qp_sge);
	tcase_add_test(live, t_live_send_broken);
	tcase_add_test(live, t_live_send_checks);
	tcase_add_test(live, t_live_threads_post_poll);
	suite_add_tcase(s, live);
	return s;
}

int main(void)
{
	return tlive_main("test_api", api_suite());
}
