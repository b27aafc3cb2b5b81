// Microbenchmarks of the CUDA runtime paths mearas virtualizes. Prints one
// line per metric: "METRIC name unit value". Run natively and through mearas
// in the same session; experiments/microbench/compare.py makes the ratios.
//   microbench [--idle SECONDS] [--only sync_roundtrip|launch_sync|launch_rate|copies] [--copy-mb N]
// --copy-mb: bytes per bandwidth copy (default 256 MiB; a VM slot's data area
// may be smaller, then native and guest runs use the same smaller size).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(x)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (x);                                                             \
        if (e_ != cudaSuccess) {                                                          \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                \
                         cudaGetErrorName(e_));                                           \
            std::exit(1);                                                                 \
        }                                                                                 \
    } while (0)

__global__ void empty_kernel() {}

using clk = std::chrono::steady_clock;

static double seconds_since(clk::time_point t0)
{
    return std::chrono::duration<double>(clk::now() - t0).count();
}

static void metric(const char *name, const char *unit, double v)
{
    std::printf("METRIC %s %s %.6f\n", name, unit, v);
    std::fflush(stdout);
}

static void sync_roundtrip()
{
    int *d;
    int h = 0;
    CHECK(cudaMalloc(&d, sizeof(int)));
    CHECK(cudaMemset(d, 0, sizeof(int)));
    std::vector<double> t;
    for (int i = 0; i < 3000; i++) {
        auto t0 = clk::now();
        CHECK(cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost));
        t.push_back(seconds_since(t0) * 1e6);
    }
    std::sort(t.begin(), t.end());
    metric("sync_roundtrip_us", "us", t[t.size() / 2]);
    // the mean too: comparable with mearasd's host time per call (a mean)
    double sum = 0;
    for (double x : t)
        sum += x;
    metric("sync_roundtrip_mean_us", "us", sum / t.size());
    CHECK(cudaFree(d));
}

// an empty kernel, then a device synchronize: a launch's full round trip
static void launch_sync()
{
    for (int i = 0; i < 100; i++)
        empty_kernel<<<1, 1>>>();
    CHECK(cudaDeviceSynchronize());
    std::vector<double> t;
    for (int i = 0; i < 3000; i++) {
        auto t0 = clk::now();
        empty_kernel<<<1, 1>>>();
        CHECK(cudaDeviceSynchronize());
        t.push_back(seconds_since(t0) * 1e6);
    }
    std::sort(t.begin(), t.end());
    metric("launch_sync_us", "us", t[t.size() / 2]);
}

static void launch_rate()
{
    const int n = 100000;
    for (int i = 0; i < 1000; i++)
        empty_kernel<<<1, 1>>>();
    CHECK(cudaDeviceSynchronize());
    double best = 0;
    for (int rep = 0; rep < 7; rep++) { // best of 7: launch timings are noisy
        auto t0 = clk::now();
        for (int i = 0; i < n; i++)
            empty_kernel<<<1, 1>>>();
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        best = std::max(best, n / seconds_since(t0));
    }
    metric("launch_rate", "launches/s", best);
}

static double bandwidth(void *dst, const void *src, size_t n, cudaMemcpyKind k)
{
    CHECK(cudaMemcpy(dst, src, n, k)); // warm-up
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        auto t0 = clk::now();
        CHECK(cudaMemcpy(dst, src, n, k));
        best = std::max(best, n / seconds_since(t0) / 1e9);
    }
    return best;
}

static void copies(size_t n)
{
    void *d, *pinned;
    CHECK(cudaMalloc(&d, n));
    CHECK(cudaMallocHost(&pinned, n));
    std::memset(pinned, 1, n);
    metric("h2d_pinned_gbps", "GB/s", bandwidth(d, pinned, n, cudaMemcpyHostToDevice));
    metric("d2h_pinned_gbps", "GB/s", bandwidth(pinned, d, n, cudaMemcpyDeviceToHost));
    CHECK(cudaFreeHost(pinned));
    char *pageable = static_cast<char *>(std::malloc(n));
    std::memset(pageable, 1, n);
    metric("h2d_pageable_gbps", "GB/s", bandwidth(d, pageable, n, cudaMemcpyHostToDevice));
    metric("d2h_pageable_gbps", "GB/s", bandwidth(pageable, d, n, cudaMemcpyDeviceToHost));
    std::free(pageable);
    CHECK(cudaFree(d));
}

int main(int argc, char **argv)
{
    int idle = 0, copy_mb = 256;
    const char *only = nullptr;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--idle") && i + 1 < argc) {
            idle = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "--copy-mb") && i + 1 < argc) {
            copy_mb = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc &&
                   (!std::strcmp(argv[i + 1], "sync_roundtrip") || !std::strcmp(argv[i + 1], "launch_sync") ||
                    !std::strcmp(argv[i + 1], "launch_rate") || !std::strcmp(argv[i + 1], "copies"))) {
            only = argv[++i];
        } else {
            std::fprintf(stderr, "usage: microbench [--idle SECONDS] "
                                 "[--only sync_roundtrip|launch_sync|launch_rate|copies] [--copy-mb 1..4096]\n");
            return 2;
        }
    }
    if (copy_mb < 1 || copy_mb > 4096) {
        std::fprintf(stderr, "microbench: --copy-mb must be 1..4096\n");
        return 2;
    }
    CHECK(cudaFree(nullptr));
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    std::printf("DEVICE %s\n", p.name);
    if (idle) {
        // an idle client: connected, nothing in flight (the harness samples CPU use)
        CHECK(cudaDeviceSynchronize());
        std::printf("IDLE start\n");
        std::fflush(stdout);
        std::this_thread::sleep_for(std::chrono::seconds(idle));
        return 0;
    }
    auto want = [only](const char *name) { return !only || !std::strcmp(only, name); };
    if (want("sync_roundtrip"))
        sync_roundtrip();
    if (want("launch_sync"))
        launch_sync();
    if (want("launch_rate"))
        launch_rate();
    if (want("copies"))
        copies(static_cast<size_t>(copy_mb) << 20);
    return 0;
}
