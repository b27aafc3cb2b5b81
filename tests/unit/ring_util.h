/* SPDX-License-Identifier: MIT */
/* A vGPU's submission ring and one completion ring in test memory, driven
 * through the shipped ring library (include/mearas/ring.h, common/ring.c):
 * the SQ producer the runtime library uses, the SQ consumer the poller uses,
 * the CQ producer and consumer. Rings may be smaller than the real ones and
 * start at any index (to cross the 32-bit wrap). */
#ifndef MEARAS_UNIT_RING_UTIL_H
#define MEARAS_UNIT_RING_UTIL_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mearas/ring.h"

struct test_ring {
	struct mearas_vgpu_rings r;
	struct mearas_ring_ctl ctl;     /* the SQ's control block */
	struct mearas_sq_producer prod;
	struct mearas_sq_consumer cons;
	struct mearas_sqe *sqes;
	uint8_t *arena;
	uint8_t *cq;                    /* one completion ring: control block, then entries */
	struct mearas_cq_producer cqp;
	struct mearas_cq_consumer cqc;
};

/* entries: SQ and CQ size (powers of two, at most the real ones); start:
 * every index's first value; arena_size: the payload arena (0: 4 KiB) */
static inline bool test_ring_init_arena(struct test_ring *t, uint32_t entries, uint32_t start, uint32_t arena_size)
{
	size_t cq_bytes = sizeof(struct mearas_ring_ctl) + entries * sizeof(struct mearas_cqe);
	struct mearas_ring_ctl *cqctl;

	memset(t, 0, sizeof(*t));
	t->sqes = calloc(entries, sizeof(*t->sqes));
	t->arena = calloc(1, arena_size ? arena_size : 4096);
	t->cq = aligned_alloc(64, (cq_bytes + 63) & ~(size_t)63);
	if (!t->sqes || !t->arena || !t->cq)
		return false;
	memset(t->cq, 0, cq_bytes);
	t->r = (struct mearas_vgpu_rings){ .sq = &t->ctl, .sqes = t->sqes, .arena = t->arena, .cqs = t->cq,
					   .cq_stride = cq_bytes, .sq_entries = entries, .cq_entries = entries,
					   .arena_size = arena_size ? arena_size : 4096 };
	mearas_sqp_init(&t->prod, &t->r);
	mearas_sqc_init(&t->cons, &t->r);
	mearas_cqp_init(&t->cqp, &t->r, 0);
	mearas_cqc_init(&t->cqc, &t->r, 0);
	/* the rings start at `start`: the owner sets the blocks, each end its index */
	cqctl = mearas_cq_ctl(&t->r, 0);
	t->ctl.head = t->ctl.tail = cqctl->head = cqctl->tail = start;
	t->prod.tail = t->prod.head_cached = t->cons.head = t->cqp.tail = t->cqc.head = start;
	t->prod.arena_mark[(start - 1) & (entries - 1)] = 0;
	return true;
}

static inline bool test_ring_init(struct test_ring *t, uint32_t entries, uint32_t start)
{
	return test_ring_init_arena(t, entries, start, 0);
}

static inline void test_ring_fini(struct test_ring *t)
{
	free(t->sqes);
	free(t->arena);
	free(t->cq);
	memset(t, 0, sizeof(*t));
}

/* Producer: false when the ring (or, for a large payload, the arena) is
 * full; nothing is written then. The record's inline bytes are its payload. */
static inline bool test_ring_push(struct test_ring *t, const struct mearas_sqe *e)
{
	struct mearas_sqe copy = *e;

	if (!mearas_sqp_has_slot(&t->prod))
		return false;
	(void)mearas_sqp_push(&t->prod, &copy, e->inline_payload, e->payload_len);
	return true;
}

/* Producer with a payload of its own (inline or in the arena). */
static inline bool test_ring_push_payload(struct test_ring *t, struct mearas_sqe *e, const void *p, uint32_t len)
{
	if (!mearas_sqp_has_slot(&t->prod))
		return false;
	if (len > MEARAS_SQE_INLINE && !mearas_sqp_arena_has(&t->prod, mearas_sqp_arena_need(&t->prod, len)))
		return false;
	(void)mearas_sqp_push(&t->prod, e, p, len);
	return true;
}

/* Consumer: false when empty; the record is copied out, then consumed. */
static inline bool test_ring_pop(struct test_ring *t, struct mearas_sqe *out)
{
	if (mearas_sqc_available(&t->cons) <= 0)
		return false;
	mearas_sqc_fetch(&t->cons, out);
	mearas_sqc_advance(&t->cons, 1);
	mearas_sqc_publish(&t->cons);
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
	/* the consumer copies the inline bytes the record says it has */
	return memcmp(e, &want, offsetof(struct mearas_sqe, inline_payload) + want.payload_len) == 0;
}

#endif
