// -rdc test: device function and a kernel in their own translation unit.
#include "rdc_shared.cuh"

__device__ int rdc_twice(int v)
{
    return 2 * v;
}

__global__ void rdc_lib_kernel(int *out, int n)
{
    int i = threadIdx.x;
    if (i < n)
        out[i] = rdc_twice(i) + rdc_counter[i];
}
