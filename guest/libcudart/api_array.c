// SPDX-License-Identifier: MIT
/*
 * CUDA arrays, copies into and out of them, cudaMemcpy3D, texture objects
 * and surface objects, over guest/core/arrays.c (a cudaArray_t points at
 * the core's struct rt_array, as a CUarray of mearas's driver does).
 * Channel descriptors become the driver's formats here: 1, 2 or 4 channels
 * of one size, signed, unsigned or float; the normalized, block-compressed
 * and YUV kinds and mipmapped arrays are NotSupported with a log line naming
 * them. Copies between two arrays go through device memory of their device
 * (guest/core/arrays.c).
 */
#include <string.h>

#include "mearas/array_cu.h"
#include "mearas/log.h"
#include "rt.h"

/* ---- channel descriptors ---- */

static cudaError_t format_of(const struct cudaChannelFormatDesc *d, uint32_t *format, uint32_t *channels)
{
	int bits = d->x;
	unsigned n = (d->x > 0) + (d->y > 0) + (d->z > 0) + (d->w > 0);

	if (d->f != cudaChannelFormatKindSigned && d->f != cudaChannelFormatKindUnsigned &&
	    d->f != cudaChannelFormatKindFloat) {
		rt_log_unsupported("channel formats other than signed, unsigned and float");
		return cudaErrorNotSupported;
	}
	if ((n != 1 && n != 2 && n != 4) || (d->y && d->y != bits) || (d->z && d->z != bits) ||
	    (d->w && d->w != bits) || (n == 2 && !d->y))
		return cudaErrorInvalidChannelDescriptor;
	*channels = n;
	if (d->f == cudaChannelFormatKindFloat)
		*format = bits == 16 ? CU_AD_FORMAT_HALF : bits == 32 ? CU_AD_FORMAT_FLOAT : 0;
	else if (d->f == cudaChannelFormatKindSigned)
		*format = bits == 8 ? CU_AD_FORMAT_SIGNED_INT8 : bits == 16 ? CU_AD_FORMAT_SIGNED_INT16 : bits == 32 ? CU_AD_FORMAT_SIGNED_INT32 : 0;
	else
		*format = bits == 8 ? CU_AD_FORMAT_UNSIGNED_INT8 : bits == 16 ? CU_AD_FORMAT_UNSIGNED_INT16 : bits == 32 ? CU_AD_FORMAT_UNSIGNED_INT32 : 0;
	return *format ? cudaSuccess : cudaErrorInvalidChannelDescriptor;
}

static bool integer_format(uint32_t format)
{
	return format != CU_AD_FORMAT_HALF && format != CU_AD_FORMAT_FLOAT;
}

static struct cudaChannelFormatDesc desc_of(uint32_t format, uint32_t channels)
{
	int bits = (int)mearas_format_bytes(format) * 8;
	enum cudaChannelFormatKind f = !integer_format(format)                  ? cudaChannelFormatKindFloat
				       : format >= CU_AD_FORMAT_SIGNED_INT8 ? cudaChannelFormatKindSigned
									    : cudaChannelFormatKindUnsigned;

	return (struct cudaChannelFormatDesc){ .x = bits, .y = channels > 1 ? bits : 0, .z = channels > 2 ? bits : 0,
					       .w = channels > 2 ? bits : 0, .f = f };
}

/* ---- arrays ---- */

static cudaError_t malloc_array(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, size_t w, size_t h,
				size_t d, unsigned flags)
{
	uint32_t format, channels;
	struct rt_array *a;
	int dev;
	cudaError_t e = rt_ensure_device(&dev);

	if (e)
		return e;
	if (!array || !desc)
		return cudaErrorInvalidValue;
	e = format_of(desc, &format, &channels);
	if (e)
		return e;
	if (flags & ~MEARAS_ARRAY_FLAGS_KNOWN) {
		rt_log_unsupported("array flags other than layered, surface load/store, cubemap and texture gather");
		return cudaErrorNotSupported;
	}
	e = rt_array_create(dev, w, h, d, format, channels, flags, &a);
	if (!e)
		*array = (cudaArray_t)a;
	return e;
}

RT_EXPORT cudaError_t cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, size_t width,
				      size_t height, unsigned int flags)
{
	return rt_set_error(malloc_array(array, desc, width, height, 0, flags));
}

RT_EXPORT cudaError_t cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
					struct cudaExtent extent, unsigned int flags)
{
	return rt_set_error(malloc_array(array, desc, extent.width, extent.height, extent.depth, flags));
}

/* the live array behind h (cudaErrorInvalidResourceHandle for none) */
static cudaError_t array_of(const void *h, struct rt_array **a)
{
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	*a = rt_array_get(h);
	return *a ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

RT_EXPORT cudaError_t cudaFreeArray(cudaArray_t array)
{
	struct rt_array *a;
	cudaError_t e;

	if (!array)
		return cudaSuccess;
	e = array_of(array, &a);
	return rt_set_error(e ? e : rt_array_destroy(a));
}

RT_EXPORT cudaError_t cudaArrayGetInfo(struct cudaChannelFormatDesc *desc, struct cudaExtent *extent,
				       unsigned int *flags, cudaArray_t array)
{
	struct rt_array *a;
	cudaError_t e = array_of(array, &a);

	if (e)
		return rt_set_error(e);
	if (desc)
		*desc = desc_of(a->format, a->channels);
	if (extent)
		*extent = (struct cudaExtent){ .width = a->width, .height = a->height, .depth = a->depth };
	if (flags)
		*flags = a->flags;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaGetChannelDesc(struct cudaChannelFormatDesc *desc, cudaArray_const_t array)
{
	struct rt_array *a;
	cudaError_t e = array_of(array, &a);

	if (!e && !desc)
		e = cudaErrorInvalidValue;
	if (!e)
		*desc = desc_of(a->format, a->channels);
	return rt_set_error(e);
}

/* ---- copies ---- */

/* a copy between box b of array h and linear memory; kind: the caller's,
 * checked against the way the bytes go (the pointer decides host or device) */
static cudaError_t array_copy(const void *h, const struct rt_array_box *b, void *mem, size_t pitch,
			      size_t slice_rows, bool to_array, enum cudaMemcpyKind kind, cudaStream_t s, bool async)
{
	struct rt_array *a;
	cudaError_t e = array_of(h, &a);

	if (e)
		return e;
	if ((unsigned)kind > cudaMemcpyDefault || kind == cudaMemcpyHostToHost ||
	    (to_array && kind == cudaMemcpyDeviceToHost) || (!to_array && kind == cudaMemcpyHostToDevice))
		return cudaErrorInvalidMemcpyDirection;
	return rt_array_copy(a, b, mem, pitch, slice_rows, to_array, s, async);
}

static cudaError_t copy_2d(const void *h, size_t x, size_t y, void *mem, size_t pitch, size_t width, size_t height,
			   bool to_array, enum cudaMemcpyKind kind, cudaStream_t s, bool async)
{
	struct rt_array_box b = { .x = x, .y = y, .width = width, .height = height, .depth = 1 };

	return array_copy(h, &b, mem, height > 1 ? pitch : width, height, to_array, kind, s, async);
}

RT_EXPORT cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
					  size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind)
{
	return rt_set_error(copy_2d(dst, wOffset, hOffset, (void *)src, spitch, width, height, true, kind, 0, false));
}

RT_EXPORT cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
					       size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind,
					       cudaStream_t stream)
{
	return rt_set_error(
		copy_2d(dst, wOffset, hOffset, (void *)src, spitch, width, height, true, kind, stream, true));
}

RT_EXPORT cudaError_t cudaMemcpy2DFromArray(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
					    size_t hOffset, size_t width, size_t height, enum cudaMemcpyKind kind)
{
	return rt_set_error(copy_2d(src, wOffset, hOffset, dst, dpitch, width, height, false, kind, 0, false));
}

RT_EXPORT cudaError_t cudaMemcpy2DFromArrayAsync(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
						 size_t hOffset, size_t width, size_t height,
						 enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return rt_set_error(copy_2d(src, wOffset, hOffset, dst, dpitch, width, height, false, kind, stream, true));
}

/* the deprecated count-byte copies: the rest of row hOffset from wOffset,
 * or whole rows from the row's start */
static cudaError_t copy_count(const void *h, size_t x, size_t y, void *mem, size_t count, bool to_array,
			      enum cudaMemcpyKind kind, cudaStream_t s, bool async)
{
	struct rt_array *a;
	uint64_t row;
	cudaError_t e = array_of(h, &a);

	if (e)
		return e;
	row = a->width * a->elem;
	if (x + count <= row)
		return copy_2d(h, x, y, mem, count, count, 1, to_array, kind, s, async);
	if (x == 0 && count % row == 0)
		return copy_2d(h, 0, y, mem, row, row, count / row, to_array, kind, s, async);
	log_info("cudaMemcpy%sArray of %zu bytes at byte %zu of a row of %llu bytes: only whole rows may follow "
		 "the first", to_array ? "To" : "From", count, x, (unsigned long long)row);
	return cudaErrorInvalidValue;
}

RT_EXPORT cudaError_t cudaMemcpyToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
					size_t count, enum cudaMemcpyKind kind)
{
	return rt_set_error(copy_count(dst, wOffset, hOffset, (void *)src, count, true, kind, 0, false));
}

RT_EXPORT cudaError_t cudaMemcpyToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
					     size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return rt_set_error(copy_count(dst, wOffset, hOffset, (void *)src, count, true, kind, stream, true));
}

RT_EXPORT cudaError_t cudaMemcpyFromArray(void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
					  size_t count, enum cudaMemcpyKind kind)
{
	return rt_set_error(copy_count(src, wOffset, hOffset, dst, count, false, kind, 0, false));
}

RT_EXPORT cudaError_t cudaMemcpyFromArrayAsync(void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
					       size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return rt_set_error(copy_count(src, wOffset, hOffset, dst, count, false, kind, stream, true));
}

/* between two arrays of one device: box b of src (bytes, rows, slices) to
 * dst from byte dx of row dy of slice dz */
static cudaError_t two_arrays(const void *dst, size_t dx, size_t dy, size_t dz, const void *src,
			      struct rt_array_box b, enum cudaMemcpyKind kind, cudaStream_t s)
{
	struct rt_array *d, *a;
	cudaError_t e = array_of(dst, &d);

	if (!e)
		e = array_of(src, &a);
	if (e)
		return e;
	if (kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
		return cudaErrorInvalidMemcpyDirection;
	return rt_array_copy_arrays(d, dx, dy, dz, a, &b, s);
}

RT_EXPORT cudaError_t cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
					       cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc,
					       size_t width, size_t height, enum cudaMemcpyKind kind)
{
	struct rt_array_box b = { .x = wOffsetSrc, .y = hOffsetSrc, .width = width, .height = height, .depth = 1 };

	return rt_set_error(two_arrays(dst, wOffsetDst, hOffsetDst, 0, src, b, kind, 0));
}

RT_EXPORT cudaError_t cudaMemcpyArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
					     cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc, size_t count,
					     enum cudaMemcpyKind kind)
{
	struct rt_array_box b = { .x = wOffsetSrc, .y = hOffsetSrc, .width = count, .height = 1, .depth = 1 };

	/* the deprecated count form: within one row of each */
	return rt_set_error(two_arrays(dst, wOffsetDst, hOffsetDst, 0, src, b, kind, 0));
}

/* linear to linear: slice by slice as 2D copies */
static cudaError_t copy_3d_linear(const struct cudaMemcpy3DParms *p, cudaStream_t s, bool async)
{
	const struct cudaPitchedPtr *sp = &p->srcPtr, *dp = &p->dstPtr;
	cudaError_t e = cudaSuccess;

	if (p->extent.depth > 1 && (sp->ysize < p->extent.height || dp->ysize < p->extent.height))
		return cudaErrorInvalidValue;
	for (size_t z = 0; z < p->extent.depth && !e; z++) {
		const char *src = (const char *)sp->ptr + ((p->srcPos.z + z) * sp->ysize + p->srcPos.y) * sp->pitch +
				  p->srcPos.x;
		char *dst = (char *)dp->ptr + ((p->dstPos.z + z) * dp->ysize + p->dstPos.y) * dp->pitch + p->dstPos.x;

		e = rt_memcpy_2d(dst, dp->pitch, src, sp->pitch, p->extent.width, p->extent.height, p->kind, s, async);
	}
	return e;
}

static cudaError_t copy_3d(const struct cudaMemcpy3DParms *p, cudaStream_t s, bool async)
{
	struct rt_array *a;
	struct rt_array_box b;
	const struct cudaPitchedPtr *lp;
	const struct cudaPos *lpos;
	bool to_array;
	char *mem;
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	if (!p)
		return cudaErrorInvalidValue;
	if (p->srcArray && p->dstArray) {
		/* positions and the width in elements of the source's format */
		e = array_of(p->srcArray, &a);
		return e ? e
			 : two_arrays(p->dstArray, p->dstPos.x * a->elem, p->dstPos.y, p->dstPos.z, p->srcArray,
				      (struct rt_array_box){ .x = p->srcPos.x * a->elem, .y = p->srcPos.y,
							     .z = p->srcPos.z, .width = p->extent.width * a->elem,
							     .height = p->extent.height, .depth = p->extent.depth },
				      p->kind, s);
	}
	if (!p->srcArray && !p->dstArray)
		return copy_3d_linear(p, s, async);
	to_array = p->dstArray != NULL;
	e = array_of(to_array ? (const void *)p->dstArray : (const void *)p->srcArray, &a);
	if (e)
		return e;
	lp = to_array ? &p->srcPtr : &p->dstPtr;
	lpos = to_array ? &p->srcPos : &p->dstPos;
	/* with an array on a side, widths and the array's x are in its elements;
	 * the linear side's position is in bytes */
	b = (struct rt_array_box){ .x = (to_array ? p->dstPos.x : p->srcPos.x) * a->elem,
				   .y = to_array ? p->dstPos.y : p->srcPos.y, .z = to_array ? p->dstPos.z : p->srcPos.z,
				   .width = p->extent.width * a->elem, .height = p->extent.height,
				   .depth = p->extent.depth };
	mem = (char *)lp->ptr + (lpos->z * lp->ysize + lpos->y) * lp->pitch + lpos->x;
	return array_copy(a, &b, mem, lp->pitch, lp->ysize, to_array, p->kind, s, async);
}

RT_EXPORT cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms *p)
{
	return rt_set_error(copy_3d(p, 0, false));
}

RT_EXPORT cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t stream)
{
	return rt_set_error(copy_3d(p, stream, true));
}

/* ---- texture and surface objects ---- */

static cudaError_t resource_in(const struct cudaResourceDesc *d, int dev, struct mearas_tex_args *t,
			       struct rt_array **a)
{
	cudaError_t e;

	if (d->flags)
		return cudaErrorInvalidValue;
	switch (d->resType) {
	case cudaResourceTypeArray:
		e = array_of(d->res.array.array, a);
		if (!e && (*a)->vgpu != dev)
			e = cudaErrorInvalidResourceHandle;
		if (!e) {
			t->res = MEARAS_RES_ARRAY;
			t->array = (*a)->id;
		}
		return e;
	case cudaResourceTypeLinear:
		t->res = MEARAS_RES_LINEAR;
		t->dptr = (uint64_t)(uintptr_t)d->res.linear.devPtr;
		t->size = d->res.linear.sizeInBytes;
		return format_of(&d->res.linear.desc, &t->format, &t->channels);
	case cudaResourceTypePitch2D:
		t->res = MEARAS_RES_PITCH2D;
		t->dptr = (uint64_t)(uintptr_t)d->res.pitch2D.devPtr;
		t->width = d->res.pitch2D.width;
		t->height = d->res.pitch2D.height;
		t->pitch = d->res.pitch2D.pitchInBytes;
		return format_of(&d->res.pitch2D.desc, &t->format, &t->channels);
	case cudaResourceTypeMipmappedArray:
		rt_log_unsupported("texture objects on mipmapped arrays");
		return cudaErrorNotSupported;
	default:
		return cudaErrorInvalidValue;
	}
}

static void fill_resource(void *out, const struct mearas_tex_args *t, struct rt_array *a)
{
	struct cudaResourceDesc *d = out;

	memset(d, 0, sizeof(*d));
	if (t->res == MEARAS_RES_ARRAY) {
		d->resType = cudaResourceTypeArray;
		d->res.array.array = (cudaArray_t)a;
	} else if (t->res == MEARAS_RES_LINEAR) {
		d->resType = cudaResourceTypeLinear;
		d->res.linear.devPtr = (void *)(uintptr_t)t->dptr;
		d->res.linear.desc = desc_of(t->format, t->channels);
		d->res.linear.sizeInBytes = t->size;
	} else {
		d->resType = cudaResourceTypePitch2D;
		d->res.pitch2D.devPtr = (void *)(uintptr_t)t->dptr;
		d->res.pitch2D.desc = desc_of(t->format, t->channels);
		d->res.pitch2D.width = t->width;
		d->res.pitch2D.height = t->height;
		d->res.pitch2D.pitchInBytes = t->pitch;
	}
}

/* the driver's texture flags for a runtime description (element-type reads
 * of integer formats read integers) */
static uint32_t tex_flags(const struct cudaTextureDesc *d, const struct mearas_tex_args *t, const struct rt_array *a)
{
	uint32_t format = a ? a->format : t->format;

	return (d->readMode == cudaReadModeElementType && integer_format(format) ? CU_TRSF_READ_AS_INTEGER : 0) |
	       (d->normalizedCoords ? CU_TRSF_NORMALIZED_COORDINATES : 0) | (d->sRGB ? CU_TRSF_SRGB : 0) |
	       (d->disableTrilinearOptimization ? CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION : 0) |
	       (d->seamlessCubemap ? CU_TRSF_SEAMLESS_CUBEMAP : 0);
}

/* the current device and the resource of an object about to be made on it */
static cudaError_t object_resource(const void *out, const struct cudaResourceDesc *res, int *dev,
				   struct mearas_tex_args *t, struct rt_array **a)
{
	cudaError_t e = rt_ensure_device(dev);

	if (e)
		return e;
	if (!out || !res)
		return cudaErrorInvalidValue;
	memset(t, 0, sizeof(*t));
	*a = NULL;
	return resource_in(res, *dev, t, a);
}

static cudaError_t create_texture(cudaTextureObject_t *out, const struct cudaResourceDesc *res,
				  const struct cudaTextureDesc *tex, const struct cudaResourceViewDesc *view)
{
	struct mearas_tex_args t;
	struct rt_array *a;
	uint64_t value;
	int dev;
	cudaError_t e = object_resource(out, res, &dev, &t, &a);

	if (!e && !tex)
		e = cudaErrorInvalidValue;
	if (e)
		return e;
	MEARAS_TEX_DESC_IN(&t, tex);
	t.flags = tex_flags(tex, &t, a);
	if (view)
		MEARAS_TEX_VIEW_IN(&t, view);
	e = rt_tex_create(dev, &t, a, &value);
	if (!e)
		*out = value;
	return e;
}

RT_EXPORT cudaError_t cudaCreateTextureObject(cudaTextureObject_t *pTexObject, const struct cudaResourceDesc *pResDesc,
					      const struct cudaTextureDesc *pTexDesc,
					      const struct cudaResourceViewDesc *pResViewDesc)
{
	return rt_set_error(create_texture(pTexObject, pResDesc, pTexDesc, pResViewDesc));
}

RT_EXPORT cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject)
{
	cudaError_t e = rt_ensure();

	return rt_set_error(e ? e : rt_texobj_destroy(texObject, false));
}

/* the Get*Desc calls: the object's description as fill writes it */
static cudaError_t describe(uint64_t value, bool surface, void *out,
			    void (*fill)(void *out, const struct mearas_tex_args *t, struct rt_array *a))
{
	cudaError_t e = rt_ensure();

	return rt_set_error(e ? e : rt_texobj_describe(value, surface, out, fill));
}

static void fill_texture(void *out, const struct mearas_tex_args *t, struct rt_array *a)
{
	struct cudaTextureDesc *d = out;

	MEARAS_TEX_DESC_OUT(d, t);
	d->readMode = (t->flags & CU_TRSF_READ_AS_INTEGER) || !integer_format(a ? a->format : t->format) ? cudaReadModeElementType
										       : cudaReadModeNormalizedFloat;
	d->sRGB = !!(t->flags & CU_TRSF_SRGB);
	d->normalizedCoords = !!(t->flags & CU_TRSF_NORMALIZED_COORDINATES);
	d->disableTrilinearOptimization = !!(t->flags & CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION);
	d->seamlessCubemap = !!(t->flags & CU_TRSF_SEAMLESS_CUBEMAP);
}

static void fill_view(void *out, const struct mearas_tex_args *t, struct rt_array *a)
{
	(void)a;
	MEARAS_TEX_VIEW_OUT((struct cudaResourceViewDesc *)out, t);
}

RT_EXPORT cudaError_t cudaGetTextureObjectResourceDesc(struct cudaResourceDesc *pResDesc, cudaTextureObject_t texObject)
{
	return describe(texObject, false, pResDesc, fill_resource);
}

RT_EXPORT cudaError_t cudaGetTextureObjectTextureDesc(struct cudaTextureDesc *pTexDesc, cudaTextureObject_t texObject)
{
	return describe(texObject, false, pTexDesc, fill_texture);
}

RT_EXPORT cudaError_t cudaGetTextureObjectResourceViewDesc(struct cudaResourceViewDesc *pResViewDesc,
							   cudaTextureObject_t texObject)
{
	return describe(texObject, false, pResViewDesc, fill_view);
}

static cudaError_t create_surface(cudaSurfaceObject_t *out, const struct cudaResourceDesc *res)
{
	struct mearas_tex_args t;
	struct rt_array *a;
	uint64_t value;
	int dev;
	cudaError_t e = res && res->resType != cudaResourceTypeArray ? cudaErrorInvalidValue
								     : object_resource(out, res, &dev, &t, &a);

	if (!e)
		e = rt_surf_create(a, &value);
	if (!e)
		*out = value;
	return e;
}

RT_EXPORT cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t *pSurfObject, const struct cudaResourceDesc *pResDesc)
{
	return rt_set_error(create_surface(pSurfObject, pResDesc));
}

RT_EXPORT cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t surfObject)
{
	cudaError_t e = rt_ensure();

	return rt_set_error(e ? e : rt_texobj_destroy(surfObject, true));
}

RT_EXPORT cudaError_t cudaGetSurfaceObjectResourceDesc(struct cudaResourceDesc *pResDesc,
						       cudaSurfaceObject_t surfObject)
{
	return describe(surfObject, true, pResDesc, fill_resource);
}
