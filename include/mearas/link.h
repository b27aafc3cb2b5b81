/* SPDX-License-Identifier: MIT */
/*
 * Linking (cuLinkCreate, cuLinkAddData, cuLinkAddFile, cuLinkComplete): the
 * driver front end (guest/libcuda/link.c) gathers a link's inputs and, at
 * cuLinkComplete, lays them out in the data area as below and sends one LINK
 * record (include/mearas/ops.spec); the back end (host-backend/core/
 * exec_link.c) checks the layout and has its device link them: on a GPU the
 * host driver's linker, so the cubin is built for the GPU behind the vGPU.
 *
 *   struct mearas_link_header
 *   count x { struct mearas_link_input, then its size bytes, padded to 8 }
 *
 * Options: the scalar JIT options (cuda.h's CUjit_option numbers that
 * mearas_link_option_carried takes) travel with their values; the log buffers stay with
 * the front end (it fills them from the record's answer); any other option
 * is not carried (the front end says so once).
 */
#ifndef MEARAS_LINK_H
#define MEARAS_LINK_H

#include <stdbool.h>
#include <stdint.h>

#define MEARAS_LINK_MAGIC 0x4b4e494cu  /* "LINK" */
#define MEARAS_LINK_MAX_INPUTS 256u
#define MEARAS_LINK_MAX_OPTS 16u
#define MEARAS_LINK_MAX_BYTES (1ull << 30)     /* inputs, all together */
#define MEARAS_LINK_LOG_BYTES 16384u           /* the error log kept of a failed link */

struct mearas_link_header {
	uint32_t magic;                         /* MEARAS_LINK_MAGIC */
	uint32_t count;                         /* inputs, 1..MEARAS_LINK_MAX_INPUTS */
	uint32_t nopts;                         /* options, 0..MEARAS_LINK_MAX_OPTS */
	uint32_t reserved;                      /* 0 */
	uint32_t opt[MEARAS_LINK_MAX_OPTS];     /* CUjit_option, one mearas_link_option_carried takes */
	uint32_t val[MEARAS_LINK_MAX_OPTS];     /* its value */
};

struct mearas_link_input {
	uint32_t type;                          /* CUjitInputType: cubin, PTX, fat binary, object, library */
	uint32_t reserved;                      /* 0 */
	uint64_t size;                          /* bytes that follow, then zeros to a multiple of 8 */
};

/* CUjitInputType values carried (cuda.h 13.0): CUBIN 0, PTX 1, FATBINARY 2,
 * OBJECT 3, LIBRARY 4 (NVVM and the LTO kinds need libraries mearas does
 * not carry) */
#define MEARAS_LINK_INPUT_MAX 4u

/* scalar CUjit_option numbers carried: MAX_REGISTERS 0, OPTIMIZATION_LEVEL 7,
 * TARGET 9, FALLBACK_STRATEGY 10, GENERATE_DEBUG_INFO 11, LOG_VERBOSE 12,
 * GENERATE_LINE_INFO 13, CACHE_MODE 14 */
static inline bool mearas_link_option_carried(uint32_t opt)
{
	return opt == 0 || opt == 7 || (opt >= 9 && opt <= 14);
}

static inline uint64_t mearas_link_pad8(uint64_t n)
{
	return (n + 7) & ~7ull;
}

#endif
