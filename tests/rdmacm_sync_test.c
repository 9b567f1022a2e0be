// SPDX-License-Identifier: MIT
/*
 * vrdma's librdmacm: synchronous ids and UD ids, the uses Debian's
 * rdma_server / rdma_client and udaddy do not make.
 *   sync      a synchronous connect nobody answers (ECONNREFUSED, the
 *             event in id->event), rdma_get_request / rdma_migrate_id
 *             misuses (EINVAL), an id made synchronous and back
 *   sync_pair rdma_create_ep both ways, a synchronous listener in a
 *             thread: reject with data, then accept, rdma_disconnect
 *             returning on DISCONNECTED; no thread or fd left after
 *   ud        SIDR: private data limits (180 / 136) and delivery,
 *             param.ud (QP number, Q_Key, address) used for a datagram,
 *             rdma_reject (UNREACHABLE, status 2), UD-only refusals
 *   ud_mismatch  a UD connector at an RC listener and the other way
 * Usage: rdmacm_sync_test CASE PORT; prints one line, exits 0 when the
 * case holds.
 */
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#define WAIT_MS		5000

static const char *tcase;

static int fail(const char *what)
{
	printf("FAIL %s: %s (errno %d %s)\n", tcase, what, errno, strerror(errno));
	return 1;
}

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

static struct ibv_qp_init_attr qp_attr(enum ibv_qp_type type)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = type,
	};

	return qa;
}

/* rdma_getaddrinfo for 127.0.0.1:port, passive or not. */
static struct rdma_addrinfo *ai(int port, int passive)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo *res = NULL;
	char svc[16];

	hints.ai_flags = passive ? RAI_PASSIVE : 0;
	snprintf(svc, sizeof(svc), "%d", port);
	if (rdma_getaddrinfo("127.0.0.1", svc, &hints, &res))
		return NULL;
	return res;
}

static int case_sync(int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in dst = addr(port);
	struct ibv_qp_init_attr qa = qp_attr(IBV_QPT_RC);
	struct rdma_cm_id *id, *a, *got;
	struct rdma_addrinfo *res = ai(port, 0);

	if (!ch || !res)
		return fail("rdma_create_event_channel / rdma_getaddrinfo");
	if (res->ai_qp_type != IBV_QPT_RC || res->ai_port_space != RDMA_PS_TCP)
		return fail("rdma_getaddrinfo's QP type and port space");
	/* nobody listens: the call itself fails, the event stays on the id */
	if (rdma_create_ep(&id, res, NULL, &qa))
		return fail("rdma_create_ep");
	if (!id->qp || !id->event || id->event->event != RDMA_CM_EVENT_ROUTE_RESOLVED)
		return fail("rdma_create_ep: QP, ROUTE_RESOLVED in id->event");
	errno = 0;
	if (rdma_connect(id, NULL) != -1 || errno != ECONNREFUSED ||
	    !id->event || id->event->event != RDMA_CM_EVENT_REJECTED)
		return fail("synchronous rdma_connect to nobody: ECONNREFUSED, REJECTED");
	errno = 0;
	if (rdma_migrate_id(id, NULL) != -1 || errno != EINVAL)
		return fail("rdma_migrate_id of a synchronous id to NULL");
	rdma_destroy_ep(id);

	/* an id of a channel made synchronous, then given back */
	if (rdma_create_id(ch, &a, NULL, RDMA_PS_TCP))
		return fail("rdma_create_id");
	errno = 0;
	if (rdma_get_request(a, &got) != -1 || errno != EINVAL)
		return fail("rdma_get_request on an id with a channel");
	if (rdma_migrate_id(a, NULL))
		return fail("rdma_migrate_id to NULL");
	if (rdma_resolve_addr(a, NULL, (struct sockaddr *)&dst, 2000) ||
	    !a->event || a->event->event != RDMA_CM_EVENT_ADDR_RESOLVED)
		return fail("rdma_resolve_addr, made synchronous");
	if (rdma_migrate_id(a, ch) || a->event)
		return fail("rdma_migrate_id back: the event acked");
	if (rdma_resolve_route(a, 2000) || ack(ch, RDMA_CM_EVENT_ROUTE_RESOLVED))
		return fail("rdma_resolve_route on the channel again");
	rdma_destroy_id(a);
	rdma_freeaddrinfo(res);
	rdma_destroy_event_channel(ch);
	printf("ok %s: ECONNREFUSED with REJECTED in id->event, misuses EINVAL, "
	       "migrated both ways\n", tcase);
	return 0;
}

struct srv {
	int port;
	int rc;
};

/* A synchronous server: rejects the first request, accepts the second. */
static void *server(void *arg)
{
	struct ibv_qp_init_attr qa = qp_attr(IBV_QPT_RC);
	struct srv *s = arg;
	struct rdma_addrinfo *res = ai(s->port, 1);
	struct rdma_cm_id *l, *id;

	s->rc = 1;
	if (!res || rdma_create_ep(&l, res, NULL, &qa) || rdma_listen(l, 4))
		return NULL;
	if (rdma_get_request(l, &id) || id->event->event != RDMA_CM_EVENT_CONNECT_REQUEST ||
	    !id->qp || rdma_reject(id, "nope", 5))
		return NULL;
	rdma_destroy_ep(id);
	if (rdma_get_request(l, &id) || !id->qp || rdma_accept(id, NULL) ||
	    id->event->event != RDMA_CM_EVENT_ESTABLISHED)
		return NULL;
	/* whoever disconnects first, both get DISCONNECTED */
	if (rdma_disconnect(id) || id->event->event != RDMA_CM_EVENT_DISCONNECTED)
		return NULL;
	rdma_destroy_ep(id);
	rdma_destroy_ep(l);
	rdma_freeaddrinfo(res);
	s->rc = 0;
	return NULL;
}

static int case_sync_pair(int port)
{
	struct ibv_qp_init_attr qa = qp_attr(IBV_QPT_RC);
	struct srv s = { .port = port };
	struct rdma_addrinfo *res;
	struct rdma_cm_id *id;
	int fds, tasks, i;
	pthread_t t;

	/* the process's device first: it stays open, as librdmacm's */
	rdma_destroy_event_channel(rdma_create_event_channel());
	fds = count_dir("/proc/self/fd");
	tasks = count_dir("/proc/self/task");
	if (pthread_create(&t, NULL, server, &s))
		return fail("pthread_create");
	res = ai(port, 0);
	if (!res)
		return fail("rdma_getaddrinfo");
	/* refused while the server is not listening yet, then rejected */
	for (i = 0; i < 100; i++) {
		qa = qp_attr(IBV_QPT_RC);	/* it took the CQs of the last */
		if (rdma_create_ep(&id, res, NULL, &qa))
			return fail("rdma_create_ep");
		errno = 0;
		if (rdma_connect(id, NULL) != -1 || errno != ECONNREFUSED)
			return fail("rdma_connect to a rejecting server");
		if (id->event->status == 28)
			break;
		rdma_destroy_ep(id);
		usleep(50000);
	}
	if (id->event->param.conn.private_data_len != 5 ||
	    memcmp(id->event->param.conn.private_data, "nope", 5))
		return fail("REJECTED's private data in id->event");
	rdma_destroy_ep(id);
	qa = qp_attr(IBV_QPT_RC);
	if (rdma_create_ep(&id, res, NULL, &qa))
		return fail("rdma_create_ep");
	if (rdma_connect(id, NULL) || id->event->event != RDMA_CM_EVENT_ESTABLISHED ||
	    id->qp->state != IBV_QPS_RTS) {
		printf("FAIL %s: synchronous rdma_connect: %s status %d, QP state %d\n", tcase,
		       id->event ? rdma_event_str(id->event->event) : "no event",
		       id->event ? id->event->status : 0, id->qp->state);
		return 1;
	}
	if (rdma_disconnect(id) || id->event->event != RDMA_CM_EVENT_DISCONNECTED)
		return fail("synchronous rdma_disconnect: DISCONNECTED");
	rdma_destroy_ep(id);
	rdma_freeaddrinfo(res);
	pthread_join(t, NULL);
	if (s.rc)
		return fail("the synchronous server");
	if (count_dir("/proc/self/fd") != fds || count_dir("/proc/self/task") != tasks) {
		printf("FAIL %s: fds %d -> %d, threads %d -> %d\n", tcase, fds,
		       count_dir("/proc/self/fd"), tasks, count_dir("/proc/self/task"));
		return 1;
	}
	printf("ok %s: rejected with data, connected, disconnected; %d fds, %d threads "
	       "as before\n", tcase, fds, tasks);
	return 0;
}

/* A UD id, route resolved, a QP made by the library; no event left. */
static int ud_connector(struct rdma_event_channel *ch, struct rdma_cm_id **id, int port)
{
	struct ibv_qp_init_attr qa = qp_attr(IBV_QPT_RC);
	struct sockaddr_in dst = addr(port);

	if (rdma_create_id(ch, id, NULL, RDMA_PS_UDP) || (*id)->qp_type != IBV_QPT_UD)
		return fail("rdma_create_id (UDP)");
	if (rdma_resolve_addr(*id, NULL, (struct sockaddr *)&dst, 2000) ||
	    ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED))
		return fail("rdma_resolve_addr");
	if (rdma_resolve_route(*id, 2000) || ack(ch, RDMA_CM_EVENT_ROUTE_RESOLVED))
		return fail("rdma_resolve_route");
	errno = 0;
	if (rdma_create_qp(*id, NULL, &qa) != -1 || errno != EINVAL)
		return fail("an RC QP on a UD id");
	qa = qp_attr(IBV_QPT_UD);
	if (rdma_create_qp(*id, NULL, &qa) || (*id)->qp->state != IBV_QPS_RTS)
		return fail("rdma_create_qp (UD): RTS at once");
	return 0;
}

static int listen_on(struct rdma_event_channel *ch, struct rdma_cm_id **l, int port,
		     enum rdma_port_space ps)
{
	struct sockaddr_in a = addr(port);

	if (rdma_create_id(ch, l, NULL, ps) || rdma_bind_addr(*l, (struct sockaddr *)&a) ||
	    rdma_listen(*l, 4))
		return fail("listener");
	return 0;
}

/* One datagram from c to the QP param.ud names, through an AH from it. */
static int datagram(struct rdma_cm_id *c, struct rdma_cm_id *child,
		    const struct rdma_ud_param *u)
{
	static char buf[2][64 + 40];
	struct ibv_mr *mr = ibv_reg_mr(c->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge rs = { (uintptr_t)buf[1], sizeof(buf[1]), mr ? mr->lkey : 0 };
	struct ibv_sge ss = { (uintptr_t)buf[0], 64, mr ? mr->lkey : 0 };
	struct ibv_recv_wr rw = { .sg_list = &rs, .num_sge = 1 }, *brw;
	struct ibv_send_wr sw = { .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bsw;
	struct ibv_ah_attr aa = u->ah_attr;
	struct ibv_ah *ah = ibv_create_ah(c->pd, &aa);
	struct ibv_wc wc;
	int i, n = 0;

	if (!mr || !ah)
		return fail("ibv_reg_mr / ibv_create_ah from param.ud");
	memcpy(buf[0], "datagram", 9);
	if (ibv_post_recv(child->qp, &rw, &brw))
		return fail("ibv_post_recv");
	sw.wr.ud.ah = ah;
	sw.wr.ud.remote_qpn = u->qp_num;
	sw.wr.ud.remote_qkey = u->qkey;
	if (ibv_post_send(c->qp, &sw, &bsw))
		return fail("ibv_post_send");
	for (i = 0; i < WAIT_MS && n == 0; i++) {
		n = ibv_poll_cq(child->recv_cq, 1, &wc);
		if (!n)
			usleep(1000);
	}
	if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.byte_len != 64 + 40 ||
	    wc.src_qp != c->qp->qp_num || memcmp(buf[1] + 40, "datagram", 9))
		return fail("the datagram's receive");
	ibv_destroy_ah(ah);
	ibv_dereg_mr(mr);
	return 0;
}

static int case_ud(int port)
{
	static char big[255];
	struct rdma_event_channel *cc = rdma_create_event_channel();
	struct rdma_event_channel *lc = rdma_create_event_channel();
	struct rdma_conn_param cp = { .private_data = big, .private_data_len = 181 };
	struct ibv_qp_init_attr qa = qp_attr(IBV_QPT_UD);
	struct rdma_cm_id *c = NULL, *l = NULL, *child, *x;
	struct sockaddr_in mc = addr(port);
	struct rdma_cm_event *e;

	memset(big, 'u', sizeof(big));
	if (!cc || !lc)
		return fail("rdma_create_event_channel");
	errno = 0;
	if (rdma_create_id(cc, &x, NULL, RDMA_PS_IPOIB) != -1 || errno != EOPNOTSUPP)
		return fail("an IPoIB id: EOPNOTSUPP");
	if (listen_on(lc, &l, port, RDMA_PS_UDP) || ud_connector(cc, &c, port))
		return 1;
	errno = 0;
	if (rdma_join_multicast(c, (struct sockaddr *)&mc, NULL) != -1 || errno != EOPNOTSUPP)
		return fail("rdma_join_multicast: EOPNOTSUPP");
	errno = 0;
	if (rdma_connect(c, &cp) != -1 || errno != EINVAL)
		return fail("SIDR REQ with 181 bytes of private data");
	cp.private_data_len = 180;
	if (rdma_connect(c, &cp))
		return fail("rdma_connect (UD)");
	e = expect(lc, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (!e)
		return 1;
	child = e->id;
	if (child->qp_type != IBV_QPT_UD || e->param.ud.private_data_len != 180 ||
	    memcmp(e->param.ud.private_data, big, 180))
		return fail("CONNECT_REQUEST: UD id, param.ud private data");
	rdma_ack_cm_event(e);
	if (rdma_create_qp(child, NULL, &qa))
		return fail("rdma_create_qp (child)");
	cp.private_data_len = 137;
	errno = 0;
	if (rdma_accept(child, &cp) != -1 || errno != EINVAL)
		return fail("SIDR REP with 137 bytes of private data");
	cp.private_data_len = 136;
	if (rdma_accept(child, &cp))
		return fail("rdma_accept (UD)");
	e = expect(cc, RDMA_CM_EVENT_ESTABLISHED);
	if (!e)
		return 1;
	if (e->param.ud.qp_num != child->qp->qp_num || e->param.ud.qkey != RDMA_UDP_QKEY ||
	    !e->param.ud.ah_attr.is_global || e->param.ud.private_data_len != 136 ||
	    memcmp(e->param.ud.ah_attr.grh.dgid.raw, child->route.addr.addr.ibaddr.sgid.raw, 16))
		return fail("ESTABLISHED's param.ud");
	if (datagram(c, child, &e->param.ud))
		return 1;
	rdma_ack_cm_event(e);
	errno = 0;
	if (rdma_disconnect(c) != -1 || errno != EINVAL)
		return fail("rdma_disconnect on a UD id: EINVAL");
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_qp(child);
	rdma_destroy_id(child);

	/* rejected: UNREACHABLE with IB_SIDR_REJECT and the data */
	if (ud_connector(cc, &c, port) || rdma_connect(c, NULL))
		return 1;
	e = expect(lc, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (!e)
		return 1;
	child = e->id;
	rdma_ack_cm_event(e);
	errno = 0;
	if (rdma_reject(child, big, 137) != -1 || errno != EINVAL)
		return fail("a SIDR reject with 137 bytes");
	if (rdma_reject(child, "nope", 5))
		return fail("rdma_reject (UD)");
	e = expect(cc, RDMA_CM_EVENT_UNREACHABLE);
	if (!e)
		return 1;
	if (e->status != 2 || e->param.ud.private_data_len != 5 ||
	    memcmp(e->param.ud.private_data, "nope", 5))
		return fail("UNREACHABLE: status 2, the reject's data");
	rdma_ack_cm_event(e);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_id(child);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cc);
	rdma_destroy_event_channel(lc);
	printf("ok %s: 180 / 136 bytes delivered, a datagram through param.ud, "
	       "reject status 2\n", tcase);
	return 0;
}

/* A listener takes requests of its own QP type only, as the kernel's. */
static int case_ud_mismatch(int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct ibv_qp_init_attr qa = qp_attr(IBV_QPT_RC);
	struct sockaddr_in dst = addr(port + 1);
	struct rdma_cm_id *c, *l, *l2, *r;
	struct rdma_cm_event *e;

	if (!ch)
		return fail("rdma_create_event_channel");
	if (listen_on(ch, &l, port, RDMA_PS_TCP) || ud_connector(ch, &c, port) ||
	    rdma_connect(c, NULL))
		return 1;
	e = expect(ch, RDMA_CM_EVENT_UNREACHABLE);
	if (!e)
		return 1;
	if (e->status != -ECONNREFUSED)
		return fail("UD at an RC listener: UNREACHABLE -ECONNREFUSED");
	rdma_ack_cm_event(e);
	if (listen_on(ch, &l2, port + 1, RDMA_PS_UDP) ||
	    rdma_create_id(ch, &r, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(r, NULL, (struct sockaddr *)&dst, 2000) ||
	    ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED) || rdma_resolve_route(r, 2000) ||
	    ack(ch, RDMA_CM_EVENT_ROUTE_RESOLVED) || rdma_create_qp(r, NULL, &qa) ||
	    rdma_connect(r, NULL))
		return fail("RC connector");
	e = expect(ch, RDMA_CM_EVENT_REJECTED);
	if (!e)
		return 1;
	if (e->status != -ECONNREFUSED)
		return fail("RC at a UD listener: REJECTED -ECONNREFUSED");
	rdma_ack_cm_event(e);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_qp(r);
	rdma_destroy_id(r);
	rdma_destroy_id(l);
	rdma_destroy_id(l2);
	rdma_destroy_event_channel(ch);
	printf("ok %s: UD at RC UNREACHABLE, RC at UD REJECTED, both -ECONNREFUSED\n", tcase);
	return 0;
}

int main(int argc, char **argv)
{
	int port;

	if (argc != 3) {
		fprintf(stderr, "usage: rdmacm_sync_test sync|sync_pair|ud|ud_mismatch PORT\n");
		return 2;
	}
	tcase = argv[1];
	port = atoi(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(tcase, "sync"))
		return case_sync(port);
	if (!strcmp(tcase, "sync_pair"))
		return case_sync_pair(port);
	if (!strcmp(tcase, "ud"))
		return case_ud(port);
	if (!strcmp(tcase, "ud_mismatch"))
		return case_ud_mismatch(port);
	fprintf(stderr, "rdmacm_sync_test: unknown case %s\n", tcase);
	return 2;
}
