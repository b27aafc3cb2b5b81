/* SPDX-License-Identifier: MIT */
/*
 * CUDA fat binary reader: learns each kernel's parameter buffer layout
 * (count, offset and size of every parameter) from the fat binary that
 * nvcc-generated code passes to __cudaRegisterFatBinary, with no GPU.
 *
 * Layout sources, per fat binary entry:
 *   - ELF cubins: EIATTR_KPARAM_INFO records of the .nv.info.<kernel> sections;
 *   - PTX text:   the .param list of each .entry, offsets computed by alignment.
 * Entries compressed by nvcc/fatbinary (zstd, or LZ4 with --compress-mode=speed)
 * are decompressed. A kernel present in several entries (several archs, PTX and
 * cubin) must have the same layout in all of them, else the index fails.
 *
 * All functions are thread-safe on distinct objects; a finished index is
 * read-only and may be shared between threads.
 * Link with: common/fatbin*.c -lzstd -llz4
 */
#ifndef MEARAS_FATBIN_H
#define MEARAS_FATBIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MEARAS_FATBINC_MAGIC 0x466243b1u	/* __fatBinC_Wrapper_t.magic */
#define MEARAS_FATBIN_MAGIC 0xba55ed50u		/* fat binary header magic */

/*
 * Given the pointer nvcc passes to __cudaRegisterFatBinary (a wrapper
 * {int magic; int version; const void *data; void *extra}, version 1 for whole
 * program builds, 2 for -rdc device-linked ones) or a pointer directly at fat
 * binary data, store the start of the fat binary and its total size (header
 * plus entries). Only the headers are read: the caller vouches that the pointer
 * is readable. Returns 0, -EINVAL on a null pointer or unknown magic,
 * -EOVERFLOW on an absurd size.
 */
int mearas_fatbin_locate(const void *wrapper_or_fatbin, const void **fatbin,
			 size_t *size);

/*
 * The size of a module image as cuModuleLoadData takes it (no length given):
 * a fat binary (its header says), an ELF cubin (its headers and sections
 * say) or NUL-terminated PTX text (with the NUL). A __fatBinC_Wrapper_t is
 * refused (-EINVAL): pass the fat binary it points at. The caller vouches
 * that the image is readable; the result is bounded, not validated.
 */
int mearas_module_image_size(const void *image, size_t *size);

/*
 * mearas_module_image_size for an image the caller does not vouch for: only
 * its first avail bytes are read. 0 with *size <= avail when the image ends
 * there by its own account (ELF headers and sections, the fat binary header's
 * size, PTX text's NUL); -EOVERFLOW when it says it goes on past them,
 * -EINVAL for a __fatBinC_Wrapper_t (a pointer) or a malformed ELF header;
 * err says why. A loader that takes no length (cuModuleLoadData) follows
 * what the image says, so a daemon checks this first.
 */
int mearas_module_image_extent(const void *image, size_t avail, size_t *size, char *err, size_t errlen);

/*
 * Whether code in a module image (as mearas_module_image_size takes it, size
 * bytes) may print: device printf and assert write into a buffer that the
 * driver empties into stdout when the host synchronizes, and only code that
 * calls vprintf or __assertfail writes there. Compressed entries are
 * decompressed to be searched (larger than 64 MiB: taken to print). 1 when it
 * may, or when the image cannot be read; 0 when no code in it can print.
 */
int mearas_image_may_print(const void *image, size_t size);

/*
 * Device memory a module image holds once loaded, by its own account, for
 * charging it to a quota before a loader sees it: for an ELF cubin, its
 * allocated sections (code, constant banks, variables, zero-filled ones
 * included; not shared or local memory) or its loaded segments, the larger;
 * for PTX text, the variables it defines in global and constant memory (the
 * code it compiles to is not counted); for a fat binary, its largest entry
 * (the loader takes one). Compressed entries are decompressed (up to 1 GiB
 * each). 0 with *bytes set (saturating at UINT64_MAX), or negative errno
 * with err set. The image is read within size bytes only.
 */
int mearas_module_footprint(const void *image, size_t size, uint64_t *bytes, char *err, size_t errlen);

struct mearas_kparam {
	uint32_t offset;	/* byte offset in the parameter buffer */
	uint32_t size;		/* byte size of the parameter */
};

struct mearas_kernel_info {
	const char *name;	/* mangled device name, as in __cudaRegisterFunction */
	uint32_t nparams;
	uint32_t param_bytes;	/* last offset + size; 0 without parameters */
	const struct mearas_kparam *params;	/* nparams items, by ordinal */
};

struct mearas_fatbin_index;

/*
 * Parse the fat binary at [fatbin, fatbin+size) (several fat binaries laid end
 * to end, as in an executable's .nv_fatbin section, are accepted too; so is a
 * single ELF cubin, or PTX text whose size counts its terminating NUL) and
 * index every kernel found. The input is treated as hostile: every field is
 * bounds-checked. Returns NULL on failure with a human-readable reason in err
 * (always NUL-terminated when errlen > 0). The index does not refer to the
 * input after return.
 */
struct mearas_fatbin_index *mearas_fatbin_index_new(const void *fatbin, size_t size,
						    char *err, size_t errlen);

/* Kernel by mangled name, or NULL if the fat binary has none of that name. */
const struct mearas_kernel_info *
mearas_fatbin_find_kernel(const struct mearas_fatbin_index *idx, const char *name);

size_t mearas_fatbin_kernel_count(const struct mearas_fatbin_index *idx);

/* A device variable's size in bytes (*size) as a cubin's symbol table gives
 * it: 0, or -ENOENT when no cubin of the input defines name (PTX-only
 * images list none). */
int mearas_fatbin_find_global(const struct mearas_fatbin_index *idx, const char *name, uint64_t *size);

/* The i-th __managed__ variable a cubin of the input defines (sorted by
 * name; STO_CUDA_MANAGED in its symbol table) and its size in *size, or
 * NULL when there are i or fewer. PTX-only images list none. */
const char *mearas_fatbin_managed_at(const struct mearas_fatbin_index *idx, size_t i, uint64_t *size);

/* i-th kernel (sorted by name), NULL when i >= count. */
const struct mearas_kernel_info *
mearas_fatbin_kernel_at(const struct mearas_fatbin_index *idx, size_t i);

void mearas_fatbin_index_free(struct mearas_fatbin_index *idx);

#ifdef __cplusplus
}
#endif

#endif /* MEARAS_FATBIN_H */
