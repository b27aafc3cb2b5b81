/* SPDX-License-Identifier: MIT */
/* cuGetProcAddress's lookup (procaddr.c), for the front end's own use
 * (logging) and its unit test. */
#ifndef MEARAS_CU_PROCADDR_H
#define MEARAS_CU_PROCADDR_H

#include "proctable.h"

/* The export the real driver hands out for (symbol, cudaVersion, flags), as
 * its index (>= 0), or minus the status it gives: -1 symbol not found, -2
 * version not sufficient. Valid for cudaVersion <= CU_DRIVER_VERSION and
 * flags 0, 1, 2 (cuGetProcAddress refuses the others first). */
CU_PROC_HIDDEN int cu_proc_find(const char *symbol, int cuda_version, unsigned flags);

/* The name and the address of export `index` (0 <= index < cu_proc_nsyms). */
CU_PROC_HIDDEN const char *cu_proc_symbol(int index);
CU_PROC_HIDDEN cu_proc_fn cu_proc_address(int index);

#endif
