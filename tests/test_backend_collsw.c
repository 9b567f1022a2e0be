// SPDX-License-Identifier: MIT
/*
 * The operator's switches of the teams dom0 runs: per node (vrdmad.conf
 * `coll`, vbe_node_cfg.coll_off) every TEAM_JOIN answers NOENT; per VM
 * (`vrdmactl set VM coll=off`) a team with such a member is made, and
 * every member hears EVT_TEAM NOENT so all of them run it themselves.
 * The key as `set` takes it, `get` shows it and the settings file keeps
 * it; teams made before a change run on as they were made.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_tg.h"
#include "vrdma/coll.h"
#include "../backend/vbe.h"

#define LIST_OFF	(DATA_OFF)
#define SEND_OFF	(DATA_OFF + 4096)
#define RECV_OFF	(DATA_OFF + 8192)

static const uint8_t KEY[16] = { 0xc0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7 };

static uint32_t put_list(struct tg *g, unsigned n, const char *name)
{
	uint32_t len = 0;

	for (unsigned i = 0; i < n; i++) {
		strcpy((char *)g->mem + LIST_OFF + len, name);
		len += (uint32_t)strlen(name) + 1;
	}
	return len;
}

/* TEAM_JOIN of g as rank of a team of size on node n1: its CMD_DONE. */
static int join(struct tg *g, uint8_t key0, uint32_t size, uint32_t rank, uint32_t *team)
{
	struct vrdma_req r = mkreq(VRDMA_CMD_TEAM_JOIN, 0);
	uint32_t out[4] = { 0 };
	int st;

	memcpy(r.u.team_join.key, KEY, 16);
	r.u.team_join.key[1] = key0;
	r.u.team_join.size = size;
	r.u.team_join.rank = rank;
	r.u.team_join.pd = g->pd;
	r.u.team_join.cq = g->cq;
	r.u.team_join.list_lkey = g->key;
	r.u.team_join.list_addr = IOVA + LIST_OFF;
	r.u.team_join.list_len = put_list(g, size, "n1");
	st = tg_cmd(g, &r, out);
	*team = out[0];
	return st;
}

/* The one EVT_TEAM g got (-1: none). */
static int team_evt(struct tg *g)
{
	int st = -1;

	tg_events(g);
	for (unsigned i = 0; i < g->nasync; i++)
		if (g->async[i].type == VRDMA_EVT_TEAM) {
			ck_assert_int_eq(st, -1);
			st = g->async[i].status;
		}
	g->nasync = 0;
	return st;
}

/* Operation seq of g: an allreduce (sum) of 4 int32s. */
static void post_sum(struct tg *g, uint32_t team, uint64_t seq)
{
	struct vrdma_req r = mkreq(VRDMA_OP_COLL, team);

	r.id = 100 + seq;
	r.u.coll.kind = VRDMA_COLL_ALLREDUCE;
	r.u.coll.type = VRDMA_COLL_INT32;
	r.u.coll.op = VRDMA_COLL_SUM;
	r.u.coll.count = 4;
	r.u.coll.seq = seq;
	r.u.coll.sge[0] = (struct vrdma_wire_sge){ IOVA + SEND_OFF, 16, g->key };
	r.u.coll.sge[1] = (struct vrdma_wire_sge){ IOVA + RECV_OFF, 16, g->key };
	tg_push(g, &r);
}

static int set(const char *vm, const char *kv, char *out, size_t len)
{
	char buf[64], *kvs[1] = { buf };
	int err;

	snprintf(buf, sizeof(buf), "%s", kv);
	err = vbe_node_prio_set(node, vm, 1, kvs, tg_out(false));
	tg_out_end(out, len);
	return err;
}

static void teams_text(char *out, size_t len)
{
	ck_assert_int_eq(vbe_node_teams(node, tg_out(false)), 0);
	tg_out_end(out, len);
}

/* The node again, from cfg (its platform dom0). */
static void node_again(struct vbe_node_cfg *cfg)
{
	cfg->node_name = "n1";
	cfg->plat = dom0;
	vbe_node_free(node);
	ck_assert_int_eq(vbe_node_new(cfg, &node), 0);
	stub_run();
}

/* coll = off for the node: every join is NOENT at once, no team made;
 * `teams` says so before any join. */
START_TEST(collsw_node_off)
{
	struct vbe_node_cfg cfg = { .coll_off = true };
	struct tg g[2];
	uint32_t t;
	char out[512];

	node_again(&cfg);
	teams_text(out, sizeof(out));
	ck_assert_msg(strstr(out, "node n1: offload off, 0 teams, 0 joins"), "%s", out);
	tg_full(&g[0], 5);
	tg_full(&g[1], 6);
	ck_assert_int_eq(join(&g[0], 1, 2, 0, &t), VRDMA_CS_NOENT);
	ck_assert_int_eq(join(&g[1], 1, 2, 1, &t), VRDMA_CS_NOENT);
	ck_assert_int_eq(team_evt(&g[0]), -1);
	ck_assert_uint_eq(node->coll->nteams, 0);
	ck_assert_uint_eq(node->coll->joins, 0);
	for (unsigned i = 0; i < 2; i++) {
		ck_assert_int_eq(back_state(&g[i]), VRDMA_XB_CONNECTED);
		tg_stop(&g[i]);
	}
}
END_TEST

/* A member of a VM with coll=off: its join is OK, and when the team is
 * complete every member hears NOENT (fallback); dom0 runs nothing. */
START_TEST(collsw_vm_off)
{
	struct tg g[3];
	uint32_t t[3];
	char out[1024];
	struct vrdma_req r;

	for (unsigned i = 0; i < 3; i++)
		tg_full(&g[i], 5 + i);
	ck_assert_int_eq(set("6", "coll=off", out, sizeof(out)), 0);
	for (unsigned i = 0; i < 3; i++) {
		ck_assert_int_eq(join(&g[i], 2, 3, i, &t[i]), VRDMA_CS_OK);
		ck_assert_int_eq(team_evt(&g[i]), i < 2 ? -1 : VRDMA_CS_NOENT);
	}
	for (unsigned i = 0; i < 2; i++)
		ck_assert_int_eq(team_evt(&g[i]), VRDMA_CS_NOENT);
	ck_assert_int_eq(node->coll->teams->state, VBE_TEAM_SELF);
	ck_assert_ptr_null(node->coll->scratch);	/* no team ran: none made */
	teams_text(out, sizeof(out));
	ck_assert_msg(strstr(out, "offload on, 1 teams") && strstr(out, " fallback members 3"),
		      "%s", out);
	/* Members that fall back leave (libvrdma does): nothing is kept. */
	for (unsigned i = 0; i < 3; i++) {
		r = mkreq(VRDMA_CMD_TEAM_LEAVE, t[i]);
		ck_assert_int_eq(tg_cmd(&g[i], &r, NULL), VRDMA_CS_OK);
	}
	ck_assert_uint_eq(node->coll->nteams, 0);
	ck_assert_uint_eq(node->coll->ops, 0);
	for (unsigned i = 0; i < 3; i++)
		tg_stop(&g[i]);
}
END_TEST

/* A team made before coll=off runs on in dom0; the next one falls
 * back; coll=on again: the one after is offloaded. */
START_TEST(collsw_vm_off_later)
{
	struct tg g[2];
	uint32_t t[2];
	char out[1024];

	tg_full(&g[0], 5);
	tg_full(&g[1], 6);
	for (unsigned i = 0; i < 2; i++) {
		int32_t *v = (int32_t *)(g[i].mem + SEND_OFF);

		for (unsigned k = 0; k < 4; k++)
			v[k] = (int32_t)(k + 10 * i);
		ck_assert_int_eq(join(&g[i], 3, 2, i, &t[i]), VRDMA_CS_OK);
	}
	ck_assert_int_eq(team_evt(&g[0]), VRDMA_CS_OK);
	ck_assert_int_eq(team_evt(&g[1]), VRDMA_CS_OK);
	ck_assert_int_eq(set("5", "coll=off", out, sizeof(out)), 0);
	for (unsigned i = 0; i < 2; i++)
		post_sum(&g[i], t[i], 1);
	vbe_node_poll(node);
	for (unsigned i = 0; i < 2; i++) {
		int32_t *w = (int32_t *)(g[i].mem + RECV_OFF);

		expect_cqe(&g[i], 101, VRDMA_WS_SUCCESS);
		ck_assert_int_eq(w[3], 3 + 13);
	}
	teams_text(out, sizeof(out));
	ck_assert_msg(strstr(out, " offload members 2 joined 2 nodes 1 ops 1"), "%s", out);

	ck_assert_int_eq(join(&g[0], 4, 2, 0, &t[0]), VRDMA_CS_OK);
	ck_assert_int_eq(join(&g[1], 4, 2, 1, &t[1]), VRDMA_CS_OK);
	ck_assert_int_eq(team_evt(&g[0]), VRDMA_CS_NOENT);
	ck_assert_int_eq(team_evt(&g[1]), VRDMA_CS_NOENT);

	ck_assert_int_eq(set("5", "coll=on", out, sizeof(out)), 0);
	ck_assert_int_eq(join(&g[0], 5, 2, 0, &t[0]), VRDMA_CS_OK);
	ck_assert_int_eq(join(&g[1], 5, 2, 1, &t[1]), VRDMA_CS_OK);
	ck_assert_int_eq(team_evt(&g[0]), VRDMA_CS_OK);
	ck_assert_int_eq(team_evt(&g[1]), VRDMA_CS_OK);
	tg_stop(&g[0]);
	tg_stop(&g[1]);
}
END_TEST

/* The key: on|off only, canonical in the backend dir, in get's text and
 * JSON; a bad value written by hand is ignored, a good one applies. */
START_TEST(collsw_key)
{
	struct vbe_prio p, def;
	struct vbe_guest *bg;
	const char *allowed;
	char out[1024], path[160], val[16];
	static const char *const bad[] = { "coll=yes", "coll=OFF", "coll=", "coll=0" };
	struct tg a;

	vbe_prio_defaults(&def);
	p = def;
	ck_assert(!def.coll_off);
	ck_assert_int_eq(vbe_prio_parse("coll", "off", &p, &allowed), 0);
	ck_assert(p.coll_off && !vbe_prio_same(&p, &def));
	vbe_prio_format(&p, "coll", val, sizeof(val));
	ck_assert_str_eq(val, "off");
	ck_assert_int_eq(vbe_prio_parse("coll", "on", &p, &allowed), 0);
	ck_assert(vbe_prio_same(&p, &def));

	tg_full(&a, 5);
	bg = vbe_node_guest(node, 5, 0);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(set("5", bad[i], out, sizeof(out)), -EINVAL);
		ck_assert_msg(strstr(out, "error: set: bad coll") &&
			      strstr(out, "allowed: on or off"), "%s", out);
	}
	ck_assert(!bg->prio.coll_off);
	ck_assert_int_eq(set("5", "coll=off", out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, " cmds=0 coll=off\n"), "%s", out);
	ck_assert(bg->prio.coll_off);
	snprintf(path, sizeof(path), "%s/coll", a.bdir);
	ck_assert_int_eq(vplat_key_read(dom0, path, val, sizeof(val)), 0);
	ck_assert_str_eq(val, "off");
	ck_assert_int_eq(vbe_node_prio_get(node, "5", tg_out(true)), 0);
	tg_out_end(out, sizeof(out));
	ck_assert_msg(strstr(out, "\"cmds\":0,\"coll\":\"off\""), "%s", out);
	/* By hand (xenstore-write on Xen): checked as any key. */
	ck_assert_int_eq(vplat_key_write(dom0, path, "maybe"), 0);
	stub_run();
	ck_assert(bg->prio.coll_off);
	ck_assert_int_eq(vplat_key_write(dom0, path, "on"), 0);
	stub_run();
	ck_assert(!bg->prio.coll_off);
	ck_assert_int_eq(vbe_node_prio_get(node, "5", tg_out(false)), 0);
	tg_out_end(out, sizeof(out));
	ck_assert_msg(strstr(out, " coll=on\n"), "%s", out);
	tg_stop(&a);
}
END_TEST

/* state_dir/settings holds a line starting with pfx (count). */
static unsigned store_lines(const char *dir, const char *pfx)
{
	char path[128], line[512];
	unsigned n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/settings", dir);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += !strncmp(line, pfx, strlen(pfx));
	fclose(f);
	return n;
}

/* coll=off of a VM is kept in the settings file (version 3: an older
 * vrdmad refuses the file rather than drop it), comes back after a
 * restart, reaches the VM's next guest; back on: forgotten. */
START_TEST(collsw_kept)
{
	struct vbe_node_cfg cfg = { 0 };
	char dir[64], out[1024], path[160];
	struct vbe_guest *bg;
	struct tg a;

	snprintf(dir, sizeof(dir), "/tmp/vrdma-collsw-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	cfg.state_dir = dir;
	node_again(&cfg);
	ck_assert_int_eq(set("vm-c", "coll=off", out, sizeof(out)), 0);	/* no guest */
	ck_assert_msg(strstr(out, "vm=vm-c devid=0 stored=yes ") && strstr(out, " coll=off\n"),
		      "%s", out);
	ck_assert_uint_eq(store_lines(dir, "version 3\n"), 1);
	ck_assert_uint_eq(store_lines(dir, "vm vm-c 0 coll=off\n"), 1);

	node_again(&cfg);
	ck_assert_int_eq(vbe_node_prio_get(node, "vm-c", tg_out(false)), 0);
	tg_out_end(out, sizeof(out));
	ck_assert_msg(strstr(out, " coll=off\n"), "%s", out);
	ck_assert_int_eq(vplat_key_write(dom0, "/local/domain/5/name", "vm-c"), 0);
	tg_full(&a, 5);
	bg = vbe_node_guest(node, 5, 0);
	ck_assert(bg->prio.coll_off);

	ck_assert_int_eq(set("vm-c", "coll=on", out, sizeof(out)), 0);
	ck_assert(!bg->prio.coll_off);
	ck_assert_uint_eq(store_lines(dir, "version"), 0);
	ck_assert_uint_eq(store_lines(dir, "vm vm-c"), 0);
	tg_stop(&a);
	cfg.state_dir = NULL;
	node_again(&cfg);		/* for tg_teardown */
	snprintf(path, sizeof(path), "%s/settings", dir);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* An operation done in one chunk, the next already posted: the loop
 * keeps polling (the team is not taken for one its budgets hold). */
START_TEST(collsw_next_op_busy)
{
	struct tg g[2];
	uint32_t t[2];

	for (unsigned i = 0; i < 2; i++)
		tg_full(&g[i], 5 + i);
	for (unsigned i = 0; i < 2; i++)
		ck_assert_int_eq(join(&g[i], 8, 2, i, &t[i]), VRDMA_CS_OK);
	for (unsigned i = 0; i < 2; i++) {
		ck_assert_int_eq(team_evt(&g[i]), VRDMA_CS_OK);
		post_sum(&g[i], t[i], 1);
		post_sum(&g[i], t[i], 2);
	}
	vbe_node_poll(node);
	for (unsigned i = 0; i < 2; i++)
		expect_cqe(&g[i], 101, VRDMA_WS_SUCCESS);
	ck_assert(vbe_coll_busy(node));		/* operation 2 waits for a poll */
	vbe_node_poll(node);
	for (unsigned i = 0; i < 2; i++)
		expect_cqe(&g[i], 102, VRDMA_WS_SUCCESS);
	ck_assert(!vbe_coll_busy(node));
	for (unsigned i = 0; i < 2; i++)
		tg_stop(&g[i]);
}
END_TEST

static int64_t fake_us;

static int64_t fake_clock(void)
{
	return fake_us;
}

/*
 * A member's rate holds its team as it would hold its QPs: a chunk costs
 * each member its length for each of its ranges, and runs only as far
 * as every member's budget pays (tokens: rate 1M/s, burst 64K).  While
 * held, the team does not keep the loop polling; time refills the
 * bucket and the team goes on, in smaller chunks if need be.
 */
START_TEST(collsw_rate)
{
	enum { COUNT = 8192 };		/* 32 KiB in place: 64 KiB a member */
	struct tg g[2];
	uint32_t t[2];
	int32_t *v[2];
	char out[512];

	for (unsigned i = 0; i < 2; i++)
		tg_full(&g[i], 5 + i);
	node->clock_us = fake_clock;
	fake_us = 1000000;
	ck_assert_int_eq(set("5", "rate=1M/s,64K", out, sizeof(out)), 0);
	ck_assert_int_eq(join(&g[0], 9, 2, 0, &t[0]), VRDMA_CS_OK);
	ck_assert_int_eq(join(&g[1], 9, 2, 1, &t[1]), VRDMA_CS_OK);
	ck_assert_int_eq(team_evt(&g[0]), VRDMA_CS_OK);
	ck_assert_int_eq(team_evt(&g[1]), VRDMA_CS_OK);
	for (unsigned i = 0; i < 2; i++) {
		v[i] = (int32_t *)(g[i].mem + DATA_OFF + 4096);
		for (unsigned k = 0; k < COUNT; k++)
			v[i][k] = (int32_t)(k + i);
	}
	for (uint64_t seq = 1; seq <= 2; seq++)
		for (unsigned i = 0; i < 2; i++) {
			struct vrdma_req r = mkreq(VRDMA_OP_COLL, t[i]);

			r.id = 100 + seq;
			r.u.coll.kind = VRDMA_COLL_ALLREDUCE;
			r.u.coll.type = VRDMA_COLL_INT32;
			r.u.coll.op = VRDMA_COLL_SUM;
			r.u.coll.count = COUNT;
			r.u.coll.seq = seq;
			r.u.coll.sge[0] = (struct vrdma_wire_sge){ IOVA + DATA_OFF + 4096, 4 * COUNT,
								   g[i].key };
			r.u.coll.sge[1] = r.u.coll.sge[0];
			tg_push(&g[i], &r);
		}
	/* the burst pays for the first; the second waits, and the loop
	 * may sleep */
	for (unsigned k = 0; k < 5; k++)
		vbe_node_poll(node);
	for (unsigned i = 0; i < 2; i++) {
		expect_cqe(&g[i], 101, VRDMA_WS_SUCCESS);
		expect_no_cqe(&g[i]);
		ck_assert_int_eq(v[i][COUNT - 1], 2 * (COUNT - 1) + 1);
	}
	ck_assert_uint_eq(node->coll->teams->off, 0);
	ck_assert(!vbe_coll_busy(node));
	/* 40 ms: 41943 bytes of tokens, so at most half that of the vector
	 * (two ranges), in chunks of powers of two */
	fake_us += 40000;
	vbe_node_poll(node);
	ck_assert_uint_gt(node->coll->teams->off, 0);
	ck_assert_uint_le(node->coll->teams->off, 41943 / 2);
	ck_assert_uint_eq(node->coll->teams->off % 64, 0);
	fake_us += 1000000;
	for (unsigned k = 0; k < 3; k++)
		vbe_node_poll(node);
	for (unsigned i = 0; i < 2; i++) {
		expect_cqe(&g[i], 102, VRDMA_WS_SUCCESS);
		ck_assert_int_eq(v[i][COUNT - 1], 2 * (2 * (COUNT - 1) + 1));
		ck_assert_int_eq(v[i][0], 2);
	}
	node->clock_us = NULL;
	for (unsigned i = 0; i < 2; i++)
		tg_stop(&g[i]);
}
END_TEST

TCase *backend_collsw_tcase(void)
{
	TCase *t = tcase_create("collsw");

	tcase_add_checked_fixture(t, tg_setup, tg_teardown);
	tcase_add_test(t, collsw_node_off);
	tcase_add_test(t, collsw_vm_off);
	tcase_add_test(t, collsw_vm_off_later);
	tcase_add_test(t, collsw_key);
	tcase_add_test(t, collsw_kept);
	tcase_add_test(t, collsw_rate);
	tcase_add_test(t, collsw_next_op_busy);
	return t;
}
