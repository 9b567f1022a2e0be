// SPDX-License-Identifier: MIT
/*
 * Teams dom0 runs (libvrdma/coll/offload.c over libvrdma/team_dev.c)
 * through a live vrdmad, members as threads with a device each.
 *
 * Without dom0's side (no feature-coll) only the guest's own checks run:
 * a CQE or EVT_TEAM that names no team of the device, played by the test
 * as a lying dom0 through the library's layout (vlib.h), and a dom0
 * without feature-coll, which means the fallback.  With feature-coll the
 * one-node teams (every member on vrdmad's node, "api-node") are run by
 * dom0: the results must be the documented order's bits, as in
 * test_coll_team, also for vectors larger than the staging (several
 * OP_COLLs an operation); a member that does not want the offload, or
 * VRDMA_COLL_OFFLOAD=0, makes every member fall back.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcoll.h"
#include "tlive.h"
#include "../common/coll/vcoll_reduce.h"
/* The lying dom0 writes CQEs and events through the library's layout. */
#include "../libvrdma/vlib.h"

#define NODE		"api-node"	/* tlive.c's vrdmad -n */
#define MB		(1u << 20)
#define SLOT		(256u << 10)	/* offload.c's staging slot */

static const char *const here[TMAX] = { NODE, NODE, NODE, NODE, NODE, NODE, NODE, NODE, NODE };
static const char *const elsewhere[TMAX] = { "n", "n", "n", "n", "n", "n", "n", "n", "n" };

/* ---- members as threads, each with its own create flags ---- */

struct om;
typedef void (*om_body)(struct om *m);

struct om {
	uint32_t rank, size;
	const char *const *nodes;
	const uint8_t *key;
	uint32_t flags;			/* vrdma_team_attr.flags */
	uint32_t size_as;		/* if set: the size this member says */
	const char *node_name;		/* if set: the device answers to it */
	bool no_feature;		/* play a dom0 without feature-coll */
	om_body body;
	void *arg;
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
	struct vrdma_team *team;
	struct vrdma_team_info info;
	int create_err;
	int rc;
	char msg[200];
	pthread_t th;
	pthread_barrier_t *bar;
};

#define OM_FAIL(m, ...) do {						\
	if (!(m)->rc)							\
		snprintf((m)->msg, sizeof((m)->msg), __VA_ARGS__);	\
	(m)->rc = -1;							\
} while (0)

static void *om_main(void *arg)
{
	struct om *m = arg;
	struct vrdma_team_attr a = { .size = m->size_as ? m->size_as : m->size,
				     .rank = m->rank, .nodes = m->nodes, .flags = m->flags };

	memcpy(a.key, m->key, sizeof(a.key));
	m->team = vrdma_team_create(m->pd, &a, T_MS);
	m->create_err = m->team ? 0 : errno;
	if (!m->team) {
		if (!m->size_as)	/* else the case checks create_err */
			OM_FAIL(m, "create: %s", strerror(m->create_err));
	} else if (vrdma_team_query(m->team, &m->info)) {
		OM_FAIL(m, "query failed");
	}
	if (m->team && m->body)
		m->body(m);
	pthread_barrier_wait(m->bar);	/* nobody leaves before all are done */
	if (m->team)
		vrdma_team_destroy(m->team);
	return NULL;
}

/* Open the devices, run every member, join them; verdicts to m[]. */
static void om_run(struct om *m, uint32_t size, const char *const *nodes, om_body body,
		   void *arg)
{
	static uint8_t key[VRDMA_TEAM_KEY_LEN];
	pthread_barrier_t bar;
	uint32_t r;

	ck_assert_int_eq(vrdma_team_key(key), 0);
	ck_assert_int_eq(pthread_barrier_init(&bar, NULL, size), 0);
	for (r = 0; r < size; r++) {
		m[r].rank = r;
		m[r].size = size;
		m[r].nodes = nodes;
		m[r].key = key;
		m[r].body = body;
		m[r].arg = arg;
		m[r].bar = &bar;
		m[r].dev = open_dev();
		if (m[r].node_name)
			snprintf(m[r].dev->fe.node_name, sizeof(m[r].dev->fe.node_name), "%s",
				 m[r].node_name);
		if (m[r].no_feature)
			m[r].dev->fe.feat_coll = false;
		m[r].pd = vrdma_alloc_pd(m[r].dev);
		ck_assert_ptr_nonnull(m[r].pd);
	}
	for (r = 0; r < size; r++)
		ck_assert_int_eq(pthread_create(&m[r].th, NULL, om_main, &m[r]), 0);
	for (r = 0; r < size; r++)
		pthread_join(m[r].th, NULL);
	pthread_barrier_destroy(&bar);
}

/* Every verdict checked; devices closed. */
static void om_done(struct om *m, uint32_t size)
{
	char all[TMAX * 220] = "";
	size_t used = 0;
	uint32_t r;

	for (r = 0; r < size; r++) {
		if (m[r].rc)
			used += (size_t)snprintf(all + used, sizeof(all) - used, " [rank %u: %s]",
						 r, m[r].msg);
		vrdma_dealloc_pd(m[r].pd);
		vrdma_close(m[r].dev);
	}
	ck_assert_msg(!used, "%s", all);
}

/* Does this vrdmad run teams?  Asked of a device of its own. */
static bool has_coll(void)
{
	struct vrdma_device *dev = open_dev();
	bool on = dev->fe.feat_coll;

	vrdma_close(dev);
	return on;
}

#define NEED_COLL() do {						\
	NEED_DAEMON();							\
	if (!has_coll()) {						\
		fprintf(stderr, "%s skipped: vrdmad without feature-coll\n", \
			__func__);					\
		return;							\
	}								\
} while (0)

/* ---- a lying dom0: CQEs and EVT_TEAMs that name no team ---- */

enum { LIE_UNKNOWN_TEAM, LIE_QP_AS_TEAM, LIE_COLL_UNFLAGGED, LIE_TEAM_FLAG_ON_SEND, LIE_N };

/* One device, two of its QPs connected, a signaled WRITE done: its CQE
 * sits in the CQ, not polled yet; *cqe points to it. */
struct lie {
	struct vrdma_device *dev;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	struct vrdma_qp *a, *b;
	uint8_t *buf;
	struct vrdma_mr *mr;
};

static struct vrdma_cqe *lie_setup(struct lie *l)
{
	struct vrdma_qp_init_attr qa = { 0 };
	struct vrdma_sge sge;
	struct vrdma_send_wr wr = { 0 }, *bad;
	struct vlib_cq *c;
	int64_t end;

	l->dev = open_dev();
	l->pd = vrdma_alloc_pd(l->dev);
	ck_assert_ptr_nonnull(l->pd);
	l->cq = vrdma_create_cq(l->dev, 16, NULL);
	ck_assert_ptr_nonnull(l->cq);
	qa.send_cq = qa.recv_cq = l->cq;
	qa.cap = (struct vrdma_qp_cap){ 4, 4, 1, 1 };
	l->a = vrdma_create_qp(l->pd, &qa);
	l->b = vrdma_create_qp(l->pd, &qa);
	ck_assert(l->a && l->b);
	tlive_connect(l->dev, l->a, l->b, "lie", 5000);
	l->buf = vrdma_alloc_buf(l->dev, 4096);
	ck_assert_ptr_nonnull(l->buf);
	l->mr = vrdma_reg_mr(l->pd, l->buf, 4096,
			     VRDMA_ACCESS_LOCAL_WRITE | VRDMA_ACCESS_REMOTE_WRITE);
	ck_assert_ptr_nonnull(l->mr);
	sge = (struct vrdma_sge){ (uintptr_t)l->buf, 8, l->mr->lkey };
	wr.wr_id = 77;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = VRDMA_WR_RDMA_WRITE;
	wr.send_flags = VRDMA_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)l->buf + 64;
	wr.wr.rdma.rkey = l->mr->rkey;
	ck_assert_int_eq(vrdma_post_send(l->b, &wr, &bad), 0);
	c = vlib_cq(l->cq);
	for (end = now_ms() + 5000; now_ms() < end &&
	     __atomic_load_n(&c->hdr->ring.prod, __ATOMIC_ACQUIRE) == c->cons;)
		usleep(1000);
	ck_assert_uint_eq(__atomic_load_n(&c->hdr->ring.prod, __ATOMIC_ACQUIRE) - c->cons, 1);
	return &c->ring[c->cons & (c->size - 1)];
}

START_TEST(t_cqe_lies)
{
	struct vrdma_wc wc;
	struct lie l;
	int lie;

	NEED_DAEMON();
	for (lie = 0; lie < LIE_N; lie++) {
		struct vrdma_cqe *e = lie_setup(&l);

		ck_assert_uint_eq(e->opcode, VRDMA_WC_WRITE);
		switch (lie) {
		case LIE_UNKNOWN_TEAM:
			e->flags = VRDMA_CQE_F_TEAM;
			e->opcode = VRDMA_WC_COLL;
			e->qp = 0x12345;
			break;
		case LIE_QP_AS_TEAM:		/* a QP of this CQ is no team */
			e->flags = VRDMA_CQE_F_TEAM;
			e->opcode = VRDMA_WC_COLL;
			break;
		case LIE_COLL_UNFLAGGED:
			e->opcode = VRDMA_WC_COLL;
			break;
		case LIE_TEAM_FLAG_ON_SEND:
			e->flags = VRDMA_CQE_F_TEAM;
			break;
		}
		errno = 0;
		ck_assert_msg(vrdma_poll_cq(l.cq, 1, &wc) == -1 && errno == EIO,
			      "lie %d taken", lie);
		ck_assert_int_eq(vrdma_close(l.dev), 0);
	}
}
END_TEST

/* Through the library's event callback, as the frontend calls it. */
static int play_evt(struct vrdma_device *dev, const struct vrdma_evt *e)
{
	int rc;

	pthread_mutex_lock(&dev->fe.evt_lock);
	rc = dev->fe.evt_cb(dev->fe.evt_arg, e);
	pthread_mutex_unlock(&dev->fe.evt_lock);
	return rc;
}

START_TEST(t_evt_unknown)
{
	struct vrdma_evt e = { .type = VRDMA_EVT_TEAM };
	struct vrdma_async_event ae;
	struct vrdma_cqe *cqe;
	struct vrdma_wc wc;
	struct vrdma_cq *cq;
	struct lie l;
	uint32_t i;

	NEED_DAEMON();
	cqe = lie_setup(&l);
	/* More than the early table holds, each status: nothing breaks. */
	for (i = 0; i < 3 * VLIB_TEAM_EARLY; i++) {
		e.handle = 0x7000 + i;
		e.status = (uint16_t)(i % VRDMA_CS_MAX);
		ck_assert_int_eq(play_evt(l.dev, &e), 0);
	}
	ck_assert(!vfe_is_broken(&l.dev->fe));
	ck_assert_int_eq(vrdma_get_async_event(l.dev, &ae, 0), EAGAIN);
	cq = vrdma_create_cq(l.dev, 4, NULL);	/* commands still answered */
	ck_assert_ptr_nonnull(cq);
	ck_assert_int_eq(vrdma_destroy_cq(cq), 0);
	/* An early EVT_TEAM makes no team: its CQE is still a lie. */
	cqe->flags = VRDMA_CQE_F_TEAM;
	cqe->opcode = VRDMA_WC_COLL;
	cqe->qp = 0x7000 + 3 * VLIB_TEAM_EARLY - 1;
	errno = 0;
	ck_assert(vrdma_poll_cq(l.cq, 1, &wc) == -1 && errno == EIO);
	ck_assert_int_eq(vrdma_close(l.dev), 0);
}
END_TEST

/* ---- the mode a team gets, and why ---- */

struct mode_case {
	uint32_t mode;			/* every member's */
	const char *why;		/* FALLBACK: rank 0's, NULL: any */
	const char *why1;		/* FALLBACK: rank 1's, NULL: as rank 0 */
	uint32_t n;			/* doubles summed, checked */
	double *want;
};

static void body_mode(struct om *m)
{
	struct mode_case *c = m->arg;
	const char *why = m->rank == 1 && c->why1 ? c->why1 : c->why;
	double *s = malloc(c->n * 8 + 8), *d = malloc(c->n * 8 + 8);
	struct vrdma_coll_args a = {
		.kind = VRDMA_COLL_ALLREDUCE, .type = VRDMA_COLL_DOUBLE,
		.op = VRDMA_COLL_SUM, .sendbuf = s, .recvbuf = d, .count = c->n,
	};
	uint32_t flags = 7;
	uint64_t seq;
	int rc;

	if (m->info.mode != c->mode)
		OM_FAIL(m, "mode %u, want %u (why: %s)", m->info.mode, c->mode, m->info.why);
	if (c->mode == VRDMA_TEAM_OFFLOAD && m->info.why[0])
		OM_FAIL(m, "offloaded, yet why says %s", m->info.why);
	if (c->mode == VRDMA_TEAM_FALLBACK && why && strcmp(m->info.why, why))
		OM_FAIL(m, "why: \"%s\", want \"%s\"", m->info.why, why);
	fill(VRDMA_COLL_DOUBLE, m->rank, s, c->n, 7);
	rc = vrdma_coll_post(m->team, &a, &seq);
	if (!rc)
		rc = vrdma_coll_wait(m->team, seq, &flags, T_MS);
	if (rc)
		OM_FAIL(m, "allreduce: %s", strerror(rc));
	else if (memcmp(d, c->want, c->n * 8))
		OM_FAIL(m, "allreduce: not the documented order's bits");
	else if (flags != (c->mode == VRDMA_TEAM_OFFLOAD ? VRDMA_COLL_OFFLOADED : 0u))
		OM_FAIL(m, "wait's flags %#x in mode %u", flags, c->mode);
	if (!rc && (vrdma_team_query(m->team, &m->info) || m->info.ops != 1 ||
		    m->info.bytes != c->n * 8ull))
		OM_FAIL(m, "query after one op: ops %llu bytes %llu",
			(unsigned long long)m->info.ops, (unsigned long long)m->info.bytes);
	free(s);
	free(d);
}

/* @size members on @nodes as @m[] says (flags, node names) get @mode. */
static void mode_on(struct om *m, uint32_t size, const char *const *nodes, uint32_t mode,
		    const char *why, const char *why1)
{
	struct mode_case c = { mode, why, why1, 3001, NULL };

	c.want = reference(size, nodes, VRDMA_COLL_DOUBLE, VRDMA_COLL_SUM, c.n, 7);
	om_run(m, size, nodes, body_mode, &c);
	om_done(m, size);
	free(c.want);
}

START_TEST(t_no_feature)
{
	struct om m[3] = { { .no_feature = true }, { .no_feature = true },
			   { .no_feature = true } };

	NEED_DAEMON();
	mode_on(m, 3, here, VRDMA_TEAM_FALLBACK, "no offload in this vrdmad", NULL);
}
END_TEST

START_TEST(t_offload_mode)
{
	struct om m[4] = { 0 };
	struct om one[1] = { 0 };

	NEED_COLL();
	mode_on(m, 4, here, VRDMA_TEAM_OFFLOAD, NULL, NULL);
	mode_on(one, 1, here, VRDMA_TEAM_FALLBACK, "one member", NULL);
}
END_TEST

START_TEST(t_offload_refused)
{
	struct om m[4] = { 0 };

	NEED_COLL();
	/* One member does not want it: dom0 tells every member. */
	m[1].flags = VRDMA_TEAM_NO_OFFLOAD;
	mode_on(m, 4, here, VRDMA_TEAM_FALLBACK, "a member or dom0 chose the fallback",
		"VRDMA_TEAM_NO_OFFLOAD");
	/* The environment's word, in every member here. */
	memset(m, 0, sizeof(m));
	setenv("VRDMA_COLL_OFFLOAD", "off", 1);
	mode_on(m, 3, here, VRDMA_TEAM_FALLBACK, "VRDMA_COLL_OFFLOAD=0", NULL);
	unsetenv("VRDMA_COLL_OFFLOAD");
	/* Another node's list is not even asked about... */
	memset(m, 0, sizeof(m));
	mode_on(m, 3, elsewhere, VRDMA_TEAM_FALLBACK, "members on other nodes", NULL);
	/* ... and dom0 declines one whose names are not its own. */
	memset(m, 0, sizeof(m));
	m[0].node_name = m[1].node_name = m[2].node_name = "n";
	mode_on(m, 3, elsewhere, VRDMA_TEAM_FALLBACK, "dom0 does not run this team", NULL);
}
END_TEST

/* ---- bits: test_coll_team's one-node cases, run by dom0 ---- */

struct red_case {
	uint32_t type, op;
	size_t n;
	bool in_place;
	void *want;
};

static void body_allreduce(struct om *m)
{
	struct red_case *c = m->arg;
	size_t es = vcoll_type_size(c->type);
	void *s = malloc(c->n * es + 1), *d = malloc(c->n * es + 1);
	int rc;

	if (m->info.mode != VRDMA_TEAM_OFFLOAD)
		OM_FAIL(m, "not offloaded: %s", m->info.why);
	fill(c->type, m->rank, s, c->n, 7);
	if (c->in_place)
		memcpy(d, s, c->n * es);
	rc = vrdma_allreduce(m->team, c->in_place ? d : s, d, c->n, c->type, c->op, T_MS);
	if (rc)
		OM_FAIL(m, "allreduce %s %s n=%zu: %s", vcoll_type_name(c->type),
			vcoll_op_name(c->op), c->n, strerror(rc));
	else if (c->n && memcmp(d, c->want, c->n * es))
		OM_FAIL(m, "allreduce %s %s n=%zu: not the documented order's bits",
			vcoll_type_name(c->type), vcoll_op_name(c->op), c->n);
	free(s);
	free(d);
}

static void allreduce_here(uint32_t size, uint32_t type, uint32_t op, size_t n, bool in_place)
{
	struct red_case c = { type, op, n, in_place, reference(size, here, type, op, n, 7) };
	struct om m[TMAX];

	memset(m, 0, sizeof(m));
	om_run(m, size, here, body_allreduce, &c);
	om_done(m, size);
	free(c.want);
}

START_TEST(t_offload_types_ops)
{
	NEED_COLL();
	for (uint32_t t = VRDMA_COLL_INT32; t <= VRDMA_COLL_DOUBLE; t++)
		for (uint32_t o = VRDMA_COLL_SUM; o <= VRDMA_COLL_BXOR; o++)
			if (!vcoll_check(t, o, 1, NULL))	/* not bitwise on float */
				allreduce_here(4, t, o, 1001, false);
}
END_TEST

START_TEST(t_offload_sizes)
{
	/* 0, 1, odd, a staging slot of doubles and one more, three slots
	 * and an odd tail: an operation of several OP_COLLs */
	static const size_t n[] = { 0, 1, 3, SLOT / 8, SLOT / 8 + 1, 3 * (SLOT / 8) + 5 };

	NEED_COLL();
	for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++)
		allreduce_here(3, VRDMA_COLL_DOUBLE, VRDMA_COLL_SUM, n[i], i & 1);
	allreduce_here(5, VRDMA_COLL_FLOAT, VRDMA_COLL_PROD, MB / 4 + 77, false);
	allreduce_here(TMAX, VRDMA_COLL_INT64, VRDMA_COLL_MAX, 5, true);
}
END_TEST

/* ---- bcast, reduce, allgather, barrier, posted: larger than a slot ---- */

#define BC_LEN		(2 * MB + MB / 2 + 7)
#define AG_LEN		(MB / 3 + 3)	/* x4 members: 6 pieces a block */

static uint8_t pat(uint32_t r, size_t i)
{
	return (uint8_t)(i * 131 + r * 29 + (i >> 9));
}

static bool check_pat(struct om *m, const uint8_t *b, size_t len, uint32_t r, const char *what)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != pat(r, i)) {
			OM_FAIL(m, "%s: byte %zu of rank %u's data is %#x", what, i, r, b[i]);
			return false;
		}
	return true;
}

static void body_mixed(struct om *m)
{
	const uint32_t n = 300000;	/* int32s: 5 pieces */
	uint8_t *b = malloc(BC_LEN), *ag = malloc((size_t)AG_LEN * m->size);
	int32_t *s = malloc(n * 4), *d = malloc(n * 4), *want = m->arg;
	int32_t *nb_s[3], *nb_d[3];
	const char *what = "bcast";
	uint32_t r, i, flags = 0;
	uint64_t seq[3];
	int rc = 0;

	if (m->info.mode != VRDMA_TEAM_OFFLOAD)
		OM_FAIL(m, "not offloaded: %s", m->info.why);
	for (r = 0; r < m->size && !m->rc; r++) {	/* every root */
		for (i = 0; i < BC_LEN; i++)
			b[i] = m->rank == r ? pat(r, i) : 0x5a;
		rc = vrdma_bcast(m->team, b, BC_LEN, r, T_MS);
		if (rc)
			goto fail;
		check_pat(m, b, BC_LEN, r, "bcast");
	}
	rc = vrdma_bcast(m->team, NULL, 0, 1, T_MS);
	if (rc)
		goto fail;

	what = "reduce";
	fill(VRDMA_COLL_INT32, m->rank, s, n, 7);
	memset(d, 0xaa, n * 4);
	rc = vrdma_reduce(m->team, s, m->rank == 2 ? d : NULL, n, VRDMA_COLL_INT32,
			  VRDMA_COLL_SUM, 2, T_MS);
	if (rc)
		goto fail;
	if (m->rank == 2 && memcmp(d, want, n * 4))
		OM_FAIL(m, "reduce: the root's result is wrong");

	what = "allgather";
	for (i = 0; i < AG_LEN; i++)
		b[i] = pat(m->rank, i);
	memset(ag, 0, (size_t)AG_LEN * m->size);
	rc = vrdma_allgather(m->team, b, ag, AG_LEN, T_MS);
	if (rc)
		goto fail;
	for (r = 0; r < m->size && !m->rc; r++)
		check_pat(m, ag + (size_t)r * AG_LEN, AG_LEN, r, "allgather");
	memset(ag, 0, (size_t)AG_LEN * m->size);	/* in place */
	for (i = 0; i < AG_LEN; i++)
		ag[(size_t)m->rank * AG_LEN + i] = pat(m->rank, i);
	rc = vrdma_allgather(m->team, ag + (size_t)m->rank * AG_LEN, ag, AG_LEN, T_MS);
	if (rc)
		goto fail;
	for (r = 0; r < m->size && !m->rc; r++)
		check_pat(m, ag + (size_t)r * AG_LEN, AG_LEN, r, "allgather in place");

	what = "barrier";
	for (i = 0; i < 3; i++) {
		rc = vrdma_barrier(m->team, T_MS);
		if (rc)
			goto fail;
	}

	what = "posted allreduce";
	for (i = 0; i < 3; i++) {	/* posted before any wait */
		struct vrdma_coll_args a = {
			.kind = VRDMA_COLL_ALLREDUCE, .type = VRDMA_COLL_INT32,
			.op = VRDMA_COLL_SUM, .count = n,
		};

		nb_s[i] = malloc(n * 4);
		nb_d[i] = malloc(n * 4);
		fill(VRDMA_COLL_INT32, m->rank, nb_s[i], n, 7);
		a.sendbuf = nb_s[i];
		a.recvbuf = nb_d[i];
		rc = vrdma_coll_post(m->team, &a, &seq[i]);
		if (rc)
			goto fail;
	}
	rc = vrdma_coll_wait(m->team, seq[2], &flags, T_MS);
	if (rc)
		goto fail;
	for (i = 0; i < 3; i++) {
		if (memcmp(nb_d[i], want, n * 4))
			OM_FAIL(m, "posted allreduce %u: wrong result", i);
		if (vrdma_coll_wait(m->team, seq[i], NULL, 0))
			OM_FAIL(m, "posted allreduce %u: not done after a later one", i);
		free(nb_s[i]);
		free(nb_d[i]);
	}
	if (!(flags & VRDMA_COLL_OFFLOADED))
		OM_FAIL(m, "an offloaded operation's flags %#x", flags);
	if (!vrdma_team_query(m->team, &m->info) && m->info.ops != m->size + 1 + 1 + 2 + 3 + 3)
		OM_FAIL(m, "query: %llu ops", (unsigned long long)m->info.ops);
	goto out;
fail:
	OM_FAIL(m, "%s: %s", what, strerror(rc));
out:
	free(b);
	free(ag);
	free(s);
	free(d);
}

START_TEST(t_offload_mixed)
{
	int32_t *want;
	struct om m[4];

	NEED_COLL();
	memset(m, 0, sizeof(m));
	want = reference(4, here, VRDMA_COLL_INT32, VRDMA_COLL_SUM, 300000, 7);
	om_run(m, 4, here, body_mixed, want);
	om_done(m, 4);
	free(want);
}
END_TEST

/* ---- a team that breaks ---- */

/* Rank 0 sums one element more than the others: dom0 fails the op in
 * every member (EPROTO), or a member hears of it as a member leaving. */
static void body_disagree(struct om *m)
{
	int32_t s[8] = { 1 }, d[8];
	int rc, again;

	rc = vrdma_allreduce(m->team, s, d, m->rank ? 5 : 6, VRDMA_COLL_INT32, VRDMA_COLL_SUM,
			     T_MS);
	if (rc != EPROTO && rc != ECONNRESET)
		OM_FAIL(m, "members disagree: %s", strerror(rc));
	again = vrdma_barrier(m->team, T_MS);
	if (again != rc)
		OM_FAIL(m, "broken with %s, later %s", strerror(rc), strerror(again));
}

/* Rank 0 leaves at once; the others' allreduce fails, not hangs. */
static void body_leave(struct om *m)
{
	int32_t s[8] = { 1 }, d[8];
	int rc;

	if (!m->rank) {
		vrdma_team_destroy(m->team);
		m->team = NULL;
		return;
	}
	rc = vrdma_allreduce(m->team, s, d, 8, VRDMA_COLL_INT32, VRDMA_COLL_SUM, T_MS);
	if (rc != ECONNRESET)
		OM_FAIL(m, "a member left: %s", strerror(rc));
}

START_TEST(t_offload_breaks)
{
	struct om m[3];
	uint32_t r;

	NEED_COLL();
	/* Sizes that differ under one key: whichever joins second hears it
	 * from CMD_DONE, the first from EVT_TEAM; both fail, EPROTO. */
	memset(m, 0, sizeof(m));
	m[0].size_as = 2;
	m[1].size_as = 3;
	om_run(m, 2, here, NULL, NULL);
	for (r = 0; r < 2; r++)
		if (m[r].create_err != EPROTO)
			OM_FAIL(&m[r], "sizes differ: create %s", strerror(m[r].create_err));
	om_done(m, 2);
	memset(m, 0, sizeof(m));
	om_run(m, 3, here, body_disagree, NULL);
	om_done(m, 3);
	memset(m, 0, sizeof(m));
	om_run(m, 3, here, body_leave, NULL);
	om_done(m, 3);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("test_coll_offload");
	TCase *live = tlive_tcase();

	tcase_set_timeout(live, 300);
	tcase_add_test(live, t_cqe_lies);
	tcase_add_test(live, t_evt_unknown);
	tcase_add_test(live, t_no_feature);
	tcase_add_test(live, t_offload_mode);
	tcase_add_test(live, t_offload_refused);
	tcase_add_test(live, t_offload_types_ops);
	tcase_add_test(live, t_offload_sizes);
	tcase_add_test(live, t_offload_mixed);
	tcase_add_test(live, t_offload_breaks);
	suite_add_tcase(s, live);
	return tlive_main("test_coll_offload", s);
}
