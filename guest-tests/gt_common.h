/* SPDX-License-Identifier: MIT */
/*
 * Shared code of the guest test programs vrdma-bw and vrdma-lat
 * (libfabric fabtests style: a short main per program over this library).
 *
 * The client drives; the server follows.  At connect the client tells the
 * server its parameters and buffer in the private data; the server sizes
 * its own buffer from them and answers with its buffer.  After that, small
 * control messages (SEND_WITH_IMM, imm = GT_CTL_IMM) frame every message
 * size: BEGIN -> READY, the timed run, DONE -> RESULT (the server's verify
 * verdict), and finally FIN -> FIN_ACK.
 *
 * vrdma-bw -q N connects N QPs to the same server, one vrdma_connect()
 * each (the first carries the parameters, the others their index and the
 * nonce of the server's first answer); control messages go over QP 0, data
 * round-robin over all.  With
 * -b the server streams too, its result comes back in RESULT.
 *
 * Buffer of each side, one vrdma_alloc_buf() registered as one MR:
 *   [ data region | receive slots of each QP | control send slots of each QP ]
 * The data region is the region this side works from and the one it
 * exposes to the peer; with -b two halves, so the peer's WRITEs and READs
 * never touch what this side fills or reads into.
 */
#ifndef VRDMA_GT_COMMON_H
#define VRDMA_GT_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vrdma/vrdma.h"
#include "perfstat.h"

#define GT_MAX_SIZE	(8u << 20)	/* largest message (-a ends here) */
#define GT_DATA_CAP	(16u << 20)	/* data region: wrap offsets beyond */
#define GT_RX_CAP	(32u << 20)	/* receive slots for SEND data, aimed at */
#define GT_CTL_LEN	64u		/* control slot size */
#define GT_CTL_SLOTS	8u
#define GT_CTL_IMM	0x76524d43u	/* "vRMC": marks control messages */
#define GT_CTL_WORDS	16u		/* a control message: 16 u32, 64 bytes */
/* Receive slots beyond the credits for SEND data: at most 1 request or
 * answer is unread per direction, and 2 CREDITs where this side sends data
 * too (-b).  They are message-sized as well: an RC receive queue hands the
 * next message, data or control, to the oldest receive. */
#define GT_CTL_RESERVE(bidir)	((bidir) ? 3u : 1u)
#define GT_CQ_MAX	16384u		/* vrdma_create_cq()'s limit */
#define GT_BUF_MAX	(64u << 20)	/* vrdma_alloc_buf()'s limit */
#define GT_MAX_QPS	1024u		/* QPs of a guest (vrdma_query_device) */
#define GT_MAX_DURATION	86400u		/* -D: a day at most */
#define GT_WR_CTL	(1ull << 63)	/* wr_id bit: a control send */

enum gt_test { GT_BW, GT_LAT };
enum gt_mode { GT_MODE_WRITE, GT_MODE_READ, GT_MODE_SEND };
enum gt_fmt { GT_FMT_TEXT, GT_FMT_CSV, GT_FMT_JSON };
/* perftest's --output: the table, or only one number per size. */
enum gt_output { GT_OUT_FULL, GT_OUT_BW, GT_OUT_MSG_RATE, GT_OUT_LAT };

struct gt_opts {
	enum gt_test test;
	const char *prog;
	const char *service;
	const char *node;		/* NULL: act as server; "" this node */
	const char *dev_spec;
	size_t size;
	uint32_t iters;
	uint32_t duration_s;		/* -D: timed seconds instead of iters */
	int64_t warmup;			/* WRs before the clock, -1 = default */
	int all;
	enum gt_mode mode;
	uint32_t tx_depth;
	uint32_t cq_mod;		/* -Q: signal every N WRs, 0 = tx-depth/2 */
	int events;			/* -e: sleep at once on the CQ */
	int verify;
	int timeout_s;
	enum gt_fmt fmt;
	enum gt_output output;
	int gbits;			/* --report_gbits */
	uint32_t nqps;			/* -q: QPs of the connection */
	int nqps_set;			/* -q given: a server insists on it */
	int bidir;			/* -b: the server streams too */
};

/*
 * Control message: 16 little-endian u32 words in the slot,
 *   0 type | 1 credits | 2 size | 3 iters low | 4 seed | 5 status |
 *   6 warm | 7 dur_s | 8 sig | 9 iters high | 10-11 res_iters |
 *   12-13 res_ns | 14-15 res_peak_bps  (64-bit values low word first).
 */
enum gt_ctl_type {
	GT_CTL_BEGIN = 1, GT_CTL_READY, GT_CTL_DONE, GT_CTL_RESULT,
	GT_CTL_CREDIT, GT_CTL_FIN, GT_CTL_FIN_ACK,
};

struct gt_ctl {
	uint32_t type;
	uint32_t credits;		/* receive slots reposted since last report */
	uint32_t size;
	uint64_t iters;			/* iterations including warm-up (-D: 64 bits) */
	uint32_t seed;
	uint32_t status;		/* RESULT: GT_ST_* bits, 0 verify OK */
	/* BEGIN of vrdma-bw -b: how the server streams */
	uint32_t warm, dur_s, sig;
	/* RESULT of vrdma-bw -b: the server's measured run */
	uint64_t res_iters, res_ns, res_peak_bps;
};

/* RESULT's status bits. */
#define GT_ST_BAD_IN	(1u << 0)	/* what the client sent or wrote is wrong */
#define GT_ST_BAD_READ	(1u << 1)	/* -b read: the server's READs got wrong data */

#define GT_INBOX	8u

/* One QP of the connection and its own slots and counters. */
struct gt_qp {
	struct vrdma_qp *qp;
	uint32_t idx;
	uint8_t *rx;			/* receive slots */
	uint8_t *ctl;			/* control send slots */
	uint64_t ctl_seq[GT_CTL_SLOTS];	/* sq seq that last used a slot */
	uint32_t ctl_next;

	/* Send queue: wr_id is a sequence number (GT_WR_CTL set on control
	 * sends); a signaled completion retires every earlier WR (RC order). */
	uint64_t sq_posted, sq_retired;
	uint64_t data_retired;		/* retired WRs that were not control */
	uint64_t data_base, data_checked;	/* vrdma-bw READ --verify */

	/* Flow control for SEND data: the peer's free receive slots. */
	uint32_t credits;
	uint32_t unreported;		/* our reposts not yet reported */
	int credit_due;			/* on the due list */

	uint64_t rx_data;		/* data messages received, this size */
};

struct gt_ctx {
	struct gt_opts *o;
	int server;
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	struct gt_qp *qps;
	uint32_t nqps;
	uint32_t *qp_order;		/* qps[] indexes sorted by qp_num */
	struct vrdma_mr *mr;
	struct vrdma_listener *lst;
	uint8_t *buf;
	size_t buf_len;

	/* Parameters both sides agreed on at connect. */
	enum gt_test test;
	enum gt_mode mode;
	int verify;
	int all;
	uint32_t tx_depth;
	uint32_t max_size;
	uint32_t iters;
	int bidir;

	uint8_t *data;			/* data region: this side's messages */
	size_t data_len;
	uint8_t *exp;			/* what the peer writes to / reads from */
	size_t region_len;		/* of each (the same region without -b) */
	uint32_t rx_slots, rx_slot_len;	/* per QP */
	uint32_t rx_credits;		/* of those, for SEND data */

	/* The peer's region this side writes to / reads from. */
	uint64_t raddr;
	uint32_t rkey;
	uint32_t rlen;
	uint32_t peer_rx_slots;

	uint32_t sq_depth;		/* per QP */
	uint64_t data_retired;		/* of all QPs */

	/* SEND data: this side sends it (and waits for credits) / receives
	 * it (and reports credits, QPs on the due list). */
	int use_credits;
	int gives_credits;
	uint32_t *credit_due;
	uint32_t n_due;

	/* Received data messages of the current size, all QPs. */
	uint64_t rx_data;
	uint32_t rx_size, rx_seed;
	int rx_bad;

	/* Waits for a control message allow this much more than --timeout:
	 * the -D of the run in progress (0 without).  Completions or data
	 * push the limit forward too: it is an idle limit. */
	uint64_t run_ns;
	uint64_t keepalive_ns;		/* next gt_keepalive() due */

	/* FIN seen: the peer may tear down, flushed WRs are expected. */
	int closing;

	/* The server's session: QP 0's requester and the nonce its answers
	 * carry, which the requests for QPs 2..N must echo. */
	struct vrdma_conn_peer peer;
	int have_peer;
	uint32_t nonce;
	/* Refusals carried on QPs of their own (gt_conn.c), kept a while. */
	struct vrdma_qp *refused_qp[4];
	struct vrdma_cq *refused_cq[4];
	uint64_t refused_ns;		/* the last one's time */
	uint32_t n_refused;

	struct gt_ctl inbox[GT_INBOX];
	uint32_t inbox_head, inbox_len;
};

/* gt_opts.c */
int gt_parse_opts(struct gt_opts *o, enum gt_test test, int argc, char **argv);
int gt_next_size(const struct gt_opts *o, size_t *size);

/* gt_conn.c */
int gt_client_connect(struct gt_ctx *c, struct gt_opts *o);
int gt_server_accept(struct gt_ctx *c, struct gt_opts *o);
void gt_teardown(struct gt_ctx *c);
uint32_t gt_slots(const struct gt_ctx *c, size_t size);
int gt_check_fit(const struct gt_opts *o);

/* gt_io.c */
int gt_post(struct gt_ctx *c, struct gt_qp *q, enum vrdma_wr_opcode op,
	    void *laddr, uint32_t len, uint64_t raddr, int signaled);
int gt_progress(struct gt_ctx *c, int wait_ms);
int gt_wait_sq(struct gt_ctx *c, struct gt_qp *q, uint32_t depth);
int gt_wait_credit(struct gt_ctx *c, struct gt_qp *q);
int gt_send_ctl(struct gt_ctx *c, const struct gt_ctl *m);
int gt_send_ctl_qp(struct gt_ctx *c, struct gt_qp *q, const struct gt_ctl *m);
int gt_keepalive(struct gt_ctx *c);
int gt_wait_ctl(struct gt_ctx *c, struct gt_ctl *m, uint32_t type);
int gt_request(struct gt_ctx *c, struct gt_ctl *m, uint32_t reply_type);
int gt_spin_byte(struct gt_ctx *c, const uint8_t *p, uint8_t want, uint64_t deadline);
int gt_drain(struct gt_ctx *c);

/* gt_server.c: the server side of both programs. */
struct gt_server_ops {
	/* After BEGIN's READY went out (lat runs its ping-pong here). */
	int (*begin)(struct gt_ctx *c, const struct gt_ctl *m);
	/* Before READY: prepare memory (bw read fills, lat clears). */
	void (*prepare)(struct gt_ctx *c, const struct gt_ctl *m);
	/* At DONE: 0 if everything the client sent checks out. */
	int (*verify)(struct gt_ctx *c, const struct gt_ctl *m);
	/* At DONE: the server's own figures into RESULT (vrdma-bw -b). */
	void (*result)(struct gt_ctx *c, struct gt_ctl *r);
};
int gt_server_main(struct gt_opts *o, const struct gt_server_ops *ops);

/* gt_report.c */
struct gt_bw_res {
	size_t size;
	uint64_t iters;
	uint64_t ns;			/* the measured time */
	double peak_mib, avg_mib, mpps;
};

/* -D on vrdma-lat: perftest's duration row (t_avg and pings per second). */
struct gt_lat_dur {
	size_t size;
	uint64_t iters;
	double avg_us, tps;
};

uint64_t gt_now_ns(void);
uint64_t gt_deadline(const struct gt_ctx *c);
int gt_ms_left(uint64_t deadline);
void gt_fill(uint8_t *p, size_t len, uint32_t seed, uint64_t idx);
int gt_check(const uint8_t *p, size_t len, uint32_t seed, uint64_t idx);
void gt_bw_compute(struct gt_bw_res *r, size_t size, uint64_t iters,
		   const uint64_t *t_ns, const uint64_t *cnt, uint32_t n);
void gt_report_begin(const struct gt_opts *o);
void gt_bw_add(struct gt_bw_res *r, const struct gt_bw_res *peer);
void gt_report_bw(const struct gt_opts *o, const struct gt_bw_res *r);
void gt_report_lat(const struct gt_opts *o, const struct ps_lat *r);
void gt_report_lat_dur(const struct gt_opts *o, const struct gt_lat_dur *r);
void gt_report_end(const struct gt_opts *o, int ok, int verified);
const char *gt_mode_name(enum gt_mode m);

#endif /* VRDMA_GT_COMMON_H */
