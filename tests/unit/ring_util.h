/* SPDX-License-Identifier: MIT */
/* A single-producer/single-consumer ring of mearas_sqe records driven exactly
 * as the client (producer) and the poller (consumer) drive the SQ, with the
 * control block of include/mearas/ring.h. */
#ifndef MEARAS_UNIT_RING_UTIL_H
#define MEARAS_UNIT_RING_UTIL_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mearas/ring.h"

struct test_ring {
	struct mearas_ring_ctl ctl;
	uint32_t entries;               /* power of two */
	uint32_t prod_tail, cons_head;  /* each side's private copy of its index */
	struct mearas_sqe *sqes;
};

static inline void test_ring_init(struct test_ring *r, uint32_t entries, uint32_t start)
{
	memset(&r->ctl, 0, sizeof(r->ctl));
	r->entries = entries;
	r->ctl.head = r->ctl.tail = start;
	r->prod_tail = r->cons_head = start;
	r->sqes = calloc(entries, sizeof(*r->sqes));
}

static inline void test_ring_fini(struct test_ring *r)
{
	free(r->sqes);
	r->sqes = NULL;
}

/* Producer: false when the ring is full (nothing is written then). */
static inline bool test_ring_push(struct test_ring *r, const struct mearas_sqe *e)
{
	if (mearas_ring_space(&r->ctl, r->entries) == 0)
		return false;
	r->sqes[r->prod_tail & (r->entries - 1)] = *e;
	r->prod_tail++;
	mearas_store_release(&r->ctl.tail, r->prod_tail);
	return true;
}

/* Consumer: false when empty. */
static inline bool test_ring_pop(struct test_ring *r, struct mearas_sqe *out)
{
	if (mearas_load_acquire(&r->ctl.tail) == r->cons_head)
		return false;
	*out = r->sqes[r->cons_head & (r->entries - 1)];
	r->cons_head++;
	mearas_store_release(&r->ctl.head, r->cons_head);
	return true;
}

/* A record whose every byte follows from its sequence number. */
static inline void test_sqe_fill(struct mearas_sqe *e, uint64_t seq)
{
	memset(e, 0, sizeof(*e));
	e->op = MEARAS_OP_NOP;
	e->user_data = seq;
	e->payload_len = (uint32_t)(seq % (MEARAS_SQE_INLINE + 1));
	for (uint32_t i = 0; i < e->payload_len; i++)
		e->inline_payload[i] = (uint8_t)(seq * 31 + i);
	e->args.a[0] = ~seq;
}

static inline bool test_sqe_valid(const struct mearas_sqe *e, uint64_t seq)
{
	struct mearas_sqe want;

	test_sqe_fill(&want, seq);
	return memcmp(e, &want, sizeof(want)) == 0;
}

#endif
