// SPDX-License-Identifier: MIT
/*
 * Teams dom0 runs (feature-coll), the device's side: TEAM_JOIN and the
 * EVT_TEAM that follows it, TEAM_LEAVE, OP_COLL entries on the request
 * ring and the check of their CQEs.  What a team does with them is
 * coll/offload.c's; here a team is a handle, a CQ and its OP_COLLs not
 * completed yet.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vlib.h"
#include "log.h"

/* obj_lock held. */
static struct vlib_team *vlib_team_find(struct vrdma_device *dev, uint32_t handle)
{
	struct vlib_team *t;

	for (t = dev->teams; t; t = t->next)
		if (t->handle == handle)
			return t;
	return NULL;
}

/* obj_lock held: the early EVT_TEAM of @handle, NULL if none. */
static struct vlib_team_early *vlib_team_early(struct vrdma_device *dev, uint32_t handle)
{
	unsigned i;

	for (i = 0; i < VLIB_TEAM_EARLY; i++)
		if (dev->early[i].used && dev->early[i].handle == handle)
			return &dev->early[i];
	return NULL;
}

/*
 * EVT_TEAM (evt_lock held).  One for a handle no team has may be the
 * one that follows a join's CMD_DONE, taken in by the same pass over the
 * event ring before the joiner learnt its handle: it is kept for the
 * join (vlib_team_join).  One that is nobody's (a team that left, or
 * nonsense) is overwritten in time; a second one to a team is dropped.
 * Neither breaks anything: only what a joiner waits for is believed.
 */
int vlib_team_event(struct vrdma_device *dev, const struct vrdma_evt *e)
{
	struct vlib_team_early *x;
	struct vlib_team *t;
	bool again = false;

	pthread_mutex_lock(&dev->obj_lock);
	t = vlib_team_find(dev, e->handle);
	if (t && !__atomic_load_n(&t->evt_done, __ATOMIC_ACQUIRE)) {
		t->evt_status = e->status;
		__atomic_store_n(&t->evt_done, 1, __ATOMIC_RELEASE);
	} else if (t) {
		again = true;
	} else {
		x = vlib_team_early(dev, e->handle);
		if (!x)
			x = &dev->early[dev->early_next++ % VLIB_TEAM_EARLY];
		x->handle = e->handle;
		x->status = e->status;
		x->used = true;
	}
	pthread_mutex_unlock(&dev->obj_lock);
	if (again)
		vlog_dbg("vrdma: second EVT_TEAM for team %#x dropped", e->handle);
	return 0;
}

static int vlib_team_join(struct vrdma_pd *pd, struct vrdma_cq *cq,
			  const struct vrdma_cmd_team_join *j, struct vlib_team **out)
{
	struct vrdma_req req = { .opcode = VRDMA_CMD_TEAM_JOIN };
	struct vrdma_device *dev = pd->device;
	struct vlib_team_early *x;
	struct vlib_team *t;
	uint32_t res[4];
	bool dup;
	int rc;

	/* Without feature-coll dom0 takes TEAM_JOIN for nonsense. */
	if (!dev->fe.feat_coll)
		return -EOPNOTSUPP;
	if (cq->device != dev)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	req.u.team_join = *j;
	req.u.team_join.pd = pd->handle;
	req.u.team_join.cq = cq->handle;
	memset(req.u.team_join.reserved, 0, sizeof(req.u.team_join.reserved));
	rc = vfe_cmd(&dev->fe, &req, res);
	if (rc) {
		free(t);
		return rc;
	}
	t->dev = dev;
	t->cq = vlib_cq(cq);
	t->handle = res[0];
	pthread_mutex_lock(&dev->obj_lock);
	dup = vlib_team_find(dev, t->handle) != NULL;
	if (!dup) {
		x = vlib_team_early(dev, t->handle);
		if (x) {
			t->evt_status = x->status;
			t->evt_done = 1;
			x->used = false;
		}
		t->next = dev->teams;
		dev->teams = t;
		t->cq->users++;		/* dom0 holds it too until the leave */
	}
	pthread_mutex_unlock(&dev->obj_lock);
	if (dup) {
		/* CQEs and EVT_TEAM are routed by handle. */
		free(t);
		return vfe_cmd_bad(&dev->fe, "dom0 gave a new team the handle of a live one");
	}
	*out = t;
	return 0;
}

static bool vlib_team_told(void *arg)
{
	struct vlib_team *t = arg;

	return __atomic_load_n(&t->evt_done, __ATOMIC_ACQUIRE) != 0;
}

static int vlib_team_ready(struct vlib_team *t, int timeout_ms)
{
	int rc = vfe_wait(&t->dev->fe, vlib_team_told, NULL, t, timeout_ms);

	if (rc)
		return rc;
	switch (t->evt_status) {
	case VRDMA_CS_OK:
		return 0;
	case VRDMA_CS_NOENT:		/* the members run it */
		return -ENOENT;
	case VRDMA_CS_INVAL:		/* size or node list differ */
	case VRDMA_CS_EXIST:		/* two members took one rank */
		return -EPROTO;
	default:
		return -vfe_cmd_status_errno(t->evt_status);
	}
}

static int vlib_team_leave(struct vlib_team *t)
{
	struct vrdma_req req = { .opcode = VRDMA_CMD_TEAM_LEAVE, .handle = t->handle };
	struct vrdma_device *dev = t->dev;
	int rc = 0;

	/* Unlinked only once dom0 answered: an EVT_TEAM it sent before
	 * finds the team, none comes after. */
	if (!vfe_is_broken(&dev->fe))
		rc = vfe_cmd(&dev->fe, &req, NULL);
	/* Broken or timed out: dom0 drops the team with the device. */
	if (rc == -EIO || rc == -ETIMEDOUT)
		rc = 0;
	if (rc)
		vlog_warn("vrdma: dom0 refused to let team %#x go: %s", t->handle,
			  strerror(-rc));
	pthread_mutex_lock(&dev->obj_lock);
	VLIB_UNLINK(&dev->teams, t);
	t->cq->users--;
	pthread_mutex_unlock(&dev->obj_lock);
	free(t);
	return rc;
}

static int vlib_team_post(struct vlib_team *t, const struct vrdma_coll_wr *w, unsigned n)
{
	struct vfe_dev *fe = &t->dev->fe;
	struct vrdma_req r;
	uint32_t retired;
	unsigned i;
	int rc = 0;

	/* As post.c: the ring lock serialises posters, posted changes
	 * only under it; the whole batch is published at unlock. */
	vfe_ring_lock(fe);
	retired = __atomic_load_n(&t->retired, __ATOMIC_ACQUIRE);
	for (i = 0; i < n; i++) {
		if (t->posted - retired >= VRDMA_TEAM_DEPTH) {
			rc = -ENOSPC;
			break;
		}
		memset(&r, 0, sizeof(r));
		r.opcode = VRDMA_OP_COLL;
		r.handle = t->handle;
		r.id = w[i].seq;
		r.u.coll = w[i];
		rc = vfe_ring_put(fe, &r);
		if (rc)
			break;
		t->slot[t->posted % VRDMA_TEAM_DEPTH] = (struct vlib_slot){
			.wr_id = w[i].seq, .len = w[i].sge[1].length, .wc = VRDMA_WC_COLL,
		};
		__atomic_store_n(&t->posted, t->posted + 1, __ATOMIC_RELEASE);
	}
	if (vfe_ring_unlock(fe) && !rc)
		rc = -EIO;
	return rc;
}

/*
 * A CQE flagged VRDMA_CQE_F_TEAM on @c (its lock held): 0 if it is what
 * the oldest OP_COLL not completed of a team of @c must say (its seq; on
 * success every byte of its receive range written), else -EPROTO.
 */
int vlib_team_cqe(struct vlib_cq *c, const struct vrdma_cqe *e)
{
	struct vrdma_device *dev = c->pub.device;
	const struct vlib_slot *s;
	struct vlib_team *t;
	int rc = -EPROTO;

	if (e->opcode != VRDMA_WC_COLL || e->flags != VRDMA_CQE_F_TEAM || e->srq)
		return -EPROTO;
	/* Under obj_lock: a leave unlinks the team under it before freeing. */
	pthread_mutex_lock(&dev->obj_lock);
	t = vlib_team_find(dev, e->qp);
	if (t && t->cq == c &&
	    __atomic_load_n(&t->posted, __ATOMIC_ACQUIRE) != t->retired) {
		s = &t->slot[t->retired % VRDMA_TEAM_DEPTH];
		if (e->wr_id == s->wr_id &&
		    (e->status == VRDMA_WS_SUCCESS ? e->byte_len == s->len
						    : e->byte_len <= s->len)) {
			__atomic_store_n(&t->retired, t->retired + 1, __ATOMIC_RELEASE);
			rc = 0;
		}
	}
	pthread_mutex_unlock(&dev->obj_lock);
	return rc;
}

const struct vlib_team_ops vlib_team_dev_ops = {
	.join = vlib_team_join,
	.ready = vlib_team_ready,
	.leave = vlib_team_leave,
	.post = vlib_team_post,
};
