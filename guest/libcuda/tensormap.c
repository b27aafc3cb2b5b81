// SPDX-License-Identifier: MIT
/*
 * Tensor maps (TMA descriptors): cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col,
 * cuTensorMapEncodeIm2colWide and cuTensorMapReplaceAddress.
 *
 * A CUtensorMap is 128 opaque bytes in NVIDIA's format: mearas never builds
 * one. The arguments go to mearasd (TENSOR_MAP_ENCODE), which checks them,
 * the tensor's place in this process's device memory among them, and has
 * the vGPU's device encode the map (the host's driver on a GPU); the bytes
 * come back through the data area. The device addresses this process sees
 * are the GPU's, so the map is valid for its kernels as it is.
 *
 * cuTensorMapReplaceAddress cannot edit opaque bytes; it re-encodes the map
 * from the arguments that made it with the new address. This process
 * remembers the arguments of the last TMAP_MEMO maps it encoded, found by
 * the map's bytes; a map it did not encode (or has forgotten) is refused
 * with CUDA_ERROR_INVALID_VALUE and a log line.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mearas/log.h"
#include "mearas/tensormap.h"
#include "cu.h"

#define TMAP_MEMO 512

struct tmap_memo {
	uint8_t map[MEARAS_TMAP_BYTES];
	struct mearas_tmap_args a;
	uint32_t kind;
	int vgpu;
	uint64_t used;                  /* 0: empty; else a use stamp (the oldest goes first) */
};

static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tmap_memo *memo;
static uint64_t memo_clock;

/* Remembers how map was made (replacing what the same bytes came from before). */
static void memo_put(const uint8_t *map, uint32_t kind, int vgpu, const struct mearas_tmap_args *a)
{
	struct tmap_memo *slot = NULL;

	pthread_mutex_lock(&memo_lock);
	if (!memo)
		memo = calloc(TMAP_MEMO, sizeof(*memo));
	for (size_t i = 0; memo && i < TMAP_MEMO; i++) {
		if (memo[i].used && !memcmp(memo[i].map, map, MEARAS_TMAP_BYTES)) {
			slot = &memo[i];
			break;
		}
		if (!slot || memo[i].used < slot->used)
			slot = &memo[i];
	}
	if (slot) {
		memcpy(slot->map, map, MEARAS_TMAP_BYTES);
		slot->a = *a;
		slot->kind = kind;
		slot->vgpu = vgpu;
		slot->used = ++memo_clock;
	}
	pthread_mutex_unlock(&memo_lock);
}

/* The arguments map was made from: false when this process did not make it. */
static bool memo_get(const uint8_t *map, uint32_t *kind, int *vgpu, struct mearas_tmap_args *a)
{
	bool found = false;

	pthread_mutex_lock(&memo_lock);
	for (size_t i = 0; memo && i < TMAP_MEMO; i++) {
		if (memo[i].used && !memcmp(memo[i].map, map, MEARAS_TMAP_BYTES)) {
			*a = memo[i].a;
			*kind = memo[i].kind;
			*vgpu = memo[i].vgpu;
			memo[i].used = ++memo_clock;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&memo_lock);
	return found;
}

/* The vGPU that encodes: the current context's, else the one whose memory
 * holds the tensor (the driver's encoding needs no context). */
static CUresult tmap_vgpu(uint64_t addr, int *vgpu)
{
	struct cu_ctx *c;
	CUresult r = cu_ready();

	if (r)
		return r;
	c = cu_current();
	*vgpu = c ? c->vgpu : dm_window_owner(addr);
	return *vgpu < 0 ? CU_REFUSE(CUDA_ERROR_INVALID_CONTEXT) : CUDA_SUCCESS;
}

/* Has the vGPU encode a (kind: enum mearas_tmap_kind) into out. */
static CUresult tmap_encode(int vgpu, uint32_t kind, const struct mearas_tmap_args *a, CUtensorMap *out)
{
	uint8_t *buf = dh_alloc(MEARAS_TMAP_BYTES);
	CUresult r;

	if (!buf)
		return CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	r = cu_result(rt_do_TENSOR_MAP_ENCODE(vgpu, kind, dh_offset(buf), MEARAS_TMAP_BYTES, a, sizeof(*a)));
	if (!r) {
		memcpy(out, buf, MEARAS_TMAP_BYTES);
		memo_put(buf, kind, vgpu, a);
	}
	dh_free(buf);
	return r;
}

/* The encoding vGPU (tmap_vgpu), then the arguments every call shares, after the checks cuda.h states for the
 * pointers: the map 64-byte aligned, the rank (minrank..5) before any array
 * is read, the arrays present (globalStrides may be NULL for rank 1). */
static CUresult tmap_common(CUtensorMap *map, CUtensorMapDataType dtype, cuuint32_t rank, unsigned minrank,
			    void *addr, const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *estrides,
			    CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
			    CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob, struct mearas_tmap_args *a,
			    int *vgpu)
{
	CUresult r = tmap_vgpu((uint64_t)(uintptr_t)addr, vgpu);

	if (r)
		return r;
	if (!map || ((uintptr_t)map & 63) || rank < minrank || rank > MEARAS_TMAP_MAX_RANK || !dims || !estrides ||
	    (rank > 1 && !strides))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	memset(a, 0, sizeof(*a));
	a->addr = (uint64_t)(uintptr_t)addr;
	a->rank = rank;
	a->dtype = (uint32_t)dtype;
	a->interleave = (uint32_t)interleave;
	a->swizzle = (uint32_t)swizzle;
	a->l2promo = (uint32_t)l2;
	a->oobfill = (uint32_t)oob;
	for (unsigned i = 0; i < rank; i++) {
		a->dims[i] = dims[i];
		a->estrides[i] = estrides[i];
		if (i + 1 < rank)
			a->strides[i] = strides[i];
	}
	return CUDA_SUCCESS;
}

/* what each kind of encoding adds to the arguments they share */
struct tmap_extra {
	const cuuint32_t *box;          /* tiled: the box, per dimension */
	const int *lower, *upper;       /* im2col: the pixel box's corners, per spatial dimension */
	int lower_w, upper_w;           /* im2col wide: the box's corners in width */
	cuuint32_t channels, pixels;    /* the im2col kinds: channels per pixel, pixels per column */
	uint32_t wide_mode;             /* im2col wide: CUtensorMapIm2ColWideMode */
};

/* One encoding of kind (enum mearas_tmap_kind): the arguments every kind
 * shares (tmap_common), then the kind's own (x), then the vGPU encodes. */
static CUresult tmap_make(uint32_t kind, CUtensorMap *map, CUtensorMapDataType dtype, cuuint32_t rank, void *addr,
			  const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *estrides,
			  CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
			  CUtensorMapFloatOOBfill oob, const struct tmap_extra *x)
{
	struct mearas_tmap_args a;
	int vgpu;
	CUresult r = tmap_common(map, dtype, rank, kind == MEARAS_TMAP_TILED ? 1 : 3, addr, dims, strides, estrides,
				 interleave, swizzle, l2, oob, &a, &vgpu);

	if (r)
		return r;
	switch (kind) {
	case MEARAS_TMAP_TILED:
		if (!x->box)
			return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
		for (unsigned i = 0; i < rank; i++)
			a.box[i] = x->box[i];
		break;
	case MEARAS_TMAP_IM2COL:
		if (!x->lower || !x->upper)
			return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
		for (unsigned i = 0; i + 2 < rank; i++) {
			a.lower[i] = x->lower[i];
			a.upper[i] = x->upper[i];
		}
		break;
	default: /* MEARAS_TMAP_IM2COL_WIDE */
		a.lower[0] = x->lower_w;
		a.upper[0] = x->upper_w;
		a.wide_mode = x->wide_mode;
		break;
	}
	if (kind != MEARAS_TMAP_TILED) {
		a.channels = x->channels;
		a.pixels = x->pixels;
	}
	return tmap_encode(vgpu, kind, &a, map);
}

CU_EXPORT CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
						  cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
						  const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
						  const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
						  CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
						  CUtensorMapFloatOOBfill oobFill)
{
	const struct tmap_extra x = { .box = boxDim };

	return tmap_make(MEARAS_TMAP_TILED, tensorMap, tensorDataType, tensorRank, globalAddress, globalDim,
			 globalStrides, elementStrides, interleave, swizzle, l2Promotion, oobFill, &x);
}

CU_EXPORT CUresult CUDAAPI cuTensorMapEncodeIm2col(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
						   cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
						   const cuuint64_t *globalStrides, const int *pixelBoxLowerCorner,
						   const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
						   cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides,
						   CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
						   CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
	const struct tmap_extra x = { .lower = pixelBoxLowerCorner, .upper = pixelBoxUpperCorner,
				      .channels = channelsPerPixel, .pixels = pixelsPerColumn };

	return tmap_make(MEARAS_TMAP_IM2COL, tensorMap, tensorDataType, tensorRank, globalAddress, globalDim,
			 globalStrides, elementStrides, interleave, swizzle, l2Promotion, oobFill, &x);
}

CU_EXPORT CUresult CUDAAPI cuTensorMapEncodeIm2colWide(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
						       cuuint32_t tensorRank, void *globalAddress,
						       const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
						       int pixelBoxLowerCornerWidth, int pixelBoxUpperCornerWidth,
						       cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
						       const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
						       CUtensorMapIm2ColWideMode mode, CUtensorMapSwizzle swizzle,
						       CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
	const struct tmap_extra x = { .lower_w = pixelBoxLowerCornerWidth, .upper_w = pixelBoxUpperCornerWidth,
				      .channels = channelsPerPixel, .pixels = pixelsPerColumn,
				      .wide_mode = (uint32_t)mode };

	return tmap_make(MEARAS_TMAP_IM2COL_WIDE, tensorMap, tensorDataType, tensorRank, globalAddress, globalDim,
			 globalStrides, elementStrides, interleave, swizzle, l2Promotion, oobFill, &x);
}

CU_EXPORT CUresult CUDAAPI cuTensorMapReplaceAddress(CUtensorMap *tensorMap, void *globalAddress)
{
	static int said;
	struct mearas_tmap_args a;
	uint32_t kind;
	int vgpu;
	/* a map is 64-byte aligned */
	CUresult r = cu_need(cu_ready(), tensorMap && !((uintptr_t)tensorMap & 63));

	if (r)
		return r;
	if (!memo_get((const uint8_t *)tensorMap, &kind, &vgpu, &a)) {
		if (__atomic_fetch_add(&said, 1, __ATOMIC_RELAXED) < 5)
			log_warn("cuTensorMapReplaceAddress: the map was not encoded by this process (or was among more "
				 "than %d encoded since): mearas re-encodes a map from its arguments and cannot edit "
				 "its opaque bytes; returning CUDA_ERROR_INVALID_VALUE", TMAP_MEMO);
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
	a.addr = (uint64_t)(uintptr_t)globalAddress;
	return tmap_encode(vgpu, kind, &a, tensorMap);
}
