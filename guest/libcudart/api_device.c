// SPDX-License-Identifier: MIT
/* Devices: answered from the properties the back end published in the
 * region (no round trip), except synchronization and memory info. */
#include <stdio.h>
#include <string.h>

#include <cuda_profiler_api.h>

#include "mearas/log.h"
#include "attrs_offered.h"
#include "rt.h"

#define CUDART_VERSION_13 13000

static cudaError_t check_dev(int dev)
{
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	if (dev < 0 || (unsigned)dev >= rt.nvgpus)
		return cudaErrorInvalidDevice;
	return cudaSuccess;
}

/* a device query's out pointer (else cudaErrorInvalidValue), then check_dev */
static cudaError_t check_query(const void *out, int dev)
{
	return out ? check_dev(dev) : cudaErrorInvalidValue;
}

RT_EXPORT cudaError_t cudaGetDeviceCount(int *count)
{
	cudaError_t e;

	if (!count)
		return rt_set_error(cudaErrorInvalidValue);
	e = rt_ensure();
	*count = e ? 0 : (int)rt.nvgpus;
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaSetDevice(int device)
{
	cudaError_t e = check_dev(device);

	if (e)
		return rt_set_error(e);
	rt_set_device(device);
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags)
{
	(void)deviceFlags;
	(void)flags;
	return rt_set_error(check_dev(device));
}

RT_EXPORT cudaError_t cudaGetDevice(int *device)
{
	cudaError_t e;

	if (!device)
		return rt_set_error(cudaErrorInvalidValue);
	e = rt_ensure();
	if (e)
		return rt_set_error(e);
	*device = rt_tls.device;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaSetValidDevices(int *device_arr, int len)
{
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	if (len < 0 || (len > 0 && !device_arr))
		return rt_set_error(cudaErrorInvalidValue);
	for (int i = 0; i < len; i++)
		if (device_arr[i] < 0 || (unsigned)device_arr[i] >= rt.nvgpus)
			return rt_set_error(cudaErrorInvalidDevice);
	if (len > 0)
		rt_set_device(device_arr[0]);
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
	cudaError_t e = check_query(prop, device);

	if (!e)
		*prop = rt.v[device].prop;
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
	cudaError_t e = check_query(value, device);

	if (!e && ((int)attr <= 0 || (unsigned)attr >= MEARAS_NUM_ATTRS))
		e = cudaErrorInvalidValue;
	if (e)
		return rt_set_error(e);
	/* what mearas offers, as the driver API answers (attrs_offered.h) */
	*value = core_offered_attr((int)attr, rt.v[device].info->attrs[attr]);
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaChooseDevice(int *device, const struct cudaDeviceProp *prop)
{
	cudaError_t e = rt_ensure();
	int best = 0;

	if (e)
		return rt_set_error(e);
	if (!device || !prop)
		return rt_set_error(cudaErrorInvalidValue);
	for (unsigned i = 0; i < rt.nvgpus; i++) {
		const struct cudaDeviceProp *p = &rt.v[i].prop;

		if (p->major > prop->major || (p->major == prop->major && p->minor >= prop->minor)) {
			best = (int)i;
			break;
		}
	}
	*device = best;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
	cudaError_t e = check_dev(device);
	const int32_t *a;

	if (e)
		return rt_set_error(e);
	if (!pciBusId || len <= 0)
		return rt_set_error(cudaErrorInvalidValue);
	a = rt.v[device].info->attrs;
	snprintf(pciBusId, (size_t)len, "%08x:%02x:%02x.0", (unsigned)a[cudaDevAttrPciDomainId],
		 (unsigned)a[cudaDevAttrPciBusId], (unsigned)a[cudaDevAttrPciDeviceId]);
	return cudaSuccess;
}

/* vGPUs do not reach each other's memory (yet): every attribute of a pair
 * is 0, as cuDeviceGetP2PAttribute answers; a device and itself are no pair */
RT_EXPORT cudaError_t cudaDeviceGetP2PAttribute(int *value, enum cudaDeviceP2PAttr attr, int srcDevice,
						 int dstDevice)
{
	cudaError_t e = check_dev(srcDevice);

	(void)attr;
	if (!e)
		e = check_dev(dstDevice);
	if (!e && (!value || srcDevice == dstDevice))
		e = cudaErrorInvalidDevice;
	if (e)
		return rt_set_error(e);
	*value = 0;
	return cudaSuccess;
}

/* Nothing persists in the L2 cache: launch attributes that would make lines
 * persist (an access policy window) are refused (guest/core/launchattr.c) */
RT_EXPORT cudaError_t cudaCtxResetPersistingL2Cache(void)
{
	int dev;

	return rt_set_error(rt_ensure_device(&dev));
}

RT_EXPORT cudaError_t cudaDeviceGetByPCIBusId(int *device, const char *pciBusId)
{
	cudaError_t e = rt_ensure();
	int found;

	if (e)
		return rt_set_error(e);
	if (!device || !pciBusId)
		return rt_set_error(cudaErrorInvalidValue);
	found = rt_vgpu_by_bus_id(pciBusId);
	if (found < 0)
		return rt_set_error(found == -2 ? cudaErrorInvalidValue : cudaErrorInvalidDevice);
	*device = found;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	/* the driver's range on every current GPU */
	if (leastPriority)
		*leastPriority = RT_PRIORITY_LEAST;
	if (greatestPriority)
		*greatestPriority = RT_PRIORITY_GREATEST;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
	int dev;
	cudaError_t e = rt_ensure_device(&dev);

	if (e)
		return rt_set_error(e);
	if (flags & ~(unsigned)(cudaDeviceScheduleMask | cudaDeviceMapHost | cudaDeviceLmemResizeToMax |
				cudaDeviceSyncMemops))
		return rt_set_error(cudaErrorInvalidValue);
	rt.v[dev].flags = flags;
	return cudaSuccess;
}

/* the current device (*dev) of a call that answers into out: its error, or
 * cudaErrorInvalidValue without out */
static cudaError_t device_answering(int *dev, const void *out)
{
	cudaError_t e = rt_ensure_device(dev);

	return e ? e : out ? cudaSuccess : cudaErrorInvalidValue;
}

/* the current device (*dev) of a call that sets a value of 0..max */
static cudaError_t device_setting(int *dev, unsigned value, unsigned max)
{
	cudaError_t e = rt_ensure_device(dev);

	return e ? e : value <= max ? cudaSuccess : cudaErrorInvalidValue;
}

RT_EXPORT cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
	int dev;
	cudaError_t e = device_answering(&dev, flags);

	if (e)
		return rt_set_error(e);
	*flags = rt.v[dev].flags | cudaDeviceMapHost;
	return cudaSuccess;
}

/* connects, then op on the current device */
static cudaError_t on_device(cudaError_t (*op)(int))
{
	int dev;
	cudaError_t e = rt_ensure_device(&dev);

	return rt_set_error(e ? e : op(dev));
}

RT_EXPORT cudaError_t cudaDeviceSynchronize(void) { return on_device(rt_do_CTX_SYNC); }

RT_EXPORT cudaError_t cudaDeviceReset(void) { return on_device(rt_device_reset); }

RT_EXPORT cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
	uint64_t f, t;
	int dev;
	cudaError_t e = rt_ensure_device(&dev);

	if (!e && (!free_bytes || !total))
		e = cudaErrorInvalidValue;
	if (!e)
		e = rt_do_MEM_GET_INFO(dev, &f, &t);
	if (e)
		return rt_set_error(e);
	*free_bytes = f;
	*total = t;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return rt_set_error(cudaErrorInvalidValue);
	/* as CUDA: 0 when no driver is installed */
	*driverVersion = rt_ensure() ? 0 : rt.v[0].info->driver_version;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
	if (!runtimeVersion)
		return rt_set_error(cudaErrorInvalidValue);
	*runtimeVersion = CUDART_VERSION_13;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice)
{
	cudaError_t e = check_dev(device);

	if (!e)
		e = check_dev(peerDevice);
	if (e)
		return rt_set_error(e);
	if (!canAccessPeer)
		return rt_set_error(cudaErrorInvalidValue);
	/* kernels of one vGPU cannot dereference another vGPU's memory (it may be
	 * on another node); copies between vGPUs work (cudaMemcpyPeer) */
	*canAccessPeer = 0;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
	cudaError_t e = check_dev(peerDevice);

	(void)flags;
	return rt_set_error(e ? e : cudaErrorPeerAccessUnsupported);
}

RT_EXPORT cudaError_t cudaDeviceDisablePeerAccess(int peerDevice)
{
	cudaError_t e = check_dev(peerDevice);

	return rt_set_error(e ? e : cudaErrorPeerAccessNotEnabled);
}

/* Limits are the context's of the vGPU (each client has its own): what the
 * device says and takes, errors included. */
RT_EXPORT cudaError_t cudaDeviceGetLimit(size_t *pValue, enum cudaLimit limit)
{
	uint64_t v;
	int dev;
	cudaError_t e = rt_ensure_device(&dev);

	if (!e && !pValue)
		e = cudaErrorInvalidValue;
	if (!e)
		e = rt_do_DEVICE_GET_LIMIT(dev, (uint32_t)limit, &v);
	if (!e)
		*pValue = (size_t)v;
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value)
{
	int dev;
	cudaError_t e = rt_ensure_device(&dev);

	return rt_set_error(e ? e : rt_do_DEVICE_SET_LIMIT(dev, (uint32_t)limit, value));
}

RT_EXPORT cudaError_t cudaProfilerStart(void) { return on_device(rt_do_PROFILER_START); }

RT_EXPORT cudaError_t cudaProfilerStop(void) { return on_device(rt_do_PROFILER_STOP); }

/* a preference only, kept to be read back (the device's primary context's,
 * which cuCtxGetCacheConfig reads too): the GPU behind the vGPU chooses */
RT_EXPORT cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache cacheConfig)
{
	int dev;
	cudaError_t e = device_setting(&dev, (unsigned)cacheConfig, cudaFuncCachePreferEqual);

	if (e)
		return rt_set_error(e);
	rt.v[dev].cache_config = (int)cacheConfig;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaDeviceGetCacheConfig(enum cudaFuncCache *pCacheConfig)
{
	int dev;
	cudaError_t e = device_answering(&dev, pCacheConfig);

	if (e)
		return rt_set_error(e);
	*pCacheConfig = (enum cudaFuncCache)rt.v[dev].cache_config;
	return cudaSuccess;
}

/* Shared memory bank sizes are fixed (four bytes) on every GPU CUDA 13
 * runs on: the setting is accepted and changes nothing, as there. */
RT_EXPORT cudaError_t cudaDeviceGetSharedMemConfig(enum cudaSharedMemConfig *pConfig)
{
	int dev;
	cudaError_t e = device_answering(&dev, pConfig);

	if (e)
		return rt_set_error(e);
	*pConfig = cudaSharedMemBankSizeFourByte;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaDeviceSetSharedMemConfig(enum cudaSharedMemConfig config)
{
	int dev;

	return rt_set_error(device_setting(&dev, (unsigned)config, cudaSharedMemBankSizeEightByte));
}

RT_EXPORT struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w,
							    enum cudaChannelFormatKind f)
{
	struct cudaChannelFormatDesc d = { x, y, z, w, f };

	return d;
}

/* what the runtime loaded on a vGPU is gone with its reset, by whichever
 * front end (the core forgets its pools and allocations itself) */
__attribute__((constructor)) static void watch_resets(void)
{
	rt_on_reset(rt_modules_forget_vgpu);
}
