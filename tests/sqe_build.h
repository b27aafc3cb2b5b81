/* SPDX-License-Identifier: MIT */
/* Records the raw-ring tests build by hand (tests/unit, tests/security). */
#ifndef MEARAS_TESTS_SQE_BUILD_H
#define MEARAS_TESTS_SQE_BUILD_H

#include <stdint.h>
#include <string.h>

#include "mearas/ring.h"

/* A LAUNCH of kernel func on stream, one block of one thread, its one u32
 * parameter inline. */
static inline struct mearas_sqe sqe_launch_u32(uint64_t func, uint32_t stream, uint32_t param)
{
	struct mearas_sqe e;

	memset(&e, 0, sizeof(e));
	e.op = MEARAS_OP_LAUNCH;
	e.stream = stream;
	e.args.a[0] = func;
	e.args.a[1] = 1 | (1ull << 32);
	e.args.a[2] = 1 | (1ull << 32);
	e.args.a[3] = 1 | (1ull << 32);
	e.payload_len = 4;
	memcpy(e.inline_payload, &param, 4);
	return e;
}

#endif
