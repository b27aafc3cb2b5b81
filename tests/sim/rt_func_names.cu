// cudaFuncGetName and cudaFuncGetParamInfo answer from the kernel's fat
// binary: the device name (mangled for C++ kernels, plain for extern "C"
// ones and as instantiated for templates), and each parameter's offset and
// size in the parameter buffer, as the ABI lays them out; a parameter past
// the last, no place for the name, and what is no kernel are refused.
#include "sim_check.cuh"

struct Pair {
    int a;
    double b;
};

__global__ void k_mixed(char c, double d, int i, Pair p, short s) { (void)c, (void)d, (void)i, (void)p, (void)s; }
extern "C" __global__ void k_plain_c(int *p) { (void)p; }
template <typename T> __global__ void k_tmpl(T *p) { (void)p; }
template __global__ void k_tmpl<float>(float *);

int main(void)
{
    const char *name = nullptr;
    CHECK_CUDA(cudaFuncGetName(&name, (const void *)k_mixed));
    REQUIRE(name && !strcmp(name, "_Z7k_mixedcdi4Pairs"), "k_mixed's name: %s", name ? name : "(null)");
    CHECK_CUDA(cudaFuncGetName(&name, (const void *)k_plain_c));
    REQUIRE(name && !strcmp(name, "k_plain_c"), "k_plain_c's name: %s", name ? name : "(null)");
    CHECK_CUDA(cudaFuncGetName(&name, (const void *)k_tmpl<float>));
    REQUIRE(name && !strcmp(name, "_Z6k_tmplIfEvPT_"), "k_tmpl<float>'s name: %s", name ? name : "(null)");

    const size_t want[][2] = {{0, 1}, {8, 8}, {16, 4}, {24, 16}, {40, 2}}; // offset, size
    for (size_t i = 0; i < 5; i++) {
        size_t off = 99, size = 99;
        CHECK_CUDA(cudaFuncGetParamInfo((const void *)k_mixed, i, &off, &size));
        REQUIRE(off == want[i][0] && size == want[i][1], "parameter %zu: offset %zu size %zu, want %zu %zu", i, off,
                size, want[i][0], want[i][1]);
    }
    size_t off;
    CHECK_CUDA(cudaFuncGetParamInfo((const void *)k_mixed, 2, &off, nullptr));
    EXPECT_ERR(cudaErrorInvalidValue, cudaFuncGetParamInfo((const void *)k_mixed, 5, &off, nullptr));
    EXPECT_ERR(cudaErrorInvalidValue, cudaFuncGetName(nullptr, (const void *)k_mixed));
    EXPECT_ERR(cudaErrorInvalidResourceHandle, cudaFuncGetName(&name, (const void *)&off));
    EXPECT_ERR(cudaErrorInvalidResourceHandle, cudaFuncGetParamInfo((const void *)&off, 0, &off, nullptr));
    (void)cudaGetLastError();
    return pass();
}
