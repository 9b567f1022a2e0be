// SPDX-License-Identifier: MIT
/*
 * Quotas per tenant (issue 12, docs/tenants.md), against the real vrdmad
 * on the plain host, where a tenant is the guest process's uid: one tenant
 * takes devices (or bare connections that never say hello, or listeners)
 * until it is refused, and another tenant can still connect and listen.
 * Guests of two uids need root (children setuid); otherwise the tests
 * skip with a message.  And (item 3) a tenant that takes a service name
 * first only takes it in its own namespace, the listener learns who
 * connects, and `vrdmactl policy` keeps tenants apart.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host_proto.h"
#include "tlive.h"

#define UID_A		65534	/* the greedy tenant: "uid65534" */
#define UID_B		65533	/* an honest one */
#define T_DEVS		64	/* VPLAT_TENANT_GUESTS */
#define T_LIS		64	/* VBE_TENANT_LISTENERS */
#define T_GUEST_LIS	16	/* VBE_GUEST_LISTENERS */

struct t_res {
	int n;			/* what it got before the refusal */
	int err;		/* errno of the refusal, 0 = never refused */
};

struct t_child {
	pid_t pid;
	int res_fd;		/* its t_res */
	int hold_fd;		/* closed: it may let go and exit */
};

static int need_root(const char *fn)
{
	if (getuid() == 0)
		return 1;
	fprintf(stderr, "%s skipped: guests of two uids need root (uid %u)\n", fn,
		(unsigned)getuid());
	return 0;
}

/* Guests of other uids must reach vrdmad's socket. */
static void open_run_dir(void)
{
	char sock[400];

	ck_assert_int_eq(chmod(d_root, 0755), 0);
	ck_assert_int_eq(chmod(d_dir, 0755), 0);
	snprintf(sock, sizeof(sock), "%s/guest.sock", d_dir);
	ck_assert_int_eq(chmod(sock, 0777), 0);
}

static void ctl(const char *args)
{
	char cmd[1024];
	const char *b = getenv("VRDMA_BUILD");

	snprintf(cmd, sizeof(cmd), "%s/sbin/vrdmactl -S %s %s", b ? b : "build", d_dir, args);
	ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
}

/* vrdmad's log lines holding `what` (of its warnings only, warn). */
static int log_lines(const char *what, int warn)
{
	char path[400], line[512];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/vrdmad.log", d_dir);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, what) && (!warn || strstr(line, " warn: "));
	fclose(f);
	return n;
}

/* vrdmad's log names the tenant it refused. */
static int log_has(const char *what)
{
	return log_lines(what, 0) > 0;
}

/* fn as uid in a child; its result comes back at once, then it holds
 * what it opened until t_release. */
static struct t_child t_run(uid_t uid, struct t_res (*fn)(int), int arg)
{
	int res[2], hold[2];
	struct t_child c;

	ck_assert_int_eq(pipe(res), 0);
	ck_assert_int_eq(pipe(hold), 0);
	c.pid = fork();
	ck_assert_int_ge(c.pid, 0);
	if (c.pid == 0) {
		struct t_res r = { -1, -1 };
		char x;

		close(res[0]);
		close(hold[1]);
		if (setgid(uid) == 0 && setuid(uid) == 0)
			r = fn(arg);
		if (write(res[1], &r, sizeof(r)) != sizeof(r))
			_exit(1);
		while (read(hold[0], &x, 1) > 0)
			;
		_exit(0);
	}
	close(res[1]);
	close(hold[0]);
	c.res_fd = res[0];
	c.hold_fd = hold[1];
	return c;
}

static struct t_res t_result(struct t_child *c)
{
	struct t_res r = { -1, -1 };

	ck_assert_int_eq(read(c->res_fd, &r, sizeof(r)), (ssize_t)sizeof(r));
	return r;
}

static void t_release(struct t_child *c)
{
	int st;

	close(c->hold_fd);
	close(c->res_fd);
	ck_assert_int_eq(waitpid(c->pid, &st, 0), c->pid);
}

/* Open devices until refused (or max): the count and the errno. */
static struct t_res t_devs(int max)
{
	struct t_res r = { 0, 0 };

	while (r.n < max) {
		if (!vrdma_open(NULL, T_OPEN_MS)) {
			r.err = errno;
			break;
		}
		r.n++;
	}
	return r;
}

/* Connections that never say hello, then one device. */
static struct t_res t_bare(int n)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct t_res r = { 0, 0 };
	int i, s;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%.96s/guest.sock", d_dir) >=
	    sizeof(sa.sun_path))
		return r;
	for (i = 0; i < n; i++) {
		s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			return r;
		r.n++;
	}
	/* accept() comes on vrdmad's next loop turn: give it that */
	usleep(200000);
	if (!vrdma_open(NULL, T_OPEN_MS))
		r.err = errno;
	return r;
}

/* Devices of 16 listeners each until a listen is refused. */
static struct t_res t_listen(int ndev)
{
	struct t_res r = { 0, 0 };
	char svc[32];
	int i, j;

	for (i = 0; i < ndev && !r.err; i++) {
		struct vrdma_device *d = vrdma_open(NULL, T_OPEN_MS);

		if (!d) {
			r.err = -errno;	/* not the refusal looked for */
			break;
		}
		for (j = 0; j < T_GUEST_LIS; j++) {
			snprintf(svc, sizeof(svc), "t%d.%d.%d", (int)getuid(), i, j);
			if (!vrdma_listen(d, svc)) {
				r.err = errno;
				break;
			}
			r.n++;
		}
	}
	return r;
}

/* Item 3: the listener says it listens (t_ready), then reports the
 * sender of one request (n = its domain; err 0 if the node is ours)
 * and rejects it (wait 1) or accepts it (wait 2). */
static int t_ready[2] = { -1, -1 };

static struct t_res t_pol_listen(int wait)
{
	struct vrdma_qp_init_attr a = { .cap = { 4, 4, 1, 1 } };
	struct vrdma_device *d = vrdma_open(NULL, T_OPEN_MS);
	struct t_res r = { 0, 0 };
	struct vrdma_conn_peer peer;
	struct vrdma_conn_req req;
	struct vrdma_listener *l;
	struct vrdma_pd *pd;
	struct vrdma_qp *qp;

	if (!d || !(l = vrdma_listen(d, "db"))) {
		r.err = errno;
		return r;
	}
	if (!wait)
		return r;
	if (write(t_ready[1], "r", 1) != 1) {
		r.err = EPIPE;
		return r;
	}
	r.err = vrdma_get_request(l, &req, 15000);
	if (r.err)
		return r;
	r.err = vrdma_get_request_peer(l, &req, &peer);
	if (!r.err && strcmp(peer.node, "api-node"))
		r.err = EBADMSG;
	r.n = (int)peer.domid;
	if (wait == 1) {
		vrdma_reject(l, &req);
		return r;
	}
	/* wait 2: an honest server, the connection completes */
	if (!(pd = vrdma_alloc_pd(d)) ||
	    !(a.send_cq = a.recv_cq = vrdma_create_cq(d, 8, NULL)) ||
	    !(qp = vrdma_create_qp(pd, &a))) {
		r.err = -errno;
		return r;
	}
	r.err = vrdma_accept(l, qp, &req, NULL, 0);
	return r;
}

/* Connect to "db" (qualified: uid65533's "db"); err = vrdma_connect's. */
static struct t_res t_pol_connect(int qualified)
{
	struct vrdma_qp_init_attr a = { .cap = { 4, 4, 1, 1 } };
	struct vrdma_device *d = vrdma_open(NULL, T_OPEN_MS);
	struct t_res r = { 0, 0 };
	struct vrdma_pd *pd;
	struct vrdma_qp *qp;

	if (!d || !(pd = vrdma_alloc_pd(d)) ||
	    !(a.send_cq = a.recv_cq = vrdma_create_cq(d, 8, NULL)) ||
	    !(qp = vrdma_create_qp(pd, &a))) {
		r.err = -errno;
		return r;
	}
	r.err = vrdma_connect(qp, NULL, qualified ? "uid65533/db" : "db", NULL, 0, NULL,
			      NULL, 10000);
	return r;
}

/* A listener child of uid (t_pol_listen mode), once it listens. */
static struct t_child t_listener(uid_t uid, int mode)
{
	struct t_child l = t_run(uid, t_pol_listen, mode);
	struct pollfd pfd = { .fd = t_ready[0], .events = POLLIN };
	char x;

	ck_assert_int_eq(poll(&pfd, 1, 10000), 1);
	ck_assert_int_eq(read(t_ready[0], &x, 1), 1);
	return l;
}

START_TEST(t_tenant_policy)
{
	struct t_child a, b, c, e;
	struct t_res ra, rb, rc, re;

	NEED_DAEMON();
	if (!need_root(__func__))
		return;
	open_run_dir();
	ck_assert_int_eq(pipe(t_ready), 0);
	/* The squatter takes "db" first; the owner listens all the same. */
	a = t_run(UID_A, t_pol_listen, 0);
	ra = t_result(&a);
	ck_assert_int_eq(ra.err, 0);
	b = t_listener(UID_B, 1);
	/* The owner's client reaches the owner, who sees who asks. */
	c = t_run(UID_B, t_pol_connect, 0);
	rc = t_result(&c);
	ck_assert_int_eq(rc.err, ECONNREFUSED);		/* it rejected us */
	rb = t_result(&b);
	ck_assert_int_eq(rb.err, 0);
	ck_assert_int_gt(rb.n, 0);
	/* Same tenant only: the squatter cannot reach the owner's name. */
	ctl("policy default tenant");
	e = t_run(UID_A, t_pol_connect, 1);
	re = t_result(&e);
	ck_assert_int_eq(re.err, EACCES);
	ck_assert(log_has("connect to 'uid65533/db' refused by policy"));
	ctl("policy check uid65534 uid65533");
	t_release(&e);
	t_release(&c);
	t_release(&b);
	t_release(&a);
	close(t_ready[0]);
	close(t_ready[1]);
}
END_TEST

START_TEST(t_tenant_devices)
{
	struct t_child a, b;
	struct t_res ra, rb;

	NEED_DAEMON();
	if (!need_root(__func__))
		return;
	open_run_dir();
	a = t_run(UID_A, t_devs, T_DEVS + 8);
	ra = t_result(&a);
	ck_assert_int_eq(ra.n, T_DEVS);
	ck_assert_int_eq(ra.err, EUSERS);
	b = t_run(UID_B, t_devs, 2);
	rb = t_result(&b);
	ck_assert_int_eq(rb.n, 2);
	ck_assert_int_eq(rb.err, 0);
	ctl("get tenants");
	ck_assert(log_has("refusing a guest of tenant uid65534: 64 guests is its limit"));
	t_release(&b);
	t_release(&a);
}
END_TEST

/* The attack of issue 12: connections taken without ever saying hello. */
START_TEST(t_tenant_bare)
{
	struct t_child a, b;
	struct t_res ra, rb;

	NEED_DAEMON();
	if (!need_root(__func__))
		return;
	open_run_dir();
	a = t_run(UID_A, t_bare, T_DEVS);
	ra = t_result(&a);
	ck_assert_int_eq(ra.n, T_DEVS);
	ck_assert_int_eq(ra.err, EUSERS);
	b = t_run(UID_B, t_devs, 1);
	rb = t_result(&b);
	ck_assert_int_eq(rb.n, 1);
	t_release(&b);
	t_release(&a);
}
END_TEST

/* An operator's limit, per tenant, applies to the next connection. */
START_TEST(t_tenant_set)
{
	struct t_child a, b;
	struct t_res ra, rb;

	NEED_DAEMON();
	if (!need_root(__func__))
		return;
	open_run_dir();
	ctl("set tenant:uid65534 guests=3 listeners=20");
	ctl("set tenant:default guests=5");
	a = t_run(UID_A, t_devs, 10);
	ra = t_result(&a);
	ck_assert_int_eq(ra.n, 3);
	ck_assert_int_eq(ra.err, EUSERS);
	b = t_run(UID_B, t_devs, 10);
	rb = t_result(&b);
	ck_assert_int_eq(rb.n, 5);
	ck_assert_int_eq(rb.err, EUSERS);
	t_release(&b);
	t_release(&a);
}
END_TEST

START_TEST(t_tenant_listeners)
{
	struct t_child a, b, c, s;
	struct t_res ra, rb, rc, rs;

	NEED_DAEMON();
	if (!need_root(__func__))
		return;
	open_run_dir();
	a = t_run(UID_A, t_listen, T_LIS / T_GUEST_LIS + 2);
	ra = t_result(&a);
	ck_assert_int_eq(ra.n, T_LIS);
	ck_assert_int_eq(ra.err, ENOMEM);
	b = t_run(UID_B, t_listen, 1);
	rb = t_result(&b);
	ck_assert_int_eq(rb.n, T_GUEST_LIS);
	ck_assert_int_eq(rb.err, 0);
	ctl("get tenant:uid65534");
	ck_assert(log_has("tenant uid65534 has 64 listeners, its limit"));
	/* ... and an honest pair still connects beside the flood. */
	ck_assert_int_eq(pipe(t_ready), 0);
	s = t_listener(UID_B, 2);
	c = t_run(UID_B, t_pol_connect, 0);
	rc = t_result(&c);
	ck_assert_int_eq(rc.err, 0);
	rs = t_result(&s);
	ck_assert_int_eq(rs.err, 0);
	t_release(&c);
	t_release(&s);
	close(t_ready[0]);
	close(t_ready[1]);
	t_release(&b);
	t_release(&a);
}
END_TEST

/* Connections that never say HELLO (and are refused, the tenant being at
 * its `guests`): n taken, held until t_release. */
static int t_raw_socket(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 10 };
	int s;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%.96s/" VHP_SOCK_NAME,
			     d_dir) >= sizeof(sa.sun_path))
		return -1;
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
		close(s);
		return -1;
	}
	return s;
}

/* ... then a device, refused (err: its errno): vrdmad has taken every
 * connection before it off its socket (in order) once it answers. */
static struct t_res t_raw(int n)
{
	struct t_res r = { 0, 0 };

	while (r.n < n && t_raw_socket() >= 0)
		r.n++;
	if (!vrdma_open(NULL, T_OPEN_MS))
		r.err = errno;
	return r;
}

/* n refused connections that wait (t_ready), then, once told (t_go), say
 * HELLO on each: n = the answers that came, -EUSERS each. */
static int t_go[2] = { -1, -1 };

static struct t_res t_refused_answer(int n)
{
	struct vhp_hdr h = { .type = VHP_HELLO, .len = 4, .arg = { VHP_VERSION } };
	struct t_res r = { 0, 0 };
	int s[8], i;
	char x;

	for (i = 0; i < n && i < 8; i++)
		if ((s[i] = t_raw_socket()) < 0)
			return r;
	if (!vrdma_open(NULL, T_OPEN_MS))	/* those are taken: see t_raw */
		r.err = errno;
	if (write(t_ready[1], "r", 1) != 1 || read(t_go[0], &x, 1) != 1)
		return r;
	for (i = 0; i < n && i < 8; i++) {
		struct vhp_hdr a;

		h.seq = (uint32_t)i + 1;
		if (vhp_send(s[i], &h, "raw", NULL, 0, MSG_NOSIGNAL))
			continue;
		if (recv(s[i], &a, sizeof(a), 0) == (ssize_t)sizeof(a) && a.type == VHP_WELCOME &&
		    a.err == -EUSERS)
			r.n++;
	}
	return r;
}

/*
 * Refused connections wait for their HELLO, to be told why: 16 at most,
 * a quarter of them one tenant's.  One uid hammering the socket replaces
 * its own, and another uid's refused connection is still answered
 * EUSERS, not hung up on.
 */
START_TEST(t_tenant_refused)
{
	struct t_child a, b;
	struct t_res ra, rb;
	char x = 'g';

	NEED_DAEMON();
	if (!need_root(__func__))
		return;
	open_run_dir();
	ctl("set tenant:default guests=0");
	ck_assert_int_eq(pipe(t_ready), 0);
	ck_assert_int_eq(pipe(t_go), 0);
	b = t_run(UID_B, t_refused_answer, 2);
	ck_assert_int_eq(read(t_ready[0], &x, 1), 1);
	a = t_run(UID_A, t_raw, 40);
	ra = t_result(&a);
	ck_assert_int_eq(ra.n, 40);
	ck_assert_int_eq(ra.err, EUSERS);
	ck_assert_int_eq(write(t_go[1], "g", 1), 1);
	rb = t_result(&b);
	ck_assert_int_eq(rb.err, EUSERS);
	ck_assert_int_eq(rb.n, 2);
	/* 44 refusals (40, 1, 2, 1), a line a second: the rest counted. */
	ck_assert_int_le(log_lines("refusing a guest of tenant", 1), 10);
	t_release(&a);
	t_release(&b);
	close(t_ready[0]);
	close(t_ready[1]);
	close(t_go[0]);
	close(t_go[1]);
}
END_TEST

/* argv as uid in a child, its stdin a pipe we hold (*hold), its stdout
 * and stderr a pipe we read (*out). */
static pid_t t_spawn(uid_t uid, const char *const argv[], int *hold, int *out)
{
	int in[2], o[2];
	pid_t pid;

	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(o), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (dup2(in[0], 0) < 0 || dup2(o[1], 1) < 0 || dup2(o[1], 2) < 0 ||
		    setgid(uid) || setuid(uid))
			_exit(126);
		close(in[1]);
		close(o[0]);
		execv(argv[0], (char *const *)argv);	/* execv(3) does not write them */
		_exit(127);
	}
	close(in[0]);
	close(o[1]);
	*hold = in[1];
	*out = o[0];
	return pid;
}

/* Read fd into buf until it holds `what` or ms pass: 1 if it does. */
static int t_read_until(int fd, char *buf, size_t len, const char *what, int ms)
{
	int64_t end = now_ms() + ms;
	size_t have = strlen(buf);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	while (!strstr(buf, what) && have + 1 < len && now_ms() < end) {
		if (poll(&p, 1, (int)(end - now_ms())) <= 0)
			continue;
		n = read(fd, buf + have, len - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
	}
	return strstr(buf, what) != NULL;
}

static int t_wait_exit(pid_t pid)
{
	int st;

	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * The node-wide mappings: one tenant's 33 guests each attach a buffer of
 * 1000 alternate pages (a mapping each on the plain host, 1000 of the
 * 1024 a guest may hold); before the share per tenant they took all of
 * the node's 32768 and no other tenant's guest could map its device
 * area.  Now the tenant stops at its `maps` (7936: 7 buffers), and an
 * honest pair of another uid connects and moves verified data beside it.
 */
START_TEST(t_tenant_maps)
{
	char hostile[400], bw[400], frag_out[1024] = "", srv_out[1024] = "", cli_out[2048] = "";
	int a_hold, a_out, s_hold, s_out, c_hold, c_out;
	const char *b = getenv("VRDMA_BUILD");
	pid_t a, sv, cl;

	NEED_DAEMON();
	if (!need_root(__func__))
		return;
	open_run_dir();
	snprintf(hostile, sizeof(hostile), "%s/tests/itest_hostile", b ? b : "build");
	snprintf(bw, sizeof(bw), "%s/bin/vrdma-bw", b ? b : "build");
	a = t_spawn(UID_A, (const char *const[]){ hostile, "frag", "33", "1000", "1", "2", NULL },
		    &a_hold, &a_out);
	ck_assert_msg(t_read_until(a_out, frag_out, sizeof(frag_out), "frag-ready", 60000),
		      "the hostile tenant did not finish: %s", frag_out);
	ck_assert_msg(strstr(frag_out, "frag: 33 devices (all opened), 7 buffers of 1000 pages, "
			     "26 devices refused (Cannot allocate memory)"), "%s", frag_out);
	ck_assert(log_has("tenant uid65534 has 7000 maps, 1000 more would pass its limit 7936"));
	/* An honest pair of the other tenant, verified byte by byte. */
	sv = t_spawn(UID_B, (const char *const[]){ bw, "-n", "200", "--verify", "--timeout", "20",
					      NULL }, &s_hold, &s_out);
	ck_assert_msg(t_read_until(s_out, srv_out, sizeof(srv_out), "listening on service",
				   20000), "server: %s", srv_out);
	cl = t_spawn(UID_B, (const char *const[]){ bw, "-n", "200", "--verify", "--timeout", "20",
					      "local", NULL }, &c_hold, &c_out);
	t_read_until(c_out, cli_out, sizeof(cli_out), "verify: OK", 30000);
	ck_assert_int_eq(t_wait_exit(cl), 0);
	ck_assert_int_eq(t_wait_exit(sv), 0);
	ck_assert_msg(strstr(cli_out, "verify: OK"), "client: %s", cli_out);
	ctl("get tenant:uid65534");
	close(c_hold);
	close(c_out);
	close(s_hold);
	close(s_out);
	close(a_hold);		/* the hostile tenant lets go */
	ck_assert_int_eq(t_wait_exit(a), 0);
	close(a_out);
}
END_TEST

static Suite *tenant_suite(void)
{
	Suite *s = suite_create("tenant");
	TCase *tc = tlive_tcase();

	tcase_add_test(tc, t_tenant_devices);
	tcase_add_test(tc, t_tenant_bare);
	tcase_add_test(tc, t_tenant_set);
	tcase_add_test(tc, t_tenant_listeners);
	tcase_add_test(tc, t_tenant_policy);
	tcase_add_test(tc, t_tenant_maps);
	tcase_add_test(tc, t_tenant_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tlive_main("test_tenant", tenant_suite());
}
