// SPDX-License-Identifier: MIT
/* The PCIe link of the GPU behind a vGPU: the figures mearasd publishes in
 * the vGPU's devinfo (mearas_devinfo.pcie), read from its node's sysfs when
 * the vGPU was opened for this process (host-backend/device/pcie_link.c).
 * A remote vGPU has its serving node's figures for the GPU there. So the
 * current generation and width are those of when this process connected,
 * not of the moment of the call (a GPU's link may retrain to a lower speed
 * while idle, and NVIDIA's NVML follows it). A figure mearasd does not know
 * (0: no such sysfs files, mearas's host-memory model publishes its
 * modelled GPU's, a mearasd from before the figures) is
 * NVML_ERROR_NOT_SUPPORTED. */
#include "nvml_int.h"

enum link_figure { CUR_GEN, MAX_GEN, GPU_MAX_GEN, CUR_WIDTH, MAX_WIDTH };

static uint32_t link_figure_of(const struct mearas_pcie_link *l, enum link_figure which)
{
	const uint32_t v[] = {
		[CUR_GEN] = l->cur_gen,
		[MAX_GEN] = l->max_gen,
		[GPU_MAX_GEN] = l->gpu_max_gen,
		[CUR_WIDTH] = l->cur_width,
		[MAX_WIDTH] = l->max_width,
	};

	return v[which];
}

static nvmlReturn_t figure(nvmlDevice_t device, enum link_figure which, unsigned int *out)
{
	const struct mearas_devinfo *info;
	nvmlReturn_t r = nvml_device(device, NULL, &info);
	uint32_t v;

	if (r)
		return r;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	v = link_figure_of(&info->pcie, which);
	if (!v)
		return NVML_ERROR_NOT_SUPPORTED;
	*out = v;
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int *currLinkGen)
{
	return figure(device, CUR_GEN, currLinkGen);
}

/* the most the GPU and the port above it allow */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int *maxLinkGen)
{
	return figure(device, MAX_GEN, maxLinkGen);
}

/* the most the GPU itself supports */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int *maxLinkGenDevice)
{
	return figure(device, GPU_MAX_GEN, maxLinkGenDevice);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int *currLinkWidth)
{
	return figure(device, CUR_WIDTH, currLinkWidth);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int *maxLinkWidth)
{
	return figure(device, MAX_WIDTH, maxLinkWidth);
}
