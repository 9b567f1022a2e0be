// SPDX-License-Identifier: MIT
/*
 * vrdma's librdmacm, the uses Debian's programs do not make: a port
 * nobody listens on, private data limits and delivery, reject with data,
 * non-blocking channels, nothing left (threads, fds) once the channels
 * are gone, a peer killed mid-connection.  Both ends live in this one
 * process (vanish: the connector in a child).
 * Usage: rdmacm_test CASE PORT   (cases: refused limits pdata nonblock
 * cleanup vanish); prints one line, exits 0 when the case holds.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#define WAIT_MS		5000

static const char *tcase;

static int fail(const char *what)
{
	printf("FAIL %s: %s (errno %d %s)\n", tcase, what, errno, strerror(errno));
	return 1;
}

/* The next event on @ch within WAIT_MS, which must be @type. */
static struct rdma_cm_event *expect(struct rdma_event_channel *ch,
				    enum rdma_cm_event_type type)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *e;

	if (poll(&pfd, 1, WAIT_MS) != 1) {
		printf("FAIL %s: no %s in %d ms\n", tcase, rdma_event_str(type), WAIT_MS);
		return NULL;
	}
	if (rdma_get_cm_event(ch, &e)) {
		fail("rdma_get_cm_event");
		return NULL;
	}
	if (e->event != type) {
		printf("FAIL %s: got %s status %d, wanted %s\n", tcase,
		       rdma_event_str(e->event), e->status, rdma_event_str(type));
		rdma_ack_cm_event(e);
		return NULL;
	}
	return e;
}

static int ack(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *e = expect(ch, type);

	if (!e)
		return 1;
	rdma_ack_cm_event(e);
	return 0;
}

static struct sockaddr_in addr(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* A connector id with a QP on its own PD and CQs, route resolved. */
static int connector(struct rdma_event_channel *ch, struct rdma_cm_id **id, int port)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct sockaddr_in dst = addr(port);

	if (rdma_create_id(ch, id, NULL, RDMA_PS_TCP))
		return fail("rdma_create_id");
	if (rdma_resolve_addr(*id, NULL, (struct sockaddr *)&dst, 2000))
		return fail("rdma_resolve_addr");
	if (ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED))
		return 1;
	if (rdma_resolve_route(*id, 2000))
		return fail("rdma_resolve_route");
	if (ack(ch, RDMA_CM_EVENT_ROUTE_RESOLVED))
		return 1;
	/* no PD, no CQs given: the id's PD, CQs made by the library */
	if (rdma_create_qp(*id, NULL, &qa))
		return fail("rdma_create_qp");
	return 0;
}

static int listener(struct rdma_event_channel *ch, struct rdma_cm_id **id, int port)
{
	struct sockaddr_in a = addr(port);

	if (rdma_create_id(ch, id, NULL, RDMA_PS_TCP))
		return fail("rdma_create_id (listen)");
	if (rdma_bind_addr(*id, (struct sockaddr *)&a))
		return fail("rdma_bind_addr");
	if (rdma_listen(*id, 4))
		return fail("rdma_listen");
	if (ntohs(rdma_get_src_port(*id)) != port)
		return fail("rdma_get_src_port");
	return 0;
}

static void teardown(struct rdma_cm_id *a, struct rdma_cm_id *b, struct rdma_cm_id *l)
{
	struct rdma_cm_id *ids[] = { a, b, l };
	unsigned int i;

	for (i = 0; i < 3; i++) {
		if (!ids[i])
			continue;
		rdma_destroy_qp(ids[i]);
		rdma_destroy_id(ids[i]);
	}
}

static int case_refused(int port)
{
	struct rdma_conn_param cp = { .retry_count = 7 };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *e;
	struct rdma_cm_id *id = NULL;
	struct timespec t0, t1;
	long ms;

	if (!ch)
		return fail("rdma_create_event_channel");
	if (connector(ch, &id, port))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (rdma_connect(id, &cp))
		return fail("rdma_connect");
	e = expect(ch, RDMA_CM_EVENT_REJECTED);
	if (!e)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	if (e->status != -ECONNREFUSED || ms > 2000) {
		printf("FAIL %s: status %d after %ld ms\n", tcase, e->status, ms);
		return 1;
	}
	rdma_ack_cm_event(e);
	teardown(id, NULL, NULL);
	rdma_destroy_event_channel(ch);
	printf("ok %s: REJECTED %d in %ld ms\n", tcase, -ECONNREFUSED, ms);
	return 0;
}

/* Over the IB CM limits: EINVAL; a reject's data reaches the connector. */
static int case_limits(int port)
{
	static char big[255];
	struct rdma_event_channel *cc = rdma_create_event_channel();
	struct rdma_event_channel *lc = rdma_create_event_channel();
	struct rdma_conn_param cp = { .private_data = big, .private_data_len = 57 };
	struct rdma_cm_id *c = NULL, *l = NULL, *child;
	struct rdma_cm_event *e;

	if (!cc || !lc)
		return fail("rdma_create_event_channel");
	if (listener(lc, &l, port) || connector(cc, &c, port))
		return 1;
	errno = 0;
	if (rdma_connect(c, &cp) != -1 || errno != EINVAL)
		return fail("rdma_connect with 57 bytes of private data");
	cp.private_data_len = 56;
	if (rdma_connect(c, &cp))
		return fail("rdma_connect with 56 bytes");
	e = expect(lc, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (!e)
		return 1;
	child = e->id;
	if (e->listen_id != l || e->param.conn.private_data_len != 56)
		return fail("CONNECT_REQUEST parameters");
	rdma_ack_cm_event(e);
	cp.private_data_len = 197;
	errno = 0;
	if (rdma_accept(child, &cp) != -1 || errno != EINVAL)
		return fail("rdma_accept with 197 bytes of private data");
	errno = 0;
	if (rdma_reject(child, big, 149) != -1 || errno != EINVAL)
		return fail("rdma_reject with 149 bytes of private data");
	if (rdma_reject(child, "nope", 5))
		return fail("rdma_reject");
	e = expect(cc, RDMA_CM_EVENT_REJECTED);
	if (!e)
		return 1;
	if (e->status != 28 || e->param.conn.private_data_len != 5 ||
	    memcmp(e->param.conn.private_data, "nope", 5))
		return fail("REJECTED status or private data");
	rdma_ack_cm_event(e);
	teardown(c, child, l);
	rdma_destroy_event_channel(cc);
	rdma_destroy_event_channel(lc);
	printf("ok %s: 57/197/149 bytes EINVAL, reject data delivered\n", tcase);
	return 0;
}

/* A whole connection: private data both ways, addresses, disconnect. */
static int case_pdata(int port)
{
	char req[56], rep[196];
	struct rdma_event_channel *cc = rdma_create_event_channel();
	struct rdma_event_channel *lc = rdma_create_event_channel();
	struct rdma_conn_param cp = { .private_data = req, .private_data_len = sizeof(req),
				      .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_cm_id *c = NULL, *l = NULL, *child;
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_cm_event *e;
	struct sockaddr_in *peer;

	memset(req, 'q', sizeof(req));
	memset(rep, 'p', sizeof(rep));
	if (!cc || !lc)
		return fail("rdma_create_event_channel");
	if (listener(lc, &l, port) || connector(cc, &c, port))
		return 1;
	if (rdma_connect(c, &cp))
		return fail("rdma_connect");
	e = expect(lc, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (!e)
		return 1;
	child = e->id;
	if (e->param.conn.private_data_len != sizeof(req) ||
	    memcmp(e->param.conn.private_data, req, sizeof(req)))
		return fail("REQ private data");
	peer = (struct sockaddr_in *)rdma_get_peer_addr(child);
	if (peer->sin_family != AF_INET || peer->sin_addr.s_addr != htonl(INADDR_LOOPBACK) ||
	    rdma_get_dst_port(child) != rdma_get_src_port(c) || !child->verbs)
		return fail("child id addresses / device");
	rdma_ack_cm_event(e);
	if (rdma_create_qp(child, NULL, &qa))
		return fail("rdma_create_qp (child)");
	cp.private_data = rep;
	cp.private_data_len = sizeof(rep);
	if (rdma_accept(child, &cp))
		return fail("rdma_accept");
	e = expect(cc, RDMA_CM_EVENT_ESTABLISHED);
	if (!e)
		return 1;
	if (e->param.conn.private_data_len != sizeof(rep) ||
	    memcmp(e->param.conn.private_data, rep, sizeof(rep)))
		return fail("REP private data");
	rdma_ack_cm_event(e);
	if (ack(lc, RDMA_CM_EVENT_ESTABLISHED))
		return 1;
	if (c->qp->state != IBV_QPS_RTS || child->qp->state != IBV_QPS_RTS)
		return fail("QPs not in RTS");
	if (rdma_disconnect(c))
		return fail("rdma_disconnect");
	if (ack(lc, RDMA_CM_EVENT_DISCONNECTED) || ack(cc, RDMA_CM_EVENT_DISCONNECTED))
		return 1;
	if (c->qp->state != IBV_QPS_ERR)
		return fail("connector's QP not in ERR");
	if (rdma_disconnect(child))
		return fail("rdma_disconnect after DISCONNECTED");
	teardown(c, child, l);
	rdma_destroy_event_channel(cc);
	rdma_destroy_event_channel(lc);
	printf("ok %s: 56 + 196 bytes delivered, both DISCONNECTED\n", tcase);
	return 0;
}

static int case_nonblock(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *e;

	if (!ch)
		return fail("rdma_create_event_channel");
	if (fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK))
		return fail("fcntl");
	errno = 0;
	if (rdma_get_cm_event(ch, &e) != -1 || errno != EAGAIN)
		return fail("rdma_get_cm_event on an empty non-blocking channel");
	rdma_destroy_event_channel(ch);
	printf("ok %s: EAGAIN\n", tcase);
	return 0;
}

/* The connector (another process) is killed once connected: the
 * acceptor gets DISCONNECTED, not a hang. */
static int case_vanish(int port)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_conn_param cp = { .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_event_channel *ch;
	struct rdma_cm_id *c, *l = NULL, *child;
	struct rdma_cm_event *e;
	int up[2], go[2];
	pid_t pid;
	char b = 0;

	if (pipe(up) || pipe(go))
		return fail("pipe");
	pid = fork();
	if (pid < 0)
		return fail("fork");
	if (pid == 0) {
		/* the connector: waits for the listener, connects, waits to die */
		if (read(go[0], &b, 1) != 1)
			_exit(1);
		ch = rdma_create_event_channel();
		if (!ch || connector(ch, &c, port) || rdma_connect(c, &cp) ||
		    ack(ch, RDMA_CM_EVENT_ESTABLISHED))
			_exit(1);
		if (write(up[1], "u", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ch = rdma_create_event_channel();
	if (!ch || listener(ch, &l, port))
		goto err;
	if (write(go[1], "g", 1) != 1)
		goto err;
	e = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (!e)
		goto err;
	child = e->id;
	rdma_ack_cm_event(e);
	if (rdma_create_qp(child, NULL, &qa) || rdma_accept(child, NULL)) {
		fail("rdma_create_qp / rdma_accept");
		goto err;
	}
	if (ack(ch, RDMA_CM_EVENT_ESTABLISHED) || read(up[0], &b, 1) != 1)
		goto err;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (ack(ch, RDMA_CM_EVENT_DISCONNECTED))
		return 1;
	teardown(child, l, NULL);
	rdma_destroy_event_channel(ch);
	printf("ok %s: DISCONNECTED after the connector was killed\n", tcase);
	return 0;
err:
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	printf("FAIL %s\n", tcase);
	return 1;
}

static int count_dir(const char *path)
{
	struct dirent *d;
	DIR *dir = opendir(path);
	int n = 0;

	if (!dir)
		return -1;
	while ((d = readdir(dir)))
		n += d->d_name[0] != '.';
	closedir(dir);
	return n;
}

/*
 * Live threads.  pthread_join returns once the kernel cleared the
 * thread's tid, which it does inside do_exit, before its task leaves
 * /proc/self/task: a thread just joined (the CM engine's, stopped with
 * the last channel) may still be listed, running its exit (PF_EXITING
 * in stat's flags, set before the tid is cleared) or dead (Z or X), and
 * must not count.
 */
#define TASK_PF_EXITING	0x4u
static int count_tasks(void)
{
	char path[64], buf[512], *st, state;
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");
	unsigned flags;
	int n = 0;
	FILE *f;

	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%.32s/stat", d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;	/* gone meanwhile */
		st = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		fclose(f);
		if (!st || sscanf(st + 1, " %c %*d %*d %*d %*d %*d %u", &state, &flags) != 2) {
			n++;		/* unreadable: count it, do not hide one */
			continue;
		}
		n += state != 'Z' && state != 'X' && !(flags & TASK_PF_EXITING);
	}
	closedir(dir);
	return n;
}

/* After a connection and every channel gone: the threads and fds of
 * before (the device, opened once per process, stays, as librdmacm's). */
static int case_cleanup(int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	int fds, tasks;

	if (!ch)
		return fail("rdma_create_event_channel");
	rdma_destroy_event_channel(ch);
	fds = count_dir("/proc/self/fd");
	tasks = count_tasks();
	tcase = "cleanup/pdata";
	if (case_pdata(port))
		return 1;
	tcase = "cleanup";
	if (count_dir("/proc/self/fd") != fds || count_tasks() != tasks) {
		printf("FAIL %s: fds %d -> %d, threads %d -> %d\n", tcase, fds,
		       count_dir("/proc/self/fd"), tasks, count_tasks());
		return 1;
	}
	printf("ok %s: %d fds, %d threads as before\n", tcase, fds, tasks);
	return 0;
}

int main(int argc, char **argv)
{
	int port;

	if (argc != 3) {
		fprintf(stderr, "usage: rdmacm_test refused|limits|pdata|nonblock|cleanup|vanish PORT\n");
		return 2;
	}
	tcase = argv[1];
	port = atoi(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(tcase, "refused"))
		return case_refused(port);
	if (!strcmp(tcase, "limits"))
		return case_limits(port);
	if (!strcmp(tcase, "pdata"))
		return case_pdata(port);
	if (!strcmp(tcase, "nonblock"))
		return case_nonblock();
	if (!strcmp(tcase, "cleanup"))
		return case_cleanup(port);
	if (!strcmp(tcase, "vanish"))
		return case_vanish(port);
	fprintf(stderr, "rdmacm_test: unknown case %s\n", tcase);
	return 2;
}
