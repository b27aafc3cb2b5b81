// SPDX-License-Identifier: MIT
/*
 * Unified addressing in copies: pinned host memory is also a device pointer,
 * as the driver has it, so a copy whose "device" side is a cuMemHostAlloc or
 * cuMemHostRegister pointer is served (XLA's autotuner reads its results with
 * cuMemcpyDtoHAsync from pinned memory), in stream order; pageable memory as
 * a device side is still refused.
 *   drv_pinned_copies dtoh        cuMemcpyDtoHAsync from pinned memory, after a
 *                                 memset and a copy into it on the same stream
 *   drv_pinned_copies htod        cuMemcpyHtoD into pinned memory, then read back
 *   drv_pinned_copies dtod        cuMemcpyDtoDAsync between device memory and
 *                                 pinned memory, both ways
 *   drv_pinned_copies registered  the same with cuMemHostRegister'ed pages
 *   drv_pinned_copies pageable    malloc'ed memory as a device side: refused
 */
#include <string.h>

#include "drv_check.h"

#define N 4096

static void expect_bytes(const unsigned char *p, unsigned char v, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++)
		REQUIRE(p[i] == v, "%s: byte %zu is %#x, not %#x", what, i, p[i], v);
}

/* device memory set to 0x5a, copied into pinned, read back from pinned as if
 * it were device memory, all queued on one stream before one sync */
static void dtoh(unsigned char *pinned_buf)
{
	static unsigned char out[N];
	CUdeviceptr d;
	CUstream s;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&d, N));
	memset(pinned_buf, 0, N);
	CHECK(cuMemsetD8Async(d, 0x5a, N, s));
	CHECK(cuMemcpyDtoHAsync(pinned_buf, d, N, s));
	CHECK(cuMemcpyDtoHAsync(out, (CUdeviceptr)(uintptr_t)pinned_buf, N, s));
	CHECK(cuStreamSynchronize(s));
	expect_bytes(out, 0x5a, N, "read from pinned memory as a device pointer");
	CHECK(cuMemFree(d));
	CHECK(cuStreamDestroy(s));
}

static void htod(unsigned char *pinned_buf)
{
	static unsigned char in[N];

	memset(in, 0x3c, N);
	memset(pinned_buf, 0, N);
	CHECK(cuMemcpyHtoD((CUdeviceptr)(uintptr_t)pinned_buf, in, N));
	expect_bytes(pinned_buf, 0x3c, N, "written to pinned memory as a device pointer");
}

static void dtod(unsigned char *pinned_buf)
{
	static unsigned char out[N];
	CUdeviceptr a, b;
	CUstream s;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&a, N));
	CHECK(cuMemAlloc(&b, N));
	memset(pinned_buf, 0x11, N);
	CHECK(cuMemcpyDtoDAsync(a, (CUdeviceptr)(uintptr_t)pinned_buf, N, s));
	CHECK(cuMemsetD8Async(b, 0x22, N, s));
	CHECK(cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)pinned_buf, b, N, s));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuMemcpyDtoH(out, a, N));
	expect_bytes(out, 0x11, N, "device memory copied from pinned memory");
	expect_bytes(pinned_buf, 0x22, N, "pinned memory copied from device memory");
	CHECK(cuMemFree(a));
	CHECK(cuMemFree(b));
	CHECK(cuStreamDestroy(s));
}

/* one copy test on a fresh cuMemHostAlloc buffer */
static void on_host_alloc(void (*copies)(unsigned char *pinned_buf))
{
	void *p = NULL;

	CHECK(cuMemHostAlloc(&p, N, 0));
	copies(p);
	CHECK(cuMemFreeHost(p));
}

static void mode_dtoh(void)
{
	on_host_alloc(dtoh);
}

static void mode_htod(void)
{
	on_host_alloc(htod);
}

static void mode_dtod(void)
{
	on_host_alloc(dtod);
}

static void mode_registered(void)
{
	void *p = aligned_alloc(4096, N);

	REQUIRE(p, "aligned_alloc");
	CHECK(cuMemHostRegister(p, N, 0));
	dtoh(p);
	htod(p);
	dtod(p);
	CHECK(cuMemHostUnregister(p));
	free(p);
}

static void mode_pageable(void)
{
	static unsigned char out[N];
	void *p = malloc(N);

	REQUIRE(p, "malloc");
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH(out, (CUdeviceptr)(uintptr_t)p, N));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD((CUdeviceptr)(uintptr_t)p, out, N));
	free(p);
}

int main(int argc, char **argv)
{
	static const struct drv_mode modes[] = {
		{ "dtoh", mode_dtoh }, { "htod", mode_htod }, { "dtod", mode_dtod },
		{ "registered", mode_registered }, { "pageable", mode_pageable },
	};

	return drv_run_mode_in_primary(argc, argv, modes, DRV_NMODES(modes));
}
