// SPDX-License-Identifier: MIT
/*
 * ibv_post_send and ibv_poll_cq through vrdma's libibverbs (verbs/post.c,
 * verbs/cq.c) against a live vrdmad, as a verbs program calls them: built
 * against the installed <infiniband/verbs.h>, linked to build/lib/vrdma's
 * libibverbs.so.1.  Two RC QPs of one context connected to each other.
 *   - one WR, and chains: the WRs before a bad one are posted, *bad names
 *     it, none after it goes (a later WR's completion comes next);
 *   - bad single WRs (opcode, flags, SGE count) refused, nothing posted;
 *   - inline data from unregistered buffers of several SGEs, copied at
 *     post time (the buffers are overwritten before it completes), in a
 *     single WR and in a chain; one refused for a full send queue leaves
 *     the data of those in flight alone;
 *   - several threads posting inline WRITEs to one QP and to the other at
 *     once (the inline slots follow libvrdma's order: every byte lands);
 *   - ibv_poll_cq of more than libvrdma's batch, of 0 and of -1.
 */
#include <check.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tlive.h"
#include "tverbs.h"

#define T_DEPTH		64		/* send WRs per QP */
#define T_BUF		(1u << 20)
#define T_WAIT_MS	20000		/* longest wait for a completion */
#define T_THREADS	4		/* two on each QP */
#define T_PER		1500		/* inline WRITEs per thread */
#define T_SLOT		16		/* bytes each */

struct vv {
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
	struct ibv_mr *mr;
	union ibv_gid gid;
	uint8_t *buf;				/* [0, T_BUF/2) sources, the rest targets */
	int done, failed;			/* completions reaped (atomics) */
};

static struct vv v;

/* The device (vrdmad may not listen yet: retried), two QPs in INIT;
 * connected to each other unless connect is 0 (v.gid: the port's GID). */
static void vv_open_qps(int connect)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { T_DEPTH, 1, 2, 1, 64 } };
	int64_t end = now_ms() + T_OPEN_MS;
	int i;

	memset(&v, 0, sizeof(v));
	for (;;) {
		v.list = ibv_get_device_list(NULL);
		ck_assert_ptr_nonnull(v.list);
		if (v.list[0] || now_ms() > end)
			break;
		ibv_free_device_list(v.list);
		usleep(20000);
	}
	ck_assert_msg(v.list[0] != NULL, "no verbs device");
	ck_assert_str_eq(ibv_get_device_name(v.list[0]), "vrdma0");
	v.ctx = ibv_open_device(v.list[0]);
	ck_assert_ptr_nonnull(v.ctx);
	ck_assert_int_eq(ibv_query_gid(v.ctx, 1, 0, &v.gid), 0);
	v.pd = ibv_alloc_pd(v.ctx);
	ck_assert_ptr_nonnull(v.pd);
	v.buf = aligned_alloc(4096, T_BUF);
	ck_assert_ptr_nonnull(v.buf);
	memset(v.buf, 0, T_BUF);
	v.mr = ibv_reg_mr(v.pd, v.buf, T_BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ck_assert_ptr_nonnull(v.mr);
	v.cq = ibv_create_cq(v.ctx, 4 * T_DEPTH, NULL, NULL, 0);
	ck_assert_ptr_nonnull(v.cq);
	ia.send_cq = ia.recv_cq = v.cq;
	for (i = 0; i < 2; i++) {
		v.qp[i] = ibv_create_qp(v.pd, &ia);
		ck_assert_msg(v.qp[i] != NULL, "create_qp: %s", strerror(errno));
		tv_qp_init(v.qp[i]);
	}
	if (connect) {
		tv_qp_rts(v.qp[0], &v.gid, v.qp[1]->qp_num);
		tv_qp_rts(v.qp[1], &v.gid, v.qp[0]->qp_num);
	}
}

static void vv_open(void)
{
	vv_open_qps(1);
}

static void vv_close(void)
{
	ck_assert_int_eq(ibv_destroy_qp(v.qp[0]), 0);
	ck_assert_int_eq(ibv_destroy_qp(v.qp[1]), 0);
	ck_assert_int_eq(ibv_destroy_cq(v.cq), 0);
	ck_assert_int_eq(ibv_dereg_mr(v.mr), 0);
	ck_assert_int_eq(ibv_dealloc_pd(v.pd), 0);
	ck_assert_int_eq(ibv_close_device(v.ctx), 0);
	ibv_free_device_list(v.list);
	free(v.buf);
}

/* The next completion, successful (at most T_WAIT_MS). */
static struct ibv_wc vv_next(void)
{
	int64_t end = now_ms() + T_WAIT_MS;
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(v.cq, 1, &wc)) == 0 && now_ms() < end)
		;
	ck_assert_msg(n == 1, "no completion (%d)", n);
	ck_assert_msg(wc.status == IBV_WC_SUCCESS, "wr %llu: %s",
		      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
	return wc;
}

/* A signaled 8-byte WRITE from src to dst offset (both in buf). */
static struct ibv_send_wr vv_write(struct ibv_sge *sge, uint64_t id, size_t src, size_t dst)
{
	*sge = (struct ibv_sge){ (uintptr_t)v.buf + src, 8, v.mr->lkey };
	return (struct ibv_send_wr){ .wr_id = id, .sg_list = sge, .num_sge = 1,
				     .opcode = IBV_WR_RDMA_WRITE,
				     .send_flags = IBV_SEND_SIGNALED,
				     .wr.rdma = { (uintptr_t)v.buf + dst, v.mr->rkey } };
}

/* Nothing was posted on qp since the last completion: a new WR's comes
 * next (an RC QP completes in order). */
static void vv_nothing_posted(struct ibv_qp *qp, uint64_t id)
{
	struct ibv_send_wr w, *bad = NULL;
	struct ibv_sge s;

	w = vv_write(&s, id, 0, T_BUF - 8);
	ck_assert_int_eq(ibv_post_send(qp, &w, &bad), 0);
	ck_assert_uint_eq(vv_next().wr_id, id);
}

START_TEST(test_one_and_chains)
{
	struct ibv_send_wr w[3], *bad;
	struct ibv_sge s[3];
	size_t dst = T_BUF / 2;
	struct ibv_wc wc;

	NEED_DAEMON();
	vv_open();
	memcpy(v.buf, "verbs-ok", 8);
	memcpy(v.buf + 8, "chain-ok", 8);
	w[0] = vv_write(&s[0], 1, 0, dst);
	bad = NULL;
	ck_assert_int_eq(ibv_post_send(v.qp[0], &w[0], &bad), 0);
	wc = vv_next();
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_int_eq(wc.opcode, IBV_WC_RDMA_WRITE);
	ck_assert_uint_eq(wc.qp_num, v.qp[0]->qp_num);
	ck_assert_uint_eq(wc.wc_flags, 0);
	ck_assert_int_eq(memcmp(v.buf + dst, "verbs-ok", 8), 0);
	ck_assert_int_eq(ibv_post_send(v.qp[0], NULL, &bad), 0);

	/* a chain whose second WR is bad: the first goes, not the third */
	w[0] = vv_write(&s[0], 2, 8, dst + 64);
	w[1] = vv_write(&s[1], 3, 8, dst + 128);
	w[1].opcode = IBV_WR_LOCAL_INV;
	w[2] = vv_write(&s[2], 4, 8, dst + 192);
	w[0].next = &w[1];
	w[1].next = &w[2];
	bad = NULL;
	ck_assert_int_eq(ibv_post_send(v.qp[0], &w[0], &bad), EINVAL);
	ck_assert_ptr_eq(bad, &w[1]);
	ck_assert_uint_eq(vv_next().wr_id, 2);
	vv_nothing_posted(v.qp[0], 5);
	ck_assert_int_eq(memcmp(v.buf + dst + 64, "chain-ok", 8), 0);
	ck_assert_uint_eq(v.buf[dst + 128], 0);
	ck_assert_uint_eq(v.buf[dst + 192], 0);

	/* a whole good chain, both QPs */
	w[1].opcode = IBV_WR_RDMA_WRITE;
	ck_assert_int_eq(ibv_post_send(v.qp[0], &w[0], &bad), 0);
	ck_assert_uint_eq(vv_next().wr_id, 2);
	ck_assert_uint_eq(vv_next().wr_id, 3);
	ck_assert_uint_eq(vv_next().wr_id, 4);
	ck_assert_int_eq(memcmp(v.buf + dst + 192, "chain-ok", 8), 0);

	/* single WRs refused: opcode, unknown flag, too many SGEs, negative */
	w[0] = vv_write(&s[0], 6, 0, dst);
	w[0].opcode = IBV_WR_SEND_WITH_INV;
	bad = NULL;
	ck_assert_int_eq(ibv_post_send(v.qp[1], &w[0], &bad), EINVAL);
	ck_assert_ptr_eq(bad, &w[0]);
	w[0] = vv_write(&s[0], 6, 0, dst);
	w[0].send_flags |= IBV_SEND_IP_CSUM;
	ck_assert_int_eq(ibv_post_send(v.qp[1], &w[0], &bad), EINVAL);
	w[0] = vv_write(&s[0], 6, 0, dst);
	w[0].num_sge = 3;			/* max_send_sge 2 */
	ck_assert_int_eq(ibv_post_send(v.qp[1], &w[0], &bad), EINVAL);
	w[0].num_sge = -1;
	ck_assert_int_eq(ibv_post_send(v.qp[1], &w[0], &bad), EINVAL);
	vv_nothing_posted(v.qp[1], 7);
	vv_close();
}
END_TEST

START_TEST(test_inline)
{
	char a[8] = "inline, ", b[8] = "copied!!";
	struct ibv_sge s[2] = { { (uintptr_t)a, 8, 0 }, { (uintptr_t)b, 8, 0 } };
	struct ibv_send_wr w[2], *bad = NULL;
	size_t dst = T_BUF / 2;
	char big[65];

	NEED_DAEMON();
	vv_open();
	w[0] = (struct ibv_send_wr){ .wr_id = 1, .sg_list = s, .num_sge = 2,
				     .opcode = IBV_WR_RDMA_WRITE,
				     .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
				     .wr.rdma = { (uintptr_t)v.buf + dst, v.mr->rkey } };
	ck_assert_int_eq(ibv_post_send(v.qp[0], &w[0], &bad), 0);
	memset(a, 'x', sizeof(a));		/* ours again once the call returned */
	memset(b, 'x', sizeof(b));
	ck_assert_uint_eq(vv_next().wr_id, 1);
	ck_assert_int_eq(memcmp(v.buf + dst, "inline, copied!!", 16), 0);

	/* two in a chain: a slot each */
	memcpy(a, "first-wr", 8);
	memcpy(b, "secondwr", 8);
	w[0].num_sge = 1;
	w[1] = w[0];
	w[1].wr_id = 2;
	w[1].sg_list = &s[1];
	w[1].wr.rdma.remote_addr += 64;
	w[0].next = &w[1];
	ck_assert_int_eq(ibv_post_send(v.qp[0], &w[0], &bad), 0);
	memset(a, 'x', sizeof(a));
	memset(b, 'x', sizeof(b));
	ck_assert_uint_eq(vv_next().wr_id, 1);
	ck_assert_uint_eq(vv_next().wr_id, 2);
	ck_assert_int_eq(memcmp(v.buf + dst, "first-wr", 8), 0);
	ck_assert_int_eq(memcmp(v.buf + dst + 64, "secondwr", 8), 0);

	/* more than max_inline_data (64) */
	memset(big, 'b', sizeof(big));
	s[0] = (struct ibv_sge){ (uintptr_t)big, sizeof(big), 0 };
	w[0].next = NULL;
	ck_assert_int_eq(ibv_post_send(v.qp[0], &w[0], &bad), EINVAL);
	ck_assert_ptr_eq(bad, &w[0]);
	vv_nothing_posted(v.qp[0], 3);
	vv_close();
}
END_TEST

static void vv_pattern(uint8_t *p, int t, int i)
{
	int k;

	for (k = 0; k < T_SLOT; k++)
		p[k] = (uint8_t)(t * 61 + i * 7 + k);
}

/*
 * A full send queue refuses an inline WR (ENOMEM) without touching the
 * data of those in flight: the peer is not in RTR yet, so all T_DEPTH
 * wait in dom0 while one more is refused; then they all land.
 */
START_TEST(test_inline_sq_full)
{
	uint8_t data[T_SLOT], want[T_SLOT];
	struct ibv_sge sge = { (uintptr_t)data, T_SLOT, 0 };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED }, *bad;
	int i;

	NEED_DAEMON();
	vv_open_qps(0);
	tv_qp_rts(v.qp[0], &v.gid, v.qp[1]->qp_num);
	for (i = 0; i <= T_DEPTH; i++) {
		vv_pattern(data, 9, i);
		wr.wr_id = (uint64_t)i;
		wr.wr.rdma.remote_addr = (uintptr_t)v.buf + T_BUF / 2 + (size_t)i * T_SLOT;
		wr.wr.rdma.rkey = v.mr->rkey;
		ck_assert_int_eq(ibv_post_send(v.qp[0], &wr, &bad), i < T_DEPTH ? 0 : ENOMEM);
	}
	tv_qp_rts(v.qp[1], &v.gid, v.qp[0]->qp_num);
	for (i = 0; i < T_DEPTH; i++)
		ck_assert_uint_eq(vv_next().wr_id, (uint64_t)i);
	for (i = 0; i <= T_DEPTH; i++) {
		memset(want, 0, sizeof(want));
		if (i < T_DEPTH)
			vv_pattern(want, 9, i);
		ck_assert_msg(!memcmp(v.buf + T_BUF / 2 + (size_t)i * T_SLOT, want, T_SLOT),
			      "WR %d: wrong bytes", i);
	}
	vv_close();
}
END_TEST

struct writer {
	pthread_t th;
	int t, rc;
};

/* Reap what is there (any thread's WRs): count them, and failures. */
static void vv_reap(void)
{
	struct ibv_wc wc[16];
	int n, i;

	n = ibv_poll_cq(v.cq, 16, wc);
	if (n < 0) {
		__atomic_add_fetch(&v.failed, 1, __ATOMIC_RELAXED);
		return;
	}
	for (i = 0; i < n; i++)
		if (wc[i].status != IBV_WC_SUCCESS)
			__atomic_add_fetch(&v.failed, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&v.done, n, __ATOMIC_RELAXED);
}

/* T_PER inline WRITEs of writer t to its own slots, QP t % 2. */
static void *vv_writer(void *arg)
{
	struct writer *a = arg;
	uint8_t data[T_SLOT];
	struct ibv_sge sge = { (uintptr_t)data, T_SLOT, 0 };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED }, *bad;
	int i;

	for (i = 0; i < T_PER; i++) {
		vv_pattern(data, a->t, i);
		wr.wr_id = (uint64_t)a->t << 32 | (uint64_t)i;
		wr.wr.rdma.remote_addr = (uintptr_t)v.buf + T_BUF / 2 +
					 ((size_t)a->t * T_PER + (size_t)i) * T_SLOT;
		wr.wr.rdma.rkey = v.mr->rkey;
		/* the send queue full (ENOMEM): make room and try again */
		while ((a->rc = ibv_post_send(v.qp[a->t % 2], &wr, &bad)) == ENOMEM)
			vv_reap();
		if (a->rc)
			return NULL;
		memset(data, 0xee, sizeof(data));
		vv_reap();
	}
	return NULL;
}

START_TEST(test_threads)
{
	struct writer w[T_THREADS];
	uint8_t want[T_SLOT];
	int64_t end;
	int t, i;

	NEED_DAEMON();
	vv_open();
	for (t = 0; t < T_THREADS; t++) {
		w[t].t = t;
		ck_assert_int_eq(pthread_create(&w[t].th, NULL, vv_writer, &w[t]), 0);
	}
	for (t = 0; t < T_THREADS; t++) {
		pthread_join(w[t].th, NULL);
		ck_assert_msg(w[t].rc == 0, "writer %d: %s", t, strerror(w[t].rc));
	}
	end = now_ms() + T_WAIT_MS;
	while (__atomic_load_n(&v.done, __ATOMIC_RELAXED) < T_THREADS * T_PER && now_ms() < end)
		vv_reap();
	ck_assert_int_eq(v.done, T_THREADS * T_PER);
	ck_assert_int_eq(v.failed, 0);
	for (t = 0; t < T_THREADS; t++)
		for (i = 0; i < T_PER; i++) {
			vv_pattern(want, t, i);
			ck_assert_msg(!memcmp(v.buf + T_BUF / 2 +
					      ((size_t)t * T_PER + (size_t)i) * T_SLOT,
					      want, T_SLOT), "writer %d WR %d: wrong bytes", t, i);
		}
	vv_close();
}
END_TEST

START_TEST(test_poll_batches)
{
	struct ibv_wc wc[100];
	struct ibv_send_wr w, *bad;
	struct ibv_sge s;
	int64_t end;
	int got = 0, n, i;

	NEED_DAEMON();
	vv_open();
	ck_assert_int_eq(ibv_poll_cq(v.cq, 0, wc), 0);
	ck_assert_int_eq(ibv_poll_cq(v.cq, -1, wc), -1);
	for (i = 0; i < 40; i++) {
		w = vv_write(&s, (uint64_t)i, 0, T_BUF / 2 + (size_t)i * 8);
		ck_assert_int_eq(ibv_post_send(v.qp[1], &w, &bad), 0);
	}
	/* (likely all there by now: one poll then takes two of libvrdma's) */
	usleep(100000);
	for (end = now_ms() + T_WAIT_MS; got < 40 && now_ms() < end; got += n) {
		memset(wc, 0xa5, sizeof(wc));
		n = ibv_poll_cq(v.cq, 100, wc);
		ck_assert_int_ge(n, 0);
		ck_assert_int_le(got + n, 40);
		for (i = 0; i < n; i++) {
			ck_assert_int_eq(wc[i].status, IBV_WC_SUCCESS);
			ck_assert_uint_eq(wc[i].wr_id, (uint64_t)(got + i));
			ck_assert_int_eq(wc[i].opcode, IBV_WC_RDMA_WRITE);
			ck_assert_uint_eq(wc[i].qp_num, v.qp[1]->qp_num);
			ck_assert_uint_eq(wc[i].wc_flags, 0);
			ck_assert_uint_eq(wc[i].vendor_err, 0);
			ck_assert_uint_eq(wc[i].pkey_index, 0);
			ck_assert_uint_eq(wc[i].slid, 0);
			ck_assert_uint_eq(wc[i].sl, 0);
			ck_assert_uint_eq(wc[i].dlid_path_bits, 0);
		}
		ck_assert_uint_eq(((uint8_t *)&wc[n])[0], 0xa5);	/* no more written */
	}
	ck_assert_int_eq(got, 40);
	vv_close();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vvb_post");
	TCase *live = tlive_tcase();

	tcase_add_test(live, test_one_and_chains);
	tcase_add_test(live, test_inline);
	tcase_add_test(live, test_inline_sq_full);
	tcase_add_test(live, test_threads);
	tcase_add_test(live, test_poll_batches);
	suite_add_tcase(s, live);
	return tlive_main("test_vvb_post", s);
}
