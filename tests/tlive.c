// SPDX-License-Identifier: MIT
/* Live-daemon harness of the libvrdma Check suites (tlive.h). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tlive.h"

int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


void rm_run_dir(const char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "tlive: could not remove %s\n", dir);
}


/* Per-test run dirs live under one root per suite run, made and removed
 * by the parent: a failed test (no checked teardown) leaves nothing. */
char d_root[256];
char d_dir[300];
pid_t d_pid = -1;
int d_skip;

void root_make(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(d_root, sizeof(d_root), "%s/vrdma-api-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(d_root))
		d_root[0] = 0;
}

void root_remove(void)
{
	if (d_root[0])
		rm_run_dir(d_root);
}

static const char *daemon_path(char *buf, size_t len)
{
	const char *b = getenv("VRDMA_BUILD");

	if (!b || !*b)
		return NULL;
	snprintf(buf, len, "%s/sbin/vrdmad", b);
	return access(buf, X_OK) == 0 ? buf : NULL;
}

void daemon_start(void)
{
	char path[512], sock[512], log[512];
	struct stat st;
	int64_t end;

	d_skip = 0;
	if (!daemon_path(path, sizeof(path))) {
		d_skip = 1;
		return;
	}
	ck_assert_msg(d_root[0], "no temp root");
	snprintf(d_dir, sizeof(d_dir), "%s/run-XXXXXX", d_root);
	ck_assert_ptr_nonnull(mkdtemp(d_dir));
	setenv("VRDMA_RUN_DIR", d_dir, 1);
	snprintf(log, sizeof(log), "%s/vrdmad.log", d_dir);
	d_pid = fork();
	ck_assert_int_ge(d_pid, 0);
	if (d_pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		/* Die with the test process even if it dies on an assert. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(path, "vrdmad", "-f", "-S", d_dir, "-n", "api-node", (char *)NULL);
		_exit(127);
	}
	snprintf(sock, sizeof(sock), "%s/guest.sock", d_dir);
	for (end = now_ms() + 5000; stat(sock, &st) != 0 && now_ms() < end;)
		usleep(10000);
	ck_assert_msg(stat(sock, &st) == 0, "vrdmad did not create %s", sock);
}

void daemon_stop(void)
{
	int64_t end;
	int status;

	if (d_pid > 0) {
		kill(d_pid, SIGTERM);
		for (end = now_ms() + 5000; now_ms() < end;) {
			if (waitpid(d_pid, &status, WNOHANG) == d_pid)
				break;
			usleep(10000);
		}
		if (waitpid(d_pid, &status, WNOHANG) == 0) {
			kill(d_pid, SIGKILL);
			waitpid(d_pid, &status, 0);
		}
		d_pid = -1;
	}
	if (d_dir[0])
		rm_run_dir(d_dir);
	d_dir[0] = 0;
}


/* vrdmad may have bound its socket but not yet listen()ed: retry a
 * refused connect for a while (bounded). */
struct vrdma_device *open_dev(void)
{
	int64_t end = now_ms() + T_OPEN_MS;
	struct vrdma_device *dev;

	for (;;) {
		dev = vrdma_open(NULL, T_OPEN_MS);
		if (dev || (errno != ECONNREFUSED && errno != ENOENT) || now_ms() > end)
			break;
		usleep(20000);
	}
	ck_assert_msg(dev != NULL, "vrdma_open: %s", strerror(errno));
	return dev;
}


int wait_one_ms(struct vrdma_cq *cq, struct vrdma_wc *wc, int ms)
{
	int64_t end = now_ms() + ms;
	int n;

	for (;;) {
		n = vrdma_poll_cq(cq, 1, wc);
		if (n != 0 || now_ms() > end)
			return n;
		vrdma_wait_cq(cq, 100);
	}
}

TCase *tlive_tcase(void)
{
	TCase *live = tcase_create("live");

	tcase_add_unchecked_fixture(live, root_make, root_remove);
	tcase_add_checked_fixture(live, daemon_start, daemon_stop);
	tcase_set_timeout(live, 60);
	return live;
}

int tlive_main(const char *name, Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	if (!getenv("VRDMA_BUILD") || access(getenv("VRDMA_BUILD"), F_OK))
		fprintf(stderr, "%s: VRDMA_BUILD not set: live tests skip\n", name);
	srunner_run_all(sr, CK_ENV);	/* CK_VERBOSITY=verbose lists each test */
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

struct tlive_acc {
	struct vrdma_listener *l;
	struct vrdma_qp *qp;
	int ms, rc;
};

static void *tlive_accept_one(void *arg)
{
	struct tlive_acc *a = arg;
	struct vrdma_conn_req req;

	a->rc = vrdma_get_request(a->l, &req, a->ms);
	if (!a->rc)
		a->rc = vrdma_accept(a->l, a->qp, &req, NULL, 0);
	return NULL;
}

void tlive_connect(struct vrdma_device *sdev, struct vrdma_qp *sqp, struct vrdma_qp *cqp,
		   const char *svc, int ms)
{
	struct tlive_acc a = { .qp = sqp, .ms = ms };
	pthread_t th;
	int rc;

	a.l = vrdma_listen(sdev, svc);
	ck_assert_msg(a.l != NULL, "listen: %s", strerror(errno));
	ck_assert_int_eq(pthread_create(&th, NULL, tlive_accept_one, &a), 0);
	rc = vrdma_connect(cqp, "", svc, NULL, 0, NULL, NULL, ms);
	pthread_join(th, NULL);
	ck_assert_msg(rc == 0, "connect: %s", strerror(rc));
	ck_assert_msg(a.rc == 0, "accept: %s", strerror(a.rc));
	ck_assert_int_eq(vrdma_close_listener(a.l), 0);
}
