// SPDX-License-Identifier: MIT
/* Device memory, pinned host memory, pointer attributes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rt.h"

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
	if (width > SIZE_MAX - 511)
		return rt_set_error(cudaErrorMemoryAllocation);
	p = (width + 511) / 512 * 512; /* the GPUs' texture pitch alignment */
	if (p == 0)
		p = 512;
	if (height && p > SIZE_MAX / height)
		return rt_set_error(cudaErrorMemoryAllocation);
	*pitch = p;
	return cudaMalloc(devPtr, p * height);
}

/* a pitched allocation of extent.depth slices of extent.height rows, each
 * row pitched as cudaMallocPitch pitches it */
RT_EXPORT cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
	size_t pitch, rows;
	void *p;
	cudaError_t e;

	if (!pitchedDevPtr)
		return rt_set_error(cudaErrorInvalidValue);
	if (extent.depth && extent.height > SIZE_MAX / extent.depth)
		return rt_set_error(cudaErrorMemoryAllocation);
	rows = extent.height * extent.depth;
	e = cudaMallocPitch(&p, &pitch, extent.width, rows);
	if (e)
		return e;
	*pitchedDevPtr = (struct cudaPitchedPtr){ .ptr = p, .pitch = pitch, .xsize = extent.width,
						  .ysize = extent.height };
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaFree(void *devPtr)
{
	int dev;
	cudaError_t e = rt_ensure_device(&dev);

	if (!e && devPtr && rt_managed_free(devPtr))
		return cudaSuccess; /* managed memory (cudaMallocManaged) */
	return rt_set_error(e ? e : rt_free(devPtr, 0, false));
}

/* Stream-ordered allocation from the stream's device's current pool,
 * allocated at once: the memory is ready before any work of the stream
 * needs it. */
RT_EXPORT cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
	struct rt_stream_ref s;
	struct rt_pool *pool;
	cudaError_t e = rt_ensure();

	if (!e)
		e = rt_stream_ref(hStream, &s);
	if (!e)
		e = rt_pool_current(s.vgpu, &pool);
	return rt_set_error(e ? e : rt_malloc_async(pool, &s, devPtr, size));
}

RT_EXPORT cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
	cudaError_t e = rt_ensure();

	return rt_set_error(e ? e : rt_free(devPtr, hStream, true));
}

RT_EXPORT cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	if (!pHost || (flags & ~(unsigned)(cudaHostAllocPortable | cudaHostAllocMapped |
					   cudaHostAllocWriteCombined)))
		return rt_set_error(cudaErrorInvalidValue);
	*pHost = rt_host_alloc("pinned", size, (flags & cudaHostAllocMapped) != 0);
	return *pHost ? cudaSuccess : rt_set_error(cudaErrorMemoryAllocation);
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

RT_EXPORT cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
	return rt_set_error(rt_host_register(ptr, size, flags));
}

RT_EXPORT cudaError_t cudaHostUnregister(void *ptr)
{
	return rt_set_error(rt_host_unregister(ptr));
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
		/* managed memory is kept there too (guest/core/managed.c) */
		attr->type = rt_managed_find(ptr, 1) ? cudaMemoryTypeManaged : cudaMemoryTypeHost;
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

/* Managed memory: the core's zero-copy blocks (guest/core/managed.c); host
 * and device reach the same bytes, hints change nothing */
RT_EXPORT cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
	if (!devPtr || !size || (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost))
		return rt_set_error(cudaErrorInvalidValue);
	return rt_set_error(rt_managed_alloc(devPtr, size));
}

static cudaError_t managed_hint(const void *devPtr, size_t count)
{
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	return count && rt_managed_find(devPtr, count) ? cudaSuccess : cudaErrorInvalidValue;
}

RT_EXPORT cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count, struct cudaMemLocation location,
					   unsigned int flags, cudaStream_t stream)
{
	struct rt_stream_ref st;
	cudaError_t e = managed_hint(devPtr, count);

	(void)location;
	if (!e && flags)
		e = cudaErrorInvalidValue;
	if (!e)
		e = rt_stream_ref(stream, &st); /* the stream must be one */
	return rt_set_error(e);
}

/* attaching a managed allocation to a stream changes nothing: every stream
 * may reach it (the host synchronizes before it touches it); the whole
 * allocation only (length 0 or its size, from its start), as the driver */
RT_EXPORT cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, void *devPtr, size_t length, unsigned int flags)
{
	struct rt_stream_ref st;
	cudaError_t e = rt_stream_of(stream, &st);

	if (!e && !rt_managed_attachable(devPtr, length, flags))
		e = cudaErrorInvalidValue;
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaMemAdvise(const void *devPtr, size_t count, enum cudaMemoryAdvise advice,
				    struct cudaMemLocation location)
{
	(void)location;
	if (advice < cudaMemAdviseSetReadMostly || advice > cudaMemAdviseUnsetAccessedBy)
		return rt_set_error(cudaErrorInvalidValue);
	return rt_set_error(managed_hint(devPtr, count));
}
