/* SPDX-License-Identifier: MIT */
/* The monotonic clock every spin, nap and latency figure is measured with. */
#ifndef MEARAS_CLOCK_H
#define MEARAS_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t mearas_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
