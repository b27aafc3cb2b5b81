// How fast the driver API launches empty kernels from one thread
// (cuLaunchKernel on the NULL stream), to compare with the runtime's
// cudaLaunchKernel rate that microbench measures natively.
#include <cuda.h>
#include <stdio.h>
#include <time.h>

static const char ptx[] =
	".version 8.0\n.target sm_90\n.address_size 64\n"
	".visible .entry empty() { ret; }\n";

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction f;
	double best = 0;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
	    cuModuleLoadData(&mod, ptx) || cuModuleGetFunction(&f, mod, "empty")) {
		fprintf(stderr, "drv_launch: setup failed\n");
		return 1;
	}
	for (int rep = 0; rep < 7; rep++) {
		struct timespec t0, t1;
		const int n = 100000;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < n; i++)
			cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
		cuCtxSynchronize();
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double r = n / ((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
		if (r > best)
			best = r;
	}
	printf("METRIC driver_launch_rate launches/s %.1f\n", best);
	return 0;
}
