/* SPDX-License-Identifier: MIT */
/*
 * Device attributes whose answer is what mearas offers, not what the GPU
 * behind the vGPU can do: the driver API (guest/libcuda/device.c) and the
 * runtime (guest/libcudart/api_device.c) give the same answers from here.
 * Libraries decide on their fallbacks from these (NCCL: multicast/NVLS,
 * fabric handles, shareable memory handles), so an attribute that says yes
 * to something mearas does not serve sends them into a call that fails
 * instead of into their fallback.
 */
#ifndef MEARAS_ATTRS_OFFERED_H
#define MEARAS_ATTRS_OFFERED_H

#include <cuda.h>

#include "core.h"

/* the value the vGPU reports for attribute attr, whose GPU's value is v */
static inline int core_offered_attr(int attr, int v)
{
	switch (attr) {
	/* managed memory is zero-copy memory of the data area (managed.c):
	 * offered where its host addresses are device addresses too */
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
		return v && rt.same_address;
	/* but not accessed concurrently with the device (the host synchronizes
	 * first), and no access to pageable host memory */
	case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
	case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
	case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES:
	case CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST:
	/* no shareable handles: cuMemExportToShareableHandle and
	 * cuMemImportFromShareableHandle are not served (nor fabric handles) */
	case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED:
	/* no cuMulticast* (NVLink SHARP) */
	case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED:
	/* no cuIpc* (events or memory) and no dma_buf export
	 * (cuMemGetHandleForAddressRange) */
	case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED:
	/* a guest's NIC cannot reach vGPU memory */
	case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED:
	/* cuMemCreate serves device memory only (guest/libcuda/vmm.c) */
	case CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED:
	/* CUDA arrays without backing until mapped (guest/libcuda/array.c) */
	case CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED:
		return 0;
	default:
		return v;
	}
}

#endif
