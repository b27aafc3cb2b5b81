// SPDX-License-Identifier: MIT
/*
 * Batches of copies (cuMemcpyBatchAsync: CUDA 12.8's ABI, with failIdx, and
 * _v2, without), each with its _ptsz twin: the core's rt_memcpy_batch
 * (guest/core/copy.c) on the current context. CUmemcpyAttributes is
 * cudaMemcpyAttributes field for field.
 */
/* cuda.h as the driver's own build sees it: both ABIs declared under their
 * exported names, no name #defined to another */
#define __CUDA_API_VERSION_INTERNAL
#include <stdint.h>

#include "ptds.h"
#include "cu.h"

CUresult CUDAAPI cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
					    CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
					    CUstream hStream);

static CUresult copy_batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
			   CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs, size_t *fail, CUstream s)
{
	CUresult r = cu_copy_ready(s);

	if (fail)
		*fail = SIZE_MAX;
	return r ? r : cu_result(rt_memcpy_batch((void *const *)dsts, (const void *const *)srcs, sizes, count,
					 (const struct cudaMemcpyAttributes *)attrs, idxs, nattrs, (cudaStream_t)s, fail));
}

PTDS_PAIR(cuMemcpyBatchAsync, _ptsz,
	  (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,
	   size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, CUstream hStream),
	  copy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream))
PTDS_PAIR(cuMemcpyBatchAsync_v2, _ptsz,
	  (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,
	   size_t *attrsIdxs, size_t numAttrs, CUstream hStream),
	  copy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, hStream))
