#!/bin/bash
# SPDX-License-Identifier: MIT
# Debian's own, unmodified verbs programs (ibverbs-utils, perftest) on
# vrdma's libibverbs through build/bin/vrdma-run, against a private vrdmad.
# One case per program run: VRDMA-TEST verbs-<name> PASS|FAIL, then
# "N passed, N failed".  Cases in PENDING wait for a libvrdma/backend
# change (named beside them): they report XFAIL instead of FAIL, and
# XPASS (counted as passed) once they work -- then drop them from PENDING.
# Usage: tests/verbs.sh BUILD_DIR [CASE...]
set -u
. "$(dirname "$0")/vprog-lib.sh"
vp_init verbs "${1:-build}" libibverbs.so.1 ibv_devinfo ibv_rc_pingpong ib_write_bw
shift || true
ONLY="$*"
T=60					# seconds any one program may take
pass=0 fail=0 xfail=0

# case -> what it waits for (a change in the core, named here); none now
declare -A PENDING=(
)

report() {
	local name=$1 ok=$2 out=$3
	if [ "$ok" = 1 ]; then
		if [ -n "${PENDING[$name]:-}" ]; then
			echo "VRDMA-TEST verbs-$name PASS (XPASS)"
		else
			echo "VRDMA-TEST verbs-$name PASS"
		fi
		pass=$((pass + 1))
		return
	fi
	echo "---- $name output:"; grep "^== " "$out"; tail -n 25 "$out"
	if [ -n "${PENDING[$name]:-}" ]; then
		echo "VRDMA-TEST verbs-$name XFAIL (pending: ${PENDING[$name]})"
		xfail=$((xfail + 1))
	else
		echo "VRDMA-TEST verbs-$name FAIL"
		fail=$((fail + 1))
	fi
}

# single NAME PATTERN PROGRAM ARGS...: one program, output must match.
single() {
	local name=$1 pat=$2; shift 2
	want "$name" || return 0
	local out=$RUN/$name.out ok=0
	timeout $T "$VR" "$@" >"$out" 2>&1 && grep -Eq "$pat" "$out" && ok=1
	report "$name" $ok "$out"
}

PORT=19100
# pair NAME PATTERN PROGRAM ARGS...: server, then client to 127.0.0.1;
# both must exit 0 and the client's output match PATTERN.
pair() {
	local name=$1 pat=$2 prog=$3
	shift 3
	vp_pair "$name" "$pat" "$prog -p @P@ $*" "$prog -p @P@ $* 127.0.0.1"
}

start_daemon || exit 1
echo "vrdmad up, pid $DPID"

BW='^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+'
LAT='^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+'
PT="-x 0 -n 1000 -s 4096"

single devinfo "hca_id:[[:space:]]+vrdma0" ibv_devinfo
single devinfo_v "GID\[ *0\]:.*RoCE v2" ibv_devinfo -v
pair rc_pingpong "iters in" ibv_rc_pingpong -g 0 -n 1000
pair rc_pingpong_events "iters in" ibv_rc_pingpong -g 0 -n 1000 -e
pair write_bw "$BW" ib_write_bw $PT
pair write_bw_old "$BW" ib_write_bw $PT --use_old_post_send
pair write_bw_all "$BW" ib_write_bw -x 0 -a -n 200
# perftest posts through ibv_wr_* only on devices it knows: borrow a
# ConnectX-5 part number for the ibv_qp_ex path.
VRDMA_VERBS_PART_ID=4119 pair write_bw_wr "ibv_wr\* API +: ON" ib_write_bw $PT
VRDMA_VERBS_PART_ID=4119 pair send_bw_wr "$BW" ib_send_bw $PT
pair write_bw_inline "$BW" ib_write_bw -x 0 -n 1000 -s 64 -I 64
pair read_bw "$BW" ib_read_bw $PT
pair send_bw "$BW" ib_send_bw $PT
pair send_bw_events "$BW" ib_send_bw $PT -e
pair atomic_bw "$BW" ib_atomic_bw -x 0 -n 1000
pair write_lat "$LAT" ib_write_lat $PT
pair send_lat "$LAT" ib_send_lat $PT
pair send_lat_events "$LAT" ib_send_lat $PT -e
# unreliable datagrams between two guests of the node: by LID (the
# default: no GRH in the address, this node) and by GID
pair ud_pingpong "iters in" ibv_ud_pingpong -n 1000
pair ud_pingpong_gid "iters in" ibv_ud_pingpong -g 0 -n 1000 -s 4096
# While a long ud_pingpong runs, vrdmactl stats counts the datagrams on
# both guests (ud_tx and ud_rx above 0; no drops by LID or by GID).
ud_counters() {
	want ud_counters || return 0
	local out=$RUN/ud_counters.out sp cp src crc n ok=0
	PORT=$((PORT + 1))
	timeout $T "$VR" ibv_ud_pingpong -p $PORT -n 50000 >"$RUN/udc.srv" 2>&1 &
	sp=$!
	for _ in $(seq 200); do
		listening $PORT && break
		kill -0 $sp 2>/dev/null || break
		sleep 0.05
	done
	timeout $T "$VR" ibv_ud_pingpong -p $PORT -n 50000 127.0.0.1 >"$RUN/udc.cli" 2>&1 &
	cp=$!
	: >"$out"
	for _ in $(seq 400); do
		LD_PRELOAD= ctl -j stats >"$RUN/udc.json" 2>&1
		# the guests' counters, not the node's totals before them
		n=$(sed 's/.*"guests"://' "$RUN/udc.json" | grep -Eo '"ud_(tx|rx)": *[1-9][0-9]*' | wc -l)
		[ "$n" -ge 4 ] && { ok=1; break; }
		kill -0 $cp 2>/dev/null || break
		sleep 0.05
	done
	LD_PRELOAD= ctl stats >>"$out" 2>&1
	wait $cp; crc=$?
	wait $sp; src=$?
	{ echo "== server (exit $src)"; cat "$RUN/udc.srv";
	  echo "== client (exit $crc)"; cat "$RUN/udc.cli"; } >>"$out"
	[ $src -eq 0 ] && [ $crc -eq 0 ] && grep -q "iters in" "$RUN/udc.cli" || ok=0
	report ud_counters $ok "$out"
}
ud_counters

# shared receive queues: 16 QPs (the default) and 4 on one SRQ, events
pair srq_pingpong "iters in" ibv_srq_pingpong -g 0 -n 100
pair srq_pingpong_q4 "iters in" ibv_srq_pingpong -g 0 -n 1000 -q 4
pair srq_pingpong_events "iters in" ibv_srq_pingpong -g 0 -n 1000 -q 16 -r 4000 -e

# build NAME: compile $RUN/NAME.c (with vp.h) against the installed
# <infiniband/verbs.h>.
build() {
	LD_PRELOAD= ${CC:-cc} -I"$RUN" -o "$RUN/$1" "$RUN/$1.c" -libverbs >"$RUN/$1.out" 2>&1 ||
		{ report "$1" 0 "$RUN/$1.out"; return 1; }
}

# The setup of the small programs below: the first device, a PD, a
# 64-byte registered buffer, a CQ; RC QPs on it moved by vp_to().
cat >"$RUN/vp.h" <<'EOF_C'
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>

struct vp {
	struct ibv_device **l;
	struct ibv_context *c;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_sge sge;
	char buf[64];
};

static int vp_open(struct vp *v, int cqe)
{
	v->l = ibv_get_device_list(NULL);
	v->c = v->l && v->l[0] ? ibv_open_device(v->l[0]) : NULL;
	v->pd = v->c ? ibv_alloc_pd(v->c) : NULL;
	v->mr = v->pd ? ibv_reg_mr(v->pd, v->buf, sizeof(v->buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	v->cq = v->mr ? ibv_create_cq(v->c, cqe, NULL, NULL, 0) : NULL;
	v->sge = (struct ibv_sge){ (uintptr_t)v->buf, sizeof(v->buf), v->mr ? v->mr->lkey : 0 };
	if (!v->cq)
		perror("setup");
	return v->cq ? 0 : -1;
}

static struct ibv_qp *vp_qp(struct vp *v, uint32_t nsend, uint32_t nrecv)
{
	struct ibv_qp_init_attr ia = { .send_cq = v->cq, .recv_cq = v->cq,
				       .qp_type = IBV_QPT_RC, .cap = { nsend, nrecv, 1, 1, 0 } };

	return ibv_create_qp(v->pd, &ia);
}

static int vp_to(struct ibv_qp *qp, enum ibv_qp_state st)
{
	struct ibv_qp_attr a = { .qp_state = st, .port_num = 1 };

	return ibv_modify_qp(qp, &a, st == IBV_QPS_INIT ? IBV_QP_STATE | IBV_QP_PORT |
			     IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS : IBV_QP_STATE);
}

static void vp_close(struct vp *v)
{
	ibv_destroy_cq(v->cq);
	ibv_dereg_mr(v->mr);
	ibv_dealloc_pd(v->pd);
	ibv_close_device(v->c);
	ibv_free_device_list(v->l);
}
EOF_C

# Posting to a QP in ERR succeeds and the WRs flush (as mlx5); no Debian
# program does it, so a small one built here.
if want post_err; then
	cat >"$RUN/post_err.c" <<'EOF_C'
/* Posting to a QP in ERR: both calls succeed, both WRs complete
 * IBV_WC_WR_FLUSH_ERR (as mlx5).  Prints "flushed 2" on success. */
#include <time.h>
#include "vp.h"

int main(void)
{
	static struct vp v;
	struct ibv_qp *qp = vp_open(&v, 8) ? NULL : vp_qp(&v, 4, 4);
	struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = &v.sge, .num_sge = 1 }, *br;
	struct ibv_send_wr sw = { .wr_id = 2, .sg_list = &v.sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bs;
	struct ibv_wc wc[8];
	int got = 0, n, i, rc;
	time_t end;

	if (!qp || vp_to(qp, IBV_QPS_INIT)) {
		perror("setup");
		return 1;
	}
	if (vp_to(qp, IBV_QPS_ERR)) {
		perror("modify to ERR");
		return 1;
	}
	rc = ibv_post_recv(qp, &rw, &br);
	if (!rc)
		rc = ibv_post_send(qp, &sw, &bs);
	if (rc) {
		fprintf(stderr, "post in ERR: %d\n", rc);
		return 1;
	}
	for (end = time(NULL) + 5; got < 2 && time(NULL) < end; got += n) {
		n = ibv_poll_cq(v.cq, 4, wc + got);
		if (n < 0 || got + n > 2)
			return 1;
		for (i = got; i < got + n; i++)
			if (wc[i].status != IBV_WC_WR_FLUSH_ERR || wc[i].qp_num != qp->qp_num)
				return 1;
	}
	printf("flushed %d\n", got);
	ibv_destroy_qp(qp);
	vp_close(&v);
	return got == 2 ? 0 : 1;
}
EOF_C
	build post_err && single post_err "^flushed 2$" "$RUN/post_err"
fi

# Async events: QPs deeper than their CQ are allowed (verbs); a flush
# that overruns the CQ is IBV_EVENT_CQ_ERR for it and IBV_EVENT_QP_FATAL
# for the other QP on it; async_fd polls readable; O_NONBLOCK is EAGAIN.
if want async_cq_err; then
	cat >"$RUN/async_cq_err.c" <<'EOF_C'
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include "vp.h"

#define NR 1200		/* receives flushed: more than the CQ holds */

int main(void)
{
	static struct vp v;
	struct ibv_qp *qa = vp_open(&v, 16) ? NULL : vp_qp(&v, 1, NR);
	struct ibv_qp *qb = qa ? vp_qp(&v, 1, 4) : NULL;
	struct ibv_recv_wr rw = { .sg_list = &v.sge, .num_sge = 1 }, *br;
	struct ibv_context *c = v.c;
	struct ibv_async_event ev;
	struct pollfd p;
	struct ibv_wc wc[64];
	int i, n, fl, polled = 0;

	if (!qb || vp_to(qa, IBV_QPS_INIT) || vp_to(qb, IBV_QPS_INIT)) {
		perror("setup");
		return 1;
	}
	printf("cq of %d, QP with %d receives\n", v.cq->cqe, NR);
	fl = fcntl(c->async_fd, F_GETFL);
	fcntl(c->async_fd, F_SETFL, fl | O_NONBLOCK);
	if (ibv_get_async_event(c, &ev) != -1 || errno != EAGAIN) {
		fprintf(stderr, "non-blocking with nothing queued: not EAGAIN\n");
		return 1;
	}
	fcntl(c->async_fd, F_SETFL, fl);
	for (i = 0; i < NR; i++)
		if (ibv_post_recv(qa, &rw, &br)) {
			perror("post_recv");
			return 1;
		}
	if (vp_to(qa, IBV_QPS_ERR))
		return 1;
	/* Polling consumes what dom0 sent, events included. */
	while ((n = ibv_poll_cq(v.cq, 64, wc)) > 0)
		polled += n;
	p = (struct pollfd){ .fd = c->async_fd, .events = POLLIN };
	if (poll(&p, 1, 5000) != 1) {
		fprintf(stderr, "async_fd not readable\n");
		return 1;
	}
	for (i = 0; i < 2; i++) {
		if (ibv_get_async_event(c, &ev)) {
			perror("ibv_get_async_event");
			return 1;
		}
		printf("event %s", ibv_event_type_str(ev.event_type));
		if (ev.event_type == IBV_EVENT_CQ_ERR)
			printf(" cq %s", ev.element.cq == v.cq ? "ours" : "WRONG");
		if (ev.event_type == IBV_EVENT_QP_FATAL)
			printf(" qp %s", ev.element.qp == qb ? "ours" : "WRONG");
		printf("\n");
		ibv_ack_async_event(&ev);
	}
	printf("polled %d of %d\n", polled, NR);
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	vp_close(&v);
	return 0;
}
EOF_C
	if build async_cq_err; then
		out=$RUN/async_cq_err.out ok=0
		timeout $T "$VR" "$RUN/async_cq_err" >"$out" 2>&1 &&
			grep -q "^event CQ error cq ours$" "$out" &&
			grep -q "^event local work queue catastrophic error qp ours$" "$out" && ok=1
		report async_cq_err $ok "$out"
	fi
fi

# UD through vrdma's verbs, what ibv_ud_pingpong does not try: a QP in
# RTR receives, a controlled Q_Key is EPERM, ibv_init_ah_from_wc answers
# the sender and refuses a GRH whose DGID is not a GID of the port, a
# send error (past the MTU) leaves the QP in ERR.
if want ud_verbs; then
	cat >"$RUN/ud_verbs.c" <<'EOF_C'
#include <errno.h>
#include <string.h>
#include <time.h>
#include "vp.h"

#define QKEY	0x11111111u
#define MSG	"ud through verbs"
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); return 1; } while (0)

static struct ibv_qp *ud_qp(struct vp *v)
{
	struct ibv_qp_init_attr ia = { .send_cq = v->cq, .recv_cq = v->cq,
				       .qp_type = IBV_QPT_UD, .cap = { 4, 4, 1, 1, 0 } };

	return ibv_create_qp(v->pd, &ia);
}

static int ud_to(struct ibv_qp *qp, enum ibv_qp_state st)
{
	struct ibv_qp_attr a = { .qp_state = st, .port_num = 1, .qkey = QKEY };

	return ibv_modify_qp(qp, &a, st == IBV_QPS_INIT ? IBV_QP_STATE | IBV_QP_PORT |
			     IBV_QP_PKEY_INDEX | IBV_QP_QKEY :
			     st == IBV_QPS_RTS ? IBV_QP_STATE | IBV_QP_SQ_PSN : IBV_QP_STATE);
}

/* One completion of cq in wc within 5 s, or -1. */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	time_t end = time(NULL) + 5;
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0 && time(NULL) < end)
		;
	return n == 1 ? 0 : -1;
}

int main(void)
{
	static struct vp v;
	static char buf[8192];
	struct ibv_ah_attr aa = { .port_num = 1 };
	struct ibv_qp_attr qk = { .qkey = 0x80000000u | QKEY };
	struct ibv_qp_init_attr ia;
	struct ibv_sge rs = { 0 }, ss = { 0 };
	struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 }, *br;
	struct ibv_send_wr sw = { .wr_id = 2, .sg_list = &ss, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bs;
	struct ibv_wc wc, got = { 0 };
	struct ibv_qp *qa = NULL, *qb = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_ah *ah = NULL;
	struct ibv_port_attr pa;
	struct ibv_grh grh;
	int rc, i;

	if (!vp_open(&v, 16))
		mr = ibv_reg_mr(v.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (mr)
		qa = ud_qp(&v);
	if (qa)
		qb = ud_qp(&v);
	if (!qb || ud_to(qa, IBV_QPS_INIT) || ud_to(qa, IBV_QPS_RTR) || ud_to(qa, IBV_QPS_RTS) ||
	    ud_to(qb, IBV_QPS_INIT) || ud_to(qb, IBV_QPS_RTR))
		FAIL("setup: %s", strerror(errno));
	/* No RDMA device for vrdmad here: datagrams of 4096 bytes go anywhere. */
	if (ibv_query_port(v.c, 1, &pa) || pa.active_mtu != IBV_MTU_4096)
		FAIL("active_mtu %d, not IBV_MTU_4096", (int)pa.active_mtu);
	/* A controlled Q_Key, as for a kernel verbs program without CAP_NET_RAW. */
	rc = ibv_modify_qp(qa, &qk, IBV_QP_QKEY);
	if (rc != EPERM)
		FAIL("controlled Q_Key: %d, not EPERM", rc);
	printf("controlled qkey EPERM\n");
	/* qb is in RTR: it receives (its receive is on the ring before the send). */
	rs = (struct ibv_sge){ (uintptr_t)buf, 256, mr->lkey };
	ss = (struct ibv_sge){ (uintptr_t)buf + 4096, sizeof(MSG) - 1, mr->lkey };
	memcpy(buf + 4096, MSG, sizeof(MSG) - 1);
	ah = ibv_create_ah(v.pd, &aa);
	if (!ah)
		FAIL("create_ah: %s", strerror(errno));
	sw.wr.ud.ah = ah;
	sw.wr.ud.remote_qpn = qb->qp_num;
	sw.wr.ud.remote_qkey = QKEY;
	if (ibv_post_recv(qb, &rw, &br) || ibv_post_send(qa, &sw, &bs))
		FAIL("post: %s", strerror(errno));
	for (i = 0; i < 2; i++) {
		if (wait_wc(v.cq, &wc) || wc.status != IBV_WC_SUCCESS)
			FAIL("completion %d missing or failed", i);
		if (wc.wr_id == 1)
			got = wc;
	}
	if (got.wr_id != 1 || !(got.wc_flags & IBV_WC_GRH) || got.qp_num != qb->qp_num ||
	    got.src_qp != qa->qp_num || got.byte_len != 40 + sizeof(MSG) - 1 ||
	    memcmp(buf + 40, MSG, sizeof(MSG) - 1))
		FAIL("the datagram to the QP in RTR");
	printf("received in RTR\n");
	/* The answer's address names the sender; the GRH's DGID must be ours. */
	memcpy(&grh, buf, sizeof(grh));
	if (ibv_init_ah_from_wc(v.c, 1, &got, &grh, &aa) || !aa.is_global ||
	    aa.grh.sgid_index != 0 || memcmp(&aa.grh.dgid, &grh.sgid, sizeof(grh.sgid)))
		FAIL("init_ah_from_wc: %s", strerror(errno));
	grh.dgid.raw[15] ^= 1;
	errno = 0;
	rc = ibv_init_ah_from_wc(v.c, 1, &got, &grh, &aa);
	if (rc != -1 || errno != EINVAL)
		FAIL("init_ah_from_wc, a DGID not ours: %d (%s)", rc, strerror(errno));
	if (ibv_create_ah_from_wc(v.pd, &got, &grh, 1) || errno != EINVAL)
		FAIL("create_ah_from_wc, a DGID not ours");
	printf("init_ah_from_wc: DGID not ours EINVAL\n");
	/* Past the MTU: IBV_WC_LOC_LEN_ERR, the QP in ERR (IB: SQE). */
	ss = (struct ibv_sge){ (uintptr_t)buf, 4097, mr->lkey };
	sw.wr_id = 3;
	if (ibv_post_send(qa, &sw, &bs) || wait_wc(v.cq, &wc) || wc.wr_id != 3 ||
	    wc.status != IBV_WC_LOC_LEN_ERR)
		FAIL("a datagram past the MTU");
	if (ibv_query_qp(qa, &qk, IBV_QP_STATE, &ia) || qk.qp_state != IBV_QPS_ERR)
		FAIL("QP after a send error: state %d", qk.qp_state);
	printf("send error: QP in ERR\n");
	ibv_destroy_ah(ah);
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_dereg_mr(mr);
	vp_close(&v);
	printf("ud ok\n");
	return 0;
}
EOF_C
	build ud_verbs && single ud_verbs "^ud ok$" "$RUN/ud_verbs"
fi

# every guest gone from vrdmad once the programs exited
vp_leaks

# A program that only calls ibv_poll_cq while vrdmad is killed (issue 12):
# ibv_poll_cq < 0 soon (dom0_live, docs/wire.md), then DEVICE_FATAL.
if want poll_fatal; then
	cat >"$RUN/poll_fatal.c" <<'EOF_C'
#include <time.h>
#include <unistd.h>
#include "vp.h"

static long long ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	static struct vp v;
	struct ibv_async_event ev;
	struct ibv_wc wc;
	long long end, t0 = 0;
	int n = 0;

	if (argc != 2 || vp_open(&v, 8))
		return 1;
	printf("polling\n");
	fflush(stdout);
	end = ms() + 30000;
	while (n == 0 && ms() < end) {
		if (!t0 && access(argv[1], F_OK) == 0)
			t0 = ms();	/* the kill is next */
		n = ibv_poll_cq(v.cq, 1, &wc);
	}
	if (n >= 0)
		return 1;
	printf("ibv_poll_cq %d, %lld ms after the kill\n", n, t0 ? ms() - t0 : -1);
	if (ibv_get_async_event(v.c, &ev))
		return 1;
	printf("event %s\n", ibv_event_type_str(ev.event_type));
	ibv_ack_async_event(&ev);
	return 0;
}
EOF_C
	build poll_fatal || skip_poll=1
fi

# Last, as it kills vrdmad: ibv_asyncwatch (ibverbs-utils) waits for
# events; dom0's death reaches it as IBV_EVENT_DEVICE_FATAL, then it ends.
# poll_fatal polls beside it.
if want asyncwatch || want poll_fatal; then
	out=$RUN/asyncwatch.out pout=$RUN/poll_fatal.out ok=0 pok=0 wpid= ppid=
	if want asyncwatch; then
		timeout $T "$VR" ibv_asyncwatch >"$out" 2>&1 &
		wpid=$!
		for _ in $(seq 100); do grep -q "async event FD" "$out" && break; sleep 0.1; done
	fi
	if want poll_fatal && [ -z "${skip_poll:-}" ]; then
		rm -f "$RUN/killed"
		timeout $T "$VR" "$RUN/poll_fatal" "$RUN/killed" >"$pout" 2>&1 &
		ppid=$!
		for _ in $(seq 100); do grep -q "^polling" "$pout" && break; sleep 0.1; done
	fi
	touch "$RUN/killed"; kill -9 "$DPID"; wait "$DPID" 2>/dev/null; DPID=
	if [ -n "$wpid" ]; then
		wait "$wpid"
		grep -q "async event FD" "$out" && grep -q "IBV_EVENT_DEVICE_FATAL" "$out" && ok=1
		report asyncwatch $ok "$out"
	fi
	if [ -n "$ppid" ]; then
		wait "$ppid" && grep -q "^event local catastrophic error$" "$pout" && pok=1
		grep "after the kill" "$pout"
		report poll_fatal $pok "$pout"
	fi
fi

echo "$pass passed, $fail failed${xfail:+, $xfail pending (XFAIL)}"
[ "$fail" -eq 0 ]
