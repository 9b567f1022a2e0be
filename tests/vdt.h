/* SPDX-License-Identifier: MIT */
/*
 * The real vrdmad under test (test_vrdmad, test_vrdmad_conf): its
 * programs from VRDMA_BUILD (default build/), a private run dir, and the
 * waits those suites share.  Every wait has a limit.
 */
#ifndef VRDMA_TESTS_VDT_H
#define VRDMA_TESTS_VDT_H

#include <stddef.h>
#include <sys/types.h>

struct vdt {
	char dir[64];			/* private run dir (vrdmad -S) */
	char bin[512], ctl[512], bw[512];	/* vrdmad, vrdmactl, vrdma-bw */
};

/* Paths, a fresh /tmp/vrdmad-<tag>-XXXXXX, the plain host's platform. */
void vdt_init(struct vdt *t, const char *tag);
void vdt_fini(const struct vdt *t);		/* removes the dir */
void vdt_sleep_ms(int ms);
/* Exit status of pid (128 + signal), or -1 after ms (then killed). */
int  vdt_wait_exit(pid_t pid, int ms);
/* vrdmactl -S dir args, at most 10 s: its exit status, stdout and
 * stderr in out. */
int  vdt_ctl(const struct vdt *t, const char *args, char *out, size_t len);
void vdt_write_file(const char *path, const char *text);

#endif /* VRDMA_TESTS_VDT_H */
