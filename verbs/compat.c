// SPDX-License-Identifier: MIT
/*
 * Strings, fork support, rates, and the calls vrdma refuses: address
 * handles (UD), multicast.  Each refusal is the documented verbs
 * failure: NULL + errno or the errno value, EOPNOTSUPP.
 */
#include <errno.h>
#include <stddef.h>

#include "vvb.h"

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	static const char *const str[] = {
		[IBV_WC_SUCCESS]		= "success",
		[IBV_WC_LOC_LEN_ERR]		= "local length error",
		[IBV_WC_LOC_QP_OP_ERR]		= "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR]		= "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR]		= "local protection error",
		[IBV_WC_WR_FLUSH_ERR]		= "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR]		= "memory management operation error",
		[IBV_WC_BAD_RESP_ERR]		= "bad response error",
		[IBV_WC_LOC_ACCESS_ERR]		= "local access error",
		[IBV_WC_REM_INV_REQ_ERR]	= "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR]		= "remote access error",
		[IBV_WC_REM_OP_ERR]		= "remote operation error",
		[IBV_WC_RETRY_EXC_ERR]		= "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR]	= "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR]	= "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR]	= "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR]		= "aborted error",
		[IBV_WC_INV_EECN_ERR]		= "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR]	= "invalid EE context state",
		[IBV_WC_FATAL_ERR]		= "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR]	= "response timeout error",
		[IBV_WC_GENERAL_ERR]		= "general error",
		[IBV_WC_TM_ERR]			= "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE]	= "TM software rendezvous",
	};

	if ((unsigned int)status >= sizeof(str) / sizeof(str[0]) || !str[status])
		return "unknown";
	return str[status];
}

const char *ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const str[] = {
		[IBV_EVENT_CQ_ERR]		= "CQ error",
		[IBV_EVENT_QP_FATAL]		= "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR]		= "invalid request local work queue error",
		[IBV_EVENT_QP_ACCESS_ERR]	= "local access violation work queue error",
		[IBV_EVENT_COMM_EST]		= "communication established",
		[IBV_EVENT_SQ_DRAINED]		= "send queue drained",
		[IBV_EVENT_PATH_MIG]		= "path migrated",
		[IBV_EVENT_PATH_MIG_ERR]	= "path migration request error",
		[IBV_EVENT_DEVICE_FATAL]	= "local catastrophic error",
		[IBV_EVENT_PORT_ACTIVE]		= "port active",
		[IBV_EVENT_PORT_ERR]		= "port error",
		[IBV_EVENT_LID_CHANGE]		= "LID change",
		[IBV_EVENT_PKEY_CHANGE]		= "P_Key change",
		[IBV_EVENT_SM_CHANGE]		= "SM change",
		[IBV_EVENT_SRQ_ERR]		= "SRQ catastrophic error",
		[IBV_EVENT_SRQ_LIMIT_REACHED]	= "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED]	= "last WQE reached",
		[IBV_EVENT_CLIENT_REREGISTER]	= "client reregistration",
		[IBV_EVENT_GID_CHANGE]		= "GID table change",
		[IBV_EVENT_WQ_FATAL]		= "WQ fatal",
	};

	if ((unsigned int)event >= sizeof(str) / sizeof(str[0]) || !str[event])
		return "unknown";
	return str[event];
}

const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	switch (node_type) {
	case IBV_NODE_CA:		return "InfiniBand channel adapter";
	case IBV_NODE_SWITCH:		return "InfiniBand switch";
	case IBV_NODE_ROUTER:		return "InfiniBand router";
	case IBV_NODE_RNIC:		return "iWARP NIC";
	case IBV_NODE_USNIC:		return "usNIC";
	case IBV_NODE_USNIC_UDP:	return "usNIC UDP";
	case IBV_NODE_UNSPECIFIED:	return "unspecified";
	default:			return "unknown";
	}
}

const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	switch (port_state) {
	case IBV_PORT_NOP:		return "PORT_NOP";
	case IBV_PORT_DOWN:		return "PORT_DOWN";
	case IBV_PORT_INIT:		return "PORT_INIT";
	case IBV_PORT_ARMED:		return "PORT_ARMED";
	case IBV_PORT_ACTIVE:		return "PORT_ACTIVE";
	case IBV_PORT_ACTIVE_DEFER:	return "PORT_ACTIVE_DEFER";
	default:			return "invalid state";
	}
}

/* ---- fork: registration never pins pages in a way fork breaks ---- */

int ibv_fork_init(void)
{
	return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size)
{
	(void)base; (void)size;
	return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
	(void)base; (void)size;
	return 0;
}

/* ---- rates ---- */

int ibv_rate_to_mult(enum ibv_rate rate)
{
	switch (rate) {
	case IBV_RATE_2_5_GBPS:	return 1;
	case IBV_RATE_5_GBPS:	return 2;
	case IBV_RATE_10_GBPS:	return 4;
	case IBV_RATE_20_GBPS:	return 8;
	case IBV_RATE_30_GBPS:	return 12;
	case IBV_RATE_40_GBPS:	return 16;
	case IBV_RATE_60_GBPS:	return 24;
	case IBV_RATE_80_GBPS:	return 32;
	case IBV_RATE_120_GBPS:	return 48;
	default:		return -1;
	}
}

enum ibv_rate mult_to_ibv_rate(int mult)
{
	switch (mult) {
	case 1:		return IBV_RATE_2_5_GBPS;
	case 2:		return IBV_RATE_5_GBPS;
	case 4:		return IBV_RATE_10_GBPS;
	case 8:		return IBV_RATE_20_GBPS;
	case 12:	return IBV_RATE_30_GBPS;
	case 16:	return IBV_RATE_40_GBPS;
	case 24:	return IBV_RATE_60_GBPS;
	case 32:	return IBV_RATE_80_GBPS;
	case 48:	return IBV_RATE_120_GBPS;
	default:	return IBV_RATE_MAX;
	}
}

/* ---- multicast: UD only ---- */

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp; (void)gid; (void)lid;
	return EOPNOTSUPP;
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp; (void)gid; (void)lid;
	return EOPNOTSUPP;
}
