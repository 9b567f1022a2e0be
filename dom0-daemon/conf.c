// SPDX-License-Identifier: MIT
/*
 * vrdmad.conf (issue 13, vrdmad.conf(5)): INI, read by libinih (Debian's
 * libinih-dev): [vrdmad], whose keys are vrdmad's long options, and
 * [limits], the node's default tenant limits (named as `vrdmactl set
 * tenant:default` names them).  Strict: an unknown section or key, a
 * key given twice or a bad value is an error naming FILE:LINE and the
 * key, as a bad policy file is.  inih
 * gives its handler no line number in Debian's build, so the file is
 * read through our own line reader, which counts.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

#include "attach.h"
#include "conf.h"

struct vd_conf_rd {
	struct vd_conf *c;
	const char *path;
	FILE *f;
	unsigned line;		/* of the line inih has now */
	unsigned err_line;	/* first error of ours, 0 = none */
	char err[320];
	unsigned seen;		/* [vrdmad] keys given, by bit in vd_conf_keys order */
};

static const char *const vd_conf_keys[] = {
	"node", "run_dir", "rdma_addr", "rdma_port", "policy", "state_dir",
	"spin_us", "rt_prio", "verbose", "attach", "coll", NULL,
};

int vd_conf_uint(const char *s, unsigned lo, unsigned hi, unsigned *v)
{
	unsigned long x;
	char *end;

	errno = 0;
	x = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || *s == '+' || x < lo || x > hi)
		return -EINVAL;
	*v = (unsigned)x;
	return 0;
}

int vd_conf_port(const char *s, unsigned *port)
{
	return vd_conf_uint(s, 1, 65535, port);
}

/* The words `vrdmactl set VM coll=` takes, and only those. */
int vd_conf_onoff(const char *s, bool *off)
{
	if (strcmp(s, "on") && strcmp(s, "off"))
		return -EINVAL;
	*off = !strcmp(s, "off");
	return 0;
}

/* fgets that counts lines; a line inih cannot hold is an error here. */
static char *vd_conf_reader(char *str, int num, void *stream)
{
	struct vd_conf_rd *r = stream;
	size_t len;
	int ch;

	if (!fgets(str, num, r->f))
		return NULL;
	r->line++;
	len = strlen(str);
	if (len && str[len - 1] != '\n' && !feof(r->f)) {
		while ((ch = fgetc(r->f)) != EOF && ch != '\n')
			;
		if (!r->err_line) {
			r->err_line = r->line;
			snprintf(r->err, sizeof(r->err), "line longer than %d bytes", num - 2);
		}
		str[0] = '\0';	/* an empty line to inih */
	}
	/* inih would take it as the previous value's continuation. */
	if ((str[0] == ' ' || str[0] == '\t') && !r->err_line) {
		const char *t = str + strspn(str, " \t\r\n");

		if (*t && *t != '#' && *t != ';') {
			r->err_line = r->line;
			snprintf(r->err, sizeof(r->err), "a line that starts with a blank "
				 "(keys and sections start their line)");
		}
	}
	return str;
}

static __attribute__((format(printf, 2, 3))) int
vd_conf_bad(struct vd_conf_rd *r, const char *fmt, ...)
{
	va_list ap;

	if (!r->err_line) {
		r->err_line = r->line;
		va_start(ap, fmt);
		vsnprintf(r->err, sizeof(r->err), fmt, ap);
		va_end(ap);
	}
	return 0;	/* inih: an error on this line */
}

static int vd_conf_str(char **dst, const char *val)
{
	char *s = strdup(val);

	if (!s)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

/* [limits] name = val: one of the tenant limits, in its range. */
static int vd_conf_limit(struct vd_conf_rd *r, const char *name, const char *val)
{
	struct vd_conf *c = r->c;
	unsigned q;

	for (q = 0; vbe_tenant_keys[q] && strcmp(name, vbe_tenant_keys[q]); q++)
		;
	if (!vbe_tenant_keys[q])
		return vd_conf_bad(r, "unknown key '%s' in [limits] (allowed: guests listeners "
				   "conns qps mem cqs mrs pages cmds maps devqps)", name);
	if (c->limits_set & 1u << q)
		return vd_conf_bad(r, "key '%s' given twice", name);
	c->limits_set |= 1u << q;
	if (vbe_tenant_parse(q, val, &c->limits[q]))
		return vd_conf_bad(r, "%s: bad value '%.64s' (0..%llu%s)", name, val,
				   (unsigned long long)vbe_tenant_max(q),
				   !strcmp(name, "mem") ? ", K/M/G/T" : "");
	return 1;
}

static int vd_conf_key(void *user, const char *section, const char *name, const char *val)
{
	struct vd_conf_rd *r = user;
	struct vd_conf *c = r->c;
	struct vd_attach pol;
	const char *why;
	unsigned k;

	if (!strcmp(section, "limits"))
		return vd_conf_limit(r, name, val);
	if (strcmp(section, "vrdmad"))
		return vd_conf_bad(r, "key '%s' in section [%s]: the sections are [vrdmad] "
				   "and [limits]", name, section);
	for (k = 0; vd_conf_keys[k] && strcmp(name, vd_conf_keys[k]); k++)
		;
	if (!vd_conf_keys[k])
		return vd_conf_bad(r, "unknown key '%s' (allowed: node run_dir rdma_addr "
				   "rdma_port policy state_dir spin_us rt_prio verbose attach "
				   "coll)", name);
	if (r->seen & 1u << k)
		return vd_conf_bad(r, "key '%s' given twice", name);
	r->seen |= 1u << k;
	if (!strcmp(name, "rdma_port")) {
		if (vd_conf_port(val, &c->rdma_port))
			return vd_conf_bad(r, "rdma_port: bad value '%.64s' (1..65535)", val);
		c->rdma_port_set = true;
	} else if (!strcmp(name, "spin_us")) {
		if (vd_conf_uint(val, 0, VD_SPIN_US_MAX, &c->spin_us))
			return vd_conf_bad(r, "spin_us: bad value '%.64s' (0..1000000)", val);
		c->spin_us_set = true;
	} else if (!strcmp(name, "rt_prio")) {
		if (vd_conf_uint(val, 0, 99, &c->rt_prio))
			return vd_conf_bad(r, "rt_prio: bad value '%.64s' (0 = off, 1..99)", val);
		c->rt_prio_set = true;
	} else if (!strcmp(name, "verbose")) {
		if (!strcasecmp(val, "yes") || !strcasecmp(val, "true") || !strcmp(val, "1"))
			c->verbose = true;
		else if (!strcasecmp(val, "no") || !strcasecmp(val, "false") || !strcmp(val, "0"))
			c->verbose = false;
		else
			return vd_conf_bad(r, "verbose: bad value '%.64s' (yes or no)", val);
		c->verbose_set = true;
	} else if (!strcmp(name, "coll")) {
		if (vd_conf_onoff(val, &c->coll_off))
			return vd_conf_bad(r, "coll: bad value '%.64s' (on or off)", val);
		c->coll_set = true;
	} else {
		/* Strings: node, paths, the address; "" is a value only for
		 * rdma_addr (the first RDMA device). */
		char **dst = !strcmp(name, "node") ? &c->node :
			     !strcmp(name, "run_dir") ? &c->run_dir :
			     !strcmp(name, "rdma_addr") ? &c->rdma_addr :
			     !strcmp(name, "policy") ? &c->policy :
			     !strcmp(name, "state_dir") ? &c->state_dir : &c->attach;

		if (!*val && dst != &c->rdma_addr)
			return vd_conf_bad(r, "%s: empty value", name);
		if (strpbrk(val, " \t"))
			return vd_conf_bad(r, "%s: bad value '%.64s' (no blanks)", name, val);
		if ((dst == &c->run_dir || dst == &c->state_dir) && val[0] != '/' &&
		    strcmp(val, "none"))
			return vd_conf_bad(r, "%s: bad value '%.64s' (an absolute path)", name, val);
		if (dst == &c->run_dir && !strcmp(val, "none"))
			return vd_conf_bad(r, "%s: bad value '%.64s' (an absolute path)", name, val);
		if (dst == &c->attach && vd_attach_policy_parse(val, &pol, &why))
			return vd_conf_bad(r, "attach: bad value '%.64s': %s", val, why);
		if (vd_conf_str(dst, val))
			return vd_conf_bad(r, "%s: out of memory", name);
	}
	return 1;
}

int vd_conf_load(struct vd_conf *c, const char *path, bool must_exist)
{
	struct vd_conf_rd r = { .c = c, .path = path };
	int line, err;

	r.f = fopen(path, "re");
	if (!r.f) {
		err = -errno;
		if (err == -ENOENT && !must_exist)
			return 0;
		fprintf(stderr, "vrdmad: cannot read configuration %s: %s\n", path,
			strerror(-err));
		return err;
	}
	line = ini_parse_stream(vd_conf_reader, &r, vd_conf_key, &r);
	fclose(r.f);
	if (!line && !r.err_line)
		return 0;
	if (line > 0 && (!r.err_line || (unsigned)line < r.err_line))
		fprintf(stderr, "vrdmad: %s:%d: syntax error (want `key = value`, "
			"`[vrdmad]`, `[limits]` or a `#` comment)\n", path, line);
	else if (r.err_line)
		fprintf(stderr, "vrdmad: %s:%u: %s\n", path, r.err_line, r.err);
	else
		fprintf(stderr, "vrdmad: %s: cannot parse (%d)\n", path, line);
	vd_conf_free(c);
	return -EINVAL;
}

void vd_conf_free(struct vd_conf *c)
{
	free(c->node);
	free(c->run_dir);
	free(c->rdma_addr);
	free(c->policy);
	free(c->state_dir);
	free(c->attach);
	memset(c, 0, sizeof(*c));
}
