// SPDX-License-Identifier: MIT
/* Device open / close and the dispatch of asynchronous events. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vlib.h"
#include "log.h"

/* Frontend callback, evt_lock held: route an event to its object. */
static int vlib_dispatch(void *arg, const struct vrdma_evt *e)
{
	struct vrdma_device *dev = arg;

	switch (e->type) {
	case VRDMA_EVT_CONN_REQUEST:
		return vlib_listener_event(dev, e);
	case VRDMA_EVT_CONNECTED:
	case VRDMA_EVT_REJECTED:
	case VRDMA_EVT_QP_ERROR:
		return vlib_qp_event(dev, e);
	default:
		return -EPROTO;
	}
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
	pthread_mutex_init(&dev->obj_lock, NULL);
	rc = vfe_open(&dev->fe, kind, timeout_ms, vlib_dispatch, dev);
	if (rc) {
		pthread_mutex_destroy(&dev->obj_lock);
		free(dev);
		errno = rc < 0 ? -rc : EIO;
		return NULL;
	}
	return dev;
}

/* Pop the first object of a list under obj_lock (NULL when empty). */
#define VLIB_POP(dev, head) ({						\
	__typeof__((dev)->head) _o;					\
	pthread_mutex_lock(&(dev)->obj_lock);				\
	_o = (dev)->head;						\
	pthread_mutex_unlock(&(dev)->obj_lock);				\
	_o; })

int vrdma_close(struct vrdma_device *dev)
{
	struct vrdma_listener *l;
	struct vlib_qp *q;
	struct vlib_mr *m;
	struct vlib_cq *c;
	struct vlib_pd *p;
	struct vlib_buf *b;

	if (!dev)
		return EINVAL;
	/* Destroy what the app left open, children first.  Forced: a failed
	 * command (broken device) still frees the local object. */
	while ((l = VLIB_POP(dev, listeners)))
		vlib_close_listener(l, true);
	while ((q = VLIB_POP(dev, qps)))
		vlib_destroy_qp(q, true);
	while ((m = VLIB_POP(dev, mrs)))
		vlib_dereg_mr(m, true);
	while ((c = VLIB_POP(dev, cqs)))
		vlib_destroy_cq(c, true);
	while ((p = VLIB_POP(dev, pds)))
		vlib_dealloc_pd(p, true);
	while ((b = VLIB_POP(dev, bufs)))
		vlib_buf_free(dev, b, true);
	vfe_close(&dev->fe);
	pthread_mutex_destroy(&dev->obj_lock);
	free(dev);
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
