/* SPDX-License-Identifier: MIT */
/*
 * CUDA arrays and texture objects against cuda.h (include/mearas/array.h
 * has the record's side): the formats mearas carries, and the driver's
 * texture structs to and from a texture record's arguments. The field-name
 * macros serve the driver's structs and the runtime's alike (their texture
 * and view descriptions name the same fields), so each front end and the
 * GPU device convert with one definition.
 */
#ifndef MEARAS_ARRAY_CU_H
#define MEARAS_ARRAY_CU_H

#include <string.h>

#include <cuda.h>

#include "mearas/array.h"

/* Bytes of one channel of a CUarray_format mearas carries (8-, 16- and
 * 32-bit integers, half, float), 0 for the others (block-compressed, YUV,
 * normalized packed formats). */
static inline unsigned mearas_format_bytes(uint32_t format)
{
	switch (format) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		return 1;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		return 2;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		return 4;
	default:
		return 0;
	}
}

/* Bytes of one element of `channels` channels of format, 0 unless mearas
 * carries both (1, 2 or 4 channels). */
static inline unsigned mearas_elem_bytes(uint32_t format, uint32_t channels)
{
	return channels == 1 || channels == 2 || channels == 4 ? mearas_format_bytes(format) * channels : 0;
}

/* The fields a texture description (CUDA_TEXTURE_DESC, cudaTextureDesc)
 * and a resource view (CUDA_RESOURCE_VIEW_DESC, cudaResourceViewDesc)
 * share with struct mearas_tex_args: X(args field, CUDA's field). Flags are
 * each front end's. */
#define MEARAS_TEX_DESC_FIELDS(X)                                                                      \
	X(address[0], addressMode[0]) X(address[1], addressMode[1]) X(address[2], addressMode[2])      \
	X(filter, filterMode) X(max_anisotropy, maxAnisotropy) X(mip_filter, mipmapFilterMode)         \
	X(mip_bias, mipmapLevelBias) X(mip_min, minMipmapLevelClamp) X(mip_max, maxMipmapLevelClamp)   \
	X(border[0], borderColor[0]) X(border[1], borderColor[1]) X(border[2], borderColor[2])         \
	X(border[3], borderColor[3])
#define MEARAS_TEX_VIEW_FIELDS(X)                                                                      \
	X(view_format, format) X(view_width, width) X(view_height, height) X(view_depth, depth)        \
	X(view_first_mip, firstMipmapLevel) X(view_last_mip, lastMipmapLevel)                          \
	X(view_first_layer, firstLayer) X(view_last_layer, lastLayer)
#define MEARAS_FIELD_IN_(ours, theirs) t_->ours = d_->theirs;
#define MEARAS_FIELD_OUT_(ours, theirs) d_->theirs = t_->ours;
/* first (a statement on t_ and d_), then each field of FIELDS moved by MOVE
 * (MEARAS_FIELD_IN_: into t, _OUT_: into d) */
#define MEARAS_TEX_FIELDS_MOVE(FIELDS, MOVE, first, t, d)                                              \
	do {                                                                                           \
		__typeof__(t) t_ = (t);                                                                \
		__typeof__(d) d_ = (d);                                                                \
		first;                                                                                 \
		FIELDS(MOVE)                                                                           \
	} while (0)

/* struct mearas_tex_args *t from a texture description or a resource view
 * d (has_view set), and t's back into d (zeroed first) */
#define MEARAS_TEX_DESC_IN(t, d) MEARAS_TEX_FIELDS_MOVE(MEARAS_TEX_DESC_FIELDS, MEARAS_FIELD_IN_, (void)0, t, d)
#define MEARAS_TEX_DESC_OUT(d, t) \
	MEARAS_TEX_FIELDS_MOVE(MEARAS_TEX_DESC_FIELDS, MEARAS_FIELD_OUT_, memset(d_, 0, sizeof(*d_)), t, d)
#define MEARAS_TEX_VIEW_IN(t, d) MEARAS_TEX_FIELDS_MOVE(MEARAS_TEX_VIEW_FIELDS, MEARAS_FIELD_IN_, t_->has_view = 1, t, d)
#define MEARAS_TEX_VIEW_OUT(d, t) \
	MEARAS_TEX_FIELDS_MOVE(MEARAS_TEX_VIEW_FIELDS, MEARAS_FIELD_OUT_, memset(d_, 0, sizeof(*d_)), t, d)

/* the driver's resource description of t, its array (if any) being arr */
static inline void mearas_tex_cu_resource(const struct mearas_tex_args *t, CUarray arr, CUDA_RESOURCE_DESC *d)
{
	memset(d, 0, sizeof(*d));
	d->resType = (CUresourcetype)t->res;
	if (t->res == MEARAS_RES_ARRAY) {
		d->res.array.hArray = arr;
	} else if (t->res == MEARAS_RES_LINEAR) {
		d->res.linear.devPtr = (CUdeviceptr)t->dptr;
		d->res.linear.format = (CUarray_format)t->format;
		d->res.linear.numChannels = t->channels;
		d->res.linear.sizeInBytes = t->size;
	} else {
		d->res.pitch2D.devPtr = (CUdeviceptr)t->dptr;
		d->res.pitch2D.format = (CUarray_format)t->format;
		d->res.pitch2D.numChannels = t->channels;
		d->res.pitch2D.width = t->width;
		d->res.pitch2D.height = t->height;
		d->res.pitch2D.pitchInBytes = t->pitch;
	}
}

#endif
