// SPDX-License-Identifier: MIT
/* Devices: answered in the process from the vGPUs' published properties. */
#include <stdio.h>
#include <string.h>

#include "attrs_offered.h"
#include "cu.h"

/* a CUdevice is the vGPU's ordinal */
static CUresult check_dev(CUdevice dev)
{
	CUresult r = cu_ready();

	if (r)
		return r;
	return dev >= 0 && (unsigned)dev < rt.nvgpus ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_INVALID_DEVICE);
}

CU_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult r = cu_need(cu_ready(), device);

	if (r)
		return r;
	if (ordinal < 0 || (unsigned)ordinal >= rt.nvgpus)
		return CU_REFUSE(CUDA_ERROR_INVALID_DEVICE);
	*device = ordinal;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuDeviceGetCount(int *count)
{
	return cu_answer(count, (int)rt.nvgpus);
}

static CUresult get_uuid(CUuuid *uuid, CUdevice dev)
{
	CUresult r = cu_need(check_dev(dev), uuid);

	if (r)
		return r;
	memcpy(uuid->bytes, rt.v[dev].info->uuid, sizeof(uuid->bytes));
	return CUDA_SUCCESS;
}

/* before CUDA 11.4 the name of what is now _v2; a vGPU is never a MIG
 * instance, so both give the same UUID */
#undef cuDeviceGetUuid
CU_EXPORT CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CU_EXPORT CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	return get_uuid(uuid, dev);
}

CU_EXPORT CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	return get_uuid(uuid, dev);
}

CU_EXPORT CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
	CUresult r = cu_need(check_dev(dev), bytes);

	if (r)
		return r;
	*bytes = rt.v[dev].info->total_mem;
	return CUDA_SUCCESS;
}

/* What mearas does not offer, whatever the GPU behind the vGPU can do
 * (attrs_offered.h, shared with the runtime's cudaDeviceGetAttribute). */
static int attribute(const struct mearas_devinfo *info, int attrib)
{
	return core_offered_attr(attrib, info->attrs[attrib]);
}

CU_EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	CUresult r = check_dev(dev);

	if (r)
		return r;
	if (!pi || (int)attrib <= 0 || (int)attrib >= (int)CU_DEVICE_ATTRIBUTE_MAX ||
	    (unsigned)attrib >= MEARAS_NUM_ATTRS)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	*pi = attribute(rt.v[dev].info, (int)attrib);
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
	CUresult r = cu_need(check_dev(dev), major && minor);

	if (r)
		return r;
	*major = rt.v[dev].info->attrs[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR];
	*minor = rt.v[dev].info->attrs[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR];
	return CUDA_SUCCESS;
}

static void bus_id(const struct mearas_devinfo *info, char *out, size_t len)
{
	snprintf(out, len, "%08x:%02x:%02x.0", (unsigned)info->attrs[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID],
		 (unsigned)info->attrs[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID],
		 (unsigned)info->attrs[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID]);
}

/* cuDeviceGetName (the device's name) and cuDeviceGetPCIBusId (pci: its bus
 * id): the string into out, len bytes at most */
static CUresult dev_string(char *out, int len, CUdevice dev, bool pci)
{
	CUresult r = check_dev(dev);

	if (r)
		return r;
	if (!out || len <= 0)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (pci)
		bus_id(rt.v[dev].info, out, (size_t)len);
	else
		snprintf(out, (size_t)len, "%s", rt.v[dev].info->name);
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
	return dev_string(name, len, dev, false);
}

CU_EXPORT CUresult CUDAAPI cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
	return dev_string(pciBusId, len, dev, true);
}

CU_EXPORT CUresult CUDAAPI cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
	int found;
	CUresult r = cu_need(cu_ready(), dev && pciBusId);

	if (r)
		return r;
	found = rt_vgpu_by_bus_id(pciBusId);
	if (found == -2)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (found < 0)
		return CU_REFUSE(CUDA_ERROR_INVALID_DEVICE);
	*dev = found;
	return CUDA_SUCCESS;
}

/* vGPUs do not reach each other's memory (yet): no peer access */
CU_EXPORT CUresult CUDAAPI cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
	CUresult r = check_dev(dev);

	if (!r)
		r = check_dev(peerDev);
	if (r)
		return r;
	if (!canAccessPeer)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	*canAccessPeer = 0;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib, CUdevice srcDevice,
						   CUdevice dstDevice)
{
	CUresult r = check_dev(srcDevice);

	if (!r)
		r = check_dev(dstDevice);
	if (r)
		return r;
	if (!value || srcDevice == dstDevice)
		return CU_REFUSE(CUDA_ERROR_INVALID_DEVICE);
	*value = 0;
	return CUDA_SUCCESS;
}
