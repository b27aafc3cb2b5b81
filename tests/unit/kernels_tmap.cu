// SPDX-License-Identifier: MIT
// A kernel whose first parameter is aligned past the constant bank's
// parameter base (a __grid_constant__ CUtensorMap: 128 bytes, 64-byte
// aligned): its cubin pads the parameter, its PTX does not.
#include <cuda.h>

__global__ void k_tmap(const __grid_constant__ CUtensorMap m, unsigned long long *out)
{
	if (out)
		*out = (unsigned long long)&m;
}
