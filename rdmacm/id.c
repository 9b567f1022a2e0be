// SPDX-License-Identifier: MIT
/*
 * rdma_cm ids: create, destroy, migrate, options, and the address side:
 * rdma_bind_addr / rdma_listen are a TCP socket on the same port (rdma_cm's
 * port space is TCP's here), rdma_resolve_addr binds the id to the vrdma
 * device and finds the source address the way the IP stack routes.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vcm.h"

struct vcm_id *vcm_id_alloc(struct vcm_channel *ch, void *context,
			    enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct vcm_id *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->id.channel = ch ? &ch->ch : NULL;
	v->id.context = context;
	v->id.ps = ps;
	v->id.qp_type = qpt;
	v->fd = -1;
	v->afonly = -1;
	v->state = VCM_IDLE;
	v->retry_count = 7;
	v->rnr_retry_count = 7;
	v->psn = (uint32_t)random() & 0xffffff;
	return v;
}

/* vcm.lock held: the engine sees it from now on. */
void vcm_id_link_locked(struct vcm_id *v)
{
	v->serial = ++vcm.serial;
	v->next = vcm.ids;
	vcm.ids = v;
	vcm_engine_wake_locked();
}

void vcm_id_unlink_locked(struct vcm_id *v)
{
	struct vcm_id **pp;

	for (pp = &vcm.ids; *pp; pp = &(*pp)->next) {
		if (*pp == v) {
			*pp = v->next;
			break;
		}
	}
}

/* An id the program never saw (a child nobody got): gone at once. */
void vcm_id_reap_locked(struct vcm_id *v)
{
	vcm_id_unlink_locked(v);
	vcm_close_locked(v, VCM_CLOSED);
	vcm_dev_put(v);
	free(v);
}

/*
 * The kernel's rule: TCP ids are RC, UDP ids UD, IB ids what the caller
 * asks (rdma_create_ep's ai_qp_type); IPoIB's Q_Key and multicast have
 * no meaning on vrdma.  No channel: a synchronous id with its own.
 */
int vcm_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id,
		  void *context, enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct rdma_event_channel *own = NULL;
	struct vcm_id *v;

	if (!id)
		return EINVAL;
	if (ps == RDMA_PS_TCP)
		qpt = IBV_QPT_RC;
	else if (ps == RDMA_PS_UDP)
		qpt = IBV_QPT_UD;
	else if (ps == RDMA_PS_IB)
		qpt = qpt == IBV_QPT_UD ? IBV_QPT_UD : IBV_QPT_RC;
	else
		return EOPNOTSUPP;
	if (!ch) {
		own = rdma_create_event_channel();
		if (!own)
			return errno;
		ch = own;
	}
	v = vcm_id_alloc(vcm_container_of(ch, struct vcm_channel, ch), context, ps, qpt);
	if (!v) {
		if (own)
			rdma_destroy_event_channel(own);
		return ENOMEM;
	}
	v->sync = own != NULL;
	pthread_mutex_lock(&vcm.lock);
	vcm_id_link_locked(v);
	pthread_mutex_unlock(&vcm.lock);
	*id = &v->id;
	return 0;
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
		   void *context, enum rdma_port_space ps)
{
	int rc = vcm_create_id(channel, id, context, ps,
			       ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC);

	return rc ? vcm_fail(rc) : 0;
}

/*
 * As librdmacm: queued events go, given-out ones must be acked first
 * (bounded: after VCM_DESTROY_MS the last ack frees it).  The QP is the
 * program's (rdma_destroy_qp); a connection ends (the peer gets
 * DISCONNECTED), a request not answered is rejected.
 */
int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct rdma_event_channel *own;
	struct vcm_id *v;
	struct vcm_msg m;

	if (!id)
		return vcm_fail(EINVAL);
	v = vcm_id_of(id);
	vcm_sync_ack(v);
	pthread_mutex_lock(&vcm.lock);
	vcm_event_drop_locked(v);
	if (v->state == VCM_REQ_RCVD && vcm_is_ud(v)) {
		vcm_ud_refuse_locked(v, NULL, 0);
	} else if (v->state == VCM_REQ_RCVD) {
		vcm_msg_init(&m, VCM_MSG_REJ);
		m.status = (int32_t)htobe32(VCM_REJ_CONSUMER);
		vcm_msg_send(v->fd, &m);
	}
	vcm_close_locked(v, VCM_CLOSED);
	vcm_id_unlink_locked(v);
	vcm_wait_acks_locked(v);
	own = v->sync ? v->id.channel : NULL;
	pthread_mutex_unlock(&vcm.lock);

	vcm_dev_put(v);
	free(v->id.route.path_rec);
	v->id.route.path_rec = NULL;
	free(v->ep_attr);
	v->ep_attr = NULL;

	pthread_mutex_lock(&vcm.lock);
	if (v->acked == v->delivered)
		free(v);
	else
		v->zombie = 1;			/* rdma_ack_cm_event frees it */
	pthread_mutex_unlock(&vcm.lock);
	/* its own channel goes last: the engine may stop with it */
	if (own)
		rdma_destroy_event_channel(own);
	return 0;
}

/*
 * To @channel, or to a channel of its own (NULL: the id becomes
 * synchronous), as librdmacm; a synchronous id's event is acked and its
 * own channel goes.
 */
int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct rdma_event_channel *own = NULL, *old;
	struct vcm_id *v;

	if (!id)
		return vcm_fail(EINVAL);
	v = vcm_id_of(id);
	if (!channel && v->sync)
		return vcm_fail(EINVAL);
	if (!channel) {
		own = rdma_create_event_channel();
		if (!own)
			return -1;
		channel = own;
	}
	vcm_sync_ack(v);
	pthread_mutex_lock(&vcm.lock);
	old = v->sync ? v->id.channel : NULL;
	vcm_event_move_locked(v, vcm_container_of(channel, struct vcm_channel, ch));
	v->sync = own != NULL;
	/* events given out on the old channel are finished there first */
	vcm_wait_acks_locked(v);
	pthread_mutex_unlock(&vcm.lock);
	if (old)
		rdma_destroy_event_channel(old);
	return 0;
}

int vcm_addr_family_ok(const struct sockaddr *sa)
{
	return sa && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6);
}

socklen_t vcm_addr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

static int vcm_addr_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/* A TCP socket for an id: non-blocking, close-on-exec, reusable port. */
int vcm_socket(int family, int afonly)
{
	int fd, on = 1;

	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* perftest listens again on the port its first connection uses */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (family == AF_INET6 && afonly >= 0)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &afonly, sizeof(afonly));
	return fd;
}

/* vcm.lock held. */
static int vcm_bind_locked(struct vcm_id *v, const struct sockaddr *addr)
{
	socklen_t len;
	int fd, rc;

	fd = vcm_socket(addr->sa_family, v->afonly);
	if (fd < 0)
		return errno;
	if (bind(fd, addr, vcm_addr_len(addr)) < 0) {
		rc = errno;
		close(fd);
		return rc;
	}
	len = sizeof(v->id.route.addr.src_storage);
	getsockname(fd, &v->id.route.addr.src_addr, &len);
	v->fd = fd;
	v->bound = 1;
	v->state = VCM_BOUND;
	return 0;
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct vcm_id *v;
	int rc;

	if (!id || !addr)
		return vcm_fail(EINVAL);
	if (!vcm_addr_family_ok(addr))
		return vcm_fail(EAFNOSUPPORT);
	v = vcm_id_of(id);
	/* A given address names the device: every guest IP is on vrdma. */
	if (!vcm_addr_any(addr)) {
		rc = vcm_dev_get(v);
		if (rc)
			return vcm_fail(rc);
	}
	pthread_mutex_lock(&vcm.lock);
	rc = v->state == VCM_IDLE ? vcm_bind_locked(v, addr) : EINVAL;
	pthread_mutex_unlock(&vcm.lock);
	return rc ? vcm_fail(rc) : 0;
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct sockaddr_in any = { .sin_family = AF_INET };
	struct vcm_id *v;
	int rc;

	if (!id)
		return vcm_fail(EINVAL);
	v = vcm_id_of(id);
	/* The engine makes children on the listener's device reference. */
	rc = vcm_dev_get(v);
	if (rc)
		return vcm_fail(rc);
	pthread_mutex_lock(&vcm.lock);
	if (v->state == VCM_IDLE)
		rc = vcm_bind_locked(v, (struct sockaddr *)&any);
	else if (v->state != VCM_BOUND)
		rc = EINVAL;
	if (!rc && listen(v->fd, backlog > 0 ? backlog : SOMAXCONN) < 0)
		rc = errno;
	if (!rc) {
		v->state = VCM_LISTEN;
		vcm_engine_wake_locked();
	}
	pthread_mutex_unlock(&vcm.lock);
	return rc ? vcm_fail(rc) : 0;
}

/* The source address the IP stack would use towards @dst. */
static int vcm_route_src(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	int fd, rc = 0;

	fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (connect(fd, dst, vcm_addr_len(dst)) < 0 ||
	    getsockname(fd, (struct sockaddr *)src, &len) < 0)
		rc = errno;
	close(fd);
	if (!rc)
		((struct sockaddr_in *)src)->sin_port = 0;	/* same offset in v6 */
	return rc;
}

/*
 * Checks @dst, binds @id to the vrdma device and queues ADDR_RESOLVED;
 * an address the stack cannot route to, or no device, is ADDR_ERROR.
 */
int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
		      struct sockaddr *dst_addr, int timeout_ms)
{
	struct sockaddr_storage src;
	struct vcm_event *e;
	struct vcm_id *v;
	int rc;

	(void)timeout_ms;			/* answered at once */
	if (!id || !dst_addr)
		return vcm_fail(EINVAL);
	if (!vcm_addr_family_ok(dst_addr) || (src_addr && !vcm_addr_family_ok(src_addr)))
		return vcm_fail(EAFNOSUPPORT);
	v = vcm_id_of(id);
	if (src_addr && src_addr->sa_family != dst_addr->sa_family)
		return vcm_fail(EINVAL);
	e = vcm_event_new(v, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	if (!e)
		return vcm_fail(ENOMEM);
	rc = vcm_route_src(dst_addr, &src);
	if (!rc)
		rc = vcm_dev_get(v);
	pthread_mutex_lock(&vcm.lock);
	if (v->state != VCM_IDLE && v->state != VCM_BOUND &&
	    v->state != VCM_ADDR_RESOLVED) {
		pthread_mutex_unlock(&vcm.lock);
		free(e);
		return vcm_fail(EINVAL);
	}
	if (!rc && v->state == VCM_IDLE && src_addr)
		rc = vcm_bind_locked(v, src_addr);
	if (rc) {
		e->ev.event = RDMA_CM_EVENT_ADDR_ERROR;
		e->ev.status = -rc;
	} else {
		if (v->state != VCM_BOUND)
			memcpy(&v->id.route.addr.src_storage, &src, sizeof(src));
		memset(&v->id.route.addr.dst_storage, 0, sizeof(v->id.route.addr.dst_storage));
		memcpy(&v->id.route.addr.dst_storage, dst_addr, vcm_addr_len(dst_addr));
		v->state = VCM_ADDR_RESOLVED;
	}
	vcm_event_queue_locked(e);
	pthread_mutex_unlock(&vcm.lock);
	rc = vcm_complete(v);
	return rc ? vcm_fail(rc) : 0;
}

/* One path record, as librdmacm gives RoCE ids; the peer's GID comes
 * with the handshake. */
int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct ibv_sa_path_rec *p = NULL;
	struct vcm_event *e;
	struct vcm_id *v;
	int rc;

	(void)timeout_ms;
	if (!id)
		return vcm_fail(EINVAL);
	v = vcm_id_of(id);
	e = vcm_event_new(v, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	if (!id->route.path_rec)
		p = calloc(1, sizeof(*p));
	if (!e || (!id->route.path_rec && !p)) {
		free(e);
		free(p);
		return vcm_fail(ENOMEM);
	}
	pthread_mutex_lock(&vcm.lock);
	if (v->state != VCM_ADDR_RESOLVED && v->state != VCM_ROUTE_RESOLVED) {
		pthread_mutex_unlock(&vcm.lock);
		free(e);
		free(p);
		return vcm_fail(EINVAL);
	}
	if (p) {
		p->sgid = id->route.addr.addr.ibaddr.sgid;
		p->pkey = htobe16(0xffff);
		p->mtu = IBV_MTU_4096;
		p->hop_limit = VCM_HOP_LIMIT;
		p->reversible = htobe32(0x80000000);
		p->numb_path = 1;
		id->route.path_rec = p;
		id->route.num_paths = 1;
	}
	v->state = VCM_ROUTE_RESOLVED;
	vcm_event_queue_locked(e);
	pthread_mutex_unlock(&vcm.lock);
	rc = vcm_complete(v);
	return rc ? vcm_fail(rc) : 0;
}

static __be16 vcm_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_port;
	if (sa->sa_family == AF_INET6)
		return ((const struct sockaddr_in6 *)sa)->sin6_port;
	return 0;
}

__be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return id ? vcm_port(&id->route.addr.src_addr) : 0;
}

__be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return id ? vcm_port(&id->route.addr.dst_addr) : 0;
}

/* Options that cannot apply to vrdma (TOS, ACK timeout, IB paths) are
 * accepted and ignored; unknown ones fail ENOSYS as the kernel's. */
int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
		    size_t optlen)
{
	struct vcm_id *v;

	if (!id || !optval)
		return vcm_fail(EINVAL);
	v = vcm_id_of(id);
	if (level == RDMA_OPTION_ID) {
		switch (optname) {
		case RDMA_OPTION_ID_TOS:
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			return optlen == sizeof(uint8_t) ? 0 : vcm_fail(EINVAL);
		case RDMA_OPTION_ID_REUSEADDR:
			/* always on: perftest relistens on its port */
			return optlen == sizeof(int) ? 0 : vcm_fail(EINVAL);
		case RDMA_OPTION_ID_AFONLY:
			if (optlen != sizeof(int))
				return vcm_fail(EINVAL);
			pthread_mutex_lock(&vcm.lock);
			v->afonly = *(int *)optval ? 1 : 0;
			pthread_mutex_unlock(&vcm.lock);
			return 0;
		}
	} else if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH) {
		return 0;
	}
	return vcm_fail(ENOSYS);
}
