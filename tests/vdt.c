// SPDX-License-Identifier: MIT
/* The real vrdmad under test: what its suites share (vdt.h). */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include "vdt.h"

void vdt_init(struct vdt *t, const char *tag)
{
	const char *b = getenv("VRDMA_BUILD");

	if (!b)
		b = "build";
	snprintf(t->bin, sizeof(t->bin), "%s/sbin/vrdmad", b);
	snprintf(t->ctl, sizeof(t->ctl), "%s/sbin/vrdmactl", b);
	snprintf(t->bw, sizeof(t->bw), "%s/bin/vrdma-bw", b);
	snprintf(t->dir, sizeof(t->dir), "/tmp/vrdmad-%.8s-XXXXXX", tag);
	ck_assert_ptr_nonnull(mkdtemp(t->dir));
	/* The daemon must not depend on the environment naming the dir. */
	unsetenv("VRDMA_RUN_DIR");
	setenv("VRDMA_PLATFORM", "host", 1);
}

void vdt_fini(const struct vdt *t)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", t->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", t->dir);
}

void vdt_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int vdt_wait_exit(pid_t pid, int ms)
{
	int st, i;

	for (i = 0; i < ms / 10; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		vdt_sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

int vdt_ctl(const struct vdt *t, const char *args, char *out, size_t len)
{
	char cmd[1280];
	size_t got;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "timeout 10 %s -S %s %s 2>&1", t->ctl, t->dir, args);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	got = fread(out, 1, len - 1, f);
	out[got] = '\0';
	return WEXITSTATUS(pclose(f));
}

void vdt_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}
