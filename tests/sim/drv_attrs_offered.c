// Attributes that say what mearas offers, not what the GPU behind the vGPU
// can do (guest/core/attrs_offered.h): the sim device reports what an HGX
// H100 does (shareable POSIX file-descriptor handles, multicast, IPC events,
// dma_buf, GPUDirect RDMA), mearas serves none of them, and the driver API,
// the runtime's cudaDeviceGetAttribute and cudaGetDeviceProperties all say
// 0, so a library such as NCCL takes its fallback instead of calling into
// what fails. Run with MEARAS_VGPUS=2.
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

static const struct {
	CUdevice_attribute attr;
	const char *name;
} zero[] = {
	{ CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, "HANDLE_TYPE_POSIX_FILE_DESCRIPTOR" },
	{ CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, "MULTICAST_SUPPORTED" },
	{ CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, "IPC_EVENT_SUPPORTED" },
	{ CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, "DMA_BUF_SUPPORTED" },
	{ CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, "GPU_DIRECT_RDMA_SUPPORTED" },
	{ CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, "GPU_DIRECT_RDMA_WITH_CUDA_VMM" },
	{ CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, "HANDLE_TYPE_FABRIC_SUPPORTED" },
	{ CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, "HOST_NUMA_VMM_SUPPORTED" },
};

int main(void)
{
	int n = 0, fails = 0;

	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 1) {
		printf("FAIL: cuInit/cuDeviceGetCount\n");
		return 1;
	}
	for (int d = 0; d < n; d++) {
		struct cudaDeviceProp p;

		for (size_t i = 0; i < sizeof(zero) / sizeof(zero[0]); i++) {
			int cu = -1, rt = -1;

			if (cuDeviceGetAttribute(&cu, zero[i].attr, d) != CUDA_SUCCESS ||
			    cudaDeviceGetAttribute(&rt, (enum cudaDeviceAttr)zero[i].attr, d) != cudaSuccess) {
				printf("FAIL: device %d: %s could not be read\n", d, zero[i].name);
				fails++;
				continue;
			}
			if (cu != 0 || rt != 0) {
				printf("FAIL: device %d: %s is %d (driver) / %d (runtime), expected 0\n", d,
				       zero[i].name, cu, rt);
				fails++;
			}
		}
		if (cudaGetDeviceProperties(&p, d) != cudaSuccess) {
			printf("FAIL: cudaGetDeviceProperties(%d)\n", d);
			return 1;
		}
		if (p.ipcEventSupported != 0 || p.gpuDirectRDMASupported != 0) {
			printf("FAIL: device %d: ipcEventSupported %d, gpuDirectRDMASupported %d, expected 0\n", d,
			       p.ipcEventSupported, p.gpuDirectRDMASupported);
			fails++;
		}
	}
	if (fails)
		return 1;
	printf("PASS: %zu attributes answer 0 on %d vGPUs\n", sizeof(zero) / sizeof(zero[0]), n);
	return 0;
}
