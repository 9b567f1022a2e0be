// SPDX-License-Identifier: MIT
/*
 * Work requests of up to 16 SGEs through libvrdma and a live vrdmad: the
 * device says 16, sends, receives, RDMA writes and reads gather and
 * scatter through all of them, SRQ receives too, a chain of such WRs
 * longer than the request ring goes through (its SGE entries waiting for
 * room with their WR), and lists past a QP's or the device's limit are
 * refused before anything reaches dom0.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "tlive.h"
#include "../libvrdma/vlib.h"

#define T_CONN_MS	10000
#define NSGE		VRDMA_MAX_SGE_PER_WR
#define BUFSZ		(1u << 20)

struct side {
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	struct vrdma_srq *srq;
	struct vrdma_qp *qp;
	uint8_t *buf;
	struct vrdma_mr *mr;
};

static void side_init(struct side *s, uint32_t depth, bool srq)
{
	struct vrdma_qp_init_attr a = { 0 };

	s->dev = open_dev();
	s->pd = vrdma_alloc_pd(s->dev);
	ck_assert_ptr_nonnull(s->pd);
	s->cq = vrdma_create_cq(s->dev, 2 * (int)depth, NULL);
	ck_assert_ptr_nonnull(s->cq);
	a.send_cq = a.recv_cq = s->cq;
	a.cap = (struct vrdma_qp_cap){ depth, depth, NSGE, NSGE };
	s->srq = NULL;
	if (srq) {
		struct vrdma_srq_init_attr sa = { .max_wr = depth, .max_sge = NSGE };

		s->srq = vrdma_create_srq(s->pd, &sa);
		ck_assert_msg(s->srq != NULL, "create_srq: %s", strerror(errno));
	}
	s->qp = vrdma_create_qp_srq(s->pd, &a, s->srq);
	ck_assert_msg(s->qp != NULL, "create_qp: %s", strerror(errno));
	s->buf = vrdma_alloc_buf(s->dev, BUFSZ);
	ck_assert_ptr_nonnull(s->buf);
	s->mr = vrdma_reg_mr(s->pd, s->buf, BUFSZ, VRDMA_ACCESS_LOCAL_WRITE |
			     VRDMA_ACCESS_REMOTE_WRITE | VRDMA_ACCESS_REMOTE_READ);
	ck_assert_msg(s->mr != NULL, "reg_mr: %s", strerror(errno));
}

static void pair(struct side *srv, struct side *cli, uint32_t depth, bool srq)
{
	side_init(srv, depth, srq);
	side_init(cli, depth, false);
	tlive_connect(srv->dev, srv->qp, cli->qp, "sge-svc", T_CONN_MS);
}

static void unpair(struct side *srv, struct side *cli)
{
	ck_assert_int_eq(vrdma_close(cli->dev), 0);
	ck_assert_int_eq(vrdma_close(srv->dev), 0);
}

/* n pieces of s's buffer: piece i is len + i bytes at off + i * stride. */
static uint32_t pieces(const struct side *s, struct vrdma_sge *sg, int n, uint32_t off,
		       uint32_t len, uint32_t stride)
{
	uint32_t total = 0;
	int i;

	for (i = 0; i < n; i++) {
		sg[i] = (struct vrdma_sge){ (uintptr_t)s->buf + off + (uint32_t)i * stride,
					    len + (uint32_t)i, s->mr->lkey };
		total += len + (uint32_t)i;
	}
	return total;
}

/* The bytes of sg[0..n) in order, into out. */
static uint32_t gather(const struct vrdma_sge *sg, int n, uint8_t *out)
{
	uint32_t at = 0;
	int i;

	for (i = 0; i < n; i++) {
		memcpy(out + at, (void *)(uintptr_t)sg[i].addr, sg[i].length);
		at += sg[i].length;
	}
	return at;
}

static void fill(struct side *s, uint32_t seed)
{
	uint32_t i;

	for (i = 0; i < BUFSZ; i++)
		s->buf[i] = (uint8_t)(i * 31 + seed);
}

static void ok(struct vrdma_cq *cq, uint64_t id, struct vrdma_wc *wc)
{
	ck_assert_int_eq(wait_one_ms(cq, wc, T_CONN_MS), 1);
	ck_assert_msg(wc->status == VRDMA_WC_SUCCESS, "wr %llu: %s",
		      (unsigned long long)wc->wr_id, vrdma_wc_status_str(wc->status));
	ck_assert_uint_eq(wc->wr_id, id);
}

START_TEST(t_sge_device)
{
	struct vrdma_device_attr da;
	struct vrdma_device *dev;

	NEED_DAEMON();
	dev = open_dev();
	ck_assert_int_eq(vrdma_query_device(dev, &da), 0);
	ck_assert_uint_eq(da.max_sge, 16);
	ck_assert_int_eq(vrdma_close(dev), 0);
}
END_TEST

/* SEND from 16 pieces into a receive of 16 other pieces (SRQ or not). */
static void send_recv(bool srq)
{
	static uint8_t want[8192], got[8192];
	struct vrdma_sge ss[NSGE], rs[NSGE];
	struct vrdma_send_wr sw = { 0 }, *sbad;
	struct vrdma_recv_wr rw = { 0 }, *rbad;
	struct side srv, cli;
	struct vrdma_wc wc;
	uint32_t n;

	NEED_DAEMON();
	pair(&srv, &cli, 8, srq);
	fill(&cli, 7);
	memset(srv.buf, 0, BUFSZ);
	n = pieces(&srv, rs, NSGE, 4096, 20, 100);	/* 20..35 bytes: 440 */
	rw.wr_id = 5;
	rw.sg_list = rs;
	rw.num_sge = NSGE;
	ck_assert_int_eq(srq ? vrdma_post_srq_recv(srv.srq, &rw, &rbad) :
			 vrdma_post_recv(srv.qp, &rw, &rbad), 0);
	ck_assert_uint_eq(pieces(&cli, ss, NSGE, 0, 10, 300), 280);	/* 10..25 */
	sw.wr_id = 6;
	sw.sg_list = ss;
	sw.num_sge = NSGE;
	sw.opcode = VRDMA_WR_SEND;
	sw.send_flags = VRDMA_SEND_SIGNALED;
	ck_assert_int_eq(vrdma_post_send(cli.qp, &sw, &sbad), 0);
	ok(cli.cq, 6, &wc);
	ok(srv.cq, 5, &wc);
	ck_assert_uint_eq(wc.byte_len, 280);
	ck_assert_uint_lt(280, n);
	gather(ss, NSGE, want);
	gather(rs, NSGE, got);
	ck_assert_mem_eq(got, want, 280);
	unpair(&srv, &cli);
}

START_TEST(t_sge_send_recv) { send_recv(false); }
END_TEST
START_TEST(t_sge_srq_recv) { send_recv(true); }
END_TEST

/* RDMA WRITE gathered from 16 pieces, READ scattered back into 16 more. */
START_TEST(t_sge_write_read)
{
	static uint8_t want[8192], got[8192];
	struct vrdma_sge ws[NSGE], rs[NSGE];
	struct vrdma_send_wr sw = { 0 }, *sbad;
	struct side srv, cli;
	struct vrdma_wc wc;
	uint32_t n;

	NEED_DAEMON();
	pair(&srv, &cli, 8, false);
	fill(&cli, 3);
	memset(srv.buf, 0, BUFSZ);
	n = pieces(&cli, ws, NSGE, 0, 100, 4000);	/* across pages */
	sw.wr_id = 1;
	sw.sg_list = ws;
	sw.num_sge = NSGE;
	sw.opcode = VRDMA_WR_RDMA_WRITE;
	sw.send_flags = VRDMA_SEND_SIGNALED;
	sw.wr.rdma.remote_addr = (uintptr_t)srv.buf + 65536;
	sw.wr.rdma.rkey = srv.mr->rkey;
	ck_assert_int_eq(vrdma_post_send(cli.qp, &sw, &sbad), 0);
	ok(cli.cq, 1, &wc);
	ck_assert_uint_eq(gather(ws, NSGE, want), n);
	ck_assert_mem_eq(srv.buf + 65536, want, n);

	memset(cli.buf + 524288, 0, 65536);
	ck_assert_uint_eq(pieces(&cli, rs, NSGE, 524288, 100, 1000), n);
	sw.wr_id = 2;
	sw.sg_list = rs;
	sw.opcode = VRDMA_WR_RDMA_READ;
	ck_assert_int_eq(vrdma_post_send(cli.qp, &sw, &sbad), 0);
	ok(cli.cq, 2, &wc);
	ck_assert_uint_eq(gather(rs, NSGE, got), n);
	ck_assert_mem_eq(got, want, n);
	unpair(&srv, &cli);
}
END_TEST

/* 600 WRs of 16 SGEs in one chain (3 ring entries each, 7 times the
 * request ring) with receives of 1..16 SGEs: every byte where it belongs. */
START_TEST(t_sge_long_chain)
{
	enum { N = 600, DEPTH = 1024 };
	static struct vrdma_send_wr sw[N];
	static struct vrdma_recv_wr rw[N];
	static struct vrdma_sge ss[N][NSGE], rs[N][NSGE];
	struct vrdma_send_wr *sbad;
	struct vrdma_recv_wr *rbad;
	struct side srv, cli;
	struct vrdma_wc wc;
	int i, k, got = 0, sent = 0;

	NEED_DAEMON();
	pair(&srv, &cli, DEPTH, false);
	fill(&cli, 11);
	memset(srv.buf, 0, BUFSZ);
	for (i = 0; i < N; i++) {
		/* Message i: 16 one-byte pieces, into 1 + i % 16 pieces. */
		for (k = 0; k < NSGE; k++)
			ss[i][k] = (struct vrdma_sge){ (uintptr_t)cli.buf + (uint32_t)(i * 37 + k * 977) % BUFSZ,
						       1, cli.mr->lkey };
		rw[i].wr_id = (uint64_t)i;
		rw[i].sg_list = rs[i];
		rw[i].num_sge = 1 + i % NSGE;
		for (k = 0; k < rw[i].num_sge; k++)
			rs[i][k] = (struct vrdma_sge){ (uintptr_t)srv.buf + (uint32_t)i * 64 + (uint32_t)k * 2,
						       k + 1 < rw[i].num_sge ? 1u : 32u, srv.mr->lkey };
		rw[i].next = i + 1 < N ? &rw[i + 1] : NULL;
		sw[i].wr_id = (uint64_t)i;
		sw[i].sg_list = ss[i];
		sw[i].num_sge = NSGE;
		sw[i].opcode = VRDMA_WR_SEND;
		sw[i].send_flags = VRDMA_SEND_SIGNALED;
		sw[i].next = i + 1 < N ? &sw[i + 1] : NULL;
	}
	ck_assert_int_eq(vrdma_post_recv(srv.qp, rw, &rbad), 0);
	ck_assert_int_eq(vrdma_post_send(cli.qp, sw, &sbad), 0);
	for (; sent < N; sent++) {
		ok(cli.cq, (uint64_t)sent, &wc);
		ck_assert_int_eq(wc.opcode, VRDMA_WC_SEND_OP);
	}
	for (; got < N; got++) {
		uint8_t want[NSGE], have[NSGE];
		uint32_t at = 0;

		ok(srv.cq, (uint64_t)got, &wc);
		ck_assert_uint_eq(wc.byte_len, NSGE);
		for (k = 0; k < NSGE; k++)
			want[k] = *(uint8_t *)(uintptr_t)ss[got][k].addr;
		for (k = 0; k < rw[got].num_sge && at < NSGE; k++) {
			uint32_t l = rs[got][k].length < NSGE - at ? rs[got][k].length : NSGE - at;

			memcpy(have + at, (void *)(uintptr_t)rs[got][k].addr, l);
			at += l;
		}
		ck_assert_mem_eq(have, want, NSGE);
	}
	unpair(&srv, &cli);
}
END_TEST

/* Over a limit: EINVAL, nothing posted, the QP goes on. */
START_TEST(t_sge_limits)
{
	struct vrdma_sge sg[NSGE + 1];
	struct vrdma_qp_init_attr a = { 0 };
	struct vrdma_srq_init_attr sa = { .max_wr = 4, .max_sge = NSGE + 1 };
	struct vrdma_send_wr sw = { 0 }, *sbad;
	struct vrdma_recv_wr rw = { 0 }, *rbad;
	struct side srv, cli;
	struct vrdma_qp *qp;
	struct vrdma_wc wc;

	NEED_DAEMON();
	pair(&srv, &cli, 8, false);
	a.send_cq = a.recv_cq = cli.cq;
	a.cap = (struct vrdma_qp_cap){ 4, 4, NSGE + 1, 1 };
	errno = 0;
	ck_assert_ptr_null(vrdma_create_qp(cli.pd, &a));
	ck_assert_int_eq(errno, EINVAL);
	a.cap = (struct vrdma_qp_cap){ 4, 4, 1, NSGE + 1 };
	ck_assert_ptr_null(vrdma_create_qp(cli.pd, &a));
	errno = 0;
	ck_assert_ptr_null(vrdma_create_srq(cli.pd, &sa));
	ck_assert_int_eq(errno, EINVAL);
	/* A QP of 5 send SGEs takes 5, not 6 (its WRs never reach dom0:
	 * not connected; the SGE count is checked first). */
	a.cap = (struct vrdma_qp_cap){ 4, 4, 5, 1 };
	qp = vrdma_create_qp(cli.pd, &a);
	ck_assert_ptr_nonnull(qp);
	pieces(&cli, sg, 6, 0, 1, 8);
	sw.sg_list = sg;
	sw.num_sge = 6;
	sw.opcode = VRDMA_WR_RDMA_WRITE;
	ck_assert_int_eq(vrdma_post_send(qp, &sw, &sbad), EINVAL);
	rw.sg_list = sg;
	rw.num_sge = 2;
	ck_assert_int_eq(vrdma_post_recv(qp, &rw, &rbad), EINVAL);	/* max_recv_sge 1 */
	rw.num_sge = 1;
	ck_assert_int_eq(vrdma_post_recv(qp, &rw, &rbad), 0);
	ck_assert_int_eq(vrdma_destroy_qp(qp), 0);

	pieces(&cli, sg, NSGE + 1, 0, 1, 8);
	sw.wr_id = 1;
	sw.sg_list = sg;
	sw.num_sge = NSGE + 1;
	sw.opcode = VRDMA_WR_RDMA_WRITE;
	sw.send_flags = VRDMA_SEND_SIGNALED;
	sw.wr.rdma.remote_addr = (uintptr_t)srv.buf;
	sw.wr.rdma.rkey = srv.mr->rkey;
	ck_assert_int_eq(vrdma_post_send(cli.qp, &sw, &sbad), EINVAL);
	ck_assert_ptr_eq(sbad, &sw);
	rw.sg_list = sg;
	rw.num_sge = NSGE + 1;
	ck_assert_int_eq(vrdma_post_recv(cli.qp, &rw, &rbad), EINVAL);
	rw.num_sge = -1;
	ck_assert_int_eq(vrdma_post_recv(cli.qp, &rw, &rbad), EINVAL);
	ck_assert_int_eq(vrdma_poll_cq(cli.cq, 1, &wc), 0);
	sw.num_sge = NSGE;
	ck_assert_int_eq(vrdma_post_send(cli.qp, &sw, &sbad), 0);
	ok(cli.cq, 1, &wc);
	unpair(&srv, &cli);
}
END_TEST

struct breaker {
	struct vrdma_device *dev;
	int ms;
};

static void *break_later(void *arg)
{
	struct breaker *b = arg;
	struct timespec ts = { 0, b->ms * 1000000L };

	nanosleep(&ts, NULL);
	__atomic_store_n(&b->dev->fe.broken, 1, __ATOMIC_RELEASE);	/* as dom0 breaking it */
	return NULL;
}

/* dom0 stops taking requests; a chain of 16-SGE WRITEs fills the ring
 * (its pushes publish whole WRs with their SGE entries) and the device
 * breaks while the poster waits for room: EIO names the first WR dom0
 * was not given, counted in WRs, not ring entries. */
START_TEST(t_sge_broken_mid_chain)
{
	enum { N = 200 };
	static struct vrdma_send_wr sw[N];
	struct vrdma_sge sg[NSGE];
	struct vrdma_send_wr *sbad = NULL;
	struct breaker b;
	struct side srv, cli;
	struct vfe_dev *fe;
	uint32_t prod0, pushed;
	pthread_t th;
	int i;

	NEED_DAEMON();
	pair(&srv, &cli, 1024, false);
	pieces(&cli, sg, NSGE, 0, 1, 8);
	for (i = 0; i < N; i++) {
		sw[i] = (struct vrdma_send_wr){ .wr_id = (uint64_t)i, .sg_list = sg,
						.num_sge = NSGE, .opcode = VRDMA_WR_RDMA_WRITE,
						.next = i + 1 < N ? &sw[i + 1] : NULL };
		sw[i].wr.rdma.remote_addr = (uintptr_t)srv.buf;
		sw[i].wr.rdma.rkey = srv.mr->rkey;
	}
	fe = &cli.dev->fe;
	prod0 = __atomic_load_n(&fe->sring->req.prod, __ATOMIC_ACQUIRE);
	ck_assert_int_eq(kill(d_pid, SIGSTOP), 0);
	b.dev = cli.dev;
	b.ms = 300;
	ck_assert_int_eq(pthread_create(&th, NULL, break_later, &b), 0);
	ck_assert_int_eq(vrdma_post_send(cli.qp, sw, &sbad), EIO);
	pthread_join(th, NULL);
	pushed = __atomic_load_n(&fe->sring->req.prod, __ATOMIC_ACQUIRE) - prod0;
	ck_assert_int_eq(kill(d_pid, SIGCONT), 0);
	/* The ring held what dom0 had not taken: whole WRs of 3 entries. */
	ck_assert_uint_eq(pushed % 3, 0);
	ck_assert_uint_gt(pushed, 0);
	ck_assert_ptr_eq(sbad, &sw[pushed / 3]);
	vrdma_close(cli.dev);
	ck_assert_int_eq(vrdma_close(srv.dev), 0);
}
END_TEST

static Suite *sge_suite(void)
{
	Suite *s = suite_create("sge");
	TCase *live = tlive_tcase();

	tcase_add_test(live, t_sge_device);
	tcase_add_test(live, t_sge_send_recv);
	tcase_add_test(live, t_sge_srq_recv);
	tcase_add_test(live, t_sge_write_read);
	tcase_add_test(live, t_sge_long_chain);
	tcase_add_test(live, t_sge_limits);
	tcase_add_test(live, t_sge_broken_mid_chain);
	suite_add_tcase(s, live);
	return s;
}

int main(void)
{
	return tlive_main("test_sge", sge_suite());
}
