// SPDX-License-Identifier: MIT
/* Active side of a connection: CONNECT, then CONNECTED or REJECTED. */
#include <errno.h>
#include <string.h>

#include "vlib.h"

static int vlib_reject_errno(uint16_t status)
{
	switch (status) {
	case VRDMA_CS_NOENT:
	case VRDMA_CS_REFUSED:
		return -ECONNREFUSED;
	case VRDMA_CS_UNREACH:
		return -EHOSTUNREACH;
	case VRDMA_CS_TIMEDOUT:
		return -ETIMEDOUT;
	default:
		return -vfe_cmd_status_errno(status);
	}
}

static bool vlib_conn_ready(void *arg)
{
	struct vlib_qp *q = arg;

	return __atomic_load_n(&q->conn_done, __ATOMIC_ACQUIRE) != 0;
}

static int vlib_connect(struct vlib_qp *q, struct vrdma_req *req,
			void *peer_data, size_t *peer_data_len, int timeout_ms)
{
	struct vrdma_device *dev = q->pub.device;
	int64_t deadline = vplat_now_ms() + timeout_ms;
	enum vrdma_qp_state st = VRDMA_QPS_RESET;
	int64_t left;
	size_t n;
	int rc;

	if (!__atomic_compare_exchange_n(&q->pub.state, &st, VRDMA_QPS_CONNECTING, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return -EINVAL;
	__atomic_store_n(&q->conn_done, 0, __ATOMIC_RELEASE);
	req->handle = q->pub.handle;
	rc = vfe_cmd(&dev->fe, req, NULL);
	if (rc) {
		__atomic_store_n(&q->pub.state, VRDMA_QPS_RESET, __ATOMIC_RELEASE);
		/* A refusal may come straight back as the command's status. */
		if (rc == -ENOENT)
			rc = -ECONNREFUSED;
		return rc;
	}
	left = deadline - vplat_now_ms();
	rc = vfe_wait(&dev->fe, vlib_conn_ready, NULL, q, left > 0 ? (int)left : 0);
	if (rc) {
		/* The attempt may still complete in dom0: the QP is unusable,
		 * as a verbs QP after a failed connect.  Destroy it. */
		st = VRDMA_QPS_CONNECTING;
		if (__atomic_compare_exchange_n(&q->pub.state, &st, VRDMA_QPS_ERR, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) && q->srq)
			vlib_async_push(dev, VRDMA_EVENT_QP_LAST_WQE_REACHED, &q->pub);
		return rc;
	}
	switch (__atomic_load_n(&q->pub.state, __ATOMIC_ACQUIRE)) {
	case VRDMA_QPS_RTS:
		break;
	case VRDMA_QPS_RESET:
		return vlib_reject_errno(q->conn_status);
	default:
		return -ECONNRESET;
	}
	if (peer_data_len) {
		n = q->peer_pdata_len;
		if (n > *peer_data_len)
			n = *peer_data_len;
		if (n && peer_data)
			memcpy(peer_data, q->peer_pdata, n);
		*peer_data_len = peer_data ? n : 0;
	}
	return 0;
}

int vrdma_connect(struct vrdma_qp *qp, const char *node, const char *service,
		  const void *private_data, size_t private_data_len,
		  void *peer_data, size_t *peer_data_len, int timeout_ms)
{
	struct vrdma_req req = { .opcode = VRDMA_CMD_CONNECT };
	int rc;

	if (!qp || !qp->device || !service || !*service || timeout_ms < 0 ||
	    private_data_len > VRDMA_MAX_PRIVATE_DATA || (private_data_len && !private_data))
		return EINVAL;
	if (vlib_name(req.u.connect.node, node) || vlib_name(req.u.connect.service, service))
		return EINVAL;
	if (private_data_len)
		memcpy(req.u.connect.pdata, private_data, private_data_len);
	req.u.connect.pdata_len = (uint32_t)private_data_len;
	rc = vlib_connect(vlib_qp(qp), &req, peer_data, peer_data_len, timeout_ms);
	return vlib_ret(rc);
}
