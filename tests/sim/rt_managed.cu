// Managed memory through mearas's runtime (cudaMallocManaged): zero-copy
// blocks the host and the device reach alike. The host's bytes are what a
// copy to device memory sees, cudaPointerGetAttributes says managed,
// prefetches and advice are accepted on it, and cudaFree frees it; a bad
// flag and hints on device memory are refused.
#include "sim_check.cuh"

#define N (1u << 20)

int main(void)
{
    unsigned char *m = nullptr, *d = nullptr;
    static unsigned char back[N];
    cudaPointerAttributes a;
    cudaMemLocation loc = {};
    cudaStream_t s;

    loc.type = cudaMemLocationTypeDevice;
    loc.id = 0;
    CHECK_CUDA(cudaMallocManaged(&m, N, cudaMemAttachGlobal));
    for (unsigned i = 0; i < N; i++)
        m[i] = (unsigned char)(i * 3);
    CHECK_CUDA(cudaMalloc(&d, N));
    CHECK_CUDA(cudaMemcpy(d, m, N, cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaMemcpy(back, d, N, cudaMemcpyDeviceToHost));
    REQUIRE(!std::memcmp(back, m, N), "device memory copied from managed memory differs");
    CHECK_CUDA(cudaPointerGetAttributes(&a, m + 5));
    REQUIRE(a.type == cudaMemoryTypeManaged, "cudaPointerGetAttributes type %d", (int)a.type);
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMemPrefetchAsync(m, N, loc, 0, s));
    CHECK_CUDA(cudaMemAdvise(m, N, cudaMemAdviseSetPreferredLocation, loc));
    CHECK_CUDA(cudaStreamSynchronize(s));
    REQUIRE(cudaMemPrefetchAsync(d, N, loc, 0, s) == cudaErrorInvalidValue, "a prefetch of device memory");
    unsigned char *other = nullptr;
    REQUIRE(cudaMallocManaged(&other, N, 0) == cudaErrorInvalidValue, "managed memory with no attach flag");
    cudaGetLastError();
    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFree(m));
    CHECK_CUDA(cudaFree(d));
    std::printf("PASS\n");
    return 0;
}
