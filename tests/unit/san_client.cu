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

#define REQUIRE(cond, ...)                                                 \
    do {                                                                   \
        if (!(cond)) {                                                     \
            std::printf("FAIL: line %d: ", __LINE__);                      \
            std::printf(__VA_ARGS__);                                      \
            std::printf("\n");                                             \
            std::exit(1);                                                  \
        }                                                                  \
    } while (0)
#define OK(call)                                                           \
    do {                                                                   \
        cudaError_t e_ = (call);                                           \
        REQUIRE(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorName(e_)); \
    } while (0)

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
    OK(cudaGetDeviceCount(&count));
    REQUIRE(count > 0, "no device");
    unsigned char *d = nullptr, *d2 = nullptr;
    OK(cudaMalloc(&d, n));
    OK(cudaMalloc(&d2, n));
    OK(cudaMemcpy(d, h.data(), n, cudaMemcpyHostToDevice));
    OK(cudaMemcpy(d2, d, n, cudaMemcpyDeviceToDevice));
    OK(cudaMemcpy(back.data(), d2, n, cudaMemcpyDeviceToHost));
    REQUIRE(std::memcmp(h.data(), back.data(), n) == 0, "pageable round trip differs");

    OK(cudaMemset(d, 0x5a, 4096));
    OK(cudaMemcpy(back.data(), d, 4096, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 4096; i++)
        REQUIRE(back[i] == 0x5a, "memset byte %d = %d", i, back[i]);

    // pinned memory, async copies on two streams, events
    unsigned char *pin = nullptr;
    OK(cudaMallocHost(&pin, n));
    std::memcpy(pin, h.data(), n);
    cudaStream_t s[2];
    cudaEvent_t a, b;
    OK(cudaStreamCreateWithFlags(&s[0], cudaStreamNonBlocking));
    OK(cudaStreamCreate(&s[1]));
    OK(cudaEventCreate(&a));
    OK(cudaEventCreate(&b));
    OK(cudaEventRecord(a, s[0]));
    OK(cudaMemcpyAsync(d, pin, n / 2, cudaMemcpyHostToDevice, s[0]));
    OK(cudaMemcpyAsync(d + n / 2, pin + n / 2, n / 2, cudaMemcpyHostToDevice, s[1]));
    OK(cudaEventRecord(b, s[1]));
    OK(cudaStreamWaitEvent(s[0], b, 0));
    OK(cudaStreamSynchronize(s[0]));
    OK(cudaStreamSynchronize(s[1]));
    std::memset(pin, 0, n);
    OK(cudaMemcpyAsync(pin, d, n, cudaMemcpyDeviceToHost, s[0]));
    OK(cudaStreamSynchronize(s[0]));
    OK(cudaEventSynchronize(b));
    float ms = -1;
    OK(cudaEventElapsedTime(&ms, a, b));
    REQUIRE(ms >= 0, "elapsed %f", ms);
    REQUIRE(std::memcmp(pin, h.data(), n) == 0, "pinned async round trip differs");

    // 2D: 16 rows of 100 bytes into a pitched allocation
    size_t pitch = 0;
    unsigned char *p2 = nullptr;
    OK(cudaMallocPitch((void **)&p2, &pitch, 100, 16));
    REQUIRE(pitch >= 100, "pitch %zu", pitch);
    OK(cudaMemset2D(p2, pitch, 0xee, 100, 16));
    OK(cudaMemcpy2D(p2, pitch, h.data(), 100, 100, 16, cudaMemcpyHostToDevice));
    OK(cudaMemcpy2D(back.data(), 100, p2, pitch, 100, 16, cudaMemcpyDeviceToHost));
    REQUIRE(std::memcmp(back.data(), h.data(), 1600) == 0, "2D round trip differs");
    REQUIRE(cudaMemcpy2D(p2, 50, h.data(), 100, 100, 2, cudaMemcpyHostToDevice) != cudaSuccess,
            "pitch below width accepted");
    cudaGetLastError();

    // a launch: accepted and counted by the model
    scale<<<(n / 4 + 255) / 256, 256, 0, s[1]>>>((float *)d, 2.0f, n / 4);
    OK(cudaGetLastError());
    OK(cudaDeviceSynchronize());

    // misuse comes back as errors, not crashes
    REQUIRE(cudaFree(d + 16) != cudaSuccess, "free of an interior pointer accepted");
    cudaGetLastError();
    REQUIRE(cudaMemcpy(d + n - 8, h.data(), 16, cudaMemcpyHostToDevice) != cudaSuccess,
            "copy past an allocation's end accepted");
    cudaGetLastError();
    void *huge = nullptr;
    REQUIRE(cudaMalloc(&huge, (size_t)1 << 50) == cudaErrorMemoryAllocation, "1 PiB allocation");
    cudaGetLastError();

    OK(cudaEventDestroy(a));
    OK(cudaEventDestroy(b));
    OK(cudaStreamDestroy(s[0]));
    OK(cudaStreamDestroy(s[1]));
    OK(cudaFreeHost(pin));
    OK(cudaFree(p2));
    OK(cudaFree(d));
    OK(cudaFree(d2));
    std::printf("PASS\n");
    return 0;
}
