// SPDX-License-Identifier: MIT
/*
 * vrdmad's control-socket transport (dom0-daemon/ctl.c) over the real
 * event loop, with a stand-in command handler.  Clients are non-blocking
 * sockets in the test thread; the loop is pumped until they see EOF.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "../dom0-daemon/ctl.h"
#include "../dom0-daemon/evloop.h"
#include "ck_run.h"

#define GUARD_MS	10000
#define BIG_LEN		(1u << 20)

static char dir[64], path[128];

static void handler(void *arg, const char *line, FILE *out)
{
	unsigned i;

	(void)arg;
	if (!strcmp(line, "big")) {
		for (i = 0; i < BIG_LEN / 16; i++)
			fputs("0123456789abcde\n", out);
		return;
	}
	fprintf(out, "you said [%s]", line);	/* no newline: ctl adds it */
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/vdctl-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, VD_CTL_NAME);
}

static void teardown(void)
{
	unlink(path);
	rmdir(dir);
}

static int client(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Run the loop until fd sees EOF; bytes received, or -1 on the guard. */
static ssize_t pump_recv(struct vev_loop *l, int fd, char *buf, size_t len)
{
	int64_t deadline = vev_now_ms() + GUARD_MS;
	size_t got = 0;
	ssize_t n;

	while (vev_now_ms() < deadline) {
		n = recv(fd, buf + got, len - 1 - got, MSG_DONTWAIT);
		if (n == 0) {
			buf[got] = '\0';
			return (ssize_t)got;
		}
		if (n > 0) {
			got += (size_t)n;
			if (got == len - 1)
				return -1;
			continue;
		}
		if (errno != EAGAIN) {
			fprintf(stderr, "recv: %s after %zu\n", strerror(errno), got);
			return -1;
		}
		ck_assert_int_eq(vev_run_once(l), 0);
	}
	return -1;
}

static void ask(struct vev_loop *l, const char *req, size_t len, int half_close,
		const char *want)
{
	char buf[512];
	int fd = client();

	ck_assert_int_eq(send(fd, req, len, MSG_NOSIGNAL), (ssize_t)len);
	if (half_close)
		shutdown(fd, SHUT_WR);
	ck_assert_int_ge(pump_recv(l, fd, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, want);
	close(fd);
}

START_TEST(test_requests)
{
	struct vev_loop *l;
	struct vd_ctl *c;
	char long_req[VD_CTL_REQ_MAX + 10];
	struct stat st;

	ck_assert_int_eq(vev_loop_new(&l), 0);
	ck_assert_int_eq(vd_ctl_open(l, path, handler, NULL, &c), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0077, 0);	/* owner only */

	ask(l, "hello\n", 6, 0, "you said [hello]\n");
	ask(l, "hello\r\n", 7, 0, "you said [hello]\n");
	ask(l, "one\ntwo\n", 8, 0, "you said [one]\n");
	ask(l, "abc", 3, 1, "you said [abc]\n");
	ask(l, "ab\0cd\n", 6, 0, "error: NUL byte in request\n");
	memset(long_req, 'a', sizeof(long_req));
	ask(l, long_req, sizeof(long_req), 0, "error: request too long\n");
	ck_assert_uint_eq(vd_ctl_clients(c), 0);
	vd_ctl_close(c);
	ck_assert_int_eq(access(path, F_OK), -1);
	vev_loop_free(l);
}
END_TEST

/* A response far bigger than the socket buffer goes out in pieces. */
START_TEST(test_big_response)
{
	struct vev_loop *l;
	struct vd_ctl *c;
	char *buf;
	int fd;

	buf = malloc(BIG_LEN + 16);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(vev_loop_new(&l), 0);
	ck_assert_int_eq(vd_ctl_open(l, path, handler, NULL, &c), 0);
	fd = client();
	ck_assert_int_eq(send(fd, "big\n", 4, MSG_NOSIGNAL), 4);
	ck_assert_int_eq(pump_recv(l, fd, buf, BIG_LEN + 16), BIG_LEN);
	ck_assert_int_eq(memcmp(buf + BIG_LEN - 16, "0123456789abcde\n", 16), 0);
	close(fd);
	free(buf);
	vd_ctl_close(c);
	vev_loop_free(l);
}
END_TEST

/*
 * A client that drains a long answer slower than VD_CTL_TIMEOUT_MS in all
 * (a trace dump over a busy dom0) gets all of it: the limit is on a peer
 * that takes nothing.  32 KiB every 150 ms: 1 MiB in about 4.8 s.
 */
START_TEST(test_slow_reader)
{
	size_t got = 0, chunk = 32 * 1024;
	struct vev_loop *l;
	struct vd_ctl *c;
	char *buf;
	ssize_t n;
	int64_t t0;
	int fd;

	buf = malloc(BIG_LEN + 16);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(vev_loop_new(&l), 0);
	ck_assert_int_eq(vd_ctl_open(l, path, handler, NULL, &c), 0);
	fd = client();
	ck_assert_int_eq(send(fd, "big\n", 4, MSG_NOSIGNAL), 4);
	t0 = vev_now_ms();
	for (;;) {
		ck_assert_msg(vev_now_ms() - t0 < 4 * GUARD_MS, "guard: %zu bytes", got);
		n = recv(fd, buf + got, got + chunk < BIG_LEN + 16 ? chunk : BIG_LEN + 16 - got,
			 MSG_DONTWAIT);
		if (n == 0)
			break;
		if (n > 0) {
			got += (size_t)n;
			ck_assert_uint_le(got, BIG_LEN);
			usleep(150 * 1000);
			continue;
		}
		ck_assert_int_eq(errno, EAGAIN);
		ck_assert_int_eq(vev_run_once(l), 0);	/* drained: vrdmad sends more */
	}
	ck_assert_uint_eq(got, BIG_LEN);
	ck_assert_int_ge(vev_now_ms() - t0, VD_CTL_TIMEOUT_MS);	/* it did take longer */
	close(fd);
	free(buf);
	vd_ctl_close(c);
	vev_loop_free(l);
}
END_TEST

/* A client that says nothing is dropped by its timer. */
START_TEST(test_silent_client)
{
	struct vev_loop *l;
	struct vd_ctl *c;
	char buf[64];
	int fd;

	ck_assert_int_eq(vev_loop_new(&l), 0);
	ck_assert_int_eq(vd_ctl_open(l, path, handler, NULL, &c), 0);
	fd = client();
	ck_assert_int_eq(pump_recv(l, fd, buf, sizeof(buf)), 0);
	ck_assert_uint_eq(vd_ctl_clients(c), 0);
	close(fd);
	vd_ctl_close(c);
	vev_loop_free(l);
}
END_TEST

START_TEST(test_too_many_clients)
{
	int fds[VD_CTL_MAX_CLIENTS + 1], i;
	struct vev_loop *l;
	struct vd_ctl *c;
	char buf[64];

	ck_assert_int_eq(vev_loop_new(&l), 0);
	ck_assert_int_eq(vd_ctl_open(l, path, handler, NULL, &c), 0);
	for (i = 0; i <= VD_CTL_MAX_CLIENTS; i++) {
		fds[i] = client();
		if (i < VD_CTL_MAX_CLIENTS)
			ck_assert_int_eq(vev_run_once(l), 0);
	}
	/* The one over the limit is closed at once; the rest still served. */
	ck_assert_int_eq(pump_recv(l, fds[VD_CTL_MAX_CLIENTS], buf, sizeof(buf)), 0);
	ck_assert_uint_eq(vd_ctl_clients(c), VD_CTL_MAX_CLIENTS);
	ck_assert_int_eq(send(fds[0], "x\n", 2, MSG_NOSIGNAL), 2);
	ck_assert_int_ge(pump_recv(l, fds[0], buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "you said [x]\n");
	for (i = 0; i <= VD_CTL_MAX_CLIENTS; i++)
		close(fds[i]);
	vd_ctl_close(c);
	vev_loop_free(l);
}
END_TEST

START_TEST(test_in_use_and_stale)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct vd_ctl *c, *c2;
	struct vev_loop *l;
	int fd;

	ck_assert_int_eq(vev_loop_new(&l), 0);
	ck_assert_int_eq(vd_ctl_open(l, path, handler, NULL, &c), 0);
	ck_assert_int_eq(vd_ctl_open(l, path, handler, NULL, &c2), -EADDRINUSE);
	vd_ctl_close(c);

	/* A socket file nobody listens on (a crashed daemon) is replaced. */
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	ck_assert_int_eq(vd_ctl_open(l, path, handler, NULL, &c), 0);
	ask(l, "ok\n", 3, 0, "you said [ok]\n");
	vd_ctl_close(c);
	vev_loop_free(l);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vdctl");
	TCase *tc = tcase_create("ctl");
	SRunner *sr;

	tcase_set_timeout(tc, 30);	/* test_slow_reader takes 4.8 s by design */

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_requests);
	tcase_add_test(tc, test_big_response);
	tcase_add_test(tc, test_slow_reader);
	tcase_add_test(tc, test_silent_client);
	tcase_add_test(tc, test_too_many_clients);
	tcase_add_test(tc, test_in_use_and_stale);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	return ck_run(sr);
}
