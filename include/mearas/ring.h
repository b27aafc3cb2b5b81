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
#include "mearas/proto.h"

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

#endif
