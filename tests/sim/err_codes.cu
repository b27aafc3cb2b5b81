// Misuse returns the exact cudaError_t the native runtime returns (see
// tests/cuda/reference/h200-driver580-native/misuse.out), sets the last
// error, and leaves the context usable.
#include "sim_check.cuh"

__device__ int g_small_symbol[4];
__global__ void tiny(int *out) { out[threadIdx.x] = 1; }
__global__ void uses_dynamic_shared(int *out)
{
    extern __shared__ int dyn[];
    dyn[threadIdx.x] = 1;
    out[threadIdx.x] = dyn[0];
}
static void host_only_function(void) {}
static int host_variable;

// the call returns `expected`, and so does cudaGetLastError right after
#define EXPECT_AND_LAST(expected, call)                                      \
    do {                                                                     \
        EXPECT_ERR(expected, call);                                          \
        EXPECT_ERR(expected, cudaGetLastError());                            \
    } while (0)

int main(void)
{
    int *dev = nullptr;
    CHECK_CUDA(cudaMalloc(&dev, 1024 * sizeof(int)));
    static int host[1024];
    void *bogus = (void *)(uintptr_t)0x10;

    EXPECT_AND_LAST(cudaErrorInvalidValue, cudaMemcpy(bogus, host, sizeof(host), cudaMemcpyHostToDevice));
    EXPECT_AND_LAST(cudaErrorInvalidValue, cudaMemcpy(host, bogus, sizeof(host), cudaMemcpyDeviceToHost));
    EXPECT_AND_LAST(cudaErrorInvalidMemcpyDirection, cudaMemcpy(dev, host, sizeof(host), (cudaMemcpyKind)42));
    EXPECT_AND_LAST(cudaErrorInvalidMemcpyDirection,
                    cudaMemcpyAsync(dev, host, sizeof(host), (cudaMemcpyKind)-1, 0));
    // past the end of the allocation
    EXPECT_AND_LAST(cudaErrorInvalidValue, cudaMemcpy(dev + 1000, host, 100 * sizeof(int), cudaMemcpyHostToDevice));
    EXPECT_AND_LAST(cudaErrorInvalidValue, cudaMemcpy(host, dev + 1, 1024 * sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT_AND_LAST(cudaErrorInvalidValue, cudaFree(bogus));
    EXPECT_AND_LAST(cudaErrorInvalidValue, cudaFree(dev + 1));
    EXPECT_AND_LAST(cudaErrorInvalidValue, cudaFreeHost(dev));
    EXPECT_AND_LAST(cudaErrorInvalidDevice, cudaSetDevice(999));
    EXPECT_AND_LAST(cudaErrorInvalidDevice, cudaSetDevice(-1));
    cudaDeviceProp prop;
    EXPECT_AND_LAST(cudaErrorInvalidDevice, cudaGetDeviceProperties(&prop, 999));
    int value = 0;
    EXPECT_AND_LAST(cudaErrorInvalidDevice, cudaDeviceGetAttribute(&value, cudaDevAttrWarpSize, 999));
    void *huge = nullptr;
    EXPECT_AND_LAST(cudaErrorMemoryAllocation, cudaMalloc(&huge, (size_t)1 << 50));
    EXPECT_AND_LAST(cudaErrorInvalidValue, cudaMalloc(nullptr, 16));

    cudaEvent_t a, b, no_timing;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    float ms = 0.0f;
    EXPECT_AND_LAST(cudaErrorInvalidResourceHandle, cudaEventElapsedTime(&ms, a, b));
    CHECK_CUDA(cudaEventCreateWithFlags(&no_timing, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventRecord(a, 0));
    CHECK_CUDA(cudaEventRecord(no_timing, 0));
    CHECK_CUDA(cudaDeviceSynchronize());
    EXPECT_AND_LAST(cudaErrorInvalidResourceHandle, cudaEventElapsedTime(&ms, a, no_timing));

    // launch configuration errors are reported by the launch itself
    tiny<<<1, 2048>>>(dev);
    EXPECT_ERR(cudaErrorInvalidValue, cudaPeekAtLastError());
    EXPECT_ERR(cudaErrorInvalidValue, cudaGetLastError());
    tiny<<<dim3(1, 1, 1 << 20), 1>>>(dev);
    EXPECT_ERR(cudaErrorInvalidValue, cudaGetLastError());
    uses_dynamic_shared<<<1, 32, 4u << 20>>>(dev);
    EXPECT_ERR(cudaErrorInvalidValue, cudaGetLastError());
    EXPECT_AND_LAST(cudaErrorInvalidResourceHandle,
                    cudaLaunchKernel((const void *)host_only_function, dim3(1), dim3(1), nullptr, 0, 0));
    cudaFuncAttributes fattr;
    EXPECT_AND_LAST(cudaErrorInvalidResourceHandle, cudaFuncGetAttributes(&fattr, (const void *)host_only_function));
    EXPECT_AND_LAST(cudaErrorInvalidValue,
                    cudaFuncSetAttribute(uses_dynamic_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, 4 << 20));
    int four[4] = {1, 2, 3, 4};
    EXPECT_AND_LAST(cudaErrorInvalidValue, cudaMemcpyToSymbol(g_small_symbol, four, sizeof(four), 2 * sizeof(int)));
    EXPECT_AND_LAST(cudaErrorInvalidSymbol, cudaMemcpyFromSymbol(four, (const void *)&host_variable, sizeof(int)));
    EXPECT_AND_LAST(cudaErrorInvalidValue, cudaMemset(bogus, 0, 64));
    EXPECT_AND_LAST(cudaErrorInvalidValue, cudaMemset(dev + 1020, 0, 64));
    EXPECT_AND_LAST(cudaErrorInvalidValue, cudaStreamCreateWithFlags(nullptr, cudaStreamNonBlocking));
    EXPECT_AND_LAST(cudaErrorInvalidValue, cudaHostRegister(nullptr, 4096, 0));
    EXPECT_AND_LAST(cudaErrorHostMemoryNotRegistered, cudaHostUnregister(host));
    EXPECT_AND_LAST(cudaErrorPeerAccessUnsupported, cudaDeviceEnablePeerAccess(0, 0));
    EXPECT_AND_LAST(cudaErrorInvalidValue, cudaPointerGetAttributes(nullptr, dev));

    // unknown handles: well-formed memory that is not a stream or event
    static unsigned char fake[256];
    cudaStream_t fake_stream = (cudaStream_t)fake;
    cudaEvent_t fake_event = (cudaEvent_t)fake;
    EXPECT_AND_LAST(cudaErrorInvalidResourceHandle, cudaStreamSynchronize(fake_stream));
    EXPECT_AND_LAST(cudaErrorInvalidResourceHandle, cudaStreamQuery(fake_stream));
    EXPECT_AND_LAST(cudaErrorInvalidResourceHandle, cudaStreamDestroy(fake_stream));
    EXPECT_AND_LAST(cudaErrorInvalidResourceHandle, cudaMemcpyAsync(dev, host, 16, cudaMemcpyHostToDevice, fake_stream));
    EXPECT_AND_LAST(cudaErrorInvalidResourceHandle, cudaEventRecord(fake_event, 0));
    EXPECT_AND_LAST(cudaErrorInvalidResourceHandle, cudaEventSynchronize(fake_event));
    EXPECT_AND_LAST(cudaErrorInvalidResourceHandle, cudaEventQuery(fake_event));
    EXPECT_AND_LAST(cudaErrorInvalidResourceHandle, cudaEventDestroy(fake_event));
    EXPECT_AND_LAST(cudaErrorInvalidResourceHandle, cudaStreamWaitEvent(0, fake_event, 0));
    EXPECT_AND_LAST(cudaErrorInvalidResourceHandle, cudaEventElapsedTime(&ms, a, fake_event));
    // destroyed handles (undefined in CUDA; mearas reports an invalid handle)
    cudaStream_t gone;
    CHECK_CUDA(cudaStreamCreate(&gone));
    CHECK_CUDA(cudaStreamDestroy(gone));
    EXPECT_AND_LAST(cudaErrorInvalidResourceHandle, cudaStreamSynchronize(gone));
    cudaEvent_t gone_ev;
    CHECK_CUDA(cudaEventCreate(&gone_ev));
    CHECK_CUDA(cudaEventDestroy(gone_ev));
    EXPECT_AND_LAST(cudaErrorInvalidResourceHandle, cudaEventQuery(gone_ev));

    // null out-pointers
    EXPECT_AND_LAST(cudaErrorInvalidValue, cudaGetDeviceCount(nullptr));
    EXPECT_AND_LAST(cudaErrorInvalidValue, cudaEventCreate(nullptr));
    EXPECT_AND_LAST(cudaErrorInvalidValue, cudaMallocHost(nullptr, 16));

    CHECK_CUDA(cudaEventDestroy(a));
    CHECK_CUDA(cudaEventDestroy(b));
    CHECK_CUDA(cudaEventDestroy(no_timing));

    // none of the above is sticky: the context still works
    EXPECT_ERR(cudaSuccess, cudaGetLastError());
    tiny<<<1, 32>>>(dev);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(dev, host, sizeof(host), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaFree(dev));
    return pass();
}
