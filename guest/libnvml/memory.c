// SPDX-License-Identifier: MIT
/* Device memory as the vGPU sees it: total is its quota (the published
 * device info's total_mem), free what mearasd answers to MEM_GET_INFO (the
 * quota less what this identity has allocated on the vGPU, at most what the
 * GPU has free), used the rest. Nothing is reserved for the system within a
 * quota: nvmlMemory_v2_t's reserved is 0. */
#include "nvml_int.h"

/* Both calls: the device, the caller's struct there (m, or m2 of the layout
 * it says), then the device's total and free memory into it. */
static nvmlReturn_t mem_info(nvmlDevice_t device, nvmlMemory_t *m, nvmlMemory_v2_t *m2)
{
	const struct mearas_devinfo *info;
	unsigned i;
	uint64_t f, t, total;
	nvmlReturn_t r = nvml_device(device, NULL, NULL);

	if (r)
		return r;
	if (!m && !m2)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* a versioned struct: the caller says which layout it passes */
	if (m2 && m2->version != nvmlMemory_v2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	if (nvml_device(device, &i, &info))
		return NVML_ERROR_INVALID_ARGUMENT;
	if (rt_do_MEM_GET_INFO((int)i, &f, &t))
		return rt_stopped() ? NVML_ERROR_GPU_IS_LOST : NVML_ERROR_UNKNOWN;
	total = info->total_mem;
	f = f < total ? f : total;
	if (m2)
		*m2 = (nvmlMemory_v2_t){ .version = m2->version, .total = total, .free = f, .used = total - f };
	else
		*m = (nvmlMemory_t){ .total = total, .free = f, .used = total - f };
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	return mem_info(device, memory, NULL);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
	return mem_info(device, NULL, memory);
}
