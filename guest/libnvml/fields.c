// SPDX-License-Identifier: MIT
/* Field values (nvmlDeviceGetFieldValues): the call succeeds and each
 * requested field carries its own answer in nvmlReturn. mearas answers the
 * fields it knows for a vGPU and gives NVML_ERROR_NOT_SUPPORTED for the
 * rest (counters, temperatures, power, ECC: mearasd does not publish them).
 *
 * Known: the links a vGPU has to other devices. A vGPU reaches other
 * devices only through mearasd (no peer access, nvmlDeviceGetP2PStatus), so
 * it has no NVLink, no link to an NVSwitch and no chip-to-chip (C2C) link,
 * whatever links the GPU behind it has: NVML_FI_DEV_NVLINK_LINK_COUNT,
 * NVML_FI_DEV_NVSWITCH_CONNECTED_LINK_COUNT and NVML_FI_DEV_C2C_LINK_COUNT
 * are 0. Fields of one link (scopeId = link) name a link there is not:
 * NVML_ERROR_NOT_SUPPORTED with the others. */
#include <sys/time.h>

#include "nvml_int.h"

static long long now_us(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (long long)tv.tv_sec * 1000000 + tv.tv_usec;
}

static void answer(nvmlFieldValue_t *f, long long ts)
{
	f->timestamp = ts;
	f->latencyUsec = 0;
	switch (f->fieldId) {
	case NVML_FI_DEV_NVLINK_LINK_COUNT:
	case NVML_FI_DEV_NVSWITCH_CONNECTED_LINK_COUNT:
	case NVML_FI_DEV_C2C_LINK_COUNT:
		f->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
		f->value.uiVal = 0;
		f->nvmlReturn = NVML_SUCCESS;
		break;
	default:
		f->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
		break;
	}
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values)
{
	nvmlReturn_t r = nvml_device(device, NULL, NULL);
	long long ts;

	if (r)
		return r;
	if (!values || valuesCount < 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	ts = now_us();
	for (int i = 0; i < valuesCount; i++)
		answer(&values[i], ts);
	return NVML_SUCCESS;
}
