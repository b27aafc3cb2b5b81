// Device code that rdc_main.cu uses across the translation-unit boundary.
#include "rdc_shared.cuh"

__device__ int g_rdc_offset;

__device__ int rdc_transform(int x)
{
    return x * 5 + g_rdc_offset;
}
