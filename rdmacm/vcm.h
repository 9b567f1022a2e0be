/* SPDX-License-Identifier: MIT */
/*
 * vrdma's librdmacm.so.1: rdma_cm over a TCP handshake (vcm_msg.h) and
 * our libibverbs.  Internal header.
 *
 * Objects: a vcm_id wraps the rdma_cm_id handed to the program (first
 * field, converted back with vcm_id_of); a vcm_channel wraps the
 * rdma_event_channel, whose fd is an eventfd counting queued events.
 * One engine thread per process (engine.c) polls every id's socket,
 * runs the handshake and queues events; it runs while a channel exists.
 *
 * A synchronous id (rdma_create_id with no channel, rdma_create_ep) has
 * a channel of its own (sync.c): each call that starts an operation
 * waits there for its event and leaves it in id->event, acked by the
 * next such call or rdma_destroy_id, as librdmacm does.  UD ids (ud.c)
 * learn the peer's QP number and Q_Key through a SIDR exchange.
 *
 * Locks: vcm.lock guards every id's state, socket and event counts, the
 * channels' queues and the engine's flags; vcm.cond is signalled on acks
 * and engine exit.  It is never held across a QP modify or a device open
 * (vcm.dev_lock serialises those: device.c).  Errors inside are 0 or a
 * positive errno value; the public edge turns them into -1 + errno.
 */
#ifndef VCM_H
#define VCM_H

#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stddef.h>
#include <stdint.h>

#include "vcm_msg.h"

#define vcm_container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))

/* Time limits (ms): every wait is bounded. */
#define VCM_CONNECT_MS		10000	/* TCP connect */
#define VCM_HELLO_MS		10000	/* accepted socket -> its REQ */
#define VCM_REPLY_MS		30000	/* REQ -> REP/REJ, REP -> RTU */
#define VCM_DREP_MS		2000	/* DREQ -> DREP */
#define VCM_DESTROY_MS		10000	/* destroy_id waiting for acks */
#define VCM_SEND_MS		1000	/* one message into the socket */
#define VCM_REFUSED_MS		1000	/* refused connects tried again this long */
#define VCM_RETRY_MS		50	/* ... this often */

#define VCM_PORT		1	/* the device's port */
#define VCM_REJ_CONSUMER	28	/* IB_CM_REJ_CONSUMER_DEFINED */
#define VCM_MIN_RNR_TIMER	12	/* as the kernel's rdma_cm */
#define VCM_ACK_TIMEOUT		14
#define VCM_HOP_LIMIT		64

enum vcm_state {
	VCM_IDLE,
	VCM_BOUND,		/* socket bound (rdma_bind_addr) */
	VCM_LISTEN,
	VCM_ADDR_RESOLVED,
	VCM_ROUTE_RESOLVED,
	VCM_CONNECT_WAIT,	/* refused: trying again shortly */
	VCM_CONNECTING,		/* TCP connect under way */
	VCM_REQ_SENT,		/* waiting for REP / REJ */
	VCM_REP_RCVD,		/* REP in, RTU not sent yet */
	VCM_REQ_WAIT,		/* accepted socket, REQ not read yet */
	VCM_REQ_RCVD,		/* CONNECT_REQUEST queued: accept or reject */
	VCM_REP_SENT,		/* waiting for RTU */
	VCM_CONNECTED,
	VCM_DISCONNECTING,	/* DREQ sent, waiting for DREP */
	VCM_CLOSED,		/* rejected, failed or disconnected */
};

struct vcm_channel;

/* What the peer said in its REQ or REP. */
struct vcm_peer {
	uint8_t gid[16];
	uint32_t qpn;
	uint32_t psn;
	uint32_t qkey;			/* SIDR_REP */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t srq;
	uint8_t pdata_len;
	uint8_t pdata[VCM_MAX_PDATA];
};

struct vcm_id {
	struct rdma_cm_id id;		/* first: the program's pointer */
	uint64_t serial;		/* names it to the engine */
	struct vcm_id *next;		/* vcm.ids */
	enum vcm_state state;
	int fd;				/* TCP socket or -1 */
	uint64_t deadline;		/* ms (vcm_now) of the state's limit, 0: none */
	int has_dev;			/* holds a device reference */
	int afonly;			/* RDMA_OPTION_ID_AFONLY, -1 unset */
	int bound;			/* route.addr.src is the program's */
	int sync;			/* owns its channel: sync.c */
	struct ibv_qp_init_attr *ep_attr; /* rdma_create_ep's, for rdma_get_request */
	uint64_t connect_until;		/* rdma_connect's TCP limit */
	uint64_t refused_until;		/* retry refused connects until */
	int disc_queued;		/* its DISCONNECTED is queued */
	uint64_t listen_serial;		/* a child: its listener */
	struct vcm_msg out;		/* the REQ, sent once connected */

	/* handshake (vcm.lock) */
	struct vcm_msg in;		/* the message being read */
	size_t in_len;
	struct vcm_peer peer;
	int peer_known;
	uint32_t psn;			/* ours */
	uint32_t qpn;			/* ours, when the program made the QP */
	uint8_t responder_resources;	/* ours */
	uint8_t initiator_depth;
	uint8_t retry_count;
	uint8_t rnr_retry_count;

	/* events whose acks it waits for (vcm.lock) */
	unsigned int delivered;
	unsigned int acked;
	int zombie;			/* destroyed: the last ack frees it */

	/* CQs rdma_create_qp made for it */
	int own_cqs;
};

struct vcm_event {
	struct rdma_cm_event ev;	/* first: the program's pointer */
	struct vcm_id *owner;		/* counts its ack (listener for a request) */
	struct vcm_event *next;
	uint8_t pdata[VCM_MAX_PDATA];
};

struct vcm_channel {
	struct rdma_event_channel ch;	/* fd: eventfd, one count per event */
	struct vcm_channel *next;	/* vcm.channels */
	struct vcm_event *head, *tail;	/* queued, not delivered yet */
};

struct vcm_global {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct vcm_id *ids;
	struct vcm_channel *channels;
	uint64_t serial;

	/* engine (lock) */
	pthread_t thread;
	int running;
	int stop;
	int wake_fd;			/* eventfd: rebuild the poll set */

	/* the process's device (dev_lock) */
	pthread_mutex_t dev_lock;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	unsigned int dev_refs;
	union ibv_gid gid;
	uint8_t max_rd_atom;
};

extern struct vcm_global vcm;

static inline struct vcm_id *vcm_id_of(struct rdma_cm_id *id)
{
	return vcm_container_of(id, struct vcm_id, id);
}

static inline int vcm_fail(int err)
{
	errno = err;
	return -1;
}

uint64_t vcm_now(void);

/* device.c */
int vcm_dev_open(void);
int vcm_dev_get(struct vcm_id *v);
void vcm_dev_put(struct vcm_id *v);

/* channel.c (vcm.lock held where named "_locked") */
struct vcm_event *vcm_event_new(struct vcm_id *v, enum rdma_cm_event_type type, int status);
void vcm_event_queue_locked(struct vcm_event *e);
void vcm_event_drop_locked(struct vcm_id *v);
void vcm_event_move_locked(struct vcm_id *v, struct vcm_channel *to);
int vcm_wait_acks_locked(struct vcm_id *v);

/* engine.c */
int vcm_engine_start_locked(void);
void vcm_engine_stop(void);
void vcm_engine_wake_locked(void);
void vcm_sock_tune(int fd);

/* msg.c (vcm.lock held) */
void vcm_msg_init(struct vcm_msg *m, enum vcm_msg_type type);
int vcm_msg_send(int fd, const struct vcm_msg *m);
int vcm_msg_read(struct vcm_id *v);
int vcm_msg_check(const struct vcm_msg *m);
void vcm_peer_from_msg(struct vcm_peer *p, const struct vcm_msg *m);
void vcm_close_locked(struct vcm_id *v, enum vcm_state state);
void vcm_conn_param(struct vcm_id *v, struct vcm_event *e);

/* id.c */
struct vcm_id *vcm_id_alloc(struct vcm_channel *ch, void *context,
			    enum rdma_port_space ps, enum ibv_qp_type qpt);
int vcm_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id,
		  void *context, enum rdma_port_space ps, enum ibv_qp_type qpt);
void vcm_id_link_locked(struct vcm_id *v);
void vcm_id_unlink_locked(struct vcm_id *v);
void vcm_id_reap_locked(struct vcm_id *v);
int vcm_socket(int family, int afonly);
socklen_t vcm_addr_len(const struct sockaddr *sa);
int vcm_addr_family_ok(const struct sockaddr *sa);

/* qp.c */
int vcm_qp_connect(struct vcm_id *v);
int vcm_qp_error(struct vcm_id *v);

/* conn.c, vcm.lock held */
int vcm_connect_start_locked(struct vcm_id *v);
void vcm_connect_failed_locked(struct vcm_id *v, int err);

/* engine.c: the handshake's reactions, vcm.lock held */
void vcm_fail_connect_locked(struct vcm_id *v, enum rdma_cm_event_type type, int status);

/* sync.c: synchronous ids; vcm.lock not held */
int vcm_complete(struct vcm_id *v);
void vcm_sync_ack(struct vcm_id *v);
int vcm_sync_request(struct vcm_event *e);

/* ud.c: UD ids, SIDR (vcm.lock held where named "_locked") */
static inline int vcm_is_ud(const struct vcm_id *v)
{
	return v->id.qp_type == IBV_QPT_UD;
}
int vcm_ud_qp_attr(struct ibv_qp_attr *a, int *mask);
int vcm_ud_fence(struct vcm_id *v);
int vcm_ud_connect_locked(struct vcm_id *v, const struct rdma_conn_param *p);
int vcm_ud_accept(struct vcm_id *v, const struct rdma_conn_param *p);
void vcm_ud_refuse_locked(struct vcm_id *v, const void *pdata, uint8_t len);
void vcm_ud_request(struct vcm_id *c, struct vcm_event *e);
void vcm_ud_on_reply(struct vcm_id *v, const struct vcm_msg *m, int rc);

#endif /* VCM_H */
