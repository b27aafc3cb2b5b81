// cudaMemset into pinned host memory, which CUDA allows with unified
// addressing (built twice: mearas's shared runtime, whose cudaMemset refused
// it, and NVIDIA's static runtime over mearas's libcuda.so.1). One behaviour
// per part:
//   blocking   cudaMemset of cudaMallocHost memory returns with the bytes set
//   ordered    cudaMemsetAsync into it runs after the stream's earlier work (a
//              device-to-host copy into the same bytes)
//   rows       cudaMemset2D sets each row's width and leaves the pitch gap
//   registered cudaHostRegister'd memory takes it too
//   captured   while the stream captures a graph: cudaErrorNotSupported,
//              the bytes untouched
//   refused    pageable memory is cudaErrorInvalidValue
#include <cstdlib>
#include <vector>

#include "sim_check.cuh"

#define BYTES 4096

static bool all(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return false;
    return true;
}

int main(void)
{
    unsigned char *pinned, *dev;
    cudaStream_t s;
    cudaGraph_t g = nullptr;

    CHECK_CUDA(cudaMallocHost(&pinned, BYTES));
    CHECK_CUDA(cudaMalloc(&dev, BYTES));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    // blocking
    CHECK_CUDA(cudaMemset(pinned, 0x5a, BYTES));
    REQUIRE(all(pinned, BYTES, 0x5a), "cudaMemset left pinned bytes unset");

    // ordered: the copy writes 0x11s, the memset after it 0x22s
    CHECK_CUDA(cudaMemset(dev, 0x11, BYTES));
    CHECK_CUDA(cudaMemcpyAsync(pinned, dev, BYTES, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaMemsetAsync(pinned, 0x22, BYTES, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    REQUIRE(all(pinned, BYTES, 0x22), "the memset did not come after the stream's copy (byte 0 is %#x)", pinned[0]);

    // rows: 4 rows of 100 bytes, 256 apart
    CHECK_CUDA(cudaMemset(pinned, 0, BYTES));
    CHECK_CUDA(cudaMemset2D(pinned, 256, 0x33, 100, 4));
    for (int r = 0; r < 4; r++)
        REQUIRE(all(pinned + r * 256, 100, 0x33) && all(pinned + r * 256 + 100, 156, 0),
                "row %d of the 2D memset is wrong", r);

    // registered
    {
        std::vector<unsigned char> reg(BYTES, 1);
        CHECK_CUDA(cudaHostRegister(reg.data(), BYTES, cudaHostRegisterDefault));
        CHECK_CUDA(cudaMemset(reg.data() + 8, 0x44, 16));
        REQUIRE(all(reg.data() + 8, 16, 0x44) && all(reg.data(), 8, 1) && all(reg.data() + 24, BYTES - 24, 1),
                "cudaMemset of registered memory set the wrong bytes");
        CHECK_CUDA(cudaHostUnregister(reg.data()));
    }

    // captured
    CHECK_CUDA(cudaMemset(pinned, 0x66, BYTES));
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    EXPECT_ERR(cudaErrorNotSupported, cudaMemsetAsync(pinned, 0x77, BYTES, s));
    cudaError_t end = cudaStreamEndCapture(s, &g);
    if (end == cudaSuccess && g)
        CHECK_CUDA(cudaGraphDestroy(g));
    cudaGetLastError();
    REQUIRE(all(pinned, BYTES, 0x66), "a refused memset in a capture changed the bytes");

    // refused
    {
        unsigned char *pageable = (unsigned char *)std::malloc(BYTES);
        REQUIRE(pageable, "malloc");
        EXPECT_ERR(cudaErrorInvalidValue, cudaMemset(pageable, 0, BYTES));
        cudaGetLastError();
        std::free(pageable);
    }

    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFreeHost(pinned));
    FREE_DEVICE(dev);
    return pass();
}
