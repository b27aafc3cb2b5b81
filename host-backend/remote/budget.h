/* SPDX-License-Identifier: MIT */
/*
 * What one link may make the serving node allocate: a byte budget that the
 * link's mapped-range shadows, queued reply bytes, graph launch ranges and
 * capture tables are taken from (--link-mem-mb). Header-only: the trackers
 * that take from it are also built into tests without the rest of mearasd.
 */
#ifndef MEARAS_REMOTE_BUDGET_H
#define MEARAS_REMOTE_BUDGET_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "mearas/clock.h"
#include "mearas/log.h"

/* A link's budget when --link-mem-mb is not given: its data area plus this
 * (on the serving node, and for the forwarder's shadows of mapped ranges). */
#define REMOTE_LINK_MEM_EXTRA (64ull << 20)

struct remote_budget {
	uint64_t limit;         /* bytes; 0 = no limit */
	uint64_t used;          /* atomic */
	const char *who;        /* the link's peer, for the log */
	uint64_t last_log_ns;   /* atomic: refusals are logged once a second */
};

/* Takes n bytes of b for what (a few words for the log); false, with a log
 * line, when that would pass its limit. b NULL: always true. */
static inline bool remote_budget_take(struct remote_budget *b, uint64_t n, const char *what)
{
	uint64_t used, now;

	if (!b)
		return true;
	used = __atomic_load_n(&b->used, __ATOMIC_RELAXED);
	do {
		if (b->limit && (n > b->limit || used > b->limit - n))
			goto refuse;
	} while (!__atomic_compare_exchange_n(&b->used, &used, used + n, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return true;
refuse:
	now = mearas_mono_ns();
	if (now - __atomic_load_n(&b->last_log_ns, __ATOMIC_RELAXED) > 1000000000ull) {
		__atomic_store_n(&b->last_log_ns, now, __ATOMIC_RELAXED);
		log_warn("remote link %s: over its memory budget: %s of %llu bytes refused (%llu of %llu MiB in use, "
			 "--link-mem-mb): its calls fail with cudaErrorMemoryAllocation", b->who ? b->who : "?", what,
			 (unsigned long long)n, (unsigned long long)(used >> 20), (unsigned long long)(b->limit >> 20));
	}
	return false;
}

static inline void remote_budget_give(struct remote_budget *b, uint64_t n)
{
	if (b)
		__atomic_fetch_sub(&b->used, n, __ATOMIC_RELAXED);
}

/* A full array arr of *cap elements of elem bytes made twice as long (first
 * elements when it has none), the growth taken from b for what: the new
 * array, with *cap updated; NULL, with arr and *cap as they were, when b
 * refuses it or memory is short. */
static inline void *remote_budget_grow(struct remote_budget *b, void *arr, uint32_t *cap, size_t elem, uint32_t first,
				       const char *what)
{
	uint32_t ncap = *cap ? *cap * 2 : first;
	uint64_t grow = (uint64_t)(ncap - *cap) * elem;
	void *na;

	if (!remote_budget_take(b, grow, what))
		return NULL;
	na = realloc(arr, ncap * elem);
	if (!na) {
		remote_budget_give(b, grow);
		return NULL;
	}
	*cap = ncap;
	return na;
}

#endif
