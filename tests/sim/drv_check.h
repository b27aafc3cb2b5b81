/* SPDX-License-Identifier: MIT */
/* The checks of the driver-API programs in C (drv_*.c): a failed one prints
 * a FAIL line with the call or condition and the line, and exits 1. */
#ifndef DRV_CHECK_H
#define DRV_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* One of a program's modes, argv[1] naming it: its checks exit on a failure */
struct drv_mode {
	const char *name;
	void (*run)(void);
};

/* The mode argv[1] names; without one, or with an unknown one,
 * "usage: PROGRAM NAME|NAME|..." and exit 2. */
static inline const struct drv_mode *drv_mode_of(int argc, char **argv, const struct drv_mode *modes,
						 size_t n)
{
	for (size_t i = 0; argc > 1 && i < n; i++)
		if (!strcmp(argv[1], modes[i].name))
			return &modes[i];
	printf("usage: %s ", argv[0]);
	for (size_t i = 0; i < n; i++)
		printf("%s%s", i ? "|" : "", modes[i].name);
	printf("\n");
	exit(2);
}

/* main's body for most programs with modes: the mode argv[1] names run with
 * device 0's primary context current, then released; "PASS MODE" */
static inline int drv_run_mode_in_primary(int argc, char **argv, const struct drv_mode *modes,
					  size_t n)
{
	const struct drv_mode *m = drv_mode_of(argc, argv, modes, n);
	CUcontext ctx;
	CUdevice dev = drv_primary_current(&ctx);

	m->run();
	CHECK(cuDevicePrimaryCtxRelease(dev));
	printf("PASS %s\n", m->name);
	return 0;
}

#define DRV_NMODES(modes) (sizeof(modes) / sizeof((modes)[0]))

#endif
