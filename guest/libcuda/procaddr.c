// SPDX-License-Identifier: MIT
/* cuGetProcAddress_v2 and cuGetProcAddress (the 4-argument ABI before CUDA
 * 12.0): which of our exports the real driver would hand out for a base
 * name, an ABI version and a stream mode, from the table generated from its
 * measured answers (proctable.h, scripts/procgen.py). */
#include <stddef.h>
#include <string.h>

/* the driver's own view of cuda.h: both ABIs of cuGetProcAddress declared
 * under their exported names, no name #defined to another */
#define __CUDA_API_VERSION_INTERNAL
#include <cuda.h>

#include "mearas/log.h"
#include "procaddr.h"
#include "version.h"

#define CU_EXPORT __attribute__((visibility("default")))

static int name_cmp(const char *symbol, unsigned i)
{
	return strcmp(symbol, cu_proc_strings + cu_proc_names[i].name);
}

int cu_proc_find(const char *symbol, int cuda_version, unsigned flags)
{
	unsigned lo = 0, hi = cu_proc_nnames;
	int found = -CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		int c = name_cmp(symbol, mid);

		if (!c) {
			lo = mid;
			break;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo >= hi)
		return -CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	/* the rules are sorted by version: the last that applies wins */
	for (unsigned r = cu_proc_names[lo].rule; r < cu_proc_names[lo + 1].rule; r++) {
		const struct cu_proc_rule *rule = &cu_proc_rules[r];

		if (!(rule->flags & 1u << flags) || rule->from > cuda_version)
			continue;
		if (rule->sym == CU_PROC_NOT_FOUND)
			found = -CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		else if (rule->sym == CU_PROC_TOO_OLD)
			found = -CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
		else
			found = rule->sym;
	}
	return found;
}

const char *cu_proc_symbol(int index)
{
	return cu_proc_strings + cu_proc_sym_names[index];
}

cu_proc_fn cu_proc_address(int index)
{
	return cu_proc_fns[index];
}

/* The common answer; status is written only where the real driver writes it
 * (not for the arguments it refuses: a version above its own was measured
 * to leave it alone). */
static CUresult get_proc(const char *symbol, void **pfn, int cuda_version, cuuint64_t flags,
			 CUdriverProcAddressQueryResult *status)
{
	int found;

	if (pfn)
		*pfn = NULL;
	/* flags beyond the three measured values (unmeasured): refused too */
	if (!symbol || !pfn || cuda_version > CU_DRIVER_VERSION || flags > CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
		log_debug("cuGetProcAddress(%s, %d, %llu): CUDA_ERROR_INVALID_VALUE%s", symbol ? symbol : "NULL",
			  cuda_version, (unsigned long long)flags, pfn ? "" : " (no pfn)");
		return CUDA_ERROR_INVALID_VALUE;
	}
	found = cu_proc_find(symbol, cuda_version, (unsigned)flags);
	if (found >= 0) {
		/* a function pointer handed out as void *, as the API has it */
		*pfn = (void *)cu_proc_address(found);
		log_debug("cuGetProcAddress(%s, %d, %llu) = %s", symbol, cuda_version, (unsigned long long)flags,
			  cu_proc_symbol(found));
	} else {
		log_debug("cuGetProcAddress(%s, %d, %llu): %s", symbol, cuda_version, (unsigned long long)flags,
			  found == -CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND ? "not found" : "version not sufficient");
	}
	if (status)
		*status = found >= 0 ? CU_GET_PROC_ADDRESS_SUCCESS : (CUdriverProcAddressQueryResult)-found;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
				       CUdriverProcAddressQueryResult *symbolStatus)
{
	return get_proc(symbol, pfn, cudaVersion, flags, symbolStatus);
}

CU_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	return get_proc(symbol, pfn, cudaVersion, flags, NULL);
}
