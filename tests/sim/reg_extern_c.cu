// extern "C" kernels (unmangled names) next to a C++ overload set.
#include "sim_check.cuh"

extern "C" __global__ void plain_c_kernel(int *out, int n)
{
    if (threadIdx.x < n)
        out[threadIdx.x] = n;
}

extern "C" __global__ void plain_c_kernel2(double x, float *out)
{
    out[0] = (float)x;
}

__global__ void overloaded(int *out) { out[0] = 1; }
__global__ void overloaded(int *out, int v) { out[0] = v; }

int main(void)
{
    int *d = nullptr;
    CHECK_CUDA(cudaMalloc(&d, 256));
    plain_c_kernel<<<1, 32>>>(d, 32);
    CHECK_LAUNCH();
    plain_c_kernel2<<<1, 1>>>(3.0, (float *)d);
    CHECK_LAUNCH();
    void (*o1)(int *) = overloaded;
    void (*o2)(int *, int) = overloaded;
    o1<<<1, 1>>>(d);
    CHECK_LAUNCH();
    o2<<<1, 1>>>(d, 5);
    CHECK_LAUNCH();
    void *args[] = { &d };
    CHECK_CUDA(cudaLaunchKernel((const void *)o1, dim3(1), dim3(1), args, 0, 0));
    CHECK_LAUNCH();
    int n = 4;
    void *args2[] = { &d, &n };
    CHECK_CUDA(cudaLaunchKernel((const void *)plain_c_kernel, dim3(1), dim3(4), args2, 0, 0));
    CHECK_LAUNCH();
    CHECK_CUDA(cudaFree(d));
    return pass();
}
