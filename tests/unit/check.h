/* SPDX-License-Identifier: MIT */
/* Minimal checks for the unit tests: a failed check prints where and why and
 * exits 1 (the runner counts the program as failed). */
#ifndef MEARAS_UNIT_CHECK_H
#define MEARAS_UNIT_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                    \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			exit(1);                                                       \
		}                                                                      \
	} while (0)

#define CHECK_EQ(a, b)                                                                 \
	do {                                                                           \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                       \
		if (a_ != b_) {                                                        \
			fprintf(stderr, "%s:%d: check failed: %s == %s (%" PRIu64 " != %" PRIu64 ")\n", \
				__FILE__, __LINE__, #a, #b, a_, b_);                   \
			exit(1);                                                       \
		}                                                                      \
	} while (0)

#endif
