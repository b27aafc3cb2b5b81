// Elementwise kernels on int arrays shared by the graph programs.
#pragma once

// x[i] += c for i < n
__global__ void add_const(int *x, int n, int c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] += c;
}

// x[i] += i for i < n
__global__ void add_index(int *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] += i;
}
