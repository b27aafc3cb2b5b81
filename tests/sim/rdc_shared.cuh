// Declarations shared by the relocatable-device-code test's files.
#pragma once
extern __device__ int rdc_counter[64];
extern __constant__ int rdc_scale;
__device__ int rdc_twice(int v);
__global__ void rdc_lib_kernel(int *out, int n);
