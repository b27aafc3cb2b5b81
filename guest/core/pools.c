// SPDX-License-Identifier: MIT
/*
 * Memory pools, for both front ends. A vGPU's memory comes from its address
 * window, so a pool is mearasd's accounting and attributes of the
 * allocations made through it (POOL_* ops). Each vGPU has a default pool
 * (made on first use) and a current one; pools of other processes (IPC
 * export and import) and pools of host memory are not supported.
 */
#include <stdlib.h>

#include "mearas/log.h"
#include "core.h"

#define POOL_MAGIC 0x4c4f4f50u /* "POOL" */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rt_pool *default_pool[MEARAS_MAX_VGPUS];
static struct rt_pool *current_pool[MEARAS_MAX_VGPUS];

struct rt_pool *rt_pool_get(void *h)
{
	struct rt_pool *p = h;

	return p && __atomic_load_n(&p->magic, __ATOMIC_ACQUIRE) == POOL_MAGIC ? p : NULL;
}

static void pool_free(struct rt_pool *p)
{
	if (!p)
		return;
	__atomic_store_n(&p->magic, 0, __ATOMIC_RELEASE);
	free(p);
}

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

cudaError_t rt_pool_default(int vgpu, struct rt_pool **out)
{
	cudaError_t e = cudaSuccess;

	if (vgpu < 0 || (unsigned)vgpu >= rt.nvgpus)
		return cudaErrorInvalidDevice;
	pthread_mutex_lock(&pool_lock);
	if (!default_pool[vgpu])
		e = pool_new(vgpu, true, &default_pool[vgpu]);
	*out = default_pool[vgpu];
	pthread_mutex_unlock(&pool_lock);
	return e;
}

cudaError_t rt_pool_current(int vgpu, struct rt_pool **out)
{
	struct rt_pool *p;

	if (vgpu < 0 || (unsigned)vgpu >= rt.nvgpus)
		return cudaErrorInvalidDevice;
	pthread_mutex_lock(&pool_lock);
	p = current_pool[vgpu];
	pthread_mutex_unlock(&pool_lock);
	if (!p)
		return rt_pool_default(vgpu, out);
	*out = p;
	return cudaSuccess;
}

cudaError_t rt_pool_set_current(int vgpu, struct rt_pool *p)
{
	if (vgpu < 0 || (unsigned)vgpu >= rt.nvgpus)
		return cudaErrorInvalidDevice;
	if (!p)
		return cudaErrorInvalidValue;
	if (p->vgpu != vgpu)
		return cudaErrorInvalidDevice;
	pthread_mutex_lock(&pool_lock);
	current_pool[vgpu] = p;
	pthread_mutex_unlock(&pool_lock);
	return cudaSuccess;
}

cudaError_t rt_pool_location(const char *call, const struct cudaMemLocation *loc, int alloc_type, int *vgpu)
{
	if (!loc)
		return cudaErrorInvalidValue;
	if (alloc_type == cudaMemAllocationTypeManaged) {
		log_warn("%s: pools of managed memory are not supported on vGPUs", call);
		return cudaErrorNotSupported;
	}
	if (alloc_type != cudaMemAllocationTypePinned)
		return cudaErrorInvalidValue;
	switch ((int)loc->type) {
	case cudaMemLocationTypeDevice:
		if (loc->id < 0 || (unsigned)loc->id >= rt.nvgpus)
			return cudaErrorInvalidDevice;
		*vgpu = loc->id;
		return cudaSuccess;
	case cudaMemLocationTypeHost:
	case cudaMemLocationTypeHostNuma:
	case cudaMemLocationTypeHostNumaCurrent:
		log_warn("%s: pools of host memory (location type %d) are not supported on vGPUs", call,
			 (int)loc->type);
		return cudaErrorNotSupported;
	default:
		return cudaErrorInvalidValue;
	}
}

cudaError_t rt_pool_create(const char *call, const struct cudaMemPoolProps *props, struct rt_pool **out)
{
	int vgpu;
	cudaError_t e;

	if (!props)
		return cudaErrorInvalidValue;
	e = rt_pool_location(call, &props->location, props->allocType, &vgpu);
	if (e)
		return e;
	if (props->handleTypes != cudaMemHandleTypeNone) {
		log_warn("%s: pools shared with other processes (handle types %#x) are not supported on vGPUs", call,
			 (unsigned)props->handleTypes);
		return cudaErrorNotSupported;
	}
	if (props->usage) {
		log_warn("%s: pool usage flags %#x (hardware decompression) are not supported on vGPUs", call,
			 (unsigned)props->usage);
		return cudaErrorNotSupported;
	}
	if (props->maxSize) {
		/* mearasd caps a client's memory, not a pool's */
		log_warn("%s: a pool's maximum size (%zu bytes) is not enforced on vGPUs", call, props->maxSize);
	}
	return pool_new(vgpu, false, out);
}

cudaError_t rt_pool_destroy(struct rt_pool *p)
{
	cudaError_t e;

	if (p->is_default)
		return cudaErrorInvalidValue; /* as in CUDA: a device's default pool stays */
	pthread_mutex_lock(&pool_lock);
	if (current_pool[p->vgpu] == p)
		current_pool[p->vgpu] = NULL;
	pthread_mutex_unlock(&pool_lock);
	/* allocations made through it keep its accounting on mearasd until freed */
	e = rt_do_POOL_DESTROY(p->vgpu, p->id);
	pool_free(p);
	return e;
}

/* The attributes that take an int (the reuse policies); the others a cuuint64_t. */
static bool attr_is_int(int attr)
{
	return attr == cudaMemPoolReuseFollowEventDependencies || attr == cudaMemPoolReuseAllowOpportunistic ||
	       attr == cudaMemPoolReuseAllowInternalDependencies;
}

static cudaError_t check_attr(const char *call, int attr)
{
	if (attr >= cudaMemPoolReuseFollowEventDependencies && attr <= cudaMemPoolAttrUsedMemHigh)
		return cudaSuccess;
	log_warn("%s: memory pool attribute %d is not one mearas knows", call, attr);
	return cudaErrorInvalidValue;
}

cudaError_t rt_pool_set_attr(const char *call, struct rt_pool *p, int attr, const void *value)
{
	cudaError_t e = check_attr(call, attr);

	if (e)
		return e;
	if (!value)
		return cudaErrorInvalidValue;
	return rt_do_POOL_SET_ATTR(p->vgpu, p->id, (uint32_t)attr,
				   attr_is_int(attr) ? (uint64_t)*(const int *)value : *(const uint64_t *)value);
}

cudaError_t rt_pool_get_attr(const char *call, struct rt_pool *p, int attr, void *value)
{
	uint64_t v;
	cudaError_t e = check_attr(call, attr);

	if (e)
		return e;
	if (!value)
		return cudaErrorInvalidValue;
	e = rt_do_POOL_GET_ATTR(p->vgpu, p->id, (uint32_t)attr, &v);
	if (e)
		return e;
	if (attr_is_int(attr))
		*(int *)value = (int)v;
	else
		*(uint64_t *)value = v;
	return cudaSuccess;
}

cudaError_t rt_pool_trim(struct rt_pool *p, size_t keep)
{
	return rt_do_POOL_TRIM(p->vgpu, p->id, keep);
}

/* Another vGPU's kernels cannot reach a pool's memory (no peer access
 * between vGPUs): only the pool's own device has access, read-write. */
cudaError_t rt_pool_set_access(const char *call, struct rt_pool *p, const struct cudaMemAccessDesc *desc,
			       size_t count)
{
	if (count && !desc)
		return cudaErrorInvalidValue;
	for (size_t i = 0; i < count; i++) {
		const struct cudaMemAccessDesc *d = &desc[i];

		if (d->location.type != cudaMemLocationTypeDevice || d->location.id < 0 ||
		    (unsigned)d->location.id >= rt.nvgpus)
			return cudaErrorInvalidDevice;
		if (d->location.id == p->vgpu && d->flags != cudaMemAccessFlagsProtReadWrite)
			return cudaErrorInvalidValue;
		if (d->location.id != p->vgpu && d->flags != cudaMemAccessFlagsProtNone) {
			log_warn("%s: vGPU %d cannot reach the memory of vGPU %d's pool (no peer access between "
				 "vGPUs)", call, d->location.id, p->vgpu);
			return cudaErrorNotSupported;
		}
	}
	return cudaSuccess;
}

cudaError_t rt_pool_get_access(struct rt_pool *p, const struct cudaMemLocation *loc, enum cudaMemAccessFlags *flags)
{
	if (!flags || !loc)
		return cudaErrorInvalidValue;
	if (loc->type != cudaMemLocationTypeDevice || loc->id < 0 || (unsigned)loc->id >= rt.nvgpus)
		return cudaErrorInvalidDevice;
	*flags = loc->id == p->vgpu ? cudaMemAccessFlagsProtReadWrite : cudaMemAccessFlagsProtNone;
	return cudaSuccess;
}

/* made at once, on the pool's vGPU: ready before the stream's work needs it */
cudaError_t rt_pool_alloc(struct rt_pool *p, void **ptr, size_t size)
{
	return rt_malloc_on(p->vgpu, ptr, size, p->id);
}

void rt_pools_forget_vgpu(int vgpu)
{
	/* a device reset destroyed the vGPU's pools on mearasd: the default
	 * pool is made again on its next use; other pools' handles now fail
	 * there */
	pthread_mutex_lock(&pool_lock);
	pool_free(default_pool[vgpu]);
	default_pool[vgpu] = NULL;
	current_pool[vgpu] = NULL;
	pthread_mutex_unlock(&pool_lock);
}
