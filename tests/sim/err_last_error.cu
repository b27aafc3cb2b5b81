// Last-error semantics: cudaGetLastError returns and resets, cudaPeekAtLastError
// does not reset, successful calls leave it alone, a newer error replaces an
// older one, and the last error belongs to the calling thread.
#include <thread>
#include "sim_check.cuh"

__global__ void tiny(int *out) { out[0] = 1; }

int main(void)
{
    EXPECT_ERR(cudaSuccess, cudaGetLastError());
    EXPECT_ERR(cudaSuccess, cudaPeekAtLastError());

    EXPECT_ERR(cudaErrorInvalidDevice, cudaSetDevice(12345));
    EXPECT_ERR(cudaErrorInvalidDevice, cudaPeekAtLastError());
    EXPECT_ERR(cudaErrorInvalidDevice, cudaPeekAtLastError());
    // successful calls do not clear it
    int *d;
    CHECK_CUDA(cudaMalloc(&d, 64));
    CHECK_CUDA(cudaDeviceSynchronize());
    EXPECT_ERR(cudaErrorInvalidDevice, cudaPeekAtLastError());
    EXPECT_ERR(cudaErrorInvalidDevice, cudaGetLastError());
    EXPECT_ERR(cudaSuccess, cudaGetLastError());
    EXPECT_ERR(cudaSuccess, cudaPeekAtLastError());

    // the newest error wins
    EXPECT_ERR(cudaErrorInvalidDevice, cudaSetDevice(-1));
    EXPECT_ERR(cudaErrorInvalidValue, cudaFree((void *)0x10));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGetLastError());
    EXPECT_ERR(cudaSuccess, cudaGetLastError());

    // launch errors
    tiny<<<1, 4096>>>(d);
    EXPECT_ERR(cudaErrorInvalidValue, cudaPeekAtLastError());
    EXPECT_ERR(cudaErrorInvalidValue, cudaGetLastError());
    EXPECT_ERR(cudaSuccess, cudaPeekAtLastError());
    tiny<<<0, 1>>>(d);
    EXPECT_ERR(cudaErrorInvalidConfiguration, cudaGetLastError());
    tiny<<<1, 1>>>(d);
    EXPECT_ERR(cudaSuccess, cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());

    // per thread: an error in another thread is not ours, and vice versa
    EXPECT_ERR(cudaErrorInvalidDevice, cudaSetDevice(999));
    cudaError_t other_before = cudaErrorUnknown, other_err = cudaErrorUnknown, other_after = cudaErrorUnknown;
    std::thread t([&] {
        other_before = cudaGetLastError();
        other_err = cudaFree((void *)0x20);
        other_after = cudaPeekAtLastError();
    });
    t.join();
    REQUIRE(other_before == cudaSuccess, "new thread saw %s", cudaGetErrorName(other_before));
    REQUIRE(other_err == cudaErrorInvalidValue && other_after == cudaErrorInvalidValue,
            "other thread: %s / %s", cudaGetErrorName(other_err), cudaGetErrorName(other_after));
    EXPECT_ERR(cudaErrorInvalidDevice, cudaGetLastError());
    EXPECT_ERR(cudaSuccess, cudaGetLastError());

    // error names and strings exist for what we return
    REQUIRE(strcmp(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue") == 0, "error name");
    REQUIRE(strcmp(cudaGetErrorName(cudaErrorDevicesUnavailable), "cudaErrorDevicesUnavailable") == 0,
            "error name");
    REQUIRE(cudaGetErrorString(cudaErrorInvalidDevice) && cudaGetErrorString(cudaErrorInvalidDevice)[0],
            "error string");
    CHECK_CUDA(cudaFree(d));
    return pass();
}
