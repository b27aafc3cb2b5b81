// SPDX-License-Identifier: MIT
/* The runtime's copies, memsets and symbol copies over the core's copy
 * engine (guest/core/copy.c). */
#include <string.h>

#include "rt.h"

RT_EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	return rt_set_error(rt_memcpy(dst, src, count, kind, 0, false));
}

RT_EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
				      cudaStream_t stream)
{
	return rt_set_error(rt_memcpy(dst, src, count, kind, stream, true));
}

RT_EXPORT cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes,
					   size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs,
					   size_t numAttrs, cudaStream_t stream)
{
	return rt_set_error(rt_memcpy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream, NULL));
}

RT_EXPORT cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
{
	return rt_set_error(rt_memcpy_peer(dst, dstDevice, src, srcDevice, count, 0, false));
}

RT_EXPORT cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
					  size_t count, cudaStream_t stream)
{
	return rt_set_error(rt_memcpy_peer(dst, dstDevice, src, srcDevice, count, stream, true));
}

RT_EXPORT cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
				   size_t height, enum cudaMemcpyKind kind)
{
	return rt_set_error(rt_memcpy_2d(dst, dpitch, src, spitch, width, height, kind, 0, false));
}

RT_EXPORT cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
					size_t width, size_t height, enum cudaMemcpyKind kind,
					cudaStream_t stream)
{
	return rt_set_error(rt_memcpy_2d(dst, dpitch, src, spitch, width, height, kind, stream, true));
}

RT_EXPORT cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
	return rt_set_error(rt_memset(devPtr, count, value, count, 1, 0));
}

RT_EXPORT cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	return rt_set_error(rt_memset(devPtr, count, value, count, 1, stream));
}

RT_EXPORT cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width, size_t height)
{
	return rt_set_error(rt_memset(devPtr, pitch, value, width, height, 0));
}

RT_EXPORT cudaError_t cudaMemset2DAsync(void *devPtr, size_t pitch, int value, size_t width, size_t height,
					cudaStream_t stream)
{
	return rt_set_error(rt_memset(devPtr, pitch, value, width, height, stream));
}

/*
 * A memset of extent's bytes, rows and slices in a pitched allocation
 * (cudaMalloc3D): one 2D memset when the slices follow each other (the
 * extent's height is the allocation's), else one per slice.
 */
static cudaError_t memset_3d(struct cudaPitchedPtr p, int value, struct cudaExtent e, cudaStream_t stream)
{
	cudaError_t err = cudaSuccess;

	if (!e.width || !e.height || !e.depth)
		return cudaSuccess;
	/* one row: its bytes, whatever the pitch (as NVIDIA's runtime takes it) */
	if (e.height == 1 && e.depth == 1)
		return rt_memset(p.ptr, e.width, value, e.width, 1, stream);
	if (e.width > p.pitch || (e.depth > 1 && (e.height > p.ysize || e.height > SIZE_MAX / e.depth)))
		return cudaErrorInvalidValue;
	if (e.depth == 1 || e.height == p.ysize)
		return rt_memset(p.ptr, p.pitch, value, e.width, e.height * e.depth, stream);
	for (size_t z = 0; z < e.depth && !err; z++)
		err = rt_memset((char *)p.ptr + z * p.pitch * p.ysize, p.pitch, value, e.width, e.height, stream);
	return err;
}

RT_EXPORT cudaError_t cudaMemset3D(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent)
{
	return rt_set_error(memset_3d(pitchedDevPtr, value, extent, 0));
}

RT_EXPORT cudaError_t cudaMemset3DAsync(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent,
					cudaStream_t stream)
{
	return rt_set_error(memset_3d(pitchedDevPtr, value, extent, stream));
}

/* ---- symbols ---- */

cudaError_t rt_symbol_range(const void *symbol, int vgpu, size_t count, size_t offset, uint64_t *dptr)
{
	uint64_t size;
	cudaError_t e = rt_symbol(symbol, vgpu, dptr, &size);

	if (e)
		return e;
	if (offset > size || count > size - offset)
		return cudaErrorInvalidValue;
	*dptr += offset;
	return cudaSuccess;
}

cudaError_t rt_symbol_kind(bool to, enum cudaMemcpyKind kind)
{
	return kind == (to ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost) || kind == cudaMemcpyDeviceToDevice ||
			       kind == cudaMemcpyDefault
		       ? cudaSuccess
		       : cudaErrorInvalidMemcpyDirection;
}

/* on the current device */
static cudaError_t symbol_range(const void *symbol, size_t count, size_t offset, uint64_t *dptr)
{
	int dev;
	cudaError_t e = rt_ensure_device(&dev);

	return e ? e : rt_symbol_range(symbol, dev, count, offset, dptr);
}

/* a copy to the symbol's bytes at offset from src (to), or from them to dst */
static cudaError_t symbol_copy(bool to, void *dst, const void *src, const void *symbol, size_t count, size_t offset,
			       enum cudaMemcpyKind kind, cudaStream_t stream, bool async)
{
	uint64_t d;
	cudaError_t e;

	e = rt_symbol_kind(to, kind);
	if (!e)
		e = symbol_range(symbol, count, offset, &d);
	if (e)
		return e;
	return rt_memcpy(to ? (void *)(uintptr_t)d : dst, to ? src : (const void *)(uintptr_t)d, count, kind, stream,
			 async);
}

RT_EXPORT cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
					 enum cudaMemcpyKind kind)
{
	return rt_set_error(symbol_copy(true, NULL, src, symbol, count, offset, kind, 0, false));
}

RT_EXPORT cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count,
					      size_t offset, enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return rt_set_error(symbol_copy(true, NULL, src, symbol, count, offset, kind, stream, true));
}

RT_EXPORT cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset,
					   enum cudaMemcpyKind kind)
{
	return rt_set_error(symbol_copy(false, dst, NULL, symbol, count, offset, kind, 0, false));
}

RT_EXPORT cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count, size_t offset,
						enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return rt_set_error(symbol_copy(false, dst, NULL, symbol, count, offset, kind, stream, true));
}

RT_EXPORT cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol)
{
	uint64_t d;
	cudaError_t e;

	if (!devPtr)
		return rt_set_error(cudaErrorInvalidValue);
	e = symbol_range(symbol, 0, 0, &d);
	if (e)
		return rt_set_error(e);
	*devPtr = (void *)(uintptr_t)d;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol)
{
	uint64_t d, sz;
	int dev;
	cudaError_t e;

	if (!size)
		return rt_set_error(cudaErrorInvalidValue);
	e = rt_ensure_device(&dev);
	if (!e)
		e = rt_symbol(symbol, dev, &d, &sz);
	if (e)
		return rt_set_error(e);
	*size = sz;
	return cudaSuccess;
}
