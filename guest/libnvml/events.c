// SPDX-License-Identifier: MIT
/*
 * Events: a vGPU reports none. mearasd passes no Xid, ECC, clock or power
 * event of the GPU behind a vGPU to its clients, so the supported types are
 * none, registering any type is NVML_ERROR_NOT_SUPPORTED (as NVML answers for
 * a device without that event), and a wait on a set sleeps out its timeout
 * and returns NVML_ERROR_TIMEOUT. Sets themselves work, so that tools that
 * make one before they look at devices (nvidia-smi does) go on.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "nvml_int.h"

#define SET_MAGIC 0x6e457673u

struct nvmlEventSet_st {
	unsigned magic;
};

static bool valid_set(nvmlEventSet_t set)
{
	return set && set->magic == SET_MAGIC;
}

NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
	nvmlReturn_t r = nvml_ready();

	if (r)
		return r;
	if (!set)
		return NVML_ERROR_INVALID_ARGUMENT;
	*set = malloc(sizeof(**set));
	if (!*set)
		return NVML_ERROR_MEMORY;
	(*set)->magic = SET_MAGIC;
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	nvmlReturn_t r = nvml_ready();

	if (r)
		return r;
	if (!valid_set(set))
		return NVML_ERROR_INVALID_ARGUMENT;
	set->magic = 0;
	free(set);
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes)
{
	nvmlReturn_t r = nvml_device(device, NULL, NULL);

	if (!r && !eventTypes)
		r = NVML_ERROR_INVALID_ARGUMENT;
	if (!r)
		*eventTypes = 0;
	return r;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
						  nvmlEventSet_t set)
{
	nvmlReturn_t r = nvml_device(device, NULL, NULL);

	if (r)
		return r;
	if (!valid_set(set))
		return NVML_ERROR_INVALID_ARGUMENT;
	return eventTypes ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
}

static nvmlReturn_t wait_none(nvmlEventSet_t set, nvmlEventData_t *data, unsigned timeoutms)
{
	struct timespec ts = { .tv_sec = timeoutms / 1000, .tv_nsec = (long)(timeoutms % 1000) * 1000000L };
	nvmlReturn_t r = nvml_ready();

	if (r)
		return r;
	if (!valid_set(set) || !data)
		return NVML_ERROR_INVALID_ARGUMENT;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	return NVML_ERROR_TIMEOUT;
}

NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
	return wait_none(set, data, timeoutms);
}

NVML_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
	return wait_none(set, data, timeoutms);
}
