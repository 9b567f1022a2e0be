/* SPDX-License-Identifier: MIT */
/*
 * Fake guests for the backend's Check suites: each one shares a device
 * area, runs the handshake through the stub platform's keys, and writes
 * raw requests into its ring (see test_backend.c).
 */
#ifndef VRDMA_BACKEND_TG_H
#define VRDMA_BACKEND_TG_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>

#include "vrdma/wire.h"
#include "vring.h"
#include "stub_plat.h"
#include "../backend/backend.h"

#define BUF_PAGES	16
#define CQ_ORDER	6
#define DATA_OFF	(2 * VRDMA_PAGE_SIZE)	/* pages 0-1 hold the CQ */
#define IOVA		0x10000000ull
#define DEPTH		16

/* One fake guest: its shared pages, ring indexes, and standard objects. */
struct tg {
	uint32_t domid;
	struct vplat *p;
	char fdir[128], bdir[128];
	struct vplat_share *dev, *data, *list;
	struct vrdma_sring *sr;
	struct vrdma_req *req;
	struct vrdma_evt *evt;
	struct vplat_chan *ch;
	uint32_t req_prod, evt_cons;
	uint8_t *mem;
	uint32_t buf, pd, cq, mr, key, qp, qpn;
	struct vrdma_cq_hdr *cqh;
	struct vrdma_cqe *cqe;
	uint32_t cq_cons;
	struct vrdma_evt done;
	struct vrdma_evt async[64];
	unsigned nasync;
	uint64_t next_id;
};

/* Handshake variants: good, or one thing wrong. */
enum hs { HS_GOOD, HS_BADVER, HS_BADPAGES, HS_BADREF, HS_BADMAGIC, HS_BIGORDER,
	  HS_SCATTER /* the area's pages every other page of a share: a mapping each */ };

/* dom0's platform and the node under test (tg_setup / tg_teardown). */
extern struct vplat *dom0;
extern struct vbe_node *node;
/* tg_handshake writes feature-conn-from (issue 12) when set. */
extern bool tg_conn_from;

void tg_setup(void);
void tg_teardown(void);
int back_state(struct tg *g);
void tg_start(struct tg *g, uint32_t domid);
void fkey(struct tg *g, const char *key, unsigned v);
void tg_handshake(struct tg *g, enum hs how);
void tg_stop(struct tg *g);
void tg_push(struct tg *g, const struct vrdma_req *r);
void tg_events(struct tg *g);
void pump(struct tg **gs, unsigned n);
int tg_cmd(struct tg *g, struct vrdma_req *r, uint32_t *out);
struct vrdma_req mkreq(uint8_t op, uint32_t handle);
int tg_attach(struct tg *g, uint32_t npages, uint32_t *buf);
int tg_reg_mr(struct tg *g, uint64_t off, uint64_t len, uint32_t acc, uint32_t *out);
int tg_create_qp(struct tg *g, uint32_t cq, uint32_t *out);
void tg_full(struct tg *g, uint32_t domid);
int tg_poll_cq(struct tg *g, struct vrdma_cqe *c);
void tg_connect(struct tg *a, struct tg *b);
struct vrdma_req mkwr(struct tg *g, uint8_t op, uint16_t flags, uint64_t id);
void add_sge(struct vrdma_req *r, uint64_t off, uint32_t len, uint32_t key);
void post(struct tg *g, struct vrdma_req *r);
struct vrdma_cqe expect_cqe(struct tg *g, uint64_t id, uint8_t status);
void expect_no_cqe(struct tg *g);
void write_works(struct tg *a, struct tg *b);
void node_gid(struct tg *g, uint8_t gid[16]);
/* A UD QP of g (on SRQ srq if not 0) in RTS with qkey; *qpn its number. */
uint32_t tg_ud_qp(struct tg *g, uint32_t srq, uint32_t qkey, uint32_t *qpn);
/* Into g's ring, not read: a receive of len bytes at off of g's buffer;
 * a signaled datagram of len bytes at DATA_OFF to (gid, qpn, qkey). */
void tg_push_recv(struct tg *g, uint32_t qp, uint64_t id, uint64_t off, uint32_t len);
void tg_push_ud(struct tg *g, uint32_t qp, uint64_t id, uint32_t len, const uint8_t gid[16],
		uint32_t qpn, uint32_t qkey);
/* g as tg_full, of `tenant` (NULL: its domain); its buffer's first npages
 * attached once more; a tenant's limit written as an operator would. */
void tg_tenant(struct tg *g, uint32_t domid, const char *tenant);
int  tg_reattach(struct tg *g, uint32_t npages, uint32_t *buf);
void tenant_limit(const char *tenant, const char *key, unsigned v);
/* Events of g counted by tg_drain(): read until two polls bring nothing. */
struct tally {
	unsigned conn_req, qp_error, rejected, refused;
	uint32_t qp_error_handle;
};
void tg_drain(struct tg *g, struct tally *t);
int  tg_connect_to(struct tg *g, uint32_t qp, const char *svc);
int  tg_listen_on(struct tg *g, const char *svc, uint32_t *lis);
/* Every QP of g (its own plus n - 1 new ones) connects to svc: want. */
void tg_flood(struct tg *g, unsigned n, const char *svc, int want);
/* One control command's answer, as vrdmad sends it: tg_out() opens it
 * (text or JSON) for the backend call, tg_out_end() puts the response
 * (or "error: ...") in buf. */
struct vout *tg_out(bool json);
void tg_out_end(char *buf, size_t len);

/* test_backend_bad.c, test_backend_fair.c, test_backend_keys.c */
TCase *backend_bad_tcase(void);
TCase *backend_fair_tcase(void);
TCase *backend_keys_tcase(void);
TCase *backend_policy_tcase(void);
TCase *backend_share_tcase(void);
TCase *backend_ud_tcase(void);			/* test_backend_ud.c */
TCase *backend_udnode_tcase(void);		/* test_backend_udnode.c */
TCase *backend_udahead_tcase(void);		/* test_backend_udahead.c */
TCase *backend_coll_tcase(void);		/* test_backend_coll.c */
TCase *backend_collsw_tcase(void);		/* test_backend_collsw.c */
TCase *backend_chain_tcase(void);		/* test_backend_chain.c */
TCase *backend_chainbad_tcase(void);		/* test_backend_chainbad.c */
TCase *backend_collbad_tcase(void);		/* test_backend_collbad.c */
TCase *backend_sge_tcase(void);
TCase *backend_buf_tcase(void);			/* test_backend_buf.c */			/* test_backend_sge.c */		/* test_backend_share.c */

#endif /* VRDMA_BACKEND_TG_H */
