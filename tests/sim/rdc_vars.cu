// -rdc test: the variables, defined in their own translation unit.
#include "rdc_shared.cuh"

__device__ int rdc_counter[64];
__constant__ int rdc_scale;
