// SPDX-License-Identifier: MIT
/*
 * Memory pools and stream-ordered allocation over the core's pools
 * (guest/core/pools.c): a CUmemoryPool is the same struct rt_pool as the
 * runtime's cudaMemPool_t. A CUdevice is a vGPU; a pool location must be a
 * device's (pinned memory).
 */
#include "ptds.h"
#include "cu.h"

/* the core takes the runtime's values: the same numbers as the driver's
 * (pool attributes, location types, allocation types, access flags and
 * handle types, each at both ends of its range) */
_Static_assert(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES == (int)cudaMemPoolReuseFollowEventDependencies &&
		       CU_MEMPOOL_ATTR_USED_MEM_HIGH == (int)cudaMemPoolAttrUsedMemHigh &&
		       CU_MEM_LOCATION_TYPE_DEVICE == (int)cudaMemLocationTypeDevice &&
		       CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT == (int)cudaMemLocationTypeHostNumaCurrent &&
		       CU_MEM_ALLOCATION_TYPE_PINNED == (int)cudaMemAllocationTypePinned &&
		       CU_MEM_ALLOCATION_TYPE_MANAGED == (int)cudaMemAllocationTypeManaged &&
		       CU_MEM_ACCESS_FLAGS_PROT_NONE == (int)cudaMemAccessFlagsProtNone &&
		       CU_MEM_ACCESS_FLAGS_PROT_READWRITE == (int)cudaMemAccessFlagsProtReadWrite &&
		       CU_MEM_HANDLE_TYPE_NONE == (int)cudaMemHandleTypeNone,
	       "the driver's pool, location, allocation, access and handle values are the runtime's");

static struct cudaMemLocation location_of(const CUmemLocation *l)
{
	return (struct cudaMemLocation){ .type = (enum cudaMemLocationType)l->type, .id = l->id };
}

/* cuInit done, then the live pool behind h */
static CUresult pool_of(CUmemoryPool h, struct rt_pool **out)
{
	void *o;
	CUresult r = cu_handle(h, CU_POOL_OBJ, CUDA_ERROR_INVALID_VALUE, &o);

	*out = o;
	return r;
}

/* the pool the getter gives for dev into *pool */
static CUresult hand_out(CUmemoryPool *pool, int dev, cudaError_t (*get)(int, struct rt_pool **))
{
	struct rt_pool *p;
	CUresult r = cu_need(cu_ready(), pool);

	if (r)
		return r;
	r = cu_result(get(dev, &p));
	if (!r)
		*pool = (CUmemoryPool)p;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	return hand_out(pool_out, dev, rt_pool_default);
}

CU_EXPORT CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	return hand_out(pool, dev, rt_pool_current);
}

CU_EXPORT CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	CUresult r = cu_ready();

	return r ? r : cu_result(rt_pool_set_current(dev, rt_pool_get(pool)));
}

/* the vGPU of a location (a device's pinned memory; others are refused) */
static CUresult location_vgpu(const char *call, const CUmemLocation *location, CUmemAllocationType type, int *vgpu)
{
	struct cudaMemLocation l;
	CUresult r = cu_need(cu_ready(), location);

	if (r)
		return r;
	l = location_of(location);
	return cu_result(rt_pool_location(call, &l, (int)type, vgpu));
}

CU_EXPORT CUresult CUDAAPI cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
						  CUmemAllocationType type)
{
	int vgpu;
	CUresult r = location_vgpu("cuMemGetDefaultMemPool", location, type, &vgpu);

	return r ? r : hand_out(pool_out, vgpu, rt_pool_default);
}

CU_EXPORT CUresult CUDAAPI cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location, CUmemAllocationType type)
{
	int vgpu;
	CUresult r = location_vgpu("cuMemGetMemPool", location, type, &vgpu);

	return r ? r : hand_out(pool, vgpu, rt_pool_current);
}

CU_EXPORT CUresult CUDAAPI cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type, CUmemoryPool pool)
{
	int vgpu;
	CUresult r = location_vgpu("cuMemSetMemPool", location, type, &vgpu);

	return r ? r : cu_result(rt_pool_set_current(vgpu, rt_pool_get(pool)));
}

CU_EXPORT CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
	struct cudaMemPoolProps props = { 0 };
	struct rt_pool *p;
	CUresult r = cu_need(cu_ready(), pool && poolProps);

	if (r)
		return r;
	props.allocType = (enum cudaMemAllocationType)poolProps->allocType;
	props.handleTypes = (enum cudaMemAllocationHandleType)poolProps->handleTypes;
	props.location = location_of(&poolProps->location);
	props.win32SecurityAttributes = poolProps->win32SecurityAttributes;
	props.maxSize = poolProps->maxSize;
	props.usage = poolProps->usage;
	r = cu_result(rt_pool_create("cuMemPoolCreate", &props, &p));
	if (!r)
		*pool = (CUmemoryPool)p;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
	struct rt_pool *p;
	CUresult r = pool_of(pool, &p);

	return r ? r : cu_result(rt_pool_destroy(p));
}

CU_EXPORT CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	struct rt_pool *p;
	CUresult r = pool_of(pool, &p);

	return r ? r : cu_result(rt_pool_set_attr("cuMemPoolSetAttribute", p, (int)attr, value));
}

CU_EXPORT CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	struct rt_pool *p;
	CUresult r = pool_of(pool, &p);

	return r ? r : cu_result(rt_pool_get_attr("cuMemPoolGetAttribute", p, (int)attr, value));
}

CU_EXPORT CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	struct rt_pool *p;
	CUresult r = pool_of(pool, &p);

	return r ? r : cu_result(rt_pool_trim(p, minBytesToKeep));
}

CU_EXPORT CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
	struct rt_pool *p;
	CUresult r = pool_of(pool, &p);

	if (r)
		return r;
	if (count && !map)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	/* each entry is checked on its own: one at a time, in the runtime's type */
	for (size_t i = 0; i < count && !r; i++) {
		struct cudaMemAccessDesc d = { .location = location_of(&map[i].location),
					       .flags = (enum cudaMemAccessFlags)map[i].flags };

		r = cu_result(rt_pool_set_access("cuMemPoolSetAccess", p, &d, 1));
	}
	return r;
}

CU_EXPORT CUresult CUDAAPI cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location)
{
	struct cudaMemLocation l;
	enum cudaMemAccessFlags f;
	struct rt_pool *p;
	CUresult r = cu_need(pool_of(memPool, &p), flags && location);

	if (r)
		return r;
	l = location_of(location);
	r = cu_result(rt_pool_get_access(p, &l, &f));
	if (!r)
		*flags = (CUmemAccess_flags)f;
	return r;
}

/* ---- stream-ordered allocation: made at once, ready before the stream's
 * work needs it; a free is ordered on the stream ---- */

/* from pool h, or (h NULL) from the current pool of the stream's device */
static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool h, CUstream hStream)
{
	struct rt_stream_ref st;
	struct rt_pool *p;
	void *ptr;
	CUresult r = cu_need(cu_stream_ref(hStream, &st), dptr && bytesize);

	if (r)
		return r;
	if (h) {
		p = rt_pool_get(h);
		if (!p)
			return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	} else {
		r = cu_result(rt_pool_current(st.vgpu, &p));
		if (r)
			return r;
	}
	r = cu_result(rt_malloc_async(p, &st, &ptr, bytesize));
	if (!r)
		*dptr = (CUdeviceptr)(uintptr_t)ptr;
	return r;
}

static CUresult free_async(CUdeviceptr dptr, CUstream hStream)
{
	struct rt_stream_ref st;
	CUresult r = cu_stream_ref(hStream, &st);

	return r ? r : cu_result(rt_free((void *)(uintptr_t)dptr, (cudaStream_t)hStream, true));
}

CU_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return WITH_PTDS(0, alloc_async(dptr, bytesize, NULL, hStream));
}

CU_EXPORT CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return WITH_PTDS(1, alloc_async(dptr, bytesize, NULL, hStream));
}

CU_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
						   CUstream hStream)
{
	if (!pool)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	return WITH_PTDS(0, alloc_async(dptr, bytesize, pool, hStream));
}

CU_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
							CUstream hStream)
{
	if (!pool)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	return WITH_PTDS(1, alloc_async(dptr, bytesize, pool, hStream));
}

CU_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	return WITH_PTDS(0, free_async(dptr, hStream));
}

CU_EXPORT CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	return WITH_PTDS(1, free_async(dptr, hStream));
}
