// SPDX-License-Identifier: MIT
/*
 * Asynchronous events (verbs' ibv_get_async_event): a bounded queue the
 * event consumer fills (evt_lock held, or from the frontend's "broken"
 * callback) and an eventfd that is readable while the queue is not empty,
 * so a program can poll() it beside its other fds (each push adds to its
 * count, so an edge-triggered epoll hears every event).  An event names its
 * object; destroying the object first drops its queued events.
 *
 * Who consumes dom0's event ring: anyone who waits (commands, wait_cq,
 * vrdma_get_async_event) and vrdma_poll_cq when it finds nothing, so a
 * program that only polls still sees its events.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "vlib.h"
#include "log.h"
#include "vring.h"

int vlib_async_init(struct vrdma_device *dev)
{
	/* Blocking, so a program's O_NONBLOCK on it says how
	 * vrdma_get_async_event's verbs twin should behave; we only read
	 * it when it holds a count, never block on it. */
	dev->aq_fd = eventfd(0, EFD_CLOEXEC);
	if (dev->aq_fd < 0)
		return -errno;
	pthread_mutex_init(&dev->aq_lock, NULL);
	return 0;
}

void vlib_async_fini(struct vrdma_device *dev)
{
	close(dev->aq_fd);
	pthread_mutex_destroy(&dev->aq_lock);
}

/* aq_lock held: the fd follows the queue (count +1 per push, 0 when
 * empty; the count never nears the eventfd's limit: VLIB_AQ_SIZE). */
static void vlib_async_signal(struct vrdma_device *dev, bool readable)
{
	struct pollfd p = { .fd = dev->aq_fd, .events = POLLIN };
	uint64_t v = 1;
	ssize_t n;

	if (readable)
		n = write(dev->aq_fd, &v, sizeof(v));	/* count + 1 */
	else if (poll(&p, 1, 0) == 1)		/* a program that read it itself */
		n = read(dev->aq_fd, &v, sizeof(v));	/* count -> 0 */
	else
		return;					/* must not make us wait */
	if (n != sizeof(v))
		vlog_err("vrdma: async event fd: %s", strerror(errno));
}

void vlib_async_push(struct vrdma_device *dev, enum vrdma_event_type type, void *obj)
{
	struct vrdma_async_event *ev;

	pthread_mutex_lock(&dev->aq_lock);
	/* The last slot is kept for DEVICE_FATAL, which must get through. */
	if (dev->aq_count >= VLIB_AQ_SIZE ||
	    (dev->aq_count == VLIB_AQ_SIZE - 1 && type != VRDMA_EVENT_DEVICE_FATAL)) {
		dev->aq_dropped++;
		pthread_mutex_unlock(&dev->aq_lock);
		return;
	}
	ev = &dev->aq[(dev->aq_head + dev->aq_count) % VLIB_AQ_SIZE];
	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	if (type == VRDMA_EVENT_CQ_ERR)
		ev->element.cq = obj;
	else if (type != VRDMA_EVENT_DEVICE_FATAL)
		ev->element.qp = obj;
	dev->aq_count++;
	vlib_async_signal(dev, true);
	if (type == VRDMA_EVENT_DEVICE_FATAL)
		__atomic_store_n(&dev->aq_fatal, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&dev->aq_lock);
}

static bool vlib_async_pop(struct vrdma_device *dev, struct vrdma_async_event *ev)
{
	bool got = false;

	pthread_mutex_lock(&dev->aq_lock);
	if (dev->aq_count) {
		*ev = dev->aq[dev->aq_head];
		dev->aq_head = (dev->aq_head + 1) % VLIB_AQ_SIZE;
		if (!--dev->aq_count)
			vlib_async_signal(dev, false);
		got = true;
	}
	pthread_mutex_unlock(&dev->aq_lock);
	return got;
}

/* Drop the queued events of a QP or CQ being destroyed (after the
 * evt_lock barrier: no consumer can queue one for it any more). */
void vlib_async_forget(struct vrdma_device *dev, const void *obj)
{
	unsigned i, n = 0, at;

	pthread_mutex_lock(&dev->aq_lock);
	for (i = 0; i < dev->aq_count; i++) {
		const struct vrdma_async_event *ev = &dev->aq[(dev->aq_head + i) % VLIB_AQ_SIZE];

		if (ev->element.qp == obj && ev->type != VRDMA_EVENT_DEVICE_FATAL)
			continue;
		at = (dev->aq_head + n++) % VLIB_AQ_SIZE;
		if (&dev->aq[at] != ev)
			dev->aq[at] = *ev;
	}
	if (dev->aq_count && !n)
		vlib_async_signal(dev, false);
	dev->aq_count = n;
	pthread_mutex_unlock(&dev->aq_lock);
}

/* Frontend callback, once, the first time the device breaks. */
void vlib_async_broken(void *arg)
{
	vlib_async_push(arg, VRDMA_EVENT_DEVICE_FATAL, NULL);
}

static bool vlib_async_ready(void *arg)
{
	struct vrdma_device *dev = arg;

	return __atomic_load_n(&dev->aq_count, __ATOMIC_ACQUIRE) != 0;
}

/* Until an event is queued (0), the time is up (-ETIMEDOUT) or the
 * device broke and its DEVICE_FATAL is queued too (-EIO). */
static int vlib_async_wait(struct vrdma_device *dev, int timeout_ms)
{
	int rc, spins = 0;

	if (timeout_ms) {
		rc = vfe_wait(&dev->fe, vlib_async_ready, NULL, dev, timeout_ms);
	} else {
		rc = vfe_poll_events(&dev->fe);
		if (rc >= 0)
			rc = vfe_check_backend(&dev->fe);	/* dom0 still there? */
		if (rc >= 0)
			rc = vlib_async_ready(dev) ? 0 : -ETIMEDOUT;
	}
	/* Broken: the callback queues DEVICE_FATAL right after the flag is
	 * set; let it, so that EIO later means "taken already". */
	while (rc == -EIO && !__atomic_load_n(&dev->aq_fatal, __ATOMIC_ACQUIRE) &&
	       spins++ < 1000)
		sched_yield();
	return rc;
}

int vrdma_get_async_event(struct vrdma_device *dev, struct vrdma_async_event *ev,
			  int timeout_ms)
{
	int rc;

	if (!dev || !ev || timeout_ms < 0)
		return EINVAL;
	if (vlib_async_pop(dev, ev))
		return 0;
	rc = vlib_async_wait(dev, timeout_ms);
	if (vlib_async_pop(dev, ev))
		return 0;
	if (rc == -EIO)
		return EIO;
	return timeout_ms ? ETIMEDOUT : EAGAIN;
}

int vrdma_wait_async_event(struct vrdma_device *dev, int timeout_ms)
{
	int rc;

	if (!dev || timeout_ms < 0)
		return EINVAL;
	if (vlib_async_ready(dev))
		return 0;
	rc = vlib_async_wait(dev, timeout_ms);
	if (vlib_async_ready(dev))
		return 0;
	return rc == -EIO ? EIO : ETIMEDOUT;
}

int vrdma_async_fd(struct vrdma_device *dev)
{
	if (!dev) {
		errno = EINVAL;
		return -1;
	}
	return dev->aq_fd;
}

const char *vrdma_event_type_str(enum vrdma_event_type type)
{
	switch (type) {
	case VRDMA_EVENT_QP_FATAL:		return "QP fatal error";
	case VRDMA_EVENT_QP_LAST_WQE_REACHED:	return "last WQE reached";
	case VRDMA_EVENT_CQ_ERR:		return "CQ error";
	case VRDMA_EVENT_DEVICE_FATAL:		return "device fatal error";
	}
	return "unknown event";
}
