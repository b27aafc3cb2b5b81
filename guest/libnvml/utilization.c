// SPDX-License-Identifier: MIT
/* Utilization: not measured. mearasd counts the records each client's vGPUs
 * execute (host-backend/control/vgpustats.c), but only mearasd and its
 * workers map those counters, and its control socket, which only the
 * assembly manager reaches, reports GPU utilization as 0, not measured
 * (host-backend/control/control_profile.c). No number reaches a guest
 * process, so none is made up here. */
#include "mearas/log.h"
#include "nvml_int.h"

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
	static int said;
	nvmlReturn_t r = nvml_device(device, NULL, NULL);

	if (r)
		return r;
	if (!utilization)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		log_warn("nvmlDeviceGetUtilizationRates: mearas does not measure GPU utilization: "
			 "returning NVML_ERROR_NOT_SUPPORTED");
	return NVML_ERROR_NOT_SUPPORTED;
}
