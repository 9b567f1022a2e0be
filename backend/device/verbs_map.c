// SPDX-License-Identifier: MIT
/*
 * Pure helpers of the RDMA-device path: device statuses and access
 * flags in the guest's terms, the private data of the rdma_cm exchange,
 * remote-key table entries and the requester's cache of the peer's.
 * No device needed (tests/test_verbs.c).
 *
 * Everything that crosses the network is packed byte by byte, little
 * endian: the two nodes share no struct layout, only these offsets.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "verbs.h"

uint8_t vbe_vx_status(int st)
{
	switch (st) {
	case IBV_WC_SUCCESS:
		return VRDMA_WS_SUCCESS;
	case IBV_WC_LOC_LEN_ERR:
		return VRDMA_WS_LOC_LEN_ERR;
	case IBV_WC_LOC_QP_OP_ERR:
	case IBV_WC_LOC_EEC_OP_ERR:
	case IBV_WC_INV_EECN_ERR:
	case IBV_WC_INV_EEC_STATE_ERR:
		return VRDMA_WS_LOC_QP_OP_ERR;
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
	case IBV_WC_MW_BIND_ERR:
	case IBV_WC_LOC_RDD_VIOL_ERR:
		return VRDMA_WS_LOC_PROT_ERR;
	case IBV_WC_WR_FLUSH_ERR:
		return VRDMA_WS_WR_FLUSH_ERR;
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_INV_RD_REQ_ERR:
		return VRDMA_WS_REM_INV_REQ_ERR;
	case IBV_WC_REM_ACCESS_ERR:
		return VRDMA_WS_REM_ACCESS_ERR;
	case IBV_WC_REM_OP_ERR:
	case IBV_WC_REM_ABORT_ERR:
	case IBV_WC_BAD_RESP_ERR:
		return VRDMA_WS_REM_OP_ERR;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RESP_TIMEOUT_ERR:
		return VRDMA_WS_RETRY_EXC_ERR;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return VRDMA_WS_RNR_RETRY_EXC_ERR;
	default:
		/* FATAL, GENERAL, tag matching, anything newer. */
		return VRDMA_WS_FATAL_ERR;
	}
}

int vbe_vx_access(uint32_t acc)
{
	int f = 0;

	if (acc & VRDMA_ACC_LOCAL_WRITE)
		f |= IBV_ACCESS_LOCAL_WRITE;
	if (acc & VRDMA_ACC_REMOTE_WRITE)
		f |= IBV_ACCESS_REMOTE_WRITE;
	if (acc & VRDMA_ACC_REMOTE_READ)
		f |= IBV_ACCESS_REMOTE_READ;
	if (acc & VRDMA_ACC_REMOTE_ATOMIC)
		f |= IBV_ACCESS_REMOTE_ATOMIC;
	return f;
}

static void vbe_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void vbe_put32(uint8_t *p, uint32_t v)
{
	vbe_put16(p, (uint16_t)v);
	vbe_put16(p + 2, (uint16_t)(v >> 16));
}

static void vbe_put64(uint8_t *p, uint64_t v)
{
	vbe_put32(p, (uint32_t)v);
	vbe_put32(p + 4, (uint32_t)(v >> 32));
}

static uint16_t vbe_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t vbe_get32(const uint8_t *p)
{
	return vbe_get16(p) | (uint32_t)vbe_get16(p + 2) << 16;
}

static uint64_t vbe_get64(const uint8_t *p)
{
	return vbe_get32(p) | (uint64_t)vbe_get32(p + 4) << 32;
}

/* Bytes written, or -EINVAL / -ENOSPC. */
int vbe_vx_hello_pack(const struct vbe_vx_hello *h, uint8_t *buf, size_t len)
{
	size_t need = VBE_VX_HELLO_HDR + h->pdata_len;

	if (h->pdata_len > VRDMA_PDATA_MAX || (h->svc_hash && h->dest_qpn) ||
	    (h->qualified && !h->svc_hash))
		return -EINVAL;
	if (len < need)
		return -ENOSPC;
	buf[0] = VBE_VX_PD_MAGIC;
	buf[1] = (uint8_t)(h->pdata_len | (h->dest_qpn ? VBE_VX_HELLO_BIND : 0) |
			   (h->qualified ? VBE_VX_HELLO_QUAL : 0));
	vbe_put16(buf + 2, h->pd);
	vbe_put32(buf + 4, h->qpn);
	vbe_put32(buf + 8, h->rkt_rkey);
	vbe_put32(buf + 12, h->dest_qpn ? h->dest_qpn : h->svc_hash);
	vbe_put32(buf + 16, h->group);
	vbe_put32(buf + 20, h->domid);
	memcpy(buf + VBE_VX_HELLO_HDR, h->pdata, h->pdata_len);
	return (int)need;
}

uint8_t vbe_vx_magic_other(const void *buf, size_t len)
{
	const uint8_t *p = buf;

	return p && len && (p[0] & 0xf0) == 0xa0 && p[0] != VBE_VX_PD_MAGIC ? p[0] : 0;
}

/* The peer is another vrdmad, but over a network: check every length.
 * rdma_cm may pad private data with zeros, so longer is fine. */
int vbe_vx_hello_unpack(const void *buf, size_t len, struct vbe_vx_hello *h)
{
	const uint8_t *p = buf;
	uint32_t word, plen;

	memset(h, 0, sizeof(*h));
	if (!p || len < VBE_VX_HELLO_HDR || p[0] != VBE_VX_PD_MAGIC)
		return -EPROTO;
	plen = p[1] & ~(VBE_VX_HELLO_BIND | VBE_VX_HELLO_QUAL);
	if (plen > VRDMA_PDATA_MAX || len < VBE_VX_HELLO_HDR + (size_t)plen)
		return -EPROTO;
	h->pdata_len = plen;
	h->pd = vbe_get16(p + 2);
	h->qpn = vbe_get32(p + 4);
	h->rkt_rkey = vbe_get32(p + 8);
	word = vbe_get32(p + 12);
	if (p[1] & VBE_VX_HELLO_BIND)
		h->dest_qpn = word;
	else
		h->svc_hash = word;
	h->qualified = (p[1] & VBE_VX_HELLO_QUAL) != 0;
	h->group = vbe_get32(p + 16);
	h->domid = vbe_get32(p + 20);
	if (!h->qpn || h->qpn >= 1u << 24 || h->dest_qpn >= 1u << 24 || !h->group ||
	    ((p[1] & VBE_VX_HELLO_BIND) && !h->dest_qpn) ||
	    (h->qualified && !h->svc_hash)) {
		memset(h, 0, sizeof(*h));
		return -EPROTO;
	}
	memcpy(h->pdata, p + VBE_VX_HELLO_HDR, h->pdata_len);
	return 0;
}

int vbe_vx_rej_pack(uint16_t status, const uint8_t *pdata, uint32_t pdata_len,
		    uint8_t *buf, size_t len)
{
	if (pdata_len > VRDMA_PDATA_MAX || (pdata_len && !pdata))
		return -EINVAL;
	if (len < VBE_VX_REJ_HDR + pdata_len)
		return -ENOSPC;
	buf[0] = VBE_VX_PD_MAGIC;
	buf[1] = (uint8_t)pdata_len;
	vbe_put16(buf + 2, status);
	if (pdata_len)
		memcpy(buf + VBE_VX_REJ_HDR, pdata, pdata_len);
	return (int)(VBE_VX_REJ_HDR + pdata_len);
}

/* A reject without our header (no vrdmad there, a stale port) is
 * -EPROTO: the caller reports UNREACH. */
int vbe_vx_rej_unpack(const void *buf, size_t len, uint16_t *status,
		      uint8_t *pdata, uint32_t *pdata_len)
{
	const uint8_t *p = buf;

	*pdata_len = 0;
	if (!p || len < VBE_VX_REJ_HDR || p[0] != VBE_VX_PD_MAGIC ||
	    p[1] > VRDMA_PDATA_MAX || len < VBE_VX_REJ_HDR + (size_t)p[1])
		return -EPROTO;
	*status = vbe_get16(p + 2);
	/* Only statuses a listener side sends; anything else is noise. */
	if (*status != VRDMA_CS_REFUSED && *status != VRDMA_CS_NOENT &&
	    *status != VRDMA_CS_TIMEDOUT && *status != VRDMA_CS_NOMEM &&
	    *status != VRDMA_CS_ACCESS)
		*status = VRDMA_CS_REFUSED;
	*pdata_len = p[1];
	memcpy(pdata, p + VBE_VX_REJ_HDR, p[1]);
	return 0;
}

/* murmur3's 32-bit mix over the entry's first 28 bytes: a READ that
 * overlapped the writer holds bytes of two versions, which match the
 * check word of neither (but once in 2^32). */
uint32_t vbe_vx_rkt_sum(const uint8_t *buf)
{
	uint32_t h = 0x7672646du, k;	/* "vrdm" */
	unsigned i;

	for (i = 0; i < VBE_VX_RKT_ENT - 4; i += 4) {
		k = vbe_get32(buf + i) * 0xcc9e2d51u;
		k = (k << 15 | k >> 17) * 0x1b873593u;
		h ^= k;
		h = (h << 13 | h >> 19) * 5 + 0xe6546b64u;
	}
	h ^= VBE_VX_RKT_ENT - 4;
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

/* The whole entry, check word included (no field is checked here). */
void vbe_vx_rkt_pack(const struct vbe_rkt *e, uint8_t *buf)
{
	vbe_put32(buf, e->gkey);
	vbe_put32(buf + 4, e->rkey);
	vbe_put64(buf + 8, e->iova);
	vbe_put32(buf + 16, (uint32_t)e->length);
	vbe_put16(buf + 20, (uint16_t)e->pd);
	vbe_put16(buf + 22, (uint16_t)e->pgoff);
	buf[24] = (uint8_t)e->access;
	buf[25] = (uint8_t)(e->length >> 32);
	buf[26] = buf[27] = 0;
	vbe_put32(buf + 28, vbe_vx_rkt_sum(buf));
}

/*
 * An entry read from the peer's table for gkey: 0 and *e, -ENOENT (the
 * slot holds no gkey: empty, or another key), -EAGAIN (its check word
 * does not match: the READ overlapped the peer's writer, read again) or
 * -EPROTO (well formed but out of range: that peer is broken or lies).
 * The bytes came from the network: nothing in *e is used unless 0.
 */
int vbe_vx_rkt_parse(const uint8_t *buf, uint32_t gkey, struct vbe_rkt *e)
{
	memset(e, 0, sizeof(*e));
	if (!gkey || vbe_get32(buf) != gkey)
		return -ENOENT;
	if (vbe_get32(buf + 28) != vbe_vx_rkt_sum(buf))
		return -EAGAIN;
	e->gkey = gkey;
	e->rkey = vbe_get32(buf + 4);
	e->iova = vbe_get64(buf + 8);
	e->length = vbe_get32(buf + 16) | (uint64_t)buf[25] << 32;
	e->pd = vbe_get16(buf + 20);
	e->pgoff = vbe_get16(buf + 22);
	e->access = buf[24];
	/* What REG_MR and key.c guarantee for every entry we write: a
	 * window tag, and an MR that fits its window. */
	if (!vbe_key_wtag_ok(gkey) || !e->length || e->length > VBE_VX_MR_MAX ||
	    !vbe_vx_win_fits(e->pgoff, e->length) ||
	    e->iova + e->length < e->iova || e->pd >= VBE_MAX_PDS ||
	    (e->access & ~VRDMA_ACC_ALL) || (buf[26] | buf[27])) {
		memset(e, 0, sizeof(*e));
		return -EPROTO;
	}
	return 0;
}

/* Orders our stores to the key table for the device that RDMA-reads it
 * (rdma-core's udma_to_device_barrier): on x86 stores are seen in
 * program order, so only the compiler must keep them. */
static inline void vbe_vx_dev_wmb(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("" ::: "memory");
#elif defined(__aarch64__)
	__asm__ volatile("dmb oshst" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* The gkey word in one aligned store: never seen half written. */
static void vbe_vx_store_gkey(uint8_t *ent, uint32_t v)
{
	__atomic_store_n((uint32_t *)(void *)ent, htole32(v), __ATOMIC_RELAXED);
}

/*
 * Write e (or wipe, e NULL) into our table's entry at ent (32-byte
 * aligned), which a peer's READ may be fetching meanwhile: gkey goes to
 * 0 first, then the body and check word, then gkey last.  A READ that
 * overlaps sees gkey 0 (empty) or bytes of two versions, whose check
 * word fails (but once in 2^32; docs/rdma.md).
 */
void vbe_vx_rkt_write(uint8_t *ent, const struct vbe_rkt *e)
{
	uint8_t b[VBE_VX_RKT_ENT];

	vbe_vx_store_gkey(ent, 0);
	vbe_vx_dev_wmb();
	if (!e) {
		memset(ent + 4, 0, VBE_VX_RKT_ENT - 4);
		return;
	}
	vbe_vx_rkt_pack(e, b);
	memcpy(ent + 4, b + 4, VBE_VX_RKT_ENT - 4);
	vbe_vx_dev_wmb();
	vbe_vx_store_gkey(ent, e->gkey);
}

/* The key an entry of our own table holds (0 = empty). */
uint32_t vbe_vx_rkt_gkey(const uint8_t *ent)
{
	return vbe_get32(ent);
}

/* As target_local's responder check, on a copy of the peer's entry: the
 * key must be the one asked for (a stale or empty slot is not), same PD
 * as the peer QP, rights, and [addr, addr + len) inside the MR.  The
 * device address comes from gkey, the key the WR names, so whatever the
 * entry says the WR stays in gkey's window. */
int vbe_vx_rkt_check(const struct vbe_rkt *e, uint32_t gkey, uint32_t pd,
		     uint64_t addr, uint64_t len, uint32_t acc, uint64_t *va)
{
	uint64_t off;

	if (!e->gkey || e->gkey != gkey || e->pd != pd || (e->access & acc) != acc)
		return VRDMA_WS_REM_ACCESS_ERR;
	if (!vbe_vx_win_fits(e->pgoff, e->length) || addr < e->iova)
		return VRDMA_WS_REM_ACCESS_ERR;
	off = addr - e->iova;
	if (off > e->length || len > e->length - off)
		return VRDMA_WS_REM_ACCESS_ERR;
	*va = vbe_vx_va(gkey, e->pgoff) + off;
	return VRDMA_WS_SUCCESS;
}

/* ---- the requester's translations (struct vbe_rkc) ---- */

static struct vbe_rkt *vbe_vx_rkc_find(struct vbe_rkc *c, uint32_t gkey)
{
	unsigned i;

	for (i = 0; i < VBE_VX_RKT_CACHE; i++)
		if (c->e[i].gkey && c->e[i].gkey == gkey)
			return &c->e[i];
	return NULL;
}

/* Ask the caller to READ gkey's entry (again if `again`). */
static int vbe_vx_rkc_read(struct vbe_rkc *c, uint32_t gkey, bool again)
{
	if (!again)
		c->tries = 0;
	c->want = gkey;
	c->tries++;
	c->wait = true;
	return VBE_VX_RKC_READ;
}

/*
 * Translate the guest rkey of one WR: 0 with the device *rkey and *va,
 * VBE_VX_RKC_READ (the caller RDMA-reads entry vbe_key_idx(c->want),
 * hands it to vbe_vx_rkc_done, then asks again for the same WR), or a
 * VRDMA_WS_*.  Ask again only once the READ completed (c->wait false).
 *
 * A cached entry is not trusted to be current: the device window keeps
 * a stale one harmless (the device refuses it), and one that fails our
 * check is read again before the WR fails, so an error is always the
 * entry's as the peer has it now.
 */
int vbe_vx_rkc_get(struct vbe_rkc *c, uint32_t gkey, uint32_t pd, uint64_t addr,
		   uint64_t len, uint32_t acc, uint32_t *rkey, uint64_t *va)
{
	struct vbe_rkt *e;
	int st;

	if (c->wait)
		return VRDMA_WS_LOC_QP_OP_ERR;	/* caller bug: one READ at a time */
	if (!gkey)
		return VRDMA_WS_REM_ACCESS_ERR;	/* never a key: 0 marks an empty entry */
	e = vbe_vx_rkc_find(c, gkey);
	if (e) {
		st = vbe_vx_rkt_check(e, gkey, pd, addr, len, acc, va);
		if (!st) {
			*rkey = e->rkey;
			return 0;
		}
		if (c->fresh == gkey)
			return st;	/* read for this very WR */
		e->gkey = 0;
		return vbe_vx_rkc_read(c, gkey, false);
	}
	if (c->want != gkey)
		return vbe_vx_rkc_read(c, gkey, false);
	/* Read for this WR and not taken: a torn entry is read again, a
	 * bounded number of times (the peer's writer is done in ns). */
	if (c->res == -EAGAIN && c->tries < VBE_VX_RKT_TRIES)
		return vbe_vx_rkc_read(c, gkey, true);
	c->want = 0;
	return VRDMA_WS_REM_ACCESS_ERR;
}

/* The READ of c->want's entry completed into ent: copied out, then
 * parsed.  Returns the vbe_vx_rkt_parse result. */
int vbe_vx_rkc_done(struct vbe_rkc *c, const uint8_t *ent)
{
	uint8_t b[VBE_VX_RKT_ENT];
	struct vbe_rkt e, *slot;
	unsigned i;

	memcpy(b, ent, sizeof(b));
	c->wait = false;
	c->res = vbe_vx_rkt_parse(b, c->want, &e);
	if (c->res)
		return c->res;
	slot = vbe_vx_rkc_find(c, c->want);
	for (i = 0; !slot && i < VBE_VX_RKT_CACHE; i++)
		if (!c->e[i].gkey)
			slot = &c->e[i];
	if (!slot) {
		slot = &c->e[c->next];
		c->next = (c->next + 1) % VBE_VX_RKT_CACHE;
	}
	*slot = e;
	c->fresh = c->want;
	c->want = 0;
	return 0;
}

/* The head WR went to the device: a later failure of a cached entry is
 * read again first. */
void vbe_vx_rkc_posted(struct vbe_rkc *c)
{
	c->fresh = 0;
}

/* The QP failed (a remote access error among others): nothing cached
 * outlives it. */
void vbe_vx_rkc_forget(struct vbe_rkc *c)
{
	memset(c, 0, sizeof(*c));
}
