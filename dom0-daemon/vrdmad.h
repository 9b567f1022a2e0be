/* SPDX-License-Identifier: MIT */
/* vrdmad internals shared by its files (main, control commands). */
#ifndef VRDMA_VRDMAD_H
#define VRDMA_VRDMAD_H

#include <stdio.h>

#include "../backend/backend.h"	/* struct vbe_files */
#include "attach.h"
#include "evloop.h"

struct vplat;
struct vbe_node;
struct vd_ctl;
struct vout;

struct vd_daemon {
	struct vev_loop *loop;
	struct vplat *plat;
	struct vbe_node *node;
	struct vd_ctl *ctl;
	struct vbe_files files;		/* the policy's and settings' locks */
	int sig_fd;
	int pid_written;
	int64_t plat_err_ms;	/* last logged vplat_process error */
	const char *run_dir;
	const char *node_name;
	const char *policy_path;	/* connect policy file, NULL: in memory */
	const char *state_dir;		/* per-VM settings (issue 13), NULL: none */
	const uint64_t *limits;		/* tenant defaults, NULL: built in */
	unsigned limits_set;		/* 1 << VBE_TQ_*: ... given in vrdmad.conf */
	unsigned tenant_guests;		/* limits[guests], for the platform */
	struct vd_attach attach;	/* --attach */
	bool coll_off, coll_set;	/* --coll off; given on the command line */
	struct vd_auto *autoattach;	/* applies it (attach.c) */
	char ctl_path[256];
	char pid_path[256];
};

/* Control commands (cmd.c): the vd_ctl_fn for the control socket. */
void vd_cmd_handle(void *arg, const char *line, FILE *out);

/* The attach policy's calls into vrdmad (cmd.c): attach a device as
 * `vrdmactl attach` does; did the operator detach a VM. */
extern const struct vd_attach_ops vd_attach_ops;

/* Tell systemd our state (notify.c): "READY=1", "RELOADING=1",
 * "STOPPING=1".  0 also when not under systemd; -errno. */
int vd_notify(const char *state);

#endif /* VRDMA_VRDMAD_H */
