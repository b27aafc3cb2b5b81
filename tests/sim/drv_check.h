/* SPDX-License-Identifier: MIT */
/* The checks of the driver-API programs in C (drv_*.c): a failed one prints
 * a FAIL line with the call or condition and the line, and exits 1. */
#ifndef DRV_CHECK_H
#define DRV_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

/* the call must return CUDA_SUCCESS */
#define CHECK(call)                                                                          \
	do {                                                                                 \
		CUresult r_ = (call);                                                        \
		if (r_ != CUDA_SUCCESS) {                                                    \
			const char *n_ = NULL;                                               \
			cuGetErrorName(r_, &n_);                                             \
			printf("FAIL: %s returned %s at line %d\n", #call, n_ ? n_ : "?", __LINE__); \
			exit(1);                                                             \
		}                                                                            \
	} while (0)

/* the call must return exactly want */
#define EXPECT(want, call)                                                                   \
	do {                                                                                 \
		CUresult r_ = (call);                                                        \
		if (r_ != (want)) {                                                          \
			printf("FAIL: %s returned %d, expected %d at line %d\n", #call, (int)r_, \
			       (int)(want), __LINE__);                                       \
			exit(1);                                                             \
		}                                                                            \
	} while (0)

#define REQUIRE(cond, ...)                                                                   \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			printf("FAIL: line %d: ", __LINE__);                                 \
			printf(__VA_ARGS__);                                                 \
			printf("\n");                                                        \
			exit(1);                                                             \
		}                                                                            \
	} while (0)

/* cuInit, then device 0's primary context retained and made current: the
 * start of most programs here (release it with cuDevicePrimaryCtxRelease) */
static inline CUdevice drv_primary_current(CUcontext *ctx)
{
	CUdevice dev;

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(ctx, dev));
	CHECK(cuCtxSetCurrent(*ctx));
	return dev;
}

#endif
