// SPDX-License-Identifier: MIT
// A CUDA program for the sanitizer run of mearasd --device=sim: memory,
// copies (pageable, pinned, async, 2D), memsets, streams, events, a kernel
// launch (the model checks and counts it, it does not run it), and misuse
// that must come back as errors. Prints PASS or FAIL: reason.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

// CHECK_CUDA, REQUIRE, FREE_DEVICE/FREE_HOST and pass(): the GPU-lane programs' checks
#include "../cuda/src/check.cuh"

__global__ void scale(float *p, float f, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] *= f;
}

int main()
{
    const int n = 1 << 20;
    std::vector<unsigned char> h(n), back(n);
    for (int i = 0; i < n; i++)
        h[i] = (unsigned char)(i * 13 + 7);

    int count = 0;
    CHECK_CUDA(cudaGetDeviceCount(&count));
    REQUIRE(count > 0, "no device");
    unsigned char *d = nullptr, *d2 = nullptr;
    CHECK_CUDA(cudaMalloc(&d, n));
    CHECK_CUDA(cudaMalloc(&d2, n));
    CHECK_CUDA(cudaMemcpy(d, h.data(), n, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(d2, d, n, cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaMemcpy(back.data(), d2, n, cudaMemcpyDeviceToHost));
    REQUIRE(std::memcmp(h.data(), back.data(), n) == 0, "pageable round trip differs");

    CHECK_CUDA(cudaMemset(d, 0x5a, 4096));
    CHECK_CUDA(cudaMemcpy(back.data(), d, 4096, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 4096; i++)
        REQUIRE(back[i] == 0x5a, "memset byte %d = %d", i, back[i]);

    // pinned memory, async copies on two streams, events
    unsigned char *pin = nullptr;
    CHECK_CUDA(cudaMallocHost(&pin, n));
    std::memcpy(pin, h.data(), n);
    cudaStream_t s[2];
    cudaEvent_t a, b;
    CHECK_CUDA(cudaStreamCreateWithFlags(&s[0], cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamCreate(&s[1]));
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    CHECK_CUDA(cudaEventRecord(a, s[0]));
    CHECK_CUDA(cudaMemcpyAsync(d, pin, n / 2, cudaMemcpyHostToDevice, s[0]));
    CHECK_CUDA(cudaMemcpyAsync(d + n / 2, pin + n / 2, n / 2, cudaMemcpyHostToDevice, s[1]));
    CHECK_CUDA(cudaEventRecord(b, s[1]));
    CHECK_CUDA(cudaStreamWaitEvent(s[0], b, 0));
    CHECK_CUDA(cudaStreamSynchronize(s[0]));
    CHECK_CUDA(cudaStreamSynchronize(s[1]));
    std::memset(pin, 0, n);
    CHECK_CUDA(cudaMemcpyAsync(pin, d, n, cudaMemcpyDeviceToHost, s[0]));
    CHECK_CUDA(cudaStreamSynchronize(s[0]));
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = -1;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    REQUIRE(ms >= 0, "elapsed %f", ms);
    REQUIRE(std::memcmp(pin, h.data(), n) == 0, "pinned async round trip differs");

    // 2D: 16 rows of 100 bytes into a pitched allocation
    size_t pitch = 0;
    unsigned char *p2 = nullptr;
    CHECK_CUDA(cudaMallocPitch((void **)&p2, &pitch, 100, 16));
    REQUIRE(pitch >= 100, "pitch %zu", pitch);
    CHECK_CUDA(cudaMemset2D(p2, pitch, 0xee, 100, 16));
    CHECK_CUDA(cudaMemcpy2D(p2, pitch, h.data(), 100, 100, 16, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy2D(back.data(), 100, p2, pitch, 100, 16, cudaMemcpyDeviceToHost));
    REQUIRE(std::memcmp(back.data(), h.data(), 1600) == 0, "2D round trip differs");
    REQUIRE(cudaMemcpy2D(p2, 50, h.data(), 100, 100, 2, cudaMemcpyHostToDevice) != cudaSuccess,
            "pitch below width accepted");
    cudaGetLastError();

    // a launch: accepted and counted by the model
    scale<<<(n / 4 + 255) / 256, 256, 0, s[1]>>>((float *)d, 2.0f, n / 4);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());

    // misuse comes back as errors, not crashes
    REQUIRE(cudaFree(d + 16) != cudaSuccess, "free of an interior pointer accepted");
    cudaGetLastError();
    REQUIRE(cudaMemcpy(d + n - 8, h.data(), 16, cudaMemcpyHostToDevice) != cudaSuccess,
            "copy past an allocation's end accepted");
    cudaGetLastError();
    void *huge = nullptr;
    REQUIRE(cudaMalloc(&huge, (size_t)1 << 50) == cudaErrorMemoryAllocation, "1 PiB allocation");
    cudaGetLastError();

    CHECK_CUDA(cudaEventDestroy(a));
    CHECK_CUDA(cudaEventDestroy(b));
    CHECK_CUDA(cudaStreamDestroy(s[0]));
    CHECK_CUDA(cudaStreamDestroy(s[1]));
    FREE_HOST(pin);
    FREE_DEVICE(p2, d, d2);
    return pass();
}
