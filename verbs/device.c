// SPDX-License-Identifier: MIT
/* The device list, contexts, device and port queries, async events. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vvb.h"

#undef ibv_query_port

/* One device, whose vrdma handle each ibv_open_device() opens anew. */
static struct ibv_device vvb_device = {
	.node_type	= IBV_NODE_CA,
	.transport_type	= IBV_TRANSPORT_IB,
	.name		= VVB_DEV_NAME,
	.dev_name	= VVB_UVERBS_NAME,
	/* until the sysfs view has the device (sysfs.c): files read here
	 * fail ENOENT */
	.dev_path	= "/nonexistent/vrdma/" VVB_DEV_NAME,
	.ibdev_path	= "/nonexistent/vrdma/" VVB_DEV_NAME,
};

/*
 * One vrdma device per process, shared by every ibv_open_device() (and the
 * probes): a domain has few devices (one per process, frontend/claim.c),
 * and perftest -R opens one context itself and librdmacm another.  The
 * device goes when its last context closes; a forked child opens its own.
 */
static struct {
	pthread_mutex_t lock;
	struct vrdma_device *dev;
	unsigned refs;
	pid_t pid;
} vvb_sh = { .lock = PTHREAD_MUTEX_INITIALIZER };

/*
 * The handshake's limit: VVB_OPEN_MS, or env VRDMA_OPEN_TIMEOUT_MS
 * (1000..3600000) for a host so loaded that dom0 takes longer (a
 * handshake is a few dozen xenstore round trips each way).  A bad value
 * is said and ignored.
 */
static int vvb_open_ms(int def)
{
	const char *s = getenv("VRDMA_OPEN_TIMEOUT_MS");
	char *end;
	long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 1000 || v > 3600000) {
		fprintf(stderr, "vrdma: VRDMA_OPEN_TIMEOUT_MS=%s is not 1000..3600000: %d\n",
			s, def);
		return def;
	}
	return (int)v;
}

static struct vrdma_device *vvb_dev_get(int timeout_ms)
{
	struct vrdma_device *d;

	pthread_mutex_lock(&vvb_sh.lock);
	if (vvb_sh.dev && vvb_sh.pid != getpid()) {
		vvb_sh.dev = NULL;	/* the parent's: not ours to use or close */
		vvb_sh.refs = 0;
	}
	if (!vvb_sh.dev) {
		vvb_sh.dev = vrdma_open(NULL, vvb_open_ms(timeout_ms));
		vvb_sh.pid = getpid();
	}
	d = vvb_sh.dev;
	if (d)
		vvb_sh.refs++;
	pthread_mutex_unlock(&vvb_sh.lock);
	return d;
}

static void vvb_dev_put(struct vrdma_device *d)
{
	pthread_mutex_lock(&vvb_sh.lock);
	/* (a forked child's put of its parent's device: not ours to close) */
	if (d == vvb_sh.dev && vvb_sh.pid == getpid() && vvb_sh.refs &&
	    --vvb_sh.refs == 0) {
		vvb_sh.dev = NULL;
		vrdma_close(d);	/* frees every libvrdma object still open */
	}
	pthread_mutex_unlock(&vvb_sh.lock);
}

/*
 * A list holds the device it probed until ibv_free_device_list(): the
 * usual get_device_list, open_device, free_device_list then costs one
 * handshake with dom0, not a probe's open and close and then another
 * open (each a xenstore round trip and a teardown in dom0, and under
 * load the teardown of one could hold up the next).
 */
struct vvb_list {
	struct ibv_device *l[2];	/* what the program sees: first */
	struct vrdma_device *ref;	/* the probe's reference, or NULL */
	pid_t pid;			/* whose reference */
};

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct vvb_list *vl = calloc(1, sizeof(*vl));
	int n = 0;

	if (!vl) {
		errno = ENOMEM;
		return NULL;
	}
	/* Listed only when dom0 answers: a handshake (or the open device). */
	vl->ref = vvb_dev_get(VVB_PROBE_MS);
	vl->pid = getpid();
	if (vl->ref) {
		/* its sysfs view first: middleware reads it beside the list */
		vvb_sysfs_device(vl->ref, &vvb_device);
		vl->l[n++] = &vvb_device;
	}
	if (num_devices)
		*num_devices = n;
	return vl->l;
}

void ibv_free_device_list(struct ibv_device **list)
{
	struct vvb_list *vl = vvb_container_of(list, struct vvb_list, l);

	if (!list)
		return;
	if (vl->ref && vl->pid == getpid())
		vvb_dev_put(vl->ref);
	free(vl);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device ? device->name : NULL;
}

int ibv_get_device_index(struct ibv_device *device)
{
	return device == &vvb_device ? 0 : -1;
}

/* The GUID is the GID's interface identifier, as on RoCE. */
static __be64 vvb_guid(const uint8_t gid[VRDMA_GID_LEN])
{
	__be64 g;

	memcpy(&g, gid + 8, sizeof(g));
	return g;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	uint8_t gid[VRDMA_GID_LEN] = { 0 };
	struct vrdma_device *d;

	if (device != &vvb_device)
		return 0;
	d = vvb_dev_get(VVB_PROBE_MS);
	if (!d)
		return 0;
	vrdma_query_gid(d, gid);
	vvb_dev_put(d);
	return vvb_guid(gid);
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct vvb_context *ctx;
	struct ibv_context *c;
	int rc;

	if (device != &vvb_device) {
		errno = ENODEV;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->vdev = vvb_dev_get(VVB_OPEN_MS);
	if (!ctx->vdev) {
		rc = errno;
		goto err_free;
	}
	rc = vrdma_query_gid(ctx->vdev, ctx->gid);
	if (rc)
		goto err_close;
	rc = vrdma_query_device(ctx->vdev, &ctx->dattr);
	if (rc)
		goto err_close;
	pthread_mutex_init(&ctx->lock, NULL);

	c = &ctx->vctx.context;
	c->device = device;
	c->cmd_fd = -1;
	c->async_fd = vrdma_async_fd(ctx->vdev);	/* the device's, shared */
	c->num_comp_vectors = 1;
	pthread_mutex_init(&c->mutex, NULL);
	c->abi_compat = __VERBS_ABI_IS_EXTENDED;
	c->ops.poll_cq = vvb_poll_cq;
	c->ops.req_notify_cq = vvb_req_notify_cq;
	c->ops.post_send = vvb_post_send;
	c->ops.post_recv = vvb_post_recv;
	c->ops.post_srq_recv = vvb_post_srq_recv;
	ctx->vctx.sz = sizeof(ctx->vctx);
	ctx->vctx.query_port = vvb_query_port;
	ctx->vctx.query_device_ex = vvb_query_device_ex;
	ctx->vctx.create_qp_ex = vvb_create_qp_ex;
	ctx->vctx.create_srq_ex = vvb_create_srq_ex;
	return c;

err_close:
	vvb_dev_put(ctx->vdev);
err_free:
	free(ctx);
	errno = rc;
	return NULL;
}

int ibv_close_device(struct ibv_context *context)
{
	struct vvb_context *ctx;

	if (!context)
		return EINVAL;
	ctx = vvb_ctx(context);
	vvb_waiters_stop(ctx);
	vvb_dev_put(ctx->vdev);
	pthread_mutex_destroy(&ctx->lock);
	pthread_mutex_destroy(&context->mutex);
	free(ctx);
	return 0;
}

/*
 * vendor_part_id: 1, or env VRDMA_VERBS_PART_ID.  perftest picks its
 * post path by this number (ibv_wr_* only for devices it knows), so the
 * tests borrow one to run the ibv_qp_ex path too (docs/verbs.md).
 */
static uint32_t vvb_part_id(void)
{
	const char *s = getenv("VRDMA_VERBS_PART_ID");
	char *end;
	unsigned long v;

	if (!s || !*s)
		return 1;
	v = strtoul(s, &end, 0);
	return (*end || v > UINT32_MAX) ? 1 : (uint32_t)v;
}

/* ibv_query_device's answer and the sysfs view's, from libvrdma's. */
void vvb_device_attr(const struct vrdma_device_attr *d,
		     const uint8_t gid[VRDMA_GID_LEN], struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "vrdma-%d", VRDMA_API_VERSION);
	a->node_guid = vvb_guid(gid);
	a->sys_image_guid = a->node_guid;
	a->max_mr_size = d->max_mr_size;
	a->page_size_cap = 4096;
	a->vendor_id = 0x5853;			/* XenSource's PCI vendor ID */
	a->vendor_part_id = vvb_part_id();
	a->hw_ver = 1;
	a->max_qp = (int)d->max_qp;
	a->max_qp_wr = (int)d->max_qp_wr;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN;
	a->max_sge = (int)d->max_sge;
	a->max_sge_rd = (int)d->max_sge;
	a->max_cq = (int)d->max_cq;
	a->max_cqe = (int)d->max_cqe;
	a->max_mr = (int)d->max_mr;
	a->max_pd = (int)d->max_pd;
	/* SRQs: libvrdma's limits are the QP ones (vrdma_create_srq(3)) */
	a->max_srq = (int)d->max_qp;
	a->max_srq_wr = (int)d->max_qp_wr;
	a->max_srq_sge = (int)d->max_sge;
	a->max_qp_rd_atom = (int)d->max_qp_rd_atom;
	a->max_qp_init_rd_atom = (int)d->max_qp_rd_atom;
	a->max_res_rd_atom = (int)(d->max_qp_rd_atom * d->max_qp);
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_pkeys = 1;
	a->phys_port_cnt = 1;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	if (!context || !attr)
		return EINVAL;
	vvb_device_attr(&vvb_ctx(context)->dattr, vvb_ctx(context)->gid, attr);
	return 0;
}

int vvb_query_device_ex(struct ibv_context *c,
			const struct ibv_query_device_ex_input *input,
			struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;

	if (!c || !attr || (input && input->comp_mask))
		return EINVAL;
	if (attr_size < sizeof(a.orig_attr))
		return EINVAL;
	/* Zero is "not supported" for every extended capability. */
	memset(&a, 0, sizeof(a));
	vvb_device_attr(&vvb_ctx(c)->dattr, vvb_ctx(c)->gid, &a.orig_attr);
	a.max_dm_size = 0;
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	if (attr_size > sizeof(a))
		memset((char *)attr + sizeof(a), 0, attr_size - sizeof(a));
	return 0;
}

/* Port 1 as ibv_query_port and the sysfs view report it. */
void vvb_port_attr(const struct vrdma_device_attr *d, struct ibv_port_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->state = IBV_PORT_ACTIVE;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = vvb_ud_mtu(d->max_ud_msg);
	a->gid_tbl_len = 1;
	/* 2^31 at most, as InfiniBand's and rxe's ports say. */
	a->max_msg_sz = (uint32_t)(d->max_mr_size > (1u << 31) ? 1u << 31 : d->max_mr_size);
	a->pkey_tbl_len = 1;
	a->max_vl_num = 1;
	a->active_width = 2;			/* 4x */
	a->active_speed = 32;			/* EDR: 25 Gb/s a lane */
	a->phys_state = 5;			/* LinkUp */
	a->link_layer = IBV_LINK_LAYER_ETHERNET;	/* peers named by GID */
}

int vvb_query_port(struct ibv_context *c, uint8_t port,
		   struct ibv_port_attr *attr, size_t attr_len)
{
	struct ibv_port_attr a;

	if (!c || !attr)
		return EINVAL;
	if (port != VVB_PORT)
		return EINVAL;
	vvb_port_attr(&vvb_ctx(c)->dattr, &a);
	memcpy(attr, &a, attr_len < sizeof(a) ? attr_len : sizeof(a));
	return 0;
}

/* The exported call: binaries without the inline wrapper pass the old,
 * shorter struct (up to and including flags). */
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr)
{
	return vvb_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
			      offsetof(struct ibv_port_attr, port_cap_flags2));
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
		  union ibv_gid *gid)
{
	if (!context || !gid || port_num != VVB_PORT || index != 0) {
		errno = EINVAL;
		return -1;
	}
	memcpy(gid->raw, vvb_ctx(context)->gid, sizeof(gid->raw));
	return 0;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
		      uint32_t gid_index, struct ibv_gid_entry *entry,
		      uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;

	if (!context || !entry || flags || entry_size < sizeof(e))
		return EINVAL;
	if (port_num != VVB_PORT || gid_index != 0)
		return ENODATA;
	memset(&e, 0, sizeof(e));
	memcpy(e.gid.raw, vvb_ctx(context)->gid, sizeof(e.gid.raw));
	e.gid_index = 0;
	e.port_num = VVB_PORT;
	e.gid_type = IBV_GID_TYPE_ROCE_V2;
	memcpy(entry, &e, sizeof(e));
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context,
			     struct ibv_gid_entry *entries, size_t max_entries,
			     uint32_t flags, size_t entry_size)
{
	int rc;

	if (!max_entries)
		return -EINVAL;
	rc = _ibv_query_gid_ex(context, VVB_PORT, 0, entries, flags, entry_size);
	return rc ? -rc : 1;
}

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, int *type)
{
	if (!context || !type || port_num != VVB_PORT || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*type = VVB_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
		   __be16 *pkey)
{
	if (!context || !pkey || port_num != VVB_PORT || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(0xffff);
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	if (!context || port_num != VVB_PORT)
		return -EINVAL;
	return be16toh(pkey) == 0xffff ? 0 : -ENOENT;
}

/*
 * Async events are libvrdma's (vrdma_get_async_event(3)); async_fd is its
 * fd, readable while one is queued.  Blocking unless the program set
 * O_NONBLOCK on it (then EAGAIN), as with rdma-core.  Once DEVICE_FATAL
 * was taken, EIO instead of blocking for ever.  As in rdma-core, a QP or
 * CQ is destroyed only after the events taken on it were acked; its
 * events not taken yet are dropped.  vvb_ev_lock covers taking an event
 * and turning it into verbs objects, so none names an object that a
 * destroy is freeing.
 */
#define VVB_ACK_WAIT_MS	10000	/* a destroy waits this long for acks */

static pthread_mutex_t vvb_ev_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t vvb_ev_cond = PTHREAD_COND_INITIALIZER;

void vvb_events_lock_idle(const unsigned int *taken)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += VVB_ACK_WAIT_MS / 1000;
	pthread_mutex_lock(&vvb_ev_lock);
	while (*taken && pthread_cond_timedwait(&vvb_ev_cond, &vvb_ev_lock, &ts) == 0)
		;
	if (*taken)
		fprintf(stderr, "vrdma verbs: destroying an object with %u async events "
			"not acked (ibv_ack_async_event)\n", *taken);
}

void vvb_events_unlock(void)
{
	pthread_mutex_unlock(&vvb_ev_lock);
}

/* vvb_ev_lock held: the verbs event, counted on its object. */
static int vvb_async_type(const struct vrdma_async_event *ev, struct ibv_async_event *out)
{
	struct vvb_qp *q;
	struct vvb_cq *c;

	memset(out, 0, sizeof(*out));
	switch (ev->type) {
	case VRDMA_EVENT_QP_FATAL:
		out->event_type = IBV_EVENT_QP_FATAL;
		break;
	case VRDMA_EVENT_QP_LAST_WQE_REACHED:
		out->event_type = IBV_EVENT_QP_LAST_WQE_REACHED;
		break;
	case VRDMA_EVENT_CQ_ERR:
		out->event_type = IBV_EVENT_CQ_ERR;
		c = ev->element.cq->cq_context;
		c->events++;
		out->element.cq = &c->ibcq;
		return 0;
	case VRDMA_EVENT_DEVICE_FATAL:
		out->event_type = IBV_EVENT_DEVICE_FATAL;
		return 0;
	default:
		return EPROTO;
	}
	q = ev->element.qp->qp_context;
	q->events++;
	out->element.qp = &q->qpx.qp_base;
	return 0;
}

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct vrdma_async_event ev;
	int fl, rc;

	if (!context || !event) {
		errno = EINVAL;
		return -1;
	}
	fl = fcntl(context->async_fd, F_GETFL);
	for (;;) {
		/* Take one under the lock, wait outside it. */
		pthread_mutex_lock(&vvb_ev_lock);
		rc = vrdma_get_async_event(vvb_ctx(context)->vdev, &ev, 0);
		if (!rc)
			rc = vvb_async_type(&ev, event);
		pthread_mutex_unlock(&vvb_ev_lock);
		if (rc != EAGAIN || (fl >= 0 && (fl & O_NONBLOCK)))
			break;
		rc = vrdma_wait_async_event(vvb_ctx(context)->vdev, 1000);
		if (rc && rc != ETIMEDOUT)
			break;
	}
	if (rc) {
		errno = rc;
		return -1;
	}
	return 0;
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	unsigned int *taken = NULL;

	if (!event)
		return;
	switch (event->event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		taken = &vvb_qp(event->element.qp)->events;
		break;
	case IBV_EVENT_CQ_ERR:
		taken = &vvb_cq(event->element.cq)->events;
		break;
	default:
		return;
	}
	pthread_mutex_lock(&vvb_ev_lock);
	if (*taken)
		(*taken)--;
	pthread_cond_broadcast(&vvb_ev_cond);
	pthread_mutex_unlock(&vvb_ev_lock);
}
