// Performs API misuse for which CUDA defines an error (no undefined
// behaviour), printing the returned error and cudaGetLastError() for each,
// then proves the context still works. The native and virtualized outputs
// are meant to be diffed line by line. Left out on purpose because CUDA does
// not define their result: destroying a stream or event twice, querying a
// destroyed event, and using any other handle after it was destroyed.
#include <cstdint>
#include "check.cuh"

__device__ int g_small_symbol[4];

__global__ void tiny(int *out)
{
    out[threadIdx.x] = (int)threadIdx.x + 1;
}

__global__ void uses_dynamic_shared(int *out)
{
    extern __shared__ int dyn[];
    dyn[threadIdx.x] = 1;
    __syncthreads();
    out[threadIdx.x] = dyn[0];
}

static void host_only_function(void) {}

static int failures_missing = 0;

static void report(const char *name, cudaError_t returned)
{
    cudaError_t last = cudaGetLastError();
    std::printf("%s: %s (last error: %s)\n", name, cudaGetErrorName(returned),
                cudaGetErrorName(last));
    if (returned == cudaSuccess) {
        std::printf("  expected an error, got success\n");
        failures_missing++;
    }
}

int main(void)
{
    int *dev = nullptr;
    CHECK_CUDA(cudaMalloc(&dev, 1024 * sizeof(int)));
    int host[1024] = {0};
    void *bogus = (void *)(uintptr_t)0x10; // never a valid device allocation

    report("cudaMemcpy H2D to invalid device pointer",
           cudaMemcpy(bogus, host, sizeof(host), cudaMemcpyHostToDevice));
    report("cudaMemcpy D2H from invalid device pointer",
           cudaMemcpy(host, bogus, sizeof(host), cudaMemcpyDeviceToHost));
    report("cudaMemcpy with invalid kind",
           cudaMemcpy(dev, host, sizeof(host), (cudaMemcpyKind)42));
    report("cudaFree of invalid pointer", cudaFree(bogus));
    report("cudaFree of interior pointer", cudaFree(dev + 1));
    report("cudaFreeHost of device pointer", cudaFreeHost(dev));
    report("cudaSetDevice(999)", cudaSetDevice(999));
    report("cudaSetDevice(-1)", cudaSetDevice(-1));
    cudaDeviceProp prop;
    report("cudaGetDeviceProperties(999)", cudaGetDeviceProperties(&prop, 999));
    int value = 0;
    report("cudaDeviceGetAttribute bad ordinal",
           cudaDeviceGetAttribute(&value, cudaDevAttrWarpSize, 999));
    void *huge = nullptr;
    report("cudaMalloc 1 PiB", cudaMalloc(&huge, (size_t)1 << 50));
    report("cudaMalloc null result pointer", cudaMalloc(nullptr, 16));

    cudaEvent_t a, b;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    float ms = 0.0f;
    report("cudaEventElapsedTime on unrecorded events", cudaEventElapsedTime(&ms, a, b));
    cudaEvent_t no_timing;
    CHECK_CUDA(cudaEventCreateWithFlags(&no_timing, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventRecord(a, 0));
    CHECK_CUDA(cudaEventRecord(no_timing, 0));
    CHECK_CUDA(cudaDeviceSynchronize());
    report("cudaEventElapsedTime with timing disabled", cudaEventElapsedTime(&ms, a, no_timing));

    tiny<<<1, 2048>>>(dev);
    report("launch with 2048 threads per block", cudaPeekAtLastError());
    tiny<<<dim3(1, 1, 1 << 20), 1>>>(dev);
    report("launch with grid z of 2^20", cudaPeekAtLastError());
    uses_dynamic_shared<<<1, 32, 4u << 20>>>(dev);
    report("launch with 4 MiB dynamic shared memory", cudaPeekAtLastError());
    report("cudaLaunchKernel of a host function",
           cudaLaunchKernel((const void *)host_only_function, dim3(1), dim3(1), nullptr, 0, 0));
    cudaFuncAttributes fattr;
    report("cudaFuncGetAttributes of a host function",
           cudaFuncGetAttributes(&fattr, (const void *)host_only_function));
    report("cudaFuncSetAttribute max dynamic shared 4 MiB",
           cudaFuncSetAttribute(uses_dynamic_shared, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                4 << 20));
    int four[4] = {1, 2, 3, 4};
    report("cudaMemcpyToSymbol past symbol end",
           cudaMemcpyToSymbol(g_small_symbol, four, sizeof(four), 2 * sizeof(int)));
    report("cudaMemcpyFromSymbol of a host variable",
           cudaMemcpyFromSymbol(four, (const void *)&failures_missing, sizeof(int)));
    report("cudaMemset on invalid pointer", cudaMemset(bogus, 0, 64));
    report("cudaStreamCreateWithFlags null stream pointer",
           cudaStreamCreateWithFlags(nullptr, cudaStreamNonBlocking));
    report("cudaHostRegister null pointer", cudaHostRegister(nullptr, 4096, 0));
    report("cudaHostUnregister of unregistered memory", cudaHostUnregister(host));
    report("cudaDeviceEnablePeerAccess to itself", cudaDeviceEnablePeerAccess(0, 0));
    report("cudaPointerGetAttributes null attributes", cudaPointerGetAttributes(nullptr, dev));

    CHECK_CUDA(cudaEventDestroy(a));
    CHECK_CUDA(cudaEventDestroy(b));
    CHECK_CUDA(cudaEventDestroy(no_timing));

    // The context must survive all of the above.
    tiny<<<1, 32>>>(dev);
    CHECK_LAUNCH();
    int out[32];
    CHECK_CUDA(cudaMemcpy(out, dev, sizeof(out), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 32; i++)
        REQUIRE(out[i] == i + 1, "kernel after misuse wrote %d at %d", out[i], i);
    std::printf("context usable after misuse: yes\n");
    CHECK_CUDA(cudaFree(dev));
    REQUIRE(failures_missing == 0, "%d misuse calls returned success", failures_missing);
    return pass();
}
