// SPDX-License-Identifier: MIT
/*
 * Connect policy and service namespaces (issue 12 item 3, backend/
 * policy.c, cm.c): a tenant cannot take another tenant's service name
 * (it only fills its own namespace), a listener learns who asks
 * (CONN_FROM), the policy decides who may reach whom -- by name, by a
 * group-qualified name and by QP number -- and it is kept in its file.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_tg.h"
#include "../backend/vbe.h"

/* A guest of `tenant` (the toolstack's key, before `frontend`) that
 * takes CONN_FROM. */
static void mk(struct tg *g, uint32_t domid, const char *tenant)
{
	char path[256];

	snprintf(path, sizeof(path), VRDMA_XS_BACK_FMT "/tenant", domid, 0u);
	ck_assert_int_eq(vplat_key_write(dom0, path, tenant), 0);
	tg_conn_from = true;
	tg_full(g, domid);
	tg_conn_from = false;
}

static int listen_on(struct tg *g, const char *svc)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_LISTEN, 0);

	snprintf(r.u.listen.service, sizeof(r.u.listen.service), "%s", svc);
	return tg_cmd(g, &r, NULL);
}

static int connect_to(struct tg *g, const char *svc)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_CONNECT, g->qp);

	snprintf(r.u.connect.service, sizeof(r.u.connect.service), "%s", svc);
	return tg_cmd(g, &r, NULL);
}

/* `vrdmactl policy <line>`; what it printed in out (if given). */
static int pol(const char *line, char *out, size_t len)
{
	char buf[256], *argv[16], *save = NULL, *tok, sink[1024];
	int argc = 0, rc;

	snprintf(buf, sizeof(buf), "%s", line);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	if (!out) {
		out = sink;
		len = sizeof(sink);
	}
	rc = vbe_node_policy(node, argc, argv, tg_out(false));
	tg_out_end(out, len);
	return rc;
}

/* l got CONN_FROM (from c) then CONN_REQUEST: refuse it, c's QP is
 * back in reset for the next try. */
static void expect_request(struct tg *l, struct tg *c, struct tg **gs, unsigned n)
{
	const struct vrdma_evt *f, *e;
	struct vrdma_req r;

	pump(gs, n);
	ck_assert_uint_ge(l->nasync, 2);
	f = &l->async[l->nasync - 2];
	e = &l->async[l->nasync - 1];
	ck_assert_int_eq(f->type, VRDMA_EVT_CONN_FROM);
	ck_assert_int_eq(e->type, VRDMA_EVT_CONN_REQUEST);
	ck_assert(f->id == e->id);
	ck_assert_uint_eq(f->handle, e->handle);
	ck_assert_str_eq(f->u.from.node, "n1");
	ck_assert_uint_eq(f->u.from.domid, c->domid);
	ck_assert_uint_eq(f->u.from.devid, 0);
	ck_assert_uint_eq(e->u.conn.peer_qpn, c->qpn);
	r = mkreq(VRDMA_CMD_REJECT, e->handle);
	r.u.accept.conn_id = e->id;
	ck_assert_int_eq(tg_cmd(l, &r, NULL), VRDMA_CS_OK);
	pump(gs, n);
	ck_assert_int_eq(c->async[c->nasync - 1].type, VRDMA_EVT_REJECTED);
}

/* The attack of the issue: a tenant takes a name first.  Now it only
 * takes it in its own namespace; the owner listens and is reached. */
START_TEST(pol_squatter)
{
	struct tg a, c, m;
	struct tg *gs[3] = { &a, &c, &m };
	unsigned before;

	mk(&a, 5, "alice");
	mk(&c, 6, "alice");
	mk(&m, 7, "mallory");
	ck_assert_int_eq(listen_on(&m, "db"), VRDMA_CS_OK);	/* first */
	ck_assert_int_eq(listen_on(&a, "db"), VRDMA_CS_OK);	/* not EEXIST */
	ck_assert_int_eq(listen_on(&c, "db"), VRDMA_CS_EXIST);	/* own group */
	before = m.nasync;
	ck_assert_int_eq(connect_to(&c, "db"), VRDMA_CS_OK);
	expect_request(&a, &c, gs, 3);
	ck_assert_uint_eq(m.nasync, before);	/* the squatter saw nothing */
	tg_stop(&m);
	tg_stop(&c);
	tg_stop(&a);
}
END_TEST

/* Between groups: open admits a qualified or unambiguous name, tenant
 * (same group only) refuses, deny and allow rules override. */
START_TEST(pol_rules)
{
	struct tg a, b, m;
	struct tg *gs[3] = { &a, &b, &m };
	char out[512];

	mk(&a, 5, "alice");
	mk(&b, 6, "bob");
	mk(&m, 7, "mallory");
	ck_assert_int_eq(listen_on(&a, "db"), VRDMA_CS_OK);
	/* Default open: bob reaches alice's only "db". */
	ck_assert_int_eq(connect_to(&b, "db"), VRDMA_CS_OK);
	expect_request(&a, &b, gs, 3);
	/* Two groups listen on "db": a bare name is ambiguous, a qualified
	 * one is not. */
	ck_assert_int_eq(listen_on(&m, "db"), VRDMA_CS_OK);
	ck_assert_int_eq(connect_to(&b, "db"), VRDMA_CS_NOENT);
	ck_assert_int_eq(connect_to(&b, "alice/db"), VRDMA_CS_OK);
	expect_request(&a, &b, gs, 3);
	ck_assert_int_eq(connect_to(&b, "nobody/db"), VRDMA_CS_NOENT);
	/* Own group first: mallory's own "db", never alice's. */
	ck_assert_int_eq(connect_to(&m, "db"), VRDMA_CS_OK);
	expect_request(&m, &m, gs, 3);
	/* deny beats open. */
	ck_assert_int_eq(pol("deny mallory alice", NULL, 0), 0);
	ck_assert_int_eq(connect_to(&m, "alice/db"), VRDMA_CS_ACCESS);
	ck_assert_int_eq(connect_to(&b, "alice/db"), VRDMA_CS_OK);
	expect_request(&a, &b, gs, 3);
	/* Same group only: bob is refused, alone or with a name. */
	ck_assert_int_eq(pol("default tenant", NULL, 0), 0);
	ck_assert_int_eq(connect_to(&b, "alice/db"), VRDMA_CS_ACCESS);
	ck_assert_int_eq(connect_to(&b, "db"), VRDMA_CS_ACCESS);
	/* An allow rule lets bob in, and a bare name finds the one listener
	 * bob may reach (mallory's is not a candidate). */
	ck_assert_int_eq(pol("allow bob alice", NULL, 0), 0);
	ck_assert_int_eq(connect_to(&b, "db"), VRDMA_CS_OK);
	expect_request(&a, &b, gs, 3);
	ck_assert_int_eq(pol("check bob alice", out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "allow: bob (group bob) -> alice (group alice): "
				     "rule allow bob alice"));
	ck_assert_int_eq(pol("check alice bob", out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "deny: alice (group alice) -> bob (group bob): "
				     "default tenant"));
	/* A group is one tenant for both names and policy. */
	ck_assert_int_eq(pol("remove allow bob alice", NULL, 0), 0);
	ck_assert_int_eq(pol("group job alice bob", NULL, 0), 0);
	ck_assert_int_eq(connect_to(&b, "db"), VRDMA_CS_OK);
	expect_request(&a, &b, gs, 3);
	ck_assert_int_eq(listen_on(&b, "db"), VRDMA_CS_EXIST);	/* one namespace */
	ck_assert_int_eq(connect_to(&m, "job/db"), VRDMA_CS_ACCESS);
	tg_stop(&m);
	tg_stop(&b);
	tg_stop(&a);
}
END_TEST

/* Binding by QP number (verbs, perftest) obeys the policy too. */
START_TEST(pol_binding)
{
	struct tg a, m;
	struct vrdma_req r;
	uint8_t gid[16];

	mk(&a, 5, "alice");
	mk(&m, 7, "mallory");
	ck_assert_int_eq(pol("default tenant", NULL, 0), 0);
	node_gid(&a, gid);
	r = mkreq(VRDMA_CMD_MODIFY_QP, m.qp);
	r.u.modify_qp.state = VRDMA_MQ_RTR;
	memcpy(r.u.modify_qp.dest_gid, gid, 16);
	r.u.modify_qp.dest_qpn = a.qpn;
	ck_assert_int_eq(tg_cmd(&m, &r, NULL), VRDMA_CS_ACCESS);
	/* Either direction's rule admits a binding (it has no direction). */
	ck_assert_int_eq(pol("allow alice mallory", NULL, 0), 0);
	ck_assert_int_eq(tg_cmd(&m, &r, NULL), VRDMA_CS_OK);
	r = mkreq(VRDMA_CMD_MODIFY_QP, a.qp);
	r.u.modify_qp.state = VRDMA_MQ_RTR;
	memcpy(r.u.modify_qp.dest_gid, gid, 16);
	r.u.modify_qp.dest_qpn = m.qpn;
	ck_assert_int_eq(tg_cmd(&a, &r, NULL), VRDMA_CS_OK);
	{
		struct tg *gs[2] = { &a, &m };

		pump(gs, 2);
	}
	write_works(&m, &a);
	tg_stop(&m);
	tg_stop(&a);
}
END_TEST

/* Tenants whose group names hash alike (FNV-1a 32: "2yrGwe" and
 * "alice") are still two groups on one node: names are compared here,
 * hashes only where another node's word is all there is. */
START_TEST(pol_hash_collision)
{
	struct tg a, c, m;
	struct tg *gs[3] = { &a, &c, &m };

	ck_assert_uint_eq(vbe_policy_hash("2yrGwe"), vbe_policy_hash("alice"));
	mk(&a, 5, "alice");
	mk(&c, 6, "alice");
	mk(&m, 7, "2yrGwe");
	ck_assert_int_eq(pol("default tenant", NULL, 0), 0);
	ck_assert_int_eq(listen_on(&m, "db"), VRDMA_CS_OK);
	ck_assert_int_eq(listen_on(&a, "db"), VRDMA_CS_OK);
	ck_assert_int_eq(connect_to(&c, "db"), VRDMA_CS_OK);
	expect_request(&a, &c, gs, 3);
	ck_assert_int_eq(connect_to(&m, "alice/db"), VRDMA_CS_ACCESS);
	tg_stop(&m);
	tg_stop(&c);
	tg_stop(&a);
}
END_TEST

/* Bad changes say what is allowed and change nothing. */
START_TEST(pol_bad_input)
{
	char out[512];
	struct tg a;

	ck_assert_int_eq(pol("default closed", out, sizeof(out)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(out, "error: policy: default 'closed': open or tenant"));
	ck_assert_int_eq(pol("allow a/b c", out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(pol("allow a", out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(pol("group g", out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(pol("ungroup nobody", out, sizeof(out)), -ENOENT);
	ck_assert_int_eq(pol("remove deny a b", out, sizeof(out)), -ENOENT);
	ck_assert_int_eq(pol("frobnicate", out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(pol("check a", out, sizeof(out)), -EINVAL);
	/* Domain ids are reused: a kept name must not be one. */
	ck_assert_int_eq(pol("group job dom3 dom4", out, sizeof(out)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(out, "'dom3' names a domain id"));
	ck_assert_int_eq(pol("allow dom12 job", out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(pol("check dom1 dom2", out, sizeof(out)), 0);	/* asking is fine */
	/* Groups and tenants share names. */
	ck_assert_int_eq(pol("group uid1000 alice", out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(pol("group job alice", out, sizeof(out)), 0);
	ck_assert_int_eq(pol("group alice bob", out, sizeof(out)), -EEXIST);
	ck_assert_int_eq(pol("group other job", out, sizeof(out)), -EEXIST);
	ck_assert_int_eq(pol("group g g", out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(pol("clear", out, sizeof(out)), 0);
	/* Without a file a change says it is not kept. */
	ck_assert_int_eq(pol("default tenant", out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "note: policy held in memory only"));
	ck_assert_int_eq(pol("clear", out, sizeof(out)), 0);
	ck_assert_int_eq(pol("", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "default open\n");
	/* A group named as a tenant that has guests would take it in. */
	mk(&a, 5, "acme");
	ck_assert_int_eq(pol("group acme bob", out, sizeof(out)), -EEXIST);
	ck_assert_ptr_nonnull(strstr(out, "'acme' is a tenant with guests"));
	tg_stop(&a);
}
END_TEST

/* Kept in its file: every change written before it applies, loaded by
 * the next node; a file that does not parse stops the node. */
START_TEST(pol_file)
{
	char dir[] = "/tmp/vrdma-pol.XXXXXX", path[64], line[128], text[1024];
	char ungroup[] = "ungroup", bob[] = "bob", def[] = "default", ten[] = "tenant";
	char *w_ungroup[] = { ungroup, bob }, *w_default[] = { def, ten };
	struct vbe_node_cfg cfg = { .node_name = "n2", .plat = dom0 };
	struct vbe_node *n2;
	size_t got;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/policy", dir);
	cfg.policy_path = path;
	ck_assert_int_eq(vbe_node_new(&cfg, &n2), 0);	/* no file yet: empty */
	vbe_node_free(n2);
	ck_assert_int_eq(access(path, F_OK), -1);
	/* Changes through a node that keeps the file. */
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("# a comment\n\ndefault tenant\ngroup job alice bob   # trailing\n"
	      "allow job carol\ndeny * secret\n", f);
	fclose(f);
	ck_assert_int_eq(vbe_node_new(&cfg, &n2), 0);
	ck_assert_int_eq(vbe_node_policy(n2, 2, w_ungroup, tg_out(false)), 0);
	tg_out_end(text, sizeof(text));
	ck_assert_str_eq(text, "default tenant\ngroup job alice\nallow job carol\n"
			 "deny * secret\n");
	vbe_node_free(n2);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	got = fread(text, 1, sizeof(text) - 1, f);
	text[got] = '\0';
	fclose(f);
	ck_assert_ptr_nonnull(strstr(text, "default tenant\ngroup job alice\nallow job carol\n"
				     "deny * secret\n"));
	/* A group of 45 tenants written and loaded again (8 a line). */
	ck_assert_int_eq(vbe_node_new(&cfg, &n2), 0);
	for (got = 0; got < 5; got++) {
		char *w[11], words[11][32];
		int k;

		snprintf(words[0], sizeof(words[0]), "group");
		snprintf(words[1], sizeof(words[1]), "big");
		for (k = 2; k < 11; k++)
			snprintf(words[k], sizeof(words[k]), "tenant-%zu-%d", got, k);
		for (k = 0; k < 11; k++)
			w[k] = words[k];
		ck_assert_int_eq(vbe_node_policy(n2, 11, w, tg_out(false)), 0);
		tg_out_end(text, sizeof(text));
	}
	vbe_node_free(n2);
	ck_assert_int_eq(vbe_node_new(&cfg, &n2), 0);
	ck_assert_str_eq(vbe_policy_group(n2, "tenant-4-10"), "big");
	vbe_node_free(n2);
	/* A line that does not parse: no node, not a half policy. */
	f = fopen(path, "a");
	fputs("allow onlyone\n", f);
	fclose(f);
	ck_assert_int_eq(vbe_node_new(&cfg, &n2), -EINVAL);
	/* An unwritable file: the change is refused and does not apply. */
	unlink(path);
	ck_assert_int_eq(rmdir(dir), 0);
	ck_assert_int_eq(vbe_node_new(&cfg, &n2), 0);
	snprintf(line, sizeof(line), "error: policy: cannot write the policy file");
	ck_assert_int_lt(vbe_node_policy(n2, 2, w_default, tg_out(false)), 0);
	tg_out_end(text, sizeof(text));
	ck_assert_ptr_nonnull(strstr(text, line));
	ck_assert_int_eq(vbe_node_policy(n2, 0, NULL, tg_out(false)), 0);
	tg_out_end(text, sizeof(text));
	ck_assert_str_eq(text, "default open\n");
	vbe_node_free(n2);
}
END_TEST

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* SIGHUP (vbe_node_policy_reload): the file through the loader vrdmad
 * starts with; one that does not load, or names a tenant with guests as
 * a group (as `policy group` refuses), leaves the running policy. */
START_TEST(pol_reload)
{
	char dir[] = "/tmp/vrdma-pol.XXXXXX", path[64];
	struct vbe_node_cfg cfg = { .node_name = "n1" };
	struct tg a;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/policy", dir);
	put_file(path, "default tenant\ngroup lab alice\n");
	vbe_node_free(node);
	cfg.plat = dom0;
	cfg.policy_path = path;
	ck_assert_int_eq(vbe_node_new(&cfg, &node), 0);
	stub_run();
	mk(&a, 5, "acme");
	ck_assert_str_eq(vbe_policy_group(node, "alice"), "lab");

	put_file(path, "default open\ngroup lab alice acme\n");
	ck_assert_int_eq(vbe_node_policy_reload(node), 0);
	ck_assert_str_eq(vbe_policy_group(node, "acme"), "lab");
	put_file(path, "group acme bob\n");
	ck_assert_int_eq(vbe_node_policy_reload(node), -EEXIST);
	ck_assert_str_eq(vbe_policy_group(node, "bob"), "bob");
	ck_assert_str_eq(vbe_policy_group(node, "acme"), "lab");
	put_file(path, "default open\nfrob\n");
	ck_assert_int_eq(vbe_node_policy_reload(node), -EINVAL);
	ck_assert_str_eq(vbe_policy_group(node, "alice"), "lab");
	tg_stop(&a);
	unlink(path);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

TCase *backend_policy_tcase(void)
{
	TCase *t = tcase_create("policy");

	tcase_add_checked_fixture(t, tg_setup, tg_teardown);
	tcase_add_test(t, pol_squatter);
	tcase_add_test(t, pol_rules);
	tcase_add_test(t, pol_binding);
	tcase_add_test(t, pol_hash_collision);
	tcase_add_test(t, pol_bad_input);
	tcase_add_test(t, pol_file);
	tcase_add_test(t, pol_reload);
	return t;
}
