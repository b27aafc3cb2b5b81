// SPDX-License-Identifier: MIT
/*
 * Stream memory operations: cuStreamWriteValue32/64, cuStreamWaitValue32/64
 * and cuStreamBatchMemOp (each in its v1 and _v2 forms and their _ptsz
 * twins). Each write or wait is a record on the stream (STREAM_WRITE_VALUE,
 * STREAM_WAIT_VALUE) that the back end runs there: on a GPU the driver's own
 * operation, so a wait holds the stream on the GPU until the word meets its
 * condition. The word is a vGPU's device memory, or page-locked memory of
 * the data area (cuMemHostAlloc, cuMemAllocHost) at its device address.
 * A batch posts its operations in order; a flush of remote writes and a
 * memory barrier post nothing (each operation is ordered on the stream).
 */
#define __CUDA_API_VERSION_INTERNAL
#include "mearas/log.h"
#include "ptds.h"
#include "cu.h"

/* where the word is: device memory, or the data area (an offset into it) */
static CUresult place_of(int vgpu, CUdeviceptr addr, unsigned size, uint64_t *where, uint32_t *place)
{
	const void *p = (const void *)(uintptr_t)addr;

	if (addr % size)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (dm_find(addr, size, NULL, NULL) >= 0) {
		*where = addr;
		*place = MEARAS_MEMOP_DEVICE;
		return CUDA_SUCCESS;
	}
	if (rt.same_address && dh_contains(p, size)) {
		/* a remote node holds a copy of host memory, brought up to date
		 * around kernels: not a word the host and that GPU share */
		if (rt.v[vgpu].info->is_remote) {
			log_warn("stream memory operations on host memory are not supported on a remote vGPU by "
				 "mearas: use device memory");
			return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
		}
		*where = dh_offset(p);
		*place = MEARAS_MEMOP_HOST;
		return CUDA_SUCCESS;
	}
	return CU_REFUSE(CUDA_ERROR_INVALID_VALUE); /* not memory of a vGPU or of the data area */
}

static CUresult write_value(CUstream hStream, CUdeviceptr addr, uint64_t value, unsigned size, unsigned flags)
{
	struct rt_stream_ref st;
	uint64_t where;
	uint32_t place;
	CUresult r = cu_stream_ref(hStream, &st);

	if (!r && (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER))
		r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (!r)
		r = place_of(st.vgpu, addr, size, &where, &place);
	if (r)
		return r;
	return cu_result(rt_do_STREAM_WRITE_VALUE(st.vgpu, &st, where, value, size, place, flags));
}

static CUresult wait_value(CUstream hStream, CUdeviceptr addr, uint64_t value, unsigned size, unsigned flags)
{
	struct rt_stream_ref st;
	uint64_t where;
	uint32_t place;
	CUresult r = cu_stream_ref(hStream, &st);

	if (!r && (flags & ~(unsigned)CU_STREAM_WAIT_VALUE_FLUSH) > CU_STREAM_WAIT_VALUE_NOR)
		r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (!r)
		r = place_of(st.vgpu, addr, size, &where, &place);
	if (r)
		return r;
	return cu_result(rt_do_STREAM_WAIT_VALUE(st.vgpu, &st, where, value, size, place, flags));
}

/* v2: memory barriers too */
static CUresult batch(CUstream hStream, unsigned count, CUstreamBatchMemOpParams *ops, unsigned flags, bool v2)
{
	CUresult r = CUDA_SUCCESS;

	if (flags || (count && !ops) || count > 256)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	for (unsigned i = 0; i < count && !r; i++) {
		const CUstreamBatchMemOpParams *o = &ops[i];

		switch (o->operation) {
		case CU_STREAM_MEM_OP_WAIT_VALUE_32:
			r = wait_value(hStream, o->waitValue.address, o->waitValue.value, 4, o->waitValue.flags);
			break;
		case CU_STREAM_MEM_OP_WAIT_VALUE_64:
			r = wait_value(hStream, o->waitValue.address, o->waitValue.value64, 8, o->waitValue.flags);
			break;
		case CU_STREAM_MEM_OP_WRITE_VALUE_32:
			r = write_value(hStream, o->writeValue.address, o->writeValue.value, 4, o->writeValue.flags);
			break;
		case CU_STREAM_MEM_OP_WRITE_VALUE_64:
			r = write_value(hStream, o->writeValue.address, o->writeValue.value64, 8, o->writeValue.flags);
			break;
		case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
			r = o->flushRemoteWrites.flags ? CU_REFUSE(CUDA_ERROR_INVALID_VALUE) : CUDA_SUCCESS;
			break;
		case CU_STREAM_MEM_OP_BARRIER:
			r = v2 && o->memoryBarrier.flags <= CU_STREAM_MEMORY_BARRIER_TYPE_GPU
				    ? CUDA_SUCCESS
				    : CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
			break;
		default:
			r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
		}
	}
	return r;
}

/* each entry point in its four names: v1, _v2, and their _ptsz twins */
#define MEMOP_ENTRIES(name, type, fn, size)                                                               \
	CU_EXPORT CUresult CUDAAPI name(CUstream s, CUdeviceptr a, type v, unsigned int f)                 \
	{                                                                                                 \
		return WITH_PTDS(0, fn(s, a, v, size, f));                                                \
	}                                                                                                 \
	CU_EXPORT CUresult CUDAAPI name##_ptsz(CUstream s, CUdeviceptr a, type v, unsigned int f)          \
	{                                                                                                 \
		return WITH_PTDS(1, fn(s, a, v, size, f));                                                \
	}                                                                                                 \
	CU_EXPORT CUresult CUDAAPI name##_v2(CUstream s, CUdeviceptr a, type v, unsigned int f)            \
	{                                                                                                 \
		return WITH_PTDS(0, fn(s, a, v, size, f));                                                \
	}                                                                                                 \
	CU_EXPORT CUresult CUDAAPI name##_v2_ptsz(CUstream s, CUdeviceptr a, type v, unsigned int f)       \
	{                                                                                                 \
		return WITH_PTDS(1, fn(s, a, v, size, f));                                                \
	}

MEMOP_ENTRIES(cuStreamWriteValue32, cuuint32_t, write_value, 4)
MEMOP_ENTRIES(cuStreamWriteValue64, cuuint64_t, write_value, 8)
MEMOP_ENTRIES(cuStreamWaitValue32, cuuint32_t, wait_value, 4)
MEMOP_ENTRIES(cuStreamWaitValue64, cuuint64_t, wait_value, 8)

CU_EXPORT CUresult CUDAAPI cuStreamBatchMemOp(CUstream s, unsigned int n, CUstreamBatchMemOpParams *p, unsigned int f)
{
	return WITH_PTDS(0, batch(s, n, p, f, false));
}

CU_EXPORT CUresult CUDAAPI cuStreamBatchMemOp_ptsz(CUstream s, unsigned int n, CUstreamBatchMemOpParams *p,
						   unsigned int f)
{
	return WITH_PTDS(1, batch(s, n, p, f, false));
}

CU_EXPORT CUresult CUDAAPI cuStreamBatchMemOp_v2(CUstream s, unsigned int n, CUstreamBatchMemOpParams *p,
						 unsigned int f)
{
	return WITH_PTDS(0, batch(s, n, p, f, true));
}

CU_EXPORT CUresult CUDAAPI cuStreamBatchMemOp_v2_ptsz(CUstream s, unsigned int n, CUstreamBatchMemOpParams *p,
						      unsigned int f)
{
	return WITH_PTDS(1, batch(s, n, p, f, true));
}
