// SPDX-License-Identifier: MIT
#include "vrdma/vrdma.h"

const char *vrdma_wc_status_str(enum vrdma_wc_status status)
{
	switch (status) {
	case VRDMA_WC_SUCCESS:		return "success";
	case VRDMA_WC_LOC_LEN_ERR:	return "local length error";
	case VRDMA_WC_LOC_QP_OP_ERR:	return "local QP operation error";
	case VRDMA_WC_LOC_PROT_ERR:	return "local protection error";
	case VRDMA_WC_WR_FLUSH_ERR:	return "work request flushed error";
	case VRDMA_WC_REM_INV_REQ_ERR:	return "remote invalid request error";
	case VRDMA_WC_REM_ACCESS_ERR:	return "remote access error";
	case VRDMA_WC_REM_OP_ERR:	return "remote operation error";
	case VRDMA_WC_RETRY_EXC_ERR:	return "transport retry counter exceeded";
	case VRDMA_WC_RNR_RETRY_EXC_ERR: return "RNR retry counter exceeded";
	case VRDMA_WC_FATAL_ERR:	return "fatal error";
	case VRDMA_WC_GENERAL_ERR:	return "general error";
	}
	return "unknown";
}
