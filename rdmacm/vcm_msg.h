/* SPDX-License-Identifier: MIT */
/*
 * The connection handshake vrdma's librdmacm runs over the guests' own IP
 * network (TCP, port = the rdma_cm port: rdma_cm's port space is TCP's).
 * It carries what an IB CM REQ/REP/REJ/RTU/DREQ/DREP would, and dom0
 * binds the QPs when both sides move them to RTR naming each other.
 *
 *   connector                         listener
 *   TCP connect ------------------->  accept        (CONNECT_REQUEST)
 *   REQ {gid, qpn, psn, pdata<=56} ->               rdma_accept: RTR, RTS
 *   (RTR, RTS)         <------------  REP {gid, qpn, psn, pdata<=196}
 *   RTU ---------------------------->               (ESTABLISHED)
 *   ...                                 or  <-----  REJ {status, pdata<=148}
 *   DREQ ---------------------------> (DISCONNECTED) DREP back, close
 *   (DISCONNECTED) <----------------  DREP          or EOF: DISCONNECTED
 *
 * UD ids (RDMA_PS_UDP, RDMA_PS_IB with a UD QP) run the IB CM's SIDR
 * exchange instead, one question and one answer, then both sides close:
 *
 *   SIDR_REQ {gid, pdata<=180} ------>               (CONNECT_REQUEST)
 *   (ESTABLISHED, param.ud) <---------  SIDR_REP {gid, qpn, qkey, status,
 *                                                 pdata<=136}
 *
 * Every message is one struct vcm_msg, 256 bytes, integers big-endian.
 * A message with a bad magic or version, or an unknown type, ends the
 * connection (CONNECT_ERROR, status -EPROTO).
 */
#ifndef VCM_MSG_H
#define VCM_MSG_H

#include <assert.h>
#include <stdint.h>

#define VCM_MAGIC		0x56434d31u	/* "VCM1" */
#define VCM_VERSION		1

/* Private data limits of the IB CM messages, less rdma_cm's header
 * (a SIDR REP carries none). */
#define VCM_REQ_PDATA		56
#define VCM_REP_PDATA		196
#define VCM_REJ_PDATA		148
#define VCM_SIDR_REQ_PDATA	180
#define VCM_SIDR_REP_PDATA	136
#define VCM_MAX_PDATA		196

/* SIDR_REP status: IB_SIDR_SUCCESS, IB_SIDR_REJECT (rdma_reject). */
#define VCM_SIDR_SUCCESS	0
#define VCM_SIDR_REJECT		2

enum vcm_msg_type {
	VCM_MSG_REQ	= 1,
	VCM_MSG_REP	= 2,
	VCM_MSG_RTU	= 3,
	VCM_MSG_REJ	= 4,
	VCM_MSG_DREQ	= 5,
	VCM_MSG_DREP	= 6,
	VCM_MSG_SIDR_REQ = 7,
	VCM_MSG_SIDR_REP = 8,
};

struct vcm_msg {
	uint32_t magic;			/* VCM_MAGIC */
	uint8_t version;		/* VCM_VERSION */
	uint8_t type;			/* enum vcm_msg_type */
	uint8_t pdata_len;
	uint8_t responder_resources;	/* the sender's */
	uint8_t initiator_depth;	/* the sender's */
	uint8_t flow_control;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t srq;
	uint8_t reserved0[3];		/* 0 */
	uint32_t qpn;			/* 24 bits: the sender's QP */
	uint32_t psn;			/* 24 bits: its first send PSN */
	int32_t status;			/* REJ: the reason (event status);
					 * SIDR_REP: VCM_SIDR_* */
	uint8_t gid[16];		/* the sender's device GID */
	uint8_t pdata[VCM_MAX_PDATA];
	uint32_t qkey;			/* SIDR_REP: the QP's Q_Key */
	uint8_t reserved1[12];		/* 0 */
};

static_assert(sizeof(struct vcm_msg) == 256, "vcm_msg is 256 bytes");

#endif /* VCM_MSG_H */
