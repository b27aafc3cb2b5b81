// SPDX-License-Identifier: MIT
/* GPU fabric (NVLink multi-node clique) registration: a vGPU belongs to no
 * fabric (it has no NVLink of its own, p2p.c), so the probe state is
 * NVML_GPU_FABRIC_STATE_NOT_SUPPORTED, which NVML answers with success for
 * a GPU outside any fabric; NCCL asks it of every device at its start. */
#include <string.h>

#include "nvml_int.h"

/* both calls: a vGPU of ours and somewhere to answer */
static nvmlReturn_t fabric_query(nvmlDevice_t device, const void *info)
{
	nvmlReturn_t r = nvml_device(device, NULL, NULL);

	return r ? r : info ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfoV_t *info)
{
	nvmlReturn_t r = fabric_query(device, info);

	if (r)
		return r;
	/* v2 is v3 without its last member (healthSummary) */
	if (info->version != nvmlGpuFabricInfo_v3 && info->version != NVML_STRUCT_VERSION(GpuFabricInfo, 2))
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	info->status = NVML_SUCCESS;
	info->cliqueId = 0;
	memset(info->clusterUuid, 0, sizeof(info->clusterUuid));
	info->state = NVML_GPU_FABRIC_STATE_NOT_SUPPORTED;
	info->healthMask = 0;
	if (info->version == nvmlGpuFabricInfo_v3)
		info->healthSummary = 0;
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t *info)
{
	nvmlReturn_t r = fabric_query(device, info);

	if (r)
		return r;
	memset(info, 0, sizeof(*info));
	info->status = NVML_SUCCESS;
	info->state = NVML_GPU_FABRIC_STATE_NOT_SUPPORTED;
	return NVML_SUCCESS;
}
