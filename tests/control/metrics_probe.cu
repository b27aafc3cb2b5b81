// A CUDA program with known work for the metrics test (tests/control/test_metrics.py):
//   metrics_probe BYTES LAUNCHES SYNCS [hold|-] [DEVICE]
// on vGPU DEVICE (default 0): copies BYTES to the device and back (each cudaMemcpy waits),
// launches a kernel LAUNCHES times, synchronizes SYNCS more times, and asks for
// more memory than the quota (one failed call). With "hold" it keeps 16 MiB
// allocated, prints "ready" and waits for a line on stdin before it ends.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__global__ void bump(unsigned char *p, size_t n)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	if (i < n)
		p[i]++;
}

#define CHECK(call)                                                                   \
	do {                                                                          \
		cudaError_t e_ = (call);                                              \
		if (e_ != cudaSuccess) {                                              \
			fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));   \
			return 1;                                                     \
		}                                                                     \
	} while (0)

int main(int argc, char **argv)
{
	size_t bytes;
	int launches, syncs, device;
	unsigned char *host, *dev, *held = NULL;

	if (argc < 4) {
		fprintf(stderr, "usage: metrics_probe BYTES LAUNCHES SYNCS [hold|-] [DEVICE]\n");
		return 2;
	}
	bytes = strtoull(argv[1], NULL, 10);
	launches = atoi(argv[2]);
	syncs = atoi(argv[3]);
	device = argc > 5 ? atoi(argv[5]) : 0;
	CHECK(cudaSetDevice(device));
	CHECK(cudaMallocHost(&host, bytes));
	memset(host, 1, bytes);
	CHECK(cudaMalloc(&dev, bytes));
	CHECK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
	for (int i = 0; i < launches; i++)
		bump<<<(unsigned)((bytes + 255) / 256), 256>>>(dev, bytes);
	CHECK(cudaGetLastError());
	for (int i = 0; i < syncs; i++)
		CHECK(cudaDeviceSynchronize());
	CHECK(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
	/* more than the vGPU's quota: mearasd refuses the allocation */
	if (cudaMalloc((void **)&held, (size_t)1 << 46) == cudaSuccess) {
		fprintf(stderr, "allocating 64 TiB succeeded\n");
		return 1;
	}
	held = NULL;
	cudaGetLastError();
	if (argc > 4 && !strcmp(argv[4], "hold")) {
		char line[16];

		CHECK(cudaMalloc(&held, 16u << 20));
		CHECK(cudaDeviceSynchronize());
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			line[0] = 0;
		CHECK(cudaFree(held));
	}
	CHECK(cudaFree(dev));
	CHECK(cudaFreeHost(host));
	printf("done\n");
	return 0;
}
