// SPDX-License-Identifier: MIT
/* Peer-to-peer status between two vGPUs: what mearas's driver API answers
 * for them. NVML asks the same question as cuDeviceCanAccessPeer (can one
 * device reach the other's memory), so the answer comes from there, and the
 * two cannot disagree: vGPUs do not reach each other's memory (copies
 * between them work, cuMemcpyPeer, but go through mearasd), so every pair
 * and every capability is NVML_P2P_STATUS_NOT_SUPPORTED, a vGPU and itself
 * too (cuDeviceCanAccessPeer says 0 there, as NVIDIA's does). NVLink is
 * never offered: a vGPU has no NVLink of its own (nvmlDeviceGetNvLink* are
 * not supported). The call succeeds: NCCL, for one, queries every pair at
 * its NVML initialization and gives up on any error. */
#include <cuda.h>

#include "nvml_int.h"

NVML_EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
						nvmlGpuP2PCapsIndex_t p2pIndex, nvmlGpuP2PStatus_t *p2pStatus)
{
	unsigned a, b;
	int can = 0;
	nvmlReturn_t r = nvml_device(device1, &a, NULL);

	if (!r)
		r = nvml_device(device2, &b, NULL);
	if (r)
		return r;
	if (!p2pStatus || (unsigned)p2pIndex >= (unsigned)NVML_P2P_CAPS_INDEX_UNKNOWN)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (cuDeviceCanAccessPeer(&can, (CUdevice)a, (CUdevice)b) != CUDA_SUCCESS)
		return rt_stopped() ? NVML_ERROR_GPU_IS_LOST : NVML_ERROR_UNKNOWN;
	switch (p2pIndex) {
	case NVML_P2P_CAPS_INDEX_READ:
	case NVML_P2P_CAPS_INDEX_WRITE:
	case NVML_P2P_CAPS_INDEX_PCI:
		*p2pStatus = can ? NVML_P2P_STATUS_OK : NVML_P2P_STATUS_NOT_SUPPORTED;
		break;
	case NVML_P2P_CAPS_INDEX_ATOMICS: {
		int atomics = 0;

		if (can && cuDeviceGetP2PAttribute(&atomics, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
						   (CUdevice)a, (CUdevice)b) != CUDA_SUCCESS)
			atomics = 0;
		*p2pStatus = atomics ? NVML_P2P_STATUS_OK : NVML_P2P_STATUS_NOT_SUPPORTED;
		break;
	}
	default:        /* NVML_P2P_CAPS_INDEX_NVLINK */
		*p2pStatus = NVML_P2P_STATUS_NOT_SUPPORTED;
		break;
	}
	return NVML_SUCCESS;
}
