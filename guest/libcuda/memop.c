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

/* a wait's flags name its condition (and may ask for a flush); a write's may say no barrier */
static CUresult post(CUstream hStream, bool wait, CUdeviceptr addr, uint64_t value, unsigned size, unsigned flags)
{
	struct rt_stream_ref st;
	uint64_t where = 0;
	uint32_t place = 0;
	CUresult r = cu_stream_ref(hStream, &st);
	bool bad = wait ? (flags & ~(unsigned)CU_STREAM_WAIT_VALUE_FLUSH) > CU_STREAM_WAIT_VALUE_NOR
			: (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) != 0;

	if (!r && bad)
		r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (!r)
		r = place_of(st.vgpu, addr, size, &where, &place);
	if (r)
		return r;
	if (wait)
		return cu_result(rt_do_STREAM_WAIT_VALUE(st.vgpu, &st, where, value, size, place, flags));
	return cu_result(rt_do_STREAM_WRITE_VALUE(st.vgpu, &st, where, value, size, place, flags));
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
		case CU_STREAM_MEM_OP_WAIT_VALUE_64: {
			bool w32 = o->operation == CU_STREAM_MEM_OP_WAIT_VALUE_32;

			r = post(hStream, true, o->waitValue.address, w32 ? o->waitValue.value : o->waitValue.value64,
				 w32 ? 4 : 8, o->waitValue.flags);
			break;
		}
		case CU_STREAM_MEM_OP_WRITE_VALUE_32:
		case CU_STREAM_MEM_OP_WRITE_VALUE_64: {
			bool w32 = o->operation == CU_STREAM_MEM_OP_WRITE_VALUE_32;

			r = post(hStream, false, o->writeValue.address,
				 w32 ? o->writeValue.value : o->writeValue.value64, w32 ? 4 : 8, o->writeValue.flags);
			break;
		}
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

/* one entry point; each comes in four names: v1, _v2, and their _ptsz twins */
#define MEMOP_ENTRY(name, type, ptds, wait, size)                                         \
	CU_EXPORT CUresult CUDAAPI name(CUstream s, CUdeviceptr a, type v, unsigned int f) \
	{                                                                                 \
		return WITH_PTDS(ptds, post(s, wait, a, v, size, f));                     \
	}
#define MEMOP_ENTRIES(name, type, wait, size)              \
	MEMOP_ENTRY(name, type, 0, wait, size)             \
	MEMOP_ENTRY(name##_ptsz, type, 1, wait, size)      \
	MEMOP_ENTRY(name##_v2, type, 0, wait, size)        \
	MEMOP_ENTRY(name##_v2_ptsz, type, 1, wait, size)

MEMOP_ENTRIES(cuStreamWriteValue32, cuuint32_t, false, 4)
MEMOP_ENTRIES(cuStreamWriteValue64, cuuint64_t, false, 8)
MEMOP_ENTRIES(cuStreamWaitValue32, cuuint32_t, true, 4)
MEMOP_ENTRIES(cuStreamWaitValue64, cuuint64_t, true, 8)

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
