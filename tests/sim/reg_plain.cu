// Plain nvcc build: kernels with mixed parameter types (alignment padding
// between them) are registered, launch and synchronize cleanly.
#include "sim_check.cuh"

__global__ void k_no_params(void) {}

__global__ void k_mixed(char c, double d, int *p, short s, float f, long long ll, char c2)
{
    if (threadIdx.x == 0 && p)
        p[0] = (int)(c + d + s + f + ll + c2);
}

struct Small {
    int a;
    char b;
};

__global__ void k_struct(Small s, int *p, Small t)
{
    if (p)
        p[0] = s.a + s.b + t.a;
}

int main(void)
{
    int *d = nullptr;
    CHECK_CUDA(cudaMalloc(&d, 64));
    k_no_params<<<1, 1>>>();
    CHECK_LAUNCH();
    k_mixed<<<2, 32>>>('a', 1.5, d, 7, 2.5f, 1ll << 40, 'z');
    CHECK_LAUNCH();
    k_struct<<<dim3(2, 2, 2), dim3(4, 4, 4)>>>(Small{1, 2}, d, Small{3, 4});
    CHECK_LAUNCH();

    cudaFuncAttributes attr;
    CHECK_CUDA(cudaFuncGetAttributes(&attr, k_mixed));
    REQUIRE(attr.maxThreadsPerBlock > 0, "maxThreadsPerBlock %d", attr.maxThreadsPerBlock);
    CHECK_CUDA(cudaFuncGetAttributes(&attr, k_no_params));
    CHECK_CUDA(cudaFree(d));
    return pass();
}
