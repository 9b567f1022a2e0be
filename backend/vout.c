// SPDX-License-Identifier: MIT
/* A control command's answer, in text or JSON from the same calls (vout.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "vout.h"

int vout_init(struct vout *o, bool json)
{
	memset(o, 0, sizeof(*o));
	o->json = json;
	if (json) {
		o->stack[0] = json_object_new_object();
		return o->stack[0] ? 0 : -ENOMEM;
	}
	o->text = open_memstream(&o->tbuf, &o->tlen);
	return o->text ? 0 : -ENOMEM;
}

void vout_fini(struct vout *o)
{
	if (o->text)
		fclose(o->text);
	free(o->tbuf);
	json_object_put(o->stack[0]);
	memset(o, 0, sizeof(*o));
}

int vout_err(struct vout *o, int err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		err = -EINVAL;
	if (o->err)
		return err;
	o->err = err;
	va_start(ap, fmt);
	vsnprintf(o->msg, sizeof(o->msg), fmt, ap);
	va_end(ap);
	return err;
}

/* Would a value under key go anywhere in the JSON? */
static bool vout_wants(const struct vout *o, const char *key)
{
	return o->json && !o->err &&
	       (key || json_object_is_type(o->stack[o->depth], json_type_array));
}

/* Put v (NULL: a json-c allocation that failed) into the open container. */
static void vout_add(struct vout *o, const char *key, struct json_object *v)
{
	struct json_object *top = o->stack[o->depth];
	int r;

	if (!v) {
		vout_err(o, -ENOMEM, "out of memory");
		return;
	}
	if (json_object_is_type(top, json_type_array)) {
		r = json_object_array_add(top, v);
	} else if (!key) {
		json_object_put(v);	/* a caller's slip: say so, do not crash */
		vout_err(o, -EINVAL, "internal: a JSON member without a key");
		return;
	} else {
		r = json_object_object_add(top, key, v);
	}
	if (r) {
		json_object_put(v);
		vout_err(o, -ENOMEM, "out of memory");
	}
}

static VOUT_FMT(2, 0) void vout_vtext(struct vout *o, const char *fmt, va_list ap)
{
	if (o->text && !o->err && *fmt)
		vfprintf(o->text, fmt, ap);
}

void vout_text(struct vout *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vout_vtext(o, fmt, ap);
	va_end(ap);
}

void vout_ju64(struct vout *o, const char *key, uint64_t v)
{
	if (vout_wants(o, key))
		vout_add(o, key, json_object_new_uint64(v));
}

void vout_ji64(struct vout *o, const char *key, int64_t v)
{
	if (vout_wants(o, key))
		vout_add(o, key, json_object_new_int64(v));
}

void vout_jbool(struct vout *o, const char *key, bool v)
{
	if (vout_wants(o, key))
		vout_add(o, key, json_object_new_boolean(v));
}

void vout_jstr(struct vout *o, const char *key, const char *s)
{
	struct json_object *top;

	if (!vout_wants(o, key))
		return;
	if (s) {
		vout_add(o, key, json_object_new_string(s));
		return;
	}
	/* null: json-c's NULL object, which is no failure here */
	top = o->stack[o->depth];
	if (json_object_is_type(top, json_type_array) ? json_object_array_add(top, NULL) :
	    json_object_object_add(top, key, NULL))
		vout_err(o, -ENOMEM, "out of memory");
}

#define VOUT_BOTH(jfn, o, key, v, fmt) do {	\
	va_list ap;				\
						\
	jfn(o, key, v);				\
	va_start(ap, fmt);			\
	vout_vtext(o, fmt, ap);			\
	va_end(ap);				\
} while (0)

void vout_u64(struct vout *o, const char *key, uint64_t v, const char *fmt, ...)
{
	VOUT_BOTH(vout_ju64, o, key, v, fmt);
}

void vout_i64(struct vout *o, const char *key, int64_t v, const char *fmt, ...)
{
	VOUT_BOTH(vout_ji64, o, key, v, fmt);
}

void vout_bool(struct vout *o, const char *key, bool v, const char *fmt, ...)
{
	VOUT_BOTH(vout_jbool, o, key, v, fmt);
}

void vout_str(struct vout *o, const char *key, const char *s, const char *fmt, ...)
{
	VOUT_BOTH(vout_jstr, o, key, s, fmt);
}

static void vout_open(struct vout *o, const char *key, struct json_object *c)
{
	if (!c) {
		vout_err(o, -ENOMEM, "out of memory");
		return;
	}
	if (o->depth + 1 >= VOUT_DEPTH) {
		json_object_put(c);
		vout_err(o, -E2BIG, "output nested too deep");
		return;
	}
	/* The container stays ours to fill: the document holds the reference. */
	vout_add(o, key, c);
	if (!o->err)
		o->stack[++o->depth] = c;
}

void vout_obj(struct vout *o, const char *key)
{
	if (o->json && !o->err)
		vout_open(o, key, json_object_new_object());
}

void vout_arr(struct vout *o, const char *key)
{
	if (o->json && !o->err)
		vout_open(o, key, json_object_new_array());
}

void vout_end(struct vout *o)
{
	if (o->json && !o->err && o->depth)
		o->depth--;
}

int vout_finish(struct vout *o, FILE *out)
{
	const char *s;
	int err;

	if (o->text) {
		if (fclose(o->text))
			vout_err(o, -ENOMEM, "out of memory");
		o->text = NULL;
	}
	if (!o->err && o->json) {
		s = json_object_to_json_string_ext(o->stack[0], JSON_C_TO_STRING_PLAIN |
						   JSON_C_TO_STRING_NOSLASHESCAPE);
		if (s)
			fprintf(out, "%s\n", s);
		else
			vout_err(o, -ENOMEM, "out of memory");
	} else if (!o->err && o->tlen) {
		fwrite(o->tbuf, 1, o->tlen, out);
	}
	if (o->err)
		fprintf(out, "error: %s\n", o->msg);
	err = o->err;
	vout_fini(o);
	return err;
}
