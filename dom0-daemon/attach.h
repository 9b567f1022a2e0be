/* SPDX-License-Identifier: MIT */
/*
 * Attach policy (issue 13): which Xen domains vrdmad gives device 0 by
 * itself when they appear, with no `vrdmactl attach`.  vrdmad watches
 * xenstore's @introduceDomain and @releaseDomain (platform/vplat.h) and,
 * once per event-loop pass with events, lists /local/domain and decides
 * once for every domain it has not seen: a decision (attached, refused,
 * not matched, detached by the operator) stands until the domain goes.
 * Attaching goes through the caller's function, the one `vrdmactl
 * attach` runs.  A VM the operator detached (`vrdmactl detach`, kept by
 * name in the settings file) is left alone until `vrdmactl attach`.  The
 * plain host has no domains to introduce (a guest process that connects
 * gets its device): a policy there is a no-op, said once in the log.
 */
#ifndef VRDMA_ATTACH_H
#define VRDMA_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vplat;
struct vout;

enum vd_attach_kind {
	VD_ATTACH_NONE,		/* vrdmactl attach only (the default) */
	VD_ATTACH_ALL,		/* every domain but dom0 */
	VD_ATTACH_NAME,		/* its xenstore `name` matches glob (fnmatch(3)) */
	VD_ATTACH_MARKER,	/* dom0 wrote VD_ATTACH_MARKER_KEY = "1", at any time */
};

#define VD_ATTACH_GLOB_MAX	128	/* with its NUL */
/* /local/domain/<domid>/vrdma-attach: in the domain's home, which only
 * dom0 may write (libxl makes it dom0's, the domain reads). */
#define VD_ATTACH_MARKER_KEY	"vrdma-attach"
#define VD_ATTACH_NAME_WAIT_MS	10000	/* for a new domain's `name` */
#define VD_ATTACH_VALUES	"none, all, name:GLOB or marker"

struct vd_attach {
	enum vd_attach_kind kind;
	char glob[VD_ATTACH_GLOB_MAX];	/* VD_ATTACH_NAME */
};

/*
 * Parse a policy ("none", "all", "name:GLOB", "marker"), the value of
 * vrdmad's --attach and of the configuration file's `attach`.  0, or
 * -EINVAL with *why (if why) saying what is wrong; *out is untouched then.
 */
int vd_attach_policy_parse(const char *s, struct vd_attach *out, const char **why);
/* The policy as parse takes it back; buf returned. */
const char *vd_attach_policy_str(const struct vd_attach *a, char *buf, size_t len);
/*
 * Does the policy attach domain domid?  name and marker are its xenstore
 * `name` and VD_ATTACH_MARKER_KEY, NULL when absent.  1 yes, 0 no,
 * -EAGAIN: not known yet (name: without a name; marker: until the marker
 * is "1", which dom0 may write at any time while the domain lives).
 * Never dom0.
 */
int vd_attach_match(const struct vd_attach *a, uint32_t domid, const char *name,
		    const char *marker);

/* Attach device devid of domid as `vrdmactl attach` does: 0 or -errno,
 * the reason in o (a zeroed struct vout keeps it). */
typedef int vd_attach_fn(void *arg, uint32_t domid, uint32_t devid, struct vout *o);
/* Did the operator detach VM name's device 0 (kept across restarts)? */
typedef bool vd_detached_fn(void *arg, const char *name);

struct vd_attach_ops {
	vd_attach_fn *attach;
	vd_detached_fn *detached;	/* NULL: nothing is kept */
};

struct vd_auto;

/* Start applying pol on p (domains already there included, from the
 * first event); 0 or -errno.  VD_ATTACH_NONE starts nothing. */
int  vd_auto_start(struct vplat *p, const struct vd_attach *pol,
		   const struct vd_attach_ops *ops, void *arg, struct vd_auto **out);
/* After vplat_process(): one listing of /local/domain if any domain
 * event came since the last, however many came. */
void vd_auto_run(struct vd_auto *a);
/* vrdmad's tick: the name wait's deadline, a domain xenstore was too
 * busy to attach (tried again backing off, 100 ms up to 5 s), a listing
 * that failed (again each second). */
void vd_auto_tick(struct vd_auto *a, int64_t now_ms);
/* The operator attached (attached true) or detached domid's device 0 by
 * hand: the decision shown from now on, and the policy's from then on. */
void vd_auto_note(struct vd_auto *a, uint32_t domid, bool attached);
void vd_auto_stop(struct vd_auto *a);
/* `vrdmactl attach-policy`: the policy and each domain's decision. */
void vd_auto_show(const struct vd_auto *a, struct vout *o);

#endif /* VRDMA_ATTACH_H */
