// SPDX-License-Identifier: MIT
/* Device memory, pinned host memory, pointer attributes. */
#include <stdlib.h>
#include <string.h>

#include "mearas/log.h"
#include "rt.h"

RT_EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	struct rt_call c;
	struct mearas_cqe cqe;
	int dev;
	cudaError_t e;

	if (!devPtr)
		return rt_set_error(cudaErrorInvalidValue);
	e = rt_ensure_device(&dev);
	if (e)
		return rt_set_error(e);
	if (size == 0) {
		*devPtr = NULL;
		return cudaSuccess;
	}
	rt_call_init(&c, MEARAS_OP_MEM_ALLOC, 0);
	c.sqe.args.a[0] = size;
	e = rt_call(dev, &c, &cqe);
	if (e) {
		*devPtr = NULL;
		return rt_set_error(e);
	}
	dm_add(dev, cqe.val[0], size, 0);
	*devPtr = (void *)(uintptr_t)cqe.val[0];
	return cudaSuccess;
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
	struct rt_call c;
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
	rt_call_init(&c, async ? MEARAS_OP_MEM_FREE_ASYNC : MEARAS_OP_MEM_FREE, s.id);
	c.sqe.flags |= s.sqe_flags;
	c.sqe.args.a[0] = (uint64_t)(uintptr_t)devPtr;
	return async ? rt_post(vgpu, &c) : rt_call(vgpu, &c, NULL);
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

RT_EXPORT cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
	struct rt_stream_ref s;
	cudaError_t e = rt_ensure();
	int dev, saved = rt_tls.device;

	if (e)
		return rt_set_error(e);
	e = rt_stream_ref(hStream, &s);
	if (e)
		return rt_set_error(e);
	/* allocated at once: the memory is ready before any work of the stream needs it */
	rt_tls.device = s.vgpu;
	e = cudaMalloc(devPtr, size);
	rt_tls.device = saved;
	(void)dev;
	return e;
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
	if (!dh_block(pHost, &base, &size))
		return rt_set_error(cudaErrorInvalidValue);
	if (!rt.same_address) {
		rt_log_unsupported("cudaHostGetDevicePointer (the data area could not be mapped at the back end's address)");
		return rt_set_error(cudaErrorNotSupported);
	}
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

/* cudaHostRegister of arbitrary process memory: the back end cannot reach
 * it (it is not in the shared region), so it stays pageable for mearas:
 * copies work (staged), kernels cannot map it. */
struct registered {
	void *ptr;
	size_t size;
	struct registered *next;
};
static struct registered *registered_list;
static pthread_mutex_t registered_lock = PTHREAD_MUTEX_INITIALIZER;

RT_EXPORT cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
	struct registered *r;
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	if (!ptr || !size)
		return rt_set_error(cudaErrorInvalidValue);
	if (flags & cudaHostRegisterMapped) {
		rt_log_unsupported("cudaHostRegister with cudaHostRegisterMapped (use cudaHostAlloc)");
		return rt_set_error(cudaErrorNotSupported);
	}
	pthread_mutex_lock(&registered_lock);
	for (r = registered_list; r; r = r->next) {
		if ((char *)ptr < (char *)r->ptr + r->size && (char *)r->ptr < (char *)ptr + size) {
			pthread_mutex_unlock(&registered_lock);
			return rt_set_error(cudaErrorHostMemoryAlreadyRegistered);
		}
	}
	r = malloc(sizeof(*r));
	if (!r) {
		pthread_mutex_unlock(&registered_lock);
		return rt_set_error(cudaErrorMemoryAllocation);
	}
	r->ptr = ptr;
	r->size = size;
	r->next = registered_list;
	registered_list = r;
	pthread_mutex_unlock(&registered_lock);
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaHostUnregister(void *ptr)
{
	struct registered **pp;
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	pthread_mutex_lock(&registered_lock);
	for (pp = &registered_list; *pp; pp = &(*pp)->next) {
		if ((*pp)->ptr == ptr) {
			struct registered *r = *pp;

			*pp = r->next;
			free(r);
			pthread_mutex_unlock(&registered_lock);
			return cudaSuccess;
		}
	}
	pthread_mutex_unlock(&registered_lock);
	return rt_set_error(cudaErrorHostMemoryNotRegistered);
}

static bool is_registered(const void *p)
{
	bool found = false;

	pthread_mutex_lock(&registered_lock);
	for (struct registered *r = registered_list; r; r = r->next)
		if ((const char *)p >= (char *)r->ptr && (const char *)p < (char *)r->ptr + r->size)
			found = true;
	pthread_mutex_unlock(&registered_lock);
	return found;
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
	attr->type = is_registered(ptr) ? cudaMemoryTypeHost : cudaMemoryTypeUnregistered;
	attr->device = attr->type == cudaMemoryTypeHost ? rt_tls.device : -2;
	if (attr->type == cudaMemoryTypeHost)
		attr->hostPointer = (void *)ptr;
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
