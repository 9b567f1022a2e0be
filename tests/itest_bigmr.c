// SPDX-License-Identifier: MIT
/*
 * An MR past 4 GiB reached from another node (the cluster rig, suite
 * check): device windows of 64 GiB (backend/device/verbs.h).
 *
 *   itest_bigmr server SERVICE [sparse]   (node b, as VM "bigmr": mem=6G)
 *   itest_bigmr client SERVICE NODE       (node a)
 *
 * The server accepts one connection, then registers an MR of 4 GiB + 8
 * KiB (its vrdmad's ibv_reg_mr pins all of it: the node needs more than
 * 4.5 GiB of RAM) and SENDs its address, rkey and length.  Its vrdmad
 * pins the pages while REG_MR's answer waits (verbs_dev.c, so that the
 * key is in the key table before the guest can hand it out), and
 * libvrdma gives a command 5 s unless VRDMA_CMD_TIMEOUT_MS says more
 * (the rig does: under TCG the pin takes longer): the server writes a
 * byte of every page first, so that the pin only maps pages that exist
 * (on a 2-core host, making 4 GiB of them took 7.8 s, mapping them
 * again 0.35 s).
 * "sparse" leaves that to the pin.  The
 * client RDMA-WRITEs 8000 bytes at 4 GiB + 100 (across a page boundary),
 * READs them back and READs the MR's last 64 bytes, checking every byte;
 * the server then confirms the bytes landed at 4 GiB + 100 and the bytes
 * beside them were not touched.  Prints "ITEST <name> PASS|FAIL ..." per
 * check and exits 0 only if every check passed.  Every wait has a limit.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "vrdma/vrdma.h"
#include "itest_lib.h"

#define T_MS		10000
#define LONG_MS		600000	/* a wait behind 4 GiB made and pinned under QEMU/TCG */
#define GIB		(1ull << 30)
#define BIG		(4 * GIB + 8192)	/* 1048578 pages: indirect */
#define FAR		(4 * GIB + 100)		/* past 4 GiB, across a page */
#define FAR_LEN		8000u
#define END_LEN		64u
#define SEED_FAR	0x64bu
#define SEED_END	0xe4du
#define CTL_LEN		(64u << 10)	/* the control buffer: */
#define OFF_SEND	0u		/*   one message out */
#define OFF_RECV	4096u		/*   NRECV messages in */
#define OFF_DATA	(16u << 10)	/*   WRITE source, READ targets */
#define OFF_BACK	(32u << 10)
#define OFF_END		(48u << 10)
#define NRECV		4

enum { M_INFO = 1, M_CHECK, M_RESULT, M_BYE };

struct msg {
	uint32_t type, rkey;
	uint64_t addr, off, len;
	uint32_t seed;
	int32_t  result;
	uint8_t  pad[24];
};
_Static_assert(sizeof(struct msg) == 64, "one receive slot");

struct ctx {
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	struct vrdma_qp *qp;
	uint8_t *buf;
	struct vrdma_mr *mr;
	struct vrdma_wc held[8];	/* polled, not yet asked for */
	unsigned nheld;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void ctx_init(struct ctx *c)
{
	struct vrdma_qp_init_attr a = { 0 };

	memset(c, 0, sizeof(*c));
	c->dev = vrdma_open(NULL, T_MS);
	if (!c->dev)
		itest_die("vrdma_open", errno);
	c->pd = vrdma_alloc_pd(c->dev);
	c->cq = vrdma_create_cq(c->dev, 64, NULL);
	c->buf = vrdma_alloc_buf(c->dev, CTL_LEN);
	if (!c->pd || !c->cq || !c->buf)
		itest_die("pd, cq, control buffer", errno);
	c->mr = vrdma_reg_mr(c->pd, c->buf, CTL_LEN, VRDMA_ACCESS_LOCAL_WRITE);
	if (!c->mr)
		itest_die("reg_mr control buffer", errno);
	a.send_cq = a.recv_cq = c->cq;
	a.cap = (struct vrdma_qp_cap){ 8, NRECV, 1, 1 };
	c->qp = vrdma_create_qp(c->pd, &a);
	if (!c->qp)
		itest_die("create_qp", errno);
}

static int post_recv(struct ctx *c, unsigned slot)
{
	struct vrdma_sge sge = { (uintptr_t)(c->buf + OFF_RECV + slot * sizeof(struct msg)),
				 sizeof(struct msg), c->mr->lkey };
	struct vrdma_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	return vrdma_post_recv(c->qp, &wr, &bad);
}

static void post_recvs(struct ctx *c)
{
	int err;

	for (unsigned i = 0; i < NRECV; i++)
		if ((err = post_recv(c, i)))
			itest_die("post_recv", err);
}

/* One signaled WR: a SEND of the message at OFF_SEND (len 0), or an RDMA
 * WRITE/READ of len bytes at OFF_* <-> raddr. */
static int post(struct ctx *c, enum vrdma_wr_opcode op, uint64_t id, uint32_t off,
		uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct vrdma_sge sge = { (uintptr_t)(c->buf + off), len, c->mr->lkey };
	struct vrdma_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				    .send_flags = VRDMA_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return vrdma_post_send(c->qp, &wr, &bad);
}

/* Wait up to ms for a receive (recv) or the send WR id: 0 and *out, or
 * ETIMEDOUT / an errno.  Other completions are held for a later call. */
static int wait_wc(struct ctx *c, bool recv, uint64_t id, int ms, struct vrdma_wc *out)
{
	int64_t end = now_ms() + ms;
	struct vrdma_wc wc;
	unsigned i;
	int n;

	for (i = 0; i < c->nheld; i++)
		if ((c->held[i].opcode == VRDMA_WC_RECV_OP) == recv &&
		    (recv || c->held[i].wr_id == id)) {
			*out = c->held[i];
			memmove(c->held + i, c->held + i + 1, (--c->nheld - i) * sizeof(wc));
			return 0;
		}
	for (;;) {
		n = vrdma_poll_cq(c->cq, 1, &wc);
		if (n < 0)
			return errno;
		if (n == 1) {
			if ((wc.opcode == VRDMA_WC_RECV_OP) == recv && (recv || wc.wr_id == id)) {
				*out = wc;
				return 0;
			}
			if (wc.status != VRDMA_WC_SUCCESS || c->nheld == 8) {
				*out = wc;	/* an error ends the wait: the QP is down */
				return wc.status != VRDMA_WC_SUCCESS ? EIO : ENOSPC;
			}
			c->held[c->nheld++] = wc;
			continue;
		}
		if (now_ms() >= end)
			return ETIMEDOUT;
		n = vrdma_wait_cq(c->cq, (int)(end - now_ms() > 0 ? end - now_ms() : 0));
		if (n && n != ETIMEDOUT)
			return n;
	}
}

/* The next message from the peer (its slot reposted), within ms. */
static int recv_msg(struct ctx *c, int ms, struct msg *m)
{
	struct vrdma_wc wc;
	int err = wait_wc(c, true, 0, ms, &wc);

	if (err)
		return err;
	if (wc.status != VRDMA_WC_SUCCESS)
		return EIO;
	memcpy(m, c->buf + OFF_RECV + wc.wr_id * sizeof(*m), sizeof(*m));
	return post_recv(c, (unsigned)wc.wr_id);
}

static int send_msg(struct ctx *c, const struct msg *m, uint64_t id, int ms)
{
	struct vrdma_wc wc;
	int err;

	memcpy(c->buf + OFF_SEND, m, sizeof(*m));
	if ((err = post(c, VRDMA_WR_SEND, id, OFF_SEND, sizeof(*m), 0, 0)))
		return err;
	if ((err = wait_wc(c, false, id, ms, &wc)))
		return err;
	return wc.status == VRDMA_WC_SUCCESS ? 0 : EIO;
}

/* ---------------- server (node b) ---------------- */

/* Every page made to exist before vrdmad pins it: in one system call
 * (Linux >= 5.14), else a byte written per page. */
static void touch(uint8_t *p, uint64_t len)
{
	if (!madvise(p, len, MADV_POPULATE_WRITE))
		return;
	for (uint64_t i = 0; i < len; i += 4096)
		((volatile uint8_t *)p)[i] = 0;
}

static int serve(const char *service, bool sparse)
{
	const int acc = VRDMA_ACCESS_LOCAL_WRITE | VRDMA_ACCESS_REMOTE_WRITE |
			VRDMA_ACCESS_REMOTE_READ;
	struct vrdma_listener *l;
	struct vrdma_conn_req req;
	struct vrdma_mr *big_mr;
	struct msg m, r;
	struct ctx c;
	uint8_t *big;
	int64_t t0;
	int err;

	ctx_init(&c);
	l = vrdma_listen(c.dev, service);
	if (!l)
		itest_die("listen", errno);
	post_recvs(&c);
	itest_report("bigmr-server-ready", true, NULL);
	if ((err = vrdma_get_request(l, &req, 120000)))
		itest_die("get_request", err);
	if ((err = vrdma_accept(l, c.qp, &req, NULL, 0)))
		itest_die("accept", err);

	/* After the connection: the device pins the 4 GiB at the next sync
	 * of this guest's MRs, which must not hold up rdma_cm's handshake. */
	big = vrdma_alloc_buf(c.dev, BIG);
	itest_report("bigmr-server-alloc", big != NULL, "%llu bytes: %s", (unsigned long long)BIG,
		     big ? "ok" : strerror(errno));
	if (!big)
		return 1;
	t0 = now_ms();
	if (!sparse)
		touch(big, BIG);
	itest_fill(big + BIG - END_LEN, END_LEN, SEED_END);
	printf("bigmr: %s in %lld ms\n", sparse ? "sparse" : "every page written",
	       (long long)(now_ms() - t0));
	t0 = now_ms();
	big_mr = vrdma_reg_mr(c.pd, big, BIG, acc);
	itest_report("bigmr-server-reg", big_mr != NULL, "%s in %lld ms (its vrdmad's pin)",
		     big_mr ? "ok" : strerror(errno), (long long)(now_ms() - t0));
	if (!big_mr)
		return 1;
	memset(&m, 0, sizeof(m));
	m.type = M_INFO;
	m.addr = (uintptr_t)big;
	m.len = BIG;
	m.rkey = big_mr->rkey;
	printf("bigmr: MR of %llu bytes at %p, rkey %#x\n", (unsigned long long)BIG,
	       (void *)big, big_mr->rkey);
	t0 = now_ms();
	err = send_msg(&c, &m, 1, LONG_MS);
	itest_report("bigmr-server-info", !err, "%s in %lld ms",
		     err ? strerror(err) : "sent", (long long)(now_ms() - t0));
	while (!err) {
		err = recv_msg(&c, LONG_MS, &m);
		if (err) {
			itest_report("bigmr-server-recv", false, "%s", strerror(err));
			break;
		}
		if (m.type == M_BYE)
			break;
		memset(&r, 0, sizeof(r));
		r.type = M_RESULT;
		if (m.type != M_CHECK || m.off < 1 || m.off > BIG || m.len > BIG - m.off - 1) {
			r.result = -3;
		} else {
			/* The pattern exactly there, its neighbours still 0. */
			int64_t at = itest_bad_byte(big + m.off, m.len, m.seed);

			r.result = at >= 0 ? -1 : big[m.off - 1] || big[m.off + m.len] ? -2 : 0;
			itest_report("bigmr-server-landed", !r.result,
				     "%" PRIu64 " bytes at %#" PRIx64 ": %s", m.len, m.off,
				     !r.result ? "all there, neighbours untouched" :
				     r.result == -1 ? "a byte differs" : "a neighbour changed");
		}
		err = send_msg(&c, &r, 2, LONG_MS);
	}
	vrdma_dereg_mr(big_mr);
	vrdma_close_listener(l);
	if (vrdma_close(c.dev))
		itest_report("bigmr-server-close", false, NULL);
	printf("ITEST bigmr-server-done %s failures=%d\n", itest_failures ? "FAIL" : "PASS",
	       itest_failures);
	return itest_failures ? 1 : 0;
}

/* ---------------- client (node a) ---------------- */

/* One RDMA op and its completion: the status's name, "" if it worked. */
static const char *rdma_op(struct ctx *c, enum vrdma_wr_opcode op, uint64_t id,
			   uint32_t off, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct vrdma_wc wc = { 0 };
	int err = post(c, op, id, off, len, raddr, rkey);

	if (!err)
		err = wait_wc(c, false, id, LONG_MS, &wc);
	if (err == EIO)
		return vrdma_wc_status_str(wc.status);
	if (err)
		return strerror(err);
	return wc.status == VRDMA_WC_SUCCESS ? "" : vrdma_wc_status_str(wc.status);
}

static int client(const char *service, const char *node)
{
	struct ctx c;
	struct msg info, m;
	const char *st;
	int64_t at;
	int err;

	ctx_init(&c);
	post_recvs(&c);
	err = vrdma_connect(c.qp, node, service, NULL, 0, NULL, NULL, T_MS);
	if (err)
		itest_die("connect", err);
	itest_report("bigmr-connect", true, NULL);
	err = recv_msg(&c, LONG_MS, &info);
	itest_report("bigmr-info", !err && info.type == M_INFO && info.len == BIG,
		     "%s, %llu bytes, rkey %#x", err ? strerror(err) : "received",
		     (unsigned long long)info.len, info.rkey);
	if (err || info.type != M_INFO || info.len != BIG)
		return 1;

	itest_fill(c.buf + OFF_DATA, FAR_LEN, SEED_FAR);
	st = rdma_op(&c, VRDMA_WR_RDMA_WRITE, 3, OFF_DATA, FAR_LEN, info.addr + FAR, info.rkey);
	itest_report("bigmr-write", !*st, "%u bytes at 4 GiB + 100: %s", FAR_LEN, *st ? st : "done");
	if (*st)
		return 1;
	st = rdma_op(&c, VRDMA_WR_RDMA_READ, 4, OFF_BACK, FAR_LEN, info.addr + FAR, info.rkey);
	at = *st ? -1 : itest_bad_byte(c.buf + OFF_BACK, FAR_LEN, SEED_FAR);
	itest_report("bigmr-read-back", !*st && at < 0, "%s%s", *st ? st : "every byte",
		     at >= 0 ? " differs" : "");
	if (*st)
		return 1;
	st = rdma_op(&c, VRDMA_WR_RDMA_READ, 5, OFF_END, END_LEN, info.addr + BIG - END_LEN,
		     info.rkey);
	at = *st ? -1 : itest_bad_byte(c.buf + OFF_END, END_LEN, SEED_END);
	itest_report("bigmr-read-end", !*st && at < 0, "the MR's last %u bytes: %s%s", END_LEN,
		     *st ? st : "every byte", at >= 0 ? " differs" : "");
	if (*st)
		return 1;

	memset(&m, 0, sizeof(m));
	m.type = M_CHECK;
	m.off = FAR;
	m.len = FAR_LEN;
	m.seed = SEED_FAR;
	err = send_msg(&c, &m, 6, LONG_MS);
	if (!err)
		err = recv_msg(&c, LONG_MS, &m);
	itest_report("bigmr-landed", !err && m.type == M_RESULT && !m.result,
		     "server says %d%s%s", err ? 0 : m.result, err ? ": " : "",
		     err ? strerror(err) : "");
	memset(&m, 0, sizeof(m));
	m.type = M_BYE;
	if (send_msg(&c, &m, 7, T_MS))
		itest_report("bigmr-bye", false, NULL);
	vrdma_destroy_qp(c.qp);
	if (vrdma_close(c.dev))
		itest_report("bigmr-close", false, NULL);
	printf("ITEST bigmr-client-done %s failures=%d\n", itest_failures ? "FAIL" : "PASS",
	       itest_failures);
	return itest_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if ((argc == 3 || (argc == 4 && !strcmp(argv[3], "sparse"))) &&
	    !strcmp(argv[1], "server"))
		return serve(argv[2], argc == 4);
	if (argc == 4 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3]);
	fprintf(stderr, "usage: itest_bigmr server SERVICE [sparse] | client SERVICE NODE\n");
	return 2;
}
