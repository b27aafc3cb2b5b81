// cudaDeviceSetLimit/GetLimit: each client's vGPU context has its own
// limits, with the device's defaults; a set value reads back; an unknown
// limit is refused with cudaErrorUnsupportedLimit; vGPUs are independent.
#include "sim_check.cuh"

int main(void)
{
    size_t v = 0;

    CHECK_CUDA(cudaDeviceGetLimit(&v, cudaLimitStackSize));
    REQUIRE(v == 1024, "default stack size %zu", v);
    CHECK_CUDA(cudaDeviceGetLimit(&v, cudaLimitMallocHeapSize));
    REQUIRE(v == 8u << 20, "default malloc heap %zu", v);

    CHECK_CUDA(cudaDeviceSetLimit(cudaLimitStackSize, 4096));
    CHECK_CUDA(cudaDeviceGetLimit(&v, cudaLimitStackSize));
    REQUIRE(v == 4096, "stack size after set: %zu", v);
    CHECK_CUDA(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 2u << 20));
    CHECK_CUDA(cudaDeviceGetLimit(&v, cudaLimitPrintfFifoSize));
    REQUIRE(v == 2u << 20, "printf FIFO after set: %zu", v);

    EXPECT_ERR(cudaErrorUnsupportedLimit, cudaDeviceSetLimit((cudaLimit)99, 1));
    EXPECT_ERR(cudaErrorUnsupportedLimit, cudaGetLastError());
    EXPECT_ERR(cudaErrorUnsupportedLimit, cudaDeviceGetLimit(&v, (cudaLimit)99));
    EXPECT_ERR(cudaErrorInvalidValue, cudaDeviceGetLimit(NULL, cudaLimitStackSize));

    // the other vGPU keeps its own value
    CHECK_CUDA(cudaSetDevice(1));
    CHECK_CUDA(cudaDeviceGetLimit(&v, cudaLimitStackSize));
    REQUIRE(v == 1024, "vGPU 1's stack size %zu changed with vGPU 0's", v);
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaDeviceGetLimit(&v, cudaLimitStackSize));
    REQUIRE(v == 4096, "vGPU 0's stack size %zu", v);
    pass();
}
