// SPDX-License-Identifier: MIT
/*
 * Commands: one in flight per device, pushed on the request ring (so they
 * are ordered with work requests) and completed by a CMD_DONE event.
 */
#include <errno.h>
#include <string.h>

#include "front.h"
#include "log.h"

int vfe_cmd_status_errno(uint16_t status)
{
	switch (status) {
	case VRDMA_CS_OK:		return 0;
	case VRDMA_CS_INVAL:		return EINVAL;
	case VRDMA_CS_NOMEM:		return ENOMEM;
	case VRDMA_CS_NOENT:		return ENOENT;
	case VRDMA_CS_BUSY:		return EBUSY;
	case VRDMA_CS_ACCESS:		return EACCES;
	case VRDMA_CS_EXIST:		return EEXIST;
	case VRDMA_CS_REFUSED:		return ECONNREFUSED;
	case VRDMA_CS_TIMEDOUT:		return ETIMEDOUT;
	case VRDMA_CS_UNREACH:		return EHOSTUNREACH;
	case VRDMA_CS_FAULT:		return EFAULT;
	default:			return EPROTO;
	}
}

/* evt_lock held.  A late answer to a command that timed out is dropped;
 * an answer to a command never issued, or naming another object than the
 * request did, is a protocol violation. */
int vfe_cmd_complete(struct vfe_dev *d, const struct vrdma_evt *e)
{
	if (e->id >= d->cmd_next_id || e->id == 0)
		return -EPROTO;
	if (__atomic_load_n(&d->cmd_done, __ATOMIC_ACQUIRE) || e->id != d->cmd_wait_id) {
		vlog_warn("vrdma: late completion of command %llu dropped",
			  (unsigned long long)e->id);
		return 0;
	}
	if (e->handle != d->cmd_wait_handle)
		return -EPROTO;
	d->cmd_status = e->status;
	memcpy(d->cmd_out, e->u.out, sizeof(d->cmd_out));
	__atomic_store_n(&d->cmd_done, 1, __ATOMIC_RELEASE);
	return 0;
}

int vfe_cmd_bad(struct vfe_dev *d, const char *why)
{
	vfe_set_broken(d, why);
	return -EIO;
}

static bool vfe_cmd_ready(void *arg)
{
	struct vfe_dev *d = arg;

	return __atomic_load_n(&d->cmd_done, __ATOMIC_ACQUIRE) != 0;
}

int vfe_cmd(struct vfe_dev *d, struct vrdma_req *req, uint32_t out[4])
{
	int rc;

	if (vfe_is_broken(d))
		return -EIO;
	pthread_mutex_lock(&d->cmd_lock);
	pthread_mutex_lock(&d->evt_lock);
	req->id = d->cmd_next_id++;
	d->cmd_wait_id = req->id;
	d->cmd_wait_handle = req->handle;
	__atomic_store_n(&d->cmd_done, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&d->evt_lock);

	vfe_ring_lock(d);
	rc = vfe_ring_put(d, req);
	if (vfe_ring_unlock(d) && !rc)
		rc = -EIO;
	if (rc)
		goto out;

	rc = vfe_wait(d, vfe_cmd_ready, NULL, d, d->cmd_timeout_ms);
	if (rc == -ETIMEDOUT) {
		/* dom0 is wedged and the object's fate unknown: stop here
		 * rather than pile up more such waits.  Callers that free
		 * objects treat it as -EIO. */
		vlog_err("vrdma: dom0 did not answer command 0x%x in %d ms",
			 req->opcode, d->cmd_timeout_ms);
		vfe_set_broken(d, "command timed out");
		goto out;
	}
	if (rc)
		goto out;
	rc = -vfe_cmd_status_errno(d->cmd_status);
	if (out)
		memcpy(out, d->cmd_out, sizeof(d->cmd_out));
out:
	/* Forget the id so a late CMD_DONE is recognised as late. */
	pthread_mutex_lock(&d->evt_lock);
	__atomic_store_n(&d->cmd_done, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&d->evt_lock);
	pthread_mutex_unlock(&d->cmd_lock);
	return rc;
}
