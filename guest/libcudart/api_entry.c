// SPDX-License-Identifier: MIT
/*
 * cudaGetDriverEntryPoint(ByVersion): the driver functions this runtime runs
 * on are mearas's libcuda.so.1, so its cuGetProcAddress answers. The runtime's
 * default flag follows the build (a `--default-stream per-thread` program
 * calls the _ptsz entry points, api_ptsz.c, and gets the per-thread forms).
 */
#include <cuda.h>

#include "rt.h"

static cudaError_t entry_point(const char *symbol, void **funcPtr, int version, unsigned long long flags,
			       enum cudaDriverEntryPointQueryResult *driverStatus)
{
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	cuuint64_t cflags;
	CUresult r;

	if (!symbol || !funcPtr)
		return cudaErrorInvalidValue;
	switch (flags) {
	case cudaEnableDefault:
		cflags = rt_tls.ptds ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
		break;
	case cudaEnableLegacyStream:
		cflags = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
		break;
	case cudaEnablePerThreadDefaultStream:
		cflags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
		break;
	default:
		return cudaErrorInvalidValue;
	}
	r = cuGetProcAddress(symbol, funcPtr, version, cflags, &st);
	/* not there, or not for this version: success with NULL and the status */
	if (r == CUDA_ERROR_NOT_FOUND || (r == CUDA_SUCCESS && st != CU_GET_PROC_ADDRESS_SUCCESS)) {
		*funcPtr = NULL;
		r = CUDA_SUCCESS;
		if (st == CU_GET_PROC_ADDRESS_SUCCESS)
			st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	}
	if (r != CUDA_SUCCESS)
		return cudaErrorInvalidValue;
	if (driverStatus)
		*driverStatus = (enum cudaDriverEntryPointQueryResult)st;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
					      enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return rt_set_error(entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus));
}

RT_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
						       unsigned long long flags,
						       enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return rt_set_error(entry_point(symbol, funcPtr, (int)cudaVersion, flags, driverStatus));
}
