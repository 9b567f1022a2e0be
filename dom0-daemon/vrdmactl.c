// SPDX-License-Identifier: MIT
/*
 * vrdmactl: talk to vrdmad over its control socket.  One subcommand per
 * table entry (the table also prints the usage); each sends one request
 * line, prints the response and exits 0, or 1 if the daemon could not be
 * reached or answered "error: ...".
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#define VC_RUN_DIR_DEF		"/run/vrdma"
#define VC_CTL_NAME		"vrdmad.ctl"
#define VC_TIMEOUT_MS		5000
#define VC_RESP_MAX		(64u << 20)	/* refuse absurd answers */

struct vc_opts {
	const char *run_dir;
	int json;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

struct vc_cmd {
	const char *name;
	int (*fn)(struct vc_opts *o, int argc, char **argv);
	const char *args;
	const char *desc;
};

static const char *prog = "vrdmactl";

static int64_t vc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int vc_left(int64_t deadline)
{
	int64_t left = deadline - vc_now_ms();

	return left < 0 ? 0 : (int)left;
}

/* Wait for events on fd until deadline: 0, or -ETIMEDOUT / -errno. */
static int vc_wait(int fd, short events, int64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int r;

	for (;;) {
		r = poll(&pfd, 1, vc_left(deadline));
		if (r > 0)
			return 0;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

static int vc_connect(const struct vc_opts *o, int64_t deadline)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	int fd, err;

	strcpy(sa.sun_path, o->path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* EAGAIN: the daemon's backlog is full; retry until the deadline. */
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = errno;
		if (err == EINTR)
			continue;
		if (err != EAGAIN || vc_left(deadline) == 0) {
			close(fd);
			return err == EAGAIN ? -ETIMEDOUT : -err;
		}
		nanosleep(&pause, NULL);
	}
	return fd;
}

static int vc_send_all(int fd, const char *buf, size_t len, int64_t deadline)
{
	ssize_t n;
	int err;

	while (len) {
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
			err = vc_wait(fd, POLLOUT, deadline);
			if (err)
				return err;
			continue;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read until EOF into a malloc'ed, NUL-terminated buffer. */
static int vc_recv_all(int fd, char **out, int64_t deadline)
{
	size_t len = 0, cap = 4096;
	char *buf, *nbuf;
	ssize_t n;
	int err;

	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (cap - len < 2) {
			if (cap >= VC_RESP_MAX) {
				err = -EFBIG;
				goto err_free;
			}
			nbuf = realloc(buf, cap * 2);
			if (!nbuf) {
				err = -ENOMEM;
				goto err_free;
			}
			buf = nbuf;
			cap *= 2;
		}
		n = recv(fd, buf + len, cap - len - 1, 0);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				err = -errno;
				goto err_free;
			}
			err = vc_wait(fd, POLLIN, deadline);
			if (err)
				goto err_free;
			continue;
		}
		len += (size_t)n;
	}
	buf[len] = '\0';
	*out = buf;
	return 0;

err_free:
	free(buf);
	return err;
}

/* One request line, one response: print it, 0 or 1 for the exit status. */
static int vc_request(const struct vc_opts *o, const char *req)
{
	int64_t deadline = vc_now_ms() + VC_TIMEOUT_MS;
	char *resp = NULL;
	int fd, err;

	char line[300];

	/* -j first: vrdmad answers any command in JSON then. */
	snprintf(line, sizeof(line), "%s%s", o->json ? "-j " : "", req);
	req = line;
	fd = vc_connect(o, deadline);
	if (fd < 0) {
		fprintf(stderr, "%s: cannot reach vrdmad at %s: %s\n", prog, o->path,
			strerror(-fd));
		return 1;
	}
	err = vc_send_all(fd, req, strlen(req), deadline);
	if (!err)
		err = vc_send_all(fd, "\n", 1, deadline);
	if (!err)
		shutdown(fd, SHUT_WR);
	if (!err)
		err = vc_recv_all(fd, &resp, deadline);
	close(fd);
	if (err == -ETIMEDOUT) {
		fprintf(stderr, "%s: vrdmad at %s did not answer within %d s\n", prog,
			o->path, VC_TIMEOUT_MS / 1000);
		return 1;
	}
	if (err) {
		fprintf(stderr, "%s: talking to vrdmad at %s: %s\n", prog, o->path,
			strerror(-err));
		return 1;
	}
	if (!strncmp(resp, "error:", 6)) {
		fprintf(stderr, "%s: %s", prog, resp);
		free(resp);
		return 1;
	}
	fputs(resp, stdout);
	free(resp);
	return fflush(stdout) ? 1 : 0;
}

static int vc_no_args(int argc, char **argv)
{
	if (argc > 1) {
		fprintf(stderr, "%s: %s takes no arguments\n", prog, argv[0]);
		return -1;
	}
	return 0;
}

static int vc_cmd_list(struct vc_opts *o, int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-j") && strcmp(argv[i], "--json")) {
			fprintf(stderr, "%s: list: unknown option '%s'\n", prog, argv[i]);
			return 1;
		}
		o->json = 1;
	}
	return vc_request(o, "list");
}

static int vc_cmd_census(struct vc_opts *o, int argc, char **argv)
{
	return vc_no_args(argc, argv) ? 1 : vc_request(o, "census");
}

static int vc_cmd_ping(struct vc_opts *o, int argc, char **argv)
{
	return vc_no_args(argc, argv) ? 1 : vc_request(o, "ping");
}

/* attach|detach <domid> [devid]: numbers checked here and by vrdmad. */
static int vc_cmd_dev(struct vc_opts *o, int argc, char **argv)
{
	char req[64];
	int i;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "%s: usage: %s %s <domid> [devid]\n", prog, prog, argv[0]);
		return 1;
	}
	for (i = 1; i < argc; i++)
		if (!argv[i][0] || strspn(argv[i], "0123456789") != strlen(argv[i]) ||
		    strlen(argv[i]) > 5) {
			fprintf(stderr, "%s: %s: bad number '%s'\n", prog, argv[0], argv[i]);
			return 1;
		}
	snprintf(req, sizeof(req), "%s %s %s", argv[0], argv[1], argc > 2 ? argv[2] : "0");
	return vc_request(o, req);
}

/* set|get <vm> [key=value...]: the words go to vrdmad as they are; it
 * checks every value (the same check as for keys written in xenstore). */
/* Words -> one request line (no word may hold a blank). */
static int vc_join(struct vc_opts *o, int argc, char **argv)
{
	char req[240];
	size_t len = 0;
	int i, n;

	for (i = 0; i < argc; i++) {
		if (!argv[i][0] || strpbrk(argv[i], " \t\n")) {
			fprintf(stderr, "%s: %s: bad word '%s'\n", prog, argv[0], argv[i]);
			return 1;
		}
		n = snprintf(req + len, sizeof(req) - len, "%s%s", i ? " " : "", argv[i]);
		if (n < 0 || (size_t)n >= sizeof(req) - len) {
			fprintf(stderr, "%s: %s: request too long\n", prog, argv[0]);
			return 1;
		}
		len += (size_t)n;
	}
	return vc_request(o, req);
}

static int vc_cmd_prio(struct vc_opts *o, int argc, char **argv)
{
	if (argc < 2 || (!strcmp(argv[0], "get") && argc != 2) ||
	    (!strcmp(argv[0], "set") && argc < 3)) {
		fprintf(stderr, "%s: usage: %s %s\n", prog, prog, !strcmp(argv[0], "get") ?
			"get <vm>" : "set <vm> weight=N class=high|normal|low "
			"rate=BYTES/s[,burst] qps=N mem=BYTES [wrs=N] [credits=N]");
		return 1;
	}
	return vc_join(o, argc, argv);
}

/* policy [words]: passed on as they are; vrdmad checks them. */
static int vc_cmd_policy(struct vc_opts *o, int argc, char **argv)
{
	return vc_join(o, argc, argv);
}

static int vc_cmd_stats(struct vc_opts *o, int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-j") && strcmp(argv[i], "--json")) {
			fprintf(stderr, "%s: stats: unknown option '%s'\n", prog, argv[i]);
			return 1;
		}
		o->json = 1;
	}
	return vc_request(o, "stats");
}

static volatile sig_atomic_t vc_stop;

static void vc_on_signal(int sig)
{
	(void)sig;
	vc_stop = 1;
}

/* Up to ms milliseconds, or until 'q' on a terminal stdin. */
static void vc_top_wait(int tty_in, int ms)
{
	int64_t deadline = vc_now_ms() + ms;
	struct pollfd pfd = { .fd = 0, .events = POLLIN };
	char c;

	while (!vc_stop && vc_left(deadline) > 0) {
		if (poll(&pfd, tty_in ? 1 : 0, vc_left(deadline)) <= 0)
			continue;	/* timeout, or a signal: the loop checks */
		if (read(0, &c, 1) != 1 || c == 'q' || c == 'Q')
			vc_stop = 1;
	}
}

/* top [-n N]: stats every second on a cleared screen until q / Ctrl-C;
 * without a terminal, plain successive tables. */
static int vc_cmd_top(struct vc_opts *o, int argc, char **argv)
{
	int tty_in = isatty(0), tty_out = isatty(1), rc = 0, c;
	struct sigaction sa = { .sa_handler = vc_on_signal };
	struct termios old, raw;
	long iters = -1, i;
	char *end;
	time_t t;

	optind = 1;
	while ((c = getopt(argc, argv, "n:")) != -1) {
		if (c != 'n')
			goto usage;
		iters = strtol(optarg, &end, 10);
		if (*end || iters < 1)
			goto usage;
	}
	if (optind != argc)
		goto usage;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* Keys only in the terminal's foreground (no SIGTTOU stop). */
	if (tty_in && tcgetpgrp(0) == getpgrp() && !tcgetattr(0, &old)) {
		raw = old;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tcsetattr(0, TCSANOW, &raw);
	} else {
		tty_in = 0;
	}
	for (i = 0; !vc_stop && (iters < 0 || i < iters); i++) {
		if (i)
			vc_top_wait(tty_in, 1000);
		if (vc_stop)
			break;
		t = time(NULL);
		if (tty_out)
			fputs("\033[H\033[2J", stdout);
		printf("vrdmactl top  %s%s", ctime(&t), tty_in ? "(q to quit)\n" : "");
		rc = vc_request(o, "stats");
		if (rc)
			break;
		if (!tty_out)
			putchar('\n');
		fflush(stdout);
	}
	if (tty_in)
		tcsetattr(0, TCSANOW, &old);
	return rc;
usage:
	fprintf(stderr, "%s: usage: %s top [-n iterations]\n", prog, prog);
	return 1;
}

static int vc_cmd_help(struct vc_opts *o, int argc, char **argv);

static const struct vc_cmd vc_cmds[] = {
	{ "list", vc_cmd_list, "[-j]", "guests, QPs, MRs and counters (-j: JSON)" },
	{ "census", vc_cmd_census, "", "object counts and open fds, as JSON" },
	{ "ping", vc_cmd_ping, "", "check that vrdmad answers" },
	{ "attach", vc_cmd_dev, "<domid> [devid]", "create a domain's vrdma device (xenstore)" },
	{ "detach", vc_cmd_dev, "<domid> [devid]", "remove it (the guest sees errors)" },
	{ "set", vc_cmd_prio, "<vm> key=val..", "weight=N class=high|normal|low rate=B/s[,burst] "
	  "qps=N mem=B wrs=N credits=N" },
	{ "get", vc_cmd_prio, "<vm>", "a guest's settings (vm: domid[/devid] or name); "
	  "set/get tenant:NAME|tenant:default guests=N listeners=N conns=N qps=N mem=B cqs=N mrs=N pages=N cmds=N, "
	  "get tenants" },
	{ "policy", vc_cmd_policy, "[args]", "connect policy: show; check FROM TO; default "
	  "open|tenant; group G T..; ungroup T..; allow|deny FROM TO; remove allow|deny "
	  "FROM TO; clear" },
	{ "stats", vc_cmd_stats, "[-j]", "per-guest traffic, queue delay, throttling, refusals" },
	{ "top", vc_cmd_top, "[-n N]", "stats refreshed every second (q or Ctrl-C ends)" },
	{ "help", vc_cmd_help, "", "this text" },
};

#define VC_NCMDS	(sizeof(vc_cmds) / sizeof(vc_cmds[0]))

static void vc_usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: %s [-S run_dir] [-j] <command> [args]\n"
		"  -S run_dir   vrdmad's socket directory (env VRDMA_RUN_DIR, else %s)\n"
		"  -j           JSON output where the command has it\n"
		"Commands:\n", prog, VC_RUN_DIR_DEF);
	for (i = 0; i < VC_NCMDS; i++)
		fprintf(f, "  %-8s %-15s %s\n", vc_cmds[i].name, vc_cmds[i].args,
			vc_cmds[i].desc);
}

static int vc_cmd_help(struct vc_opts *o, int argc, char **argv)
{
	(void)o;
	(void)argc;
	(void)argv;
	vc_usage(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct vc_opts o = { 0 };
	size_t i;
	int c, n;

	/* '+': options after the subcommand belong to it. */
	while ((c = getopt(argc, argv, "+S:jh")) != -1) {
		switch (c) {
		case 'S':
			o.run_dir = optarg;
			break;
		case 'j':
			o.json = 1;
			break;
		case 'h':
			vc_usage(stdout);
			return 0;
		default:
			vc_usage(stderr);
			return 1;
		}
	}
	if (optind >= argc) {
		vc_usage(stderr);
		return 1;
	}
	if (!o.run_dir)
		o.run_dir = getenv("VRDMA_RUN_DIR");
	if (!o.run_dir || !*o.run_dir)
		o.run_dir = VC_RUN_DIR_DEF;
	n = snprintf(o.path, sizeof(o.path), "%s/%s", o.run_dir, VC_CTL_NAME);
	if (n < 0 || (size_t)n >= sizeof(o.path)) {
		fprintf(stderr, "%s: run dir path too long: %s\n", prog, o.run_dir);
		return 1;
	}
	for (i = 0; i < VC_NCMDS; i++) {
		if (!strcmp(argv[optind], vc_cmds[i].name))
			return vc_cmds[i].fn(&o, argc - optind, argv + optind);
	}
	fprintf(stderr, "%s: unknown command '%s'\n", prog, argv[optind]);
	vc_usage(stderr);
	return 1;
}
