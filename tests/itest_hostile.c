// SPDX-License-Identifier: MIT
/*
 * A hostile guest: connects like a real frontend, then writes what
 * libvrdma never would into its own ring.  vrdmad must refuse each case,
 * with an error status or by disabling this guest, and stay up for
 * everyone else (tests/integration.sh runs a verified transfer beside).
 *
 *   itest_hostile list     print the case names
 *   itest_hostile CASE     exit 0 iff the case was refused
 *   itest_hostile wedge    (not listed) try for WEDGE_MS to make vrdmad
 *                          wait on what this guest holds; the verdict is
 *                          the script's: vrdmad answers pings meanwhile,
 *                          other guests' traffic flows, nothing is left
 *   itest_hostile frag NDEV NPAGES NBUF LAYOUT [HOLD_S]
 *                          (not listed) NDEV devices, each attaching up to
 *                          NBUF buffers of NPAGES pages of one share, laid
 *                          out as LAYOUT says: 1 contiguous, 2 alternate
 *                          pages (a mapping each on the plain host), rN
 *                          N pages over and over (Xen lets a grant be
 *                          mapped at most 255 times), until one is
 *                          refused; prints
 *                          what it got, then holds it all until stdin
 *                          closes, or for HOLD_S seconds (the script's
 *                          honest pair runs beside)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "front.h"
#include "vring.h"

#define T_MS	15000	/* TCG under load: a hand-over can take seconds */
/* The handshake, as itest_guest's vrdma_open: some 40 xenstore calls from
 * the domU and 25 from dom0, over 15 s in the rig soak (ETIMEDOUT before
 * the case could run).  A case is judged only once it is connected. */
#define T_OPEN_MS	30000
#define WEDGE_MS	4000

static int ev_ignore(void *arg, const struct vrdma_evt *e)
{
	(void)arg;
	(void)e;
	return 0;
}

/* Refused by disabling: the backend leaves Connected within the limit. */
static int backend_gave_up(struct vfe_dev *d)
{
	char path[VPLAT_KEY_MAX + 8];
	int64_t end = vplat_now_ms() + T_MS;

	snprintf(path, sizeof(path), "%s/state", d->backend);
	while (vplat_now_ms() < end) {
		uint32_t st = 0;
		int err;

		pthread_mutex_lock(&d->plat_lock);
		err = vplat_key_read_u32(d->plat, path, &st);
		pthread_mutex_unlock(&d->plat_lock);
		if (err == -ENOENT || (!err && st >= VRDMA_XB_CLOSING))
			return 1;
		usleep(20000);
	}
	return 0;
}

/* Push one raw entry and say whether the backend gave up on us. */
static int raw(struct vfe_dev *d, const struct vrdma_req *r)
{
	vfe_ring_lock(d);
	vfe_ring_put(d, r);
	vfe_ring_unlock(d);
	return backend_gave_up(d);
}

/* A command must fail (any error status) or get us disabled. */
static int cmd_refused(struct vfe_dev *d, struct vrdma_req *r)
{
	int err = vfe_cmd(d, r, NULL);

	printf("command answered %d (%s)\n", err, strerror(-err));
	if (err == -ETIMEDOUT || err == -EIO)
		return backend_gave_up(d);
	return err != 0;
}

static int c_bogus_prod(struct vfe_dev *d)
{
	vring_store_rel(&d->sring->req.prod, d->req_prod + d->req_size + 7);
	vplat_notify(d->chan);
	return backend_gave_up(d);
}

static int c_bad_opcode(struct vfe_dev *d)
{
	struct vrdma_req r = { .opcode = 0x7f };

	return raw(d, &r);
}

static int c_wr_bad_qp(struct vfe_dev *d)
{
	struct vrdma_req r = { .opcode = VRDMA_OP_WRITE, .handle = 12345, .num_sge = 1 };

	return raw(d, &r);
}

static int c_num_sge(struct vfe_dev *d)
{
	struct vrdma_req r = { .opcode = VRDMA_OP_SEND, .num_sge = 5 };

	return raw(d, &r);
}

static int c_bad_flags(struct vfe_dev *d)
{
	struct vrdma_req r = { .opcode = VRDMA_OP_RECV, .flags = 0x8000 };

	return raw(d, &r);
}

static int c_attach_bad_ref(struct vfe_dev *d)
{
	struct vrdma_req r = { .opcode = VRDMA_CMD_ATTACH_BUF };

	r.u.attach_buf.npages = 1;
	r.u.attach_buf.nlist = 1;
	r.u.attach_buf.list_ref[0] = 0xfffffff0u;
	return cmd_refused(d, &r);
}

static int c_attach_zero(struct vfe_dev *d)
{
	struct vrdma_req r = { .opcode = VRDMA_CMD_ATTACH_BUF };

	r.u.attach_buf.nlist = 1;
	return cmd_refused(d, &r);
}

static int c_attach_too_many(struct vfe_dev *d)
{
	struct vrdma_req r = { .opcode = VRDMA_CMD_ATTACH_BUF };

	r.u.attach_buf.npages = VRDMA_BUF_MAX_PAGES + 1;
	r.u.attach_buf.nlist = VRDMA_BUF_LIST_REFS;
	return cmd_refused(d, &r);
}

static int c_reg_mr_no_pd(struct vfe_dev *d)
{
	struct vrdma_req r = { .opcode = VRDMA_CMD_REG_MR };

	r.u.reg_mr.pd = 777;
	r.u.reg_mr.buf = 555;
	r.u.reg_mr.length = 4096;
	return cmd_refused(d, &r);
}

static int c_cq_huge(struct vfe_dev *d)
{
	struct vrdma_req r = { .opcode = VRDMA_CMD_CREATE_CQ };

	r.u.create_cq.order = 30;
	return cmd_refused(d, &r);
}

static int c_qp_deep(struct vfe_dev *d)
{
	struct vrdma_req r = { .opcode = VRDMA_CMD_CREATE_QP };

	r.u.create_qp.max_send_wr = VRDMA_MAX_WR + 1;
	r.u.create_qp.max_recv_wr = 1;
	r.u.create_qp.max_sge = 1;
	return cmd_refused(d, &r);
}

static int c_evt_cons(struct vfe_dev *d)
{
	struct vrdma_req r = { .opcode = VRDMA_CMD_ALLOC_PD };

	/* claim to have consumed events dom0 never produced */
	vring_store_rel(&d->sring->evt.cons, d->evt_cons + 100000);
	return cmd_refused(d, &r);
}

static int c_listen_unterminated(struct vfe_dev *d)
{
	struct vrdma_req r = { .opcode = VRDMA_CMD_LISTEN };

	memset(r.u.listen.service, 'x', sizeof(r.u.listen.service));
	return cmd_refused(d, &r);
}

/* A datagram end: flood dom0 with it (dom0's end is shut for reading,
 * so the first send fails), leaving it blocking. */
static void wedge_flood(int fd)
{
	int fl = fcntl(fd, F_GETFL), i;

	if (fl < 0)
		return;
	for (i = 0; i < 100000; i++)
		if (send(fd, "x", 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			break;
	fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

/*
 * Everything this guest holds, made as hostile to dom0 as it can be
 * (issue 12): every fd blocking; eventfds drained; datagram sockets
 * (channel ends) flooded towards dom0; its socket to vrdmad never read
 * again.  What dom0 writes to, the guest's end of its channel (chan_fd),
 * only dom0's notifications can fill: c_wedge makes dom0 notify until it
 * is full and never reads it.
 */
static void wedge_fds(int chan_fd)
{
	DIR *dir = opendir("/proc/self/fd");
	char path[64], link[64];
	struct dirent *e;

	while (dir && (e = readdir(dir))) {
		int fd = atoi(e->d_name), fl, type = 0;
		socklen_t len = sizeof(type);
		uint64_t cnt;
		ssize_t n;

		if (e->d_name[0] == '.' || fd == dirfd(dir) || fd <= 2)
			continue;
		if (fd == chan_fd) {
			fl = fcntl(fd, F_GETFL);
			fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
			continue;
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, link, sizeof(link) - 1);
		link[n > 0 ? n : 0] = '\0';
		if (!strcmp(link, "anon_inode:[eventfd]"))
			n = read(fd, &cnt, sizeof(cnt));
		else if (!getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) &&
			 type == SOCK_DGRAM)
			wedge_flood(fd);
		fl = fcntl(fd, F_GETFL);
		if (fl >= 0)
			fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	}
	if (dir)
		closedir(dir);
}

/* Datagrams a fresh pair like a channel's holds unread: dom0's end fills
 * the guest's at this many. */
static int wedge_dgram_cap(void)
{
	int sv[2], n = 0;

	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0)
		return -1;
	while (n < 100000 && send(sv[0], "x", 1, MSG_DONTWAIT) == 1)
		n++;
	close(sv[0]);
	close(sv[1]);
	return n;
}

/* Commands whose answers dom0 must notify (the event index armed each
 * time, the answers skipped unread), far more than the channel holds:
 * dom0 notifies into a full queue (EAGAIN) for most of the run. */
static int c_wedge(struct vfe_dev *d)
{
	int64_t end = vplat_now_ms() + WEDGE_MS;
	int cfd = vplat_chan_fd(d->chan), cap = wedge_dgram_cap(), queued = 0;
	unsigned put = 0;
	char c;

	wedge_fds(cfd);
	printf("wedge-ready\n");
	fflush(stdout);
	while (vplat_now_ms() < end) {
		struct vrdma_req r = { .opcode = VRDMA_CMD_ALLOC_PD };
		uint32_t prod = vring_load_acq(&d->sring->evt.prod);

		d->evt_cons = prod;
		vring_store_rel(&d->sring->evt.cons, prod);
		vring_arm(&d->sring->evt, prod);
		vfe_ring_lock(d);
		if (!vfe_ring_put(d, &r))
			put++;
		vfe_ring_unlock(d);
		usleep(2000);
	}
	while (queued < 100000 && recv(cfd, &c, 1, MSG_DONTWAIT) == 1)
		queued++;
	printf("wedge: %u commands put, %d notifications left unread, %d fill the queue%s\n",
	       put, queued, cap, queued >= cap && cap > 0 ? ": queue full" : "");
	fflush(stdout);
	return 1;
}

/* One device's buffers for `frag`: the status of the refusal, 0 if none.
 * Page i of each is page stride * i, or (cycle) i % cycle, of a share. */
static int frag_dev(struct vfe_dev *d, uint32_t npages, unsigned nbuf, uint32_t stride,
		    uint32_t cycle, unsigned *got)
{
	uint32_t nlist = (npages + VRDMA_REFS_PER_PAGE - 1) / VRDMA_REFS_PER_PAGE, i;
	struct vplat_share *data, *list;
	uint32_t *refs;
	int err;

	err = vfe_share(d, cycle ? cycle : stride * (npages - 1) + 1, 1, &data);
	if (err)
		return err;
	err = vfe_share(d, nlist, 0, &list);
	if (err)
		return err;
	refs = vplat_share_addr(list);
	for (i = 0; i < npages; i++)
		refs[i] = vplat_share_refs(data)[cycle ? i % cycle : stride * i];
	while (*got < nbuf) {
		struct vrdma_req r = { .opcode = VRDMA_CMD_ATTACH_BUF };

		r.u.attach_buf.npages = npages;
		r.u.attach_buf.nlist = (uint16_t)nlist;
		r.u.attach_buf.writable = 1;
		for (i = 0; i < nlist; i++)
			r.u.attach_buf.list_ref[i] = vplat_share_refs(list)[i];
		err = vfe_cmd(d, &r, NULL);
		if (err)
			return err;
		(*got)++;
	}
	return 0;
}

/* Shares and devices are never let go: the process holds them to the end. */
static int c_frag(char **argv, int hold_s)
{
	unsigned ndev = (unsigned)atoi(argv[0]), nbuf = (unsigned)atoi(argv[2]), i, got = 0;
	uint32_t npages = (uint32_t)atoi(argv[1]), stride = 0, cycle = 0;
	int err = 0, open_err = 0, e;
	unsigned opened = 0, refused = 0;
	char c;

	if (argv[3][0] == 'r')
		cycle = (uint32_t)atoi(argv[3] + 1);
	else
		stride = (uint32_t)atoi(argv[3]);
	if (!ndev || ndev > 256 || !npages || npages > VRDMA_BUF_MAX_PAGES ||
	    (cycle ? cycle > npages : stride < 1 || stride > 2)) {
		fprintf(stderr, "itest_hostile: frag NDEV(1..256) NPAGES NBUF 1|2|rN\n");
		return 2;
	}
	for (i = 0; i < ndev; i++) {
		struct vfe_dev *d = calloc(1, sizeof(*d));
		unsigned mine = 0;

		if (!d)
			return 1;
		open_err = vfe_open(d, NULL, T_OPEN_MS, ev_ignore, NULL);
		if (open_err)
			break;
		opened++;
		/* Every device tries, refused or not: a hostile tenant would. */
		e = frag_dev(d, npages, nbuf, stride, cycle, &mine);
		got += mine;
		refused += e != 0;
		if (e && !err)
			err = e;
	}
	printf("frag: %u devices (%s), %u buffers of %u pages, %u devices refused (%s)\n",
	       opened, open_err ? strerror(-open_err) : "all opened", got, npages, refused,
	       err ? strerror(-err) : "none");
	printf("frag-ready\n");
	fflush(stdout);
	if (hold_s > 0)
		sleep((unsigned)hold_s);	/* or until killed */
	else
		while (read(0, &c, 1) > 0)
			;
	_exit(0);	/* a hostile guest just dies */
}

static const struct {
	const char *name;
	int (*fn)(struct vfe_dev *d);
} cases[] = {
	{ "bogus-prod", c_bogus_prod },
	{ "bad-opcode", c_bad_opcode },
	{ "wr-bad-qp", c_wr_bad_qp },
	{ "num-sge", c_num_sge },
	{ "bad-flags", c_bad_flags },
	{ "attach-bad-ref", c_attach_bad_ref },
	{ "attach-zero", c_attach_zero },
	{ "attach-too-many", c_attach_too_many },
	{ "reg-mr-no-pd", c_reg_mr_no_pd },
	{ "cq-huge", c_cq_huge },
	{ "qp-deep", c_qp_deep },
	{ "evt-cons", c_evt_cons },
	{ "listen-unterminated", c_listen_unterminated },
};

int main(int argc, char **argv)
{
	static struct vfe_dev d;
	int refused, err;

	if ((argc == 6 || argc == 7) && !strcmp(argv[1], "frag"))
		return c_frag(argv + 2, argc == 7 ? atoi(argv[6]) : 0);
	if (argc != 2) {
		fprintf(stderr, "usage: itest_hostile list|CASE\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!strcmp(argv[1], "list")) {
			printf("%s\n", cases[i].name);
			continue;
		}
		if (strcmp(argv[1], cases[i].name))
			continue;
		err = vfe_open(&d, NULL, T_OPEN_MS, ev_ignore, NULL);
		if (err) {
			fprintf(stderr, "itest_hostile: cannot connect: %s\n", strerror(-err));
			return 1;
		}
		refused = cases[i].fn(&d);
		printf("hostile %s: %s\n", cases[i].name, refused ? "refused" : "ACCEPTED");
		/* no vfe_close: a hostile guest just dies */
		_exit(refused ? 0 : 1);
	}
	if (!strcmp(argv[1], "list"))
		return 0;
	if (!strcmp(argv[1], "wedge")) {
		err = vfe_open(&d, NULL, T_OPEN_MS, ev_ignore, NULL);
		if (err) {
			fprintf(stderr, "itest_hostile: cannot connect: %s\n", strerror(-err));
			return 1;
		}
		c_wedge(&d);
		_exit(0);	/* a hostile guest just dies */
	}
	fprintf(stderr, "itest_hostile: unknown case '%s'\n", argv[1]);
	return 2;
}
