/* SPDX-License-Identifier: MIT */
/* vrdmad internals shared by its files (main, control commands). */
#ifndef VRDMA_VRDMAD_H
#define VRDMA_VRDMAD_H

#include <stdio.h>

#include "evloop.h"

struct vplat;
struct vbe_node;
struct vd_ctl;

struct vd_daemon {
	struct vev_loop *loop;
	struct vplat *plat;
	struct vbe_node *node;
	struct vd_ctl *ctl;
	int sig_fd;
	int pid_written;
	int64_t plat_err_ms;	/* last logged vplat_process error */
	const char *run_dir;
	const char *node_name;
	const char *policy_path;	/* connect policy file, NULL: in memory */
	const char *state_dir;		/* per-VM settings (issue 13), NULL: none */
	char ctl_path[256];
	char pid_path[256];
};

/* Control commands (cmd.c): the vd_ctl_fn for the control socket. */
void vd_cmd_handle(void *arg, const char *line, FILE *out);

/* Tell systemd our state (notify.c): "READY=1", "RELOADING=1",
 * "STOPPING=1".  0 also when not under systemd; -errno. */
int vd_notify(const char *state);

#endif /* VRDMA_VRDMAD_H */
