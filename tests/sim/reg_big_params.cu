// Kernels whose parameters exceed 4 KiB (a large struct by value): the
// parameter buffer no longer fits the record's inline bytes.
#include "sim_check.cuh"

struct Big {
    int values[1500]; // 6000 bytes
};

struct Huge {
    double values[3000]; // 24000 bytes (CUDA 12.1+ allows up to 32764)
};

__global__ void k_big(Big b, int *out)
{
    out[threadIdx.x] = b.values[threadIdx.x];
}

__global__ void k_big_tail(int *out, char c, Big b, short s)
{
    out[0] = b.values[1499] + c + s;
}

__global__ void k_huge(Huge h, double *out)
{
    out[0] = h.values[2999];
}

int main(void)
{
    static Big b;
    static Huge h;
    for (int i = 0; i < 1500; i++)
        b.values[i] = i;
    for (int i = 0; i < 3000; i++)
        h.values[i] = i;
    int *d = nullptr;
    CHECK_CUDA(cudaMalloc(&d, 1 << 16));
    k_big<<<1, 64>>>(b, d);
    CHECK_LAUNCH();
    k_big_tail<<<1, 1>>>(d, 'c', b, 3);
    CHECK_LAUNCH();
    k_huge<<<1, 1>>>(h, (double *)d);
    CHECK_LAUNCH();
    // many in a row without synchronizing: exercises the payload arena
    for (int i = 0; i < 400; i++) {
        k_huge<<<1, 1>>>(h, (double *)d);
        CHECK_CUDA(cudaGetLastError());
    }
    CHECK_CUDA(cudaDeviceSynchronize());
    void *args[] = { &h, &d };
    CHECK_CUDA(cudaLaunchKernel((const void *)k_huge, dim3(1), dim3(1), args, 0, 0));
    CHECK_LAUNCH();
    return pass();
}
