// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"

int vlog_level = -1;

static const char *const vlog_names[] = { "error", "warn", "info", "debug" };

void vlog(int level, const char *fmt, ...)
{
	struct timespec ts;
	char line[1024];
	va_list ap;

	if (vlog_level < 0) {
		const char *e = getenv("VRDMA_LOG");

		vlog_level = e ? atoi(e) : VLOG_INFO;
	}
	if (level > vlog_level)
		return;
	if (level < 0 || level > VLOG_DEBUG)
		level = VLOG_ERR;
	clock_gettime(CLOCK_REALTIME, &ts);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One fprintf per line so lines from several processes do not interleave. */
	fprintf(stderr, "%lld.%03ld vrdma %s: %s\n", (long long)ts.tv_sec,
		ts.tv_nsec / 1000000, vlog_names[level], line);
}
