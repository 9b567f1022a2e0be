// SPDX-License-Identifier: MIT
/*
 * rdma_getaddrinfo / rdma_freeaddrinfo: getaddrinfo(3) underneath, as
 * librdmacm does for IP addresses (no AF_IB, no route lookups through
 * ib_acm).  Errors are getaddrinfo's EAI_* codes, or -1 + errno.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "vcm.h"

static void vcm_to_ai(struct addrinfo *ai, const struct rdma_addrinfo *h)
{
	memset(ai, 0, sizeof(*ai));
	if (h->ai_flags & RAI_PASSIVE)
		ai->ai_flags = AI_PASSIVE;
	if (h->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	if (h->ai_family != AF_IB)
		ai->ai_family = h->ai_family;
	/* the QP type is the socket type, the port space the protocol */
	if (h->ai_qp_type == IBV_QPT_RC)
		ai->ai_socktype = SOCK_STREAM;
	else if (h->ai_qp_type == IBV_QPT_UD)
		ai->ai_socktype = SOCK_DGRAM;
	if (h->ai_port_space == RDMA_PS_TCP)
		ai->ai_protocol = IPPROTO_TCP;
	else if (h->ai_port_space == RDMA_PS_UDP)
		ai->ai_protocol = IPPROTO_UDP;
	else if (h->ai_port_space == RDMA_PS_IB && ai->ai_socktype)
		ai->ai_protocol = ai->ai_socktype == SOCK_STREAM ? IPPROTO_TCP : IPPROTO_UDP;
}

/* What the hints leave open, the answer says: as librdmacm. */
static void vcm_types_from_ai(struct rdma_addrinfo *rai, const struct addrinfo *ai)
{
	if (!rai->ai_qp_type)
		rai->ai_qp_type = ai->ai_socktype == SOCK_DGRAM ? IBV_QPT_UD : IBV_QPT_RC;
	if (!rai->ai_port_space)
		rai->ai_port_space = ai->ai_protocol == IPPROTO_UDP ? RDMA_PS_UDP : RDMA_PS_TCP;
}

static int vcm_copy_addr(struct sockaddr **dst, socklen_t *dst_len,
			 const struct sockaddr *src, socklen_t len)
{
	*dst = malloc(len);
	if (!*dst)
		return ENOMEM;
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

int rdma_getaddrinfo(const char *node, const char *service,
		     const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo nohints;
	struct rdma_addrinfo *rai;
	struct addrinfo aih, *ai = NULL;
	int rc;

	if (!res || (!node && !service && !hints))
		return vcm_fail(EINVAL);
	if (!hints)
		hints = &nohints;
	if (hints->ai_family == AF_IB)
		return vcm_fail(EAFNOSUPPORT);
	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return vcm_fail(ENOMEM);
	rai->ai_flags = hints->ai_flags & RAI_PASSIVE;
	rai->ai_family = hints->ai_family;
	rai->ai_qp_type = hints->ai_qp_type;
	rai->ai_port_space = hints->ai_port_space;

	if (node || service) {
		vcm_to_ai(&aih, hints);
		rc = getaddrinfo(node, service, &aih, &ai);
		if (rc) {
			free(rai);
			return rc;		/* EAI_*, for gai_strerror */
		}
		rai->ai_family = ai->ai_family;
		vcm_types_from_ai(rai, ai);
		if (hints->ai_flags & RAI_PASSIVE)
			rc = vcm_copy_addr(&rai->ai_src_addr, &rai->ai_src_len,
					   ai->ai_addr, ai->ai_addrlen);
		else
			rc = vcm_copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len,
					   ai->ai_addr, ai->ai_addrlen);
		if (!rc && ai->ai_canonname) {
			char **cn = hints->ai_flags & RAI_PASSIVE ?
				    &rai->ai_src_canonname : &rai->ai_dst_canonname;

			*cn = strdup(ai->ai_canonname);
		}
		freeaddrinfo(ai);
	} else {
		rc = hints->ai_dst_len ?
		     vcm_copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len,
				   hints->ai_dst_addr, hints->ai_dst_len) : 0;
	}
	if (!rc && !rai->ai_src_len && hints->ai_src_len)
		rc = vcm_copy_addr(&rai->ai_src_addr, &rai->ai_src_len,
				   hints->ai_src_addr, hints->ai_src_len);
	if (rc) {
		rdma_freeaddrinfo(rai);
		return vcm_fail(rc);
	}
	*res = rai;
	return 0;
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *r;

	while ((r = res)) {
		res = r->ai_next;
		free(r->ai_connect);
		free(r->ai_route);
		free(r->ai_src_canonname);
		free(r->ai_dst_canonname);
		free(r->ai_src_addr);
		free(r->ai_dst_addr);
		free(r);
	}
}
