// SPDX-License-Identifier: MIT
/*
 * libFuzzer: a datagram another node's vrdmad sent us, as the device
 * hands it over (backend/device/verbs_udhdr.c): the 40 bytes the device
 * wrote, the header, the payload.  Beyond "no crash": a refused one
 * leaves nothing in *h; an accepted one has its fields in range, its
 * payload exactly to the end of what arrived, and packs to the same
 * header bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device/verbs_ud.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)	do { if (!(c)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct vbe_vud_hdr zero;
	static uint8_t buf[VBE_VUD_BUF];
	struct vbe_vud_hdr h;
	uint8_t hdr[VBE_VUD_HDR];
	size_t off = 1, n = size < sizeof(buf) ? size : sizeof(buf);

	/* byte_len is the device's word; the buffer is always whole. */
	memset(buf, 0, sizeof(buf));
	memcpy(buf, data, n);
	if (vbe_vud_parse(buf, size, &h, &off)) {
		CHECK(!memcmp(&h, &zero, sizeof(h)) && off == 0);
		return 0;
	}
	CHECK(off == VRDMA_GRH_LEN + VBE_VUD_HDR && off + h.len == size);
	CHECK(h.len <= VRDMA_UD_MTU && size <= VBE_VUD_BUF);
	CHECK(h.dqpn && h.dqpn < 1u << 24 && h.sqpn && h.sqpn < 1u << 24 && h.group);
	vbe_vud_pack(&h, hdr);
	CHECK(!memcmp(hdr, buf + VRDMA_GRH_LEN, sizeof(hdr)));
	return 0;
}
