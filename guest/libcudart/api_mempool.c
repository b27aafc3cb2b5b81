// SPDX-License-Identifier: MIT
/*
 * Memory pools and stream-ordered allocation from a pool: the runtime's
 * entry points over the core's pools (guest/core/pools.c), which the
 * driver API shares.
 */
#include "rt.h"

/* connects, then the live pool behind h */
static cudaError_t pool_of(cudaMemPool_t h, struct rt_pool **out)
{
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	*out = rt_pool_get(h);
	return *out ? cudaSuccess : cudaErrorInvalidValue;
}

/* connects, then the pool get gives for a vGPU into *memPool: for call's
 * location (rt_pool_location) where call is named, else for device */
static cudaError_t hand_pool(cudaMemPool_t *memPool, int device, const char *call,
			     const struct cudaMemLocation *location, int type,
			     cudaError_t (*get)(int, struct rt_pool **))
{
	struct rt_pool *p;
	int vgpu = device;
	cudaError_t e = rt_ensure();

	if (!e && !memPool)
		e = cudaErrorInvalidValue;
	if (!e && call)
		e = rt_pool_location(call, location, type, &vgpu);
	if (!e)
		e = get(vgpu, &p);
	if (!e)
		*memPool = (cudaMemPool_t)p;
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
	return hand_pool(memPool, device, NULL, NULL, 0, rt_pool_default);
}

RT_EXPORT cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device)
{
	return hand_pool(memPool, device, NULL, NULL, 0, rt_pool_current);
}

RT_EXPORT cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool)
{
	cudaError_t e = rt_ensure();

	return rt_set_error(e ? e : rt_pool_set_current(device, rt_pool_get(memPool)));
}

RT_EXPORT cudaError_t cudaMemGetDefaultMemPool(cudaMemPool_t *memPool, struct cudaMemLocation *location,
					       enum cudaMemAllocationType type)
{
	return hand_pool(memPool, -1, "cudaMemGetDefaultMemPool", location, type, rt_pool_default);
}

RT_EXPORT cudaError_t cudaMemGetMemPool(cudaMemPool_t *memPool, struct cudaMemLocation *location,
					enum cudaMemAllocationType type)
{
	return hand_pool(memPool, -1, "cudaMemGetMemPool", location, type, rt_pool_current);
}

RT_EXPORT cudaError_t cudaMemSetMemPool(struct cudaMemLocation *location, enum cudaMemAllocationType type,
					cudaMemPool_t memPool)
{
	int vgpu;
	cudaError_t e = rt_ensure();

	if (!e)
		e = rt_pool_location("cudaMemSetMemPool", location, type, &vgpu);
	return rt_set_error(e ? e : rt_pool_set_current(vgpu, rt_pool_get(memPool)));
}

RT_EXPORT cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *props)
{
	struct rt_pool *p;
	cudaError_t e = rt_ensure();

	if (!e && !memPool)
		e = cudaErrorInvalidValue;
	if (!e)
		e = rt_pool_create("cudaMemPoolCreate", props, &p);
	if (!e)
		*memPool = (cudaMemPool_t)p;
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
	struct rt_pool *p;
	cudaError_t e = pool_of(memPool, &p);

	return rt_set_error(e ? e : rt_pool_destroy(p));
}

RT_EXPORT cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
	struct rt_pool *p;
	cudaError_t e = pool_of(memPool, &p);

	return rt_set_error(e ? e : rt_pool_set_attr("cudaMemPoolSetAttribute", p, (int)attr, value));
}

RT_EXPORT cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
	struct rt_pool *p;
	cudaError_t e = pool_of(memPool, &p);

	return rt_set_error(e ? e : rt_pool_get_attr("cudaMemPoolGetAttribute", p, (int)attr, value));
}

RT_EXPORT cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
	struct rt_pool *p;
	cudaError_t e = pool_of(memPool, &p);

	return rt_set_error(e ? e : rt_pool_trim(p, minBytesToKeep));
}

RT_EXPORT cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const struct cudaMemAccessDesc *descList,
					   size_t count)
{
	struct rt_pool *p;
	cudaError_t e = pool_of(memPool, &p);

	return rt_set_error(e ? e : rt_pool_set_access("cudaMemPoolSetAccess", p, descList, count));
}

RT_EXPORT cudaError_t cudaMemPoolGetAccess(enum cudaMemAccessFlags *flags, cudaMemPool_t memPool,
					   struct cudaMemLocation *location)
{
	struct rt_pool *p;
	cudaError_t e = pool_of(memPool, &p);

	return rt_set_error(e ? e : rt_pool_get_access(p, location, flags));
}

RT_EXPORT cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
	struct rt_stream_ref s;
	struct rt_pool *p;
	cudaError_t e = pool_of(memPool, &p);

	if (!e)
		e = rt_stream_ref(stream, &s);
	return rt_set_error(e ? e : rt_malloc_async(p, &s, ptr, size));
}
