// SPDX-License-Identifier: MIT
/*
 * libFuzzer: what a remote node sends (backend/device/verbs_map.c) -- the hello
 * of a REQ/REP, a reject's private data, and a key-table entry read from
 * the peer with the requester's check on it.  data[0] picks the parser,
 * the rest is the peer's bytes.  Beyond "no crash", each accepted input
 * must satisfy what the callers rely on; a violation aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "device/verbs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)	do { if (!(c)) abort(); } while (0)

static void fz_hello(const uint8_t *p, size_t len)
{
	static const struct vbe_vx_hello zero;
	struct vbe_vx_hello h, h2;
	uint8_t buf[VBE_VX_HELLO_MAX];
	int n;

	if (vbe_vx_hello_unpack(p, len, &h)) {
		CHECK(!memcmp(&h, &zero, sizeof(h)));	/* nothing half-filled */
		return;
	}
	CHECK(h.pdata_len <= VRDMA_PDATA_MAX);
	CHECK(h.qpn && h.qpn < 1u << 24 && h.dest_qpn < 1u << 24);
	CHECK(!(h.svc_hash && h.dest_qpn));
	/* What we accept is what we would send: the same bytes again. */
	n = vbe_vx_hello_pack(&h, buf, sizeof(buf));
	CHECK(n == VBE_VX_HELLO_HDR + (int)h.pdata_len && !memcmp(buf, p, (size_t)n));
	CHECK(!vbe_vx_hello_unpack(buf, (size_t)n, &h2) && !memcmp(&h, &h2, sizeof(h)));
}

static void fz_rej(const uint8_t *p, size_t len)
{
	uint8_t pdata[VRDMA_PDATA_MAX], buf[VBE_VX_REJ_MAX];
	uint32_t plen = 0xdead;
	uint16_t st = 0xffff;
	int n;

	if (vbe_vx_rej_unpack(p, len, &st, pdata, &plen)) {
		CHECK(plen == 0);
		return;
	}
	CHECK(plen <= VRDMA_PDATA_MAX);
	CHECK(st == VRDMA_CS_REFUSED || st == VRDMA_CS_NOENT || st == VRDMA_CS_TIMEDOUT ||
	      st == VRDMA_CS_NOMEM || st == VRDMA_CS_ACCESS);
	n = vbe_vx_rej_pack(st, pdata, plen, buf, sizeof(buf));
	CHECK(n == VBE_VX_REJ_HDR + (int)plen && !memcmp(buf + 4, p + 4, plen));
}

static uint64_t fz_get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* A peer's key-table entry (32 bytes), then what a WR asks of it: taken
 * only whole and in range, and a WR it passes stays in its key's window. */
static void fz_rkt(const uint8_t *p, size_t len)
{
	uint8_t buf[VBE_VX_RKT_ENT];
	uint32_t gkey, pd, acc;
	uint64_t addr, rlen, va = 0;
	unsigned __int128 end;
	struct vbe_rkt e;
	int st, want, rc;

	uint8_t ent[VBE_VX_RKT_ENT];
	uint32_t sum;

	if (len < VBE_VX_RKT_ENT + 29)
		return;
	/* Half the inputs get a right check word, so the field checks
	 * behind it are reached (a mutation seldom makes one). */
	memcpy(ent, p, sizeof(ent));
	if (p[VBE_VX_RKT_ENT + 28] & 1) {
		sum = htole32(vbe_vx_rkt_sum(ent));
		memcpy(ent + 28, &sum, 4);
	}
	memcpy(&gkey, p + VBE_VX_RKT_ENT, 4);
	rc = vbe_vx_rkt_parse(ent, gkey, &e);
	if (rc) {
		CHECK(rc == -ENOENT || rc == -EAGAIN || rc == -EPROTO);
		CHECK(!e.gkey);		/* nothing half taken */
		return;
	}
	/* Taken: it is what its writer writes. */
	vbe_vx_rkt_pack(&e, buf);
	CHECK(!memcmp(buf, ent, sizeof(buf)));
	CHECK(e.length && e.length <= VBE_VX_MR_MAX && e.pgoff < VRDMA_PAGE_SIZE &&
	      e.pgoff + e.length <= VBE_VX_WIN_LEN && vbe_key_wtag(gkey));
	p += VBE_VX_RKT_ENT;
	memcpy(&pd, p + 4, 4);
	addr = fz_get64(p + 8);
	rlen = fz_get64(p + 16);
	memcpy(&acc, p + 24, 4);
	st = vbe_vx_rkt_check(&e, gkey, pd, addr, rlen, acc, &va);
	/* The same rules in wide arithmetic: pass exactly when they hold. */
	end = (unsigned __int128)addr + rlen;
	want = e.gkey == gkey && e.pd == pd && (e.access & acc) == acc &&
	       addr >= e.iova && end <= (unsigned __int128)e.iova + e.length;
	CHECK(st == (want ? VRDMA_WS_SUCCESS : VRDMA_WS_REM_ACCESS_ERR));
	/* ... and the device address never leaves gkey's window: its
	 * offset in the window (modulo 2^64: one past an MR that ends at
	 * 2^64 wraps) plus the length fits, and a byte it reaches is in it. */
	if (!st) {
		end = (unsigned __int128)(uint64_t)(va - vbe_vx_va(gkey, 0)) + rlen;
		CHECK(end <= VBE_VX_WIN_LEN);
		CHECK(!rlen || (va >> VBE_VX_WIN_SHIFT == vbe_vx_win(gkey) &&
				(va + rlen - 1) >> VBE_VX_WIN_SHIFT == vbe_vx_win(gkey)));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	switch (data[0] % 3) {
	case 0:
		fz_hello(data + 1, size - 1);
		break;
	case 1:
		fz_rej(data + 1, size - 1);
		break;
	default:
		fz_rkt(data + 1, size - 1);
		break;
	}
	return 0;
}
