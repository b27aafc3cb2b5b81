// A pinned flag shared by every device (portable_flag.cu, portable_uva.cu):
// per device (up to 4) a non-blocking stream and two events (one timing, one
// not) around a kernel that raises the flag; the host synchronizes the
// stream, checks cudaGetLastError, what the kernel saw, and the events.
#pragma once
#include "check.cuh"

__global__ void raise_flag(volatile int *flag, int value, int *out)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        *out = *flag;
        *flag = value;
    }
}

// device_pointer: each device gets the flag through cudaHostGetDevicePointer
// (else the host pointer as it is, as unified addressing allows); the
// number of devices checked
static int raise_on_every_device(int *flag, bool device_pointer)
{
    int ndev = 0;
    CHECK_CUDA(cudaGetDeviceCount(&ndev));
    REQUIRE(ndev >= 1, "no device");
    if (ndev > 4)
        ndev = 4;
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
        int *dflag = flag;
        if (device_pointer)
            CHECK_CUDA(cudaHostGetDevicePointer((void **)&dflag, flag, 0));
        CHECK_CUDA(cudaEventRecord(begin[d], stream[d]));
        raise_flag<<<1, 32, 0, stream[d]>>>(dflag, d + 1, out[d]);
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
    for (int d = 0; d < ndev; d++) {
        CHECK_CUDA(cudaSetDevice(d));
        CHECK_CUDA(cudaEventDestroy(begin[d]));
        CHECK_CUDA(cudaEventDestroy(end[d]));
        CHECK_CUDA(cudaStreamDestroy(stream[d]));
        CHECK_CUDA(cudaFree(out[d]));
    }
    return ndev;
}
