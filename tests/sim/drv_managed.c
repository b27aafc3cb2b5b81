// SPDX-License-Identifier: MIT
/*
 * Managed memory through the driver API (guest/libcuda/managed.c): zero-copy
 * blocks the host and the device reach alike. The host's bytes are what
 * copies and memsets see; the pointer is managed to cuPointerGetAttribute;
 * prefetches and advice are accepted on it and refused on device memory;
 * bad flags, a zero size and an allocation beyond the data area are refused.
 *   drv_managed access     host writes, device-side copies and memsets, attributes, hints, free
 *   drv_managed refused    flags, size, too large, hints on device memory
 *   drv_managed attach     cuStreamAttachMemAsync: every way, a whole allocation, any stream;
 *                          bad flags, device memory, part of one, past the end refused
 */
#include <string.h>

#include "drv_check.h"

#define N (1u << 20)

static void reach(void)
{
	CUdeviceptr m, d;
	CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 };
	static unsigned char back[N];
	unsigned char *h;
	unsigned managed = 7;
	CUstream s;

	CHECK(cuMemAllocManaged(&m, N, CU_MEM_ATTACH_GLOBAL));
	h = (unsigned char *)(uintptr_t)m;
	for (unsigned i = 0; i < N; i++)
		h[i] = (unsigned char)(i * 7);
	/* the device's view: a copy out of it into device memory, and back */
	CHECK(cuMemAlloc(&d, N));
	CHECK(cuMemcpyDtoD(d, m, N));
	CHECK(cuMemcpyDtoH(back, d, N));
	REQUIRE(!memcmp(back, h, N), "device memory copied from managed memory differs");
	CHECK(cuMemsetD8(m + 4096, 0x5a, 100));
	REQUIRE(h[4096] == 0x5a && h[4195] == 0x5a && h[4196] == (unsigned char)(4196 * 7),
		"a memset of managed memory seen by the host: %#x %#x %#x", h[4096], h[4195], h[4196]);
	CHECK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m + 10));
	REQUIRE(managed == 1, "IS_MANAGED of managed memory: %u", managed);
	CHECK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, d));
	REQUIRE(managed == 0, "IS_MANAGED of device memory: %u", managed);
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemPrefetchAsync(m, N, loc, 0, s));
	CHECK(cuMemAdvise(m, N / 2, CU_MEM_ADVISE_SET_READ_MOSTLY, loc));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuStreamDestroy(s));
	CHECK(cuMemFree(m));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFree(m));
	CHECK(cuMemFree(d));
}

static void refused(void)
{
	CUdeviceptr m, d;
	CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 };

	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAllocManaged(&m, N, 0));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAllocManaged(&m, N, CU_MEM_ATTACH_GLOBAL | CU_MEM_ATTACH_HOST));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAllocManaged(&m, 0, CU_MEM_ATTACH_GLOBAL));
	/* past the data area (MEARAS_DATA_MB, 512 MiB by default) */
	EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocManaged(&m, (size_t)8 << 30, CU_MEM_ATTACH_GLOBAL));
	CHECK(cuMemAlloc(&d, N));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPrefetchAsync(d, N, loc, 0, NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAdvise(d, N, CU_MEM_ADVISE_SET_READ_MOSTLY, loc));
	CHECK(cuMemAllocManaged(&m, N, CU_MEM_ATTACH_HOST));
	/* beyond its end */
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPrefetchAsync(m, N + 1, loc, 0, NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAdvise(m, N, (CUmem_advise)99, loc));
	CHECK(cuMemFree(m));
	CHECK(cuMemFree(d));
}

static void attach(void)
{
	CUdeviceptr m, d;
	CUstream s;

	CHECK(cuMemAllocManaged(&m, N, CU_MEM_ATTACH_GLOBAL));
	CHECK(cuMemAlloc(&d, N));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE));
	CHECK(cuStreamAttachMemAsync(s, m, N, CU_MEM_ATTACH_HOST));
	CHECK(cuStreamAttachMemAsync(NULL, m, N, CU_MEM_ATTACH_GLOBAL));
	CHECK(cuStreamAttachMemAsync(CU_STREAM_PER_THREAD, m, 0, CU_MEM_ATTACH_GLOBAL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamAttachMemAsync(s, m, 0, 0));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_GLOBAL | CU_MEM_ATTACH_HOST));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamAttachMemAsync(s, d, 0, CU_MEM_ATTACH_GLOBAL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamAttachMemAsync(s, m, N + 1, CU_MEM_ATTACH_GLOBAL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamAttachMemAsync(s, m + 4096, 4096, CU_MEM_ATTACH_HOST));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuStreamDestroy(s));
	CHECK(cuMemFree(m));
	CHECK(cuMemFree(d));
}

int main(int argc, char **argv)
{
	static const struct drv_mode modes[] = {
		{ "access", reach }, { "refused", refused }, { "attach", attach },
	};

	return drv_run_mode_in_primary(argc, argv, modes, DRV_NMODES(modes));
}
