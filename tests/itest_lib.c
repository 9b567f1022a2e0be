// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest_lib.h"

int itest_failures;

void itest_report(const char *name, bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("ITEST %s %s", name, ok ? "PASS" : "FAIL");
	if (fmt) {
		printf(" ");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	printf("\n");
	fflush(stdout);
	if (!ok)
		itest_failures++;
}

void itest_die(const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, strerror(err));
	printf("ITEST fatal FAIL %s: %s\n", what, strerror(err));
	exit(1);
}

uint8_t itest_pat(uint32_t seed, uint64_t i)
{
	return (uint8_t)(seed * 31u + i * 7u + (i >> 8));
}

void itest_fill(uint8_t *p, uint64_t len, uint32_t seed)
{
	for (uint64_t i = 0; i < len; i++)
		p[i] = itest_pat(seed, i);
}

int64_t itest_bad_byte(const uint8_t *p, uint64_t len, uint32_t seed)
{
	for (uint64_t i = 0; i < len; i++)
		if (p[i] != itest_pat(seed, i))
			return (int64_t)i;
	return -1;
}
