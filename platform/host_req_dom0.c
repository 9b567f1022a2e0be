// SPDX-License-Identifier: MIT
/*
 * Plain host, dom0 role: a guest's requests (HELLO and key store access,
 * with xenstore permissions) and the toolstack duty done at HELLO and at
 * departure.  Every request was copied out of the socket and is checked
 * here field by field; anything structurally wrong returns -EBADMSG and
 * the caller disconnects that guest.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host_dom0.h"
#include "keystore.h"
#include "log.h"

/* ---- toolstack duty ---- */

static int hd_toolstack_add(struct hd *d, struct hd_guest *g)
{
	char k[96], v[96];
	uint32_t id = g->domid;
	int r = 0;

#define HD_FE "/local/domain/%u/device/vrdma/0"
#define HD_BE "/local/domain/0/backend/vrdma/%u/0"
	snprintf(k, sizeof(k), "/local/domain/%u/name", id);
	r |= ks_write(d->ks, k, g->name, 0, 0);
	/* As xl: vplat_dev_attach makes devices only for a domain that has it. */
	snprintf(k, sizeof(k), "/local/domain/%u/domid", id);
	snprintf(v, sizeof(v), "%u", id);
	r |= ks_write(d->ks, k, v, 0, 0);
	/* Before `frontend`: the backend reads it when it takes the guest. */
	snprintf(k, sizeof(k), HD_BE "/tenant", id);
	r |= ks_write(d->ks, k, g->tenant, 0, 0);
	snprintf(k, sizeof(k), HD_FE "/backend", id);
	snprintf(v, sizeof(v), HD_BE, id);
	r |= ks_write(d->ks, k, v, 0, 0);
	snprintf(k, sizeof(k), HD_FE "/backend-id", id);
	r |= ks_write(d->ks, k, "0", 0, 0);
	snprintf(k, sizeof(k), HD_FE "/state", id);
	r |= ks_write(d->ks, k, "1", 0, 0);
	snprintf(k, sizeof(k), HD_BE "/frontend", id);
	snprintf(v, sizeof(v), HD_FE, id);
	r |= ks_write(d->ks, k, v, 0, 0);
	snprintf(k, sizeof(k), HD_BE "/frontend-id", id);
	snprintf(v, sizeof(v), "%u", id);
	r |= ks_write(d->ks, k, v, 0, 0);
	snprintf(k, sizeof(k), HD_BE "/state", id);
	r |= ks_write(d->ks, k, "1", 0, 0);
#undef HD_FE
#undef HD_BE
	return r ? -ENOMEM : 0;
}

void hd_toolstack_remove(struct hd *d, uint32_t id)
{
	char k[VPLAT_KEY_MAX];

	/*
	 * Backend dir first: its watch event is delivered first, so the
	 * backend drops the guest before it hears that the frontend dir
	 * vanished (and cannot re-create its dir by writing state=Closed).
	 */
	snprintf(k, sizeof(k), "/local/domain/0/backend/vrdma/%u", id);
	ks_rm(d->ks, k);
	snprintf(k, sizeof(k), "/local/domain/%u", id);
	ks_rm(d->ks, k);
}

/* ---- guest requests ---- */

/* Payload must be exactly `nstr` NUL-terminated strings. */
static int hd_strings(const struct vhp_hdr *h, const char *buf, unsigned nstr,
		      const char **s)
{
	uint32_t off = 0;
	unsigned i;

	for (i = 0; i < nstr; i++) {
		size_t n = strnlen(buf + off, h->len - off);

		if (off + n >= h->len)
			return -EBADMSG;
		s[i] = buf + off;
		off += (uint32_t)n + 1;
	}
	return off == h->len ? 0 : -EBADMSG;
}

/* xenstore permissions for a guest: write own home, read home + backend dir. */
static int hd_may(const struct hd_guest *g, const char *path, int write)
{
	char home[64], be[64];

	snprintf(home, sizeof(home), "/local/domain/%u", g->domid);
	if (write)
		return ks_path_below(path, home) && strcmp(path, home) != 0;
	snprintf(be, sizeof(be), "/local/domain/0/backend/vrdma/%u", g->domid);
	return ks_path_below(path, home) || ks_path_below(path, be);
}

static int hd_hello(struct hd_guest *g, const struct vhp_hdr *h, const char *buf)
{
	struct hd *d = g->d;
	const char *name;
	size_t i;
	int r;

	if (g->domid || hd_strings(h, buf, 1, &name) || strlen(name) >= VHP_NAME_MAX)
		return -EBADMSG;
	for (i = 0; name[i]; i++)
		if (name[i] < 0x21 || name[i] > 0x7e)
			return -EBADMSG;
	if (h->arg[0] != VHP_VERSION) {
		hd_reply(g, h, -EPROTONOSUPPORT, NULL, 0, 0);
		hd_guest_kill(g, "protocol version mismatch");
		return 0;
	}
	if (g->refused) {	/* hd_accept logged the quota */
		hd_reply(g, h, g->refused, NULL, 0, 0);
		hd_guest_kill(g, "refused: over a guest quota");
		return 0;
	}
	memcpy(g->name, name, i + 1);
	g->domid = d->next_domid++;
	r = hd_toolstack_add(d, g);
	if (r) {
		hd_reply(g, h, r, NULL, 0, 0);
		hd_guest_kill(g, "cannot create its keys");
		return 0;
	}
	vlog_info("platform: domain %u (%s) of tenant %s connected", g->domid, g->name,
		  g->tenant);
	hd_reply(g, h, 0, NULL, 0, g->domid);
	return 0;
}

static int hd_key_msg(struct hd_guest *g, const struct vhp_hdr *h, char *buf)
{
	char *out = g->d->obuf;
	struct ks *ks = g->d->ks;
	const char *s[2];
	unsigned cnt = 0;
	int r, write = h->type == VHP_KEY_WRITE || h->type == VHP_KEY_RM;

	if (h->type == VHP_UNWATCH) {
		if (h->len)
			return -EBADMSG;
		ks_unwatch(ks, g, h->arg[0]);
		return hd_reply(g, h, 0, NULL, 0, 0), 0;
	}
	if (hd_strings(h, buf, h->type == VHP_KEY_WRITE ? 2 : 1, s))
		return -EBADMSG;
	if (!ks_path_ok(s[0]))
		return hd_reply(g, h, -EINVAL, NULL, 0, 0), 0;
	if (!hd_may(g, s[0], write))
		return hd_reply(g, h, -EACCES, NULL, 0, 0), 0;
	switch (h->type) {
	case VHP_KEY_WRITE:
		r = ks_write(ks, s[0], s[1], g->domid, HD_MAX_KEYS);
		break;
	case VHP_KEY_RM:
		r = ks_rm(ks, s[0]);
		break;
	case VHP_KEY_READ:
		r = ks_read(ks, s[0], out, VPLAT_VAL_MAX);
		if (r >= 0)
			return hd_reply(g, h, 0, out, (uint32_t)r + 1, 0), 0;
		break;
	case VHP_KEY_LIST:
		r = ks_list(ks, s[0], out, VHP_PAYLOAD_MAX, &cnt);
		if (r >= 0)
			return hd_reply(g, h, 0, out, (uint32_t)r, cnt), 0;
		break;
	default:	/* VHP_WATCH */
		r = -ENOSPC;
		if (ks_watch_count(ks, g) < HD_MAX_WATCHES)
			r = ks_watch(ks, s[0], g, h->arg[0]);
		break;
	}
	return hd_reply(g, h, r, NULL, 0, 0), 0;
}

int hd_req_msg(struct hd_guest *g, const struct vhp_hdr *h, char *buf,
		  int *fds, int *nfds)
{
	if (!g->domid && h->type != VHP_HELLO)
		return -EBADMSG;
	switch (h->type) {
	case VHP_HELLO:
		return *nfds ? -EBADMSG : hd_hello(g, h, buf);
	case VHP_KEY_READ:
	case VHP_KEY_WRITE:
	case VHP_KEY_RM:
	case VHP_KEY_LIST:
	case VHP_WATCH:
	case VHP_UNWATCH:
		return *nfds ? -EBADMSG : hd_key_msg(g, h, buf);
	case VHP_SHARE:
	case VHP_UNSHARE:
	case VHP_CHAN:
	case VHP_CHAN_CLOSE:
		return h->len ? -EBADMSG : hd_gnt_msg(g, h, fds, nfds);
	default:
		return -EBADMSG;
	}
}
