/* SPDX-License-Identifier: MIT */
#ifndef MEARAS_CU_UNSUPPORTED_H
#define MEARAS_CU_UNSUPPORTED_H

/* Called by the generated stub of every driver entry point mearas does not
 * implement (gen_unsupported.sh): logs "NAME is not supported by mearas
 * yet" the first time (*said was 0) and returns CUDA_ERROR_NOT_SUPPORTED. */
__attribute__((visibility("hidden"))) int cu_unsupported_call(const char *name, int *said);

#endif
