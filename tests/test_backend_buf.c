// SPDX-License-Identifier: MIT
/*
 * Buffers past VRDMA_BUF_MAX_PAGES on the stub platform: the backend
 * publishes max-buf-pages, takes indirect list pages (pages of the list
 * pages' refs) and maps every data page where the guest has it; bad
 * indirect bodies are refused as statuses; a guest attaches what its mem
 * quota lets it register, and 1 GiB more, no more.  CQs of 2^18 CQEs
 * (max-cq-order), not 2^19.
 */
#include <check.h>
#include <string.h>

#include "backend_tg.h"
#include "../backend/vbe.h"

enum ind { I_GOOD, I_NLIST, I_TWO, I_TOO_MANY };

/* Attach npages of g's (a fresh share) through indirect list pages. */
static int attach_ind(struct tg *g, uint32_t npages, enum ind how, uint32_t *buf,
		      struct vplat_share **data)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_ATTACH_BUF, 0);
	uint32_t nl = (npages + VRDMA_REFS_PER_PAGE - 1) / VRDMA_REFS_PER_PAGE;
	uint32_t n1 = (nl + VRDMA_REFS_PER_PAGE - 1) / VRDMA_REFS_PER_PAGE, i, out[4] = { 0 };
	struct vplat_share *l2, *l1;
	int st;

	ck_assert_int_eq(vplat_share(g->p, 0, npages, 1, data), 0);
	ck_assert_int_eq(vplat_share(g->p, 0, nl, 0, &l2), 0);
	ck_assert_int_eq(vplat_share(g->p, 0, n1, 0, &l1), 0);
	memcpy(vplat_share_addr(l2), vplat_share_refs(*data), (size_t)npages * 4);
	memcpy(vplat_share_addr(l1), vplat_share_refs(l2), (size_t)nl * 4);
	r.u.attach_buf.npages = how == I_TOO_MANY ? VRDMA_BUF_MAX_PAGES_IND + 1 : npages;
	r.u.attach_buf.nlist = (uint16_t)(how == I_NLIST ? n1 + 1 : n1);
	r.u.attach_buf.writable = 1;
	r.u.attach_buf.indirect = how == I_TWO ? 2 : 1;
	for (i = 0; i < n1; i++)
		r.u.attach_buf.list_ref[i] = vplat_share_refs(l1)[i];
	st = tg_cmd(g, &r, out);
	*buf = out[0];
	vplat_unshare(l1);
	vplat_unshare(l2);
	return st;
}

START_TEST(buf_indirect)
{
	const uint32_t n = VRDMA_BUF_MAX_PAGES + 1500;	/* 18 list pages */
	struct vplat_share *data;
	char path[256], v[32];
	uint32_t buf, out[4], key;
	struct vrdma_req r;
	uint8_t *mem;
	struct tg a;

	tg_full(&a, 5);
	snprintf(path, sizeof(path), "%s/max-buf-pages", a.bdir);
	ck_assert_int_eq(vplat_key_read(a.p, path, v, sizeof(v)), 0);
	ck_assert_str_eq(v, "16777216");
	ck_assert_int_eq(attach_ind(&a, n, I_GOOD, &buf, &data), VRDMA_CS_OK);
	mem = vplat_share_addr(data);
	/* An MR over it all: a WRITE of a's own reaches its last page. */
	r = mkreq(VRDMA_CMD_REG_MR, 0);
	r.u.reg_mr.pd = a.pd;
	r.u.reg_mr.buf = buf;
	r.u.reg_mr.length = (uint64_t)n * VRDMA_PAGE_SIZE;
	r.u.reg_mr.iova = 1ull << 40;
	r.u.reg_mr.access = VRDMA_ACC_ALL;
	ck_assert_int_eq(tg_cmd(&a, &r, out), VRDMA_CS_OK);
	key = out[1];
	{
		struct tg b;
		struct vrdma_req w;

		tg_full(&b, 6);
		tg_connect(&b, &a);
		memcpy(b.mem + DATA_OFF, "end of 18 lists", 16);
		w = mkwr(&b, VRDMA_OP_WRITE, VRDMA_WR_F_SIGNALED, 9);
		add_sge(&w, DATA_OFF, 16, b.key);
		w.u.wr.remote_addr = (1ull << 40) + (uint64_t)(n - 1) * VRDMA_PAGE_SIZE + 8;
		w.u.wr.rkey = key;
		post(&b, &w);
		expect_cqe(&b, 9, VRDMA_WS_SUCCESS);
		ck_assert_mem_eq(mem + (size_t)(n - 1) * VRDMA_PAGE_SIZE + 8, "end of 18 lists", 16);
		tg_stop(&b);
	}
	tg_stop(&a);
	vplat_unshare(data);
}
END_TEST

static void ind_bad(enum ind how)
{
	struct vplat_share *data;
	uint32_t buf;
	struct tg a;

	tg_full(&a, 5);
	ck_assert_int_eq(attach_ind(&a, VRDMA_BUF_MAX_PAGES + 1, how, &buf, &data),
			 VRDMA_CS_INVAL);
	ck_assert_int_eq(back_state(&a), VRDMA_XB_CONNECTED);
	tg_stop(&a);
	vplat_unshare(data);
}

START_TEST(buf_indirect_nlist) { ind_bad(I_NLIST); }
END_TEST
START_TEST(buf_indirect_two) { ind_bad(I_TWO); }
END_TEST
START_TEST(buf_indirect_too_many) { ind_bad(I_TOO_MANY); }
END_TEST

/* A direct list may not name more than VRDMA_BUF_MAX_PAGES. */
START_TEST(buf_direct_limit)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_ATTACH_BUF, 0);
	struct tg a;

	tg_full(&a, 5);
	r.u.attach_buf.npages = VRDMA_BUF_MAX_PAGES + 1;
	r.u.attach_buf.nlist = VRDMA_BUF_LIST_REFS + 1;
	r.u.attach_buf.writable = 1;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);
	tg_stop(&a);
}
END_TEST

/* Attached pages: VBE_MAX_PAGES past what mem lets the guest register. */
START_TEST(buf_pages_follow_mem)
{
	struct vbe_guest *g;
	struct tg a;

	tg_full(&a, 5);
	g = vbe_node_guest(node, 5, 0);
	ck_assert_ptr_nonnull(g);
	ck_assert_uint_eq(vbe_guest_max_pages(g), VBE_MAX_PAGES + VBE_PRIO_MEM_DEF / 4096);
	g->prio.mem = 8ull << 30;
	ck_assert_uint_eq(vbe_guest_max_pages(g), VBE_MAX_PAGES + (8ull << 30) / 4096);
	tg_stop(&a);
}
END_TEST

START_TEST(buf_cq_order)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_CREATE_CQ, 0);
	struct vplat_share *data;
	struct vrdma_cq_hdr *h;
	char path[256], v[16];
	uint32_t buf, pages = vrdma_cq_pages(18);
	struct tg a;

	tg_full(&a, 5);
	snprintf(path, sizeof(path), "%s/max-cq-order", a.bdir);
	ck_assert_int_eq(vplat_key_read(a.p, path, v, sizeof(v)), 0);
	ck_assert_str_eq(v, "18");
	ck_assert_uint_eq(pages, 1 + 4096);
	ck_assert_int_eq(attach_ind(&a, VRDMA_BUF_MAX_PAGES + 1, I_GOOD, &buf, &data),
			 VRDMA_CS_OK);
	h = vplat_share_addr(data);
	h->magic = VRDMA_WIRE_MAGIC;
	h->order = 19;
	r.u.create_cq.buf = buf;
	r.u.create_cq.order = 19;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_INVAL);
	h->order = 18;
	r.u.create_cq.order = 18;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	tg_stop(&a);
	vplat_unshare(data);
}
END_TEST

TCase *backend_buf_tcase(void)
{
	TCase *t = tcase_create("buf");

	tcase_add_checked_fixture(t, tg_setup, tg_teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, buf_indirect);
	tcase_add_test(t, buf_indirect_nlist);
	tcase_add_test(t, buf_indirect_two);
	tcase_add_test(t, buf_indirect_too_many);
	tcase_add_test(t, buf_direct_limit);
	tcase_add_test(t, buf_pages_follow_mem);
	tcase_add_test(t, buf_cq_order);
	return t;
}
