// SPDX-License-Identifier: MIT
/*
 * drvcost: what the driver calls on mearasd's synchronization path cost on
 * this machine (median of many, microseconds), natively. It explains the
 * launch_sync_us gap: each call mearasd makes per synchronizing record is
 * paid on top of native. Prints one "name us" line per call. Then three ways
 * to learn that a 4-byte device-to-host copy is done, each the whole copy and
 * wait: the driver's own wait (cuStreamSynchronize), what mearasd's worker
 * does (an event recorded behind it, queried until it passed), and a stream
 * memop (cuStreamWriteValue32 behind it into mapped host memory, the CPU
 * spinning on that word; "not supported" where the driver refuses it).
 */
#include <cuda.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define N 2001

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double samples[N];

static void report(const char *name)
{
	qsort(samples, N, sizeof(samples[0]), cmp);
	printf("%-28s %.2f\n", name, samples[N / 2]);
}

#define CK(x)                                                                   \
	do {                                                                    \
		CUresult r_ = (x);                                              \
		if (r_ != CUDA_SUCCESS) {                                       \
			fprintf(stderr, "%s failed: %d\n", #x, (int)r_);        \
			exit(1);                                                \
		}                                                               \
	} while (0)

/* the median of N runs of a driver call, each timed and checked (i is the
 * run's index), reported as NAME */
#define TIME_EACH(name, call)                                                   \
	do {                                                                    \
		for (int i = 0; i < N; i++) {                                   \
			double t = now_us();                                    \
			CK(call);                                               \
			samples[i] = now_us() - t;                              \
		}                                                               \
		report(name);                                                   \
	} while (0)

static CUresult copy_then_sync(CUstream s, CUdeviceptr src, void *h)
{
	CUresult r = cuMemcpyDtoHAsync(h, src, 4, s);

	return r ? r : cuStreamSynchronize(s);
}

/* The three waits for a 4-byte device-to-host copy on stream s into h. */
static void copy_waits(CUstream s, CUdeviceptr src, void *h, CUevent e)
{
	volatile unsigned *flag;
	CUdeviceptr dflag;
	unsigned v = 0;
	CUresult r = CUDA_SUCCESS;

	TIME_EACH("D2H 4 B + stream sync", copy_then_sync(s, src, h));
	for (int i = 0; i < N; i++) {
		double t = now_us();

		CK(cuMemcpyDtoHAsync(h, src, 4, s));
		CK(cuEventRecord(e, s));
		while ((r = cuEventQuery(e)) == CUDA_ERROR_NOT_READY)
			;
		CK(r);
		samples[i] = now_us() - t;
	}
	report("D2H 4 B + event query spin");
	CK(cuMemHostAlloc((void **)&flag, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
	CK(cuMemHostGetDevicePointer(&dflag, (void *)flag, 0));
	*flag = 0;
	for (int i = 0; i < N && !r; i++) {
		double t = now_us();

		CK(cuMemcpyDtoHAsync(h, src, 4, s));
		r = cuStreamWriteValue32(s, dflag, ++v, CU_STREAM_WRITE_VALUE_DEFAULT);
		while (!r && *flag != v)
			;
		samples[i] = now_us() - t;
	}
	if (r)
		printf("%-28s not supported (error %d)\n", "D2H 4 B + memop flag spin", (int)r);
	else
		report("D2H 4 B + memop flag spin");
	CK(cuStreamSynchronize(s));
	CK(cuMemFreeHost((void *)flag));
}

int main(void)
{
	CUdevice d;
	CUcontext c;
	CUevent ev[N];
	CUevent e;
	int p[2];

	CK(cuInit(0));
	CK(cuDeviceGet(&d, 0));
	CK(cuDevicePrimaryCtxRetain(&c, d));
	CK(cuCtxSetCurrent(c));
	TIME_EACH("cuEventCreate", cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
	CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
	for (int i = 0; i < N; i++) {
		double t = now_us();

		CK(cuEventRecord(e, NULL));
		samples[i] = now_us() - t;
		CK(cuEventSynchronize(e));
	}
	report("cuEventRecord");
	TIME_EACH("cuEventQuery (passed)", cuEventQuery(e));
	TIME_EACH("cuCtxSynchronize (idle)", cuCtxSynchronize());
	TIME_EACH("cuStreamSynchronize (idle)", cuStreamSynchronize(NULL));
	TIME_EACH("cuEventDestroy", cuEventDestroy(ev[i]));
	if (pipe(p))
		return 1;
	for (int i = 0; i < N; i++) {
		struct pollfd f[2] = { { .fd = p[0], .events = POLLIN }, { .fd = p[0], .events = POLLIN } };
		double t = now_us();

		poll(f, 2, 0);
		samples[i] = now_us() - t;
	}
	report("poll (2 empty pipes)");
	{
		CUstream s;
		CUdeviceptr src;
		void *h;

		CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
		CK(cuMemAlloc(&src, 4));
		CK(cuMemsetD32(src, 0, 1));
		CK(cuMemHostAlloc(&h, 4, 0));
		copy_waits(s, src, h, e);
		CK(cuMemFreeHost(h));
		CK(cuMemFree(src));
		CK(cuStreamDestroy(s));
	}
	return 0;
}
