/* SPDX-License-Identifier: MIT */
/*
 * test_backend_chain*.c: one node's vrdmad against the other nodes of a
 * team, which the test plays through the link seam (chain_peer.c): what
 * the node sends is taken off its links (take), what the others send is
 * put in its slots (put, put_ctl, put_chunk).
 */
#ifndef VRDMA_TESTS_CHAIN_PEER_H
#define VRDMA_TESTS_CHAIN_PEER_H

#include "backend_tg.h"
#include "vrdma/coll.h"
#include "../backend/vbe.h"
#include "../backend/coll/link.h"

#define LIST_OFF	(DATA_OFF)
#define VEC		(DATA_OFF + 4096)	/* a member's vector, in place */
#define QMAX		32

struct tmsg {
	struct vbe_cmsg h;
	uint8_t *pl;
};

extern struct vbe_clink *lk[2];		/* the team's links, by direction */
extern struct tmsg q[2][QMAX];		/* what it sent, not taken yet */
extern unsigned nq[2], closed, opened;
extern char peer_name[2][VBE_COLL_NAME];

extern uint8_t join_key;		/* joins' team: key byte 1 */

void drop_sent(void);
void chain_teardown(void);
void links_on(void);
struct tmsg take(unsigned dir, uint8_t type);
void nothing_sent(void);
void put(unsigned dir, const struct vbe_cmsg *h, const void *pl, uint32_t plen);
void put_ctl(unsigned dir, uint8_t type, uint8_t flags, uint32_t nlocal, uint32_t chunk,
	     const uint32_t *groups, unsigned ng);
void put_chunk(unsigned dir, uint8_t type, uint8_t flags, uint64_t seq, uint8_t kind,
	       uint8_t ctype, uint8_t op, uint32_t root, uint64_t count, uint64_t off,
	       uint32_t len, const void *pl);
int  join(struct tg *g, const char *const *names, uint32_t size, uint32_t rank,
	  uint32_t *team);
int  team_evt(struct tg *g);
void post_op(struct tg *g, uint32_t team, uint64_t seq, uint8_t kind, uint8_t type,
	     uint8_t op, uint32_t root, uint64_t count, uint32_t slen, uint32_t roff,
	     uint32_t rlen);
void gone(struct tg *g);
void poll_n(unsigned n);
void form_last(struct tg *g, uint32_t *team, uint32_t chunk);

#endif /* VRDMA_TESTS_CHAIN_PEER_H */
