/* SPDX-License-Identifier: MIT */
/* Logging for vrdmad, the tools and libvrdma: one line per event, to
 * stderr, stamped for a reader or prioritised for the journal (log.c). */
#ifndef VRDMA_LOG_H
#define VRDMA_LOG_H

enum { VLOG_ERR = 0, VLOG_WARN = 1, VLOG_INFO = 2, VLOG_DEBUG = 3 };

/* Messages above this level are dropped (default VLOG_INFO; env VRDMA_LOG,
 * a number or error|warn|info|debug). */
extern int vlog_level;

void vlog(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define vlog_err(...)	vlog(VLOG_ERR, __VA_ARGS__)
#define vlog_warn(...)	vlog(VLOG_WARN, __VA_ARGS__)
#define vlog_info(...)	vlog(VLOG_INFO, __VA_ARGS__)
#define vlog_dbg(...)	do { if (vlog_level >= VLOG_DEBUG) vlog(VLOG_DEBUG, __VA_ARGS__); } while (0)

#endif /* VRDMA_LOG_H */
