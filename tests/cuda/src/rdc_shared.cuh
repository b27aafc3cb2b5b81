// Declarations shared by the two relocatable-device-code translation units.
#pragma once

extern __device__ int g_rdc_offset;
__device__ int rdc_transform(int x);
