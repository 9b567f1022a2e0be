// SPDX-License-Identifier: MIT
/*
 * vrdma-verbs-cost: a plain verbs program, built against the installed
 * <infiniband/verbs.h> and using only the standard libibverbs API, for
 * counting what ibv_post_send + ibv_poll_cq cost per work request
 * (scripts/bench-cost.sh runs it through vrdma-run under callgrind).
 *
 *   vrdma-verbs-cost server PATH        listen on the Unix socket PATH
 *   vrdma-verbs-cost client PATH ITERS  ITERS 8-byte RDMA WRITEs to it
 *
 * The client's loop is vrdma-bw's: at most TX_DEPTH WRs outstanding, one
 * in SIG_EVERY signaled, and after every post one ibv_poll_cq of up to
 * POLL_BATCH.  Each WR's post and poll go through vc_post() and vc_poll()
 * and nothing else does (waiting for room, the final drain), so callgrind's
 * --toggle-collect=vc_post --toggle-collect=vc_poll counts exactly one
 * post and one poll per WR, the dispatch through ibv_context.ops
 * included.  Debian's perftest does not: ib_write_bw posts until tx-depth
 * WRs are out and then polls once per round, so how many (mostly empty)
 * polls a WR pays depends on timing; ib_write_lat spins on empty polls
 * until each completion arrives.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define TX_DEPTH	64
#define SIG_EVERY	(TX_DEPTH / 2)
#define POLL_BATCH	16
#define MSG_SIZE	8
#define BUF_SIZE	4096
#define WAIT_S		60	/* longest wait for the peer or a completion */

/* What each side tells the other, over the Unix socket (one machine). */
struct vc_info {
	uint64_t addr;
	uint32_t rkey, qpn, psn;
	uint16_t lid;
	uint8_t gid[16];
};

struct vc {
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf;
	struct vc_info me, peer;
	uint64_t posted, retired;
};

static int vc_fail(const char *what)
{
	fprintf(stderr, "vrdma-verbs-cost: %s: %s\n", what, strerror(errno ? errno : EIO));
	return -1;
}

/* Exactly len bytes, or -1 (the peer closed early: EPIPE). */
static int vc_io(int fd, void *p, size_t len, int out)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = out ? write(fd, (char *)p + done, len - done) :
			  read(fd, (char *)p + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!n)
				errno = EPIPE;
			return -1;
		}
		done += (size_t)n;
	}
	return 0;
}

static int vc_setup(struct vc *v)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { TX_DEPTH, 1, 1, 1, 0 } };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	struct ibv_port_attr pa;
	union ibv_gid gid;

	v->list = ibv_get_device_list(NULL);
	if (!v->list || !v->list[0]) {
		errno = ENODEV;
		return vc_fail("no verbs device");
	}
	v->ctx = ibv_open_device(v->list[0]);
	if (!v->ctx)
		return vc_fail("ibv_open_device");
	if (ibv_query_port(v->ctx, 1, &pa) || ibv_query_gid(v->ctx, 1, 0, &gid))
		return vc_fail("ibv_query_port/gid");
	v->buf = aligned_alloc(BUF_SIZE, BUF_SIZE);
	if (!v->buf)
		return vc_fail("aligned_alloc");
	memset(v->buf, 0, BUF_SIZE);
	v->pd = ibv_alloc_pd(v->ctx);
	if (!v->pd)
		return vc_fail("ibv_alloc_pd");
	v->mr = ibv_reg_mr(v->pd, v->buf, BUF_SIZE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!v->mr)
		return vc_fail("ibv_reg_mr");
	v->cq = ibv_create_cq(v->ctx, TX_DEPTH * 2, NULL, NULL, 0);
	if (!v->cq)
		return vc_fail("ibv_create_cq");
	ia.send_cq = ia.recv_cq = v->cq;
	v->qp = ibv_create_qp(v->pd, &ia);
	if (!v->qp)
		return vc_fail("ibv_create_qp");
	errno = ibv_modify_qp(v->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			      IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (errno)
		return vc_fail("ibv_modify_qp INIT");
	v->me.addr = (uintptr_t)v->buf;
	v->me.rkey = v->mr->rkey;
	v->me.qpn = v->qp->qp_num;
	v->me.psn = 0;
	v->me.lid = pa.lid;
	memcpy(v->me.gid, gid.raw, sizeof(v->me.gid));
	return 0;
}

/* INIT -> RTR -> RTS towards the peer (by GID: RoCE, the port's only kind). */
static int vc_connect(struct vc *v)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = v->peer.qpn, .rq_psn = v->peer.psn,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .dlid = v->peer.lid, .port_num = 1,
			     .grh = { .hop_limit = 1, .sgid_index = 0 } },
	};

	memcpy(a.ah_attr.grh.dgid.raw, v->peer.gid, sizeof(v->peer.gid));
	errno = ibv_modify_qp(v->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (errno)
		return vc_fail("ibv_modify_qp RTR");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				  .rnr_retry = 7, .sq_psn = v->me.psn, .max_rd_atomic = 1 };
	errno = ibv_modify_qp(v->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (errno)
		return vc_fail("ibv_modify_qp RTS");
	return 0;
}

static void vc_teardown(struct vc *v)
{
	if (v->qp && ibv_destroy_qp(v->qp))
		fprintf(stderr, "vrdma-verbs-cost: ibv_destroy_qp failed\n");
	if (v->cq && ibv_destroy_cq(v->cq))
		fprintf(stderr, "vrdma-verbs-cost: ibv_destroy_cq failed\n");
	if (v->mr && ibv_dereg_mr(v->mr))
		fprintf(stderr, "vrdma-verbs-cost: ibv_dereg_mr failed\n");
	if (v->pd && ibv_dealloc_pd(v->pd))
		fprintf(stderr, "vrdma-verbs-cost: ibv_dealloc_pd failed\n");
	if (v->ctx && ibv_close_device(v->ctx))
		fprintf(stderr, "vrdma-verbs-cost: ibv_close_device failed\n");
	if (v->list)
		ibv_free_device_list(v->list);
	free(v->buf);
}

/* The two calls counted: kept out of line so callgrind can name them. */
static __attribute__((noinline)) int vc_post(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	return ibv_post_send(qp, wr, &bad);
}

static __attribute__((noinline)) int vc_poll(struct ibv_cq *cq, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq, POLL_BATCH, wc);
}

/* n completions from wc: each signaled WR retires the ones before it. */
static int vc_reap(struct vc *v, const struct ibv_wc *wc, int n)
{
	int i;

	if (n < 0) {
		errno = EIO;
		return vc_fail("ibv_poll_cq");
	}
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "vrdma-verbs-cost: WR %llu: %s\n",
				(unsigned long long)wc[i].wr_id, ibv_wc_status_str(wc[i].status));
			return -1;
		}
		v->retired = wc[i].wr_id;
	}
	return 0;
}

/* Poll (uncounted) until at most left WRs are outstanding. */
static int vc_wait(struct vc *v, uint64_t left)
{
	struct ibv_wc wc[POLL_BATCH];
	time_t end = time(NULL) + WAIT_S;

	while (v->posted - v->retired > left) {
		if (vc_reap(v, wc, ibv_poll_cq(v->cq, POLL_BATCH, wc)))
			return -1;
		if (time(NULL) > end) {
			errno = ETIMEDOUT;
			return vc_fail("waiting for completions");
		}
	}
	return 0;
}

static int vc_run(struct vc *v, uint64_t iters)
{
	struct ibv_sge sge = { (uintptr_t)v->buf, MSG_SIZE, v->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .wr.rdma = { v->peer.addr, v->peer.rkey } };
	struct ibv_wc wc[POLL_BATCH];
	uint64_t i;

	for (i = 1; i <= iters; i++) {
		if (v->posted - v->retired >= TX_DEPTH && vc_wait(v, TX_DEPTH - 1))
			return -1;
		/* wr_id is the WR's number: a completion retires up to it */
		wr.wr_id = i;
		wr.send_flags = i % SIG_EVERY == 0 || i == iters ? IBV_SEND_SIGNALED : 0;
		errno = vc_post(v->qp, &wr);
		if (errno)
			return vc_fail("ibv_post_send");
		v->posted = i;
		if (vc_reap(v, wc, vc_poll(v->cq, wc)))
			return -1;
	}
	return vc_wait(v, 0);
}

static int vc_sock(const char *path, struct sockaddr_un *sa)
{
	int fd;

	if (strlen(path) >= sizeof(sa->sun_path)) {
		errno = ENAMETOOLONG;
		return vc_fail(path);
	}
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	strcpy(sa->sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return vc_fail("socket");
	return fd;
}

/* The server's side: accept one client, connect, wait until it is done. */
static int vc_serve(struct vc *v, const char *path)
{
	struct sockaddr_un sa;
	int lfd, fd = -1, rc = -1;
	char c = 'r';

	lfd = vc_sock(path, &sa);
	if (lfd < 0)
		return -1;
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1)) {
		vc_fail(path);
		goto out_lfd;
	}
	printf("listening on %s\n", path);
	if (fflush(stdout))
		goto out_unlink;
	fd = accept(lfd, NULL, NULL);
	if (fd < 0) {
		vc_fail("accept");
		goto out_unlink;
	}
	if (vc_io(fd, &v->peer, sizeof(v->peer), 0) || vc_io(fd, &v->me, sizeof(v->me), 1)) {
		vc_fail("exchange");
		goto out_fd;
	}
	if (vc_connect(v))
		goto out_fd;
	/* ready: the client may write; its close says it is done */
	if (vc_io(fd, &c, 1, 1) || vc_io(fd, &c, 1, 0)) {
		vc_fail("client");
		goto out_fd;
	}
	rc = 0;
out_fd:
	close(fd);
out_unlink:
	unlink(path);
out_lfd:
	close(lfd);
	return rc;
}

static int vc_client(struct vc *v, const char *path, uint64_t iters)
{
	struct sockaddr_un sa;
	int fd, rc = -1;
	char c;

	fd = vc_sock(path, &sa);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		vc_fail(path);
		goto out;
	}
	if (vc_io(fd, &v->me, sizeof(v->me), 1) || vc_io(fd, &v->peer, sizeof(v->peer), 0)) {
		vc_fail("exchange");
		goto out;
	}
	if (vc_connect(v))
		goto out;
	if (vc_io(fd, &c, 1, 0)) {
		vc_fail("server");
		goto out;
	}
	if (vc_run(v, iters))
		goto out;
	c = 'd';
	if (vc_io(fd, &c, 1, 1)) {
		vc_fail("server");
		goto out;
	}
	printf("%s: %llu RDMA WRITEs of %d bytes\n", ibv_get_device_name(v->list[0]),
	       (unsigned long long)iters, MSG_SIZE);
	rc = 0;
out:
	close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	static struct vc v;
	unsigned long long iters = 0;
	char *end;
	int server, rc;

	server = argc == 3 && !strcmp(argv[1], "server");
	if (argc == 4 && !strcmp(argv[1], "client")) {
		errno = 0;
		iters = strtoull(argv[3], &end, 10);
		if (errno || *end || !iters || argv[3][0] == '-')
			iters = 0;
	}
	if (!server && !iters) {
		fprintf(stderr, "usage: vrdma-verbs-cost server PATH\n"
				"       vrdma-verbs-cost client PATH ITERS\n");
		return 2;
	}
	rc = vc_setup(&v);
	if (!rc)
		rc = server ? vc_serve(&v, argv[2]) : vc_client(&v, argv[2], iters);
	vc_teardown(&v);
	return rc ? 1 : 0;
}
