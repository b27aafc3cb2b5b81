// What a CUDA program sees of its vGPUs through mearas: count, which
// physical GPU backs each (PCI bus id), memory total, and where the quota
// bites. Printed as key=value lines for tests/control/test_control.py.
//   assembly_probe            report and exit
//   assembly_probe hold       report, wait for a line on stdin, allocate again
//   assembly_probe busy SECS  report, then make cheap calls for SECS seconds
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int report(void)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	printf("count_status=%d\n", (int)e);
	if (e != cudaSuccess)
		return 1;
	printf("count=%d\n", n);
	for (int d = 0; d < n; d++) {
		size_t free_b = 0, total = 0;
		int bus = -1;
		void *p = NULL;

		struct cudaDeviceProp prop;

		cudaSetDevice(d);
		cudaDeviceGetAttribute(&bus, cudaDevAttrPciBusId, d);
		if (cudaGetDeviceProperties(&prop, d) == cudaSuccess)
			printf("dev%d_name=%s\ndev%d_cc=%d.%d\ndev%d_sms=%d\n", d, prop.name, d, prop.major,
			       prop.minor, d, prop.multiProcessorCount);
		e = cudaMemGetInfo(&free_b, &total);
		printf("dev%d_bus=%d\ndev%d_meminfo_status=%d\ndev%d_total=%zu\n", d, bus, d, (int)e, d, total);
		e = cudaMalloc(&p, total + (64u << 20));
		printf("dev%d_over_quota_status=%d\n", d, (int)e);
		cudaGetLastError();
		e = cudaMalloc(&p, 32u << 20);
		printf("dev%d_within_quota_status=%d\n", d, (int)e);
		if (e == cudaSuccess) {
			e = cudaMemset(p, 7, 32u << 20);
			if (e == cudaSuccess)
				e = cudaDeviceSynchronize();
			printf("dev%d_memset_status=%d\n", d, (int)e);
			cudaFree(p);
		}
	}
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	if (report())
		return 1;
	if (argc > 1 && !strcmp(argv[1], "hold")) {
		char line[16];
		void *p = NULL;
		cudaError_t e;

		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
		e = cudaMalloc(&p, 16u << 20);
		printf("after_release_malloc_status=%d\n", (int)e);
		e = cudaFree(p);
		printf("after_release_free_status=%d\n", (int)e);
	} else if (argc > 2 && !strcmp(argv[1], "busy")) {
		time_t end = time(NULL) + atoi(argv[2]);
		size_t f, t;
		long calls = 0;

		printf("ready\n");
		fflush(stdout);
		while (time(NULL) < end) {
			cudaSetDevice(calls & 1);
			cudaMemGetInfo(&f, &t);
			calls++;
		}
		printf("calls=%ld\n", calls);
	}
	return 0;
}
