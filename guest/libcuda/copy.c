// SPDX-License-Identifier: MIT
/*
 * Copies and memsets over the core's engine (guest/core/copy.c). Each call
 * exists twice, as the driver exports it: the default name orders the
 * "synchronous" calls and stream 0 on the legacy default stream, the
 * _ptds/_ptsz one on the calling thread's default stream.
 */
#include <stdio.h>

#include "mearas/log.h"
#include "ptds.h"
#include "cu.h"

#define PTR(d) ((void *)(uintptr_t)(d))
#define CPTR(d) ((const void *)(uintptr_t)(d))

CUresult cu_copy_ready(CUstream s)
{
	CUresult r = cu_ready();

	if (r)
		return r;
	if (!cu_current())
		return CU_REFUSE(CUDA_ERROR_INVALID_CONTEXT);
	return cu_stream_known(s) ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
}

static CUresult copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, CUstream s, bool async)
{
	CUresult r = cu_copy_ready(s);

	return r ? r : cu_result(rt_memcpy(dst, src, n, kind, (cudaStream_t)s, async));
}

/* name: the export; sig: its parameters; args: copy()'s arguments */
#define COPY_PAIR(name, sig, args)       PTDS_PAIR(name, _ptds, sig, copy args)
#define COPY_PAIR_ASYNC(name, sig, args) PTDS_PAIR(name, _ptsz, sig, copy args)

COPY_PAIR(cuMemcpyHtoD_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),
	  (PTR(dstDevice), srcHost, ByteCount, cudaMemcpyHostToDevice, NULL, false))
COPY_PAIR(cuMemcpyDtoH_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),
	  (dstHost, CPTR(srcDevice), ByteCount, cudaMemcpyDeviceToHost, NULL, false))
COPY_PAIR(cuMemcpyDtoD_v2, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount),
	  (PTR(dstDevice), CPTR(srcDevice), ByteCount, cudaMemcpyDeviceToDevice, NULL, false))
COPY_PAIR(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount),
	  (PTR(dst), CPTR(src), ByteCount, cudaMemcpyDefault, NULL, false))
COPY_PAIR_ASYNC(cuMemcpyHtoDAsync_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream),
		(PTR(dstDevice), srcHost, ByteCount, cudaMemcpyHostToDevice, hStream, true))
COPY_PAIR_ASYNC(cuMemcpyDtoHAsync_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
		(dstHost, CPTR(srcDevice), ByteCount, cudaMemcpyDeviceToHost, hStream, true))
COPY_PAIR_ASYNC(cuMemcpyDtoDAsync_v2, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
				       CUstream hStream),
		(PTR(dstDevice), CPTR(srcDevice), ByteCount, cudaMemcpyDeviceToDevice, hStream, true))
COPY_PAIR_ASYNC(cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream),
		(PTR(dst), CPTR(src), ByteCount, cudaMemcpyDefault, hStream, true))

/* ---- peer copies: each context names its vGPU; the pointers decide the
 * bytes (guest/core/copy.c does the cross-vGPU copy) ---- */

static CUresult copy_peer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n,
			  CUstream s, bool async)
{
	struct cu_ctx *dc, *sc;
	CUresult r = cu_ready();

	if (r)
		return r;
	dc = cu_ctx_get(dst_ctx);
	sc = cu_ctx_get(src_ctx);
	if (!dc || !sc)
		r = CU_REFUSE(CUDA_ERROR_INVALID_CONTEXT);
	else if (!cu_stream_known(s))
		r = CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
	return r ? r : cu_result(rt_memcpy_peer(PTR(dst), dc->vgpu, CPTR(src), sc->vgpu, n, (cudaStream_t)s, async));
}

#define PEER_SIG CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, \
		 size_t ByteCount
#define PEER_ARGS dstDevice, dstContext, srcDevice, srcContext, ByteCount

CU_EXPORT CUresult CUDAAPI cuMemcpyPeer(PEER_SIG)
{
	return WITH_PTDS(0, copy_peer(PEER_ARGS, NULL, false));
}

CU_EXPORT CUresult CUDAAPI cuMemcpyPeer_ptds(PEER_SIG)
{
	return WITH_PTDS(1, copy_peer(PEER_ARGS, NULL, false));
}

CU_EXPORT CUresult CUDAAPI cuMemcpyPeerAsync(PEER_SIG, CUstream hStream)
{
	return WITH_PTDS(0, copy_peer(PEER_ARGS, hStream, true));
}

CU_EXPORT CUresult CUDAAPI cuMemcpyPeerAsync_ptsz(PEER_SIG, CUstream hStream)
{
	return WITH_PTDS(1, copy_peer(PEER_ARGS, hStream, true));
}

#define COPY2D(name, sig, args, suffix) PTDS_PAIR(name, suffix, sig, cu_copy_2d args)

/* ---- 2D copies ---- */

/* one side of a CUDA_MEMCPY2D: its first byte, and whether it is host memory */
static CUresult side(CUmemorytype type, const void *host, CUdeviceptr dev, CUarray array, size_t x, size_t y,
		     size_t pitch, const uint8_t **at, int *is_host)
{
	if (array) {
		log_info("2D copy: an array named on a side of memory type %d: invalid value", (int)type);
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
	switch (type) {
	case CU_MEMORYTYPE_HOST:
		*at = host;
		*is_host = 1;
		break;
	case CU_MEMORYTYPE_DEVICE:
	case CU_MEMORYTYPE_UNIFIED:
		*at = CPTR(dev);
		*is_host = type == CU_MEMORYTYPE_DEVICE ? 0 : -1;
		break;
	default:
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
	*at += y * pitch + x;
	return CUDA_SUCCESS;
}

CUresult cu_copy_2d(const CUDA_MEMCPY2D *p, CUstream s, bool async)
{
	const uint8_t *src, *dst;
	int src_host, dst_host;
	enum cudaMemcpyKind kind;
	CUresult r = cu_ready();

	if (r)
		return r;
	if (!cu_current())
		return CU_REFUSE(CUDA_ERROR_INVALID_CONTEXT);
	if (!p)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY)
		return cu_copy_2d_array(p, s, async);
	r = side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcXInBytes, p->srcY, p->srcPitch, &src,
		 &src_host);
	if (!r)
		r = side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes, p->dstY, p->dstPitch,
			 &dst, &dst_host);
	if (r)
		return r;
	if (src_host < 0 || dst_host < 0)
		kind = cudaMemcpyDefault;
	else
		kind = src_host ? (dst_host ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice)
				: (dst_host ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice);
	/* a pitch of one row may be anything; the engine wants it no smaller */
	return cu_result(rt_memcpy_2d((void *)dst, p->Height > 1 ? p->dstPitch : p->WidthInBytes, src,
				      p->Height > 1 ? p->srcPitch : p->WidthInBytes, p->WidthInBytes, p->Height, kind,
				      (cudaStream_t)s, async));
}

COPY2D(cuMemcpy2D_v2, (const CUDA_MEMCPY2D *pCopy), (pCopy, NULL, false), _ptds)
COPY2D(cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *pCopy), (pCopy, NULL, false), _ptds)
COPY2D(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *pCopy, CUstream hStream), (pCopy, hStream, true), _ptsz)

/* ---- memsets: n elements of 1, 2 or 4 bytes, rows pitch apart ---- */

static CUresult memset_rows(CUdeviceptr dst, size_t pitch, unsigned value, unsigned elem, size_t width,
			    size_t height, CUstream s, bool blocking)
{
	struct rt_stream_ref st;
	uint64_t span, bytes = (uint64_t)width * elem;
	int vgpu;
	CUresult r = cu_ready();

	if (r)
		return r;
	if (!cu_current())
		return CU_REFUSE(CUDA_ERROR_INVALID_CONTEXT);
	if (!width || !height)
		return CUDA_SUCCESS;
	if (dst % elem || (height > 1 && (bytes > pitch || pitch % elem))) {
		log_info("cuMemset%s%u: destination %#llx or pitch %zu not a multiple of %u bytes: invalid value",
			 height > 1 ? "D2D" : "D", elem * 8, (unsigned long long)dst, pitch, elem);
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
	span = height > 1 ? pitch * (height - 1) + bytes : bytes;
	vgpu = dm_find(dst, span, NULL, NULL);
	if (vgpu < 0) {
		void *p = (void *)(uintptr_t)dst;

		if (rt_pinned_host(p, span)) {
			char call[32];

			r = cu_result(rt_stream_ref((cudaStream_t)s, &st));
			snprintf(call, sizeof(call), "cuMemset%s%u%s", height > 1 ? "D2D" : "D", elem * 8,
				 blocking ? "" : "Async");
			return r ? r : cu_result(rt_host_memset(call, &st, p, pitch, value, elem, width, height));
		}
		log_info("cuMemset%s%u of %llu bytes at %#llx: not within one device allocation or pinned host "
			 "memory of this process: invalid value", height > 1 ? "D2D" : "D", elem * 8,
			 (unsigned long long)span, (unsigned long long)dst);
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
	r = cu_result(rt_stream_ref((cudaStream_t)s, &st));
	if (r)
		return r;
	if (s)
		vgpu = st.vgpu;
	if (elem == 1 && height > 1)
		return cu_result(rt_do_MEMSET_2D(vgpu, &st, dst, pitch, value & 0xff, width, height, false));
	for (size_t row = 0; row < height && !r; row++)
		r = cu_result(rt_do_MEMSET(vgpu, &st, dst + row * pitch, value, width, elem, false));
	return r;
}

#define MEMSET_PAIR(name, sig, args)       PTDS_PAIR(name, _ptds, sig, memset_rows args)
#define MEMSET_PAIR_ASYNC(name, sig, args) PTDS_PAIR(name, _ptsz, sig, memset_rows args)

MEMSET_PAIR(cuMemsetD8_v2, (CUdeviceptr dstDevice, unsigned char uc, size_t N),
	    (dstDevice, 0, uc, 1, N, 1, NULL, true))
MEMSET_PAIR(cuMemsetD16_v2, (CUdeviceptr dstDevice, unsigned short us, size_t N),
	    (dstDevice, 0, us, 2, N, 1, NULL, true))
MEMSET_PAIR(cuMemsetD32_v2, (CUdeviceptr dstDevice, unsigned int ui, size_t N),
	    (dstDevice, 0, ui, 4, N, 1, NULL, true))
MEMSET_PAIR(cuMemsetD2D8_v2, (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height),
	    (dstDevice, dstPitch, uc, 1, Width, Height, NULL, true))
MEMSET_PAIR(cuMemsetD2D16_v2,
	    (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height),
	    (dstDevice, dstPitch, us, 2, Width, Height, NULL, true))
MEMSET_PAIR(cuMemsetD2D32_v2, (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height),
	    (dstDevice, dstPitch, ui, 4, Width, Height, NULL, true))
MEMSET_PAIR_ASYNC(cuMemsetD8Async, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream),
		  (dstDevice, 0, uc, 1, N, 1, hStream, false))
MEMSET_PAIR_ASYNC(cuMemsetD16Async, (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream),
		  (dstDevice, 0, us, 2, N, 1, hStream, false))
MEMSET_PAIR_ASYNC(cuMemsetD32Async, (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream),
		  (dstDevice, 0, ui, 4, N, 1, hStream, false))
MEMSET_PAIR_ASYNC(cuMemsetD2D8Async, (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
				      size_t Height, CUstream hStream),
		  (dstDevice, dstPitch, uc, 1, Width, Height, hStream, false))
MEMSET_PAIR_ASYNC(cuMemsetD2D16Async, (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
				       size_t Height, CUstream hStream),
		  (dstDevice, dstPitch, us, 2, Width, Height, hStream, false))
MEMSET_PAIR_ASYNC(cuMemsetD2D32Async, (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
				       size_t Height, CUstream hStream),
		  (dstDevice, dstPitch, ui, 4, Width, Height, hStream, false))
