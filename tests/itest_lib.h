/* SPDX-License-Identifier: MIT */
/*
 * What the integration test programs (itest_guest, itest_bigmr) share:
 * their ITEST report lines, which the rigs' suites read, a fatal exit,
 * and the byte pattern both ends of a transfer check.
 */
#ifndef VRDMA_ITEST_LIB_H
#define VRDMA_ITEST_LIB_H

#include <stdbool.h>
#include <stdint.h>

extern int itest_failures;		/* FAIL lines reported so far */

/* "ITEST NAME PASS|FAIL [detail]" on stdout, flushed. */
void itest_report(const char *name, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "ITEST fatal FAIL WHAT: strerror(err)", then exit 1. */
void itest_die(const char *what, int err) __attribute__((noreturn));

uint8_t itest_pat(uint32_t seed, uint64_t i);
void    itest_fill(uint8_t *p, uint64_t len, uint32_t seed);
/* The first byte of p that is not the pattern's, or -1. */
int64_t itest_bad_byte(const uint8_t *p, uint64_t len, uint32_t seed);

#endif
