// SPDX-License-Identifier: MIT
// Kernels whose fat binary the exec tests load: parameter layouts are known.
extern "C" __global__ void k_three(int *a, float b, double c)
{
	a[threadIdx.x] = (int)(b + c);
}

extern "C" __global__ void k_none(void)
{
}

__device__ int g_counter[16];

extern "C" __global__ void k_global(void)
{
	g_counter[threadIdx.x]++;
}
