// SPDX-License-Identifier: MIT
/*
 * The header of a datagram between two vrdmads (verbs_ud.h), and where
 * the device says it came from.  Pure: unit tested (tests/test_verbs_ud.c)
 * and fuzzed (tests/fuzz/fuzz_udhdr.c), since every byte of it is another
 * node's word.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "verbs_ud.h"

static void vbe_vud_put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static uint32_t vbe_vud_get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

void vbe_vud_pack(const struct vbe_vud_hdr *h, uint8_t *buf)
{
	memset(buf, 0, VBE_VUD_HDR);
	buf[0] = VBE_VUD_MAGIC;
	buf[1] = h->has_imm ? VBE_VUD_F_IMM : 0;
	vbe_vud_put32(buf + 4, h->dqpn);
	vbe_vud_put32(buf + 8, h->sqpn);
	vbe_vud_put32(buf + 12, h->qkey);
	vbe_vud_put32(buf + 16, h->imm);
	vbe_vud_put32(buf + 20, h->group);
	vbe_vud_put32(buf + 24, h->len);
}

/*
 * The sending node's GID from the 40 bytes the device wrote: an IB GRH
 * (IP version 6, sgid at 8), or on RoCE v2 over IPv4 the IPv4 header in
 * bytes 20..39 after 20 zero bytes (source address at 32): the node GID
 * is its IPv4-mapped form, as vbe_vx_gid makes ours.
 */
static int vbe_vud_src(const uint8_t *grh, uint8_t sgid[16])
{
	static const uint8_t zero[20];

	if (grh[0] >> 4 == 6) {
		memcpy(sgid, grh + 8, 16);
		return 0;
	}
	if (!memcmp(grh, zero, sizeof(zero)) && grh[20] == 0x45) {
		memset(sgid, 0, 16);
		sgid[10] = sgid[11] = 0xff;
		memcpy(sgid + 12, grh + 32, 4);
		return 0;
	}
	return -EPROTO;
}

int vbe_vud_parse(const uint8_t *buf, size_t byte_len, struct vbe_vud_hdr *h, size_t *off)
{
	const uint8_t *p = buf + VRDMA_GRH_LEN;
	int err = -EPROTO;

	memset(h, 0, sizeof(*h));
	*off = 0;
	if (byte_len < VRDMA_GRH_LEN + VBE_VUD_HDR || byte_len > VBE_VUD_BUF)
		return -EMSGSIZE;
	if (p[0] != VBE_VUD_MAGIC || (p[1] & ~VBE_VUD_F_IMM) || p[2] || p[3] ||
	    vbe_vud_get32(p + 28))
		goto bad;
	h->has_imm = p[1] & VBE_VUD_F_IMM;
	h->dqpn = vbe_vud_get32(p + 4);
	h->sqpn = vbe_vud_get32(p + 8);
	h->qkey = vbe_vud_get32(p + 12);
	h->imm = vbe_vud_get32(p + 16);
	h->group = vbe_vud_get32(p + 20);
	h->len = vbe_vud_get32(p + 24);
	/* QP numbers are 24 bits; a group hash is never 0 (policy.c). */
	if (!h->dqpn || h->dqpn >= 1u << 24 || !h->sqpn || h->sqpn >= 1u << 24 || !h->group)
		goto bad;
	if (h->len > VRDMA_UD_MTU || h->len != byte_len - VRDMA_GRH_LEN - VBE_VUD_HDR) {
		err = -EMSGSIZE;
		goto bad;
	}
	if (vbe_vud_src(buf, h->sgid))
		goto bad;
	*off = VRDMA_GRH_LEN + VBE_VUD_HDR;
	return 0;

bad:
	memset(h, 0, sizeof(*h));
	return err;
}
