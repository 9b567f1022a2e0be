// SPDX-License-Identifier: MIT
/*
 * Registering the program's own memory moves its pages onto shared pages
 * (platform/move_guest.c); they must land where the program has them,
 * whatever else in the process hooks mremap, or the registration fails.
 *  - t_hooked_mremap: this program interposes mremap() the way UCX's
 *    libucm does, forwarding four arguments and losing the fifth (the new
 *    address).  vrdma_reg_mr on malloc memory succeeds, an RDMA WRITE
 *    lands in the program's pages and an RDMA READ takes from them.
 *  - t_misplaced_*: the kernel made to put the pages elsewhere (a seccomp
 *    filter traps the move to the program's address, and the SIGSYS
 *    handler does it to another address): the registration fails EFAULT,
 *    the program's memory is as it was, nothing is left at the other
 *    address; moving back at the last dereg fails the same way and leaves
 *    the program its (shared) pages.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "vrdma/vrdma.h"
#include "tlive.h"

#define T_WAIT_MS	15000
#define T_PAGES		4
#define ACC_ALL		(VRDMA_ACCESS_LOCAL_WRITE | VRDMA_ACCESS_REMOTE_WRITE | \
			 VRDMA_ACCESS_REMOTE_READ)

/* ---- an mremap hook like libucm's ---- */

/* What the hook passes for the address it lost: whatever its caller left
 * in that register; here a reserved region, so that the pages land
 * somewhere for any user (address 0, the value UCX was seen passing, is
 * refused to all but root by vm.mmap_min_addr). */
static void *t_garbage;
static unsigned t_hook_calls;

/* Exported (tests/api.mk): a library's calls to mremap() come here. */
void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *(*real)(void *, size_t, size_t, int, ...);

	*(void **)&real = dlsym(RTLD_NEXT, "mremap");
	t_hook_calls++;
	return real(old, old_len, new_len, flags, t_garbage);
}

/* ---- a kernel that misplaces the move ---- */

static void *t_stray;		/* where the trapped move is done instead */
static volatile unsigned t_traps;

#if defined(__x86_64__)
#define T_AUDIT_ARCH	AUDIT_ARCH_X86_64
#define T_ARG(g, i)	((g)[(int[]){ REG_RDI, REG_RSI, REG_RDX, REG_R10 }[i]])
#define T_RET(uc)	((uc)->uc_mcontext.gregs[REG_RAX])
#define T_REGS(uc)	((uc)->uc_mcontext.gregs)
#elif defined(__aarch64__)
#define T_AUDIT_ARCH	AUDIT_ARCH_AARCH64
#define T_ARG(g, i)	((g)[i])
#define T_RET(uc)	((uc)->uc_mcontext.regs[0])
#define T_REGS(uc)	((uc)->uc_mcontext.regs)
#endif

#ifdef T_AUDIT_ARCH
/* The trapped mremap(old, len, len, flags, target): done to t_stray, and
 * its result is what the caller's system call returns. */
static void t_sigsys(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	int saved = errno;
	long r;

	(void)sig;
	(void)si;
	r = syscall(SYS_mremap, (void *)T_ARG(T_REGS(uc), 0), (size_t)T_ARG(T_REGS(uc), 1),
		    (size_t)T_ARG(T_REGS(uc), 2), (int)T_ARG(T_REGS(uc), 3), t_stray);
	T_RET(uc) = r == -1 ? -errno : r;
	t_traps++;
	errno = saved;
}

/* From now on the kernel puts a move onto `target` at t_stray.  0, or
 * why this cannot be done here (the test then skips). */
static const char *t_misplace(void *target)
{
	uint64_t a = (uintptr_t)target;
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, T_AUDIT_ARCH, 0, 7),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mremap, 0, 5),
		/* args[4], the new address, as two little-endian words */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[4])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)a, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[4]) + 4),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(a >> 32), 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	struct sigaction sa = { .sa_sigaction = t_sigsys, .sa_flags = SA_SIGINFO };
	const char *fork = getenv("CK_FORK");

	/* The filter stays with the process: only in a test's own. */
	if (fork && strcmp(fork, "no") == 0)
		return "CK_FORK=no";
	ck_assert_int_eq(sigaction(SIGSYS, &sa, NULL), 0);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return strerror(errno);
	return NULL;
}
#else
static const char *t_misplace(void *target)
{
	(void)target;
	return "no seccomp trap for this architecture in the test";
}
#endif

#define MISPLACE_OR_SKIP(target) do {					\
	const char *why_ = t_misplace(target);				\
	if (why_) {							\
		fprintf(stderr, "%s skipped: %s\n", __func__, why_);	\
		vrdma_close(a.dev);					\
		return;							\
	}								\
} while (0)

/* ---- one device, its QP bound to itself ---- */

struct side {
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	struct vrdma_qp *qp;
	uint8_t *buf;
	struct vrdma_mr *mr;
};

static void loop_init(struct side *s)
{
	struct vrdma_qp_init_attr qa = { .cap = { 16, 16, 1, 1 } };
	struct vrdma_qp_attr a;
	uint8_t gid[VRDMA_GID_LEN];

	s->dev = open_dev();
	s->pd = vrdma_alloc_pd(s->dev);
	ck_assert_ptr_nonnull(s->pd);
	s->cq = vrdma_create_cq(s->dev, 64, NULL);
	ck_assert_ptr_nonnull(s->cq);
	qa.send_cq = qa.recv_cq = s->cq;
	s->qp = vrdma_create_qp(s->pd, &qa);
	ck_assert_ptr_nonnull(s->qp);
	s->buf = vrdma_alloc_buf(s->dev, 8192);
	ck_assert_ptr_nonnull(s->buf);
	s->mr = vrdma_reg_mr(s->pd, s->buf, 8192, ACC_ALL);
	ck_assert_ptr_nonnull(s->mr);
	ck_assert_int_eq(vrdma_query_gid(s->dev, gid), 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = VRDMA_QPS_INIT;
	a.qp_access_flags = ACC_ALL;
	ck_assert_int_eq(vrdma_modify_qp(s->qp, &a, VRDMA_QP_STATE | VRDMA_QP_ACCESS_FLAGS), 0);
	a.qp_state = VRDMA_QPS_RTR;
	memcpy(a.dest_gid, gid, VRDMA_GID_LEN);
	a.dest_qp_num = s->qp->qp_num;
	ck_assert_int_eq(vrdma_modify_qp(s->qp, &a, VRDMA_QP_STATE | VRDMA_QP_DEST), 0);
	a.qp_state = VRDMA_QPS_RTS;
	ck_assert_int_eq(vrdma_modify_qp(s->qp, &a, VRDMA_QP_STATE), 0);
}

/* RDMA WRITE (or READ) of len bytes between s->buf + off and raddr. */
static void loop_rdma(struct side *s, enum vrdma_wr_opcode op, size_t off, uint32_t len,
		      void *raddr, const struct vrdma_mr *rmr)
{
	struct vrdma_sge sge = { (uintptr_t)s->buf + off, len, s->mr->lkey };
	struct vrdma_send_wr wr = { 0 }, *bad;
	struct vrdma_wc wc;

	wr.wr_id = off;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = VRDMA_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)raddr;
	wr.wr.rdma.rkey = rmr->rkey;
	ck_assert_int_eq(vrdma_post_send(s->qp, &wr, &bad), 0);
	ck_assert_int_eq(wait_one_ms(s->cq, &wc, T_WAIT_MS), 1);
	ck_assert_msg(wc.status == VRDMA_WC_SUCCESS, "rdma: %s",
		      vrdma_wc_status_str(wc.status));
}

static void *reserve(size_t len)
{
	void *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(m, MAP_FAILED);
	return m;
}

static bool unmapped(void *addr, size_t len)
{
	return msync(addr, len, MS_ASYNC) == -1 && errno == ENOMEM;
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + seed);
}

static void check_fill(const uint8_t *p, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		ck_assert_msg(p[i] == (uint8_t)(i * 7 + seed), "byte %zu changed", i);
}

START_TEST(t_hooked_mremap)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = 3 * pg + 300;
	struct vrdma_mr *mr;
	struct side a;
	uint8_t *blob, *heap;

	NEED_DAEMON();
	loop_init(&a);
	t_garbage = reserve(T_PAGES * pg);
	/* Unaligned, with bytes around it on the same pages. */
	blob = malloc(len);
	ck_assert_ptr_nonnull(blob);
	fill(blob, len, 0);
	heap = blob + 100;
	mr = vrdma_reg_mr(a.pd, heap, 2 * pg, ACC_ALL);
	ck_assert_msg(mr != NULL, "reg_mr(malloc) under the hook: %s", strerror(errno));
	ck_assert_ptr_eq(mr->addr, heap);
	check_fill(blob, len, 0);

	/* dom0 writes into the program's pages, and reads from them. */
	memcpy(a.buf, "into the heap", 14);
	loop_rdma(&a, VRDMA_WR_RDMA_WRITE, 0, 14, heap + 1000, mr);
	ck_assert_msg(memcmp(heap + 1000, "into the heap", 14) == 0,
		      "the WRITE went elsewhere (hook called %u times)", t_hook_calls);
	memcpy(heap + pg + 9, "from the heap", 14);
	loop_rdma(&a, VRDMA_WR_RDMA_READ, 4096, 14, heap + pg + 9, mr);
	ck_assert_mem_eq(a.buf + 4096, "from the heap", 14);

	/* Given back at the dereg, contents kept, still the program's. */
	ck_assert_int_eq(vrdma_dereg_mr(mr), 0);
	ck_assert_mem_eq(heap + 1000, "into the heap", 14);
	ck_assert_int_eq(blob[len - 1], (uint8_t)((len - 1) * 7));
	memset(blob, 1, len);
	free(blob);
	ck_assert_int_eq(vrdma_close(a.dev), 0);
	ck_assert_int_eq(munmap(t_garbage, T_PAGES * pg), 0);
}
END_TEST

/* The move onto the program's pages lands elsewhere: refused, undone. */
START_TEST(t_misplaced_reg)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = T_PAGES * pg;
	struct vrdma_mr *mr;
	struct side a;
	uint8_t *m, *m2;

	NEED_DAEMON();
	loop_init(&a);
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	fill(m, len, 3);
	t_stray = reserve(len);
	MISPLACE_OR_SKIP(m);

	errno = 0;
	mr = vrdma_reg_mr(a.pd, m, len, ACC_ALL);
	ck_assert_ptr_null(mr);
	ck_assert_int_eq(errno, EFAULT);
	ck_assert_int_eq(t_traps, 1);
	/* The program's memory is its own as before; nothing left astray. */
	check_fill(m, len, 3);
	memset(m, 0x5a, len);
	ck_assert(unmapped(t_stray, len));

	/* A move the kernel does right still registers. */
	m2 = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(m2, MAP_FAILED);
	mr = vrdma_reg_mr(a.pd, m2, len, ACC_ALL);
	ck_assert_msg(mr != NULL, "reg_mr: %s", strerror(errno));
	memcpy(a.buf, "landed", 7);
	loop_rdma(&a, VRDMA_WR_RDMA_WRITE, 0, 7, m2 + pg, mr);
	ck_assert_mem_eq(m2 + pg, "landed", 7);
	ck_assert_int_eq(vrdma_close(a.dev), 0);
	ck_assert_int_eq(t_traps, 1);
	ck_assert_int_eq(munmap(m, len), 0);
	ck_assert_int_eq(munmap(m2, len), 0);
}
END_TEST

/* Moving the pages back to private memory lands elsewhere: they stay the
 * shared ones, with their contents, at the program's addresses. */
START_TEST(t_misplaced_dereg)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = T_PAGES * pg;
	struct vrdma_mr *mr;
	struct side a;
	uint8_t *m;

	NEED_DAEMON();
	loop_init(&a);
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	fill(m, len, 5);
	mr = vrdma_reg_mr(a.pd, m, len, ACC_ALL);
	ck_assert_msg(mr != NULL, "reg_mr: %s", strerror(errno));
	t_stray = reserve(len);
	MISPLACE_OR_SKIP(m);

	memcpy(a.buf, "before dereg", 13);
	loop_rdma(&a, VRDMA_WR_RDMA_WRITE, 0, 13, m + 2 * pg, mr);
	ck_assert_int_eq(vrdma_dereg_mr(mr), 0);
	ck_assert_int_eq(t_traps, 1);
	ck_assert(unmapped(t_stray, len));
	t_stray = reserve(len);		/* the next misplaced move's */
	ck_assert_mem_eq(m + 2 * pg, "before dereg", 13);
	check_fill(m, 2 * pg, 5);
	/* Kept pinned: a new MR over it takes the same pages. */
	mr = vrdma_reg_mr(a.pd, m, len, ACC_ALL);
	ck_assert_msg(mr != NULL, "reg_mr again: %s", strerror(errno));
	memcpy(a.buf, "after", 6);
	loop_rdma(&a, VRDMA_WR_RDMA_WRITE, 0, 6, m + 3 * pg, mr);
	ck_assert_mem_eq(m + 3 * pg, "after", 6);
	/* Closing tries again; the program keeps the pages either way. */
	ck_assert_int_eq(vrdma_close(a.dev), 0);
	ck_assert_uint_gt(t_traps, 1);
	ck_assert(unmapped(t_stray, len));
	ck_assert_mem_eq(m + 2 * pg, "before dereg", 13);
	ck_assert_mem_eq(m + 3 * pg, "after", 6);
	memset(m, 1, len);
	ck_assert_int_eq(munmap(m, len), 0);
}
END_TEST

static Suite *remap_suite(void)
{
	Suite *s = suite_create("remap");
	TCase *live = tlive_tcase();

	tcase_add_test(live, t_hooked_mremap);
	tcase_add_test(live, t_misplaced_reg);
	tcase_add_test(live, t_misplaced_dereg);
	suite_add_tcase(s, live);
	return s;
}

int main(void)
{
	return tlive_main("test_remap", remap_suite());
}
