/* SPDX-License-Identifier: MIT */
/*
 * Single-producer/single-consumer rings on shared memory (SQ: client ->
 * backend, CQ: backend -> client), in the style of io_uring: the producer
 * writes entries then publishes tail with release order; the consumer reads
 * tail with acquire order, consumes, then publishes head with release order.
 *
 * Sleep/wakeup without lost wakeups (the need-wakeup protocol):
 *   consumer: set NEED_WAKEUP; full fence; re-check tail; sleep if still empty.
 *   producer: publish tail; full fence; if NEED_WAKEUP is set, notify.
 * Either the consumer sees the new tail, or the producer sees the flag.
 */
#ifndef MEARAS_RING_H
#define MEARAS_RING_H

#include <stdbool.h>
#include <stdint.h>
#include "mearas/region.h"

/* ---- the ring protocol's primitives ---- */

static inline uint32_t mearas_load_acquire(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void mearas_store_release(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline void mearas_full_fence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Entries available to the consumer; entries > size means a corrupt/hostile ring. */
static inline uint32_t mearas_ring_ready(const struct mearas_ring_ctl *c)
{
	return mearas_load_acquire(&c->tail) - __atomic_load_n(&c->head, __ATOMIC_RELAXED);
}

static inline uint32_t mearas_ring_space(const struct mearas_ring_ctl *c, uint32_t entries)
{
	return entries - (__atomic_load_n(&c->tail, __ATOMIC_RELAXED) - mearas_load_acquire(&c->head));
}

/* Consumer: about to sleep. Returns true if the ring is still empty after
 * announcing the need for a wakeup (then it is safe to sleep). */
static inline bool mearas_ring_prepare_sleep(struct mearas_ring_ctl *c)
{
	__atomic_store_n(&c->flags, MEARAS_RING_NEED_WAKEUP, __ATOMIC_RELAXED);
	mearas_full_fence();
	if (mearas_ring_ready(c) != 0) {
		__atomic_store_n(&c->flags, 0, __ATOMIC_RELAXED);
		return false;
	}
	return true;
}

static inline void mearas_ring_end_sleep(struct mearas_ring_ctl *c)
{
	__atomic_store_n(&c->flags, 0, __ATOMIC_RELAXED);
}

/* Producer: after publishing tail, does the consumer need a notification? */
static inline bool mearas_ring_needs_wakeup(const struct mearas_ring_ctl *c)
{
	mearas_full_fence();
	return __atomic_load_n(&c->flags, __ATOMIC_RELAXED) & MEARAS_RING_NEED_WAKEUP;
}

static inline void mearas_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* ---- the rings of one vGPU block and their ends (common/ring.c) ----
 * Every side that writes or reads records uses these: the runtime library
 * (SQ producer, CQ consumer), a remote node's session, which feeds a worker
 * as a guest would (the same two), and the back end's poller (SQ consumer,
 * CQ producer). Each end keeps its own index privately and never reads it
 * back from shared memory; the other end's index is only loaded. */

/* Where one vGPU's rings lie, as the block's owner computed it (from
 * mearas_vgpu_layout, never read back from the region). */
struct mearas_vgpu_rings {
	struct mearas_devinfo *info;
	struct mearas_ring_ctl *sq;
	struct mearas_sqe *sqes;
	uint8_t *arena;
	uint8_t *cqs;           /* per thread slot: a control block, then its entries */
	uint64_t cq_stride;
	uint32_t sq_entries, cq_entries, arena_size; /* powers of two (arena: any size) */
};

void mearas_vgpu_rings_at(struct mearas_vgpu_rings *r, uint8_t *block, const struct mearas_vgpu_layout *l,
			  uint32_t sq_entries, uint32_t cq_entries, uint32_t arena_size);
struct mearas_ring_ctl *mearas_cq_ctl(const struct mearas_vgpu_rings *r, unsigned slot);

/* SQ producer with the payload arena: payloads too large for a record's
 * inline bytes go to the arena, contiguous, and their space comes back as
 * the consumer moves its head past the record (arena_mark). One slot of the
 * ring always stays free, so the mark of the last consumed record survives.
 * Not thread-safe: one producer at a time (the caller's lock). */
struct mearas_sq_producer {
	struct mearas_ring_ctl *ctl;
	struct mearas_sqe *sqes;
	uint8_t *arena;
	uint32_t entries, arena_size;
	uint32_t tail;                  /* private producer index */
	uint32_t head_cached;           /* the consumer's head, last read */
	uint32_t arena_head;            /* free-running allocation point */
	uint32_t arena_mark[MEARAS_SQ_ENTRIES]; /* arena_head after record i */
};

void mearas_sqp_init(struct mearas_sq_producer *p, const struct mearas_vgpu_rings *r);
/* a record fits (re-reads the consumer's head only when the cached one says full) */
bool mearas_sqp_has_slot(struct mearas_sq_producer *p);
/* arena bytes a payload of len needs now (the arena's tail is skipped when it is too short) */
uint32_t mearas_sqp_arena_need(const struct mearas_sq_producer *p, uint32_t len);
/* that many arena bytes are free */
bool mearas_sqp_arena_has(struct mearas_sq_producer *p, uint32_t need);
/* every record posted is consumed */
bool mearas_sqp_drained(const struct mearas_sq_producer *p);
/* Writes e with its payload (inline when it fits, else in the arena:
 * flags, payload_off and payload_len are set here) and publishes it. The
 * caller made sure of a slot and, for an arena payload, of the space.
 * Returns true when the consumer sleeps and must be woken. */
bool mearas_sqp_push(struct mearas_sq_producer *p, struct mearas_sqe *e, const void *payload, uint32_t len);
/* Publishes e as it is: its inline bytes (payload_len of them, when its
 * payload is not in the arena), nothing placed in the arena. */
bool mearas_sqp_push_record(struct mearas_sq_producer *p, const struct mearas_sqe *e);

/* SQ consumer (the poller). */
struct mearas_sq_consumer {
	struct mearas_ring_ctl *ctl;
	const struct mearas_sqe *sqes;
	uint32_t entries;
	uint32_t head;                  /* private consumer index */
};

void mearas_sqc_init(struct mearas_sq_consumer *c, const struct mearas_vgpu_rings *r);
/* records waiting, or -1 when the producer's tail is out of range (hostile or corrupt) */
int mearas_sqc_available(const struct mearas_sq_consumer *c);
/* a private copy of the record at head (head does not move): the producer
 * cannot change it while it is checked */
void mearas_sqc_fetch(const struct mearas_sq_consumer *c, struct mearas_sqe *e);
/* consume n records; publish the head now or later (each store pulls the
 * line from the producer's core) */
static inline void mearas_sqc_advance(struct mearas_sq_consumer *c, uint32_t n)
{
	c->head += n;
}

static inline void mearas_sqc_publish(struct mearas_sq_consumer *c)
{
	mearas_store_release(&c->ctl->head, c->head);
}

/* CQ producer (the back end), one per thread slot; the caller serializes. */
struct mearas_cq_producer {
	struct mearas_ring_ctl *ctl;
	struct mearas_cqe *cqes;
	uint32_t entries;
	uint32_t tail;                  /* private producer index */
};

void mearas_cqp_init(struct mearas_cq_producer *p, const struct mearas_vgpu_rings *r, unsigned slot);
/* false when the consumer left no room (a client that does not read) */
bool mearas_cqp_push(struct mearas_cq_producer *p, const struct mearas_cqe *c);

/* CQ consumer (the runtime library, a remote node's session), one per thread slot. */
struct mearas_cq_consumer {
	struct mearas_ring_ctl *ctl;
	const struct mearas_cqe *cqes;
	uint32_t entries;
	uint32_t head;                  /* private consumer index */
};

void mearas_cqc_init(struct mearas_cq_consumer *c, const struct mearas_vgpu_rings *r, unsigned slot);
/* the next completion, if any (false when empty) */
bool mearas_cqc_pop(struct mearas_cq_consumer *c, struct mearas_cqe *out);
/* completions waiting */
static inline bool mearas_cqc_ready(const struct mearas_cq_consumer *c)
{
	return mearas_load_acquire(&c->ctl->tail) != c->head;
}

#endif
