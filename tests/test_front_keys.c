// SPDX-License-Identifier: MIT
/*
 * The frontend's handshake (frontend/front.c) against a backend the test
 * plays on the plain host: a dom0 served by a thread of the test that
 * answers the frontend's states and publishes the keys a case chooses.
 * max-ud-msg, the largest datagram payload to any node, is taken
 * bounded: absent (an older vrdmad) VRDMA_UD_MTU, below 256 (IB's
 * smallest MTU) 256, past VRDMA_UD_MTU VRDMA_UD_MTU, else as said.
 */
#include <check.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../frontend/front.h"
#include "host_dom0.h"
#include "host_proto.h"
#include "vplat.h"
#include "ck_run.h"

#define T_OPEN_MS	5000

static struct {
	struct vplat *d;
	pthread_t th;
	pthread_mutex_t mu;
	int stop;
	char dir[64];
	const char *ud_msg;	/* max-ud-msg to publish, NULL: none */
} t0 = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void *t0_loop(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd pfd = { .fd = vplat_fd(t0.d), .events = POLLIN };

		poll(&pfd, 1, 20);
		pthread_mutex_lock(&t0.mu);
		if (t0.stop) {
			pthread_mutex_unlock(&t0.mu);
			return NULL;
		}
		vplat_process(t0.d);
		pthread_mutex_unlock(&t0.mu);
	}
}

static void bkey(uint32_t dom, const char *key, const char *val)
{
	char k[VPLAT_KEY_MAX];

	snprintf(k, sizeof(k), VRDMA_XS_BACK_FMT "/%s", dom, 0u, key);
	vplat_key_write(t0.d, k, val);
}

/* The backend's half, in t0's thread: the toolstack made the device
 * (backend state 1): the keys, InitWait; the frontend Initialised:
 * Connected; Closing: Closed. */
static void t0_watch(struct vplat *p, const char *path, void *arg)
{
	char v[16], rest[64];
	uint32_t dom, dev;

	(void)arg;
	if (vplat_key_read(p, path, v, sizeof(v)))
		return;
	if (sscanf(path, "/local/domain/0/backend/vrdma/%u/%u/%63s", &dom, &dev, rest) == 3 &&
	    !strcmp(rest, "state") && !strcmp(v, "1")) {
		if (t0.ud_msg)
			bkey(dom, "max-ud-msg", t0.ud_msg);
		bkey(dom, "state", "2");
	} else if (sscanf(path, "/local/domain/%u/device/vrdma/%u/%63s", &dom, &dev, rest) == 3 &&
		   !strcmp(rest, "state")) {
		if (!strcmp(v, "3"))
			bkey(dom, "state", "4");
		else if (!strcmp(v, "5"))
			bkey(dom, "state", "6");
	}
}

static void t0_open(void)
{
	struct vplat_cfg cfg = { .role = VPLAT_DOM0_ROLE, .run_dir = t0.dir };
	const char *tmp = getenv("TMPDIR");

	t0.stop = 0;
	snprintf(t0.dir, sizeof(t0.dir), "%s/vrdma-fk-XXXXXX",
		 tmp && strlen(tmp) < 30 ? tmp : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(t0.dir));
	ck_assert_int_eq(vplat_open(&cfg, &t0.d), 0);
	ck_assert_int_eq(vplat_watch(t0.d, "/local/domain", t0_watch, NULL), 0);
	ck_assert_int_eq(setenv("VRDMA_RUN_DIR", t0.dir, 1), 0);
	ck_assert_int_eq(pthread_create(&t0.th, NULL, t0_loop, NULL), 0);
}

static void t0_close(void)
{
	char p[128];

	pthread_mutex_lock(&t0.mu);
	t0.stop = 1;
	pthread_mutex_unlock(&t0.mu);
	pthread_join(t0.th, NULL);
	vplat_close(t0.d);
	snprintf(p, sizeof(p), "%s/%s", t0.dir, VHP_SOCK_NAME);
	unlink(p);
	rmdir(t0.dir);
}

static int no_evt(void *arg, const struct vrdma_evt *e)
{
	(void)arg;
	(void)e;
	return 0;
}

/* The frontend's max_ud_msg when dom0 publishes val (NULL: nothing). */
static uint32_t ud_msg(const char *val)
{
	struct vfe_dev *d = calloc(1, sizeof(*d));
	uint32_t v;

	ck_assert_ptr_nonnull(d);
	t0.ud_msg = val;
	t0_open();
	ck_assert_int_eq(vfe_open(d, "host", T_OPEN_MS, no_evt, NULL), 0);
	v = d->max_ud_msg;
	vfe_close(d);
	free(d);
	t0_close();
	return v;
}

START_TEST(t_ud_msg)
{
	ck_assert_uint_eq(ud_msg(NULL), VRDMA_UD_MTU);		/* an older vrdmad */
	ck_assert_uint_eq(ud_msg("992"), 992);			/* rxe, 1500-byte Ethernet */
	ck_assert_uint_eq(ud_msg("4064"), 4064);
	ck_assert_uint_eq(ud_msg("4096"), VRDMA_UD_MTU);
	ck_assert_uint_eq(ud_msg("100"), 256);
	ck_assert_uint_eq(ud_msg("0"), 256);
	ck_assert_uint_eq(ud_msg("65536"), VRDMA_UD_MTU);
}
END_TEST

/* The bound alone, at its edges. */
START_TEST(t_ud_msg_bound)
{
	ck_assert_uint_eq(vfe_ud_msg_bound(255), 256);
	ck_assert_uint_eq(vfe_ud_msg_bound(256), 256);
	ck_assert_uint_eq(vfe_ud_msg_bound(VRDMA_UD_MTU), VRDMA_UD_MTU);
	ck_assert_uint_eq(vfe_ud_msg_bound(VRDMA_UD_MTU + 1), VRDMA_UD_MTU);
	ck_assert_uint_eq(vfe_ud_msg_bound(UINT32_MAX), VRDMA_UD_MTU);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("front_keys");
	TCase *tc = tcase_create("keys");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, t_ud_msg);
	tcase_add_test(tc, t_ud_msg_bound);
	suite_add_tcase(s, tc);
	return ck_run(srunner_create(s));
}
