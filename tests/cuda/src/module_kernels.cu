// The kernels tests/cuda/src/modules.cu loads as a cubin, a fat binary and
// PTX (tests/cuda/Makefile builds the three images and embeds them).
extern "C" __device__ unsigned mod_counter;
__device__ unsigned mod_counter;

extern "C" __global__ void mod_scale(int *p, int n, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        p[i] = p[i] * k + i;
        atomicAdd(&mod_counter, 1u);
    }
}
