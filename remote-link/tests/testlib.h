/* Minimal test bookkeeping: CHECK records a failure without aborting. */
#ifndef REMOTE_LINK_TESTLIB_H
#define REMOTE_LINK_TESTLIB_H

#include <stdio.h>
#include <stdint.h>
#include <time.h>

extern int tl_failures_in_test;

#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "  check failed %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			tl_failures_in_test++;                                        \
		}                                                                     \
	} while (0)

#define CHECK_RC(got, want)                                                           \
	do {                                                                          \
		int got_ = (got), want_ = (want);                                     \
		if (got_ != want_) {                                                  \
			fprintf(stderr, "  check failed %s:%d: %s = %d (%s), want %d (%s)\n", \
				__FILE__, __LINE__, #got, got_, mearas_link_strerror(got_), want_, \
				mearas_link_strerror(want_));                         \
			tl_failures_in_test++;                                        \
		}                                                                     \
	} while (0)

static inline double tl_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
