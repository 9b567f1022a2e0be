/* SPDX-License-Identifier: MIT */
/* Logging for vrdmad, the tools and libvrdma: one line per event, to
 * stderr, stamped for a reader or prioritised for the journal (log.c). */
#ifndef VRDMA_LOG_H
#define VRDMA_LOG_H

#include <stdarg.h>
#include <stdint.h>

enum { VLOG_ERR = 0, VLOG_WARN = 1, VLOG_INFO = 2, VLOG_DEBUG = 3 };

/* Messages above this level are dropped (default VLOG_INFO; env VRDMA_LOG,
 * a number or error|warn|info|debug). */
extern int vlog_level;

void vlog(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define vlog_err(...)	vlog(VLOG_ERR, __VA_ARGS__)
#define vlog_warn(...)	vlog(VLOG_WARN, __VA_ARGS__)
#define vlog_info(...)	vlog(VLOG_INFO, __VA_ARGS__)
#define vlog_dbg(...)	do { if (vlog_level >= VLOG_DEBUG) vlog(VLOG_DEBUG, __VA_ARGS__); } while (0)

/* A line an event can repeat at will (a refusal a guest, a uid or a
 * remote node can ask for again): at most one a second per limiter at
 * `level`, the rest at debug level and counted in the next one, so one
 * kind never floods the log nor hides another kind's line. */
struct vlog_lim {
	int64_t ms;			/* last line logged (monotonic) */
	unsigned quiet;			/* lines since, not logged */
};
void vlog_limited(struct vlog_lim *l, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void vlog_limitedv(struct vlog_lim *l, int level, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

#endif /* VRDMA_LOG_H */
