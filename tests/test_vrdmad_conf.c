// SPDX-License-Identifier: MIT
/*
 * Issue 13 item 3, on the real vrdmad and vrdmactl ($VRDMA_BUILD/sbin):
 * per-VM settings and tenant limits outlive vrdmad (a restart with the
 * same state dir applies them to the VM's next guest), `set` on a VM with
 * no guest stores them, hostile VM names cannot break the settings file,
 * a broken file stops vrdmad with file:line; the operator's detach of a
 * VM's device 0 is kept by name across a restart until `vrdmactl attach`;
 * vrdmad.conf's errors name file:line and the key (exit 2), and the
 * command line overrides it.
 * Every wait is bounded.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "vdt.h"
#include "ck_run.h"

#define WAIT_MS		10000

static struct vdt T;
static char state[96];

static int wait_exit(pid_t pid)
{
	return vdt_wait_exit(pid, WAIT_MS);
}

static void setup(void)
{
	vdt_init(&T, "c");
	snprintf(state, sizeof(state), "%s/state", T.dir);
	ck_assert_int_eq(mkdir(state, 0700), 0);
}

static void teardown(void)
{
	vdt_fini(&T);
}

/* vrdmad with args (NULL-terminated, after the program name); its stderr
 * into dir/vrdmad.log. */
static pid_t start_args(const char *a0, ...)
{
	const char *argv[16] = { "vrdmad" };
	unsigned n = 1;
	va_list ap;
	pid_t pid;

	va_start(ap, a0);
	for (argv[n] = a0; argv[n] && n < 15; argv[++n] = va_arg(ap, const char *))
		;
	va_end(ap);
	argv[15] = NULL;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char log[128];

		snprintf(log, sizeof(log), "%s/vrdmad.log", T.dir);
		if (!freopen(log, "a", stderr))
			_exit(126);
		execv(T.bin, (char **)argv);
		_exit(127);
	}
	return pid;
}

/* The daemon these tests share: private run dir, state dir. */
static pid_t start(void)
{
	return start_args("-f", "-S", T.dir, "-n", "cnode", "--state-dir", state, NULL);
}

static void stop(pid_t pid)
{
	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	ck_assert_int_eq(wait_exit(pid), 0);
}

/* Run vrdmactl -S dir args; its exit status, stdout+stderr in out. */
static int vrdmactl(const char *args, char *out, size_t len)
{
	return vdt_ctl(&T, args, out, len);
}

static void wait_ping(void)
{
	char out[256];
	int i;

	for (i = 0; i < WAIT_MS / 20; i++) {
		if (vrdmactl("ping", out, sizeof(out)) == 0)
			return;
		vdt_sleep_ms(20);
	}
	ck_abort_msg("vrdmad did not answer ping");
}

/* A guest process of VM vm: vrdma-bw waiting for a client. */
static pid_t start_guest(const char *vm, const char *svc)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char log[128];

		snprintf(log, sizeof(log), "%s/bw.log", T.dir);
		if (!freopen(log, "a", stderr) || !freopen("/dev/null", "w", stdout))
			_exit(126);
		setenv("VRDMA_RUN_DIR", T.dir, 1);
		setenv("VRDMA_VM", vm, 1);
		execl(T.bw, "vrdma-bw", "-p", svc, "--timeout", "60", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void stop_guest(pid_t pid)
{
	kill(pid, SIGTERM);
	wait_exit(pid);
}

/* `get args` until its answer holds every word of want (a guest's line,
 * not a stored one); fails after WAIT_MS with the last answer. */
static void wait_get(const char *args, const char *const *want)
{
	char out[4096], cmd[256];
	unsigned w;
	int i;

	snprintf(cmd, sizeof(cmd), "get %s", args);
	for (i = 0; i < WAIT_MS / 50; i++) {
		if (vrdmactl(cmd, out, sizeof(out)) == 0 && !strstr(out, "stored=yes")) {
			for (w = 0; want[w] && strstr(out, want[w]); w++)
				;
			if (!want[w])
				return;
		}
		vdt_sleep_ms(50);
	}
	ck_abort_msg("get %s: '%s' lacks %s", args, out, want[0]);
}

/* vrdmad saw VM vm's guest leave: `get` shows what is stored. */
static void wait_gone(const char *vm)
{
	char out[4096], cmd[256];
	int i;

	snprintf(cmd, sizeof(cmd), "get %s", vm);
	for (i = 0; i < WAIT_MS / 50; i++) {
		if (vrdmactl(cmd, out, sizeof(out)) == 0 && strstr(out, "stored=yes"))
			return;
		vdt_sleep_ms(50);
	}
	ck_abort_msg("%s: its guest did not leave: '%s'", cmd, out);
}

/* state/name (one at a time). */
static const char *tmp_path(const char *name)
{
	static char path[160];

	snprintf(path, sizeof(path), "%s/%s", state, name);
	return path;
}

static void has(const char *out, const char *what)
{
	ck_assert_msg(strstr(out, what), "'%s' not in '%s'", what, out);
}

START_TEST(test_restart_keeps_settings)
{
	static const char *const want[] = { "vm=keep-me", " weight=5 ",
		" rate=10485760,2097152 ", " credits=7", NULL };
	char out[4096];
	pid_t d, g;

	d = start();
	wait_ping();
	g = start_guest("keep-me", "svc");
	wait_get("keep-me", (const char *const[]){ "vm=keep-me", NULL });
	ck_assert_int_eq(vrdmactl("set keep-me weight=5 rate=10M credits=7", out,
				  sizeof(out)), 0);
	has(out, " weight=5 ");
	/* A settings file that cannot be written: refused, nothing changed
	 * (settings.new a directory: root ignores permissions). */
	ck_assert_int_eq(mkdir(tmp_path("settings.new"), 0700), 0);
	ck_assert_int_eq(vrdmactl("set keep-me weight=6", out, sizeof(out)), 1);
	has(out, "cannot store the settings of VM 'keep-me'");
	ck_assert_int_eq(vrdmactl("set stopped-vm weight=6", out, sizeof(out)), 1);
	ck_assert_int_eq(vrdmactl("get stopped-vm", out, sizeof(out)), 1);
	ck_assert_int_eq(rmdir(tmp_path("settings.new")), 0);
	ck_assert_int_eq(vrdmactl("get keep-me", out, sizeof(out)), 0);
	has(out, " weight=5 ");
	stop(d);
	stop_guest(g);

	d = start();
	wait_ping();
	/* No guest now: what is stored. */
	ck_assert_int_eq(vrdmactl("get keep-me", out, sizeof(out)), 0);
	has(out, "vm=keep-me devid=0 stored=yes weight=5 ");
	g = start_guest("keep-me", "svc");
	wait_get("keep-me", want);
	stop_guest(g);
	/* And its next guest in this run. */
	g = start_guest("keep-me", "svc");
	wait_get("keep-me", want);
	stop_guest(g);
	stop(d);
}
END_TEST

START_TEST(test_set_stopped_vm)
{
	static const char *const want[] = { "vm=later", " weight=7 ", " class=high ", NULL };
	char out[4096];
	pid_t d, g;

	d = start();
	wait_ping();
	ck_assert_int_eq(vrdmactl("set later weight=7 class=high", out, sizeof(out)), 0);
	has(out, "no guest now");
	has(out, "vm=later devid=0 stored=yes weight=7 class=high ");
	ck_assert_int_eq(vrdmactl("-j get later", out, sizeof(out)), 0);
	has(out, "\"stored\":[{\"vm\":\"later\",\"devid\":0,\"weight\":7,\"class\":\"high\"");
	/* Bad words store nothing. */
	ck_assert_int_eq(vrdmactl("set later weight=0", out, sizeof(out)), 1);
	ck_assert_int_eq(vrdmactl("set never weight=2 bogus=1", out, sizeof(out)), 1);
	ck_assert_int_eq(vrdmactl("get never", out, sizeof(out)), 1);
	/* Domids name guests only: nothing stored under "77" or "77/1". */
	ck_assert_int_eq(vrdmactl("set 77 weight=2", out, sizeof(out)), 1);
	ck_assert_int_eq(vrdmactl("set 77/1 weight=2", out, sizeof(out)), 1);
	g = start_guest("later", "svc");
	wait_get("later", want);
	stop_guest(g);
	wait_gone("later");
	/* Back at the defaults: forgotten, in the file too. */
	ck_assert_int_eq(vrdmactl("set later weight=1 class=normal", out, sizeof(out)), 0);
	ck_assert_int_eq(vrdmactl("get later", out, sizeof(out)), 1);
	stop(d);
	d = start();
	wait_ping();
	ck_assert_int_eq(vrdmactl("get later", out, sizeof(out)), 1);
	stop(d);
}
END_TEST

START_TEST(test_tenant_limits_kept)
{
	char out[4096];
	pid_t d;

	d = start();
	wait_ping();
	ck_assert_int_eq(vrdmactl("set tenant:default guests=10", out, sizeof(out)), 0);
	ck_assert_int_eq(vrdmactl("set tenant:uid4242 listeners=3 mem=1048576", out,
				  sizeof(out)), 0);
	stop(d);
	d = start();
	wait_ping();
	ck_assert_int_eq(vrdmactl("get tenant:default", out, sizeof(out)), 0);
	has(out, "guests=10 ");
	ck_assert_int_eq(vrdmactl("get tenant:uid4242", out, sizeof(out)), 0);
	has(out, "guests=0/10(default) listeners=0/3 ");
	has(out, " mem=0/1048576 ");
	/* `default` drops the tenant's own value, on disk too. */
	ck_assert_int_eq(vrdmactl("set tenant:uid4242 listeners=default", out, sizeof(out)), 0);
	stop(d);
	d = start();
	wait_ping();
	ck_assert_int_eq(vrdmactl("get tenant:uid4242", out, sizeof(out)), 0);
	has(out, "(default) conns");	/* listeners=0/64(default) */
	has(out, " mem=0/1048576 ");
	stop(d);
}
END_TEST

/* VM names the file must carry as one word, or refuse. */
START_TEST(test_hostile_names)
{
	static const char *const want[] = { "vm=q\"#x=y\\z", " weight=9 ", NULL };
	char out[4096], path[160], line[512];
	FILE *f;
	pid_t d, g;
	int n = 0;

	d = start();
	wait_ping();
	ck_assert_int_eq(vrdmactl("set 'q\"#x=y\\z' weight=9", out, sizeof(out)), 0);
	/* Blanks, control bytes (vrdmactl refuses them), 64 bytes and more
	 * (vrdmad does): nothing stored. */
	ck_assert_int_eq(vrdmactl("set 'two words' weight=2", out, sizeof(out)), 2);
	ck_assert_int_eq(vrdmactl("set \"$(printf 'nl\\nx')\" weight=2", out, sizeof(out)), 2);
	ck_assert_int_eq(vrdmactl("set "
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa weight=2",
		out, sizeof(out)), 1);
	stop(d);
	snprintf(path, sizeof(path), "%s/settings", state);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (line[0] != '#') {
			ck_assert_str_eq(line, "vm q\"#x=y\\z 0 weight=9\n");
			n++;
		}
	fclose(f);
	ck_assert_int_eq(n, 1);
	d = start();
	wait_ping();
	g = start_guest("q\"#x=y\\z", "svc");
	wait_get("'q\"#x=y\\z'", want);
	stop_guest(g);
	stop(d);

	/* A file vrdmad did not write: refused whole, with file:line. */
	vdt_write_file(path, "# hand-made\nvm ok 0 weight=2\nvm bad 0 weight=2000\n");
	d = start();
	ck_assert_int_eq(wait_exit(d), 1);
	snprintf(path, sizeof(path), "%s/vrdmad.log", T.dir);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	n = 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "state/settings:3: weight=2000: allowed: an integer 1..1000") != NULL;
	fclose(f);
	ck_assert_int_eq(n, 1);
}
END_TEST

/* The whole of state/settings (at most len - 1 bytes). */
static void read_settings(char *buf, size_t len)
{
	FILE *f = fopen(tmp_path("settings"), "r");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* VM vm's guest's domid (`list -j`: one guest). */
static unsigned guest_domid(void)
{
	char out[4096], *at;
	unsigned id = 0;

	ck_assert_int_eq(vrdmactl("-j list", out, sizeof(out)), 0);
	at = strstr(out, "\"domid\":");
	ck_assert_ptr_nonnull(at);
	ck_assert_int_eq(sscanf(at, "\"domid\":%u", &id), 1);
	return id;
}

static const char kept[] = "VMs detached by the operator (kept until vrdmactl attach): ";

/*
 * `vrdmactl detach` of a VM's device 0 is kept in the settings file by
 * the VM's name (the attach policy leaves that VM alone, on Xen); a
 * restarted vrdmad still has it, until `vrdmactl attach` of the VM's
 * device 0 or `attach-policy forget`.  The file says version 2 only
 * while it holds one; a detach whose write fails is refused; one of a
 * domain with no device 0 records the VM; a newer version is refused by
 * name.
 */
START_TEST(test_detach_kept)
{
	char out[4096], cmd[64], file[2048];
	unsigned id;
	pid_t d, g;

	d = start();
	wait_ping();
	g = start_guest("dvm", "svc");
	wait_get("dvm", (const char *const[]){ "vm=dvm", NULL });
	id = guest_domid();
	/* Stopped, the process keeps its domain (its socket) while the
	 * device comes and goes. */
	ck_assert_int_eq(kill(g, SIGSTOP), 0);
	snprintf(cmd, sizeof(cmd), "detach %u", id);
	ck_assert_int_eq(vrdmactl(cmd, out, sizeof(out)), 0);
	ck_assert_int_eq(vrdmactl("attach-policy", out, sizeof(out)), 0);
	has(out, kept);
	has(out, ": dvm\n");
	read_settings(file, sizeof(file));
	has(file, "\nversion 2\n");
	has(file, "\ndetached dvm\n");
	/* attach undoes it, on disk too (version 1 again: vrdma 1.0 reads it) */
	snprintf(cmd, sizeof(cmd), "attach %u", id);
	ck_assert_int_eq(vrdmactl(cmd, out, sizeof(out)), 0);
	ck_assert_int_eq(vrdmactl("attach-policy", out, sizeof(out)), 0);
	ck_assert_ptr_null(strstr(out, "dvm"));
	read_settings(file, sizeof(file));
	ck_assert_ptr_null(strstr(file, "detached"));
	ck_assert_ptr_null(strstr(file, "version"));
	/* A detach whose write fails is refused: the device stays. */
	ck_assert_int_eq(mkdir(tmp_path("settings.new"), 0700), 0);
	snprintf(cmd, sizeof(cmd), "detach %u", id);
	ck_assert_int_eq(vrdmactl(cmd, out, sizeof(out)), 1);
	has(out, "cannot store that VM 'dvm' is detached");
	ck_assert_int_eq(vrdmactl("list", out, sizeof(out)), 0);
	has(out, "dvm guest ");
	ck_assert_int_eq(rmdir(tmp_path("settings.new")), 0);
	ck_assert_int_eq(vrdmactl(cmd, out, sizeof(out)), 0);
	has(out, "detached domain ");
	ck_assert_ptr_null(strstr(out, "warning"));
	/* No device 0 (now; on Xen: one the policy has not made yet): the
	 * VM is recorded all the same, not an error. */
	snprintf(cmd, sizeof(cmd), "-j detach %u", id);
	ck_assert_int_eq(vrdmactl(cmd, out, sizeof(out)), 0);
	has(out, "\"device\":false,\"kept\":true");
	snprintf(cmd, sizeof(cmd), "detach %u", id);
	ck_assert_int_eq(vrdmactl(cmd, out, sizeof(out)), 0);
	has(out, "has no device 0: VM 'dvm' recorded as detached");
	snprintf(cmd, sizeof(cmd), "detach %u 1", id);	/* not device 0: an error */
	ck_assert_int_eq(vrdmactl(cmd, out, sizeof(out)), 1);
	ck_assert_int_eq(kill(g, SIGCONT), 0);
	stop_guest(g);
	stop(d);

	d = start();
	wait_ping();
	ck_assert_int_eq(vrdmactl("attach-policy", out, sizeof(out)), 0);
	has(out, kept);
	has(out, ": dvm\n");
	ck_assert_int_eq(vrdmactl("-j attach-policy", out, sizeof(out)), 0);
	has(out, "\"detached_vms\":[\"dvm\"]");
	/* forget: no domain of it needed, on disk at once */
	ck_assert_int_eq(vrdmactl("attach-policy forget dvm", out, sizeof(out)), 0);
	has(out, "VM 'dvm' is no longer kept detached");
	ck_assert_int_eq(vrdmactl("attach-policy", out, sizeof(out)), 0);
	ck_assert_ptr_null(strstr(out, "dvm"));
	read_settings(file, sizeof(file));
	ck_assert_ptr_null(strstr(file, "detached"));
	ck_assert_int_eq(vrdmactl("attach-policy forget dvm", out, sizeof(out)), 1);
	has(out, "VM 'dvm' is not kept detached");
	ck_assert_int_eq(vrdmactl("attach-policy forgot dvm", out, sizeof(out)), 2);
	stop(d);

	/* A file of a newer vrdmad: refused, naming its version. */
	vdt_write_file(tmp_path("settings"), "# later\nversion 4\ndetached dvm\n");
	d = start();
	ck_assert_int_eq(wait_exit(d), 1);
	snprintf(file, sizeof(file), "%s/vrdmad.log", T.dir);
	{
		FILE *f = fopen(file, "r");
		char line[512];
		int n = 0;

		ck_assert_ptr_nonnull(f);
		while (fgets(line, sizeof(line), f))
			n += strstr(line, "state/settings:2: version 4: written by a newer "
				    "vrdmad (this one reads versions 1 to 3)") != NULL;
		fclose(f);
		ck_assert_int_eq(n, 1);
	}
}
END_TEST

/*
 * A detach that cannot be kept across a restart still happens, and the
 * answer says why: the table of detached VMs full (256: forget makes
 * room), no state dir.
 */
START_TEST(test_detach_not_kept)
{
	char out[4096], cmd[64], line[32], *file;
	unsigned id, i;
	size_t len = 0;
	pid_t d, g;

	file = malloc(256 * 32 + 32);
	ck_assert_ptr_nonnull(file);
	len += (size_t)sprintf(file, "version 2\n");
	for (i = 0; i < 256; i++)
		len += (size_t)sprintf(file + len, "detached gone-%u\n", i);
	vdt_write_file(tmp_path("settings"), file);
	free(file);
	d = start();
	wait_ping();
	g = start_guest("nk", "svc");
	wait_get("nk", (const char *const[]){ "vm=nk", NULL });
	id = guest_domid();
	ck_assert_int_eq(kill(g, SIGSTOP), 0);
	snprintf(cmd, sizeof(cmd), "detach %u", id);
	ck_assert_int_eq(vrdmactl(cmd, out, sizeof(out)), 0);
	has(out, "detached domain ");
	has(out, "warning: this detach is not kept across a restart of vrdmad: 256 VMs "
		 "are kept detached already");
	snprintf(cmd, sizeof(cmd), "-j detach %u", id);
	ck_assert_int_eq(vrdmactl(cmd, out, sizeof(out)), 0);
	has(out, "\"kept\":false,\"not_kept\":\"256 VMs");
	/* room made: kept */
	ck_assert_int_eq(vrdmactl("attach-policy forget gone-7", out, sizeof(out)), 0);
	snprintf(cmd, sizeof(cmd), "detach %u", id);
	ck_assert_int_eq(vrdmactl(cmd, out, sizeof(out)), 0);
	ck_assert_ptr_null(strstr(out, "warning"));
	snprintf(line, sizeof(line), "\ndetached nk\n");
	{
		char buf[256 * 32 + 64];

		read_settings(buf, sizeof(buf));
		has(buf, line);
		ck_assert_ptr_null(strstr(buf, "gone-7\n"));
	}
	ck_assert_int_eq(kill(g, SIGCONT), 0);
	stop_guest(g);
	stop(d);

	/* no state dir: in memory only, and said so */
	d = start_args("-f", "-S", T.dir, "-n", "cnode", "--state-dir", "none", NULL);
	wait_ping();
	g = start_guest("nk2", "svc");
	wait_get("nk2", (const char *const[]){ "vm=nk2", NULL });
	id = guest_domid();
	ck_assert_int_eq(kill(g, SIGSTOP), 0);
	snprintf(cmd, sizeof(cmd), "detach %u", id);
	ck_assert_int_eq(vrdmactl(cmd, out, sizeof(out)), 0);
	has(out, "warning: this detach is not kept across a restart of vrdmad: vrdmad "
		 "keeps no settings file");
	ck_assert_int_eq(kill(g, SIGCONT), 0);
	stop_guest(g);
	stop(d);
}
END_TEST

/* vrdmad -c FILE 2>&1; exit status, output in out. */
static int run_conf(const char *text, const char *extra, char *out, size_t len)
{
	char path[128], cmd[1280];
	size_t got;
	FILE *f;

	snprintf(path, sizeof(path), "%s/vrdmad.conf", T.dir);
	vdt_write_file(path, text);
	snprintf(cmd, sizeof(cmd), "timeout 10 %s -c %s %s 2>&1", T.bin, path, extra);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	got = fread(out, 1, len - 1, f);
	out[got] = '\0';
	return WEXITSTATUS(pclose(f));
}

START_TEST(test_conf_errors)
{
	char out[1024], want[256];

	ck_assert_int_eq(run_conf("[vrdmad]\n# ok\nnode = a\nwieght = 3\n", "", out,
				  sizeof(out)), 2);
	snprintf(want, sizeof(want), "%s/vrdmad.conf:4: unknown key 'wieght'", T.dir);
	has(out, want);
	ck_assert_int_eq(run_conf("[vrdmad]\nrdma_port = 70000\n", "", out, sizeof(out)), 2);
	snprintf(want, sizeof(want), "%s/vrdmad.conf:2: rdma_port: bad value '70000'", T.dir);
	has(out, want);
	ck_assert_int_eq(run_conf("[vrdmad]\nspin_us = lots\n", "", out, sizeof(out)), 2);
	has(out, "vrdmad.conf:2: spin_us: bad value 'lots'");
	ck_assert_int_eq(run_conf("[vrdmad]\nverbose = maybe\n", "", out, sizeof(out)), 2);
	has(out, "vrdmad.conf:2: verbose: bad value 'maybe'");
	ck_assert_int_eq(run_conf("[vrdmad]\ncoll = no\n", "", out, sizeof(out)), 2);
	has(out, "vrdmad.conf:2: coll: bad value 'no' (on or off)");
	ck_assert_int_eq(run_conf("", "--coll OFF", out, sizeof(out)), 1);
	has(out, "vrdmad: bad --coll 'OFF' (on or off)");
	ck_assert_int_eq(run_conf("[vrdmad]\nstate_dir = relative\n", "", out, sizeof(out)), 2);
	has(out, "vrdmad.conf:2: state_dir: bad value 'relative'");
	ck_assert_int_eq(run_conf("[vrdmad]\nnode = a\nnode = b\n", "", out, sizeof(out)), 2);
	has(out, "vrdmad.conf:3: key 'node' given twice");
	ck_assert_int_eq(run_conf("[vrdmd]\nnode = a\n", "", out, sizeof(out)), 2);
	has(out, "vrdmad.conf:2: key 'node' in section [vrdmd]");
	ck_assert_int_eq(run_conf("[vrdmad]\nnode\n", "", out, sizeof(out)), 2);
	has(out, "vrdmad.conf:2: syntax error");
	ck_assert_int_eq(run_conf("[vrdmad]\nnode = a\n  b\n", "", out, sizeof(out)), 2);
	has(out, "vrdmad.conf:3: a line that starts with a blank");
	/* [limits]: the tenant limits, each in its range. */
	ck_assert_int_eq(run_conf("[vrdmad]\nnode = a\n\n[limits]\nguests = 300\n", "", out,
				  sizeof(out)), 2);
	snprintf(want, sizeof(want), "%s/vrdmad.conf:5: guests: bad value '300' (0..256)",
		 T.dir);
	has(out, want);
	ck_assert_int_eq(run_conf("[limits]\nmem = 2P\n", "", out, sizeof(out)), 2);
	has(out, "vrdmad.conf:2: mem: bad value '2P' (0..1125899906842624, K/M/G/T)");
	ck_assert_int_eq(run_conf("[limits]\nqps = -1\n", "", out, sizeof(out)), 2);
	has(out, "vrdmad.conf:2: qps: bad value '-1'");
	ck_assert_int_eq(run_conf("[limits]\nguests = 3\nguests = 4\n", "", out,
				  sizeof(out)), 2);
	has(out, "vrdmad.conf:3: key 'guests' given twice");
	ck_assert_int_eq(run_conf("[limits]\nnode = a\n", "", out, sizeof(out)), 2);
	has(out, "vrdmad.conf:2: unknown key 'node' in [limits] (allowed: guests");
	ck_assert_int_eq(run_conf("[vrdmad]\nguests = 3\n", "", out, sizeof(out)), 2);
	has(out, "vrdmad.conf:2: unknown key 'guests'");
	/* An explicit file must exist. */
	ck_assert_int_eq(run_conf("", "-c /nonexistent/vrdmad.conf", out, sizeof(out)), 2);
	has(out, "/nonexistent/vrdmad.conf: No such file");
}
END_TEST

START_TEST(test_conf_override)
{
	char text[512], out[4096], log[128], line[512];
	pid_t d, g;
	FILE *f;
	int n = 0;

	/* The file names the run dir, the node, the state dir; -n wins. */
	snprintf(text, sizeof(text),
		 "# vrdmad.conf for a test\n[vrdmad]\nnode = filenode\nrun_dir = %s\n"
		 "state_dir = %s ; kept here\nspin_us = 0\nverbose = no\n"
		 "attach = none\ncoll = off\n", T.dir, state);
	snprintf(log, sizeof(log), "%s/vrdmad.conf", T.dir);
	vdt_write_file(log, text);
	d = start_args("-c", log, NULL);
	wait_ping();
	ck_assert_int_eq(vrdmactl("list", out, sizeof(out)), 0);
	has(out, "node filenode:");
	ck_assert_int_eq(vrdmactl("teams", out, sizeof(out)), 0);
	has(out, "node filenode: offload off, 0 teams");
	g = start_guest("conf-vm", "svc");
	wait_get("conf-vm", (const char *const[]){ "vm=conf-vm", NULL });
	ck_assert_int_eq(vrdmactl("set conf-vm qps=12", out, sizeof(out)), 0);
	stop_guest(g);
	stop(d);
	d = start_args("--config", log, "-n", "clinode", "--spin-us", "7", "--coll", "on", NULL);
	wait_ping();
	ck_assert_int_eq(vrdmactl("list", out, sizeof(out)), 0);
	has(out, "node clinode:");
	ck_assert_int_eq(vrdmactl("teams", out, sizeof(out)), 0);
	has(out, "node clinode: offload on,");
	ck_assert_int_eq(vrdmactl("get conf-vm", out, sizeof(out)), 0);
	has(out, " qps=12 ");
	stop(d);
	/* --state-dir none: nothing from the file's state dir. */
	d = start_args("-c", log, "--state-dir", "none", NULL);
	wait_ping();
	ck_assert_int_eq(vrdmactl("get conf-vm", out, sizeof(out)), 1);
	stop(d);
	/* A state dir that does not exist yet is made (as the run dir). */
	snprintf(text, sizeof(text), "%s/fresh", T.dir);
	d = start_args("-S", T.dir, "--state-dir", text, NULL);
	wait_ping();
	ck_assert_int_eq(vrdmactl("set fresh-vm weight=2", out, sizeof(out)), 0);
	stop(d);
	snprintf(text, sizeof(text), "%s/fresh/settings", T.dir);
	ck_assert_int_eq(access(text, R_OK), 0);
	/* The file the package ships: every key commented out. */
	d = start_args("-c", "dom0-daemon/vrdmad.conf", "-S", T.dir, NULL);
	wait_ping();
	stop(d);
	snprintf(log, sizeof(log), "%s/vrdmad.log", T.dir);
	f = fopen(log, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "started node=clinode") && strstr(line, "spin_us=7 ") &&
		     strstr(line, "coll=on ");
	fclose(f);
	ck_assert_int_eq(n, 1);
}
END_TEST

/* sh -c cmd: its stdout in out. */
static void run_out(const char *cmd, char *out, size_t len)
{
	FILE *f = popen(cmd, "r");
	size_t got;

	ck_assert_ptr_nonnull(f);
	got = fread(out, 1, len - 1, f);
	out[got] = '\0';
	pclose(f);
}

/*
 * One vrdmad per kept file: a second one (its own run dir) given the
 * first one's state dir or policy file stops at start, saying whose they
 * are, and leaves the first one's files as they were -- also when the
 * policy file sits in a state dir the first one made.
 */
START_TEST(test_second_vrdmad_refused)
{
	char other[128], st[128], pol[160], set[160], cmd[1280], out[2048], before[512],
	     after[512];
	pid_t d;

	snprintf(other, sizeof(other), "%s/other", T.dir);
	snprintf(st, sizeof(st), "%s/fresh-state", T.dir);	/* made by vrdmad */
	snprintf(pol, sizeof(pol), "%s/policy", st);
	snprintf(set, sizeof(set), "%s/settings", st);
	d = start_args("-f", "-S", T.dir, "-n", "cnode", "--state-dir", st, "-P", pol, NULL);
	wait_ping();
	ck_assert_int_eq(vrdmactl("set one-vm weight=3", out, sizeof(out)), 0);
	ck_assert_int_eq(vrdmactl("policy default tenant", out, sizeof(out)), 0);
	snprintf(cmd, sizeof(cmd), "cat %s %s", set, pol);
	run_out(cmd, before, sizeof(before));
	has(before, "vm one-vm 0 weight=3");
	has(before, "default tenant");
	snprintf(cmd, sizeof(cmd), "timeout 10 %s -f -S %s --state-dir %s -P none 2>&1; echo rc=$?",
		 T.bin, other, st);
	run_out(cmd, out, sizeof(out));
	has(out, "/settings is another vrdmad's (it holds ");
	has(out, "rc=1");
	snprintf(cmd, sizeof(cmd), "timeout 10 %s -f -S %s --state-dir none -P %s 2>&1; echo rc=$?",
		 T.bin, other, pol);
	run_out(cmd, out, sizeof(out));
	has(out, "/policy is another vrdmad's (it holds ");
	has(out, "rc=1");
	ck_assert_int_eq(vrdmactl("ping", out, sizeof(out)), 0);
	snprintf(cmd, sizeof(cmd), "cat %s %s", set, pol);
	run_out(cmd, after, sizeof(after));
	ck_assert_str_eq(before, after);
	stop(d);
	/* Gone, it holds nothing: the next one starts on the same files. */
	d = start_args("-f", "-S", other, "--state-dir", st, "-P", pol, NULL);
	snprintf(cmd, sizeof(cmd), "for i in $(seq 100); do %s -S %s ping >/dev/null 2>&1 "
		 "&& exit 0; sleep 0.05; done; exit 1", T.ctl, other);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(kill(d, SIGTERM), 0);
	ck_assert_int_eq(wait_exit(d), 0);
}
END_TEST

/* path's whole content is text. */
static void file_is(const char *path, const char *text)
{
	char buf[256];
	size_t got;
	FILE *f = fopen(path, "r");

	ck_assert_ptr_nonnull(f);
	got = fread(buf, 1, sizeof(buf) - 1, f);
	buf[got] = '\0';
	fclose(f);
	ck_assert_str_eq(buf, text);
}

/* Does path hold a line that starts with pfx (anywhere: in)? */
static bool file_line_at(const char *path, const char *pfx, bool anywhere)
{
	char line[512];
	bool found = false;
	FILE *f = fopen(path, "r");

	ck_assert_ptr_nonnull(f);
	while (!found && fgets(line, sizeof(line), f))
		found = anywhere ? strstr(line, pfx) != NULL : !strncmp(line, pfx, strlen(pfx));
	fclose(f);
	return found;
}

static bool file_line(const char *path, const char *pfx)
{
	return file_line_at(path, pfx, false);
}

static bool file_has(const char *path, const char *what)
{
	return file_line_at(path, what, true);
}

/* A `set` may be followed by the tick's write of what its key's watch
 * marked; with its fsyncs, on a loaded machine, that write's settings.new
 * can be there when we look.  Wait until it is gone, then 500 ms more
 * without one (five ticks) for a write still to come. */
static void settings_quiet(void)
{
	struct stat st;
	int i, gone = 0;

	for (i = 0; i < WAIT_MS / 20 && gone < 25; i++) {
		if (lstat(tmp_path("settings.new"), &st) < 0 && errno == ENOENT)
			gone++;
		else
			gone = 0;
		vdt_sleep_ms(20);
	}
	ck_assert_msg(gone >= 25, "settings.new stays");
}

/* state/settings: a regular file, owner only, holding a line pfx... */
static void settings_has(const char *pfx)
{
	struct stat st;

	ck_assert_int_eq(lstat(tmp_path("settings"), &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_msg(file_line(tmp_path("settings"), pfx), "settings lack '%s'", pfx);
	settings_quiet();
}

/*
 * The settings file's temporary is made afresh: a symlink planted at
 * settings.new is removed, not followed (its target keeps its bytes; a
 * dangling one makes nothing), a crash's leftover is replaced, the file
 * is 0600.  Each `set` is in the file when vrdmactl returns.
 */
START_TEST(test_settings_new_planted)
{
	char out[4096], victim[128], made[128], log[128];
	pid_t d;

	snprintf(victim, sizeof(victim), "%s/victim", T.dir);
	vdt_write_file(victim, "precious\n");
	ck_assert_int_eq(symlink(victim, tmp_path("settings.new")), 0);
	d = start();
	wait_ping();
	ck_assert_int_eq(vrdmactl("set tenant:default guests=10", out, sizeof(out)), 0);
	file_is(victim, "precious\n");
	settings_has("tenant default guests=10");

	snprintf(made, sizeof(made), "%s/made", T.dir);
	ck_assert_int_eq(symlink(made, tmp_path("settings.new")), 0);
	ck_assert_int_eq(vrdmactl("set tenant:default guests=11", out, sizeof(out)), 0);
	ck_assert_int_eq(access(made, F_OK), -1);
	settings_has("tenant default guests=11");

	/* Made aside and renamed in: no window between write and chmod. */
	vdt_write_file(tmp_path("junk"), "junk from a crash\n");
	ck_assert_int_eq(chmod(tmp_path("junk"), 0644), 0);
	ck_assert_int_eq(rename(tmp_path("junk"), tmp_path("settings.new")), 0);
	ck_assert_int_eq(vrdmactl("set later-vm weight=3", out, sizeof(out)), 0);
	settings_has("vm later-vm 0 weight=3");
	settings_has("tenant default guests=11");
	stop(d);
	snprintf(log, sizeof(log), "%s/vrdmad.log", T.dir);
	ck_assert(file_has(log, "settings: removed ") && file_has(log, "left by an earlier run"));
	d = start();
	wait_ping();
	ck_assert_int_eq(vrdmactl("get tenant:default", out, sizeof(out)), 0);
	has(out, "guests=11 ");
	stop(d);
}
END_TEST

/* Runs of vrdmad for test_conf_limits: -c conf, `get tenant:default`
 * into out, stopped. */
static void limits_of(const char *conf, char *out, size_t len)
{
	pid_t d = start_args("-c", conf, "-S", T.dir, NULL);

	wait_ping();
	ck_assert_int_eq(vrdmactl("get tenant:default", out, len), 0);
	stop(d);
}

/*
 * [limits]: the node's defaults from the file, for every tenant without
 * its own; the plain host's platform counts guests against them too;
 * tenant:default's keys win, and their `default` drops back to the file.
 */
START_TEST(test_conf_limits)
{
	char text[512], conf[128], out[4096], out2[4096], want[64], log[128], vm[16],
	     line[256];
	pid_t d, g[4];
	unsigned i;
	int st;
	FILE *in, *f;
	bool lim = false;

	snprintf(text, sizeof(text),
		 "[vrdmad]\nrun_dir = %s\nstate_dir = %s\n\n[limits]\nguests = 3\n"
		 "listeners = 5 ; few\nmem = 1G\n", T.dir, state);
	snprintf(conf, sizeof(conf), "%s/vrdmad.conf", T.dir);
	vdt_write_file(conf, text);
	d = start_args("-c", conf, NULL);
	wait_ping();
	ck_assert_int_eq(vrdmactl("get tenant:default", out, sizeof(out)), 0);
	has(out, "tenant=default guests=3 listeners=5 conns=64 qps=16384 mem=1073741824 ");
	ck_assert_int_eq(vrdmactl("get tenant:uid4242", out, sizeof(out)), 0);
	has(out, "guests=0/3(default) listeners=0/5(default) conns=0/64(default) ");

	/* Our uid's guests: the third fits, the fourth is refused. */
	for (i = 0; i < 3; i++) {
		snprintf(vm, sizeof(vm), "lim-%u", i);
		g[i] = start_guest(vm, vm);
	}
	snprintf(want, sizeof(want), "get tenant:uid%u", (unsigned)getuid());
	for (i = 0; i < WAIT_MS / 50; i++) {
		if (vrdmactl(want, out, sizeof(out)) == 0 && strstr(out, "guests=3/3(default)"))
			break;
		vdt_sleep_ms(50);
	}
	has(out, "guests=3/3(default)");
	g[3] = start_guest("lim-3", "lim-3");
	st = wait_exit(g[3]);
	ck_assert_msg(st > 0 && st < 128, "the fourth guest: exit %d", st);
	snprintf(log, sizeof(log), "%s/bw.log", T.dir);
	ck_assert(file_has(log, "vrdma_open: Too many users"));
	for (i = 0; i < 3; i++)
		stop_guest(g[i]);

	/* tenant:default's own key wins; its `default` drops back to 3. */
	ck_assert_int_eq(vrdmactl("set tenant:default guests=5", out, sizeof(out)), 0);
	has(out, "tenant=default guests=5 ");
	ck_assert_int_eq(vrdmactl("set tenant:default guests=default", out, sizeof(out)), 0);
	has(out, "tenant=default guests=3 ");
	stop(d);
	ck_assert(!file_line(tmp_path("settings"), "tenant default"));
	d = start_args("-c", conf, NULL);
	wait_ping();
	ck_assert_int_eq(vrdmactl("get tenant:default", out, sizeof(out)), 0);
	has(out, "tenant=default guests=3 listeners=5 ");
	stop(d);

	/* The shipped file's commented [limits] are the built-in values:
	 * uncommented, they change nothing. */
	limits_of("dom0-daemon/vrdmad.conf", out, sizeof(out));
	in = fopen("dom0-daemon/vrdmad.conf", "r");
	ck_assert_ptr_nonnull(in);
	f = fopen(conf, "w");
	ck_assert_ptr_nonnull(f);
	for (i = 0; fgets(line, sizeof(line), in);) {
		if (line[0] == '[')
			lim = !strncmp(line, "[limits]", 8);
		if (lim && line[0] == '#' && line[1] >= 'a' && line[1] <= 'z' &&
		    strstr(line, " = ")) {
			fputs(line + 1, f);
			i++;
		} else {
			fputs(line, f);
		}
	}
	fclose(in);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_uint_eq(i, 9);	/* every limit */
	limits_of(conf, out2, sizeof(out2));
	ck_assert_str_eq(out2, out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vrdmad_conf");
	TCase *tc = tcase_create("settings");
	SRunner *sr;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_restart_keeps_settings);
	tcase_add_test(tc, test_set_stopped_vm);
	tcase_add_test(tc, test_tenant_limits_kept);
	tcase_add_test(tc, test_hostile_names);
	tcase_add_test(tc, test_detach_kept);
	tcase_add_test(tc, test_detach_not_kept);
	tcase_add_test(tc, test_conf_errors);
	tcase_add_test(tc, test_conf_override);
	tcase_add_test(tc, test_second_vrdmad_refused);
	tcase_add_test(tc, test_conf_limits);
	tcase_add_test(tc, test_settings_new_planted);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	return ck_run(sr);
}
