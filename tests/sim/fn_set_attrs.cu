// Function attributes a program sets read back as set, as the driver has
// them: the dynamic shared memory limit and the carveout preference of one
// kernel change, another kernel's stay at their defaults, and a refused
// value leaves the set one in place. Built twice: through mearas's runtime
// (its funcinfo) and through NVIDIA's static runtime over mearas's libcuda
// (cuFuncGetAttribute per attribute).
#include "sim_check.cuh"

__global__ void k_set(int *p) { p[threadIdx.x] = 1; }
__global__ void k_untouched(int *p) { p[threadIdx.x] = 2; }

int main(void)
{
    cudaFuncAttributes a, b;
    int optin = 0;

    CHECK_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    CHECK_CUDA(cudaFuncGetAttributes(&a, k_set));
    REQUIRE(a.preferredShmemCarveout == -1, "default carveout %d", a.preferredShmemCarveout);
    REQUIRE(a.maxDynamicSharedSizeBytes > 0 && a.maxDynamicSharedSizeBytes < optin,
            "default dynamic shared memory limit %d (opt-in %d)", a.maxDynamicSharedSizeBytes, optin);
    const int def_dyn = a.maxDynamicSharedSizeBytes, want_dyn = optin - (int)a.sharedSizeBytes;

    CHECK_CUDA(cudaFuncSetAttribute(k_set, cudaFuncAttributeMaxDynamicSharedMemorySize, want_dyn));
    CHECK_CUDA(cudaFuncSetAttribute(k_set, cudaFuncAttributePreferredSharedMemoryCarveout, 50));
    CHECK_CUDA(cudaFuncGetAttributes(&a, k_set));
    REQUIRE(a.maxDynamicSharedSizeBytes == want_dyn, "dynamic shared memory limit %d after setting %d",
            a.maxDynamicSharedSizeBytes, want_dyn);
    REQUIRE(a.preferredShmemCarveout == 50, "carveout %d after setting 50", a.preferredShmemCarveout);

    CHECK_CUDA(cudaFuncGetAttributes(&b, k_untouched));
    REQUIRE(b.maxDynamicSharedSizeBytes == def_dyn && b.preferredShmemCarveout == -1,
            "the other kernel's limit %d and carveout %d changed", b.maxDynamicSharedSizeBytes,
            b.preferredShmemCarveout);

    REQUIRE(cudaFuncSetAttribute(k_set, cudaFuncAttributeMaxDynamicSharedMemorySize, optin + 1) != cudaSuccess,
            "a dynamic shared memory limit above the opt-in maximum was taken");
    cudaGetLastError();
    CHECK_CUDA(cudaFuncGetAttributes(&a, k_set));
    REQUIRE(a.maxDynamicSharedSizeBytes == want_dyn, "a refused value replaced the limit: %d",
            a.maxDynamicSharedSizeBytes);
    pass();
    return 0;
}
