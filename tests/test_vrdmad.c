// SPDX-License-Identifier: MIT
/*
 * The real vrdmad and vrdmactl binaries ($VRDMA_BUILD/sbin): start, answer
 * on the control socket, refuse a second instance, recover from a crashed
 * one's stale sockets, shut down clean on SIGTERM.  Every vrdmactl command's
 * JSON read by a parser, with names that need escaping; its exit status
 * for a usage error, an unreachable and a refusing vrdmad; vrdmad's log
 * lines for a reader and for the journal.  Every wait is bounded.
 */
#include <check.h>
#include <errno.h>
#include <regex.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/time.h>

#include <json-c/json.h>

#include "version.h"
#include "vdt.h"
#include "ck_run.h"

#define WAIT_MS		10000
/* A node and a VM name JSON must escape (a quote, a backslash). */
#define HOSTILE_NODE	"node\"x\\y"
#define HOSTILE_VM	"vm\"x\\y"

static struct vdt T;

static void setup(void)
{
	vdt_init(&T, "t");
}

static void teardown(void)
{
	vdt_fini(&T);
}

/* vrdmad named node; journal: its stderr (the log file) passed off as
 * the journal's stream, as systemd's JOURNAL_STREAM does. */
static pid_t start_as(const char *node, int journal)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char log[128], js[64];
		struct stat st;

		/* Quiet test output: the daemon logs beside its sockets. */
		snprintf(log, sizeof(log), "%s/vrdmad.log", T.dir);
		if (!freopen(log, "a", stderr))
			_exit(126);
		unsetenv("JOURNAL_STREAM");
		if (journal && !fstat(2, &st)) {
			snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
				 (unsigned long long)st.st_ino);
			setenv("JOURNAL_STREAM", js, 1);
		}
		execl(T.bin, "vrdmad", "-f", "-S", T.dir, "-n", node, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static pid_t start(void)
{
	return start_as("tnode", 0);
}

/* vrdmad --attach policy; its stderr beside its sockets. */
static pid_t start_attach(const char *policy)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char log[128];

		snprintf(log, sizeof(log), "%s/vrdmad.log", T.dir);
		if (!freopen(log, "a", stderr))
			_exit(126);
		execl(T.bin, "vrdmad", "-f", "-S", T.dir, "-n", "tnode", "--attach", policy,
		      (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* One request on the control socket; response in buf, or -errno. */
static int ask(const char *req, char *buf, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { 5, 0 };
	size_t got = 0;
	ssize_t n;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/vrdmad.ctl", T.dir);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	ck_assert_int_eq(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	while (got < len - 1 && (n = recv(fd, buf + got, len - 1 - got, 0)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
	return 0;
}

static void wait_ping(void)
{
	char buf[64];
	int i;

	for (i = 0; i < WAIT_MS / 20; i++) {
		if (ask("ping\n", buf, sizeof(buf)) == 0 && !strcmp(buf, "pong\n"))
			return;
		vdt_sleep_ms(20);
	}
	ck_abort_msg("vrdmad did not answer ping");
}

static int exists(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", T.dir, name);
	return access(path, F_OK) == 0;
}

/* Run vrdmactl; its exit status, stdout+stderr in out. */
static int vrdmactl(const char *args, char *out, size_t len)
{
	return vdt_ctl(&T, args, out, len);
}

static int wait_exit(pid_t pid)
{
	return vdt_wait_exit(pid, WAIT_MS);
}

/* Every line of vrdmad's log matches re (extended). */
static void log_lines_match(const char *re)
{
	char path[128], line[1024];
	int n = 0;
	regex_t rx;
	FILE *f;

	ck_assert_int_eq(regcomp(&rx, re, REG_EXTENDED | REG_NOSUB), 0);
	snprintf(path, sizeof(path), "%s/vrdmad.log", T.dir);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		ck_assert_msg(regexec(&rx, line, 0, NULL, 0) == 0, "log line '%s' is not '%s'",
			      line, re);
		n++;
	}
	fclose(f);
	regfree(&rx);
	ck_assert_int_gt(n, 0);
}

START_TEST(test_lifecycle)
{
	char buf[4096], path[128];
	pid_t pid;
	FILE *f;
	long p = 0;

	pid = start();
	wait_ping();
	snprintf(path, sizeof(path), "%s/vrdmad.pid", T.dir);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%ld", &p), 1);
	fclose(f);
	ck_assert_int_eq(p, pid);

	ck_assert_int_eq(ask("-j census\n", buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "\"guests\":0"));
	ck_assert_ptr_nonnull(strstr(buf, "\"fds\":"));
	ck_assert_int_eq(ask("frob\n", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "error: unknown command 'frob' (try: list, census, ping)\n");
	ck_assert_int_eq(ask("list -j\n", buf, sizeof(buf)), 0);
	ck_assert_int_eq(buf[0], '{');

	ck_assert_int_eq(vrdmactl("ping", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "pong\n");
	ck_assert_int_eq(vrdmactl("-j list", buf, sizeof(buf)), 0);
	ck_assert_int_eq(buf[0], '{');
	ck_assert_int_eq(vrdmactl("census", buf, sizeof(buf)), 0);
	ck_assert_int_eq(vrdmactl("nosuch", buf, sizeof(buf)), 2);

	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	ck_assert_int_eq(wait_exit(pid), 0);
	ck_assert(!exists("vrdmad.ctl"));
	ck_assert(!exists("vrdmad.pid"));
	ck_assert(!exists("guest.sock"));

	ck_assert_int_eq(vrdmactl("ping", buf, sizeof(buf)), 3);
	ck_assert_ptr_nonnull(strstr(buf, "vrdmactl: cannot reach vrdmad at "));
	/* Wall time to the ms, monotonic seconds, program[pid], level. */
	log_lines_match("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3} "
			"\\[ *[0-9]+\\.[0-9]{3}\\] vrdmad\\[[0-9]+\\] "
			"(error|warn|info|debug): .");
}
END_TEST

/* Under systemd (stderr is the journal): <N> priorities, nothing else. */
START_TEST(test_log_journal)
{
	char path[128];
	pid_t pid;

	pid = start_as("tnode", 1);
	wait_ping();
	kill(pid, SIGTERM);
	ck_assert_int_eq(wait_exit(pid), 0);
	log_lines_match("^<[3467]>[^<]");
	/* A stream that is not the journal's: the reader's format again. */
	snprintf(path, sizeof(path), "%s/vrdmad.log", T.dir);
	ck_assert_int_eq(unlink(path), 0);
	setenv("JOURNAL_STREAM", "1:1", 1);
	pid = start();
	wait_ping();
	kill(pid, SIGTERM);
	ck_assert_int_eq(wait_exit(pid), 0);
	unsetenv("JOURNAL_STREAM");
	log_lines_match("^[0-9]{4}-.* vrdmad\\[[0-9]+\\] (error|warn|info|debug): ");
}
END_TEST

/* Run vrdmactl (args as sh words): its exit status; stdout in out,
 * stderr in err (either may be NULL). */
static int ctl2(const char *args, char *out, size_t len, char *err, size_t elen)
{
	char cmd[1024], epath[128];
	size_t got = 0;
	FILE *f;
	int st;

	snprintf(epath, sizeof(epath), "%s/ctl.err", T.dir);
	snprintf(cmd, sizeof(cmd), "timeout 20 %s -S %s %s 2>%s", T.ctl, T.dir, args, epath);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	if (out) {
		got = fread(out, 1, len - 1, f);
		out[got] = '\0';
	} else {
		char sink[4096];

		while (fread(sink, 1, sizeof(sink), f) > 0)
			;
	}
	st = pclose(f);
	if (err) {
		f = fopen(epath, "r");
		ck_assert_ptr_nonnull(f);
		got = fread(err, 1, elen - 1, f);
		err[got] = '\0';
		fclose(f);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* `vrdmactl -j ARGS`: exit 0 and a document a JSON parser takes whole. */
static struct json_object *ctl_json(const char *args)
{
	static char out[1 << 16];
	enum json_tokener_error jerr;
	struct json_object *j;
	struct json_tokener *tok;
	char cmd[512], err[512];
	size_t len;

	snprintf(cmd, sizeof(cmd), "-j %s", args);
	ck_assert_msg(ctl2(cmd, out, sizeof(out), err, sizeof(err)) == 0, "vrdmactl %s: %s",
		      cmd, err);
	len = strlen(out);
	ck_assert_msg(len > 1 && out[len - 1] == '\n', "vrdmactl %s: '%s'", cmd, out);
	tok = json_tokener_new();
	ck_assert_ptr_nonnull(tok);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	j = json_tokener_parse_ex(tok, out, (int)len - 1);
	jerr = json_tokener_get_error(tok);
	ck_assert_msg(j && jerr == json_tokener_success &&
		      json_tokener_get_parse_end(tok) == len - 1,
		      "vrdmactl %s: not one JSON document (%s): %s", cmd,
		      json_tokener_error_desc(jerr), out);
	json_tokener_free(tok);
	ck_assert(json_object_is_type(j, json_type_object));
	return j;
}

/* The member at a path of keys and array indexes ("guests.0.vm"); it
 * must be there (JSON null is NULL). */
static struct json_object *jget(struct json_object *j, const char *path)
{
	char buf[256], *save = NULL, *k;
	bool there = true;

	snprintf(buf, sizeof(buf), "%s", path);
	for (k = strtok_r(buf, ".", &save); k && there; k = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(j, json_type_array)) {
			there = (size_t)atoi(k) < json_object_array_length(j);
			j = there ? json_object_array_get_idx(j, (size_t)atoi(k)) : NULL;
		} else {
			there = json_object_is_type(j, json_type_object) &&
				json_object_object_get_ex(j, k, &j);
		}
	}
	ck_assert_msg(there, "no %s", path);
	return j;
}

static const char *jstr(struct json_object *j, const char *path)
{
	struct json_object *v = jget(j, path);

	ck_assert_msg(json_object_is_type(v, json_type_string), "%s is not a string", path);
	return json_object_get_string(v);
}

static int64_t jint(struct json_object *j, const char *path)
{
	struct json_object *v = jget(j, path);

	ck_assert_msg(json_object_is_type(v, json_type_int), "%s is not a number", path);
	return json_object_get_int64(v);
}

/* A guest process named HOSTILE_VM: vrdma-bw waiting for a client. */
static pid_t start_guest(void)
{
	char log[128];
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		snprintf(log, sizeof(log), "%s/bw.log", T.dir);
		if (!freopen(log, "a", stderr) || !freopen("/dev/null", "w", stdout))
			_exit(126);
		setenv("VRDMA_RUN_DIR", T.dir, 1);
		setenv("VRDMA_VM", HOSTILE_VM, 1);
		execl(T.bw, "vrdma-bw", "-p", "svc", "--timeout", "60", (char *)NULL);
		_exit(127);
	}
	return pid;
}

START_TEST(test_json_every_command)
{
	char args[256], out[4096], err[512];
	struct json_object *j;
	pid_t pid, gpid;
	int64_t cmds;
	size_t i;
	int n;

	ck_assert_msg(access(T.bw, X_OK) == 0, "%s not built", T.bw);
	pid = start_as(HOSTILE_NODE, 0);
	wait_ping();
	gpid = start_guest();
	for (i = 0, n = 0; i < WAIT_MS / 50 && n != 1; i++) {
		j = ctl_json("census");
		n = (int)jint(j, "guests");
		json_object_put(j);
		if (n != 1)
			vdt_sleep_ms(50);
	}
	ck_assert_int_eq(n, 1);

	j = ctl_json("ping");
	ck_assert(json_object_get_boolean(jget(j, "pong")));
	ck_assert_str_eq(jstr(j, "node"), HOSTILE_NODE);
	ck_assert_int_eq(jint(j, "pid"), pid);
	json_object_put(j);

	j = ctl_json("census");
	ck_assert_int_eq(jint(j, "guests"), 1);
	ck_assert_int_ge(jint(j, "listeners"), 1);
	ck_assert_int_gt(jint(j, "fds"), 0);
	json_object_put(j);

	j = ctl_json("list");
	ck_assert_str_eq(jstr(j, "node"), HOSTILE_NODE);
	ck_assert_str_eq(jstr(j, "guests.0.vm"), HOSTILE_VM);
	ck_assert_str_eq(jstr(j, "guests.0.state"), "connected");
	snprintf(args, sizeof(args), "uid%u", (unsigned)getuid());
	ck_assert_str_eq(jstr(j, "guests.0.tenant"), args);
	ck_assert(json_object_is_type(jget(j, "guests.0.counters"), json_type_object));
	ck_assert(json_object_is_type(jget(j, "guests.0.qps"), json_type_array));
	json_object_put(j);

	j = ctl_json("stats -s vm");
	ck_assert_str_eq(jstr(j, "node"), HOSTILE_NODE);
	ck_assert_str_eq(jstr(j, "sort"), "vm");
	ck_assert_str_eq(jstr(j, "guests.0.vm"), HOSTILE_VM);
	ck_assert_str_eq(jstr(j, "guests.0.class"), "normal");
	ck_assert_int_ge(jint(j, "guests.0.counters.commands"), 1);
	/* totals: every guest's counters, those that left included */
	cmds = jint(j, "guests.0.counters.commands");
	ck_assert_int_ge(jint(j, "totals.commands"), cmds);
	json_object_put(j);

	/* A VM's name as the shell passes it: 'vm"x\y'. */
	j = ctl_json("set 'vm\"x\\y' weight=3 class=high rate=1G/s,64M");
	ck_assert_str_eq(jstr(j, "vm"), HOSTILE_VM);
	ck_assert_int_eq(jint(j, "weight"), 3);
	ck_assert_str_eq(jstr(j, "class"), "high");
	ck_assert_int_eq(jint(j, "rate"), 1ll << 30);
	ck_assert_int_eq(jint(j, "burst"), 64ll << 20);
	json_object_put(j);
	j = ctl_json("get 'vm\"x\\y'");
	ck_assert_int_eq(jint(j, "weight"), 3);
	ck_assert_int_eq(strncmp(jstr(j, "name"), "dom", 3), 0);
	json_object_put(j);

	j = ctl_json("set tenant:default listeners=32");
	ck_assert_str_eq(jstr(j, "tenant"), "default");
	ck_assert_int_eq(jint(j, "listeners.limit"), 32);
	json_object_put(j);
	snprintf(args, sizeof(args), "get tenant:uid%u", (unsigned)getuid());
	j = ctl_json(args);
	ck_assert_int_eq(jint(j, "guests.used"), 1);
	ck_assert_int_eq(jint(j, "listeners.limit"), 32);
	ck_assert(json_object_get_boolean(jget(j, "listeners.default")));
	json_object_put(j);
	j = ctl_json("get tenants");
	ck_assert_uint_eq(json_object_array_length(jget(j, "tenants")), 2);
	ck_assert_str_eq(jstr(j, "tenants.0.tenant"), "default");
	json_object_put(j);
	/* CQs, MRs and mapped pages are counted like the others; cmds is a
	 * rate, no usage. */
	snprintf(args, sizeof(args), "set tenant:uid%u cqs=64 mrs=512 pages=40000 cmds=2000",
		 (unsigned)getuid());
	j = ctl_json(args);
	ck_assert_int_eq(jint(j, "cqs.limit"), 64);
	ck_assert_int_ge(jint(j, "cqs.used"), 0);
	ck_assert(!json_object_get_boolean(jget(j, "cqs.default")));
	ck_assert_int_eq(jint(j, "mrs.limit"), 512);
	ck_assert_int_ge(jint(j, "mrs.used"), 0);
	ck_assert_int_eq(jint(j, "pages.limit"), 40000);
	ck_assert_int_ge(jint(j, "pages.used"), 0);
	ck_assert_int_eq(jint(j, "cmds.limit"), 2000);
	ck_assert(!json_object_object_get_ex(jget(j, "cmds"), "used", NULL));
	ck_assert_int_eq(jint(j, "maps.limit"), 7936);
	ck_assert_int_ge(jint(j, "maps.used"), 0);
	json_object_put(j);
	snprintf(args, sizeof(args), "get tenant:uid%u", (unsigned)getuid());
	ck_assert_int_eq(ctl2(args, out, sizeof(out), NULL, 0), 0);
	ck_assert_ptr_nonnull(strstr(out, "/64 mrs="));
	ck_assert_ptr_nonnull(strstr(out, "/512 pages="));
	ck_assert_ptr_nonnull(strstr(out, "/40000 cmds=2000 maps="));
	/* a quarter of 32768 - 1024; a quarter of the device's 1024 QPs */
	ck_assert_ptr_nonnull(strstr(out, "/7936(default) devqps=0/256(default)\n"));

	j = ctl_json("policy group g1 alice bob");
	ck_assert_str_eq(jstr(j, "default"), "open");
	ck_assert(jget(j, "file") == NULL);	/* null: held in memory only */
	ck_assert_str_eq(jstr(j, "groups.0.group"), "g1");
	ck_assert_str_eq(jstr(j, "groups.0.tenants.1"), "bob");
	json_object_put(j);
	/* "-j" is no word of the command: 9 tenants still fit one. */
	j = ctl_json("policy group g2 t1 t2 t3 t4 t5 t6 t7 t8 t9");
	ck_assert_str_eq(jstr(j, "groups.1.tenants.8"), "t9");
	json_object_put(j);
	j = ctl_json("policy deny g1 carol");
	ck_assert_str_eq(jstr(j, "rules.0.action"), "deny");
	json_object_put(j);
	j = ctl_json("policy check alice carol");
	ck_assert_str_eq(jstr(j, "decision"), "deny");
	ck_assert_str_eq(jstr(j, "from_group"), "g1");
	ck_assert_str_eq(jstr(j, "by"), "rule");
	json_object_put(j);
	j = ctl_json("policy show");
	ck_assert_uint_eq(json_object_array_length(jget(j, "rules")), 1);
	json_object_put(j);

	/* A second device for the guest's domain; none for a domain that is
	 * not there (its keys would outlive nobody). */
	j = ctl_json("list");
	n = (int)jint(j, "guests.0.domid");
	json_object_put(j);
	snprintf(args, sizeof(args), "attach %d 1", n);
	j = ctl_json(args);
	ck_assert(json_object_get_boolean(jget(j, "attached")));
	ck_assert_int_eq(jint(j, "domid"), n);
	json_object_put(j);
	snprintf(args, sizeof(args), "detach %d 1", n);
	j = ctl_json(args);
	ck_assert(json_object_get_boolean(jget(j, "detached")));
	json_object_put(j);
	ck_assert_int_eq(ctl2("attach 77 1", NULL, 0, err, sizeof(err)), 1);
	ck_assert_ptr_nonnull(strstr(err, "attach 77/1: no domain 77"));

	j = ctl_json("top -n 1");
	ck_assert_str_eq(jstr(j, "stats.node"), HOSTILE_NODE);
	ck_assert_str_eq(jstr(j, "stats.sort"), "io");
	ck_assert_uint_gt(strlen(jstr(j, "time")), 18);
	json_object_put(j);
	j = ctl_json("help");
	ck_assert_uint_ge(json_object_array_length(jget(j, "commands")), 11);
	json_object_put(j);
	j = ctl_json("-V");
	ck_assert_str_eq(jstr(j, "program"), "vrdmactl");
	json_object_put(j);
	/* -p: the same document, indented. */
	ck_assert_int_eq(ctl2("-p list", out, sizeof(out), NULL, 0), 0);
	ck_assert_ptr_nonnull(strstr(out, "\n  \"node\":"));
	j = json_tokener_parse(out);
	ck_assert_ptr_nonnull(j);
	json_object_put(j);

	/* Text: VM names first, the state spelled out, top within 80. */
	ck_assert_int_eq(ctl2("list", out, sizeof(out), NULL, 0), 0);
	ck_assert_ptr_nonnull(strstr(out, "\n" HOSTILE_VM " guest "));
	ck_assert_ptr_nonnull(strstr(out, " state connected"));
	ck_assert_int_eq(ctl2("top -n 1 </dev/null", out, sizeof(out), NULL, 0), 0);
	ck_assert_ptr_nonnull(strstr(out, "\n" HOSTILE_VM " "));
	for (i = 0, n = 0; out[i]; i++, n++) {
		if (out[i] == '\n')
			n = -1;
		ck_assert_msg(n < 80, "top wider than 80: %s", out);
	}

	/* Exit status: usage 2, refused by vrdmad 1 (its reason on stderr). */
	ck_assert_int_eq(ctl2("nosuch", NULL, 0, NULL, 0), 2);
	ck_assert_int_eq(ctl2("-Z ping", NULL, 0, NULL, 0), 2);
	ck_assert_int_eq(ctl2("list extra", NULL, 0, NULL, 0), 2);
	ck_assert_int_eq(ctl2("stats -s bogus", NULL, 0, NULL, 0), 2);
	ck_assert_int_eq(ctl2("attach x", NULL, 0, NULL, 0), 2);
	ck_assert_int_eq(ctl2("get", NULL, 0, NULL, 0), 2);
	ck_assert_int_eq(ctl2("-j get nosuchvm", out, sizeof(out), err, sizeof(err)), 1);
	ck_assert_str_eq(out, "");
	ck_assert_ptr_nonnull(strstr(err, "vrdmactl: error: no guest 'nosuchvm'"));
	ck_assert_int_eq(ctl2("set 'vm\"x\\y' weight=0", NULL, 0, err, sizeof(err)), 1);
	ck_assert_ptr_nonnull(strstr(err, "bad weight"));
	ck_assert_int_eq(ctl2("policy group dom5 alice", NULL, 0, NULL, 0), 1);
	/* A tenant with guests is no group name (it would take the tenant in). */
	snprintf(args, sizeof(args), "-j policy group uid%u alice", (unsigned)getuid());
	ck_assert_int_eq(ctl2(args, out, sizeof(out), err, sizeof(err)), 1);
	ck_assert_str_eq(out, "");
	ck_assert_ptr_nonnull(strstr(err, "is a tenant with guests: not a group name"));
	ck_assert_int_eq(ctl2(args + 3, NULL, 0, err, sizeof(err)), 1);
	ck_assert_ptr_nonnull(strstr(err, "is a tenant with guests"));
	ck_assert_int_eq(ctl2("-h", NULL, 0, NULL, 0), 0);
	ck_assert_int_eq(ctl2("stats --help", out, sizeof(out), NULL, 0), 0);
	ck_assert_ptr_nonnull(strstr(out, "Usage: vrdmactl"));

	kill(gpid, SIGTERM);
	wait_exit(gpid);
	for (i = 0, n = 1; i < WAIT_MS / 50 && n != 0; i++) {
		j = ctl_json("census");
		n = (int)jint(j, "guests");
		json_object_put(j);
		if (n != 0)
			vdt_sleep_ms(50);
	}
	ck_assert_int_eq(n, 0);
	j = ctl_json("stats");
	ck_assert_int_ge(jint(j, "totals.commands"), cmds);
	json_object_put(j);
	kill(pid, SIGTERM);
	ck_assert_int_eq(wait_exit(pid), 0);
	/* Unreachable: 3, whatever the command. */
	ck_assert_int_eq(ctl2("-j list", out, sizeof(out), err, sizeof(err)), 3);
	ck_assert_ptr_nonnull(strstr(err, "cannot reach vrdmad"));
}
END_TEST

START_TEST(test_second_instance)
{
	char buf[64];
	pid_t a, b;

	a = start();
	wait_ping();
	b = start();
	ck_assert_int_eq(wait_exit(b), 1);
	/* The loser touched nothing of the winner's. */
	ck_assert_int_eq(ask("ping\n", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "pong\n");
	ck_assert(exists("vrdmad.pid"));
	kill(a, SIGINT);
	ck_assert_int_eq(wait_exit(a), 0);
}
END_TEST

START_TEST(test_restart_after_crash)
{
	pid_t pid;

	pid = start();
	wait_ping();
	kill(pid, SIGKILL);
	ck_assert_int_eq(wait_exit(pid), 128 + SIGKILL);
	ck_assert(exists("vrdmad.ctl"));	/* stale */
	pid = start();
	wait_ping();
	kill(pid, SIGTERM);
	ck_assert_int_eq(wait_exit(pid), 0);
	ck_assert(!exists("vrdmad.ctl"));
}
END_TEST

/* vrdmad with a policy file and systemd's notify socket in the env. */
static pid_t start_notified(const char *notify, const char *policy)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char log[128];

		snprintf(log, sizeof(log), "%s/vrdmad.log", T.dir);
		if (!freopen(log, "a", stderr) || setenv("NOTIFY_SOCKET", notify, 1))
			_exit(126);
		execl(T.bin, "vrdmad", "-f", "-S", T.dir, "-n", "tnode", "-P", policy,
		      (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* The next datagram on the notify socket, as a string ("" on timeout). */
static const char *notified(int fd, char *buf, size_t len)
{
	ssize_t n = recv(fd, buf, len - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* What the unit relies on (Type=notify, ExecReload=kill -HUP): READY=1
 * once the control socket answers; SIGHUP re-reads the policy file
 * (RELOADING=1 ... READY=1) and a file that does not load keeps the
 * running policy; STOPPING=1 at SIGTERM, then exit 0. */
START_TEST(test_notify_reload)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { WAIT_MS / 1000, 0 };
	char pol[128], buf[4096], msg[64];
	pid_t pid;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", T.dir);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(pol, sizeof(pol), "%s/policy", T.dir);
	vdt_write_file(pol, "default tenant\n");

	pid = start_notified(sa.sun_path, pol);
	ck_assert_str_eq(notified(fd, msg, sizeof(msg)), "READY=1");
	ck_assert_int_eq(ask("ping\n", buf, sizeof(buf)), 0);	/* no waiting */
	ck_assert_str_eq(buf, "pong\n");
	ck_assert_int_eq(vrdmactl("policy", buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "default tenant"));

	vdt_write_file(pol, "default open\ngroup lab uid1000 uid1001\n");
	ck_assert_int_eq(kill(pid, SIGHUP), 0);
	ck_assert_str_eq(notified(fd, msg, sizeof(msg)), "RELOADING=1");
	ck_assert_str_eq(notified(fd, msg, sizeof(msg)), "READY=1");
	ck_assert_int_eq(vrdmactl("policy", buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "default open"));
	ck_assert_ptr_nonnull(strstr(buf, "group lab uid1000 uid1001"));

	vdt_write_file(pol, "default open\nfrob\n");
	ck_assert_int_eq(kill(pid, SIGHUP), 0);
	ck_assert_str_eq(notified(fd, msg, sizeof(msg)), "RELOADING=1");
	ck_assert_str_eq(notified(fd, msg, sizeof(msg)), "READY=1");
	ck_assert_int_eq(vrdmactl("policy", buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "group lab uid1000 uid1001"));

	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	ck_assert_str_eq(notified(fd, msg, sizeof(msg)), "STOPPING=1");
	ck_assert_int_eq(wait_exit(pid), 0);
	close(fd);
}
END_TEST

/*
 * --attach (issue 13): a bad value stops vrdmad with exit 2 naming it; on
 * the plain host a policy is a no-op, said once in the log, and
 * `vrdmactl attach-policy` shows it inactive, text and JSON.
 */
START_TEST(test_attach_policy)
{
	static const char *const bad[] = { "bogus", "name:", "ALL", "name:a/b" };
	char path[128], out[512], line[512];
	struct json_object *j;
	bool noted = false;
	pid_t pid;
	size_t i;
	FILE *f;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pid = start_attach(bad[i]);
		ck_assert_int_eq(wait_exit(pid), 2);
	}
	snprintf(path, sizeof(path), "%s/vrdmad.log", T.dir);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	out[0] = '\0';
	ck_assert_ptr_nonnull(fgets(out, sizeof(out), f));
	fclose(f);
	ck_assert_str_eq(out, "vrdmad: bad --attach 'bogus': not one of none, all, "
			 "name:GLOB or marker\n");
	ck_assert_int_eq(unlink(path), 0);

	pid = start_attach("name:rdma-*");
	wait_ping();
	j = ctl_json("attach-policy");
	ck_assert_str_eq(jstr(j, "policy"), "name:rdma-*");
	ck_assert(!json_object_get_boolean(jget(j, "active")));
	ck_assert_uint_eq(json_object_array_length(jget(j, "domains")), 0);
	json_object_put(j);
	ck_assert_int_eq(vrdmactl("attach-policy", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "attach policy: name:rdma-* (no domains on this platform)\n");
	ck_assert_int_eq(vrdmactl("attach-policy x", out, sizeof(out)), 2);
	kill(pid, SIGTERM);
	ck_assert_int_eq(wait_exit(pid), 0);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		noted |= strstr(line, "attach policy name:rdma-*: no domains on the host "
				"platform") != NULL;
	fclose(f);
	ck_assert(noted);

	pid = start();
	wait_ping();
	ck_assert_int_eq(vrdmactl("attach-policy", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "attach policy: none (vrdmactl attach only)\n");
	kill(pid, SIGTERM);
	ck_assert_int_eq(wait_exit(pid), 0);
}
END_TEST

/* One version (common/version.h) for vrdmad and vrdmactl, -V or
 * --version, text or JSON. */
START_TEST(test_version)
{
	const char *prog[] = { T.bin, T.ctl }, *name[] = { "vrdmad", "vrdmactl" };
	const char *opt[] = { "--version", "-V" };
	char cmd[600], out[128], want[64];
	struct json_object *j;
	unsigned i, k;
	FILE *f;

	for (i = 0; i < 2; i++)
		for (k = 0; k < 2; k++) {
			snprintf(cmd, sizeof(cmd), "%s %s", prog[i], opt[k]);
			f = popen(cmd, "r");
			ck_assert_ptr_nonnull(f);
			out[0] = '\0';
			ck_assert_ptr_nonnull(fgets(out, sizeof(out), f));
			ck_assert_int_eq(pclose(f), 0);
			snprintf(want, sizeof(want), "%s (vrdma) %s\n", name[i], VRDMA_VERSION);
			ck_assert_str_eq(out, want);
		}
	j = ctl_json("--version");
	ck_assert_str_eq(jstr(j, "version"), VRDMA_VERSION);
	json_object_put(j);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vrdmad");
	TCase *tc = tcase_create("daemon");
	SRunner *sr;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_lifecycle);
	tcase_add_test(tc, test_second_instance);
	tcase_add_test(tc, test_restart_after_crash);
	tcase_add_test(tc, test_log_journal);
	tcase_add_test(tc, test_json_every_command);
	tcase_add_test(tc, test_notify_reload);
	tcase_add_test(tc, test_version);
	tcase_add_test(tc, test_attach_policy);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	return ck_run(sr);
}
