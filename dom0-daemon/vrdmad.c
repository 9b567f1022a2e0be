// SPDX-License-Identifier: MIT
/*
 * vrdmad: the dom0 daemon.  One event loop hosts the backend node (every
 * guest this dom0 serves), the platform's fd (key watches, guest
 * arrivals), the control socket and signals.  A failing guest is the
 * backend's business; nothing here stops the loop except a signal.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

#include "../backend/backend.h"
#include "conf.h"
#include "ctl.h"
#include "log.h"
#include "version.h"
#include "vplat.h"
#include "vrdmad.h"

#define VD_RNG_WAIT_MS		30000	/* for the kernel's random pool, at start */
#define VD_TICK_MS		100
#define VD_RUN_DIR_DEF		"/run/vrdma"
#define VD_PID_NAME		"vrdmad.pid"
#define VD_RDMA_PORT_DEF	18515
#define VD_STATE_DIR_DEF	"/var/lib/vrdma"
#define VD_OPT_STATE_DIR	0x100
#define VD_OPT_ATTACH		0x101	/* long options only */
#define VD_OPT_COLL		0x102

/* RDMA device for guests on other nodes (issue 4): "" = first
 * RDMA-capable address, "none" = no device. */
static const char *vd_rdma_addr = "";
static unsigned vd_rdma_port = VD_RDMA_PORT_DEF;
/* Given on the command line or in the environment: the file yields. */
static bool vd_addr_set, vd_port_set, vd_policy_set, vd_attach_set;

static void vd_usage(FILE *f)
{
	fprintf(f,
		"Usage: vrdmad [-c config] [-f] [-v] [-S run_dir] [-n node] [-a addr|-R none]\n"
		"              [-p port] [-P policy_file] [--state-dir DIR]\n"
		"              [--spin-us N] [--rt-prio N] [--attach POLICY] [--coll on|off]\n"
		"  -c, --config FILE  configuration file (default %s if it\n"
		"                     exists; vrdmad.conf(5)); options override it\n"
		"  -f, --foreground   stay in the foreground (the default)\n"
		"  -S, --run-dir DIR  socket directory (env VRDMA_RUN_DIR, else %s)\n"
		"  -n, --node NAME    node name guests connect to (default: hostname)\n"
		"  -a, --rdma-addr A  RDMA address to listen on for other nodes\n"
		"                     (env VRDMA_RDMA_ADDR; default: first RDMA device's IP)\n"
		"  -R, --rdma none    no RDMA device: connects to other nodes are refused\n"
		"  -p, --rdma-port P  rdma_cm port, the same on every node (env\n"
		"                     VRDMA_RDMA_PORT, default %u)\n"
		"  -P, --policy FILE  connect policy, loaded at start and rewritten by\n"
		"                     `vrdmactl policy` (env VRDMA_POLICY; default: none,\n"
		"                     held in memory; the packaged unit passes\n"
		"                     /var/lib/vrdma/policy)\n"
		"      --state-dir DIR  per-VM settings and tenant limits kept in\n"
		"                     DIR/settings across restarts; 'none': in memory\n"
		"                     (default %s with the default run dir, else none)\n"
		"      --attach P     Xen: which domains get device 0 when they appear:\n"
		"                     none (default: vrdmactl attach only), all, name:GLOB,\n"
		"                     or marker (dom0 writes /local/domain/<domid>/\n"
		"                     " VD_ATTACH_MARKER_KEY " = 1, then or later)\n"
		"      --coll on|off  on (default): dom0 runs the collectives of teams of\n"
		"                     this node's guests; off: the guests run them\n"
		"  -v, --verbose      debug log\n"
		"      --spin-us N    busy-poll window after work, microseconds (default %u)\n"
		"      --rt-prio N    run the data path at SCHED_RR priority N (1..99; needs\n"
		"                     CAP_SYS_NICE; no spin window): guests that busy-poll\n"
		"                     then never delay it\n"
		"  -V, --version      print the version\n"
		"  -h, --help         this text\n"
		"SIGHUP re-reads the policy file.\n",
		VD_CONF_DEF, VD_RUN_DIR_DEF, VD_RDMA_PORT_DEF, VD_STATE_DIR_DEF, VEV_SPIN_US_DEF);
}

/* ---- loop callbacks ---- */

static void vd_guest_fd_cb(struct vev_loop *l, int fd, unsigned events, void *arg)
{
	struct vd_daemon *d = arg;

	(void)l;
	(void)events;
	vbe_node_fd_ready(d->node, fd);
}

/* The backend adds or removes a guest channel fd. */
static void vd_fd_change(void *arg, int fd, int add)
{
	struct vd_daemon *d = arg;
	int err;

	if (add) {
		err = vev_fd_add(d->loop, fd, VEV_READ, vd_guest_fd_cb, d);
		if (err)
			vlog_err("cannot watch guest fd %d: %s", fd, strerror(-err));
	} else {
		vev_fd_del(d->loop, fd);
	}
}

static void vd_plat_cb(struct vev_loop *l, int fd, unsigned events, void *arg)
{
	struct vd_daemon *d = arg;
	int64_t now;
	int err;

	(void)l;
	(void)fd;
	(void)events;
	err = vplat_process(d->plat);
	vd_auto_run(d->autoattach);	/* the domain events of this pass, at once */
	if (err >= 0)
		return;
	/* At most one line a second: the fd may stay readable. */
	now = vev_now_ms();
	if (now - d->plat_err_ms >= 1000) {
		d->plat_err_ms = now;
		vlog_warn("platform: %s", strerror(-err));
	}
}

static int vd_tick(struct vev_loop *l, uint64_t id, void *arg)
{
	struct vd_daemon *d = arg;

	(void)l;
	(void)id;
	vbe_node_tick(d->node, vplat_now_ms());
	vd_auto_tick(d->autoattach, vplat_now_ms());
	return VD_TICK_MS;
}

/* SIGHUP reloads what can change while running (the connect policy file,
 * until a configuration file exists); the others stop the loop. */
static void vd_signal_cb(struct vev_loop *l, int fd, unsigned events, void *arg)
{
	struct vd_daemon *d = arg;
	struct signalfd_siginfo si;

	(void)events;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			vlog_info("signal %u, reloading", si.ssi_signo);
			vd_notify("RELOADING=1");
			vbe_node_policy_reload(d->node);
			vd_notify("READY=1");
			continue;
		}
		vlog_info("signal %u, shutting down", si.ssi_signo);
		vev_stop(l);
	}
}

static int vd_poll(void *arg)
{
	struct vd_daemon *d = arg;

	return vbe_node_poll(d->node);
}

static int vd_arm(void *arg)
{
	struct vd_daemon *d = arg;

	return vbe_node_arm(d->node);
}

static void vd_disarm(void *arg)
{
	struct vd_daemon *d = arg;

	vbe_node_disarm(d->node);
}

static const struct vev_busy_ops vd_busy_ops = {
	.poll = vd_poll,
	.arm = vd_arm,
	.disarm = vd_disarm,
};

/* ---- setup ---- */

static int vd_signals(void)
{
	sigset_t set;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * Every guest share holds an fd in vrdmad: take the whole hard limit
 * (review I1).  The platform derives its per-guest caps from the result,
 * so failing here only means smaller caps.
 */
static void vd_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		vlog_warn("cannot raise the open-file limit: %s", strerror(errno));
}

static int vd_write_pid(const char *path)
{
	int fd, err = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (dprintf(fd, "%ld\n", (long)getpid()) < 0)
		err = -EIO;
	close(fd);
	return err;
}

static int vd_path(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int vd_start(struct vd_daemon *d, unsigned spin_us)
{
	struct vplat_cfg pcfg = {
		.role = VPLAT_DOM0_ROLE, .run_dir = d->run_dir,
		.tenant_guests = d->limits ? &d->tenant_guests : NULL,
	};
	struct vbe_node_cfg ncfg = {
		.node_name = d->node_name, .fd_cb = vd_fd_change, .fd_arg = d,
		.rdma_addr = vd_rdma_addr, .rdma_port = vd_rdma_port,
		.policy_path = d->policy_path, .state_dir = d->state_dir,
		.tenant_defaults = d->limits, .tenant_defaults_set = d->limits_set,
		.coll_off = d->coll_off,
	};
	int err;

	if (vd_path(d->ctl_path, sizeof(d->ctl_path), d->run_dir, VD_CTL_NAME) ||
	    vd_path(d->pid_path, sizeof(d->pid_path), d->run_dir, VD_PID_NAME)) {
		vlog_err("run dir path too long: %s", d->run_dir);
		return -ENAMETOOLONG;
	}
	if (mkdir(d->run_dir, 0755) < 0 && errno != EEXIST) {
		err = -errno;
		vlog_err("cannot create %s: %s", d->run_dir, strerror(-err));
		return err;
	}
	err = vev_loop_new(&d->loop);
	if (err) {
		vlog_err("event loop: %s", strerror(-err));
		return err;
	}
	/* Before any socket exists: a SIGTERM from now on cleans up. */
	d->sig_fd = vd_signals();
	if (d->sig_fd < 0) {
		err = d->sig_fd;
		vlog_err("signals: %s", strerror(-err));
		return err;
	}
	err = vev_fd_add(d->loop, d->sig_fd, VEV_READ, vd_signal_cb, d);
	if (err)
		return err;
	/* Before the platform: a second vrdmad stops before touching it. */
	err = vd_ctl_open(d->loop, d->ctl_path, vd_cmd_handle, d, &d->ctl);
	if (err) {
		if (err == -EADDRINUSE)
			vlog_err("another vrdmad is running at %s", d->ctl_path);
		else
			vlog_err("control socket %s: %s", d->ctl_path, strerror(-err));
		return err;
	}
	err = vbe_files_lock(d->policy_path, d->state_dir, &d->files);
	if (err) {
		if (err != -EBUSY && err != -EINVAL)
			vlog_err("policy file %s or state dir %s: %s",
				 d->policy_path ? d->policy_path : "none",
				 d->state_dir ? d->state_dir : "none", strerror(-err));
		return err;
	}
	vd_raise_nofile();
	err = vplat_open(&pcfg, &d->plat);
	if (err) {
		vlog_err("platform open (run_dir %s): %s", d->run_dir, strerror(-err));
		return err;
	}
	ncfg.plat = d->plat;
	if (vbe_rng_wait(VD_RNG_WAIT_MS))
		vlog_warn("the kernel's random pool is not ready: memory registrations"
			  " are refused until it is");
	err = vbe_node_new(&ncfg, &d->node);
	if (err) {
		vlog_err("backend node: %s", strerror(-err));
		return err;
	}
	err = vev_fd_add(d->loop, vplat_fd(d->plat), VEV_READ, vd_plat_cb, d);
	if (err) {
		vlog_err("platform fd: %s", strerror(-err));
		return err;
	}
	err = vev_timer_add(d->loop, VD_TICK_MS, vd_tick, d, NULL);
	if (err)
		return err;
	err = vd_auto_start(d->plat, &d->attach, &vd_attach_ops, d, &d->autoattach);
	if (err)
		return err;
	vev_set_busy(d->loop, &vd_busy_ops, d, spin_us);
	err = vd_write_pid(d->pid_path);
	if (err) {
		vlog_err("pid file %s: %s", d->pid_path, strerror(-err));
		return err;
	}
	d->pid_written = 1;
	return 0;
}

/* Reverse of vd_start; safe on a partial start. */
static void vd_stop(struct vd_daemon *d)
{
	if (d->pid_written)
		unlink(d->pid_path);
	vd_auto_stop(d->autoattach);
	if (d->node)
		vbe_node_free(d->node);	/* calls vd_fd_change: loop still up */
	if (d->plat) {
		if (d->loop)
			vev_fd_del(d->loop, vplat_fd(d->plat));
		vplat_close(d->plat);
	}
	if (d->sig_fd >= 0)
		close(d->sig_fd);
	vd_ctl_close(d->ctl);
	vev_loop_free(d->loop);
	vbe_files_unlock(&d->files);	/* after the node's last write */
}

static int vd_parse_port(const char *s)
{
	if (vd_conf_port(s, &vd_rdma_port)) {
		fprintf(stderr, "vrdmad: bad RDMA port '%s' (1..65535)\n", s);
		return -EINVAL;
	}
	vd_port_set = true;
	return 0;
}

/*
 * The configuration file (issue 13) fills in what neither the command
 * line nor the environment set; `path` NULL: the default file, if any.
 * d's strings then point into c, which lives as long as vrdmad.
 */
static int vd_config(struct vd_daemon *d, struct vd_conf *c, const char *path,
		     unsigned *spin_us, int *spin_set, unsigned *rt_prio)
{
	int err = vd_conf_load(c, path ? path : VD_CONF_DEF, path != NULL);

	if (err)
		return err;
	if (!d->node_name)
		d->node_name = c->node;
	if (!d->run_dir && !getenv("VRDMA_RUN_DIR"))
		d->run_dir = c->run_dir;
	if (!vd_addr_set && c->rdma_addr)
		vd_rdma_addr = c->rdma_addr;
	if (!vd_port_set && c->rdma_port_set)
		vd_rdma_port = c->rdma_port;
	if (!vd_policy_set && c->policy)
		d->policy_path = strcmp(c->policy, "none") ? c->policy : NULL;
	if (!d->state_dir)
		d->state_dir = c->state_dir;
	if (!*spin_set && c->spin_us_set) {
		*spin_us = c->spin_us;
		*spin_set = 1;
	}
	if (!*rt_prio && c->rt_prio_set)
		*rt_prio = c->rt_prio;
	if (vlog_level != VLOG_DEBUG && c->verbose_set && c->verbose)
		vlog_level = VLOG_DEBUG;
	if (!d->coll_set && c->coll_set)
		d->coll_off = c->coll_off;
	/* [limits] replace the built-in defaults; tenant:default's keys
	 * (vrdmactl set, kept in the settings file) still override them. */
	if (c->limits_set) {
		uint64_t def[VBE_TQ_N];
		unsigned q;

		vbe_tenant_defaults(def);
		for (q = 0; q < VBE_TQ_N; q++)
			if (!(c->limits_set & 1u << q))
				c->limits[q] = def[q];
		d->limits = c->limits;
		d->limits_set = c->limits_set;
		d->tenant_guests = (unsigned)c->limits[VBE_TQ_GUESTS];	/* 0..256 */
	}
	/* checked when the file was read */
	if (!vd_attach_set && c->attach &&
	    vd_attach_policy_parse(c->attach, &d->attach, NULL))
		return -EINVAL;
	return 0;
}

/*
 * The event loop's thread (only: the reaper's teardowns may sleep long) at
 * SCHED_RR.  On a small host a guest that busy-polls (perftest does) holds
 * a core until the kernel preempts it, and a normal vrdmad woken by that
 * guest's doorbell waits its turn: ib_write_lat 8 B through vrdma on two
 * cores, 2 ms typical; at --rt-prio 1, 34 us.  No spin window then
 * (main): it sleeps as soon as a poll finds nothing, so it holds a core
 * only while guests give it work; the kernel's RT throttling bounds even
 * that.  Not inherited by children.
 */
static int vd_rt(unsigned prio)
{
	struct sched_param sp = { .sched_priority = (int)prio };

	if (sched_setscheduler(0, SCHED_RR | SCHED_RESET_ON_FORK, &sp) < 0) {
		int err = -errno;

		vlog_err("--rt-prio %u: cannot use SCHED_RR: %s (needs CAP_SYS_NICE; under "
			 "systemd: CPUSchedulingPolicy=rr)", prio, strerror(-err));
		return err;
	}
	vlog_info("data path at SCHED_RR priority %u", prio);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "state-dir", required_argument, NULL, VD_OPT_STATE_DIR },
		{ "foreground", no_argument, NULL, 'f' },
		{ "run-dir", required_argument, NULL, 'S' },
		{ "node", required_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "spin-us", required_argument, NULL, 's' },
		{ "rt-prio", required_argument, NULL, 'r' },
		{ "rdma-addr", required_argument, NULL, 'a' },
		{ "rdma", required_argument, NULL, 'R' },
		{ "rdma-port", required_argument, NULL, 'p' },
		{ "policy", required_argument, NULL, 'P' },
		{ "attach", required_argument, NULL, VD_OPT_ATTACH },
		{ "coll", required_argument, NULL, VD_OPT_COLL },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct vd_daemon d = { .sig_fd = -1, .files = { { -1, -1 } } };
	const char *conf_path = NULL;
	struct vd_conf conf = { 0 };
	unsigned spin_us = VEV_SPIN_US_DEF, rt_prio = 0;
	int spin_set = 0;
	char host[HOST_NAME_MAX + 1] = "";
	const char *why;
	unsigned long v;
	char *end;
	int c, err;

	if (getenv("VRDMA_RDMA_ADDR")) {
		vd_rdma_addr = getenv("VRDMA_RDMA_ADDR");
		vd_addr_set = true;
	}
	if (getenv("VRDMA_POLICY") && *getenv("VRDMA_POLICY")) {
		d.policy_path = getenv("VRDMA_POLICY");
		vd_policy_set = true;
	}
	if (getenv("VRDMA_RDMA_PORT") && vd_parse_port(getenv("VRDMA_RDMA_PORT")))
		return 1;
	while ((c = getopt_long(argc, argv, "c:fS:n:a:R:p:P:vVh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			conf_path = optarg;
			break;
		case VD_OPT_STATE_DIR:
			d.state_dir = optarg;
			break;
		case 'f':
			break;
		case 'S':
			d.run_dir = optarg;
			break;
		case 'n':
			d.node_name = optarg;
			break;
		case 'v':
			vlog_level = VLOG_DEBUG;
			break;
		case 'a':
			vd_rdma_addr = optarg;
			vd_addr_set = true;
			break;
		case 'R':
			if (strcmp(optarg, "none")) {
				fprintf(stderr, "vrdmad: -R takes 'none'\n");
				return 1;
			}
			vd_rdma_addr = "none";
			vd_addr_set = true;
			break;
		case 'p':
			if (vd_parse_port(optarg))
				return 1;
			break;
		case 'P':
			d.policy_path = strcmp(optarg, "none") ? optarg : NULL;
			vd_policy_set = true;
			break;
		case VD_OPT_ATTACH:
			if (vd_attach_policy_parse(optarg, &d.attach, &why)) {
				fprintf(stderr, "vrdmad: bad --attach '%s': %s\n", optarg, why);
				return 2;
			}
			vd_attach_set = true;
			break;
		case VD_OPT_COLL:
			if (vd_conf_onoff(optarg, &d.coll_off)) {
				fprintf(stderr, "vrdmad: bad --coll '%s' (on or off)\n", optarg);
				return 1;
			}
			d.coll_set = true;
			break;
		case 's':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || v > VD_SPIN_US_MAX) {
				fprintf(stderr, "vrdmad: bad --spin-us '%s' (0..%u)\n",
					optarg, VD_SPIN_US_MAX);
				return 1;
			}
			spin_us = (unsigned)v;
			spin_set = 1;
			break;
		case 'r':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 1 || v > 99) {
				fprintf(stderr, "vrdmad: bad --rt-prio '%s' (1..99)\n", optarg);
				return 1;
			}
			rt_prio = (unsigned)v;
			break;
		case 'V':
			printf("vrdmad (vrdma) %s\n", VRDMA_VERSION);
			return 0;
		case 'h':
			vd_usage(stdout);
			return 0;
		default:
			vd_usage(stderr);
			return 1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vrdmad: unexpected argument '%s'\n", argv[optind]);
		vd_usage(stderr);
		return 1;
	}
	if (vd_config(&d, &conf, conf_path, &spin_us, &spin_set, &rt_prio))
		return 2;
	/* Under SCHED_RR the spin window's yield hands the core to no normal
	 * task: a guest sharing it would wait out every window, and one that
	 * posts inside each window would keep us on the core for good. */
	if (rt_prio && spin_set && spin_us) {
		fprintf(stderr, "vrdmad: --rt-prio takes no spin window (--spin-us 0)\n");
		vd_conf_free(&conf);
		return 1;
	}
	if (rt_prio)
		spin_us = 0;
	if (!d.run_dir)
		d.run_dir = getenv("VRDMA_RUN_DIR");
	if (!d.run_dir || !*d.run_dir)
		d.run_dir = VD_RUN_DIR_DEF;
	/* One settings file per vrdmad: a private one (tests, a second
	 * node's) keeps none unless told where. */
	if (!d.state_dir && strcmp(d.run_dir, VD_RUN_DIR_DEF)) {
		d.state_dir = "none";
	} else if (!d.state_dir) {
		/* The default only where it can be made (a rig's root, a
		 * plain host without the package): else in memory, said. */
		d.state_dir = VD_STATE_DIR_DEF;
		if (mkdir(d.state_dir, 0700) < 0 && errno != EEXIST) {
			vlog_warn("state dir %s: %s: per-VM settings are kept in memory only",
				  d.state_dir, strerror(errno));
			d.state_dir = "none";
		}
	}
	if (!strcmp(d.state_dir, "none"))
		d.state_dir = NULL;
	if (!d.node_name) {
		if (gethostname(host, sizeof(host) - 1) < 0 || !host[0])
			strcpy(host, "localhost");
		d.node_name = host;
	}

	err = vd_start(&d, spin_us);
	if (!err && rt_prio)
		err = vd_rt(rt_prio);
	if (err) {
		vd_stop(&d);
		vd_conf_free(&conf);
		return 1;
	}
	vlog_info("vrdmad %s started node=%s run_dir=%s platform=%s spin_us=%u state_dir=%s "
		  "coll=%s pid=%ld", VRDMA_VERSION, d.node_name, d.run_dir, vplat_kind(d.plat),
		  spin_us, d.state_dir ? d.state_dir : "none", d.coll_off ? "off" : "on",
		  (long)getpid());
	err = vd_notify("READY=1");
	if (err)
		vlog_warn("cannot notify systemd (NOTIFY_SOCKET): %s", strerror(-err));
	err = vev_run(d.loop);
	if (err)
		vlog_err("event loop failed: %s", strerror(-err));
	vd_notify("STOPPING=1");
	vd_stop(&d);
	vd_conf_free(&conf);
	vlog_info("vrdmad stopped");
	return err ? 1 : 0;
}
