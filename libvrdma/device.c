// SPDX-License-Identifier: MIT
/* Device open / close and the dispatch of asynchronous events. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vlib.h"
#include "log.h"

/* Frontend callback, evt_lock held: route an event to its object. */
static int vlib_dispatch(void *arg, const struct vrdma_evt *e)
{
	struct vrdma_device *dev = arg;

	switch (e->type) {
	case VRDMA_EVT_CONN_REQUEST:
		return vlib_listener_event(dev, e);
	case VRDMA_EVT_CONN_FROM:
		return vlib_listener_from(dev, e);
	case VRDMA_EVT_CONNECTED:
	case VRDMA_EVT_REJECTED:
	case VRDMA_EVT_QP_ERROR:
		return vlib_qp_event(dev, e);
	case VRDMA_EVT_CQ_ERROR:
		return vlib_cq_event(dev, e);
	case VRDMA_EVT_TEAM:
		return vlib_team_event(dev, e);
	default:
		return -EPROTO;
	}
}

int vlib_destroy_cmd(struct vrdma_device *dev, uint8_t opcode, uint32_t handle,
		     bool force)
{
	struct vrdma_req req = { .opcode = opcode, .handle = handle };
	int rc;

	if (vfe_is_broken(&dev->fe))
		return 0;
	rc = vfe_cmd(&dev->fe, &req, NULL);
	/* Broken or timed out (the device is broken now): dom0 releases
	 * everything when the device closes, the local object can go. */
	if (rc == -EIO || rc == -ETIMEDOUT || force)
		return 0;
	return rc;
}

bool vlib_broken(struct vrdma_device *dev)
{
	if (!vfe_is_broken(&dev->fe))
		return false;
	errno = EIO;
	return true;
}

int vlib_name(char dst[VRDMA_NAME_MAX], const char *src)
{
	size_t n;

	memset(dst, 0, VRDMA_NAME_MAX);
	if (!src)
		return 0;
	n = strnlen(src, VRDMA_MAX_NAME + 1);
	if (n > VRDMA_MAX_NAME)
		return -EINVAL;
	memcpy(dst, src, n);
	return 0;
}

/* ---- wait policy ---- */

int vrdma_set_wait_policy(struct vrdma_device *dev, enum vrdma_wait_policy policy)
{
	if (!dev || policy < VRDMA_WAIT_AUTO || policy > VRDMA_WAIT_CPU)
		return EINVAL;
	/* Spinning pays only while another CPU runs dom0's side: on one or
	 * two CPUs the spinner takes the CPU that would answer it. */
	if (policy == VRDMA_WAIT_AUTO)
		policy = sysconf(_SC_NPROCESSORS_ONLN) >= 4 ? VRDMA_WAIT_LATENCY :
			 VRDMA_WAIT_THROUGHPUT;
	__atomic_store_n(&dev->fe.spin_us, policy == VRDMA_WAIT_LATENCY ? VFE_SPIN_US : 0,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&dev->wait_policy, (int)policy, __ATOMIC_RELAXED);
	return 0;
}

int vrdma_get_wait_policy(struct vrdma_device *dev)
{
	return dev ? __atomic_load_n(&dev->wait_policy, __ATOMIC_RELAXED) : -1;
}

/* env VRDMA_WAIT; an unknown word is said once and means AUTO. */
static enum vrdma_wait_policy vlib_env_policy(void)
{
	static const char *const names[] = { "auto", "latency", "throughput", "cpu" };
	const char *s = getenv("VRDMA_WAIT");
	unsigned i;

	if (!s || !*s)
		return VRDMA_WAIT_AUTO;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i]))
			return (enum vrdma_wait_policy)i;
	vlog_warn("vrdma: VRDMA_WAIT=%s unknown (latency, throughput, cpu, auto): auto", s);
	return VRDMA_WAIT_AUTO;
}

static int vlib_spec_kind(const char *spec, const char **kind)
{
	if (!spec || !*spec)
		*kind = NULL;
	else if (!strcmp(spec, "host") || !strcmp(spec, "xen"))
		*kind = spec;
	else
		return -EINVAL;
	return 0;
}

struct vrdma_device *vrdma_open(const char *spec, int timeout_ms)
{
	struct vrdma_device *dev;
	const char *kind;
	int rc;

	if (timeout_ms < 0) {
		errno = EINVAL;
		return NULL;
	}
	rc = vlib_spec_kind(spec, &kind);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		errno = ENOMEM;
		return NULL;
	}
	rc = vlib_async_init(dev);
	if (rc)
		goto err_free;
	pthread_mutex_init(&dev->obj_lock, NULL);
	pthread_mutex_init(&dev->pin_lock, NULL);
	dev->team_ops = &vlib_team_dev_ops;
	rc = vfe_open(&dev->fe, kind, timeout_ms, vlib_dispatch, dev);
	if (rc)
		goto err_locks;
	vfe_on_broken(&dev->fe, vlib_async_broken, dev);
	vrdma_set_wait_policy(dev, vlib_env_policy());
	vlib_lt_open();
	return dev;

err_locks:
	pthread_mutex_destroy(&dev->obj_lock);
	pthread_mutex_destroy(&dev->pin_lock);
	vlib_async_fini(dev);
err_free:
	free(dev);
	errno = rc < 0 ? -rc : EIO;
	return NULL;
}

/* Free a list's objects with fn; nobody else uses the device any more. */
#define VLIB_FREE_ALL(head, fn) do {					\
	while (head) {							\
		__typeof__(head) _o = (head);				\
		(head) = _o->next;					\
		fn(_o);							\
	}								\
} while (0)

static void vlib_free_listener(struct vrdma_listener *l)
{
	pthread_mutex_destroy(&l->lock);
	free(l);
}

static void vlib_free_cq(struct vlib_cq *c)
{
	free(c->gone);
	free(c);	/* its area is on the buffer list */
}

/*
 * No command per leftover object: the backend releases everything of the
 * device when it disconnects.  Disconnect first (dom0 unmaps what it
 * mapped), then give the pages back and free the local objects.
 */
int vrdma_close(struct vrdma_device *dev)
{
	struct vlib_buf *b;
	unsigned i;

	if (!dev)
		return EINVAL;
	vfe_disconnect(&dev->fe);
	while ((b = dev->bufs)) {
		dev->bufs = b->next;
		if (b->pins)
			vlib_pin_buf_free(dev, b);
		else
			vfe_unshare(&dev->fe, b->share);
		free(b);
	}
	vlib_pin_close(dev);	/* the app keeps its memory, private again */
	VLIB_FREE_ALL(dev->listeners, vlib_free_listener);
	for (i = 0; i < VLIB_QP_HASH; i++)
		VLIB_FREE_ALL(dev->qps[i], vlib_qp_free);
	VLIB_FREE_ALL(dev->srqs, vlib_srq_free);
	VLIB_FREE_ALL(dev->teams, free);
	VLIB_FREE_ALL(dev->ahs, free);
	VLIB_FREE_ALL(dev->mrs, free);
	VLIB_FREE_ALL(dev->cqs, vlib_free_cq);
	VLIB_FREE_ALL(dev->pds, free);
	vfe_close(&dev->fe);
	pthread_mutex_destroy(&dev->obj_lock);
	pthread_mutex_destroy(&dev->pin_lock);
	vlib_async_fini(dev);
	free(dev);
	vlib_lt_close();
	return 0;
}

const char *vrdma_node_name(const struct vrdma_device *dev)
{
	if (!dev) {
		errno = EINVAL;
		return NULL;
	}
	return dev->fe.node_name;
}

int vrdma_query_gid(struct vrdma_device *dev, uint8_t gid[VRDMA_GID_LEN])
{
	if (!dev || !gid)
		return EINVAL;
	memcpy(gid, dev->fe.node_gid, VRDMA_GID_LEN);
	return 0;
}

/* max_ud_msg came out of the reserved words: a 1.0 program's struct. */
_Static_assert(sizeof(struct vrdma_device_attr) == 72 &&
	       offsetof(struct vrdma_device_attr, max_ud_msg) == 40 &&
	       offsetof(struct vrdma_device_attr, reserved) == 48,
	       "vrdma_device_attr keeps the layout of libvrdma 1.0");

int vrdma_query_device(struct vrdma_device *dev, struct vrdma_device_attr *attr)
{
	if (!dev || !attr)
		return EINVAL;
	/* The backend's per-guest tables (backend/vbe.h) and wire limits. */
	memset(attr, 0, sizeof(*attr));
	attr->max_qp = 1024;
	attr->max_qp_wr = VRDMA_MAX_WR;
	attr->max_sge = dev->fe.max_sge;
	attr->max_cq = 256;
	attr->max_cqe = 1u << dev->fe.max_cq_order;
	attr->max_mr = 4096;	/* backend VBE_MAX_MRS (8192 key slots, half kept free) */
	attr->max_pd = 256;
	attr->max_qp_rd_atom = 16;
	attr->max_mr_size = (uint64_t)dev->fe.max_buf_pages * VRDMA_PAGE_SIZE;
	attr->max_ud_msg = dev->fe.max_ud_msg;
	return 0;
}
