// SPDX-License-Identifier: MIT
/* System queries: the driver, NVML and CUDA versions.
 *
 * The driver version is the NVIDIA kernel driver's on the node of the
 * first vGPU ("580.159.04", which frameworks parse as numbers: XLA reads
 * the kernel driver's version so), as mearasd publishes it. Where that is
 * unknown (the sim device; before the library has connected, which
 * nvmlSystemGetNVMLVersion allows) it is "mearas-13.0": the CUDA driver API
 * version of mearas's libcuda.so.1 (NVML documents an alphanumeric string
 * of at most 80 bytes). The NVML version follows NVIDIA's form
 * "<NVML API version>.<driver version>". */
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "nvml_int.h"

static void driver_version(char *out, size_t len)
{
	int v = 0;

	if (rt.nvgpus && rt.v[0].info && rt.v[0].info->kmd_version[0] &&
	    memchr(rt.v[0].info->kmd_version, 0, sizeof(rt.v[0].info->kmd_version))) {
		snprintf(out, len, "%s", rt.v[0].info->kmd_version);
		return;
	}
	cuDriverGetVersion(&v);
	snprintf(out, len, "mearas-%d.%d", v / 1000, v % 1000 / 10);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	char s[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
	nvmlReturn_t r = nvml_ready();

	if (r)
		return r;
	driver_version(s, sizeof(s));
	return nvml_put_string(version, length, s);
}

/* documented to work before nvmlInit (no NVML_ERROR_UNINITIALIZED) */
NVML_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
	char d[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE], s[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE + 8];

	driver_version(d, sizeof(d));
	snprintf(s, sizeof(s), "%s.%s", NVML_API_VERSION_STR, d);
	return nvml_put_string(version, length, s);
}

/* both: what our libcuda.so.1's cuDriverGetVersion reports; documented to
 * work before nvmlInit */
static nvmlReturn_t cuda_version(int *out)
{
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	return cuDriverGetVersion(out) == CUDA_SUCCESS ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
	return cuda_version(cudaDriverVersion);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
	return cuda_version(cudaDriverVersion);
}
