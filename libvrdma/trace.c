// SPDX-License-Identifier: MIT
/*
 * The guest's per-hop latency trace (common/vlt.h): with env
 * VRDMA_LAT_TRACE=N the first vrdma_open() arms a trace of N stamps for
 * the process; vrdma_post_send() stamps its entry (post) and its return,
 * just after the doorbell (bell), vrdma_post_recv() its entry (recv),
 * vrdma_poll_cq() each CQE it returns (cqe).  When the last device
 * closes, and at exit, the stamps not written yet go to
 * VRDMA_LAT_TRACE_FILE (%p: the pid; default stderr), one line each:
 *
 *   vlt guest hz <Hz> <how> pid=<pid> prog=<name> stamps=<n> cap=<N> full=<0|1>
 *   vlt guest post <clock> <qpn> <wr_id>
 *   vlt guest bell <clock> <qpn> <wr_id> rc=<errno> bells=<doorbells rung>
 *   vlt guest recv <clock> <qpn> <wr_id>
 *   vlt guest cqe <clock> <qpn> <wr_id> op=<opcode> st=<status>
 *
 * (scripts/lat-trace.sh reads them with vrdmactl's dom0 lines).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vlib.h"
#include "log.h"

struct vlt vlib_lt_trace;

static pthread_once_t vlib_lt_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t vlib_lt_lock = PTHREAD_MUTEX_INITIALIZER;	/* writing */
static uint32_t vlib_lt_written;	/* stamps written so far (lock) */
static unsigned vlib_lt_writes;		/* ... in this many writes (lock) */
static unsigned vlib_lt_devs;		/* atomic: devices open */
static pid_t vlib_lt_pid;		/* who armed it: a forked child writes nothing */
static char vlib_lt_path[512];		/* "" = stderr */

static const char *const vlib_lt_names[VLIB_LT_NKINDS] = {
	[VLIB_LT_POST] = "post", [VLIB_LT_BELL] = "bell", [VLIB_LT_RECV] = "recv",
	[VLIB_LT_CQE] = "cqe",
};

/* Named as dom0's trace names a CQE's opcode (backend/trace/lat.c). */
static const char *vlib_lt_op(unsigned op)
{
	static const char *const ops[] = {
		[VRDMA_WC_SEND_OP] = "send", [VRDMA_WC_RDMA_WRITE_OP] = "write",
		[VRDMA_WC_RDMA_READ_OP] = "read", [VRDMA_WC_COMP_SWAP_OP] = "cswap",
		[VRDMA_WC_FETCH_ADD_OP] = "fadd", [VRDMA_WC_RECV_OP] = "recv",
		[VRDMA_WC_RECV_RDMA_WITH_IMM_OP] = "recv_imm",
	};

	return op < sizeof(ops) / sizeof(ops[0]) && ops[op] ? ops[op] : "?";
}

/* VRDMA_LAT_TRACE_FILE, %p the pid and %% a %, into vlib_lt_path: 0, or
 * -EINVAL (another % word) / -ENAMETOOLONG. */
static int vlib_lt_file(const char *f, pid_t pid)
{
	size_t len = 0;
	int n;

	vlib_lt_path[0] = '\0';
	for (; f && *f; f++) {
		if (*f == '%' && f[1] != 'p' && f[1] != '%')
			return -EINVAL;
		if (*f != '%')
			n = snprintf(vlib_lt_path + len, sizeof(vlib_lt_path) - len, "%c", *f);
		else if (*++f == '%')
			n = snprintf(vlib_lt_path + len, sizeof(vlib_lt_path) - len, "%%");
		else
			n = snprintf(vlib_lt_path + len, sizeof(vlib_lt_path) - len, "%ld",
				     (long)pid);
		if (n < 0 || (size_t)n >= sizeof(vlib_lt_path) - len) {
			vlib_lt_path[0] = '\0';
			return -ENAMETOOLONG;
		}
		len += (size_t)n;
	}
	return 0;
}

/* Read the environment and arm: 0 (armed, or no trace wanted), or
 * -errno with the reason said (the trace stays off, nothing else is
 * affected). */
int vlib_lt_setup(void)
{
	const char *s = getenv("VRDMA_LAT_TRACE"), *f = getenv("VRDMA_LAT_TRACE_FILE");
	uint32_t n = 0;
	int err;

	if (!s || !*s)
		return 0;
	err = vlt_parse(s, &n);
	if (err == -ERANGE) {
		vlog_warn("vrdma: VRDMA_LAT_TRACE=%.32s: more than %u stamps: latency trace off",
			  s, VLT_MAX);
		return err;
	}
	if (err) {
		vlog_warn("vrdma: VRDMA_LAT_TRACE=%.32s is not a number of stamps (1..%u): "
			  "latency trace off", s, VLT_MAX);
		return err;
	}
	if (!n)
		return 0;		/* "0": off, as asked */
	vlib_lt_pid = getpid();
	err = vlib_lt_file(f, vlib_lt_pid);
	if (err) {
		vlog_warn("vrdma: VRDMA_LAT_TRACE_FILE=%.64s: %s: latency trace off", f,
			  err == -EINVAL ? "only p (the pid) or % may follow a %" :
			  "the path is too long");
		return err;
	}
	err = vlt_arm(&vlib_lt_trace, n);
	if (err) {
		vlog_warn("vrdma: VRDMA_LAT_TRACE=%u: %s: latency trace off", n, strerror(-err));
		return err;
	}
	vlog_dbg("vrdma: latency trace of %u stamps, to %s", n,
		 vlib_lt_path[0] ? vlib_lt_path : "stderr");
	return 0;
}

static void vlib_lt_setup_once(void)
{
	vlib_lt_setup();
}

void vlib_lt_open(void)
{
	pthread_once(&vlib_lt_once, vlib_lt_setup_once);
	__atomic_add_fetch(&vlib_lt_devs, 1, __ATOMIC_RELAXED);
}

void vlib_lt_close(void)
{
	if (!__atomic_sub_fetch(&vlib_lt_devs, 1, __ATOMIC_RELAXED) && vlib_lt_trace.rec)
		vlib_lt_flush(false);
}

void vlib_lt_put(unsigned kind, uint32_t qpn, uint64_t id, uint32_t aux)
{
	vlt_put(&vlib_lt_trace, kind, qpn, id, aux, 0);
}

void vlib_lt_cqes(const struct vrdma_wc *wc, int n)
{
	int i;

	for (i = 0; i < n; i++)
		vlt_put(&vlib_lt_trace, VLIB_LT_CQE, wc[i].qp_num, wc[i].wr_id,
			(uint32_t)wc[i].opcode << 8 | ((uint32_t)wc[i].status & 0xff), 0);
}

static void vlib_lt_line(FILE *f, const struct vlt_rec *r)
{
	const char *name = r->kind < VLIB_LT_NKINDS ? vlib_lt_names[r->kind] : "?";

	fprintf(f, "vlt guest %s %llu %u %llu", name, (unsigned long long)r->t, r->qpn,
		(unsigned long long)r->id);
	if (r->kind == VLIB_LT_BELL)
		fprintf(f, " rc=%u bells=%u", r->aux & 0xffff, r->aux >> 16);
	else if (r->kind == VLIB_LT_CQE)
		fprintf(f, " op=%s st=%u", vlib_lt_op(r->aux >> 8), r->aux & 0xff);
	fputc('\n', f);
}

int vlib_lt_flush(bool at_exit)
{
	const struct vlt *t = &vlib_lt_trace;
	uint32_t i, cnt;
	char how[64];
	uint64_t hz;
	FILE *f = stderr;
	int err = 0;

	pthread_mutex_lock(&vlib_lt_lock);
	cnt = vlt_count(t);
	/* Nothing new: nothing written, but at exit a trace that never
	 * wrote says it was on (a header, stamps=0). */
	if (!t->rec || getpid() != vlib_lt_pid ||
	    (cnt == vlib_lt_written && (vlib_lt_writes || !at_exit)))
		goto out;
	if (vlt_rate(t, &hz, how, sizeof(how))) {
		hz = 0;
		snprintf(how, sizeof(how), "unknown");
	}
	if (vlib_lt_path[0]) {
		/* The first write makes the file afresh, later ones add. */
		f = fopen(vlib_lt_path, vlib_lt_writes ? "ae" : "we");
		if (!f) {
			err = -errno;
			vlog_warn("vrdma: latency trace: %s: %s: written to stderr", vlib_lt_path,
				  strerror(errno));
			f = stderr;
		}
	}
	fprintf(f, "vlt guest hz %llu %s pid=%ld prog=%s stamps=%u cap=%u full=%d\n",
		(unsigned long long)hz, how, (long)vlib_lt_pid, program_invocation_short_name,
		cnt - vlib_lt_written, t->cap, vlt_full(t));
	for (i = vlib_lt_written; i < cnt; i++)
		if (__atomic_load_n(&t->rec[i].done, __ATOMIC_ACQUIRE))
			vlib_lt_line(f, &t->rec[i]);
	if (f == stderr ? fflush(f) : fclose(f)) {
		err = -errno;
		vlog_warn("vrdma: latency trace: writing %s: %s", vlib_lt_path[0] ?
			  vlib_lt_path : "stderr", strerror(errno));
	}
	vlib_lt_written = cnt;
	vlib_lt_writes++;
out:
	pthread_mutex_unlock(&vlib_lt_lock);
	return err;
}

/* At exit (or when libvrdma is unloaded): what the last close left.  The
 * array itself stays: another thread may still be stamping into it. */
static __attribute__((destructor)) void vlib_lt_exit(void)
{
	if (vlib_lt_trace.rec)
		vlib_lt_flush(true);
}
