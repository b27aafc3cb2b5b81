// SPDX-License-Identifier: MIT
/* The driver API's errors: names, texts, and the back end's codes mapped. */
#include "cu.h"

static bool is_driver_code(int v)
{
	switch (v) {
#define X(name, value, text) case value:
#include "cu_errors.gen.h"
#undef X
		return true;
	default:
		return false;
	}
}

CUresult cu_result(cudaError_t e)
{
	/* most runtime codes are the driver's own numbers */
	if (is_driver_code((int)e))
		return (CUresult)e;
	switch (e) {
	case cudaErrorInvalidConfiguration:
	case cudaErrorInvalidPitchValue:
	case cudaErrorInvalidMemcpyDirection:
	case cudaErrorInvalidHostPointer:
	case cudaErrorInvalidDevicePointer:
	case cudaErrorInvalidChannelDescriptor:
	case cudaErrorInvalidFilterSetting:
	case cudaErrorInvalidNormSetting:
	case cudaErrorMissingConfiguration:
		return CUDA_ERROR_INVALID_VALUE;
	case cudaErrorInvalidSymbol:
		return CUDA_ERROR_NOT_FOUND;
	case cudaErrorInvalidDeviceFunction:
		return CUDA_ERROR_INVALID_HANDLE;
	case cudaErrorInsufficientDriver:
		return CUDA_ERROR_NOT_INITIALIZED;
	default:
		return CUDA_ERROR_UNKNOWN;
	}
}

/* cuGetErrorName (name: the enumerator's name) and cuGetErrorString (its text) */
static CUresult error_text(CUresult error, const char **pStr, bool name)
{
	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	switch ((int)error) {
#define X(name_, value, text) case value: *pStr = name ? #name_ : text; return CUDA_SUCCESS;
#include "cu_errors.gen.h"
#undef X
	default:
		*pStr = NULL;
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CU_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr) { return error_text(error, pStr, true); }

CU_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
	return error_text(error, pStr, false);
}
