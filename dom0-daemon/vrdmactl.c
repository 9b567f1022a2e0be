// SPDX-License-Identifier: MIT
/*
 * vrdmactl: talk to vrdmad over its control socket, as iproute2's `rdma`
 * and xl talk to theirs.  One subcommand per table entry (the table also
 * prints the usage); each sends one request line and prints the answer,
 * text or (-j) JSON, which vrdmad builds; -p re-indents it here.
 *
 * Exit status: 0 done, 1 vrdmad refused (its "error: ..." is printed) or
 * output failed, 2 usage error, 3 vrdmad could not be reached or did not
 * answer: a script can tell a typo from a daemon that is down.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <json-c/json.h>

#include "version.h"

#define VC_RUN_DIR_DEF		"/run/vrdma"
#define VC_CTL_NAME		"vrdmad.ctl"
#define VC_TIMEOUT_MS		5000
#define VC_RESP_MAX		(64u << 20)	/* refuse absurd answers */
#define VC_REQ_MAX		255		/* vrdmad's line, newline aside */

enum { VC_OK = 0, VC_REFUSED = 1, VC_USAGE = 2, VC_UNREACHABLE = 3 };

struct vc_opts {
	const char *run_dir;
	bool json, pretty;
	const char *sort;		/* stats, top: -s */
	long iters;			/* top: -n, -1 = until q */
	int delay_ms;			/* top: -d */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

struct vc_cmd {
	const char *name;
	int (*fn)(struct vc_opts *o, int argc, char **argv);
	const char *opts;		/* its own options: s (sort), n, d (top) */
	const char *args;
	const char *brief;		/* its line in the usage */
	const char *desc;		/* COMMAND -h */
};

static const char *prog = "vrdmactl";

/* The keys of `stats -s` (vrdmad's dump.c), in top's `s` order. */
static const char *const vc_sorts[] = {
	"io", "tx", "rx", "total", "qdly", "thr", "ref", "vm", "guest", NULL,
};

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

/*
 * One request line ("-j " first for JSON), its answer in *resp (the
 * caller frees it): VC_OK, or VC_REFUSED / VC_UNREACHABLE with the
 * reason printed.
 */
static int vc_ask(const struct vc_opts *o, const char *req, char **resp)
{
	int64_t deadline = vc_now_ms() + VC_TIMEOUT_MS;
	char line[VC_REQ_MAX + 8];
	int fd, err;

	*resp = NULL;
	snprintf(line, sizeof(line), "%s%s\n", o->json ? "-j " : "", req);
	fd = vc_connect(o, deadline);
	if (fd < 0) {
		fprintf(stderr, "%s: cannot reach vrdmad at %s: %s\n", prog, o->path,
			strerror(-fd));
		return VC_UNREACHABLE;
	}
	err = vc_send_all(fd, line, strlen(line), deadline);
	if (!err)
		shutdown(fd, SHUT_WR);
	if (!err)
		err = vc_recv_all(fd, resp, deadline);
	close(fd);
	if (err == -ETIMEDOUT) {
		fprintf(stderr, "%s: vrdmad at %s did not answer within %d s\n", prog,
			o->path, VC_TIMEOUT_MS / 1000);
		return VC_UNREACHABLE;
	}
	if (err) {
		fprintf(stderr, "%s: talking to vrdmad at %s: %s\n", prog, o->path,
			strerror(-err));
		return VC_UNREACHABLE;
	}
	if (!**resp) {		/* closed on us: a full client table, a crash */
		fprintf(stderr, "%s: vrdmad at %s closed without an answer\n", prog, o->path);
		free(*resp);
		*resp = NULL;
		return VC_UNREACHABLE;
	}
	if (!strncmp(*resp, "error:", 6)) {
		fprintf(stderr, "%s: %s", prog, *resp);
		free(*resp);
		*resp = NULL;
		return VC_REFUSED;
	}
	return VC_OK;
}

/* A JSON answer checked by a parser before anyone else trusts it. */
static struct json_object *vc_parse(const char *resp)
{
	enum json_tokener_error jerr;
	struct json_object *j = json_tokener_parse_verbose(resp, &jerr);

	if (!j)
		fprintf(stderr, "%s: vrdmad's answer is not JSON (%s)\n", prog,
			json_tokener_error_desc(jerr));
	return j;
}

static int vc_put_json(const struct vc_opts *o, struct json_object *j)
{
	int flags = JSON_C_TO_STRING_NOSLASHESCAPE |
		    (o->pretty ? JSON_C_TO_STRING_PRETTY : JSON_C_TO_STRING_PLAIN);
	const char *s = json_object_to_json_string_ext(j, flags);

	if (!s)
		return VC_REFUSED;
	puts(s);
	return VC_OK;
}

static int vc_flush(void)
{
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: writing the answer: %s\n", prog, strerror(errno));
		return VC_REFUSED;
	}
	return VC_OK;
}

/* Print an answer: text as it came, JSON checked (and re-indented: -p). */
static int vc_show(const struct vc_opts *o, const char *resp)
{
	struct json_object *j;
	int rc;

	if (!o->json) {
		fputs(resp, stdout);
		return vc_flush();
	}
	j = vc_parse(resp);
	if (!j)
		return VC_REFUSED;
	rc = vc_put_json(o, j);
	json_object_put(j);
	return rc ? rc : vc_flush();
}

static int vc_request(const struct vc_opts *o, const char *req)
{
	char *resp;
	int rc;

	rc = vc_ask(o, req, &resp);
	if (!rc)
		rc = vc_show(o, resp);
	free(resp);
	return rc;
}

/* Words -> one request line (no word may hold a blank). */
static int vc_join(const struct vc_opts *o, int argc, char **argv)
{
	char req[VC_REQ_MAX - 3];	/* room for "-j " */
	size_t len = 0;
	int i, n;

	for (i = 0; i < argc; i++) {
		if (!argv[i][0] || strpbrk(argv[i], " \t\r\n")) {
			fprintf(stderr, "%s: %s: bad word '%s'\n", prog, argv[0], argv[i]);
			return VC_USAGE;
		}
		n = snprintf(req + len, sizeof(req) - len, "%s%s", i ? " " : "", argv[i]);
		if (n < 0 || (size_t)n >= sizeof(req) - len) {
			fprintf(stderr, "%s: %s: request too long\n", prog, argv[0]);
			return VC_USAGE;
		}
		len += (size_t)n;
	}
	return vc_request(o, req);
}

static const struct vc_cmd *vc_find(const char *name);

/* A usage error: what is wrong, then the command's usage line; exit 2. */
static int vc_usage_err(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int vc_usage_err(const char *cmd, const char *fmt, ...)
{
	const struct vc_cmd *c = vc_find(cmd);
	va_list ap;

	fprintf(stderr, "%s: %s: ", prog, cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (c)
		fprintf(stderr, "Usage: %s [-j] [-p] %s%s%s\n", prog, c->name,
			*c->args ? " " : "", c->args);
	return VC_USAGE;
}

static int vc_cmd_list(struct vc_opts *o, int argc, char **argv)
{
	if (argc > 1)
		return vc_usage_err(argv[0], "unexpected '%s'", argv[1]);
	return vc_request(o, argv[0]);	/* list, census, ping, attach-policy */
}

/* attach|detach <domid> [devid]: numbers checked here and by vrdmad. */
static int vc_cmd_dev(struct vc_opts *o, int argc, char **argv)
{
	char req[64];
	int i;

	if (argc < 2 || argc > 3)
		return vc_usage_err(argv[0], "a domain id, then a device id (default 0)");
	for (i = 1; i < argc; i++)
		if (!argv[i][0] || strspn(argv[i], "0123456789") != strlen(argv[i]) ||
		    strlen(argv[i]) > 5)
			return vc_usage_err(argv[0], "bad number '%s'", argv[i]);
	snprintf(req, sizeof(req), "%s %s %s", argv[0], argv[1], argc > 2 ? argv[2] : "0");
	return vc_request(o, req);
}

/* attach-policy [forget VM]: the VM name is vrdmad's to check. */
static int vc_cmd_attach_policy(struct vc_opts *o, int argc, char **argv)
{
	if (argc == 1)
		return vc_request(o, argv[0]);
	if (argc != 3 || strcmp(argv[1], "forget"))
		return vc_usage_err(argv[0], "nothing, or forget and a VM name");
	return vc_join(o, argc, argv);
}

/* set|get <vm> [key=value...]: the words go to vrdmad as they are; it
 * checks every value (the same check as for keys written in xenstore). */
static int vc_cmd_prio(struct vc_opts *o, int argc, char **argv)
{
	if (!strcmp(argv[0], "get") && argc != 2)
		return vc_usage_err(argv[0], "one VM, tenant:NAME or tenants");
	if (!strcmp(argv[0], "set") && argc < 3)
		return vc_usage_err(argv[0], "a VM (or tenant:NAME), then key=value words");
	return vc_join(o, argc, argv);
}

/* policy [words]: passed on as they are; vrdmad checks them. */
static int vc_cmd_policy(struct vc_opts *o, int argc, char **argv)
{
	return vc_join(o, argc, argv);
}

/* trace [lat N | dump | off]: N is vrdmad's to bound. */
static int vc_cmd_trace(struct vc_opts *o, int argc, char **argv)
{
	bool lat = argc == 3 && !strcmp(argv[1], "lat");

	if (lat ? strspn(argv[2], "0123456789") != strlen(argv[2]) || strlen(argv[2]) > 9 :
	    argc > 2 || (argc == 2 && strcmp(argv[1], "dump") && strcmp(argv[1], "off")))
		return vc_usage_err(argv[0], "nothing, lat and a number of stamps, dump or off");
	return vc_join(o, argc, argv);
}

static int vc_cmd_stats(struct vc_opts *o, int argc, char **argv)
{
	char req[64];

	if (argc > 1)
		return vc_usage_err(argv[0], "unexpected '%s'", argv[1]);
	snprintf(req, sizeof(req), "stats%s%s", o->sort ? " -s " : "", o->sort ? o->sort : "");
	return vc_request(o, req);
}

static volatile sig_atomic_t vc_stop;

static void vc_on_signal(int sig)
{
	(void)sig;
	vc_stop = 1;
}

/* Up to ms milliseconds, or a key on a terminal stdin: q ends, s takes
 * the next sort key (*sort), any other refreshes now. */
static void vc_top_wait(int tty_in, int ms, int *sort)
{
	int64_t deadline = vc_now_ms() + ms;
	struct pollfd pfd = { .fd = 0, .events = POLLIN };
	char c;

	while (!vc_stop && vc_left(deadline) > 0) {
		if (poll(&pfd, tty_in ? 1 : 0, vc_left(deadline)) <= 0)
			continue;	/* timeout, or a signal: the loop checks */
		if (read(0, &c, 1) != 1 || c == 'q' || c == 'Q') {
			vc_stop = 1;
		} else if (c == 's' || c == 'S') {
			if (!vc_sorts[++*sort])
				*sort = 0;
			return;
		} else {
			return;
		}
	}
}

/* One round of top -j: {"time":"<local ISO 8601>","stats":{...}}. */
static int vc_top_json(const struct vc_opts *o, const char *resp)
{
	struct json_object *j, *w;
	char stamp[40];
	time_t t = time(NULL);
	struct tm tm;
	int rc;

	j = vc_parse(resp);
	if (!j)
		return VC_REFUSED;
	w = json_object_new_object();
	if (!localtime_r(&t, &tm) || !strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S%z", &tm))
		snprintf(stamp, sizeof(stamp), "%lld", (long long)t);
	if (!w || json_object_object_add(w, "time", json_object_new_string(stamp)) ||
	    json_object_object_add(w, "stats", j)) {
		json_object_put(w);
		json_object_put(j);
		return VC_REFUSED;
	}
	rc = vc_put_json(o, w);
	json_object_put(w);
	return rc;
}

static int vc_sort_index(const char *key)
{
	int i;

	for (i = 0; vc_sorts[i]; i++)
		if (!strcmp(vc_sorts[i], key))
			return i;
	return -1;
}

/* top [-n N] [-d S] [-s KEY]: stats every second on a cleared screen,
 * busiest first, until q / Ctrl-C; without a terminal, plain successive
 * tables; -j: one JSON document a line. */
static int vc_cmd_top(struct vc_opts *o, int argc, char **argv)
{
	int tty_in = isatty(0), tty_out = isatty(1) && !o->json, rc = 0, sort;
	struct sigaction sa = { .sa_handler = vc_on_signal };
	struct termios old, raw;
	char req[64], stamp[16], *resp;
	struct tm tm;
	time_t t;
	long i;

	if (argc > 1)
		return vc_usage_err(argv[0], "unexpected '%s'", argv[1]);
	sort = vc_sort_index(o->sort ? o->sort : "io");
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
	for (i = 0; !vc_stop && (o->iters < 0 || i < o->iters); i++) {
		if (i)
			vc_top_wait(tty_in, o->delay_ms, &sort);
		if (vc_stop)
			break;
		snprintf(req, sizeof(req), "stats -s %s", vc_sorts[sort]);
		rc = vc_ask(o, req, &resp);
		if (rc)
			break;
		if (o->json) {
			rc = vc_top_json(o, resp);
		} else {
			t = time(NULL);
			if (!localtime_r(&t, &tm) || !strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm))
				stamp[0] = '\0';
			if (tty_out)
				fputs("\033[H\033[2J", stdout);
			printf("vrdmactl top  %s  every %.1f s  sorted by %s%s\n", stamp,
			       o->delay_ms / 1000.0, vc_sorts[sort],
			       tty_in ? "  (q quit, s sort)" : "");
			fputs(resp, stdout);
			if (!tty_out)
				putchar('\n');
		}
		free(resp);
		if (!rc)
			rc = vc_flush();
		if (rc)
			break;
	}
	if (tty_in)
		tcsetattr(0, TCSANOW, &old);
	return rc;
}

static void vc_usage(FILE *f);

static void vc_cmd_usage(const struct vc_cmd *c, FILE *f)
{
	fprintf(f, "Usage: %s [-S run_dir] [-j] [-p] %s%s%s\n  %s\n", prog, c->name,
		*c->args ? " " : "", c->args, c->desc);
}

static int vc_cmd_help(struct vc_opts *o, int argc, char **argv);

static const struct vc_cmd vc_cmds[] = {
	{ "list", vc_cmd_list, "", "", "guests, their objects and counters",
	  "every guest by its VM's name: state, queue pairs, memory regions,\n"
	  "  completion queues and counters" },
	{ "stats", vc_cmd_stats, "s", "[-s KEY]", "traffic per guest, a table",
	  "a table, a guest a line: class, weight, rate, bytes/s each way, queue\n"
	  "  delay, time throttled, refusals; KEY: guest (default), vm, io, tx, rx,\n"
	  "  total, qdly, thr, ref" },
	{ "top", vc_cmd_top, "snd", "[-n N] [-d SECS] [-s KEY]",
	  "stats every second, busiest first",
	  "stats every second (-d), busiest first (-s io), N times or until q;\n"
	  "  s cycles the sort key" },
	{ "census", vc_cmd_list, "", "", "object counts (leak checks)",
	  "counts of live objects and vrdmad's open fds (leak checks)" },
	{ "ping", vc_cmd_list, "", "", "does vrdmad answer?", "check that vrdmad answers" },
	{ "teams", vc_cmd_list, "", "", "collectives dom0 runs",
	  "teams of guests whose collectives dom0 runs (offload) or was asked to:\n"
	  "  state, members (rank: VM), operations and bytes reduced, failures" },
	{ "set", vc_cmd_prio, "", "VM|tenant:NAME|tenant:default KEY=VALUE...",
	  "scheduling and quotas, live",
	  "a guest's weight=N class=high|normal|low rate=B/s[,BURST] qps=N mem=B\n"
	  "  wrs=N credits=N cmds=N coll=on|off (kept across restarts; a VM with\n"
	  "  no guest now: stored for its next); a tenant's guests= listeners=\n"
	  "  conns= qps= mem= cqs= mrs= pages= cmds= (N or default)" },
	{ "get", vc_cmd_prio, "", "VM|tenant:NAME|tenants", "settings, tenant usage",
	  "a guest's settings (VM: its name, domid[/devid] or dom<N>/<dev>;\n"
	  "  a VM with no guest now: what is stored), a tenant's usage and limits" },
	{ "policy", vc_cmd_policy, "", "[show|check FROM TO|CHANGE]",
	  "the connect policy",
	  "connect policy; CHANGE: default open|tenant, group G T.., ungroup T..,\n"
	  "  allow|deny FROM TO, remove allow|deny FROM TO, clear" },
	{ "attach", vc_cmd_dev, "", "DOMID [DEVID]", "create a Xen domain's device",
	  "create a domain's vrdma device in xenstore (toolstack duty)" },
	{ "detach", vc_cmd_dev, "", "DOMID [DEVID]", "remove it",
	  "remove it (a program using it gets errors); device 0: the attach\n"
	  "  policy leaves that VM alone, kept by its name across restarts,\n"
	  "  until attach (also for a domain not given device 0 yet)" },
	{ "attach-policy", vc_cmd_attach_policy, "", "[forget VM]",
	  "which domains get a device",
	  "vrdmad's --attach policy and what it decided for each domain it saw:\n"
	  "  attached, had-device, refused, not-matched, no-name, waiting,\n"
	  "  detached; the VMs kept detached; forget VM: no longer kept" },
	{ "trace", vc_cmd_trace, "", "[lat N|dump|off]", "per-hop latency trace",
	  "arm a trace of the next N stamps of the data path (WR pulled, copied\n"
	  "  or posted to the device, device completions, CQEs written and\n"
	  "  published, guest kicks), print it (lines scripts/lat-trace.sh\n"
	  "  reads), turn it off; no word: whether it is armed" },
	{ "help", vc_cmd_help, "", "[COMMAND]", "this text, or a command's",
	  "this text, or a command's" },
};

#define VC_NCMDS	(sizeof(vc_cmds) / sizeof(vc_cmds[0]))

static const struct vc_cmd *vc_find(const char *name)
{
	size_t i;

	for (i = 0; i < VC_NCMDS; i++)
		if (!strcmp(name, vc_cmds[i].name))
			return &vc_cmds[i];
	return NULL;
}

static void vc_usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: %s [OPTIONS] COMMAND [ARGS]\n"
		"Options (also after COMMAND, up to a '--'):\n"
		"  -S, --run-dir DIR  vrdmad's socket directory (env VRDMA_RUN_DIR,\n"
		"                     else %s)\n"
		"  -j, --json         JSON output (every command)\n"
		"  -p, --pretty       indented JSON (implies -j)\n"
		"  -V, --version      print the version\n"
		"  -h, --help         this text; COMMAND -h: that command's\n"
		"Commands:\n", prog, VC_RUN_DIR_DEF);
	for (i = 0; i < VC_NCMDS; i++) {
		int w = fprintf(f, "  %s %s", vc_cmds[i].name, vc_cmds[i].args);

		/* two columns where the syntax leaves room, within 80 */
		if (w > 43)
			fprintf(f, "\n%44s%s\n", "", vc_cmds[i].brief);
		else
			fprintf(f, "%*s%s\n", 44 - w, "", vc_cmds[i].brief);
	}
	fprintf(f, "Exit status: 0 done, 1 refused by vrdmad, 2 usage error, "
		"3 vrdmad unreachable.\n");
}

/* help [-j] [COMMAND]: text, or {"commands":[{name,args,desc}...]}. */
static int vc_cmd_help(struct vc_opts *o, int argc, char **argv)
{
	const struct vc_cmd *c = argc > 1 ? vc_find(argv[1]) : NULL;
	struct json_object *j, *arr, *e;
	size_t i;
	int rc;

	if (argc > 2 || (argc == 2 && !c))
		return vc_usage_err("help", "no command '%s'", argv[argc - 1]);
	if (!o->json) {
		if (c)
			vc_cmd_usage(c, stdout);
		else
			vc_usage(stdout);
		return vc_flush();
	}
	j = json_object_new_object();
	arr = json_object_new_array();
	rc = !j || !arr || json_object_object_add(j, "commands", arr);
	if (rc)
		json_object_put(arr);
	for (i = 0; i < VC_NCMDS && !rc; i++) {
		if (c && c != &vc_cmds[i])
			continue;
		e = json_object_new_object();
		rc = !e || json_object_array_add(arr, e) ||
		     json_object_object_add(e, "name", json_object_new_string(vc_cmds[i].name)) ||
		     json_object_object_add(e, "args", json_object_new_string(vc_cmds[i].args)) ||
		     json_object_object_add(e, "desc", json_object_new_string(vc_cmds[i].desc));
	}
	rc = rc ? VC_REFUSED : vc_put_json(o, j);
	json_object_put(j);
	return rc ? rc : vc_flush();
}

static int vc_version(const struct vc_opts *o)
{
	struct json_object *j;
	int rc;

	if (!o->json) {
		printf("vrdmactl (vrdma) %s\n", VRDMA_VERSION);
		return vc_flush();
	}
	j = json_object_new_object();
	if (!j || json_object_object_add(j, "program", json_object_new_string("vrdmactl")) ||
	    json_object_object_add(j, "version", json_object_new_string(VRDMA_VERSION))) {
		json_object_put(j);
		return VC_REFUSED;
	}
	rc = vc_put_json(o, j);
	json_object_put(j);
	return rc ? rc : vc_flush();
}

/* -n N: 1.. ; -d SECS: 0.1..3600. */
static int vc_opt_value(struct vc_opts *o, const struct vc_cmd *c, char opt,
			const char *val)
{
	double d;
	char *end;

	errno = 0;
	switch (opt) {
	case 's':
		if (vc_sort_index(val) < 0)
			return vc_usage_err(c->name, "unknown sort key '%s' (guest, vm, io, tx, rx, "
					    "total, qdly, thr or ref)", val);
		o->sort = val;
		return 0;
	case 'n':
		o->iters = strtol(val, &end, 10);
		if (errno || end == val || *end || o->iters < 1)
			return vc_usage_err(c->name, "bad count '%s' (1 or more)", val);
		return 0;
	case 'd':
		d = strtod(val, &end);
		if (errno || end == val || *end || !(d >= 0.1 && d <= 3600))
			return vc_usage_err(c->name, "bad delay '%s' (0.1 to 3600 seconds)", val);
		o->delay_ms = (int)(d * 1000);
		return 0;
	}
	return VC_USAGE;
}

/*
 * The options of every command (-S, -j, -p, -h) and its own (c->opts) wherever
 * they stand before a "--": out of argv, into o.  0, or the exit status to
 * end with now (-h: 0 after its help).
 */
static int vc_cmd_opts(struct vc_opts *o, const struct vc_cmd *c, int *argc, char **argv)
{
	static const struct { char opt; const char *lng; } own[] = {
		{ 's', "--sort" }, { 'n', "--iterations" }, { 'd', "--delay" },
	};
	bool words = false;
	int i, j, rc;
	size_t k;

	for (i = j = 1; i < *argc; i++) {
		const char *a = argv[i];

		if (words || a[0] != '-' || !a[1]) {
			argv[j++] = argv[i];
			continue;
		}
		if (!strcmp(a, "--")) {
			words = true;
		} else if (!strcmp(a, "-j") || !strcmp(a, "--json")) {
			o->json = true;
		} else if (!strcmp(a, "-p") || !strcmp(a, "--pretty")) {
			o->json = o->pretty = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			vc_cmd_usage(c, stdout);
			return vc_flush();
		} else if (!strcmp(a, "-S") || !strcmp(a, "--run-dir")) {
			if (i + 1 >= *argc)
				return vc_usage_err(c->name, "option '%s' takes a value", a);
			o->run_dir = argv[++i];
		} else {
			for (k = 0; k < sizeof(own) / sizeof(own[0]); k++)
				if (strchr(c->opts, own[k].opt) &&
				    ((a[1] == own[k].opt && !a[2]) || !strcmp(a, own[k].lng)))
					break;
			if (k == sizeof(own) / sizeof(own[0]))
				return vc_usage_err(c->name, "unknown option '%s'", a);
			if (i + 1 >= *argc)
				return vc_usage_err(c->name, "option '%s' takes a value", a);
			rc = vc_opt_value(o, c, own[k].opt, argv[++i]);
			if (rc)
				return rc;
		}
	}
	*argc = j;
	return -1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "run-dir", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, 'p' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct vc_opts o = { .iters = -1, .delay_ms = 1000 };
	const struct vc_cmd *c;
	bool version = false;
	int ch, n, rc;

	/* '+': options after the subcommand are its own (vc_cmd_opts). */
	while ((ch = getopt_long(argc, argv, "+S:jpVh", opts, NULL)) != -1) {
		switch (ch) {
		case 'S':
			o.run_dir = optarg;
			break;
		case 'j':
			o.json = true;
			break;
		case 'p':
			o.json = o.pretty = true;
			break;
		case 'V':
			version = true;
			break;
		case 'h':
			vc_usage(stdout);
			return vc_flush();
		default:
			vc_usage(stderr);
			return VC_USAGE;
		}
	}
	if (version)
		return vc_version(&o);
	if (optind >= argc) {
		vc_usage(stderr);
		return VC_USAGE;
	}
	c = vc_find(argv[optind]);
	if (!c) {
		fprintf(stderr, "%s: unknown command '%s' (try: %s help)\n", prog, argv[optind],
			prog);
		return VC_USAGE;
	}
	argc -= optind;
	argv += optind;
	rc = vc_cmd_opts(&o, c, &argc, argv);
	if (rc >= 0)
		return rc;
	if (!o.run_dir)
		o.run_dir = getenv("VRDMA_RUN_DIR");
	if (!o.run_dir || !*o.run_dir)
		o.run_dir = VC_RUN_DIR_DEF;
	n = snprintf(o.path, sizeof(o.path), "%s/%s", o.run_dir, VC_CTL_NAME);
	if (n < 0 || (size_t)n >= sizeof(o.path)) {
		fprintf(stderr, "%s: run dir path too long: %s\n", prog, o.run_dir);
		return VC_USAGE;
	}
	return c->fn(&o, argc, argv);
}
