/* SPDX-License-Identifier: MIT */
/*
 * Tensor maps (the TMA descriptors of cuTensorMapEncodeTiled,
 * cuTensorMapEncodeIm2col and cuTensorMapEncodeIm2colWide): the arguments a
 * guest sends with the TENSOR_MAP_ENCODE record (include/mearas/ops.spec),
 * shared by the driver front end (guest/libcuda/tensormap.c), the back end's
 * checks (host-backend/core/exec_tensormap.c) and the devices.
 *
 * A CUtensorMap is 128 opaque bytes that the driver encodes and the GPU's
 * TMA unit reads; its format is NVIDIA's and not public, so mearas never
 * builds one itself: on a GPU the host's driver encodes it (the guest's
 * device addresses are the GPU's, so the map is valid for the guest's
 * kernels). The sim device has no TMA unit; it encodes the arguments in a
 * format of its own (struct mearas_sim_tmap below), which is the sim's and
 * nothing like the hardware's, so that tests can see the arguments reach the
 * device and the bytes come back.
 */
#ifndef MEARAS_TENSORMAP_H
#define MEARAS_TENSORMAP_H

#include <stdint.h>

#define MEARAS_TMAP_BYTES     128u      /* sizeof(CUtensorMap) */
#define MEARAS_TMAP_MAX_RANK  5u
#define MEARAS_TMAP_MAX_DIM   (1ull << 32)  /* globalDim[i] <= 2^32 */
#define MEARAS_TMAP_MAX_STRIDE (1ull << 40) /* globalStrides[i] < 2^40 */

/* which encode call (the record's `kind` argument) */
enum mearas_tmap_kind {
	MEARAS_TMAP_TILED = 1,          /* cuTensorMapEncodeTiled */
	MEARAS_TMAP_IM2COL = 2,         /* cuTensorMapEncodeIm2col */
	MEARAS_TMAP_IM2COL_WIDE = 3,    /* cuTensorMapEncodeIm2colWide */
};

/* the enums' ranges in CUDA 13.0's cuda.h (CUtensorMapDataType ...) */
#define MEARAS_TMAP_DTYPE_MAX     15u   /* CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B */
#define MEARAS_TMAP_INTERLEAVE_MAX 2u   /* CU_TENSOR_MAP_INTERLEAVE_32B */
#define MEARAS_TMAP_SWIZZLE_MAX   6u    /* CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B */
#define MEARAS_TMAP_L2_MAX        3u    /* CU_TENSOR_MAP_L2_PROMOTION_L2_256B */
#define MEARAS_TMAP_OOB_MAX       1u    /* CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA */
#define MEARAS_TMAP_WIDE_MODE_MAX 1u    /* CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128 */

/*
 * The record's payload: every argument of the three calls, the arrays at
 * their largest (rank 5). Entries past what the rank and the call use are
 * zero (the back end refuses the record otherwise):
 *   dims[rank], strides[rank - 1] (bytes, of dimensions 1 .. rank-1),
 *   estrides[rank]; tiled: box[rank]; im2col: lower/upper[rank - 2] (the
 *   pixel box corners, {D, H, W} innermost last as cuda.h orders them),
 *   channels, pixels; im2col wide: lower[0]/upper[0] (the W offsets),
 *   channels, pixels, wide_mode.
 */
struct mearas_tmap_args {
	uint64_t addr;                  /* globalAddress */
	uint64_t dims[MEARAS_TMAP_MAX_RANK];
	uint64_t strides[MEARAS_TMAP_MAX_RANK - 1];
	uint32_t box[MEARAS_TMAP_MAX_RANK];
	uint32_t estrides[MEARAS_TMAP_MAX_RANK];
	int32_t lower[3], upper[3];
	uint32_t dtype, rank, interleave, swizzle, l2promo, oobfill, wide_mode;
	uint32_t channels, pixels;
	uint32_t reserved;              /* 0 */
};

_Static_assert(sizeof(struct mearas_tmap_args) == 184, "struct mearas_tmap_args is the record's payload");

/* Bits per element of a CUtensorMapDataType (the packed types: what one
 * value takes in memory, 16 values per 8 or 16 bytes); 0 for none. */
static inline unsigned mearas_tmap_elem_bits(uint32_t dtype)
{
	static const unsigned char bits[MEARAS_TMAP_DTYPE_MAX + 1] = {
		8, 16, 32, 32, 64, 64, 16, 32, 64, 16, 32, 32, 32, /* UINT8 .. TFLOAT32_FTZ */
		4, 8, 8,                                            /* 16U4_ALIGN8B, 16U4_ALIGN16B, 16U6_ALIGN16B */
	};

	return dtype <= MEARAS_TMAP_DTYPE_MAX ? bits[dtype] : 0;
}

/*
 * The sim device's encoding (host-backend/device/device_sim.c): NOT the
 * hardware's format, only the model's, so tests can read back what reached
 * the device. Little-endian, 128 bytes, unused bytes zero.
 */
#define MEARAS_SIM_TMAP_MAGIC 0x314d5453u /* "STM1" */

struct mearas_sim_tmap {
	uint32_t magic;                 /* MEARAS_SIM_TMAP_MAGIC */
	uint8_t kind, dtype, rank, interleave;
	uint8_t swizzle, l2promo, oobfill, wide_mode;
	uint16_t channels, pixels;
	uint64_t addr;
	uint64_t dims[MEARAS_TMAP_MAX_RANK];
	uint64_t strides[MEARAS_TMAP_MAX_RANK - 1];
	uint8_t box[MEARAS_TMAP_MAX_RANK];      /* boxDim[i] - 1 (1 .. 256) */
	uint8_t estrides[MEARAS_TMAP_MAX_RANK]; /* elementStrides[i] (1 .. 8) */
	int16_t lower[3], upper[3];
	uint8_t zero[10];
};

_Static_assert(sizeof(struct mearas_sim_tmap) == MEARAS_TMAP_BYTES, "the sim's tensor map is a CUtensorMap");

#endif
