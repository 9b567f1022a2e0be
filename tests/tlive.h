/* SPDX-License-Identifier: MIT */
/*
 * Live-daemon harness of the libvrdma Check suites (test_api, test_modify):
 * a private vrdmad per test ($VRDMA_BUILD/sbin/vrdmad, run dir under one
 * root per suite run); tests skip with a message when it is not built.
 */
#ifndef VRDMA_TLIVE_H
#define VRDMA_TLIVE_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "vrdma/vrdma.h"

#define T_OPEN_MS	5000

extern char d_root[256];
extern char d_dir[300];
extern pid_t d_pid;
extern int d_skip;

int64_t now_ms(void);
void rm_run_dir(const char *dir);
void root_make(void);		/* unchecked fixture: per-suite root */
void root_remove(void);
void daemon_start(void);	/* checked fixture: vrdmad for one test */
void daemon_stop(void);
struct vrdma_device *open_dev(void);	/* vrdma_open, retried while vrdmad starts */
/* Poll @cq for one completion, sleeping on it between polls, at most
 * @ms: what vrdma_poll_cq returned last (0: none came). */
int wait_one_ms(struct vrdma_cq *cq, struct vrdma_wc *wc, int ms);
/* Connect @cqp to @sqp by vrdma_listen(@sdev, @svc) + vrdma_connect, the
 * accept in a thread, no private data, @ms each; asserts both worked. */
void tlive_connect(struct vrdma_device *sdev, struct vrdma_qp *sqp, struct vrdma_qp *cqp,
		   const char *svc, int ms);
/* The "live" test case: a per-suite root, a vrdmad per test, 60 s. */
TCase *tlive_tcase(void);
/* main() of a suite: run it, say when VRDMA_BUILD is missing. */
int tlive_main(const char *name, Suite *s);

#define NEED_DAEMON() do {						\
	if (d_skip) {							\
		fprintf(stderr, "%s skipped: no vrdmad at "	\
			"$VRDMA_BUILD/sbin (not built yet)\n", __func__); \
		return;							\
	}								\
} while (0)

#endif /* VRDMA_TLIVE_H */
