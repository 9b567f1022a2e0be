/* SPDX-License-Identifier: MIT */
/*
 * The dom0 half of the split driver, as vrdmad sees it.  A node is every
 * guest this dom0 serves.  The backend watches VRDMA_XS_BACK_ROOT through
 * the platform seam, runs the xenbus handshake for each guest that
 * appears, maps its rings and buffers, checks and executes its requests,
 * and tears it down when it goes away or misbehaves.
 *
 * Single-threaded: every call comes from vrdmad's event loop.
 */
#ifndef VRDMA_BACKEND_H
#define VRDMA_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct vplat;
struct vbe_node;
struct vout;		/* a control command's answer, text or JSON (vout.h) */

/* vrdmad polls these fds; the backend says when the set changes. */
typedef void vbe_fd_fn(void *arg, int fd, int add);

struct vbe_node_cfg {
	struct vplat *plat;		/* dom0 role, opened by vrdmad */
	const char *node_name;		/* what guests connect() to */
	vbe_fd_fn *fd_cb;		/* add/remove a guest channel fd */
	void *fd_arg;
	/* RDMA device for guests on other nodes (issue 4): the address to
	 * listen on; "" = the first RDMA-capable address; NULL or "none" =
	 * no device (remote connects are refused UNREACH).  0 = port 18515. */
	const char *rdma_addr;
	unsigned rdma_port;
	/* Connect policy file (issue 12): loaded now, rewritten at every
	 * `vrdmactl policy` change; NULL or "" = held in memory only. */
	const char *policy_path;
	/* Issue 13: per-VM settings and tenant limits persist in
	 * state_dir/settings, loaded now; NULL or "" = in memory only. */
	const char *state_dir;
	/* The node's defaults for every tenant without a value of its own
	 * or in tenant:default (vrdmad.conf [limits]): VBE_TQ_N values,
	 * VBE_TQ_* order; NULL = the built-in ones. */
	const uint64_t *tenant_defaults;
	/* 1 << VBE_TQ_* of those the operator gave: the others of `maps`
	 * and `pages` follow the platform's budget (vplat_map_limits). */
	uint32_t tenant_defaults_set;
	/* vrdmad.conf `coll = off` (--coll off): dom0 runs no team; every
	 * TEAM_JOIN answers NOENT, so the guests run theirs themselves. */
	bool coll_off;
};

/* Tenant limits (docs/tenants.md), named in vbe_tenant_keys as `vrdmactl
 * set tenant:` takes them. */
enum { VBE_TQ_GUESTS, VBE_TQ_LISTENERS, VBE_TQ_CONNS, VBE_TQ_QPS, VBE_TQ_MEM, VBE_TQ_CQS,
       VBE_TQ_MRS, VBE_TQ_PAGES, VBE_TQ_CMDS, VBE_TQ_MAPS, VBE_TQ_DEVQPS, VBE_TQ_N };
extern const char *const vbe_tenant_keys[];	/* VBE_TQ_* order, NULL-terminated */
void vbe_tenant_defaults(uint64_t lim[VBE_TQ_N]);	/* built in */
/* val (a number, mem also K/M/G/T) for limit q: 0, or -EINVAL. */
int  vbe_tenant_parse(unsigned q, const char *val, uint64_t *out);
uint64_t vbe_tenant_max(unsigned q);	/* the largest value q takes */

/* One vrdmad per kept file (settings/filesave.c): FILE.lock of
 * state_dir/settings (state_dir made if missing) and of policy_path,
 * flocked until vbe_files_unlock; taken before the platform opens, so a
 * second vrdmad stops first.  NULL or "": no such file.  0, -EBUSY
 * (another vrdmad holds one), -EINVAL (policy_path is the settings
 * file), -ENAMETOOLONG; a lock that cannot be made is only warned of. */
struct vbe_files {
	int fd[2];
};
int  vbe_files_lock(const char *policy_path, const char *state_dir, struct vbe_files *l);
void vbe_files_unlock(struct vbe_files *l);

/* Wait (bounded) until the kernel's CSPRNG is seeded: memory keys take
 * random bytes without ever blocking, so a daemon waits here once, at
 * start.  0, or -ETIMEDOUT (registrations are refused until it is). */
int  vbe_rng_wait(int timeout_ms);
int  vbe_node_new(const struct vbe_node_cfg *cfg, struct vbe_node **out);
void vbe_node_free(struct vbe_node *n);	/* tears down every guest */

/* A guest channel fd became readable: ack it and mark the guest busy. */
void vbe_node_fd_ready(struct vbe_node *n, int fd);

/*
 * Process every connected guest's rings once: pull requests, execute,
 * write completions (one notification per guest per call).  Returns the
 * number of requests handled; 0 means idle.
 */
int  vbe_node_poll(struct vbe_node *n);

/*
 * About to sleep: arm every guest's request ring (event index) and
 * re-check.  Returns 1 if work arrived meanwhile (poll again, do not sleep).
 */
int  vbe_node_arm(struct vbe_node *n);
/* Busy-polling: suppress guest notifications. */
void vbe_node_disarm(struct vbe_node *n);

/* Housekeeping: connection-request timeouts, retries.  Call every ~100 ms. */
void vbe_node_tick(struct vbe_node *n, int64_t now_ms);

/* `vrdmactl list`: guests (their VMs' names first), QPs, MRs, counters. */
void vbe_node_dump(struct vbe_node *n, struct vout *o);

/*
 * Issue 5 (docs/prio.md): per-guest settings and counters.  vm is a domid,
 * "domid/devid" or the guest's name.  kv are "key=value" words (weight,
 * class, rate, qps, mem, wrs, credits), all checked before any is stored.
 * On failure the error (vout_err) says what is allowed and -errno is
 * returned.
 */
int  vbe_node_prio_set(struct vbe_node *n, const char *vm, int nkv, char **kv, struct vout *o);
int  vbe_node_prio_get(struct vbe_node *n, const char *vm, struct vout *o);
/* Issue 12 (docs/tenants.md): vm "tenant:<name>" / "tenants" are the
 * quotas summed over a tenant's guests.  May domain domid be given one
 * more device (`vrdmactl attach`)?  0, or -EUSERS with the error in o. */
int  vbe_node_attach_ok(struct vbe_node *n, uint32_t domid, uint32_t devid, struct vout *o);
/*
 * Issue 13: the operator's `vrdmactl detach` of VM vm's device 0, kept by
 * VM name in the settings file until `vrdmactl attach` (on false); the
 * attach policy leaves such a VM alone, across restarts.  set: 0 once on
 * disk (or the node keeps no file), -EINVAL for a name the file cannot
 * hold, -ENOSPC past VBE_DETACHED_MAX VMs, -errno with nothing changed.
 */
int  vbe_node_detached_set(struct vbe_node *n, const char *vm, bool on);
bool vbe_node_detached(const struct vbe_node *n, const char *vm);
/* Does the node keep a settings file (else: in memory only)? */
bool vbe_node_keeps_state(const struct vbe_node *n);
/* `vrdmactl attach-policy`: those VMs. */
void vbe_node_detached_show(const struct vbe_node *n, struct vout *o);
/* `vrdmactl policy [show | check F T | change...]` (docs/tenants.md):
 * a change is saved to the policy file before it applies.  0 / -errno
 * with the error in o. */
int  vbe_node_policy(struct vbe_node *n, int argc, char **argv, struct vout *o);
/* Re-read the policy file (SIGHUP); on an error the running policy stays.
 * 0 / -errno. */
int  vbe_node_policy_reload(struct vbe_node *n);
/* `vrdmactl trace [lat N | dump | off]`: the per-hop latency trace of
 * the data path (backend/trace/lat.c): armed for the next N stamps,
 * printed, disarmed; no word: where it stands.  0 / -errno with the
 * error in o. */
int  vbe_node_trace(struct vbe_node *n, int argc, char **argv, struct vout *o);
/* `vrdmactl stats`: per-guest traffic, queue delay, throttling, refusals,
 * sorted by sort (NULL: by guest; "io", "vm", ... see dump.c).  0, or
 * -EINVAL for an unknown key. */
int  vbe_node_stats(struct vbe_node *n, struct vout *o, const char *sort);
/* vrdmactl teams: the teams dom0 runs (backend/coll/show.c); 0. */
int vbe_node_teams(struct vbe_node *n, struct vout *o);

/* Number of live guests / mappings / channels (leak checks in tests). */
struct vbe_census {
	unsigned guests, maps, chans, qps, mrs, cqs, pds, bufs, listeners;
	unsigned credits;		/* WRs counted on the RDMA device */
	unsigned long long dev_bytes;	/* send WR bytes counted on it */
};
void vbe_node_census(struct vbe_node *n, struct vbe_census *c);

#endif /* VRDMA_BACKEND_H */
