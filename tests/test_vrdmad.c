// SPDX-License-Identifier: MIT
/*
 * The real vrdmad and vrdmactl binaries ($VRDMA_BUILD/sbin): start, answer
 * on the control socket, refuse a second instance, recover from a crashed
 * one's stale sockets, shut down clean on SIGTERM.  Every wait is bounded.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/time.h>

#define WAIT_MS		10000

static char dir[64], bin[512], ctl_bin[512];

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void setup(void)
{
	const char *b = getenv("VRDMA_BUILD");

	if (!b)
		b = "build";
	snprintf(bin, sizeof(bin), "%s/sbin/vrdmad", b);
	snprintf(ctl_bin, sizeof(ctl_bin), "%s/sbin/vrdmactl", b);
	snprintf(dir, sizeof(dir), "/tmp/vrdmad-t-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	/* The daemon must not depend on the environment naming the dir. */
	unsetenv("VRDMA_RUN_DIR");
	setenv("VRDMA_PLATFORM", "host", 1);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

static pid_t start(void)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char log[128];

		/* Quiet test output: the daemon logs beside its sockets. */
		snprintf(log, sizeof(log), "%s/vrdmad.log", dir);
		if (!freopen(log, "a", stderr))
			_exit(126);
		execl(bin, "vrdmad", "-f", "-S", dir, "-n", "tnode", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Exit status of pid within WAIT_MS, or -1 (then it is killed). */
static int wait_exit(pid_t pid)
{
	int st, i;

	for (i = 0; i < WAIT_MS / 10; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/* One request on the control socket; response in buf, or -errno. */
static int ask(const char *req, char *buf, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { 5, 0 };
	size_t got = 0;
	ssize_t n;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/vrdmad.ctl", dir);
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
		sleep_ms(20);
	}
	ck_abort_msg("vrdmad did not answer ping");
}

static int exists(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* Run vrdmactl; its exit status, stdout+stderr in out. */
static int vrdmactl(const char *args, char *out, size_t len)
{
	char cmd[1024];
	size_t got;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "timeout 10 %s -S %s %s 2>&1", ctl_bin, dir, args);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	got = fread(out, 1, len - 1, f);
	out[got] = '\0';
	return WEXITSTATUS(pclose(f));
}

START_TEST(test_lifecycle)
{
	char buf[4096], path[128];
	pid_t pid;
	FILE *f;
	long p = 0;

	pid = start();
	wait_ping();
	snprintf(path, sizeof(path), "%s/vrdmad.pid", dir);
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

int main(void)
{
	Suite *s = suite_create("vrdmad");
	TCase *tc = tcase_create("daemon");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_lifecycle);
	tcase_add_test(tc, test_second_instance);
	tcase_add_test(tc, test_restart_after_crash);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
