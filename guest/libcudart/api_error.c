// SPDX-License-Identifier: MIT
#include "rt.h"

RT_EXPORT cudaError_t cudaGetLastError(void)
{
	cudaError_t e = rt_tls.last_error;

	rt_tls.last_error = cudaSuccess;
	return e;
}

RT_EXPORT cudaError_t cudaPeekAtLastError(void)
{
	return rt_tls.last_error;
}

RT_EXPORT const char *cudaGetErrorName(cudaError_t error)
{
	const char *name = rt_error_name(error);

	return name ? name : "cudaErrorUnknown";
}

RT_EXPORT const char *cudaGetErrorString(cudaError_t error)
{
	switch ((int)error) {
#define X(name, value, text) case value: return text;
#include "cuda_errors.gen.h"
#undef X
	default:
		return "unrecognized error code";
	}
}

cudaError_t rt_set_error(cudaError_t e)
{
	if (e != cudaSuccess)
		rt_tls.last_error = e;
	return e;
}

/* Called by the generated stubs of entry points mearas does not implement. */
RT_HIDDEN int mearas_unsupported_call(const char *name, int *said);
int mearas_unsupported_call(const char *name, int *said)
{
	if (!__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
		rt_log_unsupported(name);
	return (int)rt_set_error(cudaErrorNotSupported);
}
