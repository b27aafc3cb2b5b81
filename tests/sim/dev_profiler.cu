// cudaProfilerStart/Stop reach the device and succeed, as on a GPU without
// a profiler attached (they no longer answer cudaErrorNotSupported).
#include <cuda_profiler_api.h>
#include "sim_check.cuh"

int main(void)
{
    CHECK_CUDA(cudaProfilerStart());
    CHECK_CUDA(cudaProfilerStop());
    CHECK_CUDA(cudaProfilerStart());
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaProfilerStop());
    EXPECT_ERR(cudaSuccess, cudaGetLastError());
    pass();
}
