// SPDX-License-Identifier: MIT
/* Devices: the vGPUs of this process, in the core's order (the order CUDA
 * numbers them), answered from their published device info. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cuda.h>

#include "nvml_int.h"

static struct nvmlDevice_st devices[MEARAS_MAX_VGPUS];

__attribute__((constructor)) static void devices_init(void)
{
	for (unsigned i = 0; i < MEARAS_MAX_VGPUS; i++)
		devices[i].index = i;
}

nvmlDevice_t nvml_handle(unsigned index)
{
	return &devices[index];
}

nvmlReturn_t nvml_device(nvmlDevice_t dev, unsigned *index, const struct mearas_devinfo **info)
{
	nvmlReturn_t r = nvml_ready();
	uintptr_t p = (uintptr_t)dev, base = (uintptr_t)devices;
	unsigned i;

	if (r)
		return r;
	if (p < base || p >= base + sizeof(devices) || (p - base) % sizeof(devices[0]))
		return NVML_ERROR_INVALID_ARGUMENT;
	i = (unsigned)((p - base) / sizeof(devices[0]));
	if (i >= nvml_count())
		return NVML_ERROR_INVALID_ARGUMENT;
	if (rt_stopped())
		return NVML_ERROR_GPU_IS_LOST;
	if (index)
		*index = i;
	if (info)
		*info = rt.v[i].info;
	return NVML_SUCCESS;
}

static nvmlReturn_t count(unsigned int *deviceCount)
{
	nvmlReturn_t r = nvml_ready();

	if (r)
		return r;
	if (!deviceCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	*deviceCount = nvml_count();
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
	return count(deviceCount);
}

/* before NVML 5.319 the count left out devices the caller may not use;
 * a process may use every vGPU it sees, so both count the same */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
	return count(deviceCount);
}

static nvmlReturn_t by_index(unsigned int index, nvmlDevice_t *device)
{
	nvmlReturn_t r = nvml_ready();

	if (r)
		return r;
	if (!device || index >= nvml_count())
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = nvml_handle(index);
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	return by_index(index, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
	return by_index(index, device);
}

/* several vGPUs backed by one GPU share its UUID and PCI address: the
 * lookups below give the first of them */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
	nvmlReturn_t r = nvml_ready();
	char s[NVML_UUID_LEN];

	if (r)
		return r;
	if (!uuid || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned i = 0; i < nvml_count(); i++) {
		nvml_uuid_string(rt.v[i].info->uuid, s);
		if (!strcasecmp(s, uuid)) {
			*device = nvml_handle(i);
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

/* the formats nvml.h accepts, all numbers hexadecimal:
 * domain:bus:device.function, domain:bus:device, bus:device.function;
 * false when s is none of them */
static bool parse_bus_id(const char *s, unsigned *dom, unsigned *bus, unsigned *dev, unsigned *fn)
{
	char end;

	*fn = 0;
	if (sscanf(s, "%x:%x:%x.%x%c", dom, bus, dev, fn, &end) == 4 ||
	    sscanf(s, "%x:%x:%x%c", dom, bus, dev, &end) == 3)
		return true;
	*dom = 0;
	return sscanf(s, "%x:%x.%x%c", bus, dev, fn, &end) == 3;
}

static nvmlReturn_t by_pci(const char *pciBusId, nvmlDevice_t *device)
{
	nvmlReturn_t r = nvml_ready();
	unsigned dom, bus, dev, fn;
	int i;

	if (r)
		return r;
	if (!pciBusId || !device || !parse_bus_id(pciBusId, &dom, &bus, &dev, &fn))
		return NVML_ERROR_INVALID_ARGUMENT;
	i = fn == 0 ? rt_vgpu_at_pci(nvml_count(), dom, bus, dev) : -1;
	if (i < 0)
		return NVML_ERROR_NOT_FOUND;
	*device = nvml_handle((unsigned)i);
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
	return by_pci(pciBusId, device);
}

/* _v1 differed from _v2 only for devices the caller may not use */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
	return by_pci(pciBusId, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	const struct mearas_devinfo *info;
	nvmlReturn_t r = nvml_device(device, NULL, &info);

	if (r)
		return r;
	return nvml_put_string(name, length, info->name);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	const struct mearas_devinfo *info;
	nvmlReturn_t r = nvml_device(device, NULL, &info);
	char s[NVML_UUID_LEN];

	if (r)
		return r;
	nvml_uuid_string(info->uuid, s);
	return nvml_put_string(uuid, length, s);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
	unsigned i;
	nvmlReturn_t r = nvml_device(device, &i, NULL);

	if (r)
		return r;
	if (!index)
		return NVML_ERROR_INVALID_ARGUMENT;
	*index = i;
	return NVML_SUCCESS;
}

/* NVIDIA's is the minor number of the GPU's /dev/nvidiaN; a vGPU has no
 * device node of its own (in a VM guest, all of them share /dev/mearas0):
 * the vGPU's index, which is what a minor number tells apart */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
	return nvmlDeviceGetIndex(device, minorNumber);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
	const struct mearas_devinfo *info;
	nvmlReturn_t r = nvml_device(device, NULL, &info);

	if (r)
		return r;
	if (!major || !minor)
		return NVML_ERROR_INVALID_ARGUMENT;
	*major = info->attrs[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR];
	*minor = info->attrs[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR];
	return NVML_SUCCESS;
}

/* the PCI ids the vGPU's device info carries (those of the GPU behind it;
 * zero where the back end has none, as the host-memory model) */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	const struct mearas_devinfo *info;
	nvmlReturn_t r = nvml_device(device, NULL, &info);
	const int32_t *a;

	if (r)
		return r;
	if (!pci)
		return NVML_ERROR_INVALID_ARGUMENT;
	a = info->attrs;
	memset(pci, 0, sizeof(*pci));
	pci->domain = (unsigned)a[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID];
	pci->bus = (unsigned)a[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID];
	pci->device = (unsigned)a[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID];
	/* both as NVML has them: (16-bit id << 16) | 16-bit vendor id */
	pci->pciDeviceId = (unsigned)a[CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID];
	pci->pciSubSystemId = (unsigned)a[CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID];
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT,
		 pci->domain & 0xffff, pci->bus & 0xff, pci->device & 0xff);
	snprintf(pci->busId, sizeof(pci->busId), NVML_DEVICE_PCI_BUS_ID_FMT, NVML_DEVICE_PCI_BUS_ID_FMT_ARGS(pci));
	return NVML_SUCCESS;
}
