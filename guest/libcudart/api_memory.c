// SPDX-License-Identifier: MIT
/* Device memory, pinned host memory, pointer attributes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "mearas/log.h"
#include "rt.h"

/* An allocation on vgpu, from memory pool `pool` (0: none, as cudaMalloc). */
cudaError_t rt_malloc_on(int vgpu, void **devPtr, size_t size, uint32_t pool)
{
	uint64_t ptr;
	cudaError_t e;

	if (!devPtr)
		return cudaErrorInvalidValue;
	if (size == 0) {
		*devPtr = NULL;
		return cudaSuccess;
	}
	e = rt_do_MEM_ALLOC(vgpu, size, pool, &ptr);
	if (e) {
		*devPtr = NULL;
		return e;
	}
	dm_add(vgpu, ptr, size, 0);
	*devPtr = (void *)(uintptr_t)ptr;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	int dev;
	cudaError_t e;

	if (!devPtr)
		return rt_set_error(cudaErrorInvalidValue);
	e = rt_ensure_device(&dev);
	return rt_set_error(e ? e : rt_malloc_on(dev, devPtr, size, 0));
}

RT_EXPORT cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
	size_t p;

	if (!pitch || !devPtr)
		return rt_set_error(cudaErrorInvalidValue);
	p = (width + 511) / 512 * 512; /* the GPUs' texture pitch alignment */
	if (p == 0)
		p = 512;
	*pitch = p;
	return cudaMalloc(devPtr, p * height);
}

static cudaError_t free_on(int vgpu, void *devPtr, cudaStream_t stream, bool async)
{
	struct rt_stream_ref s = { .vgpu = vgpu };
	cudaError_t e;

	if (async) {
		e = rt_stream_ref(stream, &s);
		if (e)
			return e;
	}
	if (dm_find((uint64_t)(uintptr_t)devPtr, 1, NULL, NULL) != vgpu ||
	    !dm_remove(vgpu, (uint64_t)(uintptr_t)devPtr))
		return cudaErrorInvalidValue;
	if (async)
		return rt_do_MEM_FREE_ASYNC(vgpu, &s, (uint64_t)(uintptr_t)devPtr);
	return rt_do_MEM_FREE(vgpu, (uint64_t)(uintptr_t)devPtr);
}

RT_EXPORT cudaError_t cudaFree(void *devPtr)
{
	int dev;
	cudaError_t e = rt_ensure_device(&dev);

	if (e)
		return rt_set_error(e);
	if (!devPtr)
		return cudaSuccess;
	dev = dm_find((uint64_t)(uintptr_t)devPtr, 1, NULL, NULL);
	if (dev < 0)
		return rt_set_error(cudaErrorInvalidValue);
	return rt_set_error(free_on(dev, devPtr, 0, false));
}

/* Stream-ordered allocation from the stream's device's current pool,
 * allocated at once: the memory is ready before any work of the stream
 * needs it. */
RT_EXPORT cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
	struct rt_stream_ref s;
	uint32_t pool;
	cudaError_t e = rt_ensure();

	if (!e)
		e = rt_stream_ref(hStream, &s);
	if (!e)
		e = rt_pool_current(s.vgpu, &pool);
	return rt_set_error(e ? e : rt_malloc_on(s.vgpu, devPtr, size, pool));
}

RT_EXPORT cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
	int dev;
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	if (!devPtr)
		return cudaSuccess;
	dev = dm_find((uint64_t)(uintptr_t)devPtr, 1, NULL, NULL);
	if (dev < 0)
		return rt_set_error(cudaErrorInvalidValue);
	return rt_set_error(free_on(dev, devPtr, hStream, true));
}

RT_EXPORT cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	if (!pHost || (flags & ~(unsigned)(cudaHostAllocPortable | cudaHostAllocMapped |
					   cudaHostAllocWriteCombined)))
		return rt_set_error(cudaErrorInvalidValue);
	*pHost = dh_alloc(size);
	if (!*pHost) {
		log_warn("pinned allocation of %zu bytes does not fit the data area (%llu MiB): "
			 "raise MEARAS_DATA_MB", size, (unsigned long long)(rt.data_size >> 20));
		return rt_set_error(cudaErrorMemoryAllocation);
	}
	if (flags & cudaHostAllocMapped)
		rt_host_mapped(*pHost, size);
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	return cudaHostAlloc(ptr, size, cudaHostAllocDefault);
}

RT_EXPORT cudaError_t cudaFreeHost(void *ptr)
{
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	if (!ptr)
		return cudaSuccess;
	rt_host_unmapped(ptr);
	if (dh_free(ptr))
		return rt_set_error(cudaErrorInvalidValue);
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags)
{
	void *base;
	uint64_t size;
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	if (!pDevice || flags)
		return rt_set_error(cudaErrorInvalidValue);
	{
		void *twin = rt_registered_twin(pHost, 1);

		if (twin) {
			if (!rt.same_address)
				return rt_set_error(cudaErrorNotSupported);
			if (dh_block(twin, &base, &size))
				rt_host_mapped(base, size);
			*pDevice = twin;
			return cudaSuccess;
		}
	}
	if (!dh_block(pHost, &base, &size))
		return rt_set_error(cudaErrorInvalidValue);
	if (!rt.same_address) {
		rt_log_unsupported("cudaHostGetDevicePointer (the data area could not be mapped at the back end's address)");
		return rt_set_error(cudaErrorNotSupported);
	}
	rt_host_mapped(base, size);
	*pDevice = pHost; /* mapped at the same address on both sides: UVA */
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost)
{
	void *base;
	uint64_t size;

	if (!pFlags || !dh_block(pHost, &base, &size))
		return rt_set_error(cudaErrorInvalidValue);
	*pFlags = cudaHostAllocMapped | cudaHostAllocPortable;
	return cudaSuccess;
}

/*
 * cudaHostRegister of ordinary process memory: the back end cannot reach
 * it, so its pages are replaced by data-area pages holding the same bytes,
 * mapped at the same addresses (the region is a memfd). The program keeps
 * its pointer; copies from it become DMA, and the pages' twin in the region
 * is the device pointer (cudaHostGetDevicePointer). Unregistering puts
 * private pages with the same bytes back. Caveat: the pages are switched
 * while the call runs, so other threads must not write to the pages that
 * hold the range (the same rule as for the memory itself) meanwhile.
 */
struct registered {
	uint8_t *user;          /* page-aligned start of the registered pages */
	uint64_t len;           /* whole pages */
	uint8_t *twin;          /* page-aligned data-area copy */
	void *block;            /* data-area block holding twin */
	uint8_t *ptr;           /* what the program registered */
	size_t size;
	struct registered *next;
};
static struct registered *registered_list;
static pthread_mutex_t registered_lock = PTHREAD_MUTEX_INITIALIZER;

static struct registered *find_registered(const void *p, uint64_t len)
{
	for (struct registered *r = registered_list; r; r = r->next) {
		const uint8_t *c = p;

		if (c >= r->ptr && c < r->ptr + r->size && len <= (uint64_t)(r->ptr + r->size - c))
			return r;
	}
	return NULL;
}

void *rt_registered_twin(const void *p, uint64_t len)
{
	struct registered *r;
	void *t = NULL;

	if (!registered_list)
		return NULL;
	pthread_mutex_lock(&registered_lock);
	r = find_registered(p, len);
	if (r)
		t = r->twin + ((const uint8_t *)p - r->user);
	pthread_mutex_unlock(&registered_lock);
	return t;
}

RT_EXPORT cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
	const uint64_t page = 4096;
	struct registered *r;
	uint8_t *start, *end;
	void *where;
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	if (!ptr || !size || (flags & ~(unsigned)(cudaHostRegisterPortable | cudaHostRegisterMapped |
						  cudaHostRegisterIoMemory | cudaHostRegisterReadOnly)))
		return rt_set_error(cudaErrorInvalidValue);
	if (flags & cudaHostRegisterIoMemory) {
		rt_log_unsupported("cudaHostRegister with cudaHostRegisterIoMemory");
		return rt_set_error(cudaErrorNotSupported);
	}
	if (dh_contains(ptr, 1))
		return rt_set_error(cudaErrorHostMemoryAlreadyRegistered);
	start = (uint8_t *)((uintptr_t)ptr & ~(uintptr_t)(page - 1));
	end = (uint8_t *)(((uintptr_t)ptr + size + page - 1) & ~(uintptr_t)(page - 1));
	pthread_mutex_lock(&registered_lock);
	for (r = registered_list; r; r = r->next) {
		if (start < r->user + r->len && r->user < end) {
			pthread_mutex_unlock(&registered_lock);
			return rt_set_error(cudaErrorHostMemoryAlreadyRegistered);
		}
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		goto nomem;
	r->user = start;
	r->len = (uint64_t)(end - start);
	r->ptr = ptr;
	r->size = size;
	r->block = dh_alloc(r->len + page);
	if (!r->block) {
		log_warn("cudaHostRegister of %zu bytes does not fit the data area (%llu MiB): raise MEARAS_DATA_MB",
			 size, (unsigned long long)(rt.data_size >> 20));
		free(r);
		goto nomem;
	}
	r->twin = (uint8_t *)(((uintptr_t)r->block + page - 1) & ~(uintptr_t)(page - 1));
	memcpy(r->twin, start, r->len);
	where = mmap(start, r->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, rt.memfd,
		     (off_t)(rt.memfd_off + (uint64_t)(r->twin - rt.region)));
	if (where == MAP_FAILED) {
		log_warn("cudaHostRegister: cannot remap %p: %s", ptr, strerror(errno));
		dh_free(r->block);
		free(r);
		pthread_mutex_unlock(&registered_lock);
		return rt_set_error(cudaErrorInvalidValue);
	}
	r->next = registered_list;
	registered_list = r;
	pthread_mutex_unlock(&registered_lock);
	if (flags & cudaHostRegisterMapped)
		rt_host_mapped(r->block, r->len + page);
	return cudaSuccess;
nomem:
	pthread_mutex_unlock(&registered_lock);
	return rt_set_error(cudaErrorMemoryAllocation);
}

RT_EXPORT cudaError_t cudaHostUnregister(void *ptr)
{
	struct registered **pp;
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	pthread_mutex_lock(&registered_lock);
	for (pp = &registered_list; *pp; pp = &(*pp)->next) {
		struct registered *r = *pp;

		if (r->ptr != ptr)
			continue;
		/* private pages again, with the bytes the twin holds now */
		if (mmap(r->user, r->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
		    MAP_FAILED) {
			pthread_mutex_unlock(&registered_lock);
			return rt_set_error(cudaErrorUnknown);
		}
		memcpy(r->user, r->twin, r->len);
		rt_host_unmapped(r->block);
		dh_free(r->block);
		*pp = r->next;
		free(r);
		pthread_mutex_unlock(&registered_lock);
		return cudaSuccess;
	}
	pthread_mutex_unlock(&registered_lock);
	return rt_set_error(cudaErrorHostMemoryNotRegistered);
}

RT_EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attr, const void *ptr)
{
	uint64_t base, size;
	void *hbase;
	int vgpu;
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	if (!attr)
		return rt_set_error(cudaErrorInvalidValue);
	memset(attr, 0, sizeof(*attr));
	vgpu = dm_find((uint64_t)(uintptr_t)ptr, 1, &base, &size);
	if (vgpu >= 0) {
		attr->type = cudaMemoryTypeDevice;
		attr->device = vgpu;
		attr->devicePointer = (void *)ptr;
		return cudaSuccess;
	}
	if (dh_block(ptr, &hbase, &size)) {
		attr->type = cudaMemoryTypeHost;
		attr->device = rt_tls.device;
		attr->hostPointer = (void *)ptr;
		attr->devicePointer = rt.same_address ? (void *)ptr : NULL;
		return cudaSuccess;
	}
	{
		void *twin = rt_registered_twin(ptr, 1);

		attr->type = twin ? cudaMemoryTypeHost : cudaMemoryTypeUnregistered;
		attr->device = twin ? rt_tls.device : -2;
		if (twin) {
			attr->hostPointer = (void *)ptr;
			attr->devicePointer = rt.same_address ? twin : NULL;
		}
	}
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
	(void)devPtr;
	(void)size;
	(void)flags;
	rt_log_unsupported("cudaMallocManaged (managed memory)");
	return rt_set_error(cudaErrorNotSupported);
}
