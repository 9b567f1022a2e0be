// SPDX-License-Identifier: MIT
/*
 * Connect policy (issue 12 item 3, docs/tenants.md "Connect policy"):
 * which tenants' guests may connect to which.  Tenants are put in groups
 * (a tenant in no group is a group of its own, named as it); a group is
 * one service namespace (cm.c) and may always reach itself.  Between
 * groups: a matching deny rule refuses, else a matching allow rule
 * admits, else the default (open, or tenant: same group only) decides.
 *
 * Groups travel between nodes as a 32-bit hash of their name (the
 * hello of cm_rdmacm.c has no room for names), so every node of a
 * cluster is given the same policy, as every host of a cluster is given
 * the same firewall.  Rules are held by name and hash; a decision
 * compares hashes.
 *
 * `vrdmactl policy` changes it; every change is written (temporary file,
 * fsync, rename) to the policy file before it takes effect, so what runs
 * is what a restart loads.  The file holds the same lines as the
 * commands.  A file that does not parse stops vrdmad at start: a
 * security policy is never half applied.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "../vbe.h"

#define VBE_POL_MEMBERS	256		/* tenants placed in groups */
#define VBE_POL_RULES	256
#define VBE_POL_ANY	0u		/* "*": a rule side that matches all */

struct vbe_pol_member {
	char tenant[VPLAT_TENANT_NAME];
	char group[VPLAT_TENANT_NAME];
};

struct vbe_pol_rule {
	bool deny;
	char from[VPLAT_TENANT_NAME], to[VPLAT_TENANT_NAME];
	uint32_t hfrom, hto;		/* VBE_POL_ANY for "*" */
};

struct vbe_policy {
	bool closed;			/* default: same group only */
	unsigned nmem, nrule;
	struct vbe_pol_member mem[VBE_POL_MEMBERS];
	struct vbe_pol_rule rule[VBE_POL_RULES];
	char path[256];			/* "" = not persisted */
	struct vlog_lim lim;		/* refusals by policy */
};

/* FNV-1a, never VBE_POL_ANY: names a group on the wire. */
uint32_t vbe_policy_hash(const char *s)
{
	uint32_t h = 0x811c9dc5u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x01000193u;
	return h ? h : 1;
}

const char *vbe_policy_group(const struct vbe_node *n, const char *tenant)
{
	const struct vbe_policy *p = n->pol;
	unsigned i;

	for (i = 0; p && i < p->nmem; i++)
		if (!strcmp(p->mem[i].tenant, tenant))
			return p->mem[i].group;
	return tenant;
}

uint32_t vbe_policy_ghash(const struct vbe_node *n, const char *tenant)
{
	return vbe_policy_hash(vbe_policy_group(n, tenant));
}

struct vbe_party vbe_policy_local(const struct vbe_node *n, const char *tenant)
{
	struct vbe_party p;

	p.group = vbe_policy_group(n, tenant);
	p.hash = vbe_policy_hash(p.group);
	return p;
}

struct vbe_party vbe_policy_remote(uint32_t hash)
{
	struct vbe_party p = { NULL, hash };

	return p;
}

/* By name where both are known (this node: no collision can merge two
 * groups), by hash where one is another node's word. */
static bool vbe_pol_is(const char *name, uint32_t hash, const struct vbe_party *x)
{
	return name && x->group ? !strcmp(name, x->group) : hash == x->hash;
}

bool vbe_policy_same(const struct vbe_party *a, const struct vbe_party *b)
{
	return vbe_pol_is(a->group, a->hash, b);
}

static bool vbe_pol_match(const char *name, uint32_t hash, const struct vbe_party *x)
{
	return hash == VBE_POL_ANY || vbe_pol_is(name, hash, x);
}

/* The decision and, in *why, the rule or default that made it. */
static bool vbe_pol_decide(const struct vbe_policy *p, const struct vbe_party *from,
			   const struct vbe_party *to, const struct vbe_pol_rule **why)
{
	unsigned i;
	int pass;

	*why = NULL;
	if (vbe_policy_same(from, to))
		return true;
	for (pass = 0; pass < 2; pass++)	/* deny rules first */
		for (i = 0; i < p->nrule; i++) {
			const struct vbe_pol_rule *r = &p->rule[i];

			if (r->deny == !pass && vbe_pol_match(r->from, r->hfrom, from) &&
			    vbe_pol_match(r->to, r->hto, to)) {
				*why = r;
				return !r->deny;
			}
		}
	return !p->closed;
}

bool vbe_policy_allow(const struct vbe_node *n, const struct vbe_party *from,
		      const struct vbe_party *to)
{
	const struct vbe_pol_rule *why;

	return vbe_pol_decide(n->pol, from, to, &why);
}

bool vbe_policy_allow_either(const struct vbe_node *n, const struct vbe_party *a,
			     const struct vbe_party *b)
{
	return vbe_policy_allow(n, a, b) || vbe_policy_allow(n, b, a);
}

void vbe_policy_refused(struct vbe_node *n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog_limitedv(&n->pol->lim, VLOG_INFO, fmt, ap);
	va_end(ap);
}

/* ---- parsing: one line, a command's words ---- */

static bool vbe_pol_name_ok(const char *s, bool star)
{
	return (star && !strcmp(s, "*")) || vbe_tenant_name_ok(s);
}

/* "dom<N>": the tenant Xen gives a domain nobody named.  Domain ids are
 * reused (after a reboot, or at once with domid_policy="random"), so a
 * kept rule or group naming one would hand its rights to whichever VM
 * gets that id next.  Name tenants in the toolstack (`tenant` key). */
static bool vbe_pol_domid_name(const char *s)
{
	size_t i;

	if (strncmp(s, "dom", 3) || !s[3])
		return false;
	for (i = 3; s[i]; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static int vbe_pol_err(struct vout *o, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A name kept in the policy: a tenant or group that stays itself. */
static int vbe_pol_kept_name(const char *s, bool star, struct vout *o)
{
	if (!vbe_pol_name_ok(s, star))
		return vbe_pol_err(o, -EINVAL, "bad name '%.64s' (letters, digits, _-.@; up "
				   "to 31%s)", s, star ? "; or *" : "");
	if (vbe_pol_domid_name(s))
		return vbe_pol_err(o, -EINVAL, "'%s' names a domain id, which Xen gives to "
				   "the next domain too: give the domain a tenant name (the "
				   "toolstack's `tenant` key, docs/tenants.md)", s);
	return 0;
}

static struct vbe_pol_member *vbe_pol_member(struct vbe_policy *p, const char *tenant)
{
	unsigned i;

	for (i = 0; i < p->nmem; i++)
		if (!strcmp(p->mem[i].tenant, tenant))
			return &p->mem[i];
	return NULL;
}

static struct vbe_pol_rule *vbe_pol_rule_find(struct vbe_policy *p, bool deny,
					      const char *from, const char *to)
{
	unsigned i;

	for (i = 0; i < p->nrule; i++)
		if (p->rule[i].deny == deny && !strcmp(p->rule[i].from, from) &&
		    !strcmp(p->rule[i].to, to))
			return &p->rule[i];
	return NULL;
}

static int vbe_pol_err(struct vout *o, int err, const char *fmt, ...)
{
	char msg[224];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return vout_err(o, err, "policy: %s", msg);
}

#define VBE_POL_USAGE "default open|tenant; group GROUP TENANT..; ungroup TENANT..; " \
		      "allow|deny FROM TO; remove allow|deny FROM TO; clear"

/* Apply one change (words of a command, "policy" left out) to p. */
static int vbe_pol_apply(struct vbe_policy *p, int argc, char **argv, struct vout *o)
{
	int i;

	if (argc == 2 && !strcmp(argv[0], "default")) {
		if (strcmp(argv[1], "open") && strcmp(argv[1], "tenant"))
			return vbe_pol_err(o, -EINVAL, "default '%.32s': open or tenant",
					   argv[1]);
		p->closed = !strcmp(argv[1], "tenant");
		return 0;
	}
	if (argc == 1 && !strcmp(argv[0], "clear")) {
		p->closed = false;
		p->nmem = p->nrule = 0;
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[0], "group")) {
		int err;

		for (i = 1; i < argc; i++)
			if ((err = vbe_pol_kept_name(argv[i], false, o)))
				return err;
		/* Groups and ungrouped tenants share one set of names: a group
		 * must not be named as a tenant (uid<N>, or one in a group),
		 * nor a tenant as another group. */
		if (!strncmp(argv[1], "uid", 3) && argv[1][3] >= '0' && argv[1][3] <= '9')
			return vbe_pol_err(o, -EINVAL, "group name '%s' looks like a tenant "
					   "(uid<N>)", argv[1]);
		if (vbe_pol_member(p, argv[1]))
			return vbe_pol_err(o, -EEXIST, "'%s' is a tenant in a group: not a "
					   "group name", argv[1]);
		for (i = 2; i < argc; i++) {
			unsigned j;

			for (j = 0; j < p->nmem; j++)
				if (!strcmp(p->mem[j].group, argv[i]))
					return vbe_pol_err(o, -EEXIST, "'%s' is a group: not a "
							   "tenant", argv[i]);
			if (!strcmp(argv[i], argv[1]))
				return vbe_pol_err(o, -EINVAL, "group '%s' in itself", argv[1]);
		}
		for (i = 2; i < argc; i++) {
			struct vbe_pol_member *m = vbe_pol_member(p, argv[i]);

			if (!m) {
				if (p->nmem == VBE_POL_MEMBERS)
					return vbe_pol_err(o, -ENOSPC, "%s",
							   "256 grouped tenants is the limit");
				m = &p->mem[p->nmem++];
				snprintf(m->tenant, sizeof(m->tenant), "%s", argv[i]);
			}
			snprintf(m->group, sizeof(m->group), "%s", argv[1]);
		}
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[0], "ungroup")) {
		for (i = 1; i < argc; i++) {
			struct vbe_pol_member *m = vbe_pol_member(p, argv[i]);

			if (!m)
				return vbe_pol_err(o, -ENOENT, "tenant '%.64s' is in no group",
						   argv[i]);
			*m = p->mem[--p->nmem];
		}
		return 0;
	}
	if ((argc == 3 && (!strcmp(argv[0], "allow") || !strcmp(argv[0], "deny"))) ||
	    (argc == 4 && !strcmp(argv[0], "remove") &&
	     (!strcmp(argv[1], "allow") || !strcmp(argv[1], "deny")))) {
		bool rm = argc == 4;
		bool deny = !strcmp(argv[rm], "deny");
		const char *from = argv[rm + 1], *to = argv[rm + 2];
		struct vbe_pol_rule *r;

		int err;

		if ((err = vbe_pol_kept_name(from, true, o)) ||
		    (err = vbe_pol_kept_name(to, true, o)))
			return err;
		r = vbe_pol_rule_find(p, deny, from, to);
		if (rm) {
			if (!r)
				return vbe_pol_err(o, -ENOENT, "no such rule: %s", deny ?
						   "deny" : "allow");
			memmove(r, r + 1, (size_t)(&p->rule[p->nrule] - (r + 1)) * sizeof(*r));
			p->nrule--;
			return 0;
		}
		if (r)
			return 0;
		if (p->nrule == VBE_POL_RULES)
			return vbe_pol_err(o, -ENOSPC, "%s", "256 rules is the limit");
		r = &p->rule[p->nrule++];
		r->deny = deny;
		snprintf(r->from, sizeof(r->from), "%s", from);
		snprintf(r->to, sizeof(r->to), "%s", to);
		r->hfrom = strcmp(from, "*") ? vbe_policy_hash(from) : VBE_POL_ANY;
		r->hto = strcmp(to, "*") ? vbe_policy_hash(to) : VBE_POL_ANY;
		return 0;
	}
	return vbe_pol_err(o, -EINVAL, "unknown or incomplete change '%.32s' (" VBE_POL_USAGE
			   ")", argc ? argv[0] : "");
}

/* The policy as the lines that make it (the file, `policy show`); JSON:
 * {"default","file","groups":[{"group","tenants":[..]}],"rules":[..]}. */
static void vbe_pol_print(const struct vbe_policy *p, struct vout *o)
{
	const char *dflt = p->closed ? "tenant" : "open";
	unsigned i, j, k;

	vout_str(o, "default", dflt, "default %s\n", dflt);
	vout_jstr(o, "file", p->path[0] ? p->path : NULL);
	/* One line per group, its tenants in table order. */
	vout_arr(o, "groups");
	for (i = 0; i < p->nmem; i++) {
		for (j = 0; j < i && strcmp(p->mem[j].group, p->mem[i].group); j++)
			;
		if (j < i)
			continue;
		vout_obj(o, NULL);
		vout_jstr(o, "group", p->mem[i].group);
		vout_arr(o, "tenants");
		/* 8 tenants a line: a line must load again (40 words,
		 * 1023 bytes), and `group` adds to a group. */
		k = 0;
		for (j = i; j < p->nmem; j++) {
			if (strcmp(p->mem[j].group, p->mem[i].group))
				continue;
			if (k % 8 == 0)
				vout_text(o, "%sgroup %s", k ? "\n" : "", p->mem[i].group);
			vout_str(o, NULL, p->mem[j].tenant, " %s", p->mem[j].tenant);
			k++;
		}
		vout_text(o, "\n");
		vout_end(o);
		vout_end(o);
	}
	vout_end(o);
	vout_arr(o, "rules");
	for (i = 0; i < p->nrule; i++) {
		const char *act = p->rule[i].deny ? "deny" : "allow";

		vout_obj(o, NULL);
		vout_str(o, "action", act, "%s", act);
		vout_str(o, "from", p->rule[i].from, " %s", p->rule[i].from);
		vout_str(o, "to", p->rule[i].to, " %s\n", p->rule[i].to);
		vout_end(o);
	}
	vout_end(o);
}

/* Split a line into words (in place); a '#' starts a comment. */
static int vbe_pol_words(char *line, char **argv, int max)
{
	char *save = NULL, *tok, *hash = strchr(line, '#');
	int argc = 0;

	if (hash)
		*hash = '\0';
	for (tok = strtok_r(line, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (argc == max)
			return -E2BIG;
		argv[argc++] = tok;
	}
	return argc;
}

static int vbe_pol_load(struct vbe_policy *p, const char *path)
{
	char line[1024], *argv[40];
	unsigned lineno = 0;
	int argc, rc = 0;
	FILE *f;

	f = fopen(path, "re");
	if (!f) {
		if (errno != ENOENT)
			return -errno;
		vlog_warn("policy: %s does not exist: the default policy (open) until "
			  "`vrdmactl policy` writes it", path);
		return 0;
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			vlog_err("policy: %s:%u: line too long", path, lineno);
			rc = -EINVAL;
			break;
		}
		argc = vbe_pol_words(line, argv, 40);
		if (argc < 0) {
			vlog_err("policy: %s:%u: too many words", path, lineno);
			rc = -EINVAL;
		} else if (argc) {
			struct vout eo = { 0 };		/* its error only */

			rc = vbe_pol_apply(p, argc, argv, &eo);
			if (rc)		/* eo.msg: "policy: <why>" */
				vlog_err("policy: %s:%u: %s", path, lineno,
					 eo.msg + strlen("policy: "));
		}
	}
	if (!rc && ferror(f))
		rc = -EIO;
	fclose(f);
	return rc;
}

struct vbe_pol_out {
	struct vout o;
	bool finished;
};

static int vbe_pol_fill(FILE *f, void *arg)
{
	struct vbe_pol_out *po = arg;

	fputs("# vrdma connect policy: written by vrdmad (vrdmactl policy ...)\n", f);
	po->finished = true;
	return vout_finish(&po->o, f);	/* the lines of `policy show` */
}

/* Write p to its file, whole or not at all (filesave.c). */
static int vbe_pol_save(const struct vbe_policy *p)
{
	struct vbe_pol_out po = { .finished = false };
	int err;

	if (!p->path[0])
		return 0;
	err = vout_init(&po.o, false);
	if (err)
		return err;
	vbe_pol_print(p, &po.o);
	err = vbe_file_replace(p->path, "policy", vbe_pol_fill, &po);
	if (!po.finished)
		vout_fini(&po.o);	/* the file could not be made */
	return err;
}

int vbe_policy_new(struct vbe_node *n, const char *path)
{
	struct vbe_policy *p = calloc(1, sizeof(*p));
	int err;

	if (!p)
		return -ENOMEM;
	if (path && *path) {
		if (strlen(path) >= sizeof(p->path)) {
			free(p);
			return -ENAMETOOLONG;
		}
		strcpy(p->path, path);
		err = vbe_pol_load(p, path);
		if (err) {
			vlog_err("policy: cannot load %s: %s", path, strerror(-err));
			free(p);
			return err;
		}
		vlog_info("policy: %s: default %s, %u grouped tenants, %u rules", path,
			  p->closed ? "tenant" : "open", p->nmem, p->nrule);
	}
	n->pol = p;
	return 0;
}

/* Does tenant name have guests here?  Such a name is no group's. */
static bool vbe_pol_tenant_live(const struct vbe_node *n, const char *name)
{
	const struct vbe_tenant *t;

	for (t = n->tenants; t; t = t->next)
		if (!strcmp(t->name, name))
			return true;
	return false;
}

/*
 * SIGHUP: the file again, loaded into a fresh policy as at start; one
 * that does not load leaves the running policy as it was (never half
 * applied).  Swapped as a `vrdmactl policy` change is: decisions look
 * the policy up each time, nothing keeps a pointer into it.
 */
int vbe_node_policy_reload(struct vbe_node *n)
{
	struct vbe_policy *next;
	unsigned i;
	int err;

	if (!n->pol->path[0]) {
		vlog_info("policy: no -P file to reload: held in memory");
		return 0;
	}
	next = calloc(1, sizeof(*next));
	if (!next)
		return -ENOMEM;
	memcpy(next->path, n->pol->path, sizeof(next->path));
	next->lim = n->pol->lim;	/* the refusal log's rate, as before */
	err = vbe_pol_load(next, next->path);
	if (err)
		vlog_err("policy: cannot reload %s: %s; the running policy stays",
			 next->path, strerror(-err));
	/* As `vrdmactl policy group`: a tenant with guests is no group. */
	for (i = 0; !err && i < next->nmem; i++)
		if (vbe_pol_tenant_live(n, next->mem[i].group)) {
			vlog_err("policy: cannot reload %s: group '%s' is a tenant with "
				 "guests; the running policy stays", next->path,
				 next->mem[i].group);
			err = -EEXIST;
		}
	if (err) {
		free(next);
		return err;
	}
	free(n->pol);
	n->pol = next;
	vlog_info("policy: reloaded %s: default %s, %u grouped tenants, %u rules",
		  next->path, next->closed ? "tenant" : "open", next->nmem, next->nrule);
	return 0;
}

void vbe_policy_free(struct vbe_node *n)
{
	free(n->pol);
	n->pol = NULL;
}

/* `vrdmactl policy check FROM TO`: tenants (or groups), and why.  JSON:
 * {"decision","from","from_group","to","to_group","by":"group|rule|default",
 *  "rule":{"action","from","to"} or "default":"open|tenant"}. */
static int vbe_pol_check(struct vbe_node *n, const char *from, const char *to,
			 struct vout *o)
{
	struct vbe_party f = vbe_policy_local(n, from), t = vbe_policy_local(n, to);
	const char *gf = f.group, *gt = t.group;
	const char *dflt = n->pol->closed ? "tenant" : "open";
	const struct vbe_pol_rule *why;
	bool ok = vbe_pol_decide(n->pol, &f, &t, &why);

	vout_str(o, "decision", ok ? "allow" : "deny", "%s:", ok ? "allow" : "deny");
	vout_str(o, "from", from, " %s", from);
	vout_str(o, "from_group", gf, " (group %s) ->", gf);
	vout_str(o, "to", to, " %s", to);
	vout_str(o, "to_group", gt, " (group %s): ", gt);
	if (!strcmp(gf, gt)) {
		vout_str(o, "by", "group", "same group\n");
	} else if (why) {
		vout_str(o, "by", "rule", "rule ");
		vout_obj(o, "rule");
		vout_str(o, "action", why->deny ? "deny" : "allow", "%s",
			 why->deny ? "deny" : "allow");
		vout_str(o, "from", why->from, " %s", why->from);
		vout_str(o, "to", why->to, " %s\n", why->to);
		vout_end(o);
	} else {
		vout_jstr(o, "by", "default");
		vout_str(o, "default", dflt, "default %s\n", dflt);
	}
	return 0;
}

int vbe_node_policy(struct vbe_node *n, int argc, char **argv, struct vout *o)
{
	struct vbe_policy *next;
	int err;

	if (!argc || (argc == 1 && !strcmp(argv[0], "show"))) {
		vbe_pol_print(n->pol, o);
		return 0;
	}
	if (!strcmp(argv[0], "check")) {
		if (argc != 3 || !vbe_pol_name_ok(argv[1], false) ||
		    !vbe_pol_name_ok(argv[2], false))
			return vbe_pol_err(o, -EINVAL, "%s", "usage: policy check FROM_TENANT "
					   "TO_TENANT");
		return vbe_pol_check(n, argv[1], argv[2], o);
	}
	/* On a copy: what is not saved does not take effect. */
	next = malloc(sizeof(*next));
	if (!next)
		return vbe_pol_err(o, -ENOMEM, "%s", "out of memory");
	memcpy(next, n->pol, sizeof(*next));
	/* A group named as a tenant that has guests would take it in. */
	if (argc >= 2 && !strcmp(argv[0], "group") && vbe_pol_tenant_live(n, argv[1])) {
		free(next);
		return vbe_pol_err(o, -EEXIST, "'%s' is a tenant with guests: not a group name",
				   argv[1]);
	}
	err = vbe_pol_apply(next, argc, argv, o);
	if (!err) {
		err = vbe_pol_save(next);
		if (err)
			vbe_pol_err(o, err, "cannot write the policy file: %s",
				    strerror(-err));
	}
	if (err) {
		free(next);
		return err;
	}
	free(n->pol);
	n->pol = next;
	if (!n->pol->path[0])	/* JSON: "file":null says it */
		vout_text(o, "note: policy held in memory only (vrdmad has no -P file): "
			  "lost at restart\n");
	vlog_info("policy: %s%s%s%s%s%s%s", argv[0], argc > 1 ? " " : "",
		  argc > 1 ? argv[1] : "", argc > 2 ? " " : "", argc > 2 ? argv[2] : "",
		  argc > 3 ? " " : "", argc > 3 ? argv[3] : "");
	vbe_pol_print(n->pol, o);
	return 0;
}
