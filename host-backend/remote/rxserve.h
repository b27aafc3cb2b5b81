/* SPDX-License-Identifier: MIT */
/*
 * Run to completion on a remote vGPU's link: while a link's receive thread
 * spins after data, it also does the work of the thread beside it (the
 * forwarder thread's on the forwarding node, forward.c; the session
 * thread's on the serving node, serve_worker.c), so that the thread that
 * read a message sends the answer. This is the state the two threads share:
 * the other thread waits while the receive thread serves, takes over when
 * it stops spinning, hands work over, or is busy reading for longer than
 * RX_SERVE_STALL_NS (a large transfer: the other work must not wait for it).
 */
#ifndef MEARAS_REMOTE_RXSERVE_H
#define MEARAS_REMOTE_RXSERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "mearas/clock.h"

#define RX_SERVE_STALL_NS (200ull * 1000)
/* how often the other thread looks whether the receive thread still passes */
#define RX_SERVE_CHECK_MS 1

struct rx_serve {
	int serves;       /* atomic: it spins and passes over the work between receives */
	int handoff;      /* atomic: it left work to the other thread */
	uint64_t pass_ns; /* atomic: its last pass */
};

/* The other thread: the receive thread serves now (it waits). */
static inline bool rx_serve_now(const struct rx_serve *r)
{
	return __atomic_load_n(&r->serves, __ATOMIC_ACQUIRE) && !__atomic_load_n(&r->handoff, __ATOMIC_ACQUIRE) &&
	       mearas_mono_ns() - __atomic_load_n(&r->pass_ns, __ATOMIC_RELAXED) < RX_SERVE_STALL_NS;
}

/* The receive thread, between receives while it spins: it serves; true
 * when it may pass over the work now (none handed over and not taken yet). */
static inline bool rx_serve_pass(struct rx_serve *r)
{
	__atomic_store_n(&r->pass_ns, mearas_mono_ns(), __ATOMIC_RELAXED);
	if (!__atomic_load_n(&r->serves, __ATOMIC_RELAXED))
		__atomic_store_n(&r->serves, 1, __ATOMIC_SEQ_CST);
	return !__atomic_load_n(&r->handoff, __ATOMIC_ACQUIRE);
}

/* The receive thread, before it waits without spinning: true when it
 * served until now (then it wakes the other thread). */
static inline bool rx_serve_stop(struct rx_serve *r)
{
	if (!__atomic_load_n(&r->serves, __ATOMIC_RELAXED))
		return false;
	__atomic_store_n(&r->serves, 0, __ATOMIC_SEQ_CST);
	return true;
}

/* The receive thread leaves work to the other thread: true when it had
 * not yet (then it wakes it). */
static inline bool rx_serve_hand_over(struct rx_serve *r)
{
	return !__atomic_exchange_n(&r->handoff, 1, __ATOMIC_SEQ_CST);
}

/* The other thread, before a pass of its own: what was handed over is taken. */
static inline void rx_serve_taken(struct rx_serve *r)
{
	__atomic_store_n(&r->handoff, 0, __ATOMIC_RELEASE);
}

#endif
