/* SPDX-License-Identifier: MIT */
/*
 * CUDA arrays, texture objects and surface objects: the copy directions,
 * the flags and the texture record's payload, shared by both front ends
 * (guest/core/arrays.c), the back end's checks
 * (host-backend/core/exec_array.c) and the devices. What needs cuda.h (the
 * formats, the driver's structs) is in mearas/array_cu.h.
 *
 * An array lives on the host's device; the guest names it by an id of kind
 * `array` (include/mearas/ops.spec). Texture and surface objects are the
 * 64-bit values the host's driver hands out: kernels take them as
 * parameters, so the guest must hold the real value (a worker process, and
 * with it the driver context the values belong to, serves one client only).
 * The guest also names each object by an id, which its destroy record uses.
 */
#ifndef MEARAS_ARRAY_H
#define MEARAS_ARRAY_H

#include <stdint.h>

/* Array flags carried (CUDA_ARRAY3D_LAYERED, _SURFACE_LDST, _CUBEMAP and
 * _TEXTURE_GATHER; the runtime's cudaArray* flags have the same values).
 * Sparse, deferred-mapping, depth, colour-attachment and video arrays are
 * refused. */
#define MEARAS_ARRAY_LAYERED      0x01u
#define MEARAS_ARRAY_SURFACE_LDST 0x02u
#define MEARAS_ARRAY_CUBEMAP      0x04u
#define MEARAS_ARRAY_GATHER       0x08u
#define MEARAS_ARRAY_FLAGS_KNOWN  0x0fu

/* an array is at most this many elements on a side, and this many bytes
 * (the largest an H100/H200 takes: 3D 16384^3 elements of up to 16 bytes
 * would pass 2^46, which no vGPU's memory holds anyway) */
#define MEARAS_ARRAY_MAX_DIM   (1u << 17)
#define MEARAS_ARRAY_MAX_BYTES (1ull << 40)

/* rows of a slice, or slices of an array, from a height or depth as an
 * array is made with it: 0 (fewer dimensions) counts as 1 */
static inline uint64_t mearas_array_extent(uint64_t n)
{
	return n ? n : 1;
}

/* MEMCPY_ARRAY directions: which way the bytes go, and whether the linear
 * side is the data area (an offset) or device memory (an address). */
enum mearas_array_dir {
	MEARAS_ARRAY_HTOA = 1,  /* data area -> array */
	MEARAS_ARRAY_ATOH = 2,  /* array -> data area */
	MEARAS_ARRAY_DTOA = 3,  /* device memory -> array */
	MEARAS_ARRAY_ATOD = 4,  /* array -> device memory */
};

/* Texture resources (CUresourcetype's values; mipmapped arrays are refused) */
enum mearas_tex_res {
	MEARAS_RES_ARRAY = 0,
	MEARAS_RES_LINEAR = 2,
	MEARAS_RES_PITCH2D = 3,
};

/* texture flags carried (CU_TRSF_READ_AS_INTEGER, _NORMALIZED_COORDINATES,
 * _SRGB, _DISABLE_TRILINEAR_OPTIMIZATION, _SEAMLESS_CUBEMAP) */
#define MEARAS_TEX_FLAGS_KNOWN 0x73u
#define MEARAS_TEX_ADDRESS_MAX 3u       /* CU_TR_ADDRESS_MODE_BORDER */
#define MEARAS_TEX_FILTER_MAX  1u       /* CU_TR_FILTER_MODE_LINEAR */
#define MEARAS_TEX_VIEW_FORMAT_MAX 0x22u /* CU_RES_VIEW_FORMAT_SIGNED_BC6H ... the last value */

/*
 * TEX_CREATE's payload: the resource, the texture description and the
 * optional resource view, as cuTexObjectCreate takes them, with the array
 * named by its id. Fields a resource kind does not use are zero (the back
 * end refuses the record otherwise).
 */
struct mearas_tex_args {
	uint32_t res;           /* enum mearas_tex_res */
	uint32_t format;        /* linear, pitch2D: enum mearas_array_format */
	uint32_t channels;      /* linear, pitch2D: 1, 2 or 4 */
	uint32_t has_view;      /* 1: the view fields below are set */
	uint64_t array;         /* array: its id */
	uint64_t dptr;          /* linear, pitch2D: the first byte */
	uint64_t size;          /* linear: bytes */
	uint64_t width, height, pitch; /* pitch2D: elements, rows, bytes */
	/* CUDA_TEXTURE_DESC */
	uint32_t address[3];
	uint32_t filter;
	uint32_t flags;
	uint32_t max_anisotropy;
	uint32_t mip_filter;
	float mip_bias, mip_min, mip_max;
	float border[4];
	/* CUDA_RESOURCE_VIEW_DESC */
	uint32_t view_format;
	uint32_t view_first_mip, view_last_mip, view_first_layer, view_last_layer;
	uint32_t reserved;
	uint64_t view_width, view_height, view_depth;
};
_Static_assert(sizeof(struct mearas_tex_args) == 168, "texture arguments: a fixed layout");

#endif
