// SPDX-License-Identifier: MIT
/*
 * Making a team in the guests: the shape from the node list, one
 * registered area for every slot, and the links, connected by name.
 *
 * A leader listens on "vct-<key>-<rank>"; every link is opened by the
 * higher side (member -> leader, leader k + 1 -> leader k, leader K-1 ->
 * leader j), and a leader accepts only after its own connects are done.
 * Connects point to lower leaders only, so the leaders come up from node
 * 0 upwards and nothing waits in a circle.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "vct.h"

/* A link's connect request and its answer (private data). */
struct vct_join {
	uint8_t key[VRDMA_TEAM_KEY_LEN];
	uint32_t rank;
	uint32_t hash;			/* of size and the node list */
	uint8_t role;			/* enum vct_role */
	uint8_t pad[3];
};
_Static_assert(sizeof(struct vct_join) <= VRDMA_MAX_PRIVATE_DATA, "join fits");

struct vct_answer {
	uint32_t status;		/* 0, or the errno the joiner fails with */
};

static int64_t vct_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int vct_left(int64_t deadline)
{
	int64_t left = deadline - vct_now_ms();

	return left < 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

static void vct_nap(int ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)ms * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

uint32_t vct_hash_nodes(uint32_t size, const char *const *nodes)
{
	uint32_t h = 2166136261u;
	uint32_t r;
	size_t i;

	for (i = 0; i < 4; i++)
		h = (h ^ ((size >> (8 * i)) & 0xff)) * 16777619u;
	for (r = 0; r < size; r++)
		for (i = 0; i == 0 || nodes[r][i - 1]; i++)
			h = (h ^ (uint8_t)nodes[r][i]) * 16777619u;
	return h;
}

int vrdma_team_key(uint8_t key[VRDMA_TEAM_KEY_LEN])
{
	size_t got = 0;
	ssize_t n;

	if (!key)
		return EINVAL;
	while (got < VRDMA_TEAM_KEY_LEN) {
		n = getrandom(key + got, VRDMA_TEAM_KEY_LEN - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return EIO;
		got += (size_t)n;
	}
	return 0;
}

static void vct_service(const struct vrdma_team *t, uint32_t rank, char *out, size_t len)
{
	uint64_t k;

	memcpy(&k, t->key, sizeof(k));
	snprintf(out, len, "vct-%016llx-%u", (unsigned long long)k, rank);
}

/* The node list's shape: this member's node and leader, the leaders. */
static int vct_shape(struct vrdma_team *t, const char *const *nodes)
{
	uint32_t r, q;

	t->leaders = calloc(t->size, sizeof(*t->leaders));
	t->members = calloc(t->size, sizeof(*t->members));
	if (!t->leaders || !t->members)
		return -ENOMEM;
	for (r = 0; r < t->size; r++) {
		for (q = 0; q < r; q++)
			if (!strcmp(nodes[q], nodes[r]))
				break;
		if (q == r) {			/* r is its node's lowest rank */
			if (r == t->rank || !strcmp(nodes[r], nodes[t->rank]))
				t->node = t->nnodes;
			t->leaders[t->nnodes++] = r;
		}
		if (!strcmp(nodes[r], nodes[t->rank]))
			t->members[t->nmembers++] = r;
	}
	t->leader = t->members[0];
	t->is_leader = t->leader == t->rank;
	return 0;
}

/* Links, slots and headers in one registered area, QPs on one CQ. */
static int vct_build(struct vrdma_team *t)
{
	uint32_t nrecv = 0, i;
	struct vct_link *l;
	uint8_t *p;

	t->nlinks = t->is_leader ? t->nmembers - 1 : 1;
	if (t->is_leader && t->node > 0)
		t->nlinks++;				/* prev */
	if (t->is_leader && t->node + 1 < t->nnodes)
		t->nlinks += 2;				/* next, fin_in */
	if (t->is_leader && t->node + 1 == t->nnodes)
		t->nlinks += t->nnodes - 1;		/* fin_out */
	t->links = calloc(t->nlinks ? t->nlinks : 1, sizeof(*t->links));
	t->srcs = calloc(t->nmembers, sizeof(*t->srcs));
	if (!t->links || !t->srcs)
		return -ENOMEM;

	l = t->links;
	if (!t->is_leader) {
		t->up = l;
		l->rank = t->leader;
		(l++)->recv = true;
	} else {
		t->mem0 = l;
		for (i = 1; i < t->nmembers; i++) {
			l->rank = t->members[i];
			(l++)->recv = true;
		}
		if (t->node > 0) {
			t->prev = l;
			l->rank = t->leaders[t->node - 1];
			(l++)->recv = true;
		}
		if (t->node + 1 < t->nnodes) {
			t->next = l;
			(l++)->rank = t->leaders[t->node + 1];
			t->fin_in = l;
			l->rank = t->leaders[t->nnodes - 1];
			(l++)->recv = true;
		} else {
			t->fin_out0 = l;
			for (i = 0; i + 1 < t->nnodes; i++)
				(l++)->rank = t->leaders[i];
		}
	}
	for (i = 0; i < t->nlinks; i++)
		nrecv += t->links[i].recv;

	t->memlen = (size_t)(2 * nrecv + 2) * VCT_SLOT + (size_t)t->nlinks * 2 * VCT_HDR;
	t->mem = vrdma_alloc_buf(t->dev, t->memlen);
	if (!t->mem)
		return -errno;
	t->mr = vrdma_reg_mr(t->pd, t->mem, t->memlen, VRDMA_ACCESS_LOCAL_WRITE);
	if (!t->mr)
		return -errno;
	p = t->mem;
	t->out[0] = p;
	t->out[1] = p + VCT_SLOT;
	p += 2 * VCT_SLOT;
	for (i = 0; i < t->nlinks; i++) {
		l = &t->links[i];
		if (l->recv) {
			l->rslot[0] = p;
			l->rslot[1] = p + VCT_SLOT;
			p += 2 * VCT_SLOT;
		}
		l->hout[0] = p;
		l->hout[1] = p + VCT_HDR;
		p += 2 * VCT_HDR;
	}
	t->cq = vrdma_create_cq(t->dev, 4 * (int)t->nlinks + 4, t);
	if (!t->cq)
		return -errno;
	return 0;
}

/* A fresh QP for @l, its first receive posted (receives may precede the
 * connection: the first message can come as soon as it is up). */
static int vct_new_qp(struct vrdma_team *t, struct vct_link *l)
{
	struct vrdma_qp_init_attr qa = {
		.send_cq = t->cq, .recv_cq = t->cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 2,
			 .max_recv_sge = 1 },
	};

	l->qp = vrdma_create_qp(t->pd, &qa);
	if (!l->qp)
		return -errno;
	return l->recv ? vct_post_recv(t, l, 0) : 0;
}

static void vct_drop_qp(struct vct_link *l)
{
	if (l->qp)
		vrdma_destroy_qp(l->qp);
	l->qp = NULL;
}

/* Open @l to its rank's listener, retrying while nobody listens yet. */
static int vct_connect(struct vrdma_team *t, struct vct_link *l, const char *const *nodes,
		       uint8_t role, uint32_t hash, int64_t deadline)
{
	struct vct_join j = { .rank = t->rank, .hash = hash, .role = role };
	const char *node = strcmp(nodes[l->rank], nodes[t->rank]) ? nodes[l->rank] : "";
	struct vct_answer ans;
	char svc[VRDMA_MAX_NAME + 1];
	int nap = 2, rc;
	size_t alen;

	memcpy(j.key, t->key, sizeof(j.key));
	vct_service(t, l->rank, svc, sizeof(svc));
	for (;;) {
		rc = vct_new_qp(t, l);
		if (rc)
			return rc;
		alen = sizeof(ans);
		rc = vrdma_connect(l->qp, node, svc, &j, sizeof(j), &ans, &alen,
				   vct_left(deadline) < VCT_CONNECT_TRY ? vct_left(deadline)
									: VCT_CONNECT_TRY);
		if (!rc)
			return alen == sizeof(ans) && !ans.status ? 0 : -EPROTO;
		vct_drop_qp(l);
		if (rc != ECONNREFUSED && rc != ETIMEDOUT)
			return -rc;
		if (!vct_left(deadline))
			return -ETIMEDOUT;
		if (rc == ECONNREFUSED) {	/* not listening yet */
			vct_nap(nap < vct_left(deadline) ? nap : vct_left(deadline));
			nap = nap < 64 ? nap * 2 : 64;
		}
	}
}

/* Which of this leader's links a join opens; NULL if none may. */
static struct vct_link *vct_join_link(struct vrdma_team *t, const struct vct_join *j)
{
	uint32_t i;

	switch (j->role) {
	case VCT_ROLE_MEMBER:
		for (i = 0; i + 1 < t->nmembers; i++)
			if (t->mem0[i].rank == j->rank)
				return &t->mem0[i];
		return NULL;
	case VCT_ROLE_NEXT:
		return t->next && t->next->rank == j->rank ? t->next : NULL;
	case VCT_ROLE_FINAL:
		return t->fin_in && t->fin_in->rank == j->rank ? t->fin_in : NULL;
	}
	return NULL;
}

/* Answer a join that does not fit this team: the joiner fails with
 * EPROTO rather than retrying until its time runs out. */
static void vct_refuse(struct vrdma_team *t, struct vrdma_listener *ls,
		       const struct vrdma_conn_req *req)
{
	struct vct_link tmp = { 0 };
	struct vct_answer ans = { .status = EPROTO };

	if (vct_new_qp(t, &tmp) || vrdma_accept(ls, tmp.qp, req, &ans, sizeof(ans)))
		vrdma_reject(ls, req);
	vct_drop_qp(&tmp);
}

static int vct_accept_all(struct vrdma_team *t, struct vrdma_listener *ls, uint32_t want,
			  uint32_t hash, int64_t deadline)
{
	struct vct_answer ok = { .status = 0 };
	struct vrdma_conn_req req;
	struct vct_join j;
	struct vct_link *l;
	int rc;

	while (want) {
		rc = vrdma_get_request(ls, &req, vct_left(deadline));
		if (rc == EAGAIN)
			continue;
		if (rc)
			return -rc;
		if (req.private_data_len != sizeof(j)) {
			vrdma_reject(ls, &req);
			continue;
		}
		memcpy(&j, req.private_data, sizeof(j));
		if (memcmp(j.key, t->key, sizeof(j.key))) {
			vrdma_reject(ls, &req);	/* not this team's */
			continue;
		}
		l = vct_join_link(t, &j);
		if (j.hash != hash || !l || l->qp) {
			vct_refuse(t, ls, &req);
			return -EPROTO;
		}
		rc = vct_new_qp(t, l);
		if (rc)
			return rc;
		rc = vrdma_accept(ls, l->qp, &req, &ok, sizeof(ok));
		if (rc == ECONNABORTED) {	/* the joiner gave up: it retries */
			vct_drop_qp(l);
			continue;
		}
		if (rc)
			return -rc;
		want--;
	}
	return 0;
}

static int vct_check_attr(struct vrdma_pd *pd, const struct vrdma_team_attr *a, int timeout_ms)
{
	uint32_t r;

	if (!pd || !a || timeout_ms < 0 || !a->nodes || a->size < 1 ||
	    a->size > VRDMA_TEAM_MAX_SIZE || a->rank >= a->size || a->reserved ||
	    (a->flags & ~(uint32_t)VRDMA_TEAM_NO_OFFLOAD))
		return -EINVAL;
	for (r = 0; r < a->size; r++)
		if (!a->nodes[r] || strnlen(a->nodes[r], VRDMA_MAX_NAME + 1) > VRDMA_MAX_NAME)
			return -EINVAL;
	return 0;
}

/* The registered area and the CQ; either mode may make them again. */
void vct_free_area(struct vrdma_team *t)
{
	if (t->mr)
		vrdma_dereg_mr(t->mr);
	if (t->mem)
		vrdma_free_buf(t->dev, t->mem);
	if (t->cq)
		vrdma_destroy_cq(t->cq);
	t->mr = NULL;
	t->mem = NULL;
	t->memlen = 0;
	t->cq = NULL;
}

static void vct_free(struct vrdma_team *t)
{
	uint32_t i;

	vct_off_free(t);		/* OFFLOAD: leaves dom0's team first */
	for (i = 0; t->links && i < t->nlinks; i++)
		vct_drop_qp(&t->links[i]);
	vct_free_area(t);
	free(t->links);
	free(t->srcs);
	free(t->leaders);
	free(t->members);
	free(t);
}

struct vrdma_team *vrdma_team_create(struct vrdma_pd *pd, const struct vrdma_team_attr *attr,
				     int timeout_ms)
{
	int64_t deadline = vct_now_ms() + timeout_ms;
	struct vrdma_listener *ls = NULL;
	char svc[VRDMA_MAX_NAME + 1];
	struct vrdma_team *t;
	uint32_t hash, want, i;
	int rc;

	rc = vct_check_attr(pd, attr, timeout_ms);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	t->dev = pd->device;
	t->pd = pd;
	memcpy(t->key, attr->key, sizeof(t->key));
	t->size = attr->size;
	t->rank = attr->rank;
	t->next_seq = 1;
	hash = vct_hash_nodes(attr->size, attr->nodes);
	rc = vct_shape(t, attr->nodes);
	if (!rc)
		rc = vct_off_create(t, attr, vct_left(deadline));
	if (!rc)
		return t;		/* dom0 runs it (offload.c) */
	if (rc > 0)
		rc = vct_build(t);	/* the members do */
	if (rc)
		goto fail;

	want = t->is_leader ? t->nlinks - (t->prev ? 1 : 0) - (t->fin_out0 ? t->nnodes - 1 : 0) : 0;
	if (want) {
		vct_service(t, t->rank, svc, sizeof(svc));
		ls = vrdma_listen(t->dev, svc);
		if (!ls) {
			rc = -errno;
			goto fail;
		}
	}
	if (!t->is_leader)
		rc = vct_connect(t, t->up, attr->nodes, VCT_ROLE_MEMBER, hash, deadline);
	if (!rc && t->prev)
		rc = vct_connect(t, t->prev, attr->nodes, VCT_ROLE_NEXT, hash, deadline);
	for (i = 0; !rc && t->fin_out0 && i + 1 < t->nnodes; i++)
		rc = vct_connect(t, &t->fin_out0[i], attr->nodes, VCT_ROLE_FINAL, hash, deadline);
	if (!rc && want)
		rc = vct_accept_all(t, ls, want, hash, deadline);
	if (!rc)
		rc = vct_settle(t, vct_left(deadline));
	if (rc == -ECONNRESET)
		rc = -ETIMEDOUT;	/* a member gave up: the team never came together */
	if (rc)
		goto fail;
	if (ls)
		vrdma_close_listener(ls);
	return t;
fail:
	if (ls)
		vrdma_close_listener(ls);
	vct_free(t);
	errno = -rc;
	return NULL;
}

int vrdma_team_destroy(struct vrdma_team *team)
{
	if (!team)
		return EINVAL;
	vct_free(team);
	return 0;
}

int vrdma_team_query(struct vrdma_team *team, struct vrdma_team_info *info)
{
	if (!team || !info)
		return EINVAL;
	memset(info, 0, sizeof(*info));
	info->mode = team->off ? VRDMA_TEAM_OFFLOAD : VRDMA_TEAM_FALLBACK;
	info->size = team->size;
	info->rank = team->rank;
	info->nnodes = team->nnodes;
	info->node = team->node;
	info->leader = team->leader;
	info->ops = team->nops;
	info->bytes = team->nbytes;
	if (!team->off)
		snprintf(info->why, sizeof(info->why), "%s", team->why);
	return 0;
}
