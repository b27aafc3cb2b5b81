// Memory pools, stream-ordered allocation and peer copies through the
// driver API (C, against mearas's libcuda.so.1; run with MEARAS_VGPUS=2):
// default and current pools per device and per location, allocations
// counted in their pool, a pool of our own on the other device, attributes,
// access, peer copies both ways (sync and on a stream), refusals with clear
// errors; and a pool is one object for both APIs: the runtime allocates
// from a pool the driver made and the driver from one the runtime made.
// Built twice: plain, and with CUDA_API_PER_THREAD_DEFAULT_STREAM (the
// _ptsz/_ptds entry points).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "drv_check.h"

#define MIB (1ull << 20)

static cuuint64_t used_of(CUmemoryPool pool)
{
	cuuint64_t v = 0;

	CHECK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
	return v;
}

static void defaults(CUmemoryPool *def0, CUmemoryPool *def1)
{
	CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 };
	CUmemoryPool p;

	CHECK(cuDeviceGetDefaultMemPool(def0, 0));
	CHECK(cuDeviceGetDefaultMemPool(def1, 1));
	REQUIRE(*def0 && *def1 && *def0 != *def1, "the devices share a default pool");
	CHECK(cuDeviceGetMemPool(&p, 0));
	REQUIRE(p == *def0, "the current pool is not the default one");
	CHECK(cuMemGetDefaultMemPool(&p, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
	REQUIRE(p == *def0, "cuMemGetDefaultMemPool of device 0 differs");
	loc.id = 1;
	CHECK(cuMemGetMemPool(&p, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
	REQUIRE(p == *def1, "cuMemGetMemPool of device 1 differs");
	EXPECT(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetDefaultMemPool(&p, 2));
	loc.id = 2;
	EXPECT(CUDA_ERROR_INVALID_DEVICE, cuMemGetDefaultMemPool(&p, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
	/* host memory and managed pools are not served: a clear error */
	loc = (CUmemLocation){ .type = CU_MEM_LOCATION_TYPE_HOST, .id = 0 };
	EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemGetDefaultMemPool(&p, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
	loc = (CUmemLocation){ .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 };
	EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemGetDefaultMemPool(&p, &loc, CU_MEM_ALLOCATION_TYPE_MANAGED));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemGetDefaultMemPool(&p, &loc, CU_MEM_ALLOCATION_TYPE_INVALID));
}

static void attributes(CUmemoryPool def0)
{
	cuuint64_t v = ~0ull;
	int flag = 0;

	CHECK(cuMemPoolSetAttribute(def0, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v));
	v = 0;
	CHECK(cuMemPoolGetAttribute(def0, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v));
	REQUIRE(v == ~0ull, "release threshold %llx", (unsigned long long)v);
	CHECK(cuMemPoolGetAttribute(def0, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &flag));
	REQUIRE(flag == 1, "opportunistic reuse %d", flag);
	flag = 0;
	CHECK(cuMemPoolSetAttribute(def0, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &flag));
	flag = 7;
	CHECK(cuMemPoolGetAttribute(def0, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &flag));
	REQUIRE(flag == 0, "opportunistic reuse after set %d", flag);
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolSetAttribute(def0, (CUmemPool_attribute)77, &v));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolGetAttribute(def0, CU_MEMPOOL_ATTR_USED_MEM_HIGH, NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolGetAttribute(NULL, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
	CHECK(cuMemPoolTrimTo(def0, 0));
}

/* a stream-ordered allocation counts in the current pool and holds data */
static void alloc_async(CUmemoryPool def0, CUstream s)
{
	unsigned char host[16];
	CUdeviceptr a, b;
	cuuint64_t v;

	REQUIRE(used_of(def0) == 0, "fresh pool uses %llu bytes", (unsigned long long)used_of(def0));
	CHECK(cuMemAllocAsync(&a, MIB, s));
	CHECK(cuMemAllocAsync(&b, 3 * MIB, NULL));
	REQUIRE(used_of(def0) == 4 * MIB, "used %llu after 4 MiB", (unsigned long long)used_of(def0));
	CHECK(cuMemsetD8Async(a, 7, MIB, s));
	CHECK(cuMemcpyDtoHAsync(host, a + MIB - sizeof(host), sizeof(host), s));
	CHECK(cuStreamSynchronize(s));
	REQUIRE(host[0] == 7 && host[15] == 7, "pool memory reads %d", host[0]);
	CHECK(cuMemFreeAsync(a, s));
	CHECK(cuMemFreeAsync(b, NULL));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuCtxSynchronize());
	REQUIRE(used_of(def0) == 0, "used %llu after the frees", (unsigned long long)used_of(def0));

	/* a size the heap rounds up is counted as it is given back: freeing
	 * 1000 bytes beside a MiB leaves the MiB */
	CHECK(cuMemAllocAsync(&a, MIB, s));
	CHECK(cuMemAllocAsync(&b, 1000, s));
	REQUIRE(used_of(def0) >= MIB + 1000, "used %llu with a MiB and 1000 bytes", (unsigned long long)used_of(def0));
	CHECK(cuMemFreeAsync(b, s));
	CHECK(cuStreamSynchronize(s));
	REQUIRE(used_of(def0) == MIB, "used %llu after 1000 bytes of a MiB and 1000 were freed",
		(unsigned long long)used_of(def0));
	CHECK(cuMemFreeAsync(a, s));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuMemPoolGetAttribute(def0, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
	REQUIRE(v == 4 * MIB, "high water %llu", (unsigned long long)v);
	v = 0;
	CHECK(cuMemPoolSetAttribute(def0, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
	CHECK(cuMemPoolGetAttribute(def0, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
	REQUIRE(v == 0, "high water after reset %llu", (unsigned long long)v);
	/* cuMemAlloc memory is not a pool's */
	CHECK(cuMemAlloc(&a, MIB));
	REQUIRE(used_of(def0) == 0, "cuMemAlloc counted in the pool");
	CHECK(cuMemFree(a));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAllocAsync(NULL, MIB, s));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(12345, s));
}

/* a pool of our own on device 1, current there, allocated from on a stream
 * of device 0; peer copies carry data between the devices */
static void own_pool_and_peer(CUmemoryPool def1, CUcontext c0, CUcontext c1, CUstream s)
{
	CUmemPoolProps props = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
				 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 1 } };
	CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 1 };
	static unsigned char src[MIB], back[MIB];
	CUmemAccess_flags acc;
	CUmemAccessDesc d;
	CUmemoryPool mine, p;
	CUdeviceptr on1, on0;
	int ordinal = -1;

	CHECK(cuMemPoolCreate(&mine, &props));
	EXPECT(CUDA_ERROR_INVALID_DEVICE, cuDeviceSetMemPool(0, mine));
	CHECK(cuMemSetMemPool(&loc, CU_MEM_ALLOCATION_TYPE_PINNED, mine));
	CHECK(cuDeviceGetMemPool(&p, 1));
	REQUIRE(p == mine, "cuMemSetMemPool did not take");
	CHECK(cuMemAllocFromPoolAsync(&on1, MIB, mine, s));
	CHECK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, on1));
	REQUIRE(ordinal == 1, "the pool of device 1 allocated on device %d", ordinal);
	REQUIRE(used_of(mine) == MIB && used_of(def1) == 0, "allocation went to the wrong pool");

	/* access: the pool's own device only */
	CHECK(cuMemPoolGetAccess(&acc, mine, &loc));
	REQUIRE(acc == CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "own access %d", (int)acc);
	loc.id = 0;
	CHECK(cuMemPoolGetAccess(&acc, mine, &loc));
	REQUIRE(acc == CU_MEM_ACCESS_FLAGS_PROT_NONE, "peer access %d", (int)acc);
	d = (CUmemAccessDesc){ .location = loc, .flags = CU_MEM_ACCESS_FLAGS_PROT_NONE };
	CHECK(cuMemPoolSetAccess(mine, &d, 1));
	d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemPoolSetAccess(mine, &d, 1));

	/* peer copies, synchronous and on a stream */
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i * 131 + 7);
	CHECK(cuMemAlloc(&on0, MIB));
	CHECK(cuMemcpyHtoD(on0, src, MIB));
	CHECK(cuMemcpyPeer(on1, c1, on0, c0, MIB));
	CHECK(cuMemcpyDtoH(back, on1, MIB));
	REQUIRE(!memcmp(src, back, MIB), "device 1 read stale data after cuMemcpyPeer 0 -> 1");
	CHECK(cuMemsetD8(on0, 0, MIB));
	CHECK(cuMemcpyPeerAsync(on0, c0, on1, c1, MIB, s));
	CHECK(cuMemcpyDtoHAsync(back, on0, MIB, s));
	CHECK(cuStreamSynchronize(s));
	REQUIRE(!memcmp(src, back, MIB), "device 0 read stale data after cuMemcpyPeerAsync 1 -> 0");
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuMemcpyPeer(on1, NULL, on0, c0, MIB));
	CHECK(cuMemFree(on0));

	/* a free ordered on a stream of the other device */
	CHECK(cuMemFreeAsync(on1, s));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuCtxSetCurrent(c1));
	CHECK(cuCtxSynchronize());
	CHECK(cuCtxSetCurrent(c0));
	REQUIRE(used_of(mine) == 0, "used %llu after a free on device 0's stream", (unsigned long long)used_of(mine));

	/* destroying: the default pool stays; ours goes, its allocation still frees */
	CHECK(cuMemAllocFromPoolAsync(&on1, MIB, mine, s));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy(def1));
	CHECK(cuMemPoolDestroy(mine));
	CHECK(cuDeviceGetMemPool(&p, 1));
	REQUIRE(p == def1, "the current pool did not fall back to the default");
	CHECK(cuMemFreeAsync(on1, s));
	CHECK(cuStreamSynchronize(s));

	/* pools for other processes or for hardware decompression: refused */
	props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemPoolCreate(&p, &props));
	props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
	props.usage = CU_MEM_POOL_CREATE_USAGE_HW_DECOMPRESS;
	EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemPoolCreate(&p, &props));
	props.usage = 0;
	props.location.type = CU_MEM_LOCATION_TYPE_HOST;
	EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemPoolCreate(&p, &props));
}

/* one object for both APIs */
static void mixed(CUmemoryPool def0, CUstream s)
{
	struct cudaMemPoolProps props = { .allocType = cudaMemAllocationTypePinned,
					  .location = { .type = cudaMemLocationTypeDevice, .id = 0 } };
	cudaMemPool_t rt_def, rt_pool;
	CUdeviceptr a;
	void *b;

	REQUIRE(cudaDeviceGetDefaultMemPool(&rt_def, 0) == cudaSuccess, "cudaDeviceGetDefaultMemPool");
	REQUIRE((CUmemoryPool)rt_def == def0, "the runtime's default pool is not the driver's");
	REQUIRE(cudaMemPoolCreate(&rt_pool, &props) == cudaSuccess, "cudaMemPoolCreate");
	CHECK(cuMemAllocFromPoolAsync(&a, 2 * MIB, (CUmemoryPool)rt_pool, s));
	REQUIRE(used_of((CUmemoryPool)rt_pool) == 2 * MIB, "the driver's allocation missed the runtime's pool");
	REQUIRE(cudaMallocFromPoolAsync(&b, MIB, (cudaMemPool_t)def0, (cudaStream_t)s) == cudaSuccess,
		"cudaMallocFromPoolAsync from the driver's pool");
	REQUIRE(used_of(def0) == MIB, "the runtime's allocation missed the driver's pool");
	REQUIRE(cudaFreeAsync(b, (cudaStream_t)s) == cudaSuccess, "cudaFreeAsync");
	CHECK(cuMemFreeAsync(a, s));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuMemPoolDestroy((CUmemoryPool)rt_pool));
}

int main(void)
{
	CUmemoryPool def0, def1;
	CUcontext c0, c1;
	CUstream s;
	int n = 0;

	CHECK(cuInit(0));
	CHECK(cuDeviceGetCount(&n));
	REQUIRE(n == 2, "MEARAS_VGPUS=2 gave %d devices", n);
	CHECK(cuDevicePrimaryCtxRetain(&c1, 1));
	CHECK(cuDevicePrimaryCtxRetain(&c0, 0));
	CHECK(cuCtxSetCurrent(c0));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	defaults(&def0, &def1);
	attributes(def0);
	alloc_async(def0, s);
	own_pool_and_peer(def1, c0, c1, s);
	mixed(def0, s);
	CHECK(cuStreamDestroy(s));
	CHECK(cuDevicePrimaryCtxRelease(0));
	CHECK(cuDevicePrimaryCtxRelease(1));
	printf("PASS\n");
	return 0;
}
