// cudaStreamAttachMemAsync on a managed allocation: every way of attaching
// (global, host, the stream alone), length 0 or its size, on created and
// default streams, changes nothing a copy sees; a flag that is not one way,
// memory that is not managed, part of an allocation (refused by NVIDIA's
// driver on an H200) and a range past it are refused.
#include "sim_check.cuh"

#define N (1u << 16)

int main(void)
{
    unsigned char *m = nullptr, *d = nullptr;
    static unsigned char back[N];
    cudaStream_t s;

    CHECK_CUDA(cudaMallocManaged(&m, N, cudaMemAttachGlobal));
    CHECK_CUDA(cudaMalloc(&d, N));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (unsigned i = 0; i < N; i++)
        m[i] = (unsigned char)(i * 7);
    CHECK_CUDA(cudaStreamAttachMemAsync(s, m, 0, cudaMemAttachSingle));
    CHECK_CUDA(cudaStreamAttachMemAsync(s, m, N, cudaMemAttachHost));
    CHECK_CUDA(cudaStreamAttachMemAsync(0, m, N, cudaMemAttachGlobal));
    CHECK_CUDA(cudaStreamAttachMemAsync(cudaStreamPerThread, m, 0, cudaMemAttachGlobal));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpyAsync(d, m, N, cudaMemcpyDeviceToDevice, s));
    CHECK_CUDA(cudaMemcpyAsync(back, d, N, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    for (unsigned i = 0; i < N; i++)
        REQUIRE(back[i] == (unsigned char)(i * 7), "byte %u after attaching: %u", i, back[i]);

    EXPECT_ERR(cudaErrorInvalidValue, cudaStreamAttachMemAsync(s, m, 0, 0));
    EXPECT_ERR(cudaErrorInvalidValue, cudaStreamAttachMemAsync(s, m, 0, cudaMemAttachGlobal | cudaMemAttachHost));
    EXPECT_ERR(cudaErrorInvalidValue, cudaStreamAttachMemAsync(s, d, 0, cudaMemAttachGlobal));
    EXPECT_ERR(cudaErrorInvalidValue, cudaStreamAttachMemAsync(s, m, N + 1, cudaMemAttachGlobal));
    EXPECT_ERR(cudaErrorInvalidValue, cudaStreamAttachMemAsync(s, m + 4096, 4096, cudaMemAttachHost));
    EXPECT_ERR(cudaErrorInvalidValue, cudaStreamAttachMemAsync(s, m, 4096, cudaMemAttachHost));
    (void)cudaGetLastError();
    CHECK_CUDA(cudaStreamDestroy(s));
    FREE_DEVICE(m, d);
    return pass();
}
