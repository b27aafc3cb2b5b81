// SPDX-License-Identifier: MIT
/* Device memory, page-locked host memory and pointer queries. */
#include <string.h>

#include "cu.h"

#define PTR(d) ((void *)(uintptr_t)(d))

CU_EXPORT CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
	struct cu_ctx *c;
	void *p;
	CUresult r = cu_need(cu_current_ctx(&c), dptr && bytesize);

	if (r)
		return r;
	r = cu_result(rt_malloc_on(c->vgpu, &p, bytesize, 0));
	if (!r)
		*dptr = (CUdeviceptr)(uintptr_t)p;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
					   unsigned int ElementSizeBytes)
{
	size_t pitch;

	if (!pPitch || !WidthInBytes || !Height ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	pitch = (WidthInBytes + 511) / 512 * 512; /* the GPUs' texture pitch alignment */
	*pPitch = pitch;
	return cuMemAlloc(dptr, pitch * Height);
}

CU_EXPORT CUresult CUDAAPI cuMemFree(CUdeviceptr dptr)
{
	CUresult r = cu_ready();

	if (r)
		return r;
	/* managed memory (managed.c) is the core's, in the data area */
	if (dptr && rt_managed_free(PTR(dptr)))
		return CUDA_SUCCESS;
	return cu_result(rt_free(PTR(dptr), NULL, false));
}

CU_EXPORT CUresult CUDAAPI cuMemGetInfo(size_t *free, size_t *total)
{
	struct cu_ctx *c;
	uint64_t f, t;
	CUresult r = cu_need(cu_current_ctx(&c), free && total);

	if (r)
		return r;
	r = cu_result(rt_do_MEM_GET_INFO(c->vgpu, &f, &t));
	if (!r) {
		*free = f;
		*total = t;
	}
	return r;
}

CU_EXPORT CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	uint64_t base, size;
	CUresult r = cu_ready();

	if (r)
		return r;
	if (dm_find(dptr, 1, &base, &size) < 0)
		return CU_REFUSE(CUDA_ERROR_NOT_FOUND);
	if (pbase)
		*pbase = base;
	if (psize)
		*psize = size;
	return CUDA_SUCCESS;
}

/* ---- page-locked host memory: blocks of the data area ---- */

CU_EXPORT CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	CUresult r = cu_ready();

	if (r)
		return r;
	if (!pp || !bytesize ||
	    (Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	*pp = rt_host_alloc("page-locked", bytesize, (Flags & CU_MEMHOSTALLOC_DEVICEMAP) != 0);
	return *pp ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
}

CU_EXPORT CUresult CUDAAPI cuMemAllocHost(void **pp, size_t bytesize)
{
	return cuMemHostAlloc(pp, bytesize, 0);
}

CU_EXPORT CUresult CUDAAPI cuMemFreeHost(void *p)
{
	CUresult r = cu_ready();

	if (r)
		return r;
	rt_host_unmapped(p);
	return dh_free(p) ? CU_REFUSE(CUDA_ERROR_INVALID_VALUE) : CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
	void *base, *twin;
	uint64_t size;
	CUresult r = cu_ready();

	if (r)
		return r;
	if (!pdptr || Flags)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (!rt.same_address)
		return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
	if (dh_block(p, &base, &size)) {
		*pdptr = (CUdeviceptr)(uintptr_t)p;
		return CUDA_SUCCESS;
	}
	twin = rt_registered_twin(p, 1);
	if (!twin)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	*pdptr = (CUdeviceptr)(uintptr_t)twin;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
	void *base;
	uint64_t size;
	CUresult r = cu_ready();

	if (r)
		return r;
	if (!pFlags || !dh_block(p, &base, &size))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	*pFlags = CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
	CUresult r = cu_ready();

	if (r)
		return r;
	if (Flags & ~(unsigned)(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
				CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	/* the same bits as cudaHostRegister's */
	return cu_result(rt_host_register(p, bytesize, Flags));
}

CU_EXPORT CUresult CUDAAPI cuMemHostUnregister(void *p)
{
	CUresult r = cu_ready();

	return r ? r : cu_result(rt_host_unregister(p));
}

/* ---- pointer attributes ---- */

/* The range attributes of an address in a cuMemAddressReserve reservation
 * are the reservation's, mapped or not (cuda.h: "the mappable address range
 * ptr references"; measured on an H200: an address in one of two mappings
 * answers the whole reservation), while cuMemGetAddressRange answers the
 * mapping. An unmapped address of a reservation answers those two and
 * MAPPED (0) only. */
static CUresult reserved_attribute(void *data, CUpointer_attribute attribute, uint64_t rbase, uint64_t rsize)
{
	switch (attribute) {
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = rbase;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = rsize;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(unsigned *)data = 0;
		return CUDA_SUCCESS;
	default:
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
}

static CUresult pointer_attribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	uint64_t base = 0, size = 0, rbase, rsize;
	void *hbase, *twin = NULL;
	int vgpu = dm_find(ptr, 1, &base, &size);
	bool host = false, reserved = cu_vmm_reservation_of(ptr, &rbase, &rsize);

	if (vgpu < 0 && reserved)
		return reserved_attribute(data, attribute, rbase, rsize);
	if (reserved) {
		/* a mapping: the range is its reservation's */
		if (attribute == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR || attribute == CU_POINTER_ATTRIBUTE_RANGE_SIZE)
			return reserved_attribute(data, attribute, rbase, rsize);
	}
	if (vgpu < 0) {
		host = dh_block(PTR(ptr), &hbase, &size);
		if (host)
			base = (uint64_t)(uintptr_t)hbase;
		else
			twin = rt_registered_twin(PTR(ptr), 1);
		host = host || twin;
	}
	if (vgpu < 0 && !host)
		return CUDA_ERROR_INVALID_VALUE; /* memory mearas does not know: the caller says */
	switch (attribute) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = (CUcontext)(vgpu >= 0 ? cu_primary(vgpu) : NULL);
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned *)data = vgpu >= 0 ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		if (vgpu < 0 && !rt.same_address)
			return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
		*(CUdeviceptr *)data = twin ? (CUdeviceptr)(uintptr_t)twin : ptr;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (vgpu >= 0)
			return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
		*(void **)data = PTR(ptr);
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(unsigned *)data = vgpu < 0 && rt_managed_find(PTR(ptr), 1);
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = vgpu >= 0 ? vgpu : rt_tls.device;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		if (twin)
			return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
		*(CUdeviceptr *)data = base;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		if (twin)
			return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
		*(size_t *)data = size;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(unsigned *)data = 1;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		*(unsigned *)data = 1;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = base;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		*(CUmemoryPool *)data = NULL;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
	case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
		*(unsigned *)data = 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		*(unsigned *)data = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
		return CUDA_SUCCESS;
	default:
		return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
	}
}

CU_EXPORT CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	CUresult r = cu_need(cu_ready(), data);

	if (r)
		return r;
	r = pointer_attribute(data, attribute, ptr);
	return r == CUDA_ERROR_INVALID_VALUE ? CU_REFUSE(r) : r;
}

/* several at once; an attribute of an unknown pointer reads as zero */
CU_EXPORT CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
						  void **data, CUdeviceptr ptr)
{
	CUresult r = cu_need(cu_ready(), attributes && data);

	if (r)
		return r;
	for (unsigned i = 0; i < numAttributes; i++) {
		if (!data[i])
			continue;
		r = pointer_attribute(data[i], attributes[i], ptr);
		if (r == CUDA_ERROR_INVALID_VALUE) {
			/* what the driver writes for memory it does not know */
			if (attributes[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
				*(unsigned *)data[i] = 0;
			else if (attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
				*(int *)data[i] = -2;
			else if (attributes[i] == CU_POINTER_ATTRIBUTE_CONTEXT)
				*(CUcontext *)data[i] = NULL;
			else if (attributes[i] == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR ||
				 attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_POINTER)
				*(CUdeviceptr *)data[i] = 0;
			else if (attributes[i] == CU_POINTER_ATTRIBUTE_RANGE_SIZE)
				*(size_t *)data[i] = 0;
			else if (attributes[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER)
				*(void **)data[i] = NULL;
			else if (attributes[i] == CU_POINTER_ATTRIBUTE_BUFFER_ID)
				*(unsigned long long *)data[i] = 0;
			else if (attributes[i] == CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE)
				*(CUmemoryPool *)data[i] = NULL;
			else
				*(unsigned *)data[i] = 0;
		} else if (r) {
			return r;
		}
	}
	return CUDA_SUCCESS;
}

/* The one settable attribute, SYNC_MEMOPS, on device memory: mearas's
 * synchronous copies and memsets of any memory are synchronized already
 * (it reads 1), so either value is taken and changes nothing. MPI
 * libraries set it on each buffer they are given. */
CU_EXPORT CUresult CUDAAPI cuPointerSetAttribute(const void *value, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	CUresult r = cu_need(cu_ready(), value);

	if (r)
		return r;
	if (attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (dm_find(ptr, 1, NULL, NULL) < 0)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE); /* not device memory of a vGPU */
	return CUDA_SUCCESS;
}
