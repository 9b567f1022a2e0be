/* SPDX-License-Identifier: MIT */
/*
 * What a control command answers (vrdmactl), written once for text and
 * JSON, as iproute2's json_print: each call names a value's JSON key and
 * its text.  The JSON document is built with json-c, which escapes every
 * name; text goes through printf formats the compiler checks.  An error
 * replaces whatever was written before it, so a response is either whole
 * or "error: ...".
 */
#ifndef VRDMA_VOUT_H
#define VRDMA_VOUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct json_object;

#define VOUT_DEPTH	8

struct vout {
	bool json;
	FILE *text;			/* text mode: a memstream over tbuf */
	char *tbuf;
	size_t tlen;
	struct json_object *stack[VOUT_DEPTH];	/* [0] the document */
	unsigned depth;
	int err;			/* first error, -errno; 0 */
	char msg[256];			/* ... what it says */
};

#define VOUT_FMT(a, b)	__attribute__((format(printf, a, b)))

/* 0 or -ENOMEM.  A zeroed struct vout (no init) keeps errors only. */
int  vout_init(struct vout *o, bool json);
void vout_fini(struct vout *o);
static inline bool vout_json(const struct vout *o) { return o->json; }

/*
 * JSON: the value under key in the open object (key NULL: appended to the
 * open array; in an object, no JSON).  Text: fmt and its arguments.
 * s NULL is JSON null.  vout_j*: JSON only.
 */
void vout_u64(struct vout *o, const char *key, uint64_t v, const char *fmt, ...) VOUT_FMT(4, 5);
void vout_i64(struct vout *o, const char *key, int64_t v, const char *fmt, ...) VOUT_FMT(4, 5);
void vout_bool(struct vout *o, const char *key, bool v, const char *fmt, ...) VOUT_FMT(4, 5);
void vout_str(struct vout *o, const char *key, const char *s, const char *fmt, ...) VOUT_FMT(4, 5);
void vout_ju64(struct vout *o, const char *key, uint64_t v);
void vout_ji64(struct vout *o, const char *key, int64_t v);
void vout_jbool(struct vout *o, const char *key, bool v);
void vout_jstr(struct vout *o, const char *key, const char *s);
/* Text only. */
void vout_text(struct vout *o, const char *fmt, ...) VOUT_FMT(2, 3);
/* JSON only: open an object or array under key (NULL: in the open array),
 * close the innermost. */
void vout_obj(struct vout *o, const char *key);
void vout_arr(struct vout *o, const char *key);
void vout_end(struct vout *o);

/* The command failed: err (-errno) and its message, the first one kept;
 * returns err. */
int  vout_err(struct vout *o, int err, const char *fmt, ...) VOUT_FMT(3, 4);

/*
 * The response on out: "error: <message>\n", or the JSON document on one
 * line, or the text.  Returns the error (0 if none); o is finished.
 */
int  vout_finish(struct vout *o, FILE *out);

#endif /* VRDMA_VOUT_H */
