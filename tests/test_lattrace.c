// SPDX-License-Identifier: MIT
/*
 * Check suite for the per-hop latency trace: its array (common/vlt.c:
 * bounds, the first N stamps kept then a stop, disarming), the guest's
 * environment (libvrdma/trace.c: VRDMA_LAT_TRACE and _FILE, good and
 * bad, and the file it writes) and dom0's control command
 * (backend/trace/lat.c: `trace lat N | dump | off`, text and JSON).
 * Each test runs in its own process (Check's fork): the traces are the
 * process's.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../libvrdma/vlib.h"
#include "../backend/vbe.h"
#include "../backend/trace/lat.h"
#include "ck_run.h"

START_TEST(test_parse)
{
	uint32_t n = 7;

	ck_assert_int_eq(vlt_parse("1", &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(vlt_parse("0", &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(vlt_parse("1048576", &n), 0);
	ck_assert_uint_eq(n, VLT_MAX);
	n = 7;
	ck_assert_int_eq(vlt_parse("1048577", &n), -ERANGE);
	ck_assert_int_eq(vlt_parse("99999999999999999999999", &n), -ERANGE);
	ck_assert_int_eq(vlt_parse("", &n), -EINVAL);
	ck_assert_int_eq(vlt_parse(NULL, &n), -EINVAL);
	ck_assert_int_eq(vlt_parse("abc", &n), -EINVAL);
	ck_assert_int_eq(vlt_parse("12x", &n), -EINVAL);
	ck_assert_int_eq(vlt_parse("99999999999x", &n), -EINVAL);
	ck_assert_int_eq(vlt_parse("-5", &n), -EINVAL);
	ck_assert_int_eq(vlt_parse(" 5", &n), -EINVAL);
	ck_assert_int_eq(vlt_parse("0x10", &n), -EINVAL);
	ck_assert_uint_eq(n, 7);	/* untouched by a refusal */
}
END_TEST

/* The first cap stamps are kept, in order; then the trace stops itself. */
START_TEST(test_full)
{
	struct vlt t = { 0 };
	uint32_t i;

	ck_assert_int_eq(vlt_arm(&t, 0), -EINVAL);
	ck_assert_int_eq(vlt_arm(&t, VLT_MAX + 1), -EINVAL);
	ck_assert(!t.on && !t.rec);
	ck_assert_int_eq(vlt_arm(&t, 4), 0);
	ck_assert(t.on);
	ck_assert_uint_eq(vlt_count(&t), 0);
	for (i = 0; i < 4; i++)
		vlt_put(&t, 3, 10 + i, 100 + i, i, 5);
	ck_assert(vlt_full(&t));
	ck_assert(t.on);		/* the next stamp finds it full */
	vlt_put(&t, 3, 99, 999, 0, 5);
	ck_assert(!t.on);
	vlt_put(&t, 3, 99, 999, 0, 5);	/* a late caller: nothing */
	ck_assert_uint_eq(vlt_count(&t), 4);
	for (i = 0; i < 4; i++) {
		ck_assert_uint_eq(t.rec[i].qpn, 10 + i);
		ck_assert_uint_eq(t.rec[i].id, 100 + i);
		ck_assert_uint_eq(t.rec[i].kind, 3);
		ck_assert_uint_eq(t.rec[i].dom, 5);
		if (i)
			ck_assert(t.rec[i].t >= t.rec[i - 1].t);
	}
	/* Armed again: empty, on. */
	ck_assert_int_eq(vlt_arm(&t, 2), 0);
	ck_assert(t.on && !vlt_full(&t));
	ck_assert_uint_eq(vlt_count(&t), 0);
	vlt_disarm(&t);
	ck_assert(!t.on && !t.rec);
	ck_assert_uint_eq(vlt_count(&t), 0);
	vlt_put(&t, 3, 1, 1, 0, 0);	/* off: nothing, no crash */
	ck_assert_uint_eq(vlt_count(&t), 0);
	vlt_disarm(&t);			/* twice: fine */
}
END_TEST

START_TEST(test_rate)
{
	struct vlt t = { 0 };
	char how[64];
	uint64_t hz = 0;

	ck_assert_int_eq(vlt_arm(&t, 1), 0);
	/* Right after arming: waits out the calibration's 50 ms. */
	ck_assert_int_eq(vlt_rate(&t, &hz, how, sizeof(how)), 0);
	ck_assert_uint_gt(hz, 100000000);	/* any clock of ours: > 100 MHz */
	ck_assert_uint_lt(hz, 100000000000ull);
	ck_assert(!strncmp(how, "tsc/monotonic:", 14) || !strcmp(how, "monotonic-ns"));
	vlt_disarm(&t);
}
END_TEST

/* ---- the guest's environment (libvrdma/trace.c) ---- */

static char tdir[] = "/tmp/vrdma-lattrace.XXXXXX";

static void env(const char *n, const char *file)
{
	if (n)
		setenv("VRDMA_LAT_TRACE", n, 1);
	else
		unsetenv("VRDMA_LAT_TRACE");
	if (file)
		setenv("VRDMA_LAT_TRACE_FILE", file, 1);
	else
		unsetenv("VRDMA_LAT_TRACE_FILE");
}

START_TEST(test_env_bad)
{
	static const struct { const char *v; int err; } bad[] = {
		{ "abc", -EINVAL }, { "-1", -EINVAL }, { "1e3", -EINVAL }, { "2000000", -ERANGE },
		{ "10 ", -EINVAL }, { "99999999999999999999", -ERANGE },
	};

	env(bad[_i].v, NULL);
	ck_assert_int_eq(vlib_lt_setup(), bad[_i].err);
	ck_assert(!vlib_lt_on() && !vlib_lt_trace.rec);
	/* A program that stamps anyway (the sites test on first): nothing. */
	vlib_lt_put(VLIB_LT_POST, 1, 1, 0);
	ck_assert_uint_eq(vlt_count(&vlib_lt_trace), 0);
	ck_assert_int_eq(vlib_lt_flush(false), 0);
}
END_TEST

START_TEST(test_env_off)
{
	env(NULL, NULL);
	ck_assert_int_eq(vlib_lt_setup(), 0);
	ck_assert(!vlib_lt_on());
	env("", NULL);
	ck_assert_int_eq(vlib_lt_setup(), 0);
	ck_assert(!vlib_lt_on());
	env("0", NULL);
	ck_assert_int_eq(vlib_lt_setup(), 0);
	ck_assert(!vlib_lt_on());
	/* A file name it cannot make: off, said. */
	env("8", "/tmp/x.%d");
	ck_assert_int_eq(vlib_lt_setup(), -EINVAL);
	ck_assert(!vlib_lt_on());
	env("8", "/tmp/x.%");
	ck_assert_int_eq(vlib_lt_setup(), -EINVAL);
	ck_assert(!vlib_lt_on());
}
END_TEST

/* Lines of path starting with prefix and holding part. */
static int count_lines(const char *path, const char *prefix, const char *part)
{
	char line[256];
	int n = 0;
	FILE *f = fopen(path, "r");

	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, prefix, strlen(prefix)) && strstr(line, part))
			n++;
	fclose(f);
	return n;
}

/* Armed from the environment: the first 8 stamps, to FILE with the pid
 * for %p; a second write adds what came since. */
START_TEST(test_env_file)
{
	struct vrdma_wc wc[2] = {
		{ .wr_id = 5, .opcode = VRDMA_WC_RECV_OP, .qp_num = 3 },
		{ .wr_id = 6, .opcode = VRDMA_WC_SEND_OP, .status = VRDMA_WC_WR_FLUSH_ERR,
		  .qp_num = 3 },
	};
	char path[128], want[128];
	int i;

	ck_assert(mkdtemp(tdir) != NULL);
	snprintf(path, sizeof(path), "%s/g.%%p.%%%%", tdir);
	snprintf(want, sizeof(want), "%s/g.%ld.%%", tdir, (long)getpid());
	env("8", path);
	ck_assert_int_eq(vlib_lt_setup(), 0);
	ck_assert(vlib_lt_on());
	ck_assert_uint_eq(vlib_lt_trace.cap, 8);
	vlib_lt_put(VLIB_LT_POST, 3, 4, 0);
	vlib_lt_put(VLIB_LT_BELL, 3, 4, 1u << 16);
	vlib_lt_cqes(wc, 2);
	ck_assert_int_eq(vlib_lt_flush(false), 0);
	ck_assert_int_eq(count_lines(want, "vlt guest hz ", " stamps=4 cap=8 full=0\n"), 1);
	ck_assert_int_eq(count_lines(want, "vlt guest post ", " 3 4\n"), 1);
	ck_assert_int_eq(count_lines(want, "vlt guest bell ", " 3 4 rc=0 bells=1\n"), 1);
	ck_assert_int_eq(count_lines(want, "vlt guest cqe ", " 3 5 op=recv st=0\n"), 1);
	ck_assert_int_eq(count_lines(want, "vlt guest cqe ", " 3 6 op=send st="), 1);
	for (i = 0; i < 10; i++)
		vlib_lt_put(VLIB_LT_RECV, 3, (uint64_t)i, 0);
	ck_assert(!vlib_lt_on());	/* full after 4 more */
	ck_assert_int_eq(vlib_lt_flush(false), 0);
	ck_assert_int_eq(count_lines(want, "vlt guest hz ", " stamps=4 cap=8 full=1\n"), 1);
	ck_assert_int_eq(count_lines(want, "vlt guest recv ", " 3 3\n"), 1);
	ck_assert_int_eq(count_lines(want, "vlt guest recv ", ""), 4);
	ck_assert_int_eq(count_lines(want, "vlt guest ", ""), 2 + 8);
	/* Nothing new: nothing written. */
	ck_assert_int_eq(vlib_lt_flush(false), 0);
	ck_assert_int_eq(vlib_lt_flush(true), 0);
	ck_assert_int_eq(count_lines(want, "vlt guest ", ""), 2 + 8);
	unlink(want);
	rmdir(tdir);
}
END_TEST

/* Armed, nothing stamped: a close writes nothing, exit a header. */
START_TEST(test_env_empty)
{
	char path[128];

	ck_assert(mkdtemp(tdir) != NULL);
	snprintf(path, sizeof(path), "%s/g.vlt", tdir);
	env("4", path);
	ck_assert_int_eq(vlib_lt_setup(), 0);
	ck_assert_int_eq(vlib_lt_flush(false), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_int_eq(vlib_lt_flush(true), 0);
	ck_assert_int_eq(count_lines(path, "vlt guest hz ", " stamps=0 cap=4 full=0\n"), 1);
	ck_assert_int_eq(count_lines(path, "", ""), 1);
	unlink(path);
	rmdir(tdir);
}
END_TEST

/* ---- dom0's command (backend/trace/lat.c) ---- */

/* vbe_node_trace with words, its answer in out (malloc'ed): -errno. */
static int ctl(struct vbe_node *n, bool json, const char *words, char **out)
{
	char buf[128], *argv[8], *save = NULL, *tok;
	size_t len = 0;
	struct vout o;
	int argc = 0, err;
	FILE *f = open_memstream(out, &len);

	ck_assert(f != NULL);
	snprintf(buf, sizeof(buf), "%s", words);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	ck_assert_int_eq(vout_init(&o, json), 0);
	vbe_node_trace(n, argc, argv, &o);
	err = vout_finish(&o, f);
	fclose(f);
	return err;
}

START_TEST(test_dom0)
{
	struct vbe_node *n = calloc(1, sizeof(*n));
	struct vrdma_cqe c = { .wr_id = 9, .qp = 1, .opcode = VRDMA_WC_RECV };
	struct vbe_guest g = { .domid = 4 };
	char *out;
	int i;

	ck_assert(n != NULL);
	snprintf(n->name, sizeof(n->name), "tnode");
	ck_assert_int_eq(ctl(n, false, "", &out), 0);
	ck_assert_str_eq(out, "latency trace off\n");
	free(out);
	ck_assert_int_eq(ctl(n, false, "dump", &out), -ENOENT);
	free(out);
	ck_assert_int_eq(ctl(n, false, "lat 0", &out), -EINVAL);
	free(out);
	ck_assert_int_eq(ctl(n, false, "lat 524289", &out), -EINVAL);
	free(out);
	ck_assert_int_eq(ctl(n, false, "lat x", &out), -EINVAL);
	free(out);
	ck_assert_int_eq(ctl(n, false, "lat", &out), -EINVAL);
	free(out);
	ck_assert_int_eq(ctl(n, false, "bogus", &out), -EINVAL);
	free(out);
	ck_assert(!vbe_lt_on());
	/* Off: the sites stamp nothing. */
	vbe_lt_kick(&g);
	ck_assert_uint_eq(vlt_count(&vbe_lt_trace), 0);

	ck_assert_int_eq(ctl(n, false, "lat 3", &out), 0);
	ck_assert(strstr(out, "the next 3 stamps"));
	free(out);
	ck_assert(vbe_lt_on());
	vbe_lt_kick(&g);
	vbe_lt_cqe(&g, &c);	/* no QP table: qpn 0 */
	for (i = 0; i < 5; i++)
		vbe_lt_put(VBE_LT_COPY, 7, 8, 9, 4);
	ck_assert(!vbe_lt_on());
	ck_assert_int_eq(ctl(n, false, "", &out), 0);
	ck_assert_str_eq(out, "latency trace full: 3 of 3 stamps\n");
	free(out);
	ck_assert_int_eq(ctl(n, false, "dump", &out), 0);
	ck_assert_msg(!strncmp(out, "vlt dom0 hz ", 12), "%s", out);
	ck_assert(strstr(out, " node=tnode stamps=3 cap=3 full=1\n"));
	ck_assert(strstr(out, "\nvlt dom0 kick "));
	ck_assert(strstr(out, " 0 9 op=recv st=0 dom=4\n"));
	ck_assert(strstr(out, " 7 8 to=9 dom=4\n"));
	free(out);
	ck_assert_int_eq(ctl(n, true, "dump", &out), 0);
	ck_assert_msg(strstr(out, "\"events\":[{\"kind\":\"kick\""), "%s", out);
	ck_assert(strstr(out, "\"op\":\"recv\""));
	ck_assert(strstr(out, "\"full\":true"));
	free(out);
	ck_assert_int_eq(ctl(n, false, "off", &out), 0);
	ck_assert_str_eq(out, "latency trace off\n");
	free(out);
	ck_assert(!vbe_lt_on() && !vbe_lt_trace.rec);
	ck_assert_int_eq(ctl(n, false, "off", &out), 0);
	ck_assert_str_eq(out, "latency trace off (it was not armed)\n");
	free(out);
	ck_assert_int_eq(ctl(n, false, "dump", &out), -ENOENT);
	free(out);
	vbe_lt_fini();
	free(n);
}
END_TEST

static Suite *lt_suite(void)
{
	Suite *s = suite_create("lattrace");
	TCase *tc = tcase_create("array");

	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_full);
	tcase_add_test(tc, test_rate);
	suite_add_tcase(s, tc);
	tc = tcase_create("guest");
	tcase_add_loop_test(tc, test_env_bad, 0, 6);
	tcase_add_test(tc, test_env_off);
	tcase_add_test(tc, test_env_file);
	tcase_add_test(tc, test_env_empty);
	suite_add_tcase(s, tc);
	tc = tcase_create("dom0");
	tcase_add_test(tc, test_dom0);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(lt_suite());

	return ck_run(sr);
}
