/* SPDX-License-Identifier: MIT */
/* The monotonic clock every spin, nap and latency figure is measured with,
 * and the wall-clock deadlines pthread_cond_timedwait takes. */
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

/* now on CLOCK_REALTIME plus ms: a deadline for pthread_cond_timedwait */
static inline struct timespec mearas_realtime_after_ms(uint64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

#endif
