// SPDX-License-Identifier: MIT
/*
 * The attach policy (dom0-daemon/attach.c, issue 13) against the stub
 * platform: parsing (every value, every refusal), matching, and the watch
 * side -- domains there at start, domains introduced later, names that
 * come late or never, markers written after the domain appeared (and "1"
 * after another value), dom0 never, a refusal not retried, a detach not
 * undone and shown as one, a detach kept by VM name, a domain gone
 * between the listing and the attach, a domain listed before libxl
 * wrote its domid, domains released, many events
 * listed once, many domains.  The attach function is a recorder here;
 * vrdmad passes the one `vrdmactl attach` runs.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../backend/vout.h"
#include "../dom0-daemon/attach.h"
#include "stub_plat.h"
#include "vplat.h"
#include "ck_run.h"

#define T_MAX	16

static uint32_t t_got[T_MAX];	/* the first domids attached, in order */
static unsigned t_n;
static int t_refuse;		/* the next attach fails with this */
static uint32_t t_busy_dom;	/* attaches of this domain say -EAGAIN... */
static unsigned t_busy_n;	/* ...this many times */
static unsigned t_busy_calls;	/* attaches of t_busy_dom */
static unsigned t_vms;		/* /vm/ identities made */
static struct vplat *t_p;
static struct vd_auto *t_a;	/* the running policy */
static const char *t_kept;	/* a VM the operator detached, kept */

static int t_attach(void *arg, uint32_t domid, uint32_t devid, struct vout *o)
{
	char path[64], v[16];
	int err = t_refuse;

	ck_assert_ptr_eq(arg, &t_got);
	ck_assert_uint_eq(devid, 0);
	t_refuse = 0;
	if (domid == t_busy_dom) {
		t_busy_calls++;
		if (t_busy_n) {
			t_busy_n--;
			return vout_err(o, -EAGAIN, "attach %u/0: xenstore busy", domid);
		}
	}
	/* as vplat_dev_attach: no domid key, no domain */
	snprintf(path, sizeof(path), "/local/domain/%u/domid", domid);
	if (!err && vplat_key_read(t_p, path, v, sizeof(v)))
		err = -ESRCH;
	if (err)
		return vout_err(o, err, "attach %u/0: tenant full", domid);
	if (t_n < T_MAX)	/* counted beyond */
		t_got[t_n] = domid;
	t_n++;
	return 0;
}

static bool t_detached(void *arg, const char *name)
{
	ck_assert_ptr_eq(arg, &t_got);
	return t_kept && !strcmp(name, t_kept);
}

static const struct vd_attach_ops t_ops = { t_attach, t_detached };

/* The platform's events, then vrdmad's vd_auto_run after them. */
static void t_run(void)
{
	stub_run();
	vd_auto_run(t_a);
}

static void t_setup(void)
{
	stub_reset();
	t_n = 0;
	t_refuse = 0;
	t_a = NULL;
	t_kept = NULL;
	t_busy_dom = UINT32_MAX;
	t_busy_n = 0;
	t_busy_calls = 0;
	t_p = stub_open(VPLAT_DOM0);
	ck_assert_ptr_nonnull(t_p);
	/* xen-init-dom0 writes dom0's own dir: never attached */
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/0/name", "Domain-0"), 0);
}

static void t_teardown(void)
{
	vplat_close(t_p);
	stub_reset();
}

/* libxl: the domain's home, name and vm (a new uuid), its domid. */
static void t_make(uint32_t domid, const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), "/local/domain/%u/vm", domid);
	ck_assert_int_eq(vplat_key_printf(t_p, path, "/vm/0000-%u", ++t_vms), 0);
	snprintf(path, sizeof(path), "/local/domain/%u/domid", domid);
	ck_assert_int_eq(vplat_key_printf(t_p, path, "%u", domid), 0);
	snprintf(path, sizeof(path), "/local/domain/%u/name", domid);
	if (name)	/* NULL: the name comes later */
		ck_assert_int_eq(vplat_key_write(t_p, path, name), 0);
}

/* xl create: t_make, then the introduce event. */
static void t_create(uint32_t domid, const char *name)
{
	t_make(domid, name);
	stub_domain_event(VPLAT_WATCH_INTRODUCE);
	t_run();
}

static void t_destroy(uint32_t domid)
{
	char path[64];

	snprintf(path, sizeof(path), "/local/domain/%u", domid);
	vplat_key_rm(t_p, path);
	stub_domain_event(VPLAT_WATCH_RELEASE);
	t_run();
}

static struct vd_auto *t_start(const char *policy)
{
	struct vd_attach pol;
	struct vd_auto *a = NULL;

	ck_assert_int_eq(vd_attach_policy_parse(policy, &pol, NULL), 0);
	ck_assert_int_eq(vd_auto_start(t_p, &pol, &t_ops, &t_got, &a), 0);
	ck_assert_ptr_nonnull(a);
	t_a = a;
	t_run();
	return a;
}

/* The JSON of attach-policy, for the decisions. */
static void t_show(struct vd_auto *a, char *buf, size_t len)
{
	struct vout o;
	FILE *f = fmemopen(buf, len, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(vout_init(&o, true), 0);
	vd_auto_show(a, &o);
	ck_assert_int_eq(vout_finish(&o, f), 0);
	fclose(f);
}

START_TEST(t_parse)
{
	static const char *const good[] = { "none", "all", "marker", "name:domu*",
					    "name:rdma-[0-9]?", "name:*" };
	static const char *const bad[] = { "", "ALL", "all ", " none", "yes", "1",
					   "name", "name:", "names:x", "marker:1",
					   "name:a/b", "name:a\tb", "nome:x" };
	struct vd_attach a = { .kind = VD_ATTACH_ALL }, b;
	char buf[VD_ATTACH_GLOB_MAX + 8], big[300];
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ck_assert_int_eq(vd_attach_policy_parse(good[i], &b, &why), 0);
		ck_assert_str_eq(vd_attach_policy_str(&b, buf, sizeof(buf)), good[i]);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		ck_assert_msg(vd_attach_policy_parse(bad[i], &a, &why) == -EINVAL,
			      "'%s' accepted", bad[i]);
		ck_assert_ptr_nonnull(why);
		ck_assert_int_eq(a.kind, VD_ATTACH_ALL);	/* untouched */
	}
	ck_assert_int_eq(vd_attach_policy_parse("name:", &a, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "pattern"));
	memset(big, 'x', sizeof(big));
	memcpy(big, "name:", 5);
	big[5 + VD_ATTACH_GLOB_MAX] = '\0';			/* 128 bytes: too long */
	ck_assert_int_eq(vd_attach_policy_parse(big, &a, &why), -EINVAL);
	big[5 + VD_ATTACH_GLOB_MAX - 1] = '\0';			/* 127: fits */
	ck_assert_int_eq(vd_attach_policy_parse(big, &a, NULL), 0);
	ck_assert_str_eq(a.glob, big + 5);
	ck_assert_int_eq(vd_attach_policy_parse("none", &a, NULL), 0);
	ck_assert_int_eq(a.kind, VD_ATTACH_NONE);
}
END_TEST

START_TEST(t_match)
{
	struct vd_attach a;

	ck_assert_int_eq(vd_attach_policy_parse("none", &a, NULL), 0);
	ck_assert_int_eq(vd_attach_match(&a, 5, "x", "1"), 0);
	ck_assert_int_eq(vd_attach_policy_parse("all", &a, NULL), 0);
	ck_assert_int_eq(vd_attach_match(&a, 5, NULL, NULL), 1);
	ck_assert_int_eq(vd_attach_match(&a, 0, "Domain-0", "1"), 0);	/* never dom0 */
	ck_assert_int_eq(vd_attach_policy_parse("name:rdma-*", &a, NULL), 0);
	ck_assert_int_eq(vd_attach_match(&a, 5, "rdma-1", NULL), 1);
	ck_assert_int_eq(vd_attach_match(&a, 5, "rdma-", NULL), 1);
	ck_assert_int_eq(vd_attach_match(&a, 5, "web-1", NULL), 0);
	ck_assert_int_eq(vd_attach_match(&a, 5, "xrdma-1", NULL), 0);	/* anchored */
	ck_assert_int_eq(vd_attach_match(&a, 5, "RDMA-1", NULL), 0);	/* case counts */
	ck_assert_int_eq(vd_attach_match(&a, 5, "", NULL), 0);
	ck_assert_int_eq(vd_attach_match(&a, 5, NULL, NULL), -EAGAIN);
	ck_assert_int_eq(vd_attach_match(&a, 0, "rdma-0", NULL), 0);
	ck_assert_int_eq(vd_attach_policy_parse("name:domu[13]", &a, NULL), 0);
	ck_assert_int_eq(vd_attach_match(&a, 5, "domu1", NULL), 1);
	ck_assert_int_eq(vd_attach_match(&a, 5, "domu2", NULL), 0);
	ck_assert_int_eq(vd_attach_policy_parse("marker", &a, NULL), 0);
	ck_assert_int_eq(vd_attach_match(&a, 5, "x", NULL), -EAGAIN);
	ck_assert_int_eq(vd_attach_match(&a, 5, "x", "1"), 1);
	/* not "1": not yet, dom0 may write "1" later */
	ck_assert_int_eq(vd_attach_match(&a, 5, "x", "0"), -EAGAIN);
	ck_assert_int_eq(vd_attach_match(&a, 5, "x", "yes"), -EAGAIN);
	ck_assert_int_eq(vd_attach_match(&a, 5, "x", ""), -EAGAIN);
	ck_assert_int_eq(vd_attach_match(&a, 0, "x", "1"), 0);
}
END_TEST

/* all: domains there at start and later ones; dom0 never; gone ones forgotten. */
START_TEST(t_all)
{
	struct vd_auto *a;
	char js[2048];

	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/3/domid", "3"), 0);
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/3/name", "early"), 0);
	a = t_start("all");
	ck_assert_uint_eq(t_n, 1);
	ck_assert_uint_eq(t_got[0], 3);
	t_create(4, "web");
	t_create(5, "db");
	ck_assert_uint_eq(t_n, 3);
	ck_assert_uint_eq(t_got[1], 4);
	ck_assert_uint_eq(t_got[2], 5);
	/* another event: nothing attached twice */
	stub_domain_event(VPLAT_WATCH_INTRODUCE);
	t_run();
	ck_assert_uint_eq(t_n, 3);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"policy\":\"all\""));
	ck_assert_ptr_nonnull(strstr(js, "\"active\":true"));
	ck_assert_ptr_nonnull(strstr(js, "\"name\":\"web\",\"state\":\"attached\""));
	ck_assert_ptr_null(strstr(js, "Domain-0"));
	t_destroy(4);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_null(strstr(js, "\"web\""));
	/* the domid again (a new domain): decided again */
	t_create(4, "web2");
	ck_assert_uint_eq(t_n, 4);
	ck_assert_uint_eq(t_got[3], 4);
	/* a device model's stub domain and the xenstore domain: never */
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/6/target", "5"), 0);
	t_create(6, "db-dm");
	t_create(7, "Xenstore");
	ck_assert_uint_eq(t_n, 4);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"name\":\"db-dm\",\"state\":\"not-matched\""));
	vd_auto_stop(a);
}
END_TEST

/* name:GLOB: a domain named to not match is left alone. */
START_TEST(t_name)
{
	struct vd_auto *a = t_start("name:rdma-*");
	char js[2048];

	t_create(1, "web-1");
	t_create(2, "rdma-a");
	t_create(3, "myrdma-b");
	ck_assert_uint_eq(t_n, 1);
	ck_assert_uint_eq(t_got[0], 2);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"name\":\"web-1\",\"state\":\"not-matched\""));
	ck_assert_ptr_nonnull(strstr(js, "\"name\":\"myrdma-b\",\"state\":\"not-matched\""));
	vd_auto_stop(a);
}
END_TEST

/* A name written after the introduce event: found on a tick; one that
 * never comes: given up after VD_ATTACH_NAME_WAIT_MS. */
START_TEST(t_name_late)
{
	struct vd_auto *a = t_start("name:rdma-*");
	int64_t now = vplat_now_ms();
	char js[2048];

	t_create(6, NULL);
	t_create(7, NULL);
	ck_assert_uint_eq(t_n, 0);
	vd_auto_tick(a, now);
	ck_assert_uint_eq(t_n, 0);
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/6/name", "rdma-late"), 0);
	vd_auto_tick(a, now + 100);
	ck_assert_uint_eq(t_n, 1);
	ck_assert_uint_eq(t_got[0], 6);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"domid\":7,\"name\":\"?\",\"state\":\"waiting\""));
	vd_auto_tick(a, now + VD_ATTACH_NAME_WAIT_MS + 1000);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"domid\":7,\"name\":\"?\",\"state\":\"no-name\""));
	/* a name now changes nothing: decided */
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/7/name", "rdma-too-late"), 0);
	vd_auto_tick(a, now + VD_ATTACH_NAME_WAIT_MS + 2000);
	ck_assert_uint_eq(t_n, 1);
	vd_auto_stop(a);
}
END_TEST

/* marker: attached when dom0 writes "1", before or after the domain came,
 * and after another value (xl create -p; xenstore-write; xl unpause). */
START_TEST(t_marker)
{
	struct vd_auto *a = t_start("marker");
	char js[2048];

	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/8/" VD_ATTACH_MARKER_KEY, "1"), 0);
	t_create(8, "marked-before");
	ck_assert_uint_eq(t_n, 1);
	t_create(9, "plain");
	t_create(10, "marked-after");
	ck_assert_uint_eq(t_n, 1);
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/10/" VD_ATTACH_MARKER_KEY, "1"), 0);
	t_run();
	ck_assert_uint_eq(t_n, 2);
	ck_assert_uint_eq(t_got[1], 10);
	/* "0" is not a no for good: the domain waits, "1" attaches it */
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/9/" VD_ATTACH_MARKER_KEY, "0"), 0);
	t_run();
	ck_assert_uint_eq(t_n, 2);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"name\":\"plain\",\"state\":\"waiting\""));
	ck_assert_ptr_nonnull(strstr(js, "vrdma-attach"));
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/9/" VD_ATTACH_MARKER_KEY, "1"), 0);
	t_run();
	ck_assert_uint_eq(t_n, 3);
	ck_assert_uint_eq(t_got[2], 9);
	/* once attached, the marker changes nothing (only vrdmactl detaches) */
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/9/" VD_ATTACH_MARKER_KEY, "0"), 0);
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/9/" VD_ATTACH_MARKER_KEY, "1"), 0);
	t_run();
	ck_assert_uint_eq(t_n, 3);
	/* the operator detached a waiting domain: its marker no longer counts */
	t_create(12, "detached-first");
	vd_auto_note(a, 12, false);
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/12/" VD_ATTACH_MARKER_KEY, "1"), 0);
	t_run();
	ck_assert_uint_eq(t_n, 3);
	/* the marker's watch goes with its domain */
	t_create(11, "never-marked");
	t_destroy(11);
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/11/" VD_ATTACH_MARKER_KEY, "1"), 0);
	t_run();
	ck_assert_uint_eq(t_n, 3);
	vd_auto_stop(a);
}
END_TEST

/* A refusal (a tenant's limit) is logged, not retried; a domain the
 * operator detached is not attached again and says so; none attaches
 * nothing. */
START_TEST(t_refused_detached_none)
{
	struct vd_auto *a = t_start("all");
	char js[2048];

	t_refuse = -EUSERS;
	t_create(12, "full");
	ck_assert_uint_eq(t_n, 0);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"name\":\"full\",\"state\":\"refused\""));
	t_create(13, "ok");
	ck_assert_uint_eq(t_n, 1);
	/* vrdmactl detach 13: its device dirs go, the domain stays */
	vd_auto_note(a, 13, false);
	stub_domain_event(VPLAT_WATCH_INTRODUCE);
	stub_domain_event(VPLAT_WATCH_RELEASE);
	t_run();
	vd_auto_tick(a, vplat_now_ms() + 60000);
	ck_assert_uint_eq(t_n, 1);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"name\":\"ok\",\"state\":\"detached\""));
	/* vrdmactl attach 13: attached again, shown so */
	vd_auto_note(a, 13, true);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"name\":\"ok\",\"state\":\"attached\""));
	vd_auto_note(a, 99, false);		/* a domain it never saw: nothing */
	vd_auto_note(NULL, 13, false);		/* no policy running: nothing */
	vd_auto_stop(a);

	a = t_start("none");
	t_create(14, "x");
	ck_assert_uint_eq(t_n, 1);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"policy\":\"none\",\"active\":false"));
	vd_auto_stop(a);
	t_show(NULL, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"policy\":\"none\""));
}
END_TEST

/* A VM the operator detached, kept by name (the settings file): left
 * alone when it appears, when vrdmad (re)starts with it running, and
 * when it is created again under a new domid; other VMs are not. */
START_TEST(t_kept_detached)
{
	struct vd_auto *a;
	char js[2048];

	t_kept = "web";
	ck_assert_int_eq(vplat_key_printf(t_p, "/local/domain/3/domid", "%u", 3), 0);
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/3/name", "web"), 0);
	a = t_start("all");			/* a restart: web is running */
	ck_assert_uint_eq(t_n, 0);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"domid\":3,\"name\":\"web\",\"state\":\"detached\""));
	t_create(4, "db");
	ck_assert_uint_eq(t_n, 1);
	t_destroy(3);
	t_create(5, "web");			/* xl create web again */
	ck_assert_uint_eq(t_n, 1);
	vd_auto_stop(a);
	a = t_start("name:w*");
	ck_assert_uint_eq(t_n, 1);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"domid\":5,\"name\":\"web\",\"state\":\"detached\""));
	vd_auto_stop(a);
}
END_TEST

/* Destroyed between the listing and the attach (vplat_dev_attach's
 * transaction says -ESRCH): not a refusal nor a decision, forgotten with
 * the domain; one still there (its domid back) is tried again. */
START_TEST(t_gone_meanwhile)
{
	struct vd_auto *a = t_start("all");
	char js[2048];

	t_refuse = -ESRCH;
	t_create(6, "short");
	ck_assert_uint_eq(t_n, 0);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_null(strstr(js, "refused"));
	ck_assert_ptr_nonnull(strstr(js, "\"name\":\"short\",\"state\":\"waiting\""));
	t_destroy(6);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_null(strstr(js, "\"short\""));
	vd_auto_stop(a);
}
END_TEST

/* libxl writes a domain's home and name (libxl__domain_make) before its
 * domid (libxl__build_post, then the introduce event): a listing in
 * between, for another domain's event, leaves it undecided, and its own
 * event attaches it.  The same for a vrdmad starting in that window. */
START_TEST(t_not_built)
{
	struct vd_auto *a;
	char js[2048];

	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/9/name", "booting"), 0);
	a = t_start("all");			/* vrdmad starts meanwhile */
	ck_assert_uint_eq(t_n, 0);
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/6/name", "web"), 0);
	t_create(5, "other");			/* its listing sees 6 half made */
	ck_assert_uint_eq(t_n, 1);
	ck_assert_uint_eq(t_got[0], 5);
	vd_auto_tick(a, vplat_now_ms() + VD_ATTACH_NAME_WAIT_MS + 1000);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"domid\":6,\"name\":\"?\",\"state\":\"waiting\""));
	ck_assert_ptr_nonnull(strstr(js, "\"domid\":9,\"name\":\"?\",\"state\":\"waiting\""));
	t_create(6, "web");			/* build_post: domid, introduce */
	ck_assert_uint_eq(t_n, 2);
	ck_assert_uint_eq(t_got[1], 6);
	t_create(9, "booting");
	ck_assert_uint_eq(t_n, 3);
	ck_assert_uint_eq(t_got[2], 9);
	vd_auto_stop(a);

	/* name: the same, and the name wait counts from the domid */
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/12/name", "web-x"), 0);
	a = t_start("name:web-*");
	t_create(13, "db");
	vd_auto_tick(a, vplat_now_ms() + VD_ATTACH_NAME_WAIT_MS + 1000);
	t_create(12, "web-x");
	ck_assert_uint_eq(t_n, 4);
	ck_assert_uint_eq(t_got[3], 12);
	vd_auto_stop(a);
}
END_TEST

/* A listing that fails is done again from the tick, however quiet the
 * host: no other event may come. */
START_TEST(t_list_retry)
{
	struct vd_auto *a = t_start("all");
	int64_t now = vplat_now_ms();
	unsigned lists;

	stub_fail(STUB_FAIL_LIST, -EIO, 1);
	t_create(5, "quiet");
	ck_assert_uint_eq(stub_fail_left(STUB_FAIL_LIST), 0);
	ck_assert_uint_eq(t_n, 0);
	lists = stub_list_calls();
	t_run();				/* no event, not a second later */
	ck_assert_uint_eq(stub_list_calls(), lists);
	vd_auto_tick(a, now + 2000);
	ck_assert_uint_eq(stub_list_calls(), lists + 1);
	ck_assert_uint_eq(t_n, 1);
	ck_assert_uint_eq(t_got[0], 5);
	vd_auto_tick(a, now + 4000);		/* listed: nothing due */
	ck_assert_uint_eq(stub_list_calls(), lists + 1);
	vd_auto_stop(a);
}
END_TEST

/* A domid reused between two listings (destroy and create before one
 * pass: xl domid_policy="random", an explicit domid) is a new domain: its
 * identity (the vm key, its uuid) differs, and it is decided again. */
START_TEST(t_domid_reused)
{
	struct vd_auto *a = t_start("name:web*");
	char js[2048];

	t_create(7, "db");
	ck_assert_uint_eq(t_n, 0);
	vplat_key_rm(t_p, "/local/domain/7");
	t_make(7, "web-a");
	stub_domain_event(VPLAT_WATCH_RELEASE);
	stub_domain_event(VPLAT_WATCH_INTRODUCE);
	t_run();
	ck_assert_uint_eq(t_n, 1);
	ck_assert_uint_eq(t_got[0], 7);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"domid\":7,\"name\":\"web-a\",\"state\":\"attached\""));
	/* an attached one replaced: the new domain has no device yet */
	vplat_key_rm(t_p, "/local/domain/7");
	t_make(7, "web-b");
	stub_domain_event(VPLAT_WATCH_RELEASE);
	stub_domain_event(VPLAT_WATCH_INTRODUCE);
	t_run();
	ck_assert_uint_eq(t_n, 2);
	ck_assert_uint_eq(t_got[1], 7);
	/* the same domain listed again: decided once */
	stub_domain_event(VPLAT_WATCH_INTRODUCE);
	t_run();
	ck_assert_uint_eq(t_n, 2);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"domid\":7,\"name\":\"web-b\",\"state\":\"attached\""));
	vd_auto_stop(a);
}
END_TEST

/* xenstore too busy to commit (every try conflicted: -EAGAIN): not a
 * refusal; the domain waits and the tick tries again, 100 ms doubling up
 * to 5 s, until it works; listings meanwhile do not hammer it. */
START_TEST(t_busy)
{
	static const unsigned waits[] = { 100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000 };
	struct vd_auto *a = t_start("all");
	int64_t now = vplat_now_ms(), t, last;
	unsigned i, calls;
	char js[2048];

	t_busy_dom = 8;
	t_busy_n = 10;
	t_create(8, "busy");
	ck_assert_uint_eq(t_busy_calls, 1);
	ck_assert_uint_eq(t_n, 0);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"name\":\"busy\",\"state\":\"waiting\""));
	t_create(9, "calm");			/* a listing within the wait */
	ck_assert_uint_eq(t_n, 1);
	ck_assert_uint_eq(t_busy_calls, 1);
	/* from the tick (every 10 ms here), each wait twice the last */
	for (i = 0, last = now, t = now; i < sizeof(waits) / sizeof(waits[0]); t += 10) {
		calls = t_busy_calls;
		vd_auto_tick(a, t);
		if (t_busy_calls == calls)
			continue;
		ck_assert_msg(t - last >= waits[i] && t - last < waits[i] + 20,
			      "try %u after %lld ms, want %u", i + 2, (long long)(t - last),
			      waits[i]);
		last = t;
		i++;
	}
	ck_assert_uint_eq(t_busy_calls, 10);
	ck_assert_uint_eq(t_n, 1);
	vd_auto_tick(a, last + 5000);		/* the 11th works */
	ck_assert_uint_eq(t_busy_calls, 11);
	ck_assert_uint_eq(t_n, 2);
	ck_assert_uint_eq(t_got[1], 8);
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"name\":\"busy\",\"state\":\"attached\""));
	vd_auto_stop(a);
}
END_TEST

/* The tick tries a busy domain once per wait: one whose marker went
 * meanwhile waits for the marker, it is not read at every tick. */
START_TEST(t_busy_once)
{
	struct vd_auto *a = t_start("marker");
	int64_t now = vplat_now_ms();
	unsigned reads;

	t_busy_dom = 8;
	t_busy_n = 1;
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/8/" VD_ATTACH_MARKER_KEY, "1"), 0);
	t_create(8, "busy");
	ck_assert_uint_eq(t_busy_calls, 1);
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/8/" VD_ATTACH_MARKER_KEY, "0"), 0);
	t_run();
	vd_auto_tick(a, now + 150);		/* its retry: the marker says no */
	ck_assert_uint_eq(t_busy_calls, 1);
	reads = stub_read_calls();
	vd_auto_tick(a, now + 1000);
	vd_auto_tick(a, now + 10000);
	ck_assert_uint_eq(stub_read_calls(), reads);
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/8/" VD_ATTACH_MARKER_KEY, "1"), 0);
	t_run();
	ck_assert_uint_eq(t_busy_calls, 2);
	ck_assert_uint_eq(t_n, 1);
	vd_auto_stop(a);
}
END_TEST

/* A domain's identity is read when it is new and after a release (a
 * domid is reused only after one), and a failed read is no identity:
 * the next listing that reads it does not call the domain replaced. */
START_TEST(t_vm_read_late)
{
	struct vd_auto *a = t_start("marker");
	char js[2048];

	t_make(4, "first");
	vplat_key_rm(t_p, "/local/domain/4/vm");	/* no identity yet */
	stub_domain_event(VPLAT_WATCH_INTRODUCE);
	t_run();
	vd_auto_note(a, 4, false);			/* the operator detached it */
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/4/vm", "/vm/late"), 0);
	t_create(5, "second");
	vd_auto_note(a, 5, false);
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/5/vm", "/vm/other"), 0);
	t_create(6, "third");				/* no release: 5 not read */
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"name\":\"first\",\"state\":\"detached\""));
	ck_assert_ptr_nonnull(strstr(js, "\"name\":\"second\",\"state\":\"detached\""));
	t_destroy(6);					/* a release: all read */
	t_show(a, js, sizeof(js));
	ck_assert_ptr_nonnull(strstr(js, "\"name\":\"first\",\"state\":\"detached\""));
	ck_assert_ptr_nonnull(strstr(js, "\"name\":\"second\",\"state\":\"waiting\""));
	vd_auto_stop(a);
}
END_TEST

/* A marker watch that fails is not tried again at every listing, only at
 * the next domain introduced; the listings still read the marker. */
START_TEST(t_marker_watch_fails)
{
	struct vd_auto *a = t_start("marker");
	unsigned i;

	stub_fail(STUB_FAIL_WATCH, -ENOSPC, 100);
	t_create(5, "m");
	ck_assert_uint_eq(stub_fail_left(STUB_FAIL_WATCH), 99);
	for (i = 0; i < 10; i++) {
		stub_domain_event(VPLAT_WATCH_RELEASE);
		t_run();
	}
	vd_auto_tick(a, vplat_now_ms() + 1000);
	ck_assert_uint_eq(stub_fail_left(STUB_FAIL_WATCH), 99);
	stub_domain_event(VPLAT_WATCH_INTRODUCE);
	t_run();
	ck_assert_uint_eq(stub_fail_left(STUB_FAIL_WATCH), 98);
	/* watches work again: the next introduce event makes it */
	stub_fail(STUB_FAIL_WATCH, 0, 0);
	stub_domain_event(VPLAT_WATCH_INTRODUCE);
	t_run();
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/5/" VD_ATTACH_MARKER_KEY, "1"), 0);
	stub_run();				/* the watch alone, no listing */
	ck_assert_uint_eq(t_n, 1);
	ck_assert_uint_eq(t_got[0], 5);
	/* without a watch, a listing reads the marker */
	stub_fail(STUB_FAIL_WATCH, -ENOSPC, 100);
	t_create(6, "n");
	ck_assert_int_eq(vplat_key_write(t_p, "/local/domain/6/" VD_ATTACH_MARKER_KEY, "1"), 0);
	stub_run();
	ck_assert_uint_eq(t_n, 1);
	stub_domain_event(VPLAT_WATCH_RELEASE);
	t_run();
	ck_assert_uint_eq(t_n, 2);
	ck_assert_uint_eq(t_got[1], 6);
	vd_auto_stop(a);
}
END_TEST

/* Domids up to DOMID_FIRST_RESERVED (0x7ff0) are domains, the ids from
 * there on (DOMID_SELF, DOMID_IO, ...) are not: never looked at. */
START_TEST(t_domid_top)
{
	struct vd_auto *a = t_start("all");
	static char js[8192];
	char want[64];
	uint32_t id;

	for (id = 0x7fe8; id <= 0x7fff; id++)
		t_make(id, "top");
	stub_domain_event(VPLAT_WATCH_INTRODUCE);
	t_run();
	ck_assert_uint_eq(t_n, 8);
	for (id = 0x7fe8; id < 0x7ff0; id++)
		ck_assert_uint_eq(t_got[id - 0x7fe8], id);
	t_show(a, js, sizeof(js));
	for (id = 0x7fe8; id <= 0x7fff; id++) {
		snprintf(want, sizeof(want), "\"domid\":%u,", id);
		ck_assert_msg((strstr(js, want) != NULL) == (id < 0x7ff0), "domain %#x", id);
	}
	vd_auto_stop(a);
}
END_TEST

/* Many events, one listing a pass; many domains, each decided once, the
 * gone ones forgotten, shown in domid order. */
START_TEST(t_many)
{
	enum { N = 600, EV = 50 };
	static char js[N * 64 + 1024];
	struct vd_auto *a = t_start("name:vm-*");
	unsigned lists, i, k;
	char path[64], *at;

	lists = stub_list_calls();
	for (i = 0; i < EV; i++) {
		stub_domain_event(VPLAT_WATCH_INTRODUCE);
		stub_domain_event(VPLAT_WATCH_RELEASE);
	}
	t_run();
	ck_assert_uint_eq(stub_list_calls(), lists + 1);
	t_run();				/* no event: no listing */
	ck_assert_uint_eq(stub_list_calls(), lists + 1);

	for (i = 0; i < N; i++) {		/* domids 20.. over three chunks */
		snprintf(path, sizeof(path), "/local/domain/%u/name", 20 + i);
		ck_assert_int_eq(vplat_key_printf(t_p, path, "vm-%u", 20 + i), 0);
		snprintf(path, sizeof(path), "/local/domain/%u/domid", 20 + i);
		ck_assert_int_eq(vplat_key_printf(t_p, path, "%u", 20 + i), 0);
		stub_domain_event(VPLAT_WATCH_INTRODUCE);
	}
	t_run();
	ck_assert_uint_eq(stub_list_calls(), lists + 2);
	ck_assert_uint_eq(t_n, N);
	for (i = 0; i < N; i += 2) {		/* every other one goes */
		snprintf(path, sizeof(path), "/local/domain/%u", 20 + i);
		vplat_key_rm(t_p, path);
		stub_domain_event(VPLAT_WATCH_RELEASE);
	}
	t_run();
	ck_assert_uint_eq(stub_list_calls(), lists + 3);
	t_show(a, js, sizeof(js));
	for (i = 1, k = 0, at = js; i < N; i += 2, k++) {
		snprintf(path, sizeof(path), "\"domid\":%u,\"name\":\"vm-%u\"", 20 + i, 20 + i);
		at = strstr(at, path);
		ck_assert_msg(at, "domain %u missing or out of order", 20 + i);
	}
	ck_assert_ptr_null(strstr(js, "\"domid\":20,"));
	ck_assert_uint_eq(k, N / 2);
	vd_auto_stop(a);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("attach");
	TCase *tc = tcase_create("policy");
	SRunner *sr;

	tcase_add_checked_fixture(tc, t_setup, t_teardown);
	tcase_add_test(tc, t_parse);
	tcase_add_test(tc, t_match);
	tcase_add_test(tc, t_all);
	tcase_add_test(tc, t_name);
	tcase_add_test(tc, t_name_late);
	tcase_add_test(tc, t_marker);
	tcase_add_test(tc, t_refused_detached_none);
	tcase_add_test(tc, t_kept_detached);
	tcase_add_test(tc, t_gone_meanwhile);
	tcase_add_test(tc, t_not_built);
	tcase_add_test(tc, t_list_retry);
	tcase_add_test(tc, t_domid_reused);
	tcase_add_test(tc, t_busy);
	tcase_add_test(tc, t_busy_once);
	tcase_add_test(tc, t_vm_read_late);
	tcase_add_test(tc, t_marker_watch_fails);
	tcase_add_test(tc, t_domid_top);
	tcase_add_test(tc, t_many);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	return ck_run(sr);
}
