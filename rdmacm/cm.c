// SPDX-License-Identifier: MIT
/*
 * vrdma's librdmacm.so.1, for now a placeholder: Debian's librdmacm
 * cannot load beside vrdma's libibverbs (it needs rdma-core's private
 * verbs ABI), and perftest, rping and ucmatose link it.  Every call
 * fails cleanly with EOPNOTSUPP: constructors NULL + errno, int calls
 * -1 + errno as librdmacm does.  A later version maps rdma_cm onto
 * vrdma_listen / vrdma_connect (libvrdma's rdma_cm-shaped calls);
 * the exported set and its version nodes (librdmacm.map) stay.
 */
#include <errno.h>
#include <stddef.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

static int vcm_fail(void)
{
	errno = EOPNOTSUPP;
	return -1;
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	(void)channel;
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
		   void *context, enum rdma_port_space ps)
{
	(void)channel; (void)id; (void)context; (void)ps;
	return vcm_fail();
}

int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
		   struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	(void)id; (void)res; (void)pd; (void)qp_init_attr;
	return vcm_fail();
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	(void)id;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	(void)id;
	return vcm_fail();
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id; (void)addr;
	return vcm_fail();
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
		      struct sockaddr *dst_addr, int timeout_ms)
{
	(void)id; (void)src_addr; (void)dst_addr; (void)timeout_ms;
	return vcm_fail();
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	(void)id; (void)timeout_ms;
	return vcm_fail();
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	(void)id; (void)pd; (void)qp_init_attr;
	return vcm_fail();
}

int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *qp_init_attr)
{
	(void)id; (void)qp_init_attr;
	return vcm_fail();
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	(void)id;
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
		    struct ibv_srq_init_attr *attr)
{
	(void)id; (void)pd; (void)attr;
	return vcm_fail();
}

int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	(void)id; (void)attr;
	return vcm_fail();
}

void rdma_destroy_srq(struct rdma_cm_id *id)
{
	(void)id;
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	(void)id; (void)conn_param;
	return vcm_fail();
}

int rdma_establish(struct rdma_cm_id *id)
{
	(void)id;
	return vcm_fail();
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	(void)id; (void)backlog;
	return vcm_fail();
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	(void)listen; (void)id;
	return vcm_fail();
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	(void)id; (void)conn_param;
	return vcm_fail();
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data,
		uint8_t private_data_len)
{
	(void)id; (void)private_data; (void)private_data_len;
	return vcm_fail();
}

int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
		    uint8_t private_data_len)
{
	(void)id; (void)private_data; (void)private_data_len;
	return vcm_fail();
}

int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	(void)id; (void)event;
	return vcm_fail();
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	(void)id;
	return vcm_fail();
}

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	(void)id; (void)addr; (void)context;
	return vcm_fail();
}

int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	(void)id; (void)mc_join_attr; (void)context;
	return vcm_fail();
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id; (void)addr;
	return vcm_fail();
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	(void)channel; (void)event;
	return vcm_fail();
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	(void)event;
	return vcm_fail();
}

__be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	(void)id;
	return 0;
}

__be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	(void)id;
	return 0;
}

struct ibv_context **rdma_get_devices(int *num_devices)
{
	if (num_devices)
		*num_devices = 0;
	errno = EOPNOTSUPP;
	return NULL;
}

void rdma_free_devices(struct ibv_context **list)
{
	(void)list;
}

int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
		    size_t optlen)
{
	(void)id; (void)level; (void)optname; (void)optval; (void)optlen;
	return vcm_fail();
}

int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	(void)id; (void)channel;
	return vcm_fail();
}

int rdma_getaddrinfo(const char *node, const char *service,
		     const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	(void)node; (void)service; (void)hints;
	if (res)
		*res = NULL;
	return vcm_fail();
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	(void)res;				/* rdma_getaddrinfo() never gives one */
}

int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
		      int *qp_attr_mask)
{
	(void)id; (void)qp_attr; (void)qp_attr_mask;
	return vcm_fail();
}

int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id; (void)ece;
	return vcm_fail();
}

int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id; (void)ece;
	return vcm_fail();
}

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const str[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED]	= "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR]	= "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED]	= "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR]	= "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST]	= "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR]	= "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE]	= "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED]	= "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED]	= "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED]	= "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL]	= "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN]	= "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR]	= "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE]	= "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT]	= "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned int)event >= sizeof(str) / sizeof(str[0]) || !str[event])
		return "UNKNOWN EVENT";
	return str[event];
}
