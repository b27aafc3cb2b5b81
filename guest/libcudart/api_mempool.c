// SPDX-License-Identifier: MIT
/*
 * Memory pools and stream-ordered allocation. A vGPU's memory comes from
 * its address window, so a pool is mearasd's accounting and attributes of
 * the allocations made through it (POOL_* ops): each vGPU has a default
 * pool (made on first use) and a current one; pools of other processes
 * (IPC export and import) are not supported.
 */
#include <stdlib.h>
#include <string.h>

#include "mearas/log.h"
#include "rt.h"

#define POOL_MAGIC 0x4c4f4f50u /* "POOL" */

struct rt_pool {
	uint32_t magic;
	int vgpu;
	uint32_t id;
	bool is_default;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rt_pool *default_pool[MEARAS_MAX_VGPUS];
static struct rt_pool *current_pool[MEARAS_MAX_VGPUS];

static cudaError_t pool_new(int vgpu, bool is_default, struct rt_pool **out)
{
	struct rt_pool *p = calloc(1, sizeof(*p));
	cudaError_t e;

	if (!p)
		return cudaErrorMemoryAllocation;
	*p = (struct rt_pool){ .magic = POOL_MAGIC, .vgpu = vgpu, .id = rt_new_handle(), .is_default = is_default };
	e = rt_do_POOL_CREATE(vgpu, p->id);
	if (e) {
		free(p);
		return e;
	}
	*out = p;
	return cudaSuccess;
}

static cudaError_t default_of(int vgpu, struct rt_pool **out)
{
	cudaError_t e = cudaSuccess;

	pthread_mutex_lock(&pool_lock);
	if (!default_pool[vgpu])
		e = pool_new(vgpu, true, &default_pool[vgpu]);
	*out = default_pool[vgpu];
	pthread_mutex_unlock(&pool_lock);
	return e;
}

static cudaError_t pool_of(cudaMemPool_t handle, struct rt_pool **out)
{
	struct rt_pool *p = (struct rt_pool *)handle;

	if (!p || p->magic != POOL_MAGIC)
		return cudaErrorInvalidValue;
	*out = p;
	return cudaSuccess;
}

static cudaError_t check_device(int device)
{
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	return device < 0 || (unsigned)device >= rt.nvgpus ? cudaErrorInvalidDevice : cudaSuccess;
}

cudaError_t rt_pool_current(int vgpu, uint32_t *id)
{
	struct rt_pool *p;
	cudaError_t e = cudaSuccess;

	pthread_mutex_lock(&pool_lock);
	p = current_pool[vgpu];
	pthread_mutex_unlock(&pool_lock);
	if (!p)
		e = default_of(vgpu, &p);
	*id = e ? 0 : p->id;
	return e;
}

void rt_pools_forget_vgpu(int vgpu)
{
	/* a device reset destroyed the vGPU's pools: the default pool is made
	 * again on its next use; other pools' handles now fail */
	pthread_mutex_lock(&pool_lock);
	free(default_pool[vgpu]);
	default_pool[vgpu] = NULL;
	current_pool[vgpu] = NULL;
	pthread_mutex_unlock(&pool_lock);
}

RT_EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
	struct rt_pool *p;
	cudaError_t e = check_device(device);

	if (!e && !memPool)
		e = cudaErrorInvalidValue;
	if (!e)
		e = default_of(device, &p);
	if (!e)
		*memPool = (cudaMemPool_t)p;
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device)
{
	struct rt_pool *p;
	cudaError_t e = check_device(device);

	if (!e && !memPool)
		e = cudaErrorInvalidValue;
	if (e)
		return rt_set_error(e);
	pthread_mutex_lock(&pool_lock);
	p = current_pool[device];
	pthread_mutex_unlock(&pool_lock);
	if (!p)
		return cudaDeviceGetDefaultMemPool(memPool, device);
	*memPool = (cudaMemPool_t)p;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool)
{
	struct rt_pool *p;
	cudaError_t e = check_device(device);

	if (!e)
		e = pool_of(memPool, &p);
	if (!e && p->vgpu != device)
		e = cudaErrorInvalidDevice;
	if (e)
		return rt_set_error(e);
	pthread_mutex_lock(&pool_lock);
	current_pool[device] = p;
	pthread_mutex_unlock(&pool_lock);
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *props)
{
	struct rt_pool *p;
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	if (!memPool || !props || props->allocType != cudaMemAllocationTypePinned ||
	    props->location.type != cudaMemLocationTypeDevice)
		return rt_set_error(cudaErrorInvalidValue);
	if (props->location.id < 0 || (unsigned)props->location.id >= rt.nvgpus)
		return rt_set_error(cudaErrorInvalidDevice);
	if (props->handleTypes != cudaMemHandleTypeNone) {
		log_warn("cudaMemPoolCreate: pools shared with other processes (handle types %#x) are not supported "
			 "on vGPUs", (unsigned)props->handleTypes);
		return rt_set_error(cudaErrorNotSupported);
	}
	e = pool_new(props->location.id, false, &p);
	if (!e)
		*memPool = (cudaMemPool_t)p;
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
	struct rt_pool *p;
	cudaError_t e = rt_ensure();

	if (!e)
		e = pool_of(memPool, &p);
	if (!e && p->is_default)
		e = cudaErrorInvalidValue; /* as in CUDA: a device's default pool stays */
	if (e)
		return rt_set_error(e);
	pthread_mutex_lock(&pool_lock);
	if (current_pool[p->vgpu] == p)
		current_pool[p->vgpu] = NULL;
	pthread_mutex_unlock(&pool_lock);
	e = rt_do_POOL_DESTROY(p->vgpu, p->id);
	p->magic = 0;
	free(p);
	return rt_set_error(e);
}

/* The attributes that take an int (the reuse policies); the others a cuuint64_t. */
static bool attr_is_int(enum cudaMemPoolAttr attr)
{
	return attr == cudaMemPoolReuseFollowEventDependencies || attr == cudaMemPoolReuseAllowOpportunistic ||
	       attr == cudaMemPoolReuseAllowInternalDependencies;
}

RT_EXPORT cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
	struct rt_pool *p;
	cudaError_t e = rt_ensure();

	if (!e)
		e = pool_of(memPool, &p);
	if (!e && !value)
		e = cudaErrorInvalidValue;
	if (e)
		return rt_set_error(e);
	return rt_set_error(rt_do_POOL_SET_ATTR(p->vgpu, p->id, (uint32_t)attr,
						attr_is_int(attr) ? (uint64_t)*(int *)value : *(uint64_t *)value));
}

RT_EXPORT cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
	struct rt_pool *p;
	uint64_t v;
	cudaError_t e = rt_ensure();

	if (!e)
		e = pool_of(memPool, &p);
	if (!e && !value)
		e = cudaErrorInvalidValue;
	if (!e)
		e = rt_do_POOL_GET_ATTR(p->vgpu, p->id, (uint32_t)attr, &v);
	if (e)
		return rt_set_error(e);
	if (attr_is_int(attr))
		*(int *)value = (int)v;
	else
		*(uint64_t *)value = v;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
	struct rt_pool *p;
	cudaError_t e = rt_ensure();

	if (!e)
		e = pool_of(memPool, &p);
	return rt_set_error(e ? e : rt_do_POOL_TRIM(p->vgpu, p->id, minBytesToKeep));
}

/* Another vGPU's kernels cannot reach a pool's memory (no peer access
 * between vGPUs): only the pool's own device has access, read-write. */
RT_EXPORT cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const struct cudaMemAccessDesc *descList,
					   size_t count)
{
	struct rt_pool *p;
	cudaError_t e = rt_ensure();

	if (!e)
		e = pool_of(memPool, &p);
	if (!e && count && !descList)
		e = cudaErrorInvalidValue;
	for (size_t i = 0; !e && i < count; i++) {
		const struct cudaMemAccessDesc *d = &descList[i];

		if (d->location.type != cudaMemLocationTypeDevice || d->location.id < 0 ||
		    (unsigned)d->location.id >= rt.nvgpus)
			e = cudaErrorInvalidDevice;
		else if (d->location.id == p->vgpu && d->flags != cudaMemAccessFlagsProtReadWrite)
			e = cudaErrorInvalidValue;
		else if (d->location.id != p->vgpu && d->flags != cudaMemAccessFlagsProtNone) {
			log_warn("cudaMemPoolSetAccess: vGPU %d cannot reach the memory of vGPU %d's pool (no peer "
				 "access between vGPUs)", d->location.id, p->vgpu);
			e = cudaErrorNotSupported;
		}
	}
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaMemPoolGetAccess(enum cudaMemAccessFlags *flags, cudaMemPool_t memPool,
					   struct cudaMemLocation *location)
{
	struct rt_pool *p;
	cudaError_t e = rt_ensure();

	if (!e)
		e = pool_of(memPool, &p);
	if (!e && (!flags || !location))
		e = cudaErrorInvalidValue;
	if (!e && (location->type != cudaMemLocationTypeDevice || location->id < 0 ||
		   (unsigned)location->id >= rt.nvgpus))
		e = cudaErrorInvalidDevice;
	if (e)
		return rt_set_error(e);
	*flags = location->id == p->vgpu ? cudaMemAccessFlagsProtReadWrite : cudaMemAccessFlagsProtNone;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
	struct rt_stream_ref s;
	struct rt_pool *p;
	cudaError_t e = rt_ensure();

	if (!e)
		e = pool_of(memPool, &p);
	if (!e)
		e = rt_stream_ref(stream, &s);
	/* allocated at once, on the pool's vGPU: ready before the stream's work needs it */
	return rt_set_error(e ? e : rt_malloc_on(p->vgpu, ptr, size, p->id));
}
