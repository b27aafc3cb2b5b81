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

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	CUcontext ctx;
	void *p = NULL;

	CUdevice dev = drv_primary_current(&ctx);
	if (!strcmp(mode, "dtoh") || !strcmp(mode, "htod") || !strcmp(mode, "dtod")) {
		CHECK(cuMemHostAlloc(&p, N, 0));
		if (mode[1] == 't' && mode[3] == 'h')
			dtoh(p);
		else if (mode[0] == 'h')
			htod(p);
		else
			dtod(p);
		CHECK(cuMemFreeHost(p));
	} else if (!strcmp(mode, "registered")) {
		p = aligned_alloc(4096, N);
		REQUIRE(p, "aligned_alloc");
		CHECK(cuMemHostRegister(p, N, 0));
		dtoh(p);
		htod(p);
		dtod(p);
		CHECK(cuMemHostUnregister(p));
		free(p);
	} else if (!strcmp(mode, "pageable")) {
		static unsigned char out[N];

		p = malloc(N);
		REQUIRE(p, "malloc");
		EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH(out, (CUdeviceptr)(uintptr_t)p, N));
		EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD((CUdeviceptr)(uintptr_t)p, out, N));
		free(p);
	} else {
		printf("usage: %s dtoh|htod|dtod|registered|pageable\n", argv[0]);
		return 2;
	}
	CHECK(cuDevicePrimaryCtxRelease(dev));
	printf("PASS %s\n", mode);
	return 0;
}
