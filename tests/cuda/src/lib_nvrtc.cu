// NVRTC + driver API: a kernel template compiled from a string to a cubin
// (--gpu-architecture=sm_90, name expression axpy<int>), loaded with
// cuModuleLoadData and launched with cuLaunchKernel on a runtime stream with
// runtime-allocated memory; an extern "C" kernel compiled to PTX (compute_90),
// JIT-loaded with cuLibraryLoadData and launched through cuLibraryGetKernel +
// cuKernelGetFunction on a driver stream with cuMemAlloc memory; a kernel and
// the device function it calls compiled apart (relocatable PTX) and linked
// with cuLinkCreate / cuLinkAddData / cuLinkComplete; a source with an error
// fails with NVRTC_ERROR_COMPILATION. Integer kernels: exact checks.
#include <string>
#include <cuda.h>
#include <nvrtc.h>
#include "lib_ref.h"

#define CHECK_NVRTC(call) CHECK_STATUS(call, NVRTC_SUCCESS, nvrtcGetErrorString)

static const char *cu_name(CUresult r)
{
    const char *s = nullptr;
    return cuGetErrorName(r, &s) == CUDA_SUCCESS && s ? s : "unknown CUresult";
}
#define CHECK_CU(call) CHECK_STATUS(call, CUDA_SUCCESS, cu_name)

static const char *source = R"(
template <typename T> __global__ void axpy(T a, const T *x, T *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

extern "C" __global__ void mix(unsigned int *v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned int h = v[i] ^ (unsigned int)i;
        h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
        v[i] = h;
    }
}
)";

// the same hash, its kernel and its device function in two sources, linked
static const char *linked_kernel = R"(
__device__ unsigned int scramble(unsigned int v, int i);
extern "C" __global__ void linked(unsigned int *v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] = scramble(v[i], i);
}
)";

static const char *linked_helper = R"(
__device__ unsigned int scramble(unsigned int v, int i)
{
    unsigned int h = v ^ (unsigned int)i;
    h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
    return h;
}
)";

static unsigned int mix_cpu(unsigned int v, int i)
{
    unsigned int h = v ^ (unsigned int)i;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return h;
}

// Compiles `src` with one option (and a second, if given); returns the cubin
// or PTX, and the lowered name of `expr` if given.
static std::string compile(const char *src, const char *option, bool cubin, const char *expr,
                           std::string *lowered, const char *option2 = nullptr)
{
    const char *options[] = {option, option2};
    nvrtcProgram prog;
    CHECK_NVRTC(nvrtcCreateProgram(&prog, src, "lib_nvrtc.cu", 0, nullptr, nullptr));
    if (expr)
        CHECK_NVRTC(nvrtcAddNameExpression(prog, expr));
    nvrtcResult res = nvrtcCompileProgram(prog, option2 ? 2 : 1, options);
    if (res != NVRTC_SUCCESS) {
        size_t n = 0;
        CHECK_NVRTC(nvrtcGetProgramLogSize(prog, &n));
        std::string log(n, '\0');
        CHECK_NVRTC(nvrtcGetProgramLog(prog, &log[0]));
        std::printf("FAIL: nvrtcCompileProgram(%s) returned %s:\n%s\n", option,
                    nvrtcGetErrorString(res), log.c_str());
        std::exit(1);
    }
    if (expr) {
        const char *name;
        CHECK_NVRTC(nvrtcGetLoweredName(prog, expr, &name));
        *lowered = name; // valid until the program is destroyed
    }
    size_t size = 0;
    CHECK_NVRTC(cubin ? nvrtcGetCUBINSize(prog, &size) : nvrtcGetPTXSize(prog, &size));
    std::string code(size, '\0');
    CHECK_NVRTC(cubin ? nvrtcGetCUBIN(prog, &code[0]) : nvrtcGetPTX(prog, &code[0]));
    CHECK_NVRTC(nvrtcDestroyProgram(&prog));
    return code;
}

// Runs hash kernel f (unsigned *v, int n) over n random words on a driver
// stream with cuMemAlloc memory; every word must be mix_cpu's.
static void run_hash(CUfunction f, const char *name, int n)
{
    const int threads = 256, blocks = (n + threads - 1) / threads;
    std::vector<unsigned int> v(n), back(n);
    unsigned int seed = 99u;
    for (auto &e : v)
        e = lcg_next(&seed);
    CUstream ds;
    CUdeviceptr dv;
    CHECK_CU(cuStreamCreate(&ds, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&dv, n * sizeof(unsigned int)));
    CHECK_CU(cuMemcpyHtoDAsync(dv, v.data(), n * sizeof(unsigned int), ds));
    void *args[] = {&dv, &n};
    CHECK_CU(cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, ds, args, nullptr));
    CHECK_CU(cuMemcpyDtoHAsync(back.data(), dv, n * sizeof(unsigned int), ds));
    CHECK_CU(cuStreamSynchronize(ds));
    for (int i = 0; i < n; i++)
        REQUIRE(back[i] == mix_cpu(v[i], i), "%s[%d] = %08x, expected %08x", name, i, back[i],
                mix_cpu(v[i], i));
    CHECK_CU(cuMemFree(dv));
    CHECK_CU(cuStreamDestroy(ds));
}

int main(void)
{
    const int n = 100003, threads = 256, blocks = (n + threads - 1) / threads;
    // The runtime makes device 0's primary context current for the driver calls.
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaFree(nullptr));

    std::string lowered;
    std::string cubin = compile(source, "--gpu-architecture=sm_90", true, "axpy<int>", &lowered);
    CUmodule mod;
    CUfunction axpy;
    CHECK_CU(cuModuleLoadData(&mod, cubin.data()));
    CHECK_CU(cuModuleGetFunction(&axpy, mod, lowered.c_str()));
    std::vector<int> x(n), y(n);
    for (int i = 0; i < n; i++) {
        x[i] = i % 1000 - 500;
        y[i] = 7 * i;
    }
    cudaStream_t s = nonblocking_stream();
    int *dx = to_device(x, s), *dy = to_device(y, s), a = -3, count = n;
    void *axpy_args[] = {&a, &dx, &dy, &count};
    CHECK_CU(cuLaunchKernel(axpy, blocks, 1, 1, threads, 1, 1, 0, (CUstream)s, axpy_args, nullptr));
    auto got = to_host(dy, n, s);
    for (int i = 0; i < n; i++)
        REQUIRE(got[i] == a * x[i] + y[i], "axpy<int>[%d] = %d, expected %d", i, got[i],
                a * x[i] + y[i]);
    std::printf("nvrtc sm_90 cubin, cuModuleLoadData, axpy<int> n=%d on a runtime stream: exact: "
                "yes\n",
                n);
    FREE_DEVICE(dx, dy);
    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CU(cuModuleUnload(mod));

    std::string ptx = compile(source, "--gpu-architecture=compute_90", false, nullptr, nullptr);
    REQUIRE(ptx.find(".entry mix") != std::string::npos, "PTX lacks the mix entry");
    CUlibrary lib;
    CUkernel kern;
    CUfunction mix;
    CHECK_CU(cuLibraryLoadData(&lib, ptx.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    CHECK_CU(cuLibraryGetKernel(&kern, lib, "mix"));
    CHECK_CU(cuKernelGetFunction(&mix, kern));
    run_hash(mix, "mix", n);
    std::printf("nvrtc compute_90 PTX, cuLibraryLoadData, mix n=%d on a driver stream: exact: "
                "yes\n",
                n);
    CHECK_CU(cuLibraryUnload(lib));

    // separate compilation: cuLink on the device's context joins the two
    std::string kptx = compile(linked_kernel, "--gpu-architecture=compute_90", false, nullptr, nullptr,
                               "--relocatable-device-code=true");
    std::string hptx = compile(linked_helper, "--gpu-architecture=compute_90", false, nullptr, nullptr,
                               "--relocatable-device-code=true");
    char link_log[4096] = "";
    CUjit_option link_opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *link_vals[] = {link_log, (void *)(uintptr_t)sizeof(link_log)};
    CUlinkState link;
    void *image = nullptr;
    size_t image_size = 0;
    CHECK_CU(cuLinkCreate(2, link_opts, link_vals, &link));
    CHECK_CU(cuLinkAddData(link, CU_JIT_INPUT_PTX, (void *)kptx.c_str(), kptx.size(), "kernel", 0, nullptr,
                           nullptr));
    CHECK_CU(cuLinkAddData(link, CU_JIT_INPUT_PTX, (void *)hptx.c_str(), hptx.size(), "helper", 0, nullptr,
                           nullptr));
    CUresult lr = cuLinkComplete(link, &image, &image_size);
    REQUIRE(lr == CUDA_SUCCESS, "cuLinkComplete: %s: %s", cu_name(lr), link_log);
    CUmodule linked_mod;
    CUfunction linked_fn;
    CHECK_CU(cuModuleLoadData(&linked_mod, image));
    CHECK_CU(cuLinkDestroy(link));
    CHECK_CU(cuModuleGetFunction(&linked_fn, linked_mod, "linked"));
    run_hash(linked_fn, "linked", n);
    std::printf("nvrtc relocatable PTX x2, cuLinkComplete, linked n=%d: exact: yes\n", n);
    CHECK_CU(cuModuleUnload(linked_mod));

    nvrtcProgram bad;
    const char *opt = "--gpu-architecture=sm_90";
    CHECK_NVRTC(nvrtcCreateProgram(&bad, "__global__ void k() { undeclared(); }", "bad.cu", 0,
                                   nullptr, nullptr));
    nvrtcResult res = nvrtcCompileProgram(bad, 1, &opt);
    size_t log_size = 0;
    CHECK_NVRTC(nvrtcGetProgramLogSize(bad, &log_size));
    REQUIRE(res == NVRTC_ERROR_COMPILATION && log_size > 1, "bad source: %s, log %zu bytes",
            nvrtcGetErrorString(res), log_size);
    std::printf("nvrtc source with an error: %s, with a log\n", nvrtcGetErrorString(res));
    CHECK_NVRTC(nvrtcDestroyProgram(&bad));
    return pass();
}
