// SPDX-License-Identifier: MIT
/*
 * Managed memory through the driver API: allocations are the core's
 * zero-copy blocks (guest/core/managed.c): host and device reach the same
 * bytes; prefetches and advice on them are accepted and change nothing (the
 * bytes stay where they are, reachable from both sides), and refused
 * (CUDA_ERROR_INVALID_VALUE) on memory that is not managed, as the driver
 * does. cuMemFree and the pointer attributes know the blocks (memory.c).
 */
#define __CUDA_API_VERSION_INTERNAL
#include "ptds.h"
#include "cu.h"

#define PTR(d) ((void *)(uintptr_t)(d))

CU_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	void *p;
	CUresult r = cu_need(cu_ready(), dptr);

	if (r)
		return r;
	if (!bytesize || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	r = cu_result(rt_managed_alloc(&p, bytesize));
	if (!r)
		*dptr = (CUdeviceptr)(uintptr_t)p;
	return r;
}

/* a hint on [p, p+count): accepted on managed memory, in stream order for
 * prefetches (the stream must be one) */
static CUresult hint(CUdeviceptr p, size_t count, CUstream s, bool stream)
{
	struct rt_stream_ref st;
	CUresult r = cu_ready();

	if (r)
		return r;
	if (stream && (r = cu_stream_ref(s, &st)))
		return r;
	if (!count || !rt_managed_find(PTR(p), count))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	return CUDA_SUCCESS;
}

/* flags: none are defined yet */
static CUresult prefetch(CUdeviceptr p, size_t count, unsigned int flags, CUstream s)
{
	return flags ? CU_REFUSE(CUDA_ERROR_INVALID_VALUE) : hint(p, count, s, true);
}

CU_EXPORT CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream);
CU_EXPORT CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream)
{
	(void)dstDevice;
	return WITH_PTDS(0, prefetch(devPtr, count, 0, hStream));
}

CU_EXPORT CUresult CUDAAPI cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
						  CUstream hStream);
CU_EXPORT CUresult CUDAAPI cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
						  CUstream hStream)
{
	(void)dstDevice;
	return CU_PTSZ(prefetch(devPtr, count, 0, hStream));
}

CU_EXPORT CUresult CUDAAPI cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location,
						unsigned int flags, CUstream hStream);
CU_EXPORT CUresult CUDAAPI cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location,
						unsigned int flags, CUstream hStream)
{
	(void)location;
	return WITH_PTDS(0, prefetch(devPtr, count, flags, hStream));
}

CU_EXPORT CUresult CUDAAPI cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
						     unsigned int flags, CUstream hStream);
CU_EXPORT CUresult CUDAAPI cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
						     unsigned int flags, CUstream hStream)
{
	(void)location;
	return CU_PTSZ(prefetch(devPtr, count, flags, hStream));
}

static bool advice_known(CUmem_advise advice)
{
	return advice >= CU_MEM_ADVISE_SET_READ_MOSTLY && advice <= CU_MEM_ADVISE_UNSET_ACCESSED_BY;
}

CU_EXPORT CUresult CUDAAPI cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device);
static CUresult advise(CUdeviceptr p, size_t count, CUmem_advise advice)
{
	return advice_known(advice) ? hint(p, count, NULL, false) : CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
}

CU_EXPORT CUresult CUDAAPI cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device)
{
	(void)device;
	return advise(devPtr, count, advice);
}

CU_EXPORT CUresult CUDAAPI cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
					 CUmemLocation location);
CU_EXPORT CUresult CUDAAPI cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
					 CUmemLocation location)
{
	(void)location;
	return advise(devPtr, count, advice);
}

/* one way of attaching (global, host or the stream alone) a whole managed
 * allocation (length 0 or its size, from its start: the driver refuses part
 * of one) */
static CUresult attach(CUstream s, CUdeviceptr dptr, size_t length, unsigned int flags)
{
	struct rt_stream_ref st;
	CUresult r = cu_stream_ref(s, &st);

	if (r)
		return r;
	return rt_managed_attachable(PTR(dptr), length, flags) ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
}

CU_EXPORT CUresult CUDAAPI cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length,
						  unsigned int flags)
{
	return attach(hStream, dptr, length, flags);
}

CU_EXPORT CUresult CUDAAPI cuStreamAttachMemAsync_ptsz(CUstream hStream, CUdeviceptr dptr, size_t length,
						       unsigned int flags)
{
	return CU_PTSZ(attach(hStream, dptr, length, flags));
}
