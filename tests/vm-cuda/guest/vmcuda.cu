// SPDX-License-Identifier: MIT
// CUDA checks run inside a guest VM through mearas' VM transport.
// Usage: vmcuda props|memcpy|mapped|printf|errors|pinned|sleep SECONDS|hold SECONDS|dead SECONDS|
//        xowner SECONDS|xread DEVICE_POINTER
// Prints "GUEST-PASS name" / "GUEST-FAIL name: why" lines, then "N passed, M failed,
// K skipped"; exit status 1 on any failure.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <pthread.h>
#include <unistd.h>
#include <vector>

// tests/check.h's named checks, as the VM tests' guest programs print them
#define CHECK_PREFIX "GUEST-"
#include "../../check.h"

__global__ void scale(float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= a;
}

// reads another process's device memory (xread): on a GPU its window is
// not mapped in our context, so this faults, in our context only
__global__ void read_words(const unsigned *p, unsigned *out, int n)
{
	unsigned sum = 0;
	for (int i = 0; i < n; i++)
		sum += p[i];
	*out = sum;
}

__global__ void add_one(unsigned *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] += 1;
}

// also the one kernel mearasd's host-memory model runs (by this name)
extern "C" __global__ void mearas_sim_add_u32(unsigned *p, unsigned n, unsigned v)
{
	for (unsigned i = 0; i < n; i++)
		p[i] += v;
}

// device printf, one line (also modelled by the host-memory model, by name)
extern "C" __global__ void mearas_sim_printf(unsigned v)
{
	printf("mearas-sim device printf: %u\n", v);
}

static bool on_sim(void)
{
	cudaDeviceProp p;
	return cudaGetDeviceProperties(&p, 0) == cudaSuccess && strstr(p.name, "mearas-sim");
}

#define XWORDS 4096

// Two guest processes, each in its own slot, so its own host process and
// contexts. The owner holds a pattern in device memory and prints where;
// the reader (another process) tries to reach it; the owner then checks that
// its bytes are intact and that it still runs kernels.
static void xowner(int secs)
{
	std::vector<unsigned> a(XWORDS), b(XWORDS);
	unsigned *d = nullptr;
	cudaError_t e = cudaMalloc(&d, XWORDS * 4);

	for (int i = 0; i < XWORDS; i++)
		a[i] = 0xc0de0000u + (unsigned)i;
	if (!e)
		e = cudaMemcpy(d, a.data(), XWORDS * 4, cudaMemcpyHostToDevice);
	CHECK_NAMED(e == cudaSuccess, "xowner-init", "error %d", (int)e);
	printf("GUEST-READY %d ptr %p\n", (int)getpid(), (void *)d);
	fflush(stdout);
	sleep((unsigned)secs);
	e = cudaMemcpy(b.data(), d, XWORDS * 4, cudaMemcpyDeviceToHost);
	CHECK_NAMED(e == cudaSuccess && a == b, "xowner-bytes-intact", "error %d", (int)e);
	add_one<<<(XWORDS + 255) / 256, 256>>>(d, XWORDS);
	e = cudaDeviceSynchronize();
	if (!e)
		e = cudaMemcpy(b.data(), d, XWORDS * 4, cudaMemcpyDeviceToHost);
	// on the sim, kernels are not run: only the calls must succeed
	bool ran = on_sim() || b[7] == a[7] + 1;
	CHECK_NAMED(e == cudaSuccess && ran, "xowner-still-runs-kernels", "error %d", (int)e);
	cudaFree(d);
}

static void xread(const char *ptr)
{
	unsigned *p = (unsigned *)strtoull(ptr, nullptr, 16);
	std::vector<unsigned> b(XWORDS);
	unsigned *out = nullptr;
	cudaError_t e;

	e = cudaMemcpy(b.data(), p, XWORDS * 4, cudaMemcpyDeviceToHost);
	CHECK_NAMED(e != cudaSuccess, "xread-copy-refused", "copied another process's device memory");
	cudaGetLastError();
	if (on_sim()) {
		printf("  xread: the sim runs no kernels; the kernel read is checked on a GPU\n");
		return;
	}
	e = cudaMalloc(&out, 4);
	CHECK_NAMED(e == cudaSuccess, "xread-own-alloc", "error %d", (int)e);
	read_words<<<1, 1>>>(p, out, XWORDS);
	e = cudaDeviceSynchronize();
	printf("  xread: kernel on another process's memory: %d (%s)\n", (int)e, cudaGetErrorString(e));
	CHECK_NAMED(e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure, "xread-kernel-faults",
	      "error %d", (int)e);
}

static void fill(std::vector<unsigned char> &b, unsigned seed)
{
	unsigned s = seed * 2654435761u + 1;
	for (auto &c : b) {
		s = s * 1103515245u + 12345u;
		c = (unsigned char)(s >> 16);
	}
}

#define MWORDS 1024

// Mapped host memory on every vGPU: a kernel adds to words the host wrote,
// the host sees the sums, a second round sees the host's change between
// them (on a remote vGPU the serving node's copy of the memory must be
// where the guest's pointer points)
static void mapped(void)
{
	int n = 0;
	cudaGetDeviceCount(&n);
	for (int d = 0; d < n; d++) {
		char name[64];
		unsigned *h = nullptr, *dp = nullptr;
		int can = 0;
		bool ok = true;
		cudaSetDevice(d);
		cudaDeviceGetAttribute(&can, cudaDevAttrCanMapHostMemory, d);
		snprintf(name, sizeof(name), "mapped-dev%d-can-map", d);
		CHECK_NAMED(can == 1, name, "canMapHostMemory %d", can);
		cudaError_t e = cudaHostAlloc((void **)&h, MWORDS * sizeof(unsigned), cudaHostAllocMapped);
		if (!e)
			e = cudaHostGetDevicePointer((void **)&dp, h, 0);
		snprintf(name, sizeof(name), "mapped-dev%d-alloc", d);
		CHECK_NAMED(e == cudaSuccess, name, "error %d (%s)", (int)e, cudaGetErrorString(e));
		if (e)
			continue;
		for (unsigned i = 0; i < MWORDS; i++)
			h[i] = i;
		mearas_sim_add_u32<<<1, 1>>>(dp, MWORDS, 5);
		e = cudaDeviceSynchronize();
		for (unsigned i = 0; i < MWORDS && !e; i++)
			ok = ok && h[i] == i + 5;
		snprintf(name, sizeof(name), "mapped-dev%d-kernel-writes", d);
		CHECK_NAMED(e == cudaSuccess && ok, name, "error %d (%s), word 7 is %u", (int)e, cudaGetErrorString(e),
			    h[7]);
		h[3] = 100;
		mearas_sim_add_u32<<<1, 1>>>(dp, MWORDS, 1);
		e = cudaDeviceSynchronize();
		snprintf(name, sizeof(name), "mapped-dev%d-host-writes-seen", d);
		CHECK_NAMED(e == cudaSuccess && h[3] == 101 && h[4] == 10, name, "error %d, words %u %u", (int)e, h[3],
			    h[4]);
		cudaFreeHost(h);
	}
}

// a device printf on every vGPU, flushed by a synchronize: the host side
// (assembly-test.sh) looks for each line on the guest's console
static void device_printf(void)
{
	int n = 0;
	cudaGetDeviceCount(&n);
	for (int d = 0; d < n; d++) {
		char name[64];
		cudaSetDevice(d);
		fflush(stdout);
		mearas_sim_printf<<<1, 1>>>(100 + (unsigned)d);
		cudaError_t e = cudaDeviceSynchronize();
		fflush(stdout);
		snprintf(name, sizeof(name), "printf-dev%d-synchronized", d);
		CHECK_NAMED(e == cudaSuccess, name, "error %d (%s)", (int)e, cudaGetErrorString(e));
	}
}

static void props(void)
{
	int n = -1;
	cudaError_t e = cudaGetDeviceCount(&n);
	int want = getenv("WANT_DEVICES") ? atoi(getenv("WANT_DEVICES")) : 2;
	CHECK_NAMED(e == cudaSuccess && n == want, "device-count", "error %d, count %d, want %d", (int)e, n, want);
	for (int d = 0; d < n; d++) {
		cudaDeviceProp p;
		char name[64];
		snprintf(name, sizeof(name), "props-dev%d", d);
		e = cudaGetDeviceProperties(&p, d);
		CHECK_NAMED(e == cudaSuccess && p.name[0] && p.totalGlobalMem > 0 && p.major > 0 &&
			    p.maxThreadsPerBlock > 0 && p.warpSize == 32, name,
		      "error %d name '%s' mem %zu cc %d.%d", (int)e, p.name, p.totalGlobalMem, p.major, p.minor);
		printf("  device %d: %s, %zu MiB, cc %d.%d, %d SMs\n", d, p.name, p.totalGlobalMem >> 20,
		       p.major, p.minor, p.multiProcessorCount);
	}
	size_t fr = 0, tot = 0;
	e = cudaMemGetInfo(&fr, &tot);
	CHECK_NAMED(e == cudaSuccess && tot > 0 && fr <= tot, "mem-get-info", "error %d free %zu total %zu", (int)e, fr,
	      tot);
}

static void round_trips(void)
{
	const size_t sizes[] = { 1, 3, 64, 4095, 4096, 65537, 1 << 20, (3 << 20) + 5, 8 << 20, (20 << 20) + 3 };
	int ndev = 0;
	cudaGetDeviceCount(&ndev);
	for (int d = 0; d < ndev; d++) {
		cudaSetDevice(d);
		bool ok = true;
		char why[160] = "";
		for (size_t sz : sizes) {
			std::vector<unsigned char> src(sz), back(sz, 0);
			fill(src, (unsigned)(sz + d));
			void *a = nullptr, *b = nullptr;
			cudaError_t e = cudaMalloc(&a, sz);
			if (!e)
				e = cudaMalloc(&b, sz);
			if (!e)
				e = cudaMemcpy(a, src.data(), sz, cudaMemcpyHostToDevice);
			if (!e)
				e = cudaMemcpy(b, a, sz, cudaMemcpyDeviceToDevice);
			if (!e)
				e = cudaMemcpy(back.data(), b, sz, cudaMemcpyDeviceToHost);
			if (e || memcmp(src.data(), back.data(), sz)) {
				snprintf(why, sizeof(why), "dev %d size %zu: error %d (%s) or data mismatch", d, sz, (int)e,
					 cudaGetErrorString(e));
				ok = false;
			}
			// memset then read back
			if (ok) {
				e = cudaMemset(a, 0x5a, sz);
				if (!e)
					e = cudaMemcpy(back.data(), a, sz, cudaMemcpyDeviceToHost);
				for (size_t i = 0; !e && i < sz; i++)
					if (back[i] != 0x5a) {
						snprintf(why, sizeof(why), "dev %d memset size %zu: byte %zu is %#x", d, sz, i,
							 back[i]);
						ok = false;
						break;
					}
				if (e) {
					snprintf(why, sizeof(why), "dev %d memset size %zu: error %d", d, sz, (int)e);
					ok = false;
				}
			}
			cudaFree(a);
			cudaFree(b);
			if (!ok)
				break;
		}
		char name[64];
		snprintf(name, sizeof(name), "memcpy-roundtrips-dev%d", d);
		CHECK_NAMED(ok, name, "%s", why);
	}
	cudaSetDevice(0);
	// async copies on a stream, event sync, and a kernel launch through the ring
	const int n = 1 << 16;
	float *h = nullptr, *dptr = nullptr;
	cudaStream_t s;
	cudaEvent_t ev;
	cudaError_t e = cudaMallocHost(&h, n * sizeof(float));
	if (!e)
		e = cudaMalloc(&dptr, n * sizeof(float));
	if (!e)
		e = cudaStreamCreate(&s);
	if (!e)
		e = cudaEventCreate(&ev);
	for (int i = 0; !e && i < n; i++)
		h[i] = (float)i;
	if (!e)
		e = cudaMemcpyAsync(dptr, h, n * sizeof(float), cudaMemcpyHostToDevice, s);
	if (!e) {
		scale<<<(n + 255) / 256, 256, 0, s>>>(dptr, 2.0f, n);
		e = cudaGetLastError();
	}
	if (!e)
		e = cudaEventRecord(ev, s);
	if (!e)
		e = cudaEventSynchronize(ev);
	if (!e)
		e = cudaMemcpyAsync(h, dptr, n * sizeof(float), cudaMemcpyDeviceToHost, s);
	if (!e)
		e = cudaStreamSynchronize(s);
	CHECK_NAMED(e == cudaSuccess, "pinned-async-stream-launch", "error %d (%s)", (int)e, cudaGetErrorString(e));
	// on a real GPU (not mearasd's host-memory model, which counts launches
	// without running them) the kernel's result must be there
	cudaDeviceProp p;
	if (!e && cudaGetDeviceProperties(&p, 0) == cudaSuccess && !strstr(p.name, "mearas-sim")) {
		int bad = -1;
		for (int i = 0; i < n && bad < 0; i++)
			if (h[i] != 2.0f * (float)i)
				bad = i;
		CHECK_NAMED(bad < 0, "kernel-result-on-gpu", "element %d is %f", bad, bad >= 0 ? h[bad] : 0.0f);
	}
	cudaFree(dptr);
	cudaFreeHost(h);
}

static void errors(void)
{
	void *p = nullptr;
	cudaError_t e = cudaMalloc(&p, (size_t)1 << 50);
	CHECK_NAMED(e == cudaErrorMemoryAllocation, "malloc-too-large", "got %d", (int)e);
	cudaGetLastError();
	e = cudaSetDevice(99);
	CHECK_NAMED(e == cudaErrorInvalidDevice, "set-invalid-device", "got %d", (int)e);
	cudaGetLastError();
	e = cudaFree((void *)0x1234);
	CHECK_NAMED(e != cudaSuccess, "free-bad-pointer", "got success");
	cudaGetLastError();
	char buf[64];
	e = cudaMemcpy(buf, (void *)0x10, sizeof(buf), cudaMemcpyDeviceToHost);
	CHECK_NAMED(e != cudaSuccess, "memcpy-bad-device-pointer", "got success");
	cudaGetLastError();
	e = cudaMalloc(&p, 1024);
	if (!e)
		e = cudaMemcpy(p, buf, 4096, cudaMemcpyHostToDevice); // beyond the allocation
	CHECK_NAMED(e != cudaSuccess, "memcpy-past-allocation", "got success");
	cudaGetLastError();
	cudaFree(p);
	e = cudaMalloc(&p, 1024);
	CHECK_NAMED(e == cudaSuccess, "usable-after-errors", "got %d", (int)e);
	cudaFree(p);
}

// several threads, each with its own completion slot and stream: every
// wakeup goes to one interrupt vector and each waiter re-checks its own CQ
static void *thread_body(void *arg)
{
	long id = (long)arg;
	std::vector<unsigned char> a(256 << 10), b(256 << 10);
	void *d = nullptr;
	cudaStream_t s;
	long bad = 0;

	fill(a, (unsigned)id + 100);
	if (cudaMalloc(&d, a.size()) || cudaStreamCreate(&s))
		return (void *)1;
	for (int it = 0; it < 20 && !bad; it++) {
		a[it] = (unsigned char)(id + it);
		if (cudaMemcpyAsync(d, a.data(), a.size(), cudaMemcpyHostToDevice, s) ||
		    cudaMemcpyAsync(b.data(), d, b.size(), cudaMemcpyDeviceToHost, s) || cudaStreamSynchronize(s) ||
		    a != b)
			bad = 1;
	}
	cudaStreamDestroy(s);
	cudaFree(d);
	return (void *)bad;
}

static void threads(void)
{
	pthread_t t[4];
	long bad = 0;

	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], nullptr, thread_body, (void *)i);
	for (int i = 0; i < 4; i++) {
		void *r;
		pthread_join(t[i], &r);
		bad += (long)r;
	}
	CHECK_NAMED(bad == 0, "four-threads-round-trips", "%ld thread(s) failed", bad);
}

// latency of small synchronous calls through the VM transport (informational)
static void bench(void)
{
	void *d = nullptr;
	int x = 0;
	struct timespec t0, t1;
	cudaError_t e = cudaMalloc(&d, 4);
	const int n = 200;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n && !e; i++)
		e = cudaMemcpy(&x, d, 4, cudaMemcpyDeviceToHost);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK_NAMED(e == cudaSuccess, "bench-small-copies", "error %d", (int)e);
	printf("  4-byte D2H cudaMemcpy round trip: %.1f us (mean of %d)\n",
	       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / n, n);
	std::vector<unsigned char> big(8 << 20);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	void *db = nullptr;
	e = cudaMalloc(&db, big.size());
	for (int i = 0; i < 4 && !e; i++)
		e = cudaMemcpy(db, big.data(), big.size(), cudaMemcpyHostToDevice);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("  8 MiB pageable H2D: %.0f MB/s\n",
	       4.0 * big.size() / 1e6 / ((t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9));
	cudaFree(db);
	cudaFree(d);
}

// CUDA initialized with 1 MiB allocated (the check NAME), "GUEST-READY PID"
// told to the host, then secs seconds asleep; the allocation is handed back
static void *ready_then_asleep(const char *name, int secs)
{
	void *p = nullptr;
	cudaError_t e = cudaMalloc(&p, 1 << 20);

	CHECK_NAMED(e == cudaSuccess, name, "error %d", (int)e);
	printf("GUEST-READY %d\n", (int)getpid());
	fflush(stdout);
	sleep((unsigned)secs);
	return p;
}

int main(int argc, char **argv)
{
	// the tests that take no argument
	static const struct {
		const char *name;
		void (*run)(void);
	} plain[] = {
		{ "props", props },   { "memcpy", round_trips }, { "mapped", mapped }, { "printf", device_printf },
		{ "errors", errors }, { "threads", threads },    { "bench", bench },
	};
	const char *what = argc > 1 ? argv[1] : "props";
	int secs = argc > 2 ? atoi(argv[2]) : 2;

	for (const auto &t : plain) {
		if (!strcmp(what, t.name)) {
			t.run();
			return check_done();
		}
	}
	if (!strcmp(what, "sleep") || !strcmp(what, "hold")) {
		// CUDA initialized and holding memory, then idle
		void *p = ready_then_asleep("init-before-idle", secs);
		std::vector<unsigned char> a(1 << 20), b(1 << 20);
		fill(a, 7);
		cudaError_t e = cudaMemcpy(p, a.data(), a.size(), cudaMemcpyHostToDevice);
		if (!e)
			e = cudaMemcpy(b.data(), p, b.size(), cudaMemcpyDeviceToHost);
		CHECK_NAMED(e == cudaSuccess && a == b, "works-after-idle", "error %d", (int)e);
		cudaFree(p);
	} else if (!strcmp(what, "xowner")) {
		xowner(secs);
	} else if (!strcmp(what, "xread") && argc > 2) {
		xread(argv[2]);
	} else if (!strcmp(what, "dead")) {
		// the host kills mearasd's VM worker while we sleep: calls must fail, not hang
		void *p = ready_then_asleep("init-before-backend-death", secs);
		std::vector<unsigned char> a(1 << 16);
		cudaError_t e = cudaMemcpy(p, a.data(), a.size(), cudaMemcpyHostToDevice);
		if (!e)
			e = cudaDeviceSynchronize();
		CHECK_NAMED(e != cudaSuccess, "error-after-backend-death", "calls still succeed");
		printf("  error after backend death: %d (%s)\n", (int)e, cudaGetErrorString(e));
	} else {
		fprintf(stderr, "vmcuda: unknown test %s\n", what);
		return 2;
	}
	return check_done();
}
