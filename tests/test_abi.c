// SPDX-License-Identifier: MIT
/*
 * Programs built against libvrdma 1.0.0 bind the VRDMA_1.0 versions of
 * the calls whose arguments mean more since (libvrdma/compat.c): found
 * with dlvsym as such a program's loader finds them.  Garbage in what was
 * vrdma_qp_init_attr's padding still makes an RC QP, vrdma_query_device
 * says 4 SGEs, VRDMA_QP_QKEY is refused; the default versions take them.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "tlive.h"

typedef struct vrdma_qp *create_qp_fn(struct vrdma_pd *, struct vrdma_qp_init_attr *);
typedef struct vrdma_qp *create_qp_srq_fn(struct vrdma_pd *, struct vrdma_qp_init_attr *,
					  struct vrdma_srq *);
typedef int query_device_fn(struct vrdma_device *, struct vrdma_device_attr *);
typedef int modify_qp_fn(struct vrdma_qp *, const struct vrdma_qp_attr *, int);

static void *sym(const char *name, const char *ver)
{
	void *lib = dlopen("libvrdma.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *p;

	ck_assert_msg(lib != NULL, "dlopen: %s", dlerror());
	p = dlvsym(lib, name, ver);
	ck_assert_msg(p != NULL, "%s@%s: %s", name, ver, dlerror());
	dlclose(lib);
	return p;
}

/* A UD QP goes RESET -> INIT with a Q_Key; an RC QP refuses the Q_Key. */
static int is_ud(struct vrdma_qp *qp)
{
	struct vrdma_qp_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.qp_state = VRDMA_QPS_INIT;
	qa.qkey = 0x1234;
	return vrdma_modify_qp(qp, &qa, VRDMA_QP_STATE | VRDMA_QP_QKEY) == 0;
}

START_TEST(t_abi_1_0)
{
	create_qp_fn *create10 = (create_qp_fn *)sym("vrdma_create_qp", "VRDMA_1.0");
	create_qp_srq_fn *srq10 = (create_qp_srq_fn *)sym("vrdma_create_qp_srq", "VRDMA_1.0");
	query_device_fn *qd10 = (query_device_fn *)sym("vrdma_query_device", "VRDMA_1.0");
	modify_qp_fn *mq10 = (modify_qp_fn *)sym("vrdma_modify_qp", "VRDMA_1.0");
	struct vrdma_qp_init_attr a;
	struct vrdma_device_attr da;
	struct vrdma_qp_attr qa;
	struct vrdma_device *dev;
	struct vrdma_qp *qp;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	int garbage[] = { 0xa5, 0x01 };
	unsigned i;

	NEED_DAEMON();
	ck_assert_ptr_eq(sym("vrdma_create_qp", "VRDMA_1.1"), (void *)vrdma_create_qp);
	dev = open_dev();
	pd = vrdma_alloc_pd(dev);
	cq = vrdma_create_cq(dev, 16, NULL);
	ck_assert_ptr_nonnull(pd);
	ck_assert_ptr_nonnull(cq);

	ck_assert_int_eq(qd10(dev, &da), 0);
	ck_assert_uint_eq(da.max_sge, 4);
	ck_assert_int_eq(vrdma_query_device(dev, &da), 0);
	ck_assert_uint_eq(da.max_sge, 16);

	for (i = 0; i < 2; i++) {
		/* A 1.0 program filled the fields it knew; the padding is
		 * whatever was on its stack. */
		memset(&a, garbage[i], sizeof(a));
		a.qp_context = NULL;
		a.send_cq = a.recv_cq = cq;
		a.cap = (struct vrdma_qp_cap){ 4, 4, 1, 1 };
		a.sq_sig_all = 0;
		qp = i ? srq10(pd, &a, NULL) : create10(pd, &a);
		ck_assert_msg(qp != NULL, "1.0 create_qp, padding %#x: %s", garbage[i],
			      strerror(errno));
		ck_assert_msg(!is_ud(qp), "padding %#x made a UD QP", garbage[i]);
		ck_assert_int_eq(vrdma_destroy_qp(qp), 0);
	}
	/* The default version reads qp_type. */
	memset(&a, 0, sizeof(a));
	a.send_cq = a.recv_cq = cq;
	a.cap = (struct vrdma_qp_cap){ 4, 4, 1, 1 };
	a.qp_type = VRDMA_QPT_UD;
	qp = vrdma_create_qp(pd, &a);
	ck_assert_msg(qp != NULL, "create UD: %s", strerror(errno));
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = VRDMA_QPS_INIT;
	qa.qkey = 7;
	ck_assert_int_eq(mq10(qp, &qa, VRDMA_QP_STATE | VRDMA_QP_QKEY), EINVAL);
	ck_assert(is_ud(qp));
	ck_assert_int_eq(vrdma_destroy_qp(qp), 0);
	ck_assert_int_eq(vrdma_close(dev), 0);
}
END_TEST

static Suite *abi_suite(void)
{
	Suite *s = suite_create("abi");
	TCase *live = tlive_tcase();

	tcase_add_test(live, t_abi_1_0);
	suite_add_tcase(s, live);
	return s;
}

int main(void)
{
	return tlive_main("test_abi", abi_suite());
}
