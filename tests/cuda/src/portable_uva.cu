// Issue 16's report taken literally: a pinned flag allocated with
// cudaHostAllocPortable only (no cudaHostAllocMapped, no
// cudaHostGetDevicePointer): with unified addressing the host pointer is the
// device pointer, so kernels take it as it is. Per device a non-blocking
// stream and two events (one timing, one not) around a kernel that raises
// the flag; the host synchronizes the stream, checks cudaGetLastError, and
// the events. One summary line whatever the number of devices (up to 4).
#include "check.cuh"

__global__ void raise_flag(volatile int *flag, int value, int *out)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        *out = *flag;
        *flag = value;
    }
}

int main(void)
{
    int ndev = 0;
    CHECK_CUDA(cudaGetDeviceCount(&ndev));
    REQUIRE(ndev >= 1, "no device");
    if (ndev > 4)
        ndev = 4;

    int uva = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&uva, cudaDevAttrUnifiedAddressing, 0));
    REQUIRE(uva == 1, "no unified addressing");
    int *flag = nullptr;
    CHECK_CUDA(cudaHostAlloc((void **)&flag, sizeof(int), cudaHostAllocPortable));
    *flag = 0;

    cudaStream_t stream[4];
    cudaEvent_t begin[4], end[4];
    int *out[4];
    for (int d = 0; d < ndev; d++) {
        CHECK_CUDA(cudaSetDevice(d));
        CHECK_CUDA(cudaStreamCreateWithFlags(&stream[d], cudaStreamNonBlocking));
        CHECK_CUDA(cudaEventCreate(&begin[d]));
        CHECK_CUDA(cudaEventCreateWithFlags(&end[d], cudaEventDisableTiming));
        CHECK_CUDA(cudaMalloc(&out[d], sizeof(int)));
    }
    for (int d = 0; d < ndev; d++) {
        CHECK_CUDA(cudaSetDevice(d));
        CHECK_CUDA(cudaEventRecord(begin[d], stream[d]));
        raise_flag<<<1, 32, 0, stream[d]>>>(flag, d + 1, out[d]);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaEventRecord(end[d], stream[d]));
        CHECK_CUDA(cudaStreamSynchronize(stream[d]));
        CHECK_CUDA(cudaGetLastError());
        int seen = -1;
        CHECK_CUDA(cudaMemcpy(&seen, out[d], sizeof(int), cudaMemcpyDeviceToHost));
        REQUIRE(seen == d, "device %d saw flag %d before raising it, want %d", d, seen, d);
        REQUIRE(*flag == d + 1, "flag %d after device %d, want %d", *flag, d, d + 1);
        CHECK_CUDA(cudaEventSynchronize(end[d]));
        CHECK_CUDA(cudaEventQuery(begin[d]));
    }
    REQUIRE(*flag == ndev, "flag %d after every device, want %d", *flag, ndev);
    printf("every device raised the portable flag through its host pointer, streams and events done\n");
    for (int d = 0; d < ndev; d++) {
        CHECK_CUDA(cudaSetDevice(d));
        CHECK_CUDA(cudaEventDestroy(begin[d]));
        CHECK_CUDA(cudaEventDestroy(end[d]));
        CHECK_CUDA(cudaStreamDestroy(stream[d]));
        CHECK_CUDA(cudaFree(out[d]));
    }
    CHECK_CUDA(cudaFreeHost(flag));
    printf("PASS\n");
    return 0;
}
