// cudaGetFuncBySymbol and the driver calls programs make with the
// CUfunction it gives (built twice: mearas's shared runtime, whose
// cudaGetFuncBySymbol was a NotSupported stub, and NVIDIA's static runtime
// over mearas's libcuda.so.1; both link the driver API). The same handle
// each time; its name, parameters and attributes; a launch through
// cuLaunchKernel on a stream of the runtime (the sim's mearas_sim_add_u32
// adds to mapped host memory); its module, whose other kernels and globals
// the driver finds; an unknown symbol is cudaErrorInvalidDeviceFunction.
// With mearas's runtime the module, the runtime's own, is not unloaded
// through the driver (CUDA_ERROR_NOT_PERMITTED) and the runtime's launches
// go on.
#include <cuda.h>

#include "sim_check.cuh"

#define N 16

#define CHECK_CU(call)                                                                                         \
    do {                                                                                                       \
        CUresult r_ = (call);                                                                                  \
        REQUIRE(r_ == CUDA_SUCCESS, "%s returned %d", #call, (int)r_);                                         \
    } while (0)

extern "C" __global__ void mearas_sim_add_u32(unsigned *p, unsigned n, unsigned v)
{
    for (unsigned i = 0; i < n; i++)
        p[i] += v;
}

extern "C" __global__ void mearas_sim_spin(unsigned ms)
{
    (void)ms;
}

__device__ unsigned table[4];

int main(void)
{
    cudaFunction_t f = nullptr, again = nullptr;
    CUfunction spin = nullptr;
    CUmodule mod = nullptr;
    CUdeviceptr g = 0;
    size_t gsize = 0, off = 0, size = 0;
    const char *name = nullptr;
    unsigned *pinned, n = N, v = 7;
    void *args[] = {&pinned, &n, &v};
    int threads = 0, nparams = 0;
    cudaStream_t s;

    CHECK_CUDA(cudaMallocHost(&pinned, N * sizeof(unsigned)));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_CUDA(cudaGetFuncBySymbol(&f, (const void *)mearas_sim_add_u32));
    REQUIRE(f != nullptr, "no function");
    CHECK_CUDA(cudaGetFuncBySymbol(&again, (const void *)mearas_sim_add_u32));
    REQUIRE(again == f, "a second call gave another handle");

    CHECK_CU(cuFuncGetName(&name, (CUfunction)f));
    REQUIRE(name && !strcmp(name, "mearas_sim_add_u32"), "name %s", name ? name : "(null)");
    while (cuFuncGetParamInfo((CUfunction)f, (size_t)nparams, &off, &size) == CUDA_SUCCESS)
        nparams++;
    REQUIRE(nparams == 3 && off == 12 && size == 4, "%d parameters, the last at %zu (%zu bytes)", nparams, off,
            size);
    CHECK_CU(cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, (CUfunction)f));
    REQUIRE(threads > 0, "max threads per block %d", threads);

    // launched through the driver on a runtime stream
    memset(pinned, 0, N * sizeof(unsigned));
    CHECK_CU(cuLaunchKernel((CUfunction)f, 1, 1, 1, 1, 1, 1, 0, (CUstream)s, args, nullptr));
    CHECK_CUDA(cudaStreamSynchronize(s));
    for (int i = 0; i < N; i++)
        REQUIRE(pinned[i] == 7, "word %d is %u after the driver's launch", i, pinned[i]);

    // its module holds the program's other kernels and globals
    CHECK_CU(cuFuncGetModule(&mod, (CUfunction)f));
    CHECK_CU(cuModuleGetFunction(&spin, mod, "mearas_sim_spin"));
    CHECK_CU(cuModuleGetGlobal(&g, &gsize, mod, "table"));
    REQUIRE(g != 0 && gsize == sizeof(table), "global table at %#llx, %zu bytes", (unsigned long long)g, gsize);

#ifndef MEARAS_STATIC_RUNTIME
    {
        CUresult r = cuModuleUnload(mod);
        REQUIRE(r == CUDA_ERROR_NOT_PERMITTED, "unloading the runtime's module gave %d", (int)r);
    }
#endif
    // the runtime's own launch still works
    mearas_sim_add_u32<<<1, 1, 0, s>>>(pinned, N, 1);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaStreamSynchronize(s));
    REQUIRE(pinned[0] == 8, "the runtime's launch after: %u", pinned[0]);

    EXPECT_ERR(cudaErrorInvalidDeviceFunction, cudaGetFuncBySymbol(&f, (const void *)&n));
    cudaGetLastError();

    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFreeHost(pinned));
    return pass();
}
