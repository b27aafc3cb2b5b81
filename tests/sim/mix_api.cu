// A -cudart shared program (mearas's libcudart.so.13) that also calls the
// driver API (mearas's libcuda.so.1): both front ends share one core, so the
// runtime's device is the driver's current context and back, and memory and
// streams made by one are usable by the other. Run with MEARAS_VGPUS=2.
#include <cuda.h>
#include <cuda_runtime.h>

#include "sim_check.cuh"
#include "../cuda/src/cu_check.cuh"

#include <vector>

int main()
{
    int n = 0, dev = -1;
    CUcontext ctx, primary0;
    CUdevice cudev;

    CHECK_CUDA(cudaGetDeviceCount(&n));
    REQUIRE(n == 2, "run with MEARAS_VGPUS=2 (got %d devices)", n);

    // a runtime call initialized the driver: no cuInit needed
    CHECK_CUDA(cudaSetDevice(1));
    CHECK_CU(cuCtxGetCurrent(&ctx));
    REQUIRE(ctx != nullptr, "no current context after cudaSetDevice(1)");
    CHECK_CU(cuCtxGetDevice(&cudev));
    REQUIRE(cudev == 1, "cudaSetDevice(1) left the driver on device %d", (int)cudev);

    // the driver chooses: the runtime follows
    CHECK_CU(cuDevicePrimaryCtxRetain(&primary0, 0));
    CHECK_CU(cuCtxSetCurrent(primary0));
    CHECK_CUDA(cudaGetDevice(&dev));
    REQUIRE(dev == 0, "cuCtxSetCurrent(device 0's primary context) left the runtime on device %d", dev);

    // memory: allocated by one, copied by the other
    const size_t bytes = 1 << 20;
    std::vector<unsigned char> a(bytes), b(bytes, 0);
    for (size_t i = 0; i < bytes; i++)
        a[i] = (unsigned char)(i * 13 + 5);
    CUdeviceptr d;
    CHECK_CU(cuMemAlloc(&d, bytes));
    CHECK_CUDA(cudaMemcpy((void *)d, a.data(), bytes, cudaMemcpyHostToDevice));
    CHECK_CU(cuMemcpyDtoH(b.data(), d, bytes));
    REQUIRE(a == b, "bytes copied in by the runtime differ when read by the driver");
    int ordinal = -1;
    CHECK_CU(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d));
    REQUIRE(ordinal == 0, "driver allocation on device %d, want 0", ordinal);
    CHECK_CUDA(cudaFree((void *)d));

    // streams: a runtime stream is a driver stream
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreate(&s));
    CHECK_CU(cuMemsetD8Async(0, 0, 0, (CUstream)s));
    CHECK_CU(cuStreamSynchronize((CUstream)s));
    CUdevice sdev;
    CHECK_CU(cuStreamGetDevice((CUstream)s, &sdev));
    REQUIRE(sdev == 0, "the runtime's stream is on device %d for the driver, want 0", (int)sdev);
    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CU(cuDevicePrimaryCtxRelease(0));
    return pass();
}
