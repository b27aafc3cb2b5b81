// -rdc=true over three translation units, device-linked: a kernel here
// calls a __device__ function from rdc_func.cu and uses __device__ and
// __constant__ variables defined in rdc_vars.cu; a kernel defined in
// another file is launched from here.
#include "sim_check.cuh"
#include "rdc_shared.cuh"

__global__ void rdc_main_kernel(int *out, int n)
{
    int i = threadIdx.x;
    if (i < n)
        out[i] = rdc_twice(rdc_counter[i]) * rdc_scale;
}

int main(void)
{
    int h[64], back[64];
    for (int i = 0; i < 64; i++)
        h[i] = i + 1;
    CHECK_CUDA(cudaMemcpyToSymbol(rdc_counter, h, sizeof(h)));
    CHECK_CUDA(cudaMemcpyFromSymbol(back, rdc_counter, sizeof(back)));
    REQUIRE(memcmp(h, back, sizeof(h)) == 0, "rdc_counter round trip");
    int scale = 3, sb = 0;
    CHECK_CUDA(cudaMemcpyToSymbol(rdc_scale, &scale, sizeof(int)));
    CHECK_CUDA(cudaMemcpyFromSymbol(&sb, rdc_scale, sizeof(int)));
    REQUIRE(sb == 3, "rdc_scale %d", sb);
    size_t size = 0;
    CHECK_CUDA(cudaGetSymbolSize(&size, rdc_counter));
    REQUIRE(size == sizeof(h), "rdc_counter size %zu", size);

    int *d;
    CHECK_CUDA(cudaMalloc(&d, sizeof(h)));
    rdc_main_kernel<<<1, 64>>>(d, 64);
    CHECK_LAUNCH();
    rdc_lib_kernel<<<1, 64>>>(d, 64);
    CHECK_LAUNCH();
    int n = 64;
    void *args[] = { &d, &n };
    CHECK_CUDA(cudaLaunchKernel((const void *)rdc_lib_kernel, dim3(1), dim3(64), args, 0, 0));
    CHECK_LAUNCH();
    CHECK_CUDA(cudaFree(d));
    return pass();
}
