// SPDX-License-Identifier: MIT
/* Device memory as the vGPU sees it: total is its quota (the published
 * device info's total_mem), free what mearasd answers to MEM_GET_INFO (the
 * quota less what this identity has allocated on the vGPU, at most what the
 * GPU has free), used the rest. Nothing is reserved for the system within a
 * quota: nvmlMemory_v2_t's reserved is 0. */
#include "nvml_int.h"

/* device and out already checked */
static nvmlReturn_t mem_info(nvmlDevice_t device, uint64_t *total, uint64_t *free_b)
{
	const struct mearas_devinfo *info;
	unsigned i;
	uint64_t f, t;

	if (nvml_device(device, &i, &info))
		return NVML_ERROR_INVALID_ARGUMENT;
	if (rt_do_MEM_GET_INFO((int)i, &f, &t))
		return rt_stopped() ? NVML_ERROR_GPU_IS_LOST : NVML_ERROR_UNKNOWN;
	*total = info->total_mem;
	*free_b = f < *total ? f : *total;
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	uint64_t total, free_b;
	nvmlReturn_t r = nvml_device(device, NULL, NULL);

	if (r)
		return r;
	if (!memory)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = mem_info(device, &total, &free_b);
	if (r)
		return r;
	memory->total = total;
	memory->free = free_b;
	memory->used = total - free_b;
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
	uint64_t total, free_b;
	nvmlReturn_t r = nvml_device(device, NULL, NULL);

	if (r)
		return r;
	if (!memory)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* a versioned struct: the caller says which layout it passes */
	if (memory->version != nvmlMemory_v2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	r = mem_info(device, &total, &free_b);
	if (r)
		return r;
	memory->total = total;
	memory->reserved = 0;
	memory->free = free_b;
	memory->used = total - free_b;
	return NVML_SUCCESS;
}
