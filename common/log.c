// SPDX-License-Identifier: MIT
/*
 * One line per event on stderr.  For an operator at a terminal or in a
 * log file:
 *
 *   2026-11-24T10:00:00.123 [  5321.042] vrdmad[812] warn: message
 *
 * wall time (local, milliseconds), the monotonic clock in seconds (what
 * the kernel's dmesg counts), program[pid] and the level.  When stderr is
 * the journal (systemd's JOURNAL_STREAM names it), "<N>message": the
 * journal stamps time and program itself and takes N as the syslog
 * priority (sd-daemon(3)).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "log.h"

int vlog_level = -1;

static const char *const vlog_names[] = { "error", "warn", "info", "debug" };
static const char vlog_prio[] = { '3', '4', '6', '7' };	/* LOG_ERR .. LOG_DEBUG */

static int vlog_journal = -1;	/* stderr is the journal: 1, not: 0, unknown: -1 */

/* VRDMA_LOG: a number (0 error .. 3 debug) or a level's name. */
static int vlog_env_level(void)
{
	const char *e = getenv("VRDMA_LOG");
	int i;

	if (!e || !*e)
		return VLOG_INFO;
	for (i = 0; i <= VLOG_DEBUG; i++)
		if (!strcmp(e, vlog_names[i]))
			return i;
	return atoi(e);
}

/* JOURNAL_STREAM is "dev:ino" of the journal's socket; stderr may since
 * have been redirected elsewhere, so compare it with fd 2 itself. */
static int vlog_is_journal(void)
{
	unsigned long long dev, ino;
	const char *e = getenv("JOURNAL_STREAM");
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &st) < 0)
		return 0;
	return st.st_dev == (dev_t)dev && st.st_ino == (ino_t)ino;
}

void vlog(int level, const char *fmt, ...)
{
	struct timespec wall, mono;
	char line[1280], stamp[32];
	int saved = errno, n = 0;
	struct tm tm;
	va_list ap;

	if (vlog_level < 0)
		vlog_level = vlog_env_level();
	if (level > vlog_level)
		return;
	if (level < 0 || level > VLOG_DEBUG)
		level = VLOG_ERR;
	if (vlog_journal < 0)
		vlog_journal = vlog_is_journal();
	if (vlog_journal) {
		n = snprintf(line, sizeof(line), "<%c>", vlog_prio[level]);
	} else {
		clock_gettime(CLOCK_REALTIME, &wall);
		clock_gettime(CLOCK_MONOTONIC, &mono);
		if (!localtime_r(&wall.tv_sec, &tm) ||
		    !strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm))
			snprintf(stamp, sizeof(stamp), "%lld", (long long)wall.tv_sec);
		n = snprintf(line, sizeof(line), "%s.%03ld [%6lld.%03ld] %s[%ld] %s: ", stamp,
			     wall.tv_nsec / 1000000, (long long)mono.tv_sec,
			     mono.tv_nsec / 1000000, program_invocation_short_name,
			     (long)getpid(), vlog_names[level]);
	}
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	/* One write per line: lines of several threads and processes sharing
	 * the file do not interleave. */
	n = (int)strlen(line);
	line[n++] = '\n';
	if (write(2, line, (size_t)n) < 0) {
		/* nowhere left to say it */
	}
	errno = saved;
}

void vlog_limitedv(struct vlog_lim *l, int level, const char *fmt, va_list ap)
{
	struct timespec ts;
	char msg[256];
	int64_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (l->ms && now - l->ms < 1000) {
		l->quiet++;
		vlog_dbg("%s", msg);
		return;
	}
	if (l->quiet)
		vlog(level, "%s (and %u more like it in the last second)", msg, l->quiet);
	else
		vlog(level, "%s", msg);
	l->ms = now;
	l->quiet = 0;
}

void vlog_limited(struct vlog_lim *l, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog_limitedv(l, level, fmt, ap);
	va_end(ap);
}
