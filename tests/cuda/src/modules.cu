// Module loading from each image kind through the driver API: a cubin, a
// fat binary and PTX (JIT-compiled with options), each from memory and from
// a file, as modules (cuModuleLoadData, cuModuleLoadFatBinary,
// cuModuleLoadDataEx, cuModuleLoad) and as libraries (cuLibraryLoadData,
// cuLibraryLoadFromFile, a kernel's function and a module of a library);
// each runs mod_scale and reads the module's global counter back. The
// images are built from module_kernels.cu and embedded (tests/cuda/Makefile).
// Built three ways: static and shared runtime (the runtime makes the context),
// and with the driver API alone (MEARAS_DRIVER_ONLY, compiled as host C++).
#include <string>
#include <unistd.h>
#include <vector>
#include "check.cuh"
#include "cu_check.cuh"
#include "module_images.cuh"

static const int N = 3000;

// the image's bytes in a file of its own (removed by the caller), in $TMPDIR
// where it is set (a guest running this over a read-only share of the host
// sets it to a writable folder), else /tmp
static std::string to_file(const char *begin, const char *end, const char *suffix)
{
    const char *dir = getenv("TMPDIR");
    std::string tmpl = std::string(dir && *dir ? dir : "/tmp") + "/mearas-modules-XXXXXX";
    std::vector<char> path(tmpl.begin(), tmpl.end());
    path.push_back('\0');
    int fd = mkstemp(path.data());
    REQUIRE(fd >= 0, "mkstemp in %s", dir && *dir ? dir : "/tmp");
    size_t n = (size_t)(end - begin) - 1; // without the NUL EMBED adds
    REQUIRE(write(fd, begin, n) == (ssize_t)n, "write %s", path.data());
    close(fd);
    std::string named = std::string(path.data()) + suffix;
    REQUIRE(rename(path.data(), named.c_str()) == 0, "rename");
    return named;
}

// mod_scale over N ints on the module's function, then the module's counter
static void run(const char *how, CUfunction f, CUmodule m)
{
    std::vector<int> h(N);
    for (int i = 0; i < N; i++)
        h[i] = i % 97 - 40;
    CUdeviceptr d, counter;
    size_t csize = 0;
    unsigned zero = 0, count = 0;
    CHECK_CU(cuModuleGetGlobal(&counter, &csize, m, "mod_counter"));
    REQUIRE(csize == sizeof(unsigned), "%s: mod_counter of %zu bytes", how, csize);
    CHECK_CU(cuMemcpyHtoD(counter, &zero, sizeof(zero)));
    CHECK_CU(cuMemAlloc(&d, N * sizeof(int)));
    CHECK_CU(cuMemcpyHtoD(d, h.data(), N * sizeof(int)));
    int n = N, k = 3;
    void *args[] = {&d, &n, &k};
    CHECK_CU(cuLaunchKernel(f, (N + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr));
    CHECK_CU(cuMemcpyDtoH(h.data(), d, N * sizeof(int)));
    CHECK_CU(cuMemcpyDtoH(&count, counter, sizeof(count)));
    long long sum = 0;
    for (int i = 0; i < N; i++) {
        REQUIRE(h[i] == (i % 97 - 40) * 3 + i, "%s: element %d is %d", how, i, h[i]);
        sum += h[i];
    }
    REQUIRE(count == (unsigned)N, "%s: counter %u", how, count);
    printf("%-44s sum %lld, counter %u\n", how, sum, count);
    CHECK_CU(cuMemFree(d));
}

static void as_module(const char *how, CUmodule m)
{
    CUfunction f;
    CHECK_CU(cuModuleGetFunction(&f, m, "mod_scale"));
    run(how, f, m);
    CHECK_CU(cuModuleUnload(m));
}

int main(void)
{
#ifdef MEARAS_DRIVER_ONLY
    CUdevice dev = cu_primary_current();
#else
    CHECK_CUDA(cudaFree(nullptr)); // the runtime makes the primary context current
#endif
    CUmodule m;
    CHECK_CU(cuModuleLoadData(&m, mod_cubin));
    as_module("cubin, cuModuleLoadData", m);
    CHECK_CU(cuModuleLoadFatBinary(&m, mod_fatbin));
    as_module("fat binary, cuModuleLoadFatBinary", m);
    char log[4096] = "";
    CUjit_option opt[] = {CU_JIT_OPTIMIZATION_LEVEL, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[] = {(void *)(uintptr_t)3, log, (void *)(uintptr_t)sizeof(log)};
    CHECK_CU(cuModuleLoadDataEx(&m, mod_ptx, 3, opt, val));
    as_module("PTX, cuModuleLoadDataEx (JIT options)", m);

    std::string cubin = to_file(mod_cubin, mod_cubin_end, ".cubin");
    std::string fatbin = to_file(mod_fatbin, mod_fatbin_end, ".fatbin");
    std::string ptx = to_file(mod_ptx, mod_ptx_end, ".ptx");
    CHECK_CU(cuModuleLoad(&m, cubin.c_str()));
    as_module("cubin file, cuModuleLoad", m);
    CHECK_CU(cuModuleLoad(&m, fatbin.c_str()));
    as_module("fat binary file, cuModuleLoad", m);
    CHECK_CU(cuModuleLoad(&m, ptx.c_str()));
    as_module("PTX file, cuModuleLoad", m);

    // libraries: a kernel's function from PTX in memory, a module of a cubin file
    CUlibrary lib;
    CUkernel kern;
    CUfunction f;
    CHECK_CU(cuLibraryLoadData(&lib, mod_ptx, nullptr, nullptr, 0, nullptr, nullptr, 0));
    CHECK_CU(cuLibraryGetKernel(&kern, lib, "mod_scale"));
    CHECK_CU(cuKernelGetFunction(&f, kern));
    CHECK_CU(cuLibraryGetModule(&m, lib));
    run("PTX, cuLibraryLoadData, a kernel's function", f, m);
    CHECK_CU(cuLibraryUnload(lib));
    CHECK_CU(cuLibraryLoadFromFile(&lib, fatbin.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    CHECK_CU(cuLibraryGetModule(&m, lib));
    CHECK_CU(cuModuleGetFunction(&f, m, "mod_scale"));
    run("fat binary file, cuLibraryLoadFromFile", f, m);
    CHECK_CU(cuLibraryUnload(lib));
    EXPECT_CU(CUDA_ERROR_FILE_NOT_FOUND, cuModuleLoad(&m, "/nonexistent/mearas-module.cubin"));
    unlink(cubin.c_str());
    unlink(fatbin.c_str());
    unlink(ptx.c_str());
#ifdef MEARAS_DRIVER_ONLY
    CHECK_CU(cuDevicePrimaryCtxRelease(dev));
#endif
    printf("PASS\n");
    return 0;
}
