/* SPDX-License-Identifier: MIT */
/*
 * Input format of fuzz_exec (also written by gen_seeds):
 *   u32 LE  n = number of arena bytes
 *   n bytes copied to the start of the SQ arena and of the data area
 *   then whole struct mearas_sqe records (256 bytes each, trailing bytes ignored)
 * Record arguments may name the fixture's objects by tag: an argument whose
 * top byte is one of the FUZZ_TAG_* values becomes that base address plus
 * the low 32 bits, so the fuzzer reaches valid device ranges easily.
 */
#ifndef MEARAS_FUZZ_INPUT_H
#define MEARAS_FUZZ_INPUT_H

#define FUZZ_TAG_A       0xa1ull  /* 64 KiB allocation on vGPU 0 */
#define FUZZ_TAG_B       0xb1ull  /* 1 MiB allocation on vGPU 0 */
#define FUZZ_TAG_C       0xc1ull  /* 64 KiB allocation on vGPU 1 */
#define FUZZ_TAG_GLOBAL  0xd1ull  /* module 1's global g_counter (64 bytes) */
#define FUZZ_TAG_FATBIN_SIZE 0xe1ull /* the size of the valid fat binary */
#define FUZZ_TAG_SHIFT   56

#define FUZZ_FATBIN_OFF  (4ull << 20) /* data-area offset of the valid fat binary */

/* objects the fixture creates before each input */
#define FUZZ_STREAM      1u
#define FUZZ_EVENT       1u
#define FUZZ_EVENT2      2u
#define FUZZ_PHYS        1u       /* 2 MiB of VMM physical memory on vGPU 0 */
#define FUZZ_MODULE      1u
#define FUZZ_FUNC_THREE  1u           /* k_three(int *, float, double): 24 bytes */
#define FUZZ_FUNC_NONE   2u           /* k_none(void) */

#endif
