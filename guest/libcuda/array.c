// SPDX-License-Identifier: MIT
/*
 * CUDA arrays, 3D copies, texture objects and surface objects
 * (cuArray*, cuMemcpy3D*, cuMemcpy*A*, cuTexObject*, cuSurfObject*) over
 * guest/core/arrays.c. A CUarray points at the core's struct rt_array, as a
 * cudaArray_t of mearas's runtime does. Mipmapped arrays and the formats
 * mearas/array_cu.h does not carry are NotSupported, with a log line naming
 * them; copies between two arrays go through device memory of their device
 * (guest/core/arrays.c).
 */
#include <string.h>

#include "mearas/array_cu.h"
#include "mearas/log.h"
#include "ptds.h"
#include "cu.h"

/* the current context's vGPU */
static CUresult current_vgpu(int *vgpu)
{
	struct cu_ctx *c;
	CUresult r = cu_current_ctx(&c);

	if (!r)
		*vgpu = c->vgpu;
	return r;
}

static CUresult array_of(CUarray h, struct rt_array **a)
{
	CUresult r = cu_ready();

	if (r)
		return r;
	*a = rt_array_get(h);
	return *a ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
}

/* NotSupported for what mearas does not carry, with its name */
static CUresult carried(const char *what, uint32_t format, uint32_t flags)
{
	if (!mearas_format_bytes(format)) {
		log_warn("%s: array format %#x is not supported by mearas (8/16/32-bit integers, half and float are)",
			 what, format);
		return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
	}
	if (flags & ~MEARAS_ARRAY_FLAGS_KNOWN) {
		log_warn("%s: array flags %#x are not supported by mearas (layered, surface, cubemap and gather "
			 "arrays are)", what, flags);
		return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
	}
	return CUDA_SUCCESS;
}

static CUresult array_create(CUarray *out, size_t w, size_t h, size_t d, CUarray_format format, unsigned channels,
			     unsigned flags, const char *what)
{
	struct rt_array *a;
	int vgpu;
	CUresult r = current_vgpu(&vgpu);

	if (r)
		return r;
	if (!out)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	r = carried(what, (uint32_t)format, flags);
	if (r)
		return r;
	r = cu_result(rt_array_create(vgpu, w, h, d, (uint32_t)format, channels, flags, &a));
	if (!r)
		*out = (CUarray)a;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *d)
{
	if (!d)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	return array_create(pHandle, d->Width, d->Height, 0, d->Format, d->NumChannels, 0, "cuArrayCreate");
}

CU_EXPORT CUresult CUDAAPI cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	if (!d)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	return array_create(pHandle, d->Width, d->Height, d->Depth, d->Format, d->NumChannels, d->Flags,
			    "cuArray3DCreate");
}

CU_EXPORT CUresult CUDAAPI cuArrayDestroy(CUarray hArray)
{
	struct rt_array *a;
	CUresult r = array_of(hArray, &a);

	return r ? r : cu_result(rt_array_destroy(a));
}

CU_EXPORT CUresult CUDAAPI cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *d, CUarray hArray)
{
	struct rt_array *a;
	CUresult r = cu_need(array_of(hArray, &a), d);

	if (r)
		return r;
	*d = (CUDA_ARRAY_DESCRIPTOR){ .Width = a->width, .Height = a->height, .Format = (CUarray_format)a->format,
				      .NumChannels = a->channels };
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *d, CUarray hArray)
{
	struct rt_array *a;
	CUresult r = cu_need(array_of(hArray, &a), d);

	if (r)
		return r;
	*d = (CUDA_ARRAY3D_DESCRIPTOR){ .Width = a->width, .Height = a->height, .Depth = a->depth,
					.Format = (CUarray_format)a->format, .NumChannels = a->channels,
					.Flags = a->flags };
	return CUDA_SUCCESS;
}

/* ---- copies ---- */

/* an array copy's context and stream: a current context, a known stream */
static CUresult copy_context(CUstream s)
{
	if (!cu_current())
		return CU_REFUSE(CUDA_ERROR_INVALID_CONTEXT);
	return cu_stream_known(s) ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
}

static CUresult array_copy(struct rt_array *a, const struct rt_array_box *b, void *mem, size_t pitch,
			   size_t slice_rows, bool to_array, CUstream s, bool async)
{
	CUresult r = copy_context(s);

	return r ? r : cu_result(rt_array_copy(a, b, mem, pitch, slice_rows, to_array, (cudaStream_t)s, async));
}

/* cuMemcpy{HtoA,AtoH,DtoA,AtoD}: n bytes at byte off of a one-row array */
static CUresult copy_1d(CUarray h, size_t off, void *mem, size_t n, bool to_array, CUstream s, bool async)
{
	struct rt_array_box b = { .x = off, .width = n, .height = 1, .depth = 1 };
	struct rt_array *a;
	CUresult r = array_of(h, &a);

	if (r)
		return r;
	if (a->height > 1 || a->depth > 1) {
		log_info("1D array copy into an array of %llu rows and %llu slices: the offset calls take one-row "
			 "arrays", (unsigned long long)a->height, (unsigned long long)a->depth);
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
	return array_copy(a, &b, mem, n, 1, to_array, s, async);
}

#define PTR(d) ((void *)(uintptr_t)(d))

PTDS_PAIR(cuMemcpyHtoA_v2, _ptds, (CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount),
	  copy_1d(dstArray, dstOffset, (void *)srcHost, ByteCount, true, NULL, false))
PTDS_PAIR(cuMemcpyAtoH_v2, _ptds, (void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount),
	  copy_1d(srcArray, srcOffset, dstHost, ByteCount, false, NULL, false))
PTDS_PAIR(cuMemcpyDtoA_v2, _ptds, (CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount),
	  copy_1d(dstArray, dstOffset, PTR(srcDevice), ByteCount, true, NULL, false))
PTDS_PAIR(cuMemcpyAtoD_v2, _ptds, (CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount),
	  copy_1d(srcArray, srcOffset, PTR(dstDevice), ByteCount, false, NULL, false))
PTDS_PAIR(cuMemcpyHtoAAsync_v2, _ptsz,
	  (CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount, CUstream hStream),
	  copy_1d(dstArray, dstOffset, (void *)srcHost, ByteCount, true, hStream, true))
PTDS_PAIR(cuMemcpyAtoHAsync_v2, _ptsz,
	  (void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount, CUstream hStream),
	  copy_1d(srcArray, srcOffset, dstHost, ByteCount, false, hStream, true))

/* the first byte of a linear side (host or device memory) at x, y, z */
static void *linear_at(CUmemorytype type, const void *host, CUdeviceptr dev, size_t x, size_t y, size_t z,
		       size_t pitch, size_t rows)
{
	const uint8_t *base = type == CU_MEMORYTYPE_HOST ? host : (const uint8_t *)(uintptr_t)dev;

	return (void *)(base + (z * rows + y) * pitch + x);
}

/* between two arrays of one device: the box (x, y, z, width bytes, height
 * rows, depth slices) of src to dst from (dx, dy, dz) */
static CUresult two_arrays(CUarray dst, size_t dx, size_t dy, size_t dz, CUarray src, struct rt_array_box b,
			   CUstream s)
{
	struct rt_array *d = rt_array_get(dst), *a = rt_array_get(src);

	CUresult r;

	if (!d || !a)
		return CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
	r = copy_context(s);
	return r ? r : cu_result(rt_array_copy_arrays(d, dx, dy, dz, a, &b, (cudaStream_t)s));
}

static CUresult copy_atoa(CUarray dst, size_t doff, CUarray src, size_t soff, size_t n)
{
	CUresult r = cu_ready();

	if (r)
		return r;
	return two_arrays(dst, doff, 0, 0, src,
			  (struct rt_array_box){ .x = soff, .width = n, .height = 1, .depth = 1 }, NULL);
}

PTDS_PAIR(cuMemcpyAtoA_v2, _ptds,
	  (CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset, size_t ByteCount),
	  copy_atoa(dstArray, dstOffset, srcArray, srcOffset, ByteCount))

CUresult cu_copy_2d_array(const CUDA_MEMCPY2D *p, CUstream s, bool async)
{
	bool to_array = p->dstMemoryType == CU_MEMORYTYPE_ARRAY;
	struct rt_array *a = rt_array_get(to_array ? p->dstArray : p->srcArray);
	struct rt_array_box b = { .x = to_array ? p->dstXInBytes : p->srcXInBytes, .y = to_array ? p->dstY : p->srcY,
				  .width = p->WidthInBytes, .height = p->Height, .depth = 1 };
	size_t pitch = to_array ? p->srcPitch : p->dstPitch;
	void *mem;

	if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY && to_array)
		return two_arrays(p->dstArray, p->dstXInBytes, p->dstY, 0, p->srcArray,
				  (struct rt_array_box){ .x = p->srcXInBytes, .y = p->srcY, .width = p->WidthInBytes,
							 .height = p->Height, .depth = 1 }, s);
	if (!a)
		return CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
	mem = to_array ? linear_at(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, 0, pitch, 0)
		       : linear_at(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, 0, pitch, 0);
	/* a pitch of one row may be anything */
	return array_copy(a, &b, mem, p->Height > 1 ? pitch : p->WidthInBytes, p->Height, to_array, s, async);
}

/* linear to linear, slice by slice as 2D copies (Y carries the slice) */
static CUresult copy_3d_linear(const CUDA_MEMCPY3D *p, CUstream s, bool async)
{
	CUresult r = CUDA_SUCCESS;

	if (p->Depth > 1 && (p->srcHeight < p->Height || p->dstHeight < p->Height))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	for (size_t z = 0; z < p->Depth && !r; z++) {
		CUDA_MEMCPY2D c = {
			.srcXInBytes = p->srcXInBytes, .srcY = p->srcY + (p->srcZ + z) * p->srcHeight,
			.srcMemoryType = p->srcMemoryType, .srcHost = p->srcHost, .srcDevice = p->srcDevice,
			.srcPitch = p->srcPitch, .dstXInBytes = p->dstXInBytes,
			.dstY = p->dstY + (p->dstZ + z) * p->dstHeight, .dstMemoryType = p->dstMemoryType,
			.dstHost = p->dstHost, .dstDevice = p->dstDevice, .dstPitch = p->dstPitch,
			.WidthInBytes = p->WidthInBytes, .Height = p->Height,
		};

		r = cu_copy_2d(&c, s, async);
	}
	return r;
}

static CUresult copy_3d(const CUDA_MEMCPY3D *p, CUstream s, bool async)
{
	bool to_array, from_array;
	struct rt_array *a;
	struct rt_array_box b;
	void *mem;
	CUresult r = cu_ready();

	if (r)
		return r;
	if (!p)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (p->srcLOD || p->dstLOD || p->reserved0 || p->reserved1) {
		log_info("cuMemcpy3D: a mipmap level or reserved field set: invalid value");
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
	to_array = p->dstMemoryType == CU_MEMORYTYPE_ARRAY;
	from_array = p->srcMemoryType == CU_MEMORYTYPE_ARRAY;
	if (to_array && from_array)
		return two_arrays(p->dstArray, p->dstXInBytes, p->dstY, p->dstZ, p->srcArray,
				  (struct rt_array_box){ .x = p->srcXInBytes, .y = p->srcY, .z = p->srcZ,
							 .width = p->WidthInBytes, .height = p->Height,
							 .depth = p->Depth }, s);
	if (!to_array && !from_array)
		return copy_3d_linear(p, s, async);
	a = rt_array_get(to_array ? p->dstArray : p->srcArray);
	if (!a)
		return CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
	b = (struct rt_array_box){ .x = to_array ? p->dstXInBytes : p->srcXInBytes, .y = to_array ? p->dstY : p->srcY,
				   .z = to_array ? p->dstZ : p->srcZ, .width = p->WidthInBytes, .height = p->Height,
				   .depth = p->Depth };
	if (to_array) {
		mem = linear_at(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, p->srcZ,
				p->srcPitch, p->srcHeight);
		return array_copy(a, &b, mem, p->srcPitch, p->srcHeight, true, s, async);
	}
	mem = linear_at(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, p->dstZ, p->dstPitch,
			p->dstHeight);
	return array_copy(a, &b, mem, p->dstPitch, p->dstHeight, false, s, async);
}

PTDS_PAIR(cuMemcpy3D_v2, _ptds, (const CUDA_MEMCPY3D *pCopy), copy_3d(pCopy, NULL, false))
PTDS_PAIR(cuMemcpy3DAsync_v2, _ptsz, (const CUDA_MEMCPY3D *pCopy, CUstream hStream), copy_3d(pCopy, hStream, true))

/* ---- texture and surface objects ---- */

/* the array of a resource, on the current context's vGPU */
static CUresult resource_array(CUarray h, int vgpu, struct rt_array **a)
{
	*a = rt_array_get(h);
	if (!*a)
		return CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
	if ((*a)->vgpu != vgpu) {
		log_info("texture or surface object on an array of another device: invalid handle");
		return CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
	}
	return CUDA_SUCCESS;
}

static CUresult resource_in(const CUDA_RESOURCE_DESC *d, int vgpu, struct mearas_tex_args *t, struct rt_array **a)
{
	if (d->flags)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	t->res = (uint32_t)d->resType;
	switch (d->resType) {
	case CU_RESOURCE_TYPE_ARRAY: {
		CUresult r = resource_array(d->res.array.hArray, vgpu, a);

		if (!r)
			t->array = (*a)->id;
		return r;
	}
	case CU_RESOURCE_TYPE_LINEAR:
		t->dptr = d->res.linear.devPtr;
		t->format = (uint32_t)d->res.linear.format;
		t->channels = d->res.linear.numChannels;
		t->size = d->res.linear.sizeInBytes;
		return carried("cuTexObjectCreate", t->format, 0);
	case CU_RESOURCE_TYPE_PITCH2D:
		t->dptr = d->res.pitch2D.devPtr;
		t->format = (uint32_t)d->res.pitch2D.format;
		t->channels = d->res.pitch2D.numChannels;
		t->width = d->res.pitch2D.width;
		t->height = d->res.pitch2D.height;
		t->pitch = d->res.pitch2D.pitchInBytes;
		return carried("cuTexObjectCreate", t->format, 0);
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
		log_warn("texture objects on mipmapped arrays are not supported by mearas");
		return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
	default:
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
}

CU_EXPORT CUresult CUDAAPI cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc,
					     const CUDA_TEXTURE_DESC *pTexDesc,
					     const CUDA_RESOURCE_VIEW_DESC *pResViewDesc)
{
	struct mearas_tex_args t;
	struct rt_array *a = NULL;
	uint64_t value;
	int vgpu;
	CUresult r = cu_need(current_vgpu(&vgpu), pTexObject && pResDesc && pTexDesc);

	if (r)
		return r;
	memset(&t, 0, sizeof(t));
	r = resource_in(pResDesc, vgpu, &t, &a);
	if (r)
		return r;
	MEARAS_TEX_DESC_IN(&t, pTexDesc);
	t.flags = pTexDesc->flags;
	if (pResViewDesc)
		MEARAS_TEX_VIEW_IN(&t, pResViewDesc);
	r = cu_result(rt_tex_create(vgpu, &t, a, &value));
	if (!r)
		*pTexObject = value;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuTexObjectDestroy(CUtexObject texObject)
{
	CUresult r = cu_ready();

	return r ? r : cu_result(rt_texobj_destroy(texObject, false));
}

/* the Get*Desc calls: the object's description as fill writes it */
static CUresult describe(uint64_t value, bool surface, void *out,
			 void (*fill)(void *out, const struct mearas_tex_args *t, struct rt_array *a))
{
	CUresult r = cu_ready();

	return r ? r : cu_result(rt_texobj_describe(value, surface, out, fill));
}

static void fill_resource(void *out, const struct mearas_tex_args *t, struct rt_array *a)
{
	mearas_tex_cu_resource(t, (CUarray)a, out);
}

static void fill_texture(void *out, const struct mearas_tex_args *t, struct rt_array *a)
{
	CUDA_TEXTURE_DESC *d = out;

	(void)a;
	MEARAS_TEX_DESC_OUT(d, t);
	d->flags = t->flags;
}

static void fill_view(void *out, const struct mearas_tex_args *t, struct rt_array *a)
{
	(void)a;
	MEARAS_TEX_VIEW_OUT((CUDA_RESOURCE_VIEW_DESC *)out, t);
}

CU_EXPORT CUresult CUDAAPI cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUtexObject texObject)
{
	return describe(texObject, false, pResDesc, fill_resource);
}

CU_EXPORT CUresult CUDAAPI cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC *pTexDesc, CUtexObject texObject)
{
	return describe(texObject, false, pTexDesc, fill_texture);
}

CU_EXPORT CUresult CUDAAPI cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC *pResViewDesc,
							  CUtexObject texObject)
{
	return describe(texObject, false, pResViewDesc, fill_view);
}

CU_EXPORT CUresult CUDAAPI cuSurfObjectCreate(CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *pResDesc)
{
	struct rt_array *a;
	uint64_t value;
	int vgpu;
	CUresult r = cu_need(current_vgpu(&vgpu), pSurfObject && pResDesc);

	if (r)
		return r;
	if (pResDesc->resType != CU_RESOURCE_TYPE_ARRAY || pResDesc->flags)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	r = resource_array(pResDesc->res.array.hArray, vgpu, &a);
	if (!r)
		r = cu_result(rt_surf_create(a, &value));
	if (!r)
		*pSurfObject = value;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuSurfObjectDestroy(CUsurfObject surfObject)
{
	CUresult r = cu_ready();

	return r ? r : cu_result(rt_texobj_destroy(surfObject, true));
}

CU_EXPORT CUresult CUDAAPI cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUsurfObject surfObject)
{
	return describe(surfObject, true, pResDesc, fill_resource);
}
