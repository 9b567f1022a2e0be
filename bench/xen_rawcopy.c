// SPDX-License-Identifier: MIT
/*
 * vrdma-xen-rawcopy: the raw limit of a grant-shared ring between two Xen
 * domUs, the reference vrdma-bw is measured against (make bench-xen).
 *
 *   server PEER: shares NPAGES pages with PEER (gntshr) and an event
 *                channel, publishes page 0's ref and the port in xenstore
 *                (data/<tag>/{ref,port}, readable by PEER), then receives.
 *   client PEER: maps the ring (gnttab) and sends.
 *
 * Page 0 is the header (indexes, sizes, the refs of the data pages); the
 * data pages are NSLOTS slots of SIZE bytes.  The client copies each chunk
 * from a private buffer into a slot, the server copies it out into its own
 * private buffer: what moving data between two applications' memory costs
 * with nothing in between.  One notification per batch, no spinning, every
 * wait has a limit.  Both sides print MiB/s; the server's line is
 *   rawcopy,SIZE,ITERS,MIB_PER_S
 * The server trusts nothing the client writes except prod, which it bounds.
 *
 * -P (ping-pong, for make bench-cluster's latency budget): one 16-byte
 * message at a time; the client bumps prod and notifies, the server answers
 * with cons and a notification; both sleep on the event channel (poll()),
 * as vrdmad and a guest do on a 1-vCPU domain.  The client prints
 *   rawping,ITERS,RTT_TYPICAL_US,RTT_AVG_US,RTT_P99_US
 * where one way (domU -> dom0 or back) is half the round trip.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <xenevtchn.h>
#include <xengnttab.h>
#include <xenstore.h>

#define RC_MAGIC	0x52415743u	/* "RAWC" */
#define RC_PAGE		4096u
#define RC_REF_OFF	256u
#define RC_MAX_REFS	((RC_PAGE - RC_REF_OFF) / 4)

struct rc_hdr {
	uint32_t magic;
	uint32_t nrefs;		/* data pages, refs at RC_REF_OFF */
	uint32_t nslots;
	uint32_t slot_size;
	uint64_t iters;
	uint32_t ping;		/* -P: ping-pong, one message at a time */
	uint8_t  pad0[36];
	_Atomic uint64_t prod;	/* client: chunks written */
	uint8_t  pad1[56];
	_Atomic uint64_t cons;	/* server: chunks consumed */
	uint8_t  pad2[56];
	_Atomic uint32_t done;	/* server: finished, client may unmap */
};
_Static_assert(sizeof(struct rc_hdr) <= RC_REF_OFF, "header overlaps the refs");

struct rc_opts {
	size_t size;
	uint64_t iters;
	uint32_t npages;
	int timeout_s;
	int verify;
	int ping;
	const char *tag;
	int server;
	unsigned peer;
};

struct rc_ctx {
	struct rc_opts o;
	struct xs_handle *xs;
	xenevtchn_handle *xce;
	xenevtchn_port_or_error_t port;
	struct rc_hdr *hdr;
	uint8_t *data;
	uint8_t *buf;		/* private source / destination */
	unsigned me;
};

static double rc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sleep until the peer notifies or the limit passes; -ETIMEDOUT then. */
static int rc_wait(struct rc_ctx *c, double deadline)
{
	struct pollfd pfd = { .fd = xenevtchn_fd(c->xce), .events = POLLIN };
	double left = deadline - rc_now();
	xenevtchn_port_or_error_t p;

	if (left <= 0)
		return -ETIMEDOUT;
	if (poll(&pfd, 1, (int)(left * 1000) + 1) < 0 && errno != EINTR)
		return -errno;
	if (pfd.revents & POLLIN) {
		p = xenevtchn_pending(c->xce);
		if (p >= 0)
			xenevtchn_unmask(c->xce, p);
	}
	return 0;
}

static void rc_fill(uint8_t *b, size_t len, uint64_t i)
{
	memcpy(b, &i, sizeof(i));
	memcpy(b + len - sizeof(i), &i, sizeof(i));
}

static int rc_check(const uint8_t *b, size_t len, uint64_t i)
{
	uint64_t h, t;

	memcpy(&h, b, sizeof(h));
	memcpy(&t, b + len - sizeof(t), sizeof(t));
	return h == i && t == i;
}

static int rc_xs_publish(struct rc_ctx *c, const char *key, unsigned val)
{
	struct xs_permissions perms[2] = {
		{ .id = c->me, .perms = XS_PERM_NONE },
		{ .id = c->o.peer, .perms = XS_PERM_READ },
	};
	char path[128], v[16];

	snprintf(path, sizeof(path), "/local/domain/%u/data/%s/%s", c->me, c->o.tag, key);
	snprintf(v, sizeof(v), "%u", val);
	if (!xs_write(c->xs, XBT_NULL, path, v, strlen(v)) ||
	    !xs_set_permissions(c->xs, XBT_NULL, path, perms, 2))
		return -errno;
	return 0;
}

static int rc_xs_read(struct rc_ctx *c, const char *key, unsigned *val, double deadline)
{
	char path[128], *v;
	unsigned int len;

	snprintf(path, sizeof(path), "/local/domain/%u/data/%s/%s", c->o.peer, c->o.tag, key);
	while (!(v = xs_read(c->xs, XBT_NULL, path, &len))) {
		if (rc_now() > deadline)
			return -ETIMEDOUT;
		usleep(100000);
	}
	*val = (unsigned)strtoul(v, NULL, 10);
	free(v);
	return 0;
}

static void rc_report(const struct rc_ctx *c, const char *who, double secs)
{
	double mib = (double)c->o.size * c->o.iters / (1024.0 * 1024.0) / secs;

	printf("%s: %zu bytes x %" PRIu64 " in %.3f s: %.2f MiB/s\n", who, c->o.size,
	       c->o.iters, secs, mib);
	if (c->o.server)
		printf("rawcopy,%zu,%" PRIu64 ",%.2f\n", c->o.size, c->o.iters, mib);
}

static int rc_server(struct rc_ctx *c)
{
	uint32_t ndata = c->o.npages - 1, nslots = (uint32_t)(ndata * RC_PAGE / c->o.size);
	double deadline, t0 = 0;
	xengntshr_handle *gs;
	uint32_t *refs;
	uint64_t i, bad = 0;
	int r = -ENOMEM;
	void *area;

	if (nslots < 2 || ndata > RC_MAX_REFS) {
		fprintf(stderr, "rawcopy: %u pages hold %u slots of %zu bytes: need 2..%u pages\n",
			c->o.npages, nslots, c->o.size, RC_MAX_REFS + 1);
		return -EINVAL;
	}
	refs = calloc(c->o.npages, sizeof(*refs));
	gs = xengntshr_open(NULL, 0);
	if (!refs || !gs) {
		fprintf(stderr, "rawcopy: xengntshr_open: %s\n", strerror(errno));
		if (gs)
			xengntshr_close(gs);
		goto out_refs;
	}
	area = xengntshr_share_pages(gs, c->o.peer, c->o.npages, refs, 1);
	if (!area) {
		r = -errno;
		fprintf(stderr, "rawcopy: sharing %u pages: %s (gntalloc limit=?)\n",
			c->o.npages, strerror(errno));
		goto out_gs;
	}
	c->hdr = area;
	c->data = (uint8_t *)area + RC_PAGE;
	memset(c->hdr, 0, RC_PAGE);
	memcpy((uint8_t *)area + RC_REF_OFF, refs + 1, ndata * sizeof(*refs));
	c->hdr->nrefs = ndata;
	c->hdr->nslots = nslots;
	c->hdr->slot_size = (uint32_t)c->o.size;
	c->hdr->iters = c->o.iters;
	c->hdr->ping = (uint32_t)c->o.ping;
	c->hdr->magic = RC_MAGIC;

	c->port = xenevtchn_bind_unbound_port(c->xce, c->o.peer);
	if (c->port < 0) {
		r = -errno;
		fprintf(stderr, "rawcopy: bind_unbound_port: %s\n", strerror(errno));
		goto out_unshare;
	}
	r = rc_xs_publish(c, "port", (unsigned)c->port);
	if (!r)
		r = rc_xs_publish(c, "ref", refs[0]);
	if (r) {
		fprintf(stderr, "rawcopy: xenstore: %s\n", strerror(-r));
		goto out_port;
	}
	printf("rawcopy: sharing %u pages (%u slots of %zu bytes) with dom%u, port %d\n",
	       c->o.npages, nslots, c->o.size, c->o.peer, c->port);
	fflush(stdout);

	deadline = rc_now() + c->o.timeout_s;
	for (i = 0; i < c->o.iters; ) {
		uint64_t prod = atomic_load_explicit(&c->hdr->prod, memory_order_acquire);

		if (prod - i > (c->o.ping ? 1u : nslots)) {
			fprintf(stderr, "rawcopy: impossible producer index %" PRIu64 "\n", prod);
			r = -EPROTO;
			goto out_keys;
		}
		if (prod == i) {
			r = rc_wait(c, deadline);
			if (r)
				goto out_timeout;
			continue;
		}
		if (i == 0)
			t0 = rc_now();
		for (; i < prod; i++) {
			const uint8_t *slot = c->data + (i % nslots) * c->o.size;

			memcpy(c->buf, slot, c->o.size);
			if (c->o.verify && !rc_check(c->buf, c->o.size, i))
				bad++;
		}
		atomic_store_explicit(&c->hdr->cons, i, memory_order_release);
		xenevtchn_notify(c->xce, c->port);	/* once per batch */
	}
	rc_report(c, "server", rc_now() - t0);
	if (c->o.verify)
		printf("verify: %s (%" PRIu64 " bad chunks)\n", bad ? "FAILED" : "OK", bad);
	r = bad ? -EIO : 0;
	atomic_store_explicit(&c->hdr->done, 1, memory_order_release);
	xenevtchn_notify(c->xce, c->port);
	goto out_keys;
out_timeout:
	fprintf(stderr, "rawcopy: no data from dom%u within %d s (%" PRIu64 " of %" PRIu64 ")\n",
		c->o.peer, c->o.timeout_s, i, c->o.iters);
out_keys:
	{
		char path[128];

		snprintf(path, sizeof(path), "/local/domain/%u/data/%s", c->me, c->o.tag);
		xs_rm(c->xs, XBT_NULL, path);
	}
	/* Let the client read "done" before the pages go away. */
	usleep(200000);
out_port:
	xenevtchn_unbind(c->xce, c->port);
out_unshare:
	xengntshr_unshare(gs, area, c->o.npages);
out_gs:
	xengntshr_close(gs);
out_refs:
	free(refs);
	return r;
}

static int rc_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* -P, client side: one message out, wait for its answer, iters times. */
static int rc_ping(struct rc_ctx *c, struct rc_hdr *hdr, uint32_t nslots)
{
	double *rtt = calloc(c->o.iters, sizeof(*rtt)), deadline, t, sum = 0;
	uint64_t i, cons;
	int r = 0;

	if (!rtt)
		return -ENOMEM;
	deadline = rc_now() + c->o.timeout_s;
	for (i = 0; i < c->o.iters && !r; i++) {
		rc_fill(c->buf, c->o.size, i);
		t = rc_now();
		memcpy(c->data + (i % nslots) * c->o.size, c->buf, c->o.size);
		atomic_store_explicit(&hdr->prod, i + 1, memory_order_release);
		xenevtchn_notify(c->xce, c->port);
		while ((cons = atomic_load_explicit(&hdr->cons, memory_order_acquire)) != i + 1) {
			if (cons > i + 1) {
				fprintf(stderr, "rawcopy: impossible consumer index %" PRIu64 "\n", cons);
				r = -EPROTO;
				break;
			}
			r = rc_wait(c, deadline);
			if (r) {
				fprintf(stderr, "rawcopy: dom%u did not answer ping %" PRIu64
					" within %d s\n", c->o.peer, i, c->o.timeout_s);
				break;
			}
		}
		rtt[i] = (rc_now() - t) * 1e6;
		sum += rtt[i];
	}
	if (!r) {
		qsort(rtt, c->o.iters, sizeof(*rtt), rc_cmp_double);
		printf("client: %" PRIu64 " round trips over the event channel: typical %.1f us,"
		       " average %.1f us (one way: half)\n", c->o.iters, rtt[c->o.iters / 2],
		       sum / (double)c->o.iters);
		printf("rawping,%" PRIu64 ",%.2f,%.2f,%.2f\n", c->o.iters, rtt[c->o.iters / 2],
		       sum / (double)c->o.iters, rtt[(c->o.iters * 99) / 100]);
	}
	free(rtt);
	return r;
}

static int rc_client(struct rc_ctx *c)
{
	double deadline = rc_now() + c->o.timeout_s, t0;
	unsigned ref0, port;
	uint32_t nslots, ndata, refs[RC_MAX_REFS];
	xengnttab_handle *gt;
	struct rc_hdr *hdr;
	uint64_t i;
	int r;

	r = rc_xs_read(c, "port", &port, deadline);
	if (!r)
		r = rc_xs_read(c, "ref", &ref0, deadline);
	if (r) {
		fprintf(stderr, "rawcopy: dom%u published no ring within %d s\n", c->o.peer,
			c->o.timeout_s);
		return r;
	}
	gt = xengnttab_open(NULL, 0);
	if (!gt) {
		fprintf(stderr, "rawcopy: xengnttab_open: %s\n", strerror(errno));
		return -errno;
	}
	hdr = xengnttab_map_grant_ref(gt, c->o.peer, ref0, PROT_READ | PROT_WRITE);
	if (!hdr) {
		r = -errno;
		fprintf(stderr, "rawcopy: mapping ref %u: %s\n", ref0, strerror(errno));
		goto out_gt;
	}
	/* Copy out of shared memory, then check. */
	ndata = hdr->nrefs;
	nslots = hdr->nslots;
	c->o.size = hdr->slot_size;
	c->o.iters = hdr->iters;
	c->o.ping = hdr->ping == 1;
	if (!c->o.iters || c->o.iters > (1u << 24)) {
		fprintf(stderr, "rawcopy: bad iteration count %" PRIu64 " in the ring header\n",
			c->o.iters);
		r = -EPROTO;
		goto out_hdr;
	}
	if (hdr->magic != RC_MAGIC || ndata == 0 || ndata > RC_MAX_REFS || nslots < 2 ||
	    c->o.size < 16 || (uint64_t)nslots * c->o.size > (uint64_t)ndata * RC_PAGE) {
		fprintf(stderr, "rawcopy: bad ring header\n");
		r = -EPROTO;
		goto out_hdr;
	}
	memcpy(refs, (uint8_t *)hdr + RC_REF_OFF, ndata * sizeof(refs[0]));
	c->buf = realloc(c->buf, c->o.size);
	c->data = xengnttab_map_domain_grant_refs(gt, ndata, c->o.peer, refs,
						  PROT_READ | PROT_WRITE);
	if (!c->buf || !c->data) {
		r = -errno;
		fprintf(stderr, "rawcopy: mapping %u pages: %s\n", ndata, strerror(errno));
		goto out_hdr;
	}
	c->port = xenevtchn_bind_interdomain(c->xce, c->o.peer, port);
	if (c->port < 0) {
		r = -errno;
		fprintf(stderr, "rawcopy: bind_interdomain: %s\n", strerror(errno));
		goto out_data;
	}
	memset(c->buf, 0xa5, c->o.size);
	if (c->o.ping) {
		r = rc_ping(c, hdr, nslots);
		goto out_port;
	}

	t0 = rc_now();
	deadline = t0 + c->o.timeout_s;
	for (i = 0; i < c->o.iters; ) {
		uint64_t cons = atomic_load_explicit(&hdr->cons, memory_order_acquire);
		uint64_t end;

		if (cons > i) {
			fprintf(stderr, "rawcopy: impossible consumer index %" PRIu64 "\n", cons);
			r = -EPROTO;
			goto out_port;
		}
		if (i - cons >= nslots) {
			r = rc_wait(c, deadline);
			if (r)
				goto out_timeout;
			continue;
		}
		end = cons + nslots < c->o.iters ? cons + nslots : c->o.iters;
		for (; i < end; i++) {
			if (c->o.verify)
				rc_fill(c->buf, c->o.size, i);
			memcpy(c->data + (i % nslots) * c->o.size, c->buf, c->o.size);
		}
		atomic_store_explicit(&hdr->prod, i, memory_order_release);
		xenevtchn_notify(c->xce, c->port);	/* once per batch */
	}
	/* Done when the server has taken everything (both time the same bytes). */
	while (!atomic_load_explicit(&hdr->done, memory_order_acquire)) {
		r = rc_wait(c, deadline);
		if (r)
			goto out_timeout;
	}
	rc_report(c, "client", rc_now() - t0);
	r = 0;
	goto out_port;
out_timeout:
	fprintf(stderr, "rawcopy: dom%u stopped taking data within %d s\n", c->o.peer,
		c->o.timeout_s);
out_port:
	xenevtchn_unbind(c->xce, c->port);
out_data:
	if (c->data)
		xengnttab_unmap(gt, c->data, ndata);
out_hdr:
	xengnttab_unmap(gt, hdr, 1);
out_gt:
	xengnttab_close(gt);
	return r;
}

static void rc_usage(FILE *f)
{
	fprintf(f,
		"Usage: vrdma-xen-rawcopy [options] server PEER_DOMID\n"
		"       vrdma-xen-rawcopy [options] client SERVER_DOMID\n"
		"  -s BYTES   chunk size, K/M suffix ok (default 65536; server)\n"
		"  -n N       chunks (default 1000; server)\n"
		"  -p PAGES   ring pages incl. the header page (default 769; server)\n"
		"  -k TAG     xenstore directory under data/ (default rawcopy)\n"
		"  -V         check an iteration stamp in every chunk\n"
		"  -P         ping-pong: one 16-byte message at a time, round trips timed\n"
		"             by the client (rawping,ITERS,TYPICAL_US,AVG_US,P99_US; server)\n"
		"  -T SEC     limit for every wait (default 30)\n");
}

static size_t rc_size(const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	if (*end == 'K' || *end == 'k')
		v <<= 10;
	else if (*end == 'M' || *end == 'm')
		v <<= 20;
	return v;
}

int main(int argc, char **argv)
{
	struct rc_ctx c = { .o = { .size = 65536, .iters = 1000, .npages = 769,
				   .timeout_s = 30, .tag = "rawcopy" } };
	char *dom;
	int opt, r;

	while ((opt = getopt(argc, argv, "s:n:p:k:VPT:h")) != -1) {
		switch (opt) {
		case 's': c.o.size = rc_size(optarg); break;
		case 'n': c.o.iters = strtoull(optarg, NULL, 0); break;
		case 'p': c.o.npages = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'k': c.o.tag = optarg; break;
		case 'V': c.o.verify = 1; break;
		case 'P': c.o.ping = 1; c.o.size = 16; c.o.npages = 2; break;
		case 'T': c.o.timeout_s = atoi(optarg); break;
		case 'h': rc_usage(stdout); return 0;
		default: rc_usage(stderr); return 2;
		}
	}
	if (argc - optind != 2 || c.o.size < 16 || c.o.size > (8u << 20) || c.o.iters == 0 ||
	    c.o.timeout_s <= 0) {
		rc_usage(stderr);
		return 2;
	}
	c.o.server = !strcmp(argv[optind], "server");
	if (!c.o.server && strcmp(argv[optind], "client")) {
		rc_usage(stderr);
		return 2;
	}
	c.o.peer = (unsigned)strtoul(argv[optind + 1], NULL, 10);

	c.xs = xs_open(0);
	c.xce = xenevtchn_open(NULL, 0);
	c.buf = malloc(c.o.size);
	if (!c.xs || !c.xce || !c.buf) {
		fprintf(stderr, "rawcopy: needs xenstore and /dev/xen/evtchn: %s\n",
			strerror(errno));
		return 1;
	}
	dom = xs_read(c.xs, XBT_NULL, "domid", NULL);
	c.me = dom ? (unsigned)atoi(dom) : 0;
	free(dom);
	r = c.o.server ? rc_server(&c) : rc_client(&c);
	free(c.buf);
	xenevtchn_close(c.xce);
	xs_close(c.xs);
	return r ? 1 : 0;
}
