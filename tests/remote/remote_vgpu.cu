// A CUDA program run against mearasd with vGPU 0 local and vGPU 1 remote.
//   remote_vgpu all        every functional check, "PASS name"/"FAIL name" lines
//   remote_vgpu copyloop   16 MiB round trips on vGPU 1 until one fails (fault tests)
//   remote_vgpu bench      timing of round trips on vGPU 1
//   remote_vgpu d2h-h2d    only the device-to-host then host-to-device checks
//   remote_vgpu mapped     only the mapped host memory checks
//   remote_vgpu bidir      large copies both ways and small calls at once on vGPU 1
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

static int failures;

static void report(bool ok, const char *name, const char *detail = "")
{
	printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", name, detail[0] ? ": " : "", detail);
	fflush(stdout);
	if (!ok)
		failures++;
}

#define CK(call)                                                                         \
	do {                                                                             \
		cudaError_t e_ = (call);                                                 \
		if (e_ != cudaSuccess) {                                                 \
			char d_[256];                                                    \
			snprintf(d_, sizeof(d_), "%s -> %s", #call, cudaGetErrorString(e_)); \
			report(false, __func__, d_);                                     \
			return false;                                                    \
		}                                                                        \
	} while (0)

__global__ void scale(float *p, int n, double f)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] = (float)(p[i] * f);
}

// Adds v to n words at p. On the sim device this kernel is modelled by name
// (host-backend/device_sim.c), so it really writes mapped host memory there.
extern "C" __global__ void mearas_sim_add_u32(unsigned *p, unsigned n, unsigned v)
{
	for (unsigned i = 0; i < n; i++)
		p[i] += v;
}

static double now_s()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 131u + seed + (i >> 12));
}

/* p holds fill's bytes of seed */
static bool check(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(i * 131u + seed + (i >> 12)))
			return false;
	return true;
}

/* one round trip: host -> device -> device (D2D) -> host, checked */
static bool round_trip(size_t n, bool pinned, bool async, unsigned seed)
{
	unsigned char *src, *dst;
	void *d1, *d2;
	cudaStream_t s = nullptr;

	if (pinned) {
		CK(cudaMallocHost((void **)&src, n));
		CK(cudaMallocHost((void **)&dst, n));
	} else {
		src = (unsigned char *)malloc(n);
		dst = (unsigned char *)malloc(n);
	}
	fill(src, n, seed);
	memset(dst, 0xee, n);
	CK(cudaMalloc(&d1, n));
	CK(cudaMalloc(&d2, n));
	if (async) {
		CK(cudaStreamCreate(&s));
		CK(cudaMemcpyAsync(d1, src, n, cudaMemcpyHostToDevice, s));
		CK(cudaMemcpyAsync(d2, d1, n, cudaMemcpyDeviceToDevice, s));
		CK(cudaMemcpyAsync(dst, d2, n, cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
		CK(cudaStreamDestroy(s));
	} else {
		CK(cudaMemcpy(d1, src, n, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(d2, d1, n, cudaMemcpyDeviceToDevice));
		CK(cudaMemcpy(dst, d2, n, cudaMemcpyDeviceToHost));
	}
	bool ok = memcmp(src, dst, n) == 0;
	CK(cudaFree(d1));
	CK(cudaFree(d2));
	if (pinned) {
		CK(cudaFreeHost(src));
		CK(cudaFreeHost(dst));
	} else {
		free(src);
		free(dst);
	}
	return ok;
}

static bool test_devices()
{
	int n = 0;
	cudaDeviceProp p0, p1;

	CK(cudaGetDeviceCount(&n));
	if (n != 2) {
		report(false, "devices", "expected 2 vGPUs");
		return false;
	}
	CK(cudaGetDeviceProperties(&p0, 0));
	CK(cudaGetDeviceProperties(&p1, 1));
	printf("  vGPU 0: %s, vGPU 1: %s, %zu MiB\n", p0.name, p1.name, p1.totalGlobalMem >> 20);
	report(p1.totalGlobalMem > 0 && p1.multiProcessorCount > 0, "devices");
	return true;
}

static bool test_round_trips()
{
	const size_t sizes[] = { 1, 7, 4096, 65537, 1u << 20, (3u << 20) + 5, 16u << 20, 64u << 20 };
	bool all = true;

	CK(cudaSetDevice(1));
	for (size_t n : sizes)
		for (int pinned = 0; pinned < 2; pinned++)
			for (int async = 0; async < 2; async++) {
				char name[96];
				bool ok = round_trip(n, pinned, async, (unsigned)(n + pinned * 2 + async));

				snprintf(name, sizeof(name), "roundtrip-%zu-%s-%s", n, pinned ? "pinned" : "pageable",
					 async ? "async" : "sync");
				report(ok, name);
				all &= ok;
			}
	return all;
}

static bool test_memset_2d()
{
	const size_t n = 5 << 20;
	unsigned char *h = (unsigned char *)malloc(n);
	void *d;
	bool ok = true;

	CK(cudaSetDevice(1));
	CK(cudaMalloc(&d, n));
	CK(cudaMemset(d, 0x5a, n));
	CK(cudaMemset((char *)d + 100, 0x11, 1000));
	CK(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < n; i++)
		ok &= h[i] == ((i >= 100 && i < 1100) ? 0x11 : 0x5a);
	report(ok, "memset");
	/* 2D: 64 rows of 100 bytes out of a pitched buffer into a pinned one with gaps */
	{
		unsigned char *ph;
		size_t pitch;
		void *d2;
		bool ok2 = true;

		CK(cudaMallocPitch(&d2, &pitch, 100, 64));
		CK(cudaMemset2D(d2, pitch, 0x33, 100, 64));
		CK(cudaMallocHost((void **)&ph, 256 * 64));
		memset(ph, 0x77, 256 * 64);
		CK(cudaMemcpy2D(ph, 256, d2, pitch, 100, 64, cudaMemcpyDeviceToHost));
		for (size_t r = 0; r < 64; r++)
			for (size_t c = 0; c < 256; c++)
				ok2 &= ph[r * 256 + c] == (c < 100 ? 0x33 : 0x77);
		report(ok2, "memcpy2d-d2h-keeps-gaps");
		CK(cudaFreeHost(ph));
		CK(cudaFree(d2));
	}
	CK(cudaFree(d));
	free(h);
	return ok;
}

static bool test_launch()
{
	const int n = 1 << 16;
	float *d;

	CK(cudaSetDevice(1));
	CK(cudaMalloc(&d, n * sizeof(float)));
	scale<<<n / 256, 256>>>(d, n, 2.0);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	report(true, "launch-accepted");
	CK(cudaFree(d));
	return true;
}

static bool test_events_streams()
{
	cudaStream_t s1, s2;
	cudaEvent_t a, b;
	float ms = -1;
	void *d;
	int *h;
	const size_t n = 1 << 20;

	CK(cudaSetDevice(1));
	CK(cudaStreamCreate(&s1));
	CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	CK(cudaMalloc(&d, n));
	CK(cudaMallocHost((void **)&h, n));
	CK(cudaEventRecord(a, s1));
	CK(cudaMemsetAsync(d, 0x42, n, s1));
	CK(cudaEventRecord(b, s1));
	CK(cudaStreamWaitEvent(s2, b, 0));
	CK(cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, s2));
	CK(cudaStreamSynchronize(s2));
	CK(cudaEventSynchronize(b));
	CK(cudaEventQuery(b));
	CK(cudaStreamQuery(s1));
	CK(cudaEventElapsedTime(&ms, a, b));
	bool ok = ms >= 0;
	for (size_t i = 0; i < n / 4; i++)
		ok &= h[i] == 0x42424242;
	report(ok, "events-streams");
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	CK(cudaStreamDestroy(s1));
	CK(cudaStreamDestroy(s2));
	CK(cudaFree(d));
	CK(cudaFreeHost(h));
	return ok;
}

static void CUDART_CB host_fn_count(void *p)
{
	__atomic_fetch_add((int *)p, 1, __ATOMIC_SEQ_CST);
}

static void CUDART_CB host_cb_seen(cudaStream_t, cudaError_t status, void *p)
{
	if (status == cudaSuccess)
		__atomic_fetch_add((int *)p, 100, __ATOMIC_SEQ_CST);
}

/* Host functions through the remote vGPU: run in stream order (after the copy
 * before them), and a stream synchronize waits for them. */
static bool test_host_funcs(int dev)
{
	cudaStream_t s;
	int *h, calls = 0;
	void *d;
	const size_t n = 8 << 20;

	CK(cudaSetDevice(dev));
	CK(cudaStreamCreate(&s));
	CK(cudaMalloc(&d, n));
	CK(cudaMallocHost((void **)&h, n));
	CK(cudaMemsetAsync(d, 0x17, n, s));
	CK(cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, s));
	CK(cudaLaunchHostFunc(s, host_fn_count, &calls));
	CK(cudaStreamAddCallback(s, host_cb_seen, &calls, 0));
	CK(cudaLaunchHostFunc(s, host_fn_count, &calls));
	CK(cudaStreamSynchronize(s));
	/* a GPU holds the stream until the function returns; the sim device does
	 * not (it runs the request on its poller), so give the functions time */
	for (int i = 0; i < 2000 && __atomic_load_n(&calls, __ATOMIC_SEQ_CST) != 102; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	bool ok = __atomic_load_n(&calls, __ATOMIC_SEQ_CST) == 102 && h[0] == 0x17171717 &&
		  h[n / 4 - 1] == 0x17171717;
	report(ok, dev ? "host-functions-remote" : "host-functions-local",
	       ok ? "" : "host functions did not all run within 2 s of the synchronize");
	CK(cudaStreamDestroy(s));
	CK(cudaFree(d));
	CK(cudaFreeHost(h));
	return ok;
}

/* Thousands of small asynchronous writes to one word, across many batches:
 * the last one must win. */
static bool test_ordering()
{
	int *d, *h, v = -1;
	const int N = 20000;

	CK(cudaSetDevice(1));
	CK(cudaMalloc((void **)&d, 64 * sizeof(int)));
	CK(cudaMallocHost((void **)&h, N * sizeof(int)));
	for (int i = 0; i < N; i++) {
		h[i] = i;
		CK(cudaMemcpyAsync(d + (i % 64), h + i, sizeof(int), cudaMemcpyHostToDevice, 0));
		if (i % 3 == 0)
			CK(cudaMemsetAsync(d + 63, 0, sizeof(int), 0));
	}
	CK(cudaMemcpy(&v, d + ((N - 1) % 64), sizeof(int), cudaMemcpyDeviceToHost));
	report(v == N - 1, "ordering-across-batches");
	CK(cudaFree(d));
	CK(cudaFreeHost(h));
	return v == N - 1;
}

static bool test_threads()
{
	std::vector<std::thread> ts;
	int bad = 0;

	for (int t = 0; t < 8; t++)
		ts.emplace_back([t, &bad] {
			if (cudaSetDevice(1) != cudaSuccess) {
				__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
				return;
			}
			for (int k = 0; k < 20; k++)
				if (!round_trip(4096u + (size_t)t * 70000u + (size_t)k * 13u, k & 1, (k >> 1) & 1,
						(unsigned)(t * 100 + k)))
					__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
		});
	for (auto &t : ts)
		t.join();
	report(bad == 0, "8-threads");
	return bad == 0;
}

static bool test_local_and_remote()
{
	void *d0, *d1;
	int a = 0x1234, b = 0;

	CK(cudaSetDevice(0));
	CK(cudaMalloc(&d0, 4096));
	CK(cudaMemcpy(d0, &a, sizeof(a), cudaMemcpyHostToDevice));
	CK(cudaSetDevice(1));
	CK(cudaMalloc(&d1, 4096));
	CK(cudaSetDevice(0));
	CK(cudaMemcpy(&b, d0, sizeof(b), cudaMemcpyDeviceToHost));
	report(b == a && d0 != d1 && (((uintptr_t)d0 ^ (uintptr_t)d1) >> 40) != 0, "local-vgpu0-and-distinct-windows");
	CK(cudaFree(d0));
	CK(cudaSetDevice(1));
	CK(cudaFree(d1));
	return true;
}

/* Waits (bounded: 20 s) until the pinned byte at p reads want: a
 * device-to-host copy has started to land on this node. Host-side
 * observation only, not a CUDA synchronization. */
static bool wait_landed(const unsigned char *p, unsigned char want)
{
	double t0 = now_s();

	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != want) {
		if (now_s() - t0 > 20)
			return false;
		std::this_thread::yield();
	}
	return true;
}

/*
 * Device-to-host into pinned memory, then host-to-device from that memory on
 * the same stream with no host synchronization between: in stream order the
 * second copy reads what the first wrote. The device-to-host copy writes
 * `rows` rows of `width` bytes, `pitch` apart, at `off` into a pinned buffer
 * of `span` bytes whose other bytes the host wrote; the host-to-device copy
 * reads the whole buffer. It is issued once the remote node has run the
 * first copy but before its bytes are back on this node: with `lead`, a
 * device-to-host copy of that many bytes (one piece: under twice
 * REMOTE_SPLIT_BYTES) goes first on the stream and the host waits until its
 * first byte arrives (the bytes under test come behind the rest of it);
 * without, the host waits until the first byte of the copy under test
 * arrives (a copy of several pieces: the rest is still on its way). A
 * forwarder that sends the pinned bytes as they are then sends stale ones.
 * Checks the second device buffer, and the pinned buffer itself, against
 * what CUDA gives.
 */
static bool d2h_then_h2d(const char *name, size_t span, size_t off, size_t width, size_t pitch, size_t rows,
			 size_t lead)
{
	const size_t n = width * rows;
	unsigned char *p, *l = nullptr, *want = (unsigned char *)malloc(span), *src = (unsigned char *)malloc(n);
	unsigned char *got = (unsigned char *)malloc(span);
	void *da, *db, *dl = nullptr;
	cudaStream_t s;
	bool landed, ok;

	CK(cudaSetDevice(1));
	CK(cudaStreamCreate(&s));
	CK(cudaMallocHost((void **)&p, span));
	CK(cudaMalloc(&da, n));
	CK(cudaMalloc(&db, span));
	fill(want, span, 11);
	memcpy(p, want, span); /* the host's bytes; the copy replaces some of them */
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < width; c++) {
			size_t at = off + r * pitch + c;

			src[r * width + c] = (unsigned char)(p[at] ^ 0xa5); /* differs from the stale byte */
			want[at] = src[r * width + c];
		}
	CK(cudaMemcpy(da, src, n, cudaMemcpyHostToDevice));
	CK(cudaMemset(db, 0, span));
	if (lead) {
		CK(cudaMalloc(&dl, lead));
		CK(cudaMallocHost((void **)&l, lead));
		CK(cudaMemset(dl, 0x3c, lead));
		memset(l, 0xc3, lead);
		CK(cudaMemcpyAsync(l, dl, lead, cudaMemcpyDeviceToHost, s));
	}
	if (rows == 1)
		CK(cudaMemcpyAsync(p + off, da, width, cudaMemcpyDeviceToHost, s));
	else
		CK(cudaMemcpy2DAsync(p + off, pitch, da, width, width, rows, cudaMemcpyDeviceToHost, s));
	landed = lead ? wait_landed(l, 0x3c) : wait_landed(p + off, want[off]);
	CK(cudaMemcpyAsync(db, p, span, cudaMemcpyHostToDevice, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpy(got, db, span, cudaMemcpyDeviceToHost));
	ok = landed && memcmp(got, want, span) == 0 && memcmp(p, want, span) == 0;
	{
		char d[160] = "";
		size_t bad = 0, first = span;

		for (size_t i = 0; i < span; i++)
			if (got[i] != want[i] && !bad++)
				first = i;
		if (!ok)
			snprintf(d, sizeof(d), "%s; device copy: %zu of %zu bytes differ (first at %zu); pinned buffer %s",
				 landed ? "copy landed" : "copy never landed", bad, span, first,
				 memcmp(p, want, span) ? "differs" : "right");
		report(ok, name, d);
	}
	CK(cudaStreamDestroy(s));
	CK(cudaFreeHost(p));
	CK(cudaFree(da));
	CK(cudaFree(db));
	if (lead) {
		CK(cudaFreeHost(l));
		CK(cudaFree(dl));
	}
	free(want);
	free(src);
	free(got);
	return ok;
}

static bool test_d2h_then_h2d()
{
	const size_t lead = (8u << 20) - 4096; /* one piece */
	bool ok = true;

	/* a forwarder that gets this wrong only loses the race sometimes: try a few times */
	for (int i = 0; i < 4; i++) {
		ok &= d2h_then_h2d("d2h-then-h2d-same-stream-4KiB", 4096, 0, 4096, 4096, 1, lead);
		/* the copy writes part of what the second one reads: the rest is the host's */
		ok &= d2h_then_h2d("d2h-then-h2d-partial-overlap", 3 * 4096 + 17, 4096 + 3, 4096, 4096, 1, lead);
		/* 2D: rows with gaps the host wrote */
		ok &= d2h_then_h2d("d2h2d-then-h2d-gaps", 512 + 64 * 256 + 300, 512, 100, 256, 64, lead);
	}
	/* several pieces each way (REMOTE_SPLIT_BYTES is 4 MiB) */
	ok &= d2h_then_h2d("d2h-then-h2d-same-stream-12MiB-pieces", (12u << 20) + 5, 0, (12u << 20) + 5,
			   (12u << 20) + 5, 1, 0);
	return ok;
}

static volatile unsigned seen_by_host_fn;
static volatile int host_fn_ran;

static void CUDART_CB read_mapped(void *p)
{
	seen_by_host_fn = *(volatile unsigned *)p;
	__atomic_store_n(&host_fn_ran, 1, __ATOMIC_RELEASE);
}

// Mapped host memory on the remote vGPU: kernels write the client's pinned
// memory (through the remote node's copy), host and device changes to one
// range both survive, a host function after a kernel sees its writes, and
// back-to-back launches are not undone by the host's older bytes.
static bool test_mapped()
{
	const unsigned n = 64;
	unsigned *h, *d, *reg, *twin;
	int can = 0;
	cudaStream_t s;
	bool ok = true;

	CK(cudaSetDevice(1));
	CK(cudaDeviceGetAttribute(&can, cudaDevAttrCanMapHostMemory, 1));
	report(can == 1, "mapped-attribute");
	CK(cudaHostAlloc(&h, n * sizeof(unsigned), cudaHostAllocMapped));
	for (unsigned i = 0; i < n; i++)
		h[i] = i;
	CK(cudaHostGetDevicePointer((void **)&d, h, 0));
	mearas_sim_add_u32<<<1, 1>>>(d, n, 5);
	CK(cudaDeviceSynchronize());
	for (unsigned i = 0; i < n; i++)
		ok = ok && h[i] == i + 5;
	report(ok, "mapped-kernel-write");

	{
		/* unified addressing: a small cudaHostAlloc block without the
		 * mapped flag goes to a kernel through its host pointer */
		unsigned *flag;
		CK(cudaHostAlloc(&flag, 4 * sizeof(unsigned), cudaHostAllocPortable));
		flag[0] = 40;
		flag[3] = 43;
		mearas_sim_add_u32<<<1, 1>>>(flag, 4, 2);
		CK(cudaDeviceSynchronize());
		flag[3] = 50;
		mearas_sim_add_u32<<<1, 1>>>(flag + 3, 1, 1);
		CK(cudaDeviceSynchronize());
		report(flag[0] == 42 && flag[3] == 51, "mapped-unflagged-small-allocation");
		CK(cudaFreeHost(flag));
	}

	h[3] = 1000; // the host's change, next to the device's
	mearas_sim_add_u32<<<1, 1>>>(d + 1, 2, 1);
	CK(cudaDeviceSynchronize());
	report(h[1] == 7 && h[2] == 8 && h[3] == 1000 && h[4] == 9, "mapped-host-and-device-changes");

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	mearas_sim_add_u32<<<1, 1, 0, s>>>(d, 1, 10);
	CK(cudaLaunchHostFunc(s, read_mapped, h));
	mearas_sim_add_u32<<<1, 1, 0, s>>>(d + 5, 1, 1);
	mearas_sim_add_u32<<<1, 1, 0, s>>>(d + 5, 1, 1);
	CK(cudaStreamSynchronize(s));
	// the sim runs host functions without holding the stream: wait for it
	for (int i = 0; i < 2000 && !__atomic_load_n(&host_fn_ran, __ATOMIC_ACQUIRE); i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	{
		char d_[64];

		snprintf(d_, sizeof(d_), "saw %u, expected 15", seen_by_host_fn);
		report(seen_by_host_fn == 15, "mapped-host-function-sees-kernel", d_);
	}
	report(h[5] == 12, "mapped-back-to-back-launches");
	CK(cudaStreamDestroy(s));
	CK(cudaFreeHost(h));

	reg = (unsigned *)calloc(4096, sizeof(unsigned));
	if (!reg)
		return false;
	CK(cudaHostRegister(reg, 4096 * sizeof(unsigned), cudaHostRegisterMapped));
	CK(cudaHostGetDevicePointer((void **)&twin, reg, 0));
	mearas_sim_add_u32<<<1, 1>>>(twin + 4000, 96, 3);
	CK(cudaDeviceSynchronize());
	ok = true;
	for (unsigned i = 0; i < 4096; i++)
		ok = ok && reg[i] == (i >= 4000 ? 3u : 0u);
	report(ok, "mapped-host-register");
	CK(cudaHostUnregister(reg));
	free(reg);

	/* a kernel that changes one byte of every word of a 16 MiB mapped range:
	 * 4 Mi runs of changed bytes, which must all come back (they once went as
	 * one reply item each, overflowed the reply queue and were lost) */
	{
		const unsigned big = 4u << 20;
		unsigned *hb, *db;
		bool ok2 = true;

		CK(cudaHostAlloc(&hb, big * sizeof(unsigned), cudaHostAllocMapped));
		for (unsigned i = 0; i < big; i++)
			hb[i] = i << 8;
		CK(cudaHostGetDevicePointer((void **)&db, hb, 0));
		mearas_sim_add_u32<<<1, 1>>>(db, big, 1);
		CK(cudaDeviceSynchronize());
		for (unsigned i = 0; i < big && ok2; i++)
			ok2 = hb[i] == (i << 8) + 1;
		report(ok2, "mapped-many-small-runs");
		CK(cudaFreeHost(hb));
	}
	return true;
}

static int copyloop()
{
	const size_t n = 16u << 20;
	unsigned char *h;
	void *d;
	unsigned long k = 0;

	if (cudaSetDevice(1) || cudaMallocHost((void **)&h, n) || cudaMalloc(&d, n)) {
		printf("setup failed\n");
		return 2;
	}
	for (;; k++) {
		cudaError_t e = cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);

		if (!e)
			e = cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost);
		if (e) {
			printf("ERROR after %lu round trips: %s\n", k, cudaGetErrorString(e));
			fflush(stdout);
			/* and later calls fail at once, never hang */
			e = cudaMemcpy(h, d, 4096, cudaMemcpyDeviceToHost);
			printf("LATER %s\n", cudaGetErrorString(e));
			return 3;
		}
		if (k == 2) {
			printf("RUNNING\n");
			fflush(stdout);
		}
	}
}

static int bench()
{
	const size_t sizes[] = { 4096, 1u << 20, 16u << 20, 64u << 20 };
	int *d4;
	int v = 0;

	/* the local vGPU 0 first, as the yardstick for the remote one */
	for (int dev = 0; dev < 2; dev++) {
		const int N = 500;

		if (cudaSetDevice(dev) || cudaMalloc((void **)&d4, 4096))
			return 2;
		for (int i = 0; i < 20; i++)
			if (cudaMemcpy(&v, d4, sizeof(v), cudaMemcpyDeviceToHost))
				return 2;
		double t0 = now_s();
		for (int i = 0; i < N; i++)
			if (cudaMemcpy(&v, d4, sizeof(v), cudaMemcpyDeviceToHost))
				return 2;
		printf("BENCH %s sync-4B-d2h-latency-us %.1f\n", dev ? "remote" : "local", (now_s() - t0) / N * 1e6);
		if (!dev)
			cudaFree(d4);
	}
	for (size_t n : sizes) {
		unsigned char *h;
		void *d;
		int reps = n >= (16u << 20) ? 3 : 20;

		if (cudaMallocHost((void **)&h, n) || cudaMalloc(&d, n))
			return 2;
		memset(h, 1, n);
		double t0 = now_s();
		for (int i = 0; i < reps; i++)
			if (cudaMemcpy(d, h, n, cudaMemcpyHostToDevice))
				return 2;
		double t1 = now_s();
		for (int i = 0; i < reps; i++)
			if (cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost))
				return 2;
		double t2 = now_s();
		printf("BENCH pinned-%zuKiB h2d-MB/s %.0f d2h-MB/s %.0f\n", n >> 10, n * reps / (t1 - t0) / 1e6,
		       n * reps / (t2 - t1) / 1e6);
		cudaFreeHost(h);
		cudaFree(d);
	}
	return 0;
}

// a thread's buffers on vGPU 1: pinned host memory, device memory, a stream
struct bidir_bufs {
	unsigned char *h;
	void *d;
	cudaStream_t s;

	bool open(size_t n)
	{
		return !cudaSetDevice(1) && !cudaMallocHost((void **)&h, n) && !cudaMalloc(&d, n) && !cudaStreamCreate(&s);
	}
	// one copy on the stream, waited for
	bool copy(size_t n, cudaMemcpyKind kind)
	{
		return !cudaMemcpyAsync(kind == cudaMemcpyHostToDevice ? d : (void *)h,
					kind == cudaMemcpyHostToDevice ? (const void *)h : d, n, kind, s) &&
		       !cudaStreamSynchronize(s);
	}
	~bidir_bufs()
	{
		cudaStreamDestroy(s);
		cudaFree(d);
		cudaFreeHost(h);
	}
};

// Both directions at once on the remote vGPU, each thread on its own stream:
// large host-to-device copies, large device-to-host copies and small
// synchronous calls, byte-checked. With spinning nodes the link's receive
// threads also send; the large copies fill both directions of the link, and
// neither node may wait on the other (a hang here is the failure).
static int bidir()
{
	const size_t n = 24u << 20;
	const int reps = 8, calls = 2000;
	bool ok_up = true, ok_down = true, ok_small = true;

	std::thread up([&] {
		bidir_bufs b{};

		ok_up = b.open(n);
		for (int r = 0; r < reps && ok_up; r++) {
			fill(b.h, n, 100 + r);
			ok_up = b.copy(n, cudaMemcpyHostToDevice);
		}
		if (ok_up) {
			memset(b.h, 0, n);
			ok_up = b.copy(n, cudaMemcpyDeviceToHost) && check(b.h, n, 100 + reps - 1);
		}
	});
	std::thread down([&] {
		bidir_bufs b{};

		ok_down = b.open(n);
		if (ok_down) {
			fill(b.h, n, 7);
			ok_down = b.copy(n, cudaMemcpyHostToDevice);
		}
		for (int r = 0; r < reps && ok_down; r++) {
			memset(b.h, 0, n);
			ok_down = b.copy(n, cudaMemcpyDeviceToHost) && check(b.h, n, 7);
		}
	});
	std::thread small([&] {
		int *d, v = 0;

		if (cudaSetDevice(1) || cudaMalloc((void **)&d, sizeof(int))) {
			ok_small = false;
			return;
		}
		for (int i = 0; i < calls && ok_small; i++) {
			v = i;
			ok_small = !cudaMemcpy(d, &v, sizeof(v), cudaMemcpyHostToDevice) &&
				   !cudaMemcpy(&v, d, sizeof(v), cudaMemcpyDeviceToHost) && v == i;
		}
		cudaFree(d);
	});
	up.join();
	down.join();
	small.join();
	report(ok_up, "bidir-host-to-device");
	report(ok_down, "bidir-device-to-host");
	report(ok_small, "bidir-small-calls-meanwhile");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";

	if (!strcmp(mode, "copyloop"))
		return copyloop();
	if (!strcmp(mode, "bench"))
		return bench();
	if (!strcmp(mode, "bidir"))
		return bidir();
	if (!strcmp(mode, "d2h-h2d"))
		return test_d2h_then_h2d() ? 0 : 1;
	if (!strcmp(mode, "mapped")) {
		test_mapped();
		return failures ? 1 : 0;
	}
	if (!test_devices())
		return 1;
	test_local_and_remote();
	test_round_trips();
	test_memset_2d();
	test_launch();
	test_events_streams();
	test_host_funcs(0);
	test_host_funcs(1);
	test_ordering();
	test_threads();
	test_d2h_then_h2d();
	test_mapped();
	printf("%d failed checks\n", failures);
	return failures ? 1 : 0;
}
