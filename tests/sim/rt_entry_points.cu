// cudaGetDriverEntryPoint and cudaGetDriverEntryPointByVersion: the driver
// functions are mearas's libcuda.so.1's (the same addresses dlsym finds
// there), the per-thread forms when asked for, a usable cuMemAlloc; an
// unknown name is success with NULL and SymbolNotFound; bad arguments are
// cudaErrorInvalidValue.
#include <dlfcn.h>

#include "sim_check.cuh"

typedef int (*mem_alloc_fn)(unsigned long long *, size_t);
typedef int (*mem_free_fn)(unsigned long long);

int main(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult st = cudaDriverEntryPointVersionNotSufficent;
    unsigned long long ptr = 0;

    CHECK_CUDA(cudaFree(nullptr)); /* the runtime is up, libcuda.so.1 loaded */
    if (!lib)
        lib = dlopen("libcuda.so.1", RTLD_NOW);
    REQUIRE(lib, "libcuda.so.1 not found");
    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 13000, cudaEnableDefault, &st));
    REQUIRE(st == cudaDriverEntryPointSuccess && fn == dlsym(lib, "cuMemAlloc_v2"),
            "cuMemAlloc: status %d, %p (libcuda's cuMemAlloc_v2 %p)", (int)st, fn, dlsym(lib, "cuMemAlloc_v2"));
    REQUIRE(((mem_alloc_fn)fn)(&ptr, 4096) == 0 && ptr, "cuMemAlloc through the entry point failed");
    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuMemFree", &fn, 13000, cudaEnableDefault, nullptr));
    REQUIRE(fn && ((mem_free_fn)fn)(ptr) == 0, "cuMemFree through the entry point failed");

    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuMemcpyAsync", &fn, 13000, cudaEnablePerThreadDefaultStream, &st));
    REQUIRE(st == cudaDriverEntryPointSuccess && fn == dlsym(lib, "cuMemcpyAsync_ptsz"),
            "per-thread cuMemcpyAsync: status %d, %p", (int)st, fn);
    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuMemcpyAsync", &fn, 13000, cudaEnableLegacyStream, &st));
    REQUIRE(st == cudaDriverEntryPointSuccess && fn == dlsym(lib, "cuMemcpyAsync"),
            "legacy cuMemcpyAsync: status %d, %p", (int)st, fn);

    fn = &st;
    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuNoSuchCall", &fn, 13000, cudaEnableDefault, &st));
    REQUIRE(fn == nullptr && st == cudaDriverEntryPointSymbolNotFound, "unknown name: %p, status %d", fn, (int)st);

    EXPECT_ERR(cudaErrorInvalidValue, cudaGetDriverEntryPointByVersion(nullptr, &fn, 13000, cudaEnableDefault, &st));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGetDriverEntryPointByVersion("cuMemAlloc", nullptr, 13000, 0, &st));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 13000, 8, &st));
    cudaGetLastError();
    return pass();
}
