// Device variables of every kind, for mearas_module_footprint: 4 MiB
// zero-filled, 4000 initialised, 16 KiB managed, 4 KiB constant bytes
// (4218784 in all, what the PTX entries define).
__device__ float vars_big[1 << 20];
__device__ int vars_init[1000] = { 1, 2, 3 };
__managed__ int vars_managed[4096];
__constant__ float vars_const[1024];

__global__ void vars_k(float *out)
{
	unsigned i = threadIdx.x;

	out[i] = vars_big[i] + (float)vars_init[i] + (float)vars_managed[i] + vars_const[i];
}
