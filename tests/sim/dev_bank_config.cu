// The cache preference and the shared memory bank size, which programs
// written for older GPUs still set: cudaDeviceSetCacheConfig takes every
// preference and cudaDeviceGetCacheConfig reads it back; the bank size reads four bytes and every setting is taken
// (device-wide and per kernel) without changing it; resetting the L2 cache's
// persisting lines succeeds (none persist); values out of range and
// unknown kernels are refused.
#include "sim_check.cuh"

// cuda_runtime_api.h marks the bank-size calls deprecated; programs call them all the same
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

__global__ void k_touch(int *p) { p[threadIdx.x] = 1; }

int main(void)
{
    for (int c = cudaFuncCachePreferNone; c <= cudaFuncCachePreferEqual; c++)
        CHECK_CUDA(cudaDeviceSetCacheConfig((cudaFuncCache)c));
    EXPECT_ERR(cudaErrorInvalidValue, cudaDeviceSetCacheConfig((cudaFuncCache)(cudaFuncCachePreferEqual + 1)));
    cudaFuncCache cache;
    CHECK_CUDA(cudaDeviceSetCacheConfig(cudaFuncCachePreferL1));
    CHECK_CUDA(cudaDeviceGetCacheConfig(&cache));
    REQUIRE(cache == cudaFuncCachePreferL1, "cache preference read back: %d", (int)cache);

    cudaSharedMemConfig bank;
    CHECK_CUDA(cudaDeviceGetSharedMemConfig(&bank));
    REQUIRE(bank == cudaSharedMemBankSizeFourByte, "bank size %d", (int)bank);
    for (int c = cudaSharedMemBankSizeDefault; c <= cudaSharedMemBankSizeEightByte; c++) {
        CHECK_CUDA(cudaDeviceSetSharedMemConfig((cudaSharedMemConfig)c));
        CHECK_CUDA(cudaFuncSetSharedMemConfig((const void *)k_touch, (cudaSharedMemConfig)c));
        CHECK_CUDA(cudaDeviceGetSharedMemConfig(&bank));
        REQUIRE(bank == cudaSharedMemBankSizeFourByte, "bank size %d after setting %d", (int)bank, c);
    }
    EXPECT_ERR(cudaErrorInvalidValue, cudaDeviceSetSharedMemConfig((cudaSharedMemConfig)3));
    EXPECT_ERR(cudaErrorInvalidValue, cudaFuncSetSharedMemConfig((const void *)k_touch, (cudaSharedMemConfig)3));
    EXPECT_ERR(cudaErrorInvalidResourceHandle,
               cudaFuncSetSharedMemConfig((const void *)&cache, cudaSharedMemBankSizeFourByte));
    EXPECT_ERR(cudaErrorInvalidValue, cudaDeviceGetSharedMemConfig(nullptr));
    CHECK_CUDA(cudaCtxResetPersistingL2Cache());
    (void)cudaGetLastError();
    return pass();
}
