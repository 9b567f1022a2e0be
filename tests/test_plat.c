// SPDX-License-Identifier: MIT
/*
 * The plain-host platform: a dom0 instance on a private run dir, served
 * by a thread of the test (every dom0 call takes t0.mu), and guests in
 * the test's main thread or in forked children.  Every wait is bounded.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host_dom0.h"
#include "host_proto.h"
#include "keystore.h"
#include "vplat.h"
#include "vplat_impl.h"
#include "ck_run.h"

#define T_WAIT_MS 5000

static struct {
	struct vplat *d;
	pthread_t th;
	pthread_mutex_t mu;
	int running, stop;
	char dir[64];
} t0 = { .mu = PTHREAD_MUTEX_INITIALIZER };

struct rec {
	int n;
	char path[64][VPLAT_KEY_MAX];
};

static void t0_lock(void)
{
	pthread_mutex_lock(&t0.mu);
}

static void t0_unlock(void)
{
	pthread_mutex_unlock(&t0.mu);
}

static void *t0_loop(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd pfd = { .fd = vplat_fd(t0.d), .events = POLLIN };

		poll(&pfd, 1, 20);
		t0_lock();
		if (t0.stop) {
			t0_unlock();
			return NULL;
		}
		vplat_process(t0.d);
		t0_unlock();
	}
}

static void t0_run(void)
{
	ck_assert_int_eq(pthread_create(&t0.th, NULL, t0_loop, NULL), 0);
	t0.running = 1;
}

/* dom0 on a fresh run dir; the serving thread only if `run`. */
static void t0_open(int run)
{
	struct vplat_cfg cfg = { .role = VPLAT_DOM0_ROLE, .run_dir = t0.dir };
	const char *tmp = getenv("TMPDIR");

	t0.running = t0.stop = 0;	/* CK_FORK=no runs every test in one process */
	snprintf(t0.dir, sizeof(t0.dir), "%s/vrdma-plat-XXXXXX", tmp && strlen(tmp) < 30 ? tmp : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(t0.dir));
	ck_assert_int_eq(vplat_open(&cfg, &t0.d), 0);
	if (run)
		t0_run();
}

static void t0_close(void)
{
	int64_t end;
	char p[128];

	if (t0.running) {
		t0_lock();
		t0.stop = 1;
		t0_unlock();
		pthread_join(t0.th, NULL);
	}
	vplat_close(t0.d);
	/* dom0 closes what it drops on threads: done before the next
	 * test counts fds (bounded) */
	for (end = vplat_now_ms() + T_WAIT_MS; hd_reap_busy() && vplat_now_ms() < end;)
		usleep(2000);
	snprintf(p, sizeof(p), "%s/%s", t0.dir, VHP_SOCK_NAME);
	unlink(p);
	rmdir(t0.dir);
}

static struct vplat *guest_open(void)
{
	struct vplat_cfg cfg = { .role = VPLAT_GUEST, .run_dir = t0.dir };
	struct vplat *g = NULL;

	ck_assert_int_eq(vplat_open(&cfg, &g), 0);
	return g;
}

static void rec_cb(struct vplat *p, const char *path, void *arg)
{
	struct rec *r = arg;

	(void)p;
	if (r->n < 64)
		snprintf(r->path[r->n++], VPLAT_KEY_MAX, "%s", path);
}

static int rec_has(struct rec *r, const char *path)
{
	int i;

	for (i = 0; i < r->n; i++)
		if (strcmp(r->path[i], path) == 0)
			return 1;
	return 0;
}

/* Wait (bounded) until dom0's recorder saw path. */
static int d0_saw(struct rec *r, const char *path)
{
	int64_t end = vplat_now_ms() + T_WAIT_MS;
	int ok;

	do {
		t0_lock();
		ok = rec_has(r, path);
		t0_unlock();
		if (ok)
			return 1;
		usleep(5000);
	} while (vplat_now_ms() < end);
	return 0;
}

/* Pump a guest's events (bounded) until its recorder saw path. */
static int g_saw_ms(struct vplat *g, struct rec *r, const char *path, int ms)
{
	int64_t end = vplat_now_ms() + ms;

	while (!rec_has(r, path)) {
		struct pollfd pfd = { .fd = vplat_fd(g), .events = POLLIN };
		int64_t left = end - vplat_now_ms();

		if (left <= 0)
			return 0;
		poll(&pfd, 1, (int)left);
		ck_assert_int_eq(vplat_process(g), 0);
	}
	return 1;
}

static int g_saw(struct vplat *g, struct rec *r, const char *path)
{
	return g_saw_ms(g, r, path, T_WAIT_MS);
}

static int count_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	while ((e = readdir(dir)))
		n += e->d_name[0] != '.';
	closedir(dir);
	return n;
}

/* count_fds() once it reaches want, bounded: dom0 closes a guest's
 * connection on its reaper thread, a moment later. */
static int count_fds_wait(int want)
{
	int64_t end = vplat_now_ms() + T_WAIT_MS;

	while (count_fds() != want && vplat_now_ms() < end)
		usleep(5000);
	return count_fds();
}

static int count_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0, c;

	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static int d0_read(const char *path, char *buf, size_t len)
{
	int r;

	t0_lock();
	r = vplat_key_read(t0.d, path, buf, len);
	t0_unlock();
	return r;
}

static int d0_write(const char *path, const char *val)
{
	int r;

	t0_lock();
	r = vplat_key_write(t0.d, path, val);
	t0_unlock();
	return r;
}

/* ---- open ---- */

START_TEST(t_open)
{
	struct vplat_cfg cfg = { .role = VPLAT_GUEST, .kind = "xen" };
	struct vplat *g1, *g2, *x = NULL;

	t0_open(1);
	ck_assert_str_eq(vplat_kind(t0.d), "host");
	ck_assert_uint_eq(vplat_domid(t0.d), 0);
	g1 = guest_open();
	g2 = guest_open();
	ck_assert_uint_eq(vplat_domid(g1), 1);
	ck_assert_uint_eq(vplat_domid(g2), 2);
	ck_assert_str_eq(vplat_kind(g1), "host");
	vplat_close(g1);
	g1 = guest_open();
	ck_assert_uint_eq(vplat_domid(g1), 3);	/* never reused */
	ck_assert_int_eq(vplat_open(&cfg, &x), -EPROTONOSUPPORT);
	cfg.kind = "bogus";
	ck_assert_int_eq(vplat_open(&cfg, &x), -EPROTONOSUPPORT);
	vplat_close(g1);
	vplat_close(g2);
	t0_close();
}
END_TEST

START_TEST(t_no_dom0)
{
	struct vplat_cfg cfg = { .role = VPLAT_GUEST, .run_dir = "/nonexistent-vrdma" };
	struct vplat *g = NULL;

	ck_assert_int_lt(vplat_open(&cfg, &g), 0);
}
END_TEST

/* ---- keys ---- */

START_TEST(t_toolstack)
{
	char buf[VPLAT_VAL_MAX], k[VPLAT_KEY_MAX], want[VPLAT_KEY_MAX];
	struct vplat *g;
	uint32_t d, v;

	t0_open(1);
	g = guest_open();
	d = vplat_domid(g);
	snprintf(k, sizeof(k), "/local/domain/%u/name", d);
	ck_assert_int_eq(d0_read(k, buf, sizeof(buf)), 0);
	ck_assert_msg(strncmp(buf, "test_plat.", 10) == 0, "name %s", buf);
	snprintf(k, sizeof(k), "/local/domain/%u/device/vrdma/0/backend", d);
	snprintf(want, sizeof(want), "/local/domain/0/backend/vrdma/%u/0", d);
	ck_assert_int_eq(d0_read(k, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, want);
	snprintf(k, sizeof(k), "/local/domain/0/backend/vrdma/%u/0/frontend", d);
	snprintf(want, sizeof(want), "/local/domain/%u/device/vrdma/0", d);
	ck_assert_int_eq(d0_read(k, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, want);
	snprintf(k, sizeof(k), "/local/domain/0/backend/vrdma/%u/0/frontend-id", d);
	t0_lock();
	ck_assert_int_eq(vplat_key_read_u32(t0.d, k, &v), 0);
	t0_unlock();
	ck_assert_uint_eq(v, d);
	/* The guest sees them too: relative home paths and its backend dir. */
	ck_assert_int_eq(vplat_key_read_u32(g, "device/vrdma/0/backend-id", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(vplat_key_read_u32(g, "device/vrdma/0/state", &v), 0);
	ck_assert_uint_eq(v, 1);
	snprintf(k, sizeof(k), "/local/domain/0/backend/vrdma/%u/0/state", d);
	ck_assert_int_eq(vplat_key_read_u32(g, k, &v), 0);
	ck_assert_uint_eq(v, 1);
	/* Its home says it exists, as xl's does: dom0 may attach a device
	 * more; for a domain that is not (any more) there, nothing is made. */
	ck_assert_int_eq(vplat_key_read_u32(g, "domid", &v), 0);
	ck_assert_uint_eq(v, d);
	t0_lock();
	ck_assert_int_eq(vplat_dev_attach(t0.d, "vrdma", d, 1), 0);
	ck_assert_int_eq(vplat_dev_attach(t0.d, "vrdma", d, 1), -EEXIST);
	ck_assert_int_eq(vplat_dev_detach(t0.d, "vrdma", d, 1), 0);
	ck_assert_int_eq(vplat_dev_attach(t0.d, "vrdma", 77, 0), -ESRCH);
	ck_assert_int_eq(vplat_key_read(t0.d, "/local/domain/77/device/vrdma/0/state",
					buf, sizeof(buf)), -ENOENT);
	ck_assert_int_eq(vplat_key_read(t0.d, "/local/domain/0/backend/vrdma/77/0/state",
					buf, sizeof(buf)), -ENOENT);
	t0_unlock();
	vplat_close(g);
	for (v = 0; v < 200; v++) {	/* its departure removes its home */
		snprintf(k, sizeof(k), "/local/domain/%u/domid", d);
		if (d0_read(k, buf, sizeof(buf)) == -ENOENT)
			break;
		usleep(10000);
	}
	t0_lock();
	ck_assert_int_eq(vplat_dev_attach(t0.d, "vrdma", d, 0), -ESRCH);
	snprintf(k, sizeof(k), "/local/domain/%u/device/vrdma/0/state", d);
	ck_assert_int_eq(vplat_key_read(t0.d, k, buf, sizeof(buf)), -ENOENT);
	t0_unlock();
	t0_close();
}
END_TEST

/* vplat_dev_attach's transaction loop, run on the plain host (which has
 * no transactions) through a stand-in: a commit that conflicts discards
 * what the try wrote, as xenstored does, and says -EAGAIN. */
static struct {
	unsigned conflicts;	/* the next commits that conflict */
	unsigned starts, commits, aborts;
} t_tx;

static int t_tx_start(struct vplat *p)
{
	(void)p;
	t_tx.starts++;
	return 0;
}

static int t_tx_end(struct vplat *p, int abort)
{
	if (abort) {	/* here only where the try wrote nothing */
		t_tx.aborts++;
		return 0;
	}
	if (!t_tx.conflicts) {
		t_tx.commits++;
		return 0;
	}
	/* before each conflicting try there was nothing of these */
	vplat_key_rm(p, "/local/domain/5/device");
	vplat_key_rm(p, "/local/domain/0/backend");
	t_tx.conflicts--;
	return -EAGAIN;
}

START_TEST(t_tx_retry)
{
	struct vplat_ops ops;
	const struct vplat_ops *real;
	char buf[VPLAT_VAL_MAX];
	unsigned starts;

	t0_open(0);
	ck_assert_int_eq(vplat_key_write(t0.d, "/local/domain/5/domid", "5"), 0);
	real = t0.d->ops;
	ops = *real;
	ops.tx_start = t_tx_start;
	ops.tx_end = t_tx_end;
	t0.d->ops = &ops;
	memset(&t_tx, 0, sizeof(t_tx));

	/* the first commit conflicts, the second goes through */
	t_tx.conflicts = 1;
	ck_assert_int_eq(vplat_dev_attach(t0.d, "vrdma", 5, 0), 0);
	ck_assert_uint_eq(t_tx.starts, 2);
	ck_assert_uint_eq(t_tx.commits, 1);
	ck_assert_int_eq(vplat_key_read(t0.d, "/local/domain/0/backend/vrdma/5/0/state", buf,
					sizeof(buf)), 0);
	ck_assert_str_eq(buf, "1");
	ck_assert_int_eq(vplat_key_read(t0.d, "/local/domain/5/device/vrdma/0/backend", buf,
					sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/local/domain/0/backend/vrdma/5/0");
	ck_assert_int_eq(vplat_dev_attach(t0.d, "vrdma", 5, 0), -EEXIST);
	ck_assert_uint_eq(t_tx.aborts, 1);
	ck_assert_int_eq(vplat_dev_detach(t0.d, "vrdma", 5, 0), 0);

	/* every commit conflicts: a few tries, then -EAGAIN, nothing left */
	t_tx.conflicts = 1000;
	starts = t_tx.starts;
	ck_assert_int_eq(vplat_dev_attach(t0.d, "vrdma", 5, 0), -EAGAIN);
	ck_assert_uint_gt(t_tx.starts - starts, 1);
	ck_assert_uint_le(t_tx.starts - starts, 16);
	ck_assert_int_eq(vplat_key_read(t0.d, "/local/domain/5/device/vrdma/0/state", buf,
					sizeof(buf)), -ENOENT);
	ck_assert_int_eq(vplat_key_read(t0.d, "/local/domain/0/backend/vrdma/5/0/state", buf,
					sizeof(buf)), -ENOENT);

	/* no domid: -ESRCH at once, the transaction discarded */
	t_tx.conflicts = 0;
	starts = t_tx.starts;
	ck_assert_int_eq(vplat_dev_attach(t0.d, "vrdma", 6, 0), -ESRCH);
	ck_assert_uint_eq(t_tx.starts - starts, 1);
	t0.d->ops = real;
	t0_close();
}
END_TEST

/* A tenant's `guests` key that is not a valid number is skipped for
 * tenant:default's, as the backend does (not for vrdmad.conf's). */
START_TEST(t_tenant_bad_key)
{
	struct vplat_cfg cfg = { .role = VPLAT_GUEST };
	struct vplat *g1, *g2 = NULL;
	char k[VPLAT_KEY_MAX];

	t0_open(1);
	cfg.run_dir = t0.dir;
	snprintf(k, sizeof(k), VPLAT_TENANT_ROOT "/uid%u/guests", (unsigned)getuid());
	ck_assert_int_eq(d0_write(k, "2x"), 0);
	ck_assert_int_eq(d0_write(VPLAT_TENANT_ROOT "/default/guests", "1"), 0);
	g1 = guest_open();
	ck_assert_int_eq(vplat_open(&cfg, &g2), -EUSERS);
	ck_assert_int_eq(d0_write(k, "2"), 0);		/* valid: its own counts */
	g2 = guest_open();
	vplat_close(g2);
	vplat_close(g1);
	t0_close();
}
END_TEST

START_TEST(t_keys)
{
	char buf[VPLAT_VAL_MAX], k[VPLAT_KEY_MAX], big[VPLAT_VAL_MAX + 1];
	struct vplat *g;
	unsigned cnt;
	uint32_t v;

	t0_open(1);
	g = guest_open();
	ck_assert_int_eq(vplat_key_write(g, "data/x", "hello"), 0);
	ck_assert_int_eq(vplat_key_printf(g, "data/y", "%u", 42u), 0);
	ck_assert_int_eq(vplat_key_write(g, "data/sub/z", ""), 0);
	ck_assert_int_eq(vplat_key_read(g, "data/x", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "hello");
	ck_assert_int_eq(vplat_key_read(g, "data/x", buf, 3), -E2BIG);
	ck_assert_int_eq(vplat_key_read_u32(g, "data/y", &v), 0);
	ck_assert_uint_eq(v, 42);
	ck_assert_int_eq(vplat_key_read_u32(g, "data/x", &v), -EINVAL);
	/* Decimal, whatever the leading zeros (fuzz_xsvalue found "08"
	 * refused and "010" read as 8); no hex, sign or space. */
	ck_assert_int_eq(vplat_key_write(g, "data/y", "010"), 0);
	ck_assert_int_eq(vplat_key_read_u32(g, "data/y", &v), 0);
	ck_assert_uint_eq(v, 10);
	ck_assert_int_eq(vplat_key_write(g, "data/y", "08"), 0);
	ck_assert_int_eq(vplat_key_read_u32(g, "data/y", &v), 0);
	ck_assert_uint_eq(v, 8);
	ck_assert_int_eq(vplat_key_write(g, "data/y", "4294967295"), 0);
	ck_assert_int_eq(vplat_key_read_u32(g, "data/y", &v), 0);
	ck_assert_uint_eq(v, UINT32_MAX);
	ck_assert_int_eq(vplat_key_write(g, "data/y", "4294967296"), 0);
	ck_assert_int_eq(vplat_key_read_u32(g, "data/y", &v), -EINVAL);
	ck_assert_int_eq(vplat_key_write(g, "data/y", "0x10"), 0);
	ck_assert_int_eq(vplat_key_read_u32(g, "data/y", &v), -EINVAL);
	ck_assert_int_eq(vplat_key_write(g, "data/y", "-1"), 0);
	ck_assert_int_eq(vplat_key_read_u32(g, "data/y", &v), -EINVAL);
	ck_assert_int_eq(vplat_key_write(g, "data/y", "1 "), 0);
	ck_assert_int_eq(vplat_key_read_u32(g, "data/y", &v), -EINVAL);
	ck_assert_int_eq(vplat_key_list(g, "data", buf, sizeof(buf), &cnt), 0);
	ck_assert_uint_eq(cnt, 3);
	ck_assert_str_eq(buf, "x");	/* order is unspecified; x came first */
	ck_assert_int_eq(buf[2 + 2 + 4], '\0');
	snprintf(k, sizeof(k), "/local/domain/%u/data/x", vplat_domid(g));
	ck_assert_int_eq(d0_read(k, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "hello");
	ck_assert_int_eq(vplat_key_rm(g, "data"), 0);
	ck_assert_int_eq(vplat_key_read(g, "data/x", buf, sizeof(buf)), -ENOENT);
	ck_assert_int_eq(vplat_key_read(g, "data/sub/z", buf, sizeof(buf)), -ENOENT);
	ck_assert_int_eq(d0_read(k, buf, sizeof(buf)), -ENOENT);
	ck_assert_int_eq(vplat_key_rm(g, "data"), -ENOENT);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(vplat_key_write(g, "big", big), -E2BIG);
	/* dom0 can do anything, relative paths are below /local/domain/0. */
	ck_assert_int_eq(d0_write("backend/vrdma/x", "1"), 0);
	ck_assert_int_eq(d0_read("/local/domain/0/backend/vrdma/x", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "1");
	vplat_close(g);
	t0_close();
}
END_TEST

START_TEST(t_perm)
{
	char buf[VPLAT_VAL_MAX], k[VPLAT_KEY_MAX];
	struct vplat *g1, *g2;
	unsigned cnt;

	t0_open(1);
	g1 = guest_open();
	g2 = guest_open();
	ck_assert_int_eq(vplat_key_write(g1, "/local/domain/0/x", "1"), -EACCES);
	snprintf(k, sizeof(k), "/local/domain/%u/x", vplat_domid(g2));
	ck_assert_int_eq(vplat_key_write(g1, k, "1"), -EACCES);
	ck_assert_int_eq(vplat_key_read(g1, k, buf, sizeof(buf)), -EACCES);
	snprintf(k, sizeof(k), "/local/domain/0/backend/vrdma/%u/0/state", vplat_domid(g1));
	ck_assert_int_eq(vplat_key_write(g1, k, "4"), -EACCES);
	ck_assert_int_eq(vplat_key_rm(g1, k), -EACCES);
	ck_assert_int_eq(vplat_key_read(g1, k, buf, sizeof(buf)), 0);
	snprintf(k, sizeof(k), "/local/domain/0/backend/vrdma/%u/0/state", vplat_domid(g2));
	ck_assert_int_eq(vplat_key_read(g1, k, buf, sizeof(buf)), -EACCES);
	ck_assert_int_eq(vplat_key_list(g1, "/local/domain", buf, sizeof(buf), &cnt), -EACCES);
	snprintf(k, sizeof(k), "/local/domain/%u", vplat_domid(g1));
	ck_assert_int_eq(vplat_key_rm(g1, k), -EACCES);	/* its home itself */
	ck_assert_int_eq(vplat_key_write(g1, "/local/domain/1/../2/x", "1"), -EINVAL);
	ck_assert_int_eq(vplat_key_write(g1, "a//b", "1"), -EINVAL);
	ck_assert_int_eq(vplat_key_write(g1, "a/", "1"), -EINVAL);
	ck_assert_int_eq(vplat_watch(g1, "/local/domain/0", rec_cb, NULL), -EACCES);
	vplat_close(g1);
	vplat_close(g2);
	t0_close();
}
END_TEST

START_TEST(t_watch)
{
	char fe[96], be[96], k[VPLAT_KEY_MAX];
	static struct rec r0, rg;
	struct vplat *g;
	uint32_t d;

	t0_open(1);
	g = guest_open();
	d = vplat_domid(g);
	snprintf(fe, sizeof(fe), "/local/domain/%u/device/vrdma/0", d);
	snprintf(be, sizeof(be), "/local/domain/0/backend/vrdma/%u/0", d);

	/* dom0 watches the frontend dir: once at registration, then guest writes. */
	t0_lock();
	ck_assert_int_eq(vplat_watch(t0.d, fe, rec_cb, &r0), 0);
	t0_unlock();
	ck_assert(d0_saw(&r0, fe));
	ck_assert_int_eq(vplat_key_write(g, "device/vrdma/0/ring-ref0", "8"), 0);
	snprintf(k, sizeof(k), "%s/ring-ref0", fe);
	ck_assert(d0_saw(&r0, k));
	ck_assert_int_eq(vplat_key_write(g, "unrelated", "x"), 0);

	/* The guest watches its backend dir: registration, then dom0 writes. */
	ck_assert_int_eq(vplat_watch(g, be, rec_cb, &rg), 0);
	ck_assert(g_saw(g, &rg, be));
	snprintf(k, sizeof(k), "%s/state", be);
	ck_assert_int_eq(d0_write(k, "2"), 0);
	ck_assert(g_saw(g, &rg, k));
	vplat_unwatch(g, be, &rg);
	rg.n = 0;
	ck_assert_int_eq(d0_write(k, "3"), 0);
	ck_assert(!g_saw_ms(g, &rg, k, 100));

	t0_lock();
	ck_assert(!rec_has(&r0, "/local/domain/1/unrelated"));
	vplat_unwatch(t0.d, fe, &r0);
	t0_unlock();
	vplat_close(g);
	t0_close();
}
END_TEST

static void *late_writer(void *arg)
{
	const char *const *kv = arg;

	usleep(50000);
	d0_write(kv[0], kv[1]);
	return NULL;
}

START_TEST(t_key_wait)
{
	const char *stop[] = { "6", NULL };
	char k[VPLAT_KEY_MAX];
	const char *kv[2] = { k, "4" };
	struct vplat *g;
	pthread_t th;

	t0_open(1);
	g = guest_open();
	snprintf(k, sizeof(k), "/local/domain/0/backend/vrdma/%u/0/state", vplat_domid(g));
	ck_assert_int_eq(pthread_create(&th, NULL, late_writer, kv), 0);
	ck_assert_int_eq(vplat_key_wait(g, k, "4", NULL, T_WAIT_MS), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(vplat_key_wait(g, k, "4", NULL, 0), 0);	/* already */
	ck_assert_int_eq(vplat_key_wait(g, k, "9", NULL, 100), -ETIMEDOUT);
	ck_assert_int_eq(vplat_key_wait(g, "missing", "1", NULL, 50), -ETIMEDOUT);
	kv[1] = "6";
	ck_assert_int_eq(pthread_create(&th, NULL, late_writer, kv), 0);
	ck_assert_int_eq(vplat_key_wait(g, k, "5", stop, T_WAIT_MS), -ECONNRESET);
	pthread_join(th, NULL);
	vplat_close(g);
	t0_close();
}
END_TEST

/* ---- grants ---- */

static void fill_pages(struct vplat_share *s, size_t pg)
{
	uint32_t i;

	for (i = 0; i < vplat_share_npages(s); i++)
		memset((char *)vplat_share_addr(s) + i * pg, 'A' + (int)i, pg);
}

START_TEST(t_share_map)
{
	static const uint32_t perm[8] = { 3, 0, 7, 1, 6, 2, 5, 4 };
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct vplat_share *s, *s2;
	struct vplat_map *m;
	uint32_t refs[8], mix[4], i;
	const uint32_t *sr;
	struct vplat *g;
	char *a;

	t0_open(1);
	g = guest_open();
	ck_assert_int_eq(vplat_share(g, VPLAT_DOM0, 8, 1, &s), 0);
	ck_assert_uint_eq(vplat_share_npages(s), 8);
	a = vplat_share_addr(s);
	for (i = 0; i < 8 * pg; i++)
		ck_assert_int_eq(a[i], 0);	/* zeroed */
	fill_pages(s, pg);
	sr = vplat_share_refs(s);

	/* In order. */
	t0_lock();
	ck_assert_int_eq(vplat_map(t0.d, vplat_domid(g), sr, 8, 1, &m), 0);
	t0_unlock();
	a = vplat_map_addr(m);
	for (i = 0; i < 8; i++) {
		ck_assert_int_eq(a[i * pg], 'A' + (int)i);
		ck_assert_int_eq(a[i * pg + pg - 1], 'A' + (int)i);
	}
	a[5 * pg + 17] = 'z';	/* dom0 writes back */
	ck_assert_int_eq(((char *)vplat_share_addr(s))[5 * pg + 17], 'z');
	vplat_unmap(m);

	/* Scrambled. */
	for (i = 0; i < 8; i++)
		refs[i] = sr[perm[i]];
	t0_lock();
	ck_assert_int_eq(vplat_map(t0.d, vplat_domid(g), refs, 8, 0, &m), 0);
	t0_unlock();
	a = vplat_map_addr(m);
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(a[i * pg + 1], 'A' + (int)perm[i]);
	vplat_unmap(m);

	/* Two shares interleaved in one mapping. */
	ck_assert_int_eq(vplat_share(g, VPLAT_DOM0, 2, 1, &s2), 0);
	memset(vplat_share_addr(s2), 'q', 2 * pg);
	mix[0] = vplat_share_refs(s2)[1];
	mix[1] = sr[2];
	mix[2] = sr[3];
	mix[3] = vplat_share_refs(s2)[0];
	t0_lock();
	ck_assert_int_eq(vplat_map(t0.d, vplat_domid(g), mix, 4, 1, &m), 0);
	t0_unlock();
	a = vplat_map_addr(m);
	ck_assert_int_eq(a[0], 'q');
	ck_assert_int_eq(a[pg], 'C');
	ck_assert_int_eq(a[2 * pg], 'D');
	ck_assert_int_eq(a[3 * pg], 'q');
	a[3 * pg] = 'w';
	ck_assert_int_eq(((char *)vplat_share_addr(s2))[0], 'w');
	vplat_unmap(m);
	vplat_unshare(s2);
	vplat_unshare(s);
	vplat_close(g);
	t0_close();
}
END_TEST

START_TEST(t_bad_ref)
{
	struct vplat_share *s;
	struct vplat_map *m = NULL;
	struct vplat *g;
	uint32_t refs[4];
	int before;

	t0_open(1);
	g = guest_open();
	ck_assert_int_eq(vplat_share(g, VPLAT_DOM0, 3, 1, &s), 0);
	memcpy(refs, vplat_share_refs(s), 3 * sizeof(uint32_t));
	refs[3] = refs[2] + 1000;
	t0_lock();
	before = count_maps();
	ck_assert_int_eq(vplat_map(t0.d, vplat_domid(g), refs, 4, 1, &m), -EFAULT);
	refs[3] = refs[0];
	refs[0] = 0;
	ck_assert_int_eq(vplat_map(t0.d, vplat_domid(g), refs, 4, 1, &m), -EFAULT);
	ck_assert_int_eq(count_maps(), before);	/* nothing left mapped */
	ck_assert_int_eq(vplat_map(t0.d, 999, refs + 1, 2, 1, &m), -ESRCH);
	ck_assert_int_eq(vplat_map(t0.d, 0, refs + 1, 2, 1, &m), -ESRCH);
	t0_unlock();
	ck_assert_ptr_null(m);
	vplat_unshare(s);
	vplat_close(g);
	t0_close();
}
END_TEST

START_TEST(t_read_only)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct vplat_share *s;
	struct vplat_map *m;
	struct vplat *g;

	t0_open(1);
	g = guest_open();
	ck_assert_int_eq(vplat_share(g, VPLAT_DOM0, 2, 0, &s), 0);
	memset(vplat_share_addr(s), 'r', 2 * pg);	/* the owner still writes */
	t0_lock();
	ck_assert_int_eq(vplat_map(t0.d, vplat_domid(g), vplat_share_refs(s), 2, 1, &m), -EACCES);
	ck_assert_int_eq(vplat_map(t0.d, vplat_domid(g), vplat_share_refs(s), 2, 0, &m), 0);
	t0_unlock();
	ck_assert_int_eq(((char *)vplat_map_addr(m))[pg + 3], 'r');
	vplat_unmap(m);
	vplat_unshare(s);
	vplat_close(g);
	t0_close();
}
END_TEST

START_TEST(t_limits)
{
	struct vplat_share *s, *s2;
	char k[32];
	struct vplat *g;
	int i, r = 0;

	setenv("VRDMA_MAX_GUEST_PAGES", "16", 1);
	t0_open(1);
	g = guest_open();
	ck_assert_int_eq(vplat_share(g, VPLAT_DOM0, 17, 1, &s), -ENOMEM);
	ck_assert_int_eq(vplat_share(g, VPLAT_DOM0, 16, 1, &s), 0);
	ck_assert_int_eq(vplat_share(g, VPLAT_DOM0, 1, 1, &s2), -ENOMEM);
	vplat_unshare(s);
	ck_assert_int_eq(vplat_share(g, VPLAT_DOM0, 1, 1, &s2), 0);	/* freed */
	vplat_unshare(s2);
	for (i = 0; i < HD_MAX_KEYS + 100 && r == 0; i++) {
		snprintf(k, sizeof(k), "k/%d", i);
		r = vplat_key_write(g, k, "v");
	}
	ck_assert_int_eq(r, -ENOSPC);
	ck_assert_int_eq(i, HD_MAX_KEYS + 1);
	ck_assert_int_eq(vplat_key_write(g, "k/0", "overwrite is fine"), 0);
	unsetenv("VRDMA_MAX_GUEST_PAGES");
	vplat_close(g);
	t0_close();
}
END_TEST

/* Alternating refs cost one mmap each: capped per guest (review I1). */
START_TEST(t_map_runs)
{
	static uint32_t refs[2 * HD_MAX_RUNS];
	struct vplat_map *m, *m2;
	struct vplat_share *s;
	const uint32_t *sr;
	struct vplat *g;
	uint32_t i;

	t0_open(1);
	g = guest_open();
	ck_assert_int_eq(vplat_share(g, VPLAT_DOM0, 4 * HD_MAX_RUNS, 1, &s), 0);
	sr = vplat_share_refs(s);
	for (i = 0; i < HD_MAX_RUNS + 1; i++)
		refs[i] = sr[2 * i];
	t0_lock();
	ck_assert_int_eq(vplat_map(t0.d, vplat_domid(g), refs, HD_MAX_RUNS + 1, 1, &m),
			 -ENOMEM);
	ck_assert_int_eq(vplat_map(t0.d, vplat_domid(g), refs, HD_MAX_RUNS - 10, 1, &m), 0);
	ck_assert_int_eq(vplat_map(t0.d, vplat_domid(g), refs, 11, 1, &m2), -ENOMEM);
	/* Contiguous refs are one run, whatever the length. */
	ck_assert_int_eq(vplat_map(t0.d, vplat_domid(g), sr, 4 * HD_MAX_RUNS, 1, &m2), 0);
	vplat_unmap(m2);
	vplat_unmap(m);
	ck_assert_int_eq(vplat_map(t0.d, vplat_domid(g), refs, HD_MAX_RUNS, 1, &m), 0);
	vplat_unmap(m);
	t0_unlock();
	vplat_unshare(s);
	vplat_close(g);
	t0_close();
}
END_TEST

/* Per-guest fd caps follow RLIMIT_NOFILE (review I1): past its cap a
 * guest's SHARE is refused, the guest stays connected. */
START_TEST(t_fd_caps)
{
	struct vplat_share *s[80];
	struct rlimit rl;
	struct vplat *g;
	int i, r = 0;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = 512;		/* per guest: the floors (64 shares) */
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	t0_open(1);
	g = guest_open();
	for (i = 0; i < 80 && r == 0; i++)
		r = vplat_share(g, VPLAT_DOM0, 1, 1, &s[i]);
	ck_assert_int_eq(r, -ENOSPC);
	ck_assert_int_eq(i, 65);
	for (i = 0; i < 64; i++)
		vplat_unshare(s[i]);
	ck_assert_int_eq(vplat_share(g, VPLAT_DOM0, 1, 1, &s[0]), 0);
	vplat_unshare(s[0]);
	vplat_close(g);
	t0_close();
}
END_TEST

/* ---- the key store's index (review I6) ---- */

static unsigned ks_fired;

static void ks_count_fire(void *arg, void *owner, uint64_t token, const char *path)
{
	(void)arg;
	(void)owner;
	(void)token;
	(void)path;
	ks_fired++;
}

START_TEST(t_keystore_index)
{
	char k[64], v[32], list[512];
	unsigned cnt;
	struct ks *ks;
	int i, d;

	ck_assert_int_eq(ks_new(ks_count_fire, NULL, &ks), 0);
	/* Many owners, many keys: every one found through the index. */
	for (d = 1; d <= 40; d++)
		for (i = 0; i < 100; i++) {
			snprintf(k, sizeof(k), "/local/domain/%d/k%d", d, i);
			snprintf(v, sizeof(v), "%d.%d", d, i);
			ck_assert_int_eq(ks_write(ks, k, v, (uint32_t)d, 100), 0);
		}
	ck_assert_int_eq(ks_write(ks, "/local/domain/7/one-more", "x", 7, 100), -ENOSPC);
	ck_assert_int_eq(ks_write(ks, "/local/domain/7/k3", "again", 7, 100), 0);
	/* Remove every other domain: the rest must still be found. */
	for (d = 1; d <= 40; d += 2) {
		snprintf(k, sizeof(k), "/local/domain/%d", d);
		ck_assert_int_eq(ks_rm(ks, k), 0);
	}
	for (d = 1; d <= 40; d++)
		for (i = 0; i < 100; i++) {
			snprintf(k, sizeof(k), "/local/domain/%d/k%d", d, i);
			snprintf(v, sizeof(v), "%d.%d", d, i);
			if (d % 2) {
				ck_assert_int_eq(ks_read(ks, k, v, sizeof(v)), -ENOENT);
				continue;
			}
			ck_assert_int_ge(ks_read(ks, k, v, sizeof(v)), 0);
			if (d == 7 && i == 3)
				ck_assert_str_eq(v, "again");
		}
	/* An owner whose keys went may create them again. */
	ck_assert_int_eq(ks_write(ks, "/local/domain/1/new", "x", 1, 1), 0);
	ck_assert_int_eq(ks_write(ks, "/local/domain/1/new2", "x", 1, 1), -ENOSPC);
	ck_assert_int_gt(ks_list(ks, "/local/domain", list, sizeof(list), &cnt), 0);
	ck_assert_uint_eq(cnt, 21);
	ck_assert_int_eq(ks_read(ks, "/local/domain/2", v, sizeof(v)), 0);
	ks_free(ks);
}
END_TEST

/* ---- channels ---- */

START_TEST(t_chan)
{
	struct vplat_chan *gc, *dc;
	struct vplat *g;
	uint32_t port, port2;
	struct vplat_chan *gc2;
	struct pollfd pfd;

	t0_open(1);
	g = guest_open();
	ck_assert_int_eq(vplat_chan_alloc(g, VPLAT_DOM0, &gc, &port), 0);
	ck_assert_int_eq(vplat_chan_alloc(g, VPLAT_DOM0, &gc2, &port2), 0);
	ck_assert_uint_ne(port, port2);
	t0_lock();
	ck_assert_int_eq(vplat_chan_bind(t0.d, vplat_domid(g), port + port2 + 7, &dc), -ENOENT);
	ck_assert_int_eq(vplat_chan_bind(t0.d, vplat_domid(g), port, &dc), 0);

	/* guest -> dom0 */
	ck_assert_int_eq(vplat_chan_ack(dc), 0);
	ck_assert_int_eq(vplat_notify(gc), 0);
	ck_assert_int_eq(vplat_notify(gc), 0);
	pfd.fd = vplat_chan_fd(dc);
	pfd.events = POLLIN;
	ck_assert_int_eq(poll(&pfd, 1, T_WAIT_MS), 1);
	ck_assert_int_eq(vplat_chan_ack(dc), 1);
	ck_assert_int_eq(vplat_chan_ack(dc), 0);
	ck_assert_int_eq(vplat_notify(gc), 0);
	ck_assert_int_eq(vplat_chan_wait(dc, T_WAIT_MS), 0);
	ck_assert_int_eq(vplat_chan_wait(dc, 20), -ETIMEDOUT);
	t0_unlock();
	ck_assert_int_eq(vplat_chan_wait(gc, 20), -ETIMEDOUT);

	/* dom0 -> guest, not seen on the other channel */
	ck_assert_int_eq(vplat_notify(dc), 0);
	ck_assert_int_eq(vplat_chan_wait(gc, T_WAIT_MS), 0);
	ck_assert_int_eq(vplat_chan_ack(gc), 0);
	ck_assert_int_eq(vplat_chan_ack(gc2), 0);
	ck_assert_int_eq(vplat_chan_wait(gc, -1), -EINVAL);

	vplat_chan_close(dc);
	vplat_chan_close(gc2);
	vplat_chan_close(gc);
	vplat_close(g);
	t0_close();
}
END_TEST

/* ---- guest death ---- */

struct child_info {
	uint32_t domid, port, refs[4];
};

/* A guest in a child process: share, channel, report, then wait to die. */
static void child_guest(int wfd)
{
	struct vplat_cfg cfg = { .role = VPLAT_GUEST, .run_dir = t0.dir };
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct child_info ci = { 0 };
	struct vplat_share *s;
	struct vplat_chan *c;
	struct vplat *g;

	if (vplat_open(&cfg, &g) || vplat_share(g, VPLAT_DOM0, 4, 1, &s) ||
	    vplat_chan_alloc(g, VPLAT_DOM0, &c, &ci.port))
		_exit(1);
	fill_pages(s, pg);
	ci.domid = vplat_domid(g);
	memcpy(ci.refs, vplat_share_refs(s), sizeof(ci.refs));
	if (write(wfd, &ci, sizeof(ci)) != sizeof(ci))
		_exit(1);
	poll(NULL, 0, 30000);	/* the parent kills us long before */
	_exit(0);
}

START_TEST(t_guest_killed)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	char be[96], k[VPLAT_KEY_MAX], buf[64];
	struct child_info ci;
	static struct rec r0;
	struct vplat_chan *dc;
	struct vplat_map *m;
	struct pollfd pfd;
	int pfds[2], base, i;
	pid_t pid;
	char *a;

	t0_open(0);	/* fork before the serving thread exists */
	ck_assert_int_eq(pipe(pfds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(pfds[0]);
		child_guest(pfds[1]);
	}
	close(pfds[1]);
	base = count_fds();
	t0_run();
	pfd.fd = pfds[0];
	pfd.events = POLLIN;
	ck_assert_int_eq(poll(&pfd, 1, T_WAIT_MS), 1);
	ck_assert_int_eq(read(pfds[0], &ci, sizeof(ci)), sizeof(ci));

	snprintf(be, sizeof(be), "/local/domain/0/backend/vrdma/%u", ci.domid);
	t0_lock();
	ck_assert_int_eq(vplat_watch(t0.d, be, rec_cb, &r0), 0);
	ck_assert_int_eq(vplat_map(t0.d, ci.domid, ci.refs, 4, 1, &m), 0);
	ck_assert_int_eq(vplat_chan_bind(t0.d, ci.domid, ci.port, &dc), 0);
	t0_unlock();
	ck_assert(d0_saw(&r0, be));
	a = vplat_map_addr(m);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(a[i * pg], 'A' + i);

	t0_lock();
	r0.n = 0;
	t0_unlock();
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	ck_assert(d0_saw(&r0, be));	/* the backend learns it from its watch */
	snprintf(k, sizeof(k), "%s/0/state", be);
	ck_assert_int_eq(d0_read(k, buf, sizeof(buf)), -ENOENT);
	snprintf(k, sizeof(k), "/local/domain/%u/name", ci.domid);
	ck_assert_int_eq(d0_read(k, buf, sizeof(buf)), -ENOENT);
	t0_lock();
	ck_assert_int_eq(vplat_chan_wait(dc, T_WAIT_MS), -EPIPE);
	ck_assert_int_eq(vplat_notify(dc), -EPIPE);
	ck_assert_int_eq(vplat_map(t0.d, ci.domid, ci.refs, 4, 1, &m), 0 - ESRCH);
	ck_assert_int_eq(vplat_chan_bind(t0.d, ci.domid, ci.port, &dc), 0 - ESRCH);
	vplat_unwatch(t0.d, be, &r0);
	t0_unlock();
	/* The mapping stays valid until unmapped (mmap semantics). */
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(a[i * pg + 9], 'A' + i);
	vplat_unmap(m);
	vplat_chan_close(dc);
	ck_assert_int_eq(count_fds_wait(base), base);
	close(pfds[0]);
	t0_close();
}
END_TEST

/* An in-process guest's shares and channels leave no fd behind in dom0. */
START_TEST(t_no_fd_leak)
{
	struct vplat_share *s[3];
	struct vplat_chan *c;
	int64_t end;
	struct vplat *g;
	uint32_t port;
	int base, i;

	t0_open(1);
	g = guest_open();
	base = count_fds();
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(vplat_share(g, VPLAT_DOM0, 1 + i, 1, &s[i]), 0);
	ck_assert_int_eq(vplat_chan_alloc(g, VPLAT_DOM0, &c, &port), 0);
	/* memfds in dom0; each side's two channel fds (dom0 closes its
	 * copies of ours right after sending them: wait for that, bounded) */
	end = vplat_now_ms() + T_WAIT_MS;
	while (count_fds() != base + 3 + 4 && vplat_now_ms() < end)
		usleep(5000);
	ck_assert_int_eq(count_fds(), base + 3 + 4);
	for (i = 0; i < 3; i++)
		vplat_unshare(s[i]);
	vplat_chan_close(c);
	/* UNSHARE and CHAN_CLOSE are one-way: wait (bounded) for dom0. */
	end = vplat_now_ms() + T_WAIT_MS;
	while (count_fds() != base && vplat_now_ms() < end)
		usleep(5000);
	ck_assert_int_eq(count_fds(), base);
	vplat_close(g);
	t0_close();
}
END_TEST

/* ---- hostile clients ---- */

static int raw_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 5 };
	int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);

	ck_assert_int_ge(s, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", t0.dir, VHP_SOCK_NAME);
	ck_assert_int_eq(connect(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return s;
}

/* dom0 hangs up on the raw client: read gives EOF, or ECONNRESET when dom0
 * closed with requests of ours unread (bounded by SO_RCVTIMEO). */
static void raw_expect_eof(int s)
{
	char buf[2048];
	ssize_t n;

	do
		n = recv(s, buf, sizeof(buf), 0);
	while (n > 0);		/* a reply may come first */
	ck_assert_msg(n == 0 || errno == ECONNRESET, "no hang-up: %s", strerror(errno));
	close(s);
}

/* One packet of len bytes carrying n copies of fd (n <= VHP_SCM_MAX_FD). */
static ssize_t raw_send_fds(int s, const void *buf, size_t len, int fd, int n)
{
	static union {
		char b[CMSG_SPACE(sizeof(int) * VHP_SCM_MAX_FD)];
		struct cmsghdr align;
	} u;
	struct iovec io = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &io, .msg_iovlen = 1,
			     .msg_control = u.b, .msg_controllen = CMSG_SPACE(sizeof(int) * n) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	int i;

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
	for (i = 0; i < n; i++)
		memcpy(CMSG_DATA(cm) + i * sizeof(int), &fd, sizeof(int));
	return sendmsg(s, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* The honest guest never noticed the hostile clients; then the end. */
static void honest_guest_done(struct vplat *g)
{
	char buf[VPLAT_VAL_MAX];

	ck_assert_int_eq(vplat_key_write(g, "still", "here"), 0);
	ck_assert_int_eq(vplat_key_read(g, "still", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "here");
	vplat_close(g);
	t0_close();
}

START_TEST(t_malformed)
{
	struct vhp_hdr h = { 0 };
	struct vplat *g;
	int s;

	t0_open(1);
	g = guest_open();

	s = raw_connect();	/* garbage */
	ck_assert_int_eq(send(s, "xyz", 3, 0), 3);
	raw_expect_eof(s);

	s = raw_connect();	/* a request before HELLO */
	h.type = VHP_KEY_READ;
	h.len = 2;
	ck_assert_int_eq(vhp_send(s, &h, "/", NULL, 0, 0), 0);
	raw_expect_eof(s);

	s = raw_connect();	/* length field that lies */
	h.type = VHP_HELLO;
	h.arg[0] = VHP_VERSION;
	h.len = 100;
	ck_assert_int_eq(send(s, &h, sizeof(h), 0), sizeof(h));
	raw_expect_eof(s);

	s = raw_connect();	/* HELLO, then an unknown type */
	h.len = 4;
	ck_assert_int_eq(vhp_send(s, &h, "raw", NULL, 0, 0), 0);
	h.type = 999;
	h.len = 0;
	ck_assert_int_eq(vhp_send(s, &h, NULL, NULL, 0, 0), 0);
	raw_expect_eof(s);

	s = raw_connect();	/* HELLO, then a path without its NUL */
	h.type = VHP_HELLO;
	h.len = 4;
	ck_assert_int_eq(vhp_send(s, &h, "raw", NULL, 0, 0), 0);
	h.type = VHP_KEY_WRITE;
	h.len = 3;
	ck_assert_int_eq(vhp_send(s, &h, "a\0b", NULL, 0, 0), 0);
	raw_expect_eof(s);

	s = raw_connect();	/* a CHAN that brings fds: dom0 makes channels itself */
	h.type = VHP_HELLO;
	h.len = 4;
	ck_assert_int_eq(vhp_send(s, &h, "raw", NULL, 0, 0), 0);
	{
		int p[2];

		ck_assert_int_eq(pipe(p), 0);
		h.type = VHP_CHAN;
		h.len = 0;
		ck_assert_int_eq(vhp_send(s, &h, NULL, p, 2, 0), 0);
		close(p[0]);
		close(p[1]);
	}
	raw_expect_eof(s);

	honest_guest_done(g);
}
END_TEST

/* HELLO on a raw client: its domain id. */
static uint32_t raw_hello(int s)
{
	struct vhp_hdr h = { .type = VHP_HELLO, .len = 4, .arg = { VHP_VERSION } };
	char buf[64];
	int fds[VHP_MAX_FDS], nfds;

	ck_assert_int_eq(vhp_send(s, &h, "raw", NULL, 0, 0), 0);
	ck_assert_int_eq(vhp_recv(s, &h, buf, sizeof(buf), fds, &nfds, 0), 0);
	ck_assert_int_eq(h.type, VHP_WELCOME);
	ck_assert_int_eq(h.err, 0);
	return h.arg[0];
}

/* n requests for key `path` of the raw client, seq from 1, no reading. */
static void raw_reads(int s, const char *path, uint32_t n)
{
	struct vhp_hdr h = { .type = VHP_KEY_READ };
	uint32_t i;

	h.len = (uint32_t)strlen(path) + 1;
	for (i = 1; i <= n; i++) {
		h.seq = i;
		ck_assert_int_eq(vhp_send(s, &h, path, NULL, 0, 0), 0);
	}
}

/* A guest that reads its socket late gets every reply, in order, late;
 * dom0 never waits for it and never drops it (issue 11: 256 guests
 * connecting at once).  One that does not read at all is cut off once a
 * MiB of its replies waits, and the honest guest never noticed. */
START_TEST(t_slow_reader)
{
	struct vhp_hdr h = { .type = VHP_KEY_WRITE };
	char path[64], kv[VPLAT_VAL_MAX + 64], buf[VPLAT_VAL_MAX + 64];
	int fds[VHP_MAX_FDS], nfds, s;
	struct vplat *g;
	uint32_t dom, i;

	t0_open(1);
	g = guest_open();
	s = raw_connect();
	dom = raw_hello(s);
	snprintf(path, sizeof(path), "/local/domain/%u/data/k", dom);
	raw_reads(s, path, 3000);	/* far more than the socket holds */
	for (i = 1; i <= 3000; i++) {
		ck_assert_int_eq(vhp_recv(s, &h, buf, sizeof(buf), fds, &nfds, 0), 0);
		ck_assert_int_eq(h.type, VHP_REPLY);
		ck_assert_uint_eq(h.seq, i);
	}
	close(s);

	/* 1000-byte replies, never read: cut off after about a MiB. */
	s = raw_connect();
	dom = raw_hello(s);
	snprintf(path, sizeof(path), "/local/domain/%u/data/k", dom);
	memset(kv, 'v', sizeof(kv));
	strcpy(kv, path);
	kv[strlen(path) + 1 + 1000] = '\0';
	h.type = VHP_KEY_WRITE;
	h.seq = 1;
	h.len = (uint32_t)strlen(path) + 1 + 1001;
	ck_assert_int_eq(vhp_send(s, &h, kv, NULL, 0, 0), 0);
	ck_assert_int_eq(vhp_recv(s, &h, buf, sizeof(buf), fds, &nfds, 0), 0);
	ck_assert_int_eq(h.err, 0);
	h.type = VHP_KEY_READ;
	h.len = (uint32_t)strlen(path) + 1;
	for (i = 0; i < 3000; i++)
		if (vhp_send(s, &h, path, NULL, 0, MSG_NOSIGNAL) < 0)
			break;		/* dom0 hung up */
	raw_expect_eof(s);

	honest_guest_done(g);
}
END_TEST

/* ---- a guest that attacks its own channel (issue 12) ---- */

struct d0_notify_arg {
	struct vplat_chan *c;
	int n, r, ack;
};

/* n notifies (or, ack, one ack) by dom0; stops at the first error. */
static void *d0_notify_many(void *arg)
{
	struct d0_notify_arg *a = arg;
	int i;

	for (i = 0; i < a->n && !a->r; i++) {
		t0_lock();
		a->r = a->ack ? vplat_chan_ack(a->c) : vplat_notify(a->c);
		t0_unlock();
	}
	return NULL;
}

/* Run d0_notify_many in a thread: 0 if it finished within 3 s. */
static int d0_bounded(struct d0_notify_arg *a)
{
	struct timespec ts;
	pthread_t th;

	ck_assert_int_eq(pthread_create(&th, NULL, d0_notify_many, a), 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 3;
	return pthread_timedjoin_np(th, NULL, &ts);
}

/*
 * A TCP socket whose close waits: SO_LINGER 2 s with unsent data its peer
 * (*peer, kept open, never read) has no room for.  If dom0 dropped the
 * last reference to it, dom0 would wait 2 s (or, with a longer linger,
 * for ever).
 */
static int lingering_for(int *peer, int secs)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct linger lg = { 1, secs };
	socklen_t sl = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0);
	static char buf[65536];

	ck_assert_int_ge(l, 0);
	ck_assert_int_ge(c, 0);
	ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(l, 1), 0);
	ck_assert_int_eq(getsockname(l, (struct sockaddr *)&sa, &sl), 0);
	ck_assert_int_eq(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	*peer = accept(l, NULL, NULL);
	ck_assert_int_ge(*peer, 0);
	close(l);
	while (send(c, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
	setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	return c;
}

static int lingering_socket(int *peer)
{
	return lingering_for(peer, 2);
}

/* Datagrams a fresh pair like a channel's holds unread. */
static int dgram_cap(void)
{
	int sv[2], n = 0;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
	while (n < 100000 && send(sv[0], "x", 1, MSG_DONTWAIT) == 1)
		n++;
	close(sv[0]);
	close(sv[1]);
	return n;
}

/*
 * Everything a guest can do to what it holds of a channel -- fill it,
 * make it blocking, flood dom0, close it -- never makes dom0 wait
 * (docs/platform.md "Never block on a guest").  Before the fix the guest's
 * eventfd at its maximum with O_NONBLOCK cleared left dom0 in write(2)
 * for ever.
 */
START_TEST(t_chan_hostile)
{
	struct d0_notify_arg na = { .n = 10000 };
	uint64_t max = UINT64_MAX - 1;
	struct vplat_chan *gc, *dc;
	struct pollfd pfd;
	struct vplat *g;
	uint32_t port;
	int fd, fl, i, n, r, ls, lpeer;

	t0_open(1);
	g = guest_open();
	ck_assert_int_eq(vplat_chan_alloc(g, VPLAT_DOM0, &gc, &port), 0);
	t0_lock();
	ck_assert_int_eq(vplat_chan_bind(t0.d, vplat_domid(g), port, &dc), 0);
	t0_unlock();

	/* What dom0 writes to, the guest's end, made blocking; the guest
	 * cannot fill it (a write reaches dom0's end, shut for reading),
	 * only dom0's own notifications do: 10000 of them, never read. */
	fd = vplat_chan_fd(gc);
	ck_assert_int_lt(write(fd, &max, sizeof(max)), 0);
	ck_assert_int_eq(errno, EPIPE);
	fl = fcntl(fd, F_GETFL);
	ck_assert_int_ge(fl, 0);
	ck_assert_int_eq(fcntl(fd, F_SETFL, fl & ~O_NONBLOCK), 0);
	na.c = dc;
	ck_assert_msg(d0_bounded(&na) == 0, "dom0 blocked in vplat_notify on a guest's channel");
	ck_assert_int_eq(na.r, 0);
	pfd.fd = fd;
	pfd.events = POLLIN;
	ck_assert_int_eq(poll(&pfd, 1, 0), 1);	/* the guest was notified */
	/* ... and dom0 did run into a full queue (EAGAIN: "notified"). */
	n = dgram_cap();
	for (i = 0; i < 10000 && recv(fd, &max, 1, MSG_DONTWAIT) == 1; i++)
		;
	ck_assert_int_gt(n, 0);
	ck_assert_int_ge(i, n);
	ck_assert_int_lt(i, 10000);

	/* What dom0 reads, emptied by the guest and made blocking (the
	 * guest shares it: here dom0's copy of the same description). */
	t0_lock();
	while (vplat_chan_ack(dc) == 1)
		;
	fl = fcntl(vplat_chan_fd(dc), F_GETFL);
	ck_assert_int_eq(fcntl(vplat_chan_fd(dc), F_SETFL, fl & ~O_NONBLOCK), 0);
	t0_unlock();
	na.n = 1;
	na.ack = 1;
	ck_assert_msg(d0_bounded(&na) == 0, "dom0 blocked in vplat_chan_ack on a guest's channel");
	ck_assert_int_eq(na.r, 0);

	/* Fds sent over its channel end never reach dom0 (whose dropping
	 * the last reference to a lingering socket would wait). */
	ls = lingering_socket(&lpeer);
	{
		char cb[CMSG_SPACE(sizeof(int))] = { 0 }, x = 'x';
		struct iovec io = { .iov_base = &x, .iov_len = 1 };
		struct msghdr mh = { .msg_iov = &io, .msg_iovlen = 1,
				     .msg_control = cb, .msg_controllen = sizeof(cb) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &ls, sizeof(int));
		ck_assert_int_lt(sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL), 0);
	}
	close(ls);
	close(lpeer);

	/* A guest flooding dom0: every notify is 0, each ack is bounded
	 * work and the flood is drained in a bounded number of them. */
	for (i = 0; i < 100000; i++)
		ck_assert_int_eq(vplat_notify(gc), 0);
	t0_lock();
	for (n = 0; n < 100000 && vplat_chan_ack(dc) == 1; n++)
		;
	ck_assert_int_lt(n, 100000);
	ck_assert_int_eq(vplat_chan_ack(dc), 0);
	t0_unlock();

	/* The guest closes its end: dom0's is not left readable for ever. */
	vplat_chan_close(gc);
	usleep(50000);
	t0_lock();
	pfd.fd = vplat_chan_fd(dc);
	vplat_chan_ack(dc);
	ck_assert_int_eq(poll(&pfd, 1, 50), 0);
	r = vplat_notify(dc);
	ck_assert(r == 0 || r == -EPIPE);
	vplat_chan_close(dc);
	t0_unlock();
	vplat_close(g);
	t0_close();
}
END_TEST

/* One honest round trip, in ms: dom0 must not be waiting on anything. */
static int64_t honest_ms(struct vplat *g)
{
	int64_t t = vplat_now_ms();

	ck_assert_int_eq(vplat_key_write(g, "still", "here"), 0);
	return vplat_now_ms() - t;
}

/*
 * Files a guest hands dom0 that close slowly (a TCP socket lingering with
 * unsent data): sent as a SHARE's memfd (a protocol error: before, only
 * -EINVAL, so one connection could pump such files for ever), three at a
 * time, left unread in its socket when it is cut off.  dom0 drops them
 * all without waiting (closing threads do): the honest guest's round
 * trips stay fast, where each drop used to cost the 2 s linger, and every
 * fd is closed in the end.
 */
START_TEST(t_guest_files)
{
	struct vhp_hdr h = { 0 };
	int s, ls[3], peer[3], i, base;
	struct vplat *g;

	t0_open(1);
	g = guest_open();
	base = count_fds();
	for (i = 0; i < 3; i++)
		ls[i] = lingering_socket(&peer[i]);

	s = raw_connect();	/* a lingering socket for a memfd: cut off */
	raw_hello(s);
	h.type = VHP_SHARE;
	h.seq = 1;
	h.arg[0] = 100;
	h.arg[1] = 1;
	t0_lock();		/* dom0 receives it after this close */
	ck_assert_int_eq(vhp_send(s, &h, NULL, &ls[0], 1, 0), 0);
	close(ls[0]);		/* dom0 holds the last reference */
	t0_unlock();
	raw_expect_eof(s);
	ck_assert_int_lt(honest_ms(g), 1000);

	s = raw_connect();	/* three at once, then more left unread */
	raw_hello(s);
	{
		char cb[CMSG_SPACE(sizeof(int) * 3)] = { 0 };
		int three[3] = { ls[1], ls[2], ls[1] };
		struct iovec io = { .iov_base = &h, .iov_len = sizeof(h) };
		struct msghdr mh = { .msg_iov = &io, .msg_iovlen = 1,
				     .msg_control = cb, .msg_controllen = sizeof(cb) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * 3);
		memcpy(CMSG_DATA(cm), three, sizeof(three));
		h.type = VHP_UNSHARE;	/* no fds allowed, and three of them */
		h.len = 0;
		for (i = 0; i < 20; i++)	/* until dom0 hangs up */
			if (sendmsg(s, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(h))
				break;
		ck_assert_int_gt(i, 0);
	}
	close(ls[1]);
	close(ls[2]);
	raw_expect_eof(s);
	ck_assert_int_lt(honest_ms(g), 1000);
	ck_assert_int_lt(honest_ms(g), 1000);

	for (i = 0; i < 3; i++)
		close(peer[i]);
	/* Nothing left open: the lingering sockets, their connections. */
	ck_assert_int_eq(count_fds_wait(base), base);
	vplat_close(g);
	t0_close();
}
END_TEST

/* A unix socket holding a lingering TCP socket (linger 30 s, ended when
 * *tcp_peer closes) in its queue: whoever drops the last reference to it
 * waits.  *keep: its peer. */
static int nested_lingering(int *keep, int *tcp_peer)
{
	int sv[2], ls = lingering_for(tcp_peer, 30);

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
	ck_assert_int_eq(raw_send_fds(sv[0], "x", 1, ls, 1), 1);
	close(ls);
	*keep = sv[0];
	return sv[1];
}

/* A raw guest that gives dom0 fd as a SHARE's memfd, and the last
 * reference to it: cut off at once (the SO_LINGER dom0 turns off is the
 * outer socket's only).  Its connection, for raw_expect_eof. */
static int raw_share_bad(int fd)
{
	struct vhp_hdr h = { .type = VHP_SHARE, .seq = 1, .arg = { 100, 1 } };
	int s = raw_connect();

	raw_hello(s);
	t0_lock();		/* dom0 receives it after this close */
	ck_assert_int_eq(vhp_send(s, &h, NULL, &fd, 1, 0), 0);
	close(fd);
	t0_unlock();
	return s;
}

/*
 * Closes that wait do not hold up the others: a guest's file whose close
 * waits (a lingering socket inside a unix socket) stalls one closing
 * thread, and another one starts (before: one thread, and every later
 * fd waited the linger).  Files waiting to be closed count against the
 * guest's uid: past HD_REAP_UID_MAX its guests are refused until they
 * are closed (before: nothing counted, and past 4096 fds they were left
 * open).  All is closed in the end.
 */
START_TEST(t_reaper_stuck)
{
	int keep[2], tpeer[2], u, s, p[2], base, i, r, pump[8];
	struct vhp_hdr h;
	char c;
	struct vplat *g, *g2;
	struct rlimit rl;
	int64_t t;

	/* room for the fds pumped (t_fd_caps may have lowered it) */
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = rl.rlim_max < 8192 ? rl.rlim_max : 8192;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	t0_open(1);
	g = guest_open();
	ck_assert_int_eq(pipe(p), 0);
	base = count_fds();
	u = nested_lingering(&keep[0], &tpeer[0]);
	raw_expect_eof(raw_share_bad(u));
	usleep(50000);		/* the reaper is in that close now */
	g2 = guest_open();	/* an honest guest comes and goes */
	ck_assert_int_lt(honest_ms(g2), 1000);
	t = vplat_now_ms();
	vplat_close(g2);
	/* its connection closed (another thread), not after the linger */
	while (count_fds() > base + 2 && vplat_now_ms() - t < T_WAIT_MS)
		usleep(5000);
	ck_assert_int_lt(vplat_now_ms() - t, 1000);

	/* The uid's second stuck close, then fds past its limit. */
	u = nested_lingering(&keep[1], &tpeer[1]);
	pump[7] = raw_share_bad(u);	/* closed after the first linger */
	usleep(50000);
	/* (Their connections are closed behind the uid's stuck closes.) */
	for (i = 0; i < HD_REAP_UID_MAX / VHP_SCM_MAX_FD + 1; i++) {
		pump[i] = raw_connect();
		raw_hello(pump[i]);
		ck_assert_int_eq(raw_send_fds(pump[i], NULL, 0, p[0], VHP_SCM_MAX_FD), 0);
	}
	usleep(200000);
	s = raw_connect();	/* refused: no WELCOME, an end once closed */
	h.type = VHP_HELLO;
	h.len = 4;
	h.arg[0] = VHP_VERSION;
	vhp_send(s, &h, "raw", NULL, 0, MSG_NOSIGNAL);
	ck_assert_int_lt(honest_ms(g), 1000);	/* a guest already in is fine */
	ck_assert_int_le(recv(s, &c, 1, MSG_DONTWAIT), 0);

	/* Once the lingers end (their peers gone) everything is closed, and
	 * the uid welcome again. */
	for (i = 0; i < 2; i++) {
		close(keep[i]);
		close(tpeer[i]);
	}
	r = (int)recv(s, &c, 1, 0);	/* the end, no WELCOME first */
	ck_assert_msg(r == 0 || (r < 0 && errno == ECONNRESET), "refused guest: %d %s",
		      r, strerror(errno));
	close(s);
	for (i = 0; i < HD_REAP_UID_MAX / VHP_SCM_MAX_FD + 1; i++)
		raw_expect_eof(pump[i]);
	raw_expect_eof(pump[7]);
	ck_assert_int_eq(count_fds_wait(base), base);
	/* (its counts drop a moment after each close returns) */
	for (i = 0; i < 50; i++) {
		s = raw_connect();
		h.type = VHP_HELLO;
		h.len = 4;
		vhp_send(s, &h, "raw", NULL, 0, MSG_NOSIGNAL);
		if (recv(s, &h, sizeof(h), 0) == (ssize_t)sizeof(h))
			break;
		close(s);
		usleep(20000);
	}
	ck_assert_int_eq(h.type, VHP_WELCOME);
	close(s);
	ck_assert_int_eq(count_fds_wait(base), base);
	close(p[0]);
	close(p[1]);
	vplat_close(g);
	t0_close();
}
END_TEST

/*
 * A zero-length packet still carries its SCM_RIGHTS fds: it is end of
 * stream only without any.  Before the fix both sides took it for EOF
 * and left every fd it carried open (dom0: 200 per connection).
 */
START_TEST(t_zero_len_fds)
{
	struct vhp_hdr h;
	int sv[2], p[2], fds[VHP_MAX_FDS], nfds, base, s, i;
	char buf[64];
	struct vplat *g;

	t0_open(1);
	g = guest_open();
	ck_assert_int_eq(pipe(p), 0);
	base = count_fds();
	for (i = 0; i < 3; i++) {	/* repeatable: reconnect and again */
		s = raw_connect();
		raw_hello(s);
		ck_assert_int_eq(raw_send_fds(s, NULL, 0, p[0], 200), 0);
		raw_expect_eof(s);
		ck_assert_int_eq(count_fds_wait(base), base);
	}
	ck_assert_int_lt(honest_ms(g), 1000);

	/* The receiving side both use (the guest's too). */
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	base = count_fds();
	ck_assert_int_eq(raw_send_fds(sv[0], NULL, 0, p[0], 2), 0);
	ck_assert_int_eq(vhp_recv(sv[1], &h, buf, sizeof(buf), fds, &nfds, 0), -EBADMSG);
	ck_assert_int_eq(nfds, 0);
	ck_assert_int_eq(count_fds(), base);
	close(sv[0]);		/* a true end of stream is still one */
	ck_assert_int_eq(vhp_recv(sv[1], &h, buf, sizeof(buf), fds, &nfds, 0), -EPIPE);
	close(sv[1]);
	close(p[0]);
	close(p[1]);
	vplat_close(g);
	t0_close();
}
END_TEST

/*
 * A guest that asks for channels and closes them without ever reading
 * its socket: each CHAN reply waiting in its outbox holds two of dom0's
 * fds, which no cap counted (review: 5000 cycles left 9444 fds).  Now
 * past 2 x max_chans of them it is cut off, and every fd is closed.
 */
START_TEST(t_chan_outbox)
{
	struct vhp_hdr h = { 0 };
	int s, i, r, base;
	struct vplat *g;

	t0_open(1);
	g = guest_open();
	base = count_fds();
	s = raw_connect();
	raw_hello(s);
	for (i = 0; i < 4000; i++) {
		h.type = i & 1 ? VHP_CHAN_CLOSE : VHP_CHAN;
		h.seq = (uint32_t)i + 2;
		h.arg[0] = (uint32_t)i / 2;
		r = vhp_send(s, &h, NULL, NULL, 0, MSG_DONTWAIT);
		if (r == -EAGAIN) {
			usleep(1000);	/* dom0 reads 16 a round */
			i--;
		} else if (r) {
			break;		/* dom0 hung up */
		}
	}
	ck_assert_int_lt(i, 4000);
	raw_expect_eof(s);
	ck_assert_int_eq(count_fds_wait(base), base);
	honest_guest_done(g);
}
END_TEST

/*
 * One message can install 253 fds, and what finds no free fd the kernel
 * drops (closes) in vrdmad.  While fewer than that (and a margin) are
 * free, dom0 reads no guest's socket (before: it read on).
 */
START_TEST(t_fds_low)
{
	struct rlimit rl, low;
	int s, p[2], base;
	char c;

	t0_open(1);
	ck_assert_int_eq(pipe(p), 0);
	base = count_fds();
	s = raw_connect();
	raw_hello(s);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	low = rl;
	low.rlim_cur = (rlim_t)count_fds() + 200;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	usleep(100000);		/* dom0 counts free fds once a round */
	ck_assert_int_eq(raw_send_fds(s, NULL, 0, p[0], 100), 0);
	usleep(300000);		/* many rounds of dom0's loop */
	ck_assert_int_eq(recv(s, &c, 1, MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EAGAIN);	/* not read: not cut off */
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	raw_expect_eof(s);	/* read now: a protocol error */
	close(p[0]);
	close(p[1]);
	ck_assert_int_eq(count_fds_wait(base - 2), base - 2);
	t0_close();
}
END_TEST

/* ---- a guest never trusts dom0 either ---- */

struct fake_dom0 {
	int lsock, chan_sv[2];	/* the channel socketpair it hands out */
	int bad;		/* CHAN replies a pipe for the eventfd */
};

/* A dom0 that says HELLO back and makes channels, as told. */
static void *fake_dom0_run(void *arg)
{
	struct fake_dom0 *f = arg;
	int s = accept(f->lsock, NULL, NULL), fds[VHP_MAX_FDS], nfds, p[2], efd;
	struct vhp_hdr h;
	char buf[256];

	while (s >= 0 && vhp_recv(s, &h, buf, sizeof(buf), fds, &nfds, 0) == 0) {
		struct vhp_hdr r = { .type = VHP_REPLY, .seq = h.seq };

		if (h.type == VHP_HELLO) {
			r.type = VHP_WELCOME;
			r.arg[0] = 9;
		}
		if (h.type == VHP_CHAN_CLOSE || h.type == VHP_UNSHARE)
			continue;
		if (h.type != VHP_CHAN) {
			vhp_send(s, &r, NULL, NULL, 0, MSG_NOSIGNAL);
			continue;
		}
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM, 0, f->chan_sv), 0);
		if (f->bad) {
			ck_assert_int_eq(pipe(p), 0);
			vhp_send(s, &r, NULL, (int[]){ p[1], f->chan_sv[1] }, 2, MSG_NOSIGNAL);
			close(p[0]);
			close(p[1]);
			close(f->chan_sv[0]);
		} else {
			efd = eventfd(0, 0);
			vhp_send(s, &r, NULL, (int[]){ efd, f->chan_sv[1] }, 2, MSG_NOSIGNAL);
			close(efd);
		}
		close(f->chan_sv[1]);
	}
	if (s >= 0)
		close(s);
	return NULL;
}

/*
 * A guest checks what dom0 makes for it: a channel whose guest->dom0
 * object is not an eventfd is refused (before: taken, and a pipe's write
 * can wait on whoever fills it), and fds dom0 sends on a channel are
 * refused by the guest's end (SO_PASSRIGHTS) or, on an older kernel,
 * break the channel (-EIO); none is left open.
 */
START_TEST(t_guest_distrust)
{
	struct vplat_cfg cfg = { .role = VPLAT_GUEST };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct fake_dom0 f = { .bad = 1 };
	char dir[64] = "/tmp/vrdma-fake-XXXXXX";
	struct vplat_chan *c;
	struct vplat *g;
	pthread_t th;
	uint32_t port;
	int base, pfd, r;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, VHP_SOCK_NAME);
	f.lsock = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	ck_assert_int_eq(bind(f.lsock, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(f.lsock, 1), 0);
	base = count_fds();
	ck_assert_int_eq(pthread_create(&th, NULL, fake_dom0_run, &f), 0);
	cfg.run_dir = dir;
	ck_assert_int_eq(vplat_open(&cfg, &g), 0);
	ck_assert_int_eq(vplat_chan_alloc(g, VPLAT_DOM0, &c, &port), -EIO);

	f.bad = 0;
	ck_assert_int_eq(vplat_chan_alloc(g, VPLAT_DOM0, &c, &port), 0);
	pfd = eventfd(0, 0);
	{
		char cb[CMSG_SPACE(sizeof(int))] = { 0 }, x = 'x';
		struct iovec io = { .iov_base = &x, .iov_len = 1 };
		struct msghdr mh = { .msg_iov = &io, .msg_iovlen = 1,
				     .msg_control = cb, .msg_controllen = sizeof(cb) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pfd, sizeof(int));
		r = (int)sendmsg(f.chan_sv[0], &mh, MSG_DONTWAIT);
	}
	close(pfd);
	if (r < 0)		/* refused by the guest's end (Linux 6.16) */
		ck_assert_int_eq(vplat_chan_ack(c), 0);
	else
		ck_assert_int_eq(vplat_chan_ack(c), -EIO);
	ck_assert_int_eq(send(f.chan_sv[0], "y", 1, 0), 1);	/* plain ones pass */
	ck_assert_int_eq(vplat_chan_wait(c, T_WAIT_MS), 0);
	vplat_chan_close(c);
	close(f.chan_sv[0]);
	vplat_close(g);
	pthread_join(th, NULL);
	close(f.lsock);
	unlink(sa.sun_path);
	rmdir(dir);
	ck_assert_int_eq(count_fds(), base - 1);
}
END_TEST

static Suite *plat_suite(void)
{
	Suite *s = suite_create("plat");
	TCase *tc = tcase_create("host");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, t_open);
	tcase_add_test(tc, t_no_dom0);
	tcase_add_test(tc, t_toolstack);
	tcase_add_test(tc, t_tx_retry);
	tcase_add_test(tc, t_tenant_bad_key);
	tcase_add_test(tc, t_keys);
	tcase_add_test(tc, t_perm);
	tcase_add_test(tc, t_watch);
	tcase_add_test(tc, t_key_wait);
	tcase_add_test(tc, t_share_map);
	tcase_add_test(tc, t_bad_ref);
	tcase_add_test(tc, t_read_only);
	tcase_add_test(tc, t_limits);
	tcase_add_test(tc, t_keystore_index);
	tcase_add_test(tc, t_map_runs);
	tcase_add_test(tc, t_fd_caps);
	tcase_add_test(tc, t_chan);
	tcase_add_test(tc, t_guest_killed);
	tcase_add_test(tc, t_no_fd_leak);
	tcase_add_test(tc, t_malformed);
	tcase_add_test(tc, t_slow_reader);
	tcase_add_test(tc, t_chan_hostile);
	tcase_add_test(tc, t_guest_files);
	tcase_add_test(tc, t_zero_len_fds);
	tcase_add_test(tc, t_reaper_stuck);
	tcase_add_test(tc, t_chan_outbox);
	tcase_add_test(tc, t_fds_low);
	tcase_add_test(tc, t_guest_distrust);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(plat_suite());

	return ck_run(sr);
}
