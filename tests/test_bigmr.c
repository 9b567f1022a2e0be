// SPDX-License-Identifier: MIT
/*
 * One MR of more than 4 GiB through a live vrdmad: a buffer of more than
 * VRDMA_BUF_MAX_PAGES pages goes to dom0 through indirect list pages
 * (max-buf-pages), a guest may attach what its mem quota lets it
 * register (vrdmactl set VM mem=), and an RDMA WRITE and READ reach a
 * byte past 4 GiB of it.  Below the quota's pages it is refused ENOMEM.
 * A CQ of 262144 CQEs (max-cq-order) too.
 * The memory is sparse: only the pages written are ever touched.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlive.h"

#define T_CONN_MS	10000
#define GIB		(1ull << 30)
#define BIG		(4 * GIB + 2 * 4096)	/* 1048578 pages: indirect */
#define FAR		(4 * GIB + 100)		/* a byte past 4 GiB */

static void vrdmactl(const char *args)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "timeout 20 %s/sbin/vrdmactl -S %s %s >/dev/null",
		 getenv("VRDMA_BUILD"), d_dir, args);
	ck_assert_msg(system(cmd) == 0, "vrdmactl %s failed", args);
}

static struct vrdma_qp *qp_of(struct vrdma_pd *pd, struct vrdma_cq *cq)
{
	struct vrdma_qp_init_attr a = { 0 };
	struct vrdma_qp *qp;

	a.send_cq = a.recv_cq = cq;
	a.cap = (struct vrdma_qp_cap){ 4, 4, 1, 1 };
	qp = vrdma_create_qp(pd, &a);
	ck_assert_msg(qp != NULL, "create_qp: %s", strerror(errno));
	return qp;
}

START_TEST(t_bigmr)
{
	struct vrdma_send_wr wr = { 0 }, *bad;
	struct vrdma_device_attr da;
	struct vrdma_device *dev;
	struct vrdma_qp *a, *b;
	struct vrdma_sge sge;
	struct vrdma_mr *mr;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	struct vrdma_wc wc;
	uint8_t *buf;

	NEED_DAEMON();
	setenv("VRDMA_VM", "bigmr", 1);
	dev = open_dev();
	ck_assert_int_eq(vrdma_query_device(dev, &da), 0);
	ck_assert_uint_ge(da.max_mr_size, 64 * GIB);
	/* CQs of 262144 (libfabric 1.17's ofi_rxm asks that many). */
	ck_assert_uint_eq(da.max_cqe, 262144);
	cq = vrdma_create_cq(dev, 262144, NULL);
	ck_assert_msg(cq != NULL, "create_cq 262144: %s", strerror(errno));
	ck_assert_int_eq(vrdma_destroy_cq(cq), 0);
	errno = 0;
	ck_assert_ptr_null(vrdma_create_cq(dev, 262145, NULL));
	ck_assert_int_eq(errno, EINVAL);
	pd = vrdma_alloc_pd(dev);
	cq = vrdma_create_cq(dev, 16, NULL);
	ck_assert_ptr_nonnull(pd);
	ck_assert_ptr_nonnull(cq);
	/* The default mem quota (1 GiB) and 1 GiB more: not 4 GiB. */
	errno = 0;
	ck_assert_ptr_null(vrdma_alloc_buf(dev, BIG));
	ck_assert_int_eq(errno, ENOMEM);
	vrdmactl("set bigmr mem=6G");
	buf = vrdma_alloc_buf(dev, BIG);
	ck_assert_msg(buf != NULL, "alloc_buf 4 GiB: %s", strerror(errno));
	mr = vrdma_reg_mr(pd, buf, BIG, VRDMA_ACCESS_LOCAL_WRITE | VRDMA_ACCESS_REMOTE_WRITE |
			  VRDMA_ACCESS_REMOTE_READ);
	ck_assert_msg(mr != NULL, "reg_mr 4 GiB: %s", strerror(errno));

	/* Two QPs of the one guest, connected to each other. */
	a = qp_of(pd, cq);
	b = qp_of(pd, cq);
	tlive_connect(dev, b, a, "bigmr", T_CONN_MS);

	memcpy(buf, "past four GiB", 14);
	sge = (struct vrdma_sge){ (uintptr_t)buf, 14, mr->lkey };
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = VRDMA_WR_RDMA_WRITE;
	wr.send_flags = VRDMA_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)buf + FAR;
	wr.wr.rdma.rkey = mr->rkey;
	ck_assert_int_eq(vrdma_post_send(a, &wr, &bad), 0);
	ck_assert_int_eq(wait_one_ms(cq, &wc, T_CONN_MS), 1);
	ck_assert_int_eq(wc.status, VRDMA_WC_SUCCESS);
	ck_assert_str_eq((char *)buf + FAR, "past four GiB");
	/* And back from there into page 1. */
	sge.addr = (uintptr_t)buf + 4096;
	wr.wr_id = 2;
	wr.opcode = VRDMA_WR_RDMA_READ;
	ck_assert_int_eq(vrdma_post_send(a, &wr, &bad), 0);
	ck_assert_int_eq(wait_one_ms(cq, &wc, T_CONN_MS), 1);
	ck_assert_int_eq(wc.status, VRDMA_WC_SUCCESS);
	ck_assert_str_eq((char *)buf + 4096, "past four GiB");
	ck_assert_int_eq(vrdma_close(dev), 0);
}
END_TEST

static Suite *bigmr_suite(void)
{
	Suite *s = suite_create("bigmr");
	TCase *live = tlive_tcase();

	tcase_add_test(live, t_bigmr);
	suite_add_tcase(s, live);
	return s;
}

int main(void)
{
	/* The plain host's shared pages per guest (host_dom0.h): 1 GiB by
	 * default; the test's guest needs 4 GiB and its list pages. */
	setenv("VRDMA_MAX_GUEST_PAGES", "1100000", 1);
	return tlive_main("test_bigmr", bigmr_suite());
}
