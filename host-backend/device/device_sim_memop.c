// SPDX-License-Identifier: MIT
/*
 * Stream memory operations on the sim. The sim runs a stream's work when it
 * is posted, so a write lands at once and a wait looks at the word then; a
 * wait whose condition does not hold yet watches the word (which only the
 * client's threads can change while this poller waits: host memory) for
 * SIM_WAIT_MS, then fails as a launch that timed out would. Not captured
 * into the sim's graphs (cudaErrorStreamCaptureUnsupported).
 * Completion flags (device.h) likewise: a write behind a stream's modelled
 * work (mearas_sim_spin) lands when that work is done, as an event recorded
 * there would pass then.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device_sim_array.h"
#include "device_sim_memop.h"
#include "mearas/clock.h"

#define SIM_WAIT_MS 5000

static volatile uint8_t *word(struct mdev *d, uint64_t addr, bool host, unsigned size)
{
	return host ? (volatile uint8_t *)(uintptr_t)addr : sim_any_host(d, addr, size);
}

static uint64_t load(volatile uint8_t *p, unsigned size)
{
	return size == 4 ? __atomic_load_n((volatile uint32_t *)p, __ATOMIC_ACQUIRE)
			 : __atomic_load_n((volatile uint64_t *)p, __ATOMIC_ACQUIRE);
}

/* the driver's conditions, on a word of size bytes */
static bool holds(uint64_t w, uint64_t value, unsigned cond, unsigned size)
{
	uint64_t mask = size == 4 ? 0xffffffffull : ~0ull;

	w &= mask;
	value &= mask;
	switch (cond) {
	case MEARAS_MEMOP_GEQ: /* cyclic: (signed)(w - value) >= 0 */
		return size == 4 ? (int32_t)(uint32_t)(w - value) >= 0 : (int64_t)(w - value) >= 0;
	case MEARAS_MEMOP_EQ:
		return w == value;
	case MEARAS_MEMOP_AND:
		return (w & value) != 0;
	default: /* NOR */
		return (~(w | value) & mask) != 0;
	}
}

static void store(volatile uint8_t *p, uint64_t value, unsigned size)
{
	if (size == 4)
		__atomic_store_n((volatile uint32_t *)p, (uint32_t)value, __ATOMIC_RELEASE);
	else
		__atomic_store_n((volatile uint64_t *)p, value, __ATOMIC_RELEASE);
}

int sim_stream_memop(struct mdev *d, void *stream, bool wait, uint64_t addr, bool host, uint64_t value, unsigned size,
		     unsigned flags)
{
	unsigned cond = flags & ~MEARAS_MEMOP_FLUSH;
	volatile uint8_t *p;
	struct timespec nap = { .tv_nsec = 50000 };

	if (sim_captures(stream))
		return cudaErrorStreamCaptureUnsupported;
	p = word(d, addr, host, size);
	if (!p)
		return cudaErrorInvalidValue;
	if (!wait) {
		store(p, value, size);
		return 0;
	}
	for (unsigned waited_us = 0; waited_us < SIM_WAIT_MS * 1000u; waited_us += 50) {
		if (holds(load(p, size), value, cond, size))
			return 0;
		nanosleep(&nap, NULL);
	}
	return cudaErrorLaunchTimeout;
}

/* ---- completion flags ---- */

struct sim_flag {
	uint32_t value;         /* what a read sees */
	uint32_t next;          /* written once ready_ns passes */
	uint64_t ready_ns;      /* 0: no write waits */
};

struct sim_flags {
	unsigned n;
	struct sim_flag w[];
};

int sim_flags_create(struct mdev *d, unsigned n, void **flags)
{
	struct sim_flags *f = calloc(1, sizeof(*f) + (size_t)n * sizeof(f->w[0]));

	(void)d;
	if (!f)
		return cudaErrorMemoryAllocation;
	f->n = n;
	*flags = f;
	return 0;
}

void sim_flags_destroy(struct mdev *d, void *flags)
{
	(void)d;
	free(flags);
}

int sim_flag_write(struct mdev *d, void *flags, unsigned i, uint32_t value, void *stream)
{
	struct sim_flags *f = flags;
	struct sim_flag *w;

	(void)d;
	if (i >= f->n)
		return cudaErrorInvalidValue;
	if (sim_captures(stream))
		return cudaErrorStreamCaptureUnsupported;
	w = &f->w[i];
	w->ready_ns = sim_stream_done_ns(stream);
	if (w->ready_ns)
		w->next = value;
	else
		w->value = value;
	return 0;
}

uint32_t sim_flag_read(struct mdev *d, void *flags, unsigned i)
{
	struct sim_flags *f = flags;
	struct sim_flag *w;

	(void)d;
	if (i >= f->n)
		return 0;
	w = &f->w[i];
	if (w->ready_ns && mearas_mono_ns() >= w->ready_ns) {
		w->value = w->next;
		w->ready_ns = 0;
	}
	return w->value;
}
