// SPDX-License-Identifier: MIT
/*
 * A team's operations: checked and queued by vrdma_coll_post(), moved on
 * by the team's engine from vrdma_coll_wait(), which sleeps on the team's
 * CQ between completions: vct_progress() when the members run the team,
 * vct_off_progress() when dom0 does.  The blocking calls are a post and
 * a wait.
 */
#include <errno.h>
#include <time.h>

#include "vct.h"
#include "../../common/coll/vcoll_reduce.h"

#define VCT_SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(VCT_SAME(VRDMA_COLL_INT32, VCOLL_INT32) && VCT_SAME(VRDMA_COLL_INT64, VCOLL_INT64) &&
	       VCT_SAME(VRDMA_COLL_UINT32, VCOLL_UINT32) &&
	       VCT_SAME(VRDMA_COLL_UINT64, VCOLL_UINT64) &&
	       VCT_SAME(VRDMA_COLL_FLOAT, VCOLL_FLOAT) && VCT_SAME(VRDMA_COLL_DOUBLE, VCOLL_DOUBLE),
	       "vrdma_coll_type is vcoll_type");
_Static_assert(VCT_SAME(VRDMA_COLL_SUM, VCOLL_SUM) && VCT_SAME(VRDMA_COLL_PROD, VCOLL_PROD) &&
	       VCT_SAME(VRDMA_COLL_MIN, VCOLL_MIN) && VCT_SAME(VRDMA_COLL_MAX, VCOLL_MAX) &&
	       VCT_SAME(VRDMA_COLL_BAND, VCOLL_BAND) && VCT_SAME(VRDMA_COLL_BOR, VCOLL_BOR) &&
	       VCT_SAME(VRDMA_COLL_BXOR, VCOLL_BXOR), "vrdma_coll_op is vcoll_op");
_Static_assert(VCT_CHUNK % 8 == 0, "a chunk holds whole elements");

/* The operation's vector (what is chunked), or -errno. */
static int vct_check_args(const struct vrdma_team *t, const struct vrdma_coll_args *a,
			  uint64_t *vbytes, uint32_t *tsize)
{
	size_t bytes = 0;
	int rc;

	*tsize = 1;
	switch (a->kind) {
	case VRDMA_COLL_ALLREDUCE:
	case VRDMA_COLL_REDUCE:
		rc = vcoll_check(a->type, a->op, a->count, &bytes);
		if (rc)
			return rc;
		if (a->kind == VRDMA_COLL_REDUCE && a->root >= t->size)
			return -EINVAL;
		if (bytes && (!a->sendbuf ||
			      (!a->recvbuf && (a->kind == VRDMA_COLL_ALLREDUCE ||
					       a->root == t->rank))))
			return -EINVAL;
		*tsize = (uint32_t)vcoll_type_size(a->type);
		break;
	case VRDMA_COLL_BCAST:
		if (a->root >= t->size || a->type || a->op || (a->count && !a->recvbuf))
			return -EINVAL;
		bytes = a->count;
		break;
	case VRDMA_COLL_BARRIER:
		if (a->type || a->op || a->root || a->count)
			return -EINVAL;
		break;
	case VRDMA_COLL_ALLGATHER:
		if (a->type || a->op || a->root ||
		    (a->count && (!a->sendbuf || !a->recvbuf)))
			return -EINVAL;
		if (a->count > VCT_MAX_BYTES / t->size)
			return -EOVERFLOW;
		bytes = a->count * t->size;
		break;
	default:
		return -EINVAL;
	}
	if (bytes > VCT_MAX_BYTES)
		return -EOVERFLOW;
	*vbytes = bytes;
	return 0;
}

/* The engine of the team's mode: the members' (step.c) or dom0's. */
static int vct_step(struct vrdma_team *t)
{
	return t->off ? vct_off_progress(t) : vct_progress(t);
}

/* Break the team in the mode's way: the fallback closes its links, an
 * offloaded team leaves dom0's team; either way the others learn now. */
static void vct_fail(struct vrdma_team *t, int err)
{
	if (t->off)
		vct_off_break(t, err);
	else
		vct_break(t, err);
}

int vrdma_coll_post(struct vrdma_team *team, const struct vrdma_coll_args *args,
		    uint64_t *seq)
{
	struct vct_op *op;
	uint64_t vbytes;
	uint32_t tsize;
	int rc;

	if (!team || !args)
		return EINVAL;
	if (team->err)
		return team->err;
	rc = vct_check_args(team, args, &vbytes, &tsize);
	if (rc)
		return -rc;
	if (team->next_seq - 1 - team->done_seq >= VCT_PENDING)
		return ENOSPC;
	op = &team->ops[team->next_seq % VCT_PENDING];
	op->a = *args;
	op->seq = team->next_seq++;
	op->vbytes = vbytes;
	op->tsize = tsize;
	op->nsteps = vbytes ? (uint32_t)((vbytes + VCT_CHUNK - 1) / VCT_CHUNK) : 1;
	if (seq)
		*seq = op->seq;
	/* start it: the first messages go out before the caller waits */
	rc = vct_step(team);
	return rc ? -rc : 0;
}

static int64_t vct_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int vrdma_coll_wait(struct vrdma_team *team, uint64_t seq, uint32_t *flags, int timeout_ms)
{
	int64_t deadline, left;
	int rc;

	if (!team || timeout_ms < 0 || !seq || seq >= team->next_seq)
		return EINVAL;
	if (flags)
		*flags = team->off ? VRDMA_COLL_OFFLOADED : 0;
	deadline = vct_ms() + timeout_ms;
	for (;;) {
		if (seq <= team->done_seq)
			return 0;
		rc = vct_step(team);
		if (rc)
			return -rc;
		if (seq <= team->done_seq)
			return 0;
		left = deadline - vct_ms();
		if (left <= 0)
			return timeout_ms ? ETIMEDOUT : EAGAIN;
		rc = vrdma_wait_cq(team->cq, left > INT32_MAX ? INT32_MAX : (int)left);
		if (rc && rc != ETIMEDOUT) {
			vct_fail(team, rc);
			return rc;
		}
	}
}

/* Post and wait; a blocking call's timeout leaves the members at
 * different steps, so it breaks the team. */
static int vct_run(struct vrdma_team *t, const struct vrdma_coll_args *a, int timeout_ms)
{
	uint64_t seq;
	int rc;

	if (!t || timeout_ms < 0)
		return EINVAL;
	rc = vrdma_coll_post(t, a, &seq);
	if (rc)
		return rc;
	rc = vrdma_coll_wait(t, seq, NULL, timeout_ms);
	if (rc == ETIMEDOUT)
		vct_fail(t, ETIMEDOUT);
	return rc;
}

/*
 * The end of a create: a barrier over the new links.  It completes in a
 * member only once every member posted it, that is once every member's
 * links are up, so a create succeeds everywhere or nowhere (but for a
 * member that dies meanwhile).  The barrier is the team's own: its
 * number and count are taken back.  0 or -errno.
 */
int vct_settle(struct vrdma_team *t, int timeout_ms)
{
	struct vrdma_coll_args a = { .kind = VRDMA_COLL_BARRIER };
	uint64_t seq;
	int rc;

	rc = vrdma_coll_post(t, &a, &seq);
	if (!rc)
		rc = vrdma_coll_wait(t, seq, NULL, timeout_ms);
	if (rc)
		return rc == EAGAIN ? -ETIMEDOUT : -rc;	/* EAGAIN: no time was left */
	t->next_seq = 1;
	t->done_seq = 0;
	t->nops = 0;
	return 0;
}

int vrdma_allreduce(struct vrdma_team *team, const void *sendbuf, void *recvbuf,
		    size_t count, uint32_t type, uint32_t op, int timeout_ms)
{
	struct vrdma_coll_args a = {
		.kind = VRDMA_COLL_ALLREDUCE, .type = type, .op = op,
		.sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
	};

	return vct_run(team, &a, timeout_ms);
}

int vrdma_reduce(struct vrdma_team *team, const void *sendbuf, void *recvbuf,
		 size_t count, uint32_t type, uint32_t op, uint32_t root, int timeout_ms)
{
	struct vrdma_coll_args a = {
		.kind = VRDMA_COLL_REDUCE, .type = type, .op = op, .root = root,
		.sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
	};

	return vct_run(team, &a, timeout_ms);
}

int vrdma_bcast(struct vrdma_team *team, void *buf, size_t bytes, uint32_t root,
		int timeout_ms)
{
	struct vrdma_coll_args a = {
		.kind = VRDMA_COLL_BCAST, .root = root, .sendbuf = buf, .recvbuf = buf,
		.count = bytes,
	};

	return vct_run(team, &a, timeout_ms);
}

int vrdma_barrier(struct vrdma_team *team, int timeout_ms)
{
	struct vrdma_coll_args a = { .kind = VRDMA_COLL_BARRIER };

	return vct_run(team, &a, timeout_ms);
}

int vrdma_allgather(struct vrdma_team *team, const void *sendbuf, void *recvbuf,
		    size_t bytes, int timeout_ms)
{
	struct vrdma_coll_args a = {
		.kind = VRDMA_COLL_ALLGATHER, .sendbuf = sendbuf, .recvbuf = recvbuf,
		.count = bytes,
	};

	return vct_run(team, &a, timeout_ms);
}
