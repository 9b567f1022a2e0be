// SPDX-License-Identifier: MIT
/*
 * libFuzzer: the plain host's guest socket as vrdmad reads it (platform/
 * host_proto.h vhp_recv_drop, host_req_dom0.c, host_gnt_dom0.c, the key
 * store's paths).  One dom0 platform for the process, as in vrdmad; each
 * input is one guest connection sending packets, with dom0 mapping and
 * binding what the guest shared as a backend would.  Records:
 *
 *   [u8 ctl][u16 len][len bytes]
 *   ctl bit 7 clear: one SEQPACKET packet of those bytes (header + payload,
 *     sizes as the fuzzer likes), with ctl & 3 files attached of kind
 *     ctl >> 2 & 3 (a memfd sealed against shrinking, one unsealed, an
 *     eventfd, a pipe), memfds of (ctl >> 4 & 3) + 1 pages, then dom0
 *     runs; the guest reads dom0's answers unless ctl bit 6 is set (a
 *     guest that does not read fills dom0's outbox)
 *   ctl bit 7 set: dom0 acts on the guest's grants and channels,
 *     [u8 what][u32 first ref][u8 pages][u8 writable] (what: map and
 *     read every page, unmap, bind a channel and notify, close one)
 *
 * Then the guest hangs up: once dom0 dropped it, nothing of it may be
 * left (keys, mappings counted, bound channels), while dom0's mappings
 * stay readable and its channels report the peer gone.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/un.h>
#include <unistd.h>

#include "host_dom0.h"
#include "keystore.h"
#include "log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)	do { if (!(c)) abort(); } while (0)
#define FZ_MAPS		8
#define FZ_CHANS	4

static struct vplat *fz_d;
static char fz_dir[64];
static struct vplat_map *fz_map[FZ_MAPS];
static size_t fz_map_len[FZ_MAPS];
static struct vplat_chan *fz_chan[FZ_CHANS];

static void fz_cleanup(void)
{
	char path[128];

	vplat_close(fz_d);
	snprintf(path, sizeof(path), "%s/%s", fz_dir, VHP_SOCK_NAME);
	unlink(path);
	rmdir(fz_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct vplat_cfg cfg = { .role = VPLAT_DOM0_ROLE, .kind = "host" };

	(void)argc;
	(void)argv;
	if (!getenv("VRDMA_LOG"))
		vlog_level = VLOG_ERR;
	snprintf(fz_dir, sizeof(fz_dir), "/tmp/vrdma-fuzz-XXXXXX");
	CHECK(mkdtemp(fz_dir));
	cfg.run_dir = fz_dir;
	CHECK(!vplat_open(&cfg, &fz_d));
	atexit(fz_cleanup);
	return 0;
}

/* A file of the kind the record asks for; -1 if none could be made. */
static int fz_file(unsigned kind, unsigned pages)
{
	int fd = -1, p[2];

	switch (kind) {
	case 0:
	case 1:
		fd = memfd_create("fz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd >= 0 && ftruncate(fd, (off_t)pages * 4096) == 0 && kind == 0)
			fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK);
		return fd;
	case 2:
		return eventfd(0, EFD_CLOEXEC);
	default:
		if (pipe2(p, O_CLOEXEC))
			return -1;
		close(p[1]);
		return p[0];
	}
}

static void fz_send(int s, uint8_t ctl, const uint8_t *pkt, size_t len)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 3)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)pkt, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[3], n = ctl & 3, i;

	for (i = 0; i < n; i++)
		if ((fds[i] = fz_file(ctl >> 2 & 3, (ctl >> 4 & 3) + 1)) < 0)
			break;
	n = i;
	if (n) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)n);
	}
	if (sendmsg(s, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		(void)0;	/* a full socket or a hang-up: dom0 saw to it */
	while (n > 0)
		close(fds[--n]);
}

/* Read whatever dom0 answered; close the files CHAN replies carry. */
static void fz_drain(int s)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VHP_SCM_MAX_FD)];
		struct cmsghdr align;
	} u;
	static char buf[sizeof(struct vhp_hdr) + VHP_PAYLOAD_MAX];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh;
	struct cmsghdr *c;
	size_t k;
	int fd;

	for (;;) {
		mh = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1,
				      .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
		if (recvmsg(s, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) <= 0)
			return;
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			for (k = 0; c->cmsg_type == SCM_RIGHTS &&
				    k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
				memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
				close(fd);
			}
	}
}

/* Every page of a mapping readable: shares are sealed and big enough. */
static void fz_touch(unsigned i)
{
	volatile const uint8_t *p = vplat_map_addr(fz_map[i]);
	size_t off;

	for (off = 0; off < fz_map_len[i]; off += 4096)
		(void)p[off];
}

/* dom0 as a backend would use the guest's grants and channels. */
static void fz_dom0(const uint8_t *b, size_t len)
{
	uint32_t refs[64], first, i, n;
	unsigned slot;

	if (len < 7)
		return;
	memcpy(&first, b + 1, 4);
	n = b[5] % 64 + 1;
	slot = first % FZ_MAPS;
	switch (b[0] % 4) {
	case 0:		/* map refs first.. (writable b[6] & 1), read every page */
		for (slot = 0; slot < FZ_MAPS && fz_map[slot]; slot++)
			;
		if (slot == FZ_MAPS)
			return;
		for (i = 0; i < n; i++)
			refs[i] = first + (b[6] & 2 ? i * 2 : i);
		if (vplat_map(fz_d, 1, refs, n, b[6] & 1, &fz_map[slot]))
			return;
		fz_map_len[slot] = (size_t)n * 4096;
		fz_touch(slot);
		if (b[6] & 4 && fz_chan[0])
			vplat_map_live(fz_map[slot], first % fz_map_len[slot], fz_chan[0]);
		break;
	case 1:
		if (fz_map[slot]) {
			vplat_unmap(fz_map[slot]);
			fz_map[slot] = NULL;
		}
		break;
	case 2:		/* bind port first, notify */
		slot %= FZ_CHANS;
		if (!fz_chan[slot] && !vplat_chan_bind(fz_d, 1, first, &fz_chan[slot]))
			vplat_notify(fz_chan[slot]);
		break;
	default:
		slot %= FZ_CHANS;
		if (fz_chan[slot]) {
			vplat_chan_close(fz_chan[slot]);
			fz_chan[slot] = NULL;
		}
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct hd *d = (struct hd *)fz_d;
	size_t off = 0, len;
	char val[8];
	unsigned i;
	int s, r;

	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", fz_dir, VHP_SOCK_NAME);
	CHECK(!connect(s, (struct sockaddr *)&sa, sizeof(sa)));
	vplat_process(fz_d);
	CHECK(d->guests && d->nguests == 1);
	/* A small send buffer on dom0's end: a guest that stops reading
	 * fills it in a few replies, not a few hundred. */
	setsockopt(d->guests->sock, SOL_SOCKET, SO_SNDBUF, &(int){ 4096 }, sizeof(int));
	while (off + 3 <= size) {
		uint8_t ctl = data[off];

		len = (size_t)data[off + 1] | (size_t)data[off + 2] << 8;
		off += 3;
		len = len < size - off ? len : size - off;
		if (ctl & 0x80) {
			fz_dom0(data + off, len);
		} else {
			fz_send(s, ctl, data + off, len);
			vplat_process(fz_d);
			if (!(ctl & 0x40))
				fz_drain(s);
		}
		off += len;
	}

	/* The guest hangs up: dom0 drops it within a few rounds. */
	close(s);
	for (i = 0; i < 100 && d->guests; i++)
		vplat_process(fz_d);
	CHECK(!d->guests && !d->nguests && !d->nrefused);
	CHECK(ks_read(d->ks, "/local/domain/1", val, sizeof(val)) == -ENOENT);
	CHECK(ks_read(d->ks, "/local/domain/0/backend/vrdma/1", val, sizeof(val)) == -ENOENT);
	for (i = 0; i < FZ_CHANS; i++) {
		if (!fz_chan[i])
			continue;
		r = vplat_chan_wait(fz_chan[i], 0);
		CHECK(r == -EPIPE || r == 0);
		vplat_chan_close(fz_chan[i]);
		fz_chan[i] = NULL;
	}
	for (i = 0; i < FZ_MAPS; i++) {
		if (!fz_map[i])
			continue;
		fz_touch(i);		/* mmap semantics: it outlives the guest */
		vplat_unmap(fz_map[i]);
		fz_map[i] = NULL;
	}
	CHECK(!d->runs && !d->chans);
	d->next_domid = 1;	/* the next input's guest is domain 1 again */
	return 0;
}
