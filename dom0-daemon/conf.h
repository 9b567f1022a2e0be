/* SPDX-License-Identifier: MIT */
/* vrdmad's configuration file (issue 13, vrdmad.conf(5)). */
#ifndef VRDMA_VD_CONF_H
#define VRDMA_VD_CONF_H

#include <stdbool.h>
#include <stdint.h>

#include "../backend/backend.h"	/* VBE_TQ_* */

#ifndef VD_CONF_DEF
#define VD_CONF_DEF		"/etc/vrdma/vrdmad.conf"
#endif
#define VD_SPIN_US_MAX		1000000u

/*
 * What the file sets; NULL / *_set false: not in the file (then the
 * command line, the environment or the built-in default decides).  The
 * strings are the file's, owned here.
 */
struct vd_conf {
	char *node;		/* node */
	char *run_dir;		/* run_dir */
	char *rdma_addr;	/* rdma_addr: an address, "" or "none" */
	char *policy;		/* policy: a file, or "none" */
	char *state_dir;	/* state_dir: a directory, or "none" */
	unsigned rdma_port, spin_us, rt_prio;
	bool rdma_port_set, spin_us_set, rt_prio_set;
	bool verbose, verbose_set;
	bool coll_off, coll_set;	/* coll: on (dom0 runs teams) | off */
	/* attach: the domain attach policy, none | all | name:GLOB | marker,
	 * checked by vd_attach_policy_parse (attach.h) as --attach is. */
	char *attach;
	/* [limits]: the node's default tenant limits, vbe_tenant_keys
	 * order; bit q of limits_set: the file gave limit q. */
	uint64_t limits[VBE_TQ_N];
	unsigned limits_set;
};

/*
 * Read path into c.  must_exist false (the default file): a missing file
 * is an empty one.  0, or -errno (c freed) after printing "vrdmad:
 * FILE:LINE: ..." naming the key on stderr.
 */
int  vd_conf_load(struct vd_conf *c, const char *path, bool must_exist);
void vd_conf_free(struct vd_conf *c);

/* The checks the command line shares: 0 or -EINVAL. */
int  vd_conf_port(const char *s, unsigned *port);
int  vd_conf_uint(const char *s, unsigned lo, unsigned hi, unsigned *v);
int  vd_conf_onoff(const char *s, bool *off);	/* "on" | "off" */

#endif /* VRDMA_VD_CONF_H */
