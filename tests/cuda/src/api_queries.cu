// Calls that programs written for older GPUs, and libraries choosing launch
// shapes, still make: 3D pitched allocations and memsets, a device by its
// PCI bus id, stream ids, the cache preference and the shared memory bank
// size (runtime and driver), managed memory attached to streams, peer
// attributes, the L2 persistence reset, kernel names and parameter layouts,
// a kernel as the driver's function (cudaGetFuncBySymbol, then cuLaunchKernel),
// stream attributes,
// and occupancy: the dynamic shared memory left
// per block and the block size of most occupancy (runtime template and
// driver, fixed and per-size shared memory, a block size limit) for kernels
// with and without static shared memory. Prints error names, values the GPU
// answers and yes/no checks: nothing that differs between two GPUs of one kind.
#include <cstring>
#include <set>
#include <thread>
#include <vector>
#include <cuda.h>
#include "check.cuh"
#include "cu_check.cuh"

// the bank-size calls are deprecated; programs call them all the same
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

__global__ void k_plain(int *p) { p[threadIdx.x] = 1; }

__global__ void k_static_smem(int *p)
{
    __shared__ int buf[1024];
    buf[threadIdx.x] = p[threadIdx.x];
    __syncthreads();
    p[threadIdx.x] = buf[1023 - threadIdx.x % 1024];
}

// the same shape through the driver API, as a module of PTX
static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry k_ptx(.param .u64 p)\n{\n"
                          "\t.shared .align 4 .b8 buf[4096];\n\t.reg .b32 %r<2>;\n"
                          "\tmov.u32 %r1, 1;\n\tst.shared.u32 [buf], %r1;\n\tret;\n}\n";

struct Pair {
    int a;
    double b;
};

__global__ void k_mixed(char c, double d, int i, Pair p, short s) { (void)c, (void)d, (void)i, (void)p, (void)s; }

static void rt_report(const char *what, cudaError_t e)
{
    std::printf("%s: %s\n", what, cudaGetErrorName(e));
    (void)cudaGetLastError();
}

static void cu_report(const char *what, CUresult r)
{
    const char *n = nullptr;
    cuGetErrorName(r, &n);
    std::printf("%s: %s\n", what, n ? n : "?");
}

static void memset_3d(void)
{
    const size_t w = 300, h = 12, d = 5;
    cudaPitchedPtr p;
    void *q;
    size_t pitch;
    CHECK_CUDA(cudaMalloc3D(&p, make_cudaExtent(w, h, d)));
    CHECK_CUDA(cudaMallocPitch(&q, &pitch, w, h * d));
    std::printf("malloc3D: pitch as cudaMallocPitch %s, xsize %zu, ysize %zu\n", p.pitch == pitch ? "yes" : "no",
                p.xsize, p.ysize);
    const size_t total = p.pitch * h * d;
    std::vector<unsigned char> model(total, 0x01), back(total);
    CHECK_CUDA(cudaMemset(p.ptr, 0x01, total));
    CHECK_CUDA(cudaMemset3D(p, 0x5A, make_cudaExtent(w, h, d)));
    for (size_t r = 0; r < h * d; r++)
        memset(&model[r * p.pitch], 0x5A, w);
    cudaPitchedPtr at = p;
    at.ptr = (char *)p.ptr + p.pitch * h + 2 * p.pitch + 7;
    cudaStream_t s = nonblocking_stream();
    CHECK_CUDA(cudaMemset3DAsync(at, 0xC3, make_cudaExtent(101, 4, 3), s));
    for (size_t z = 0; z < 3; z++)
        for (size_t y = 0; y < 4; y++)
            memset(&model[(1 + z) * h * p.pitch + (2 + y) * p.pitch + 7], 0xC3, 101);
    CHECK_CUDA(cudaStreamSynchronize(s));
    rt_report("memset3D one row wider than the pitch", cudaMemset3D(p, 0x77, make_cudaExtent(p.pitch + 5, 1, 1)));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(back.data(), p.ptr, total, cudaMemcpyDeviceToHost));
    size_t wide = 0;
    while (wide < total && back[wide] == 0x77)
        wide++;
    memset(&model[0], 0x77, wide);
    std::printf("memset3D: bytes as modelled %s, the wide row wrote %s\n", back == model ? "yes" : "no",
                wide == p.pitch + 5 ? "its bytes" : wide == 0 ? "nothing" : "some");
    rt_report("memset3D rows wider than the pitch", cudaMemset3D(p, 1, make_cudaExtent(p.pitch + 1, 2, 1)));
    rt_report("memset3D slices taller than the allocation's", cudaMemset3D(p, 1, make_cudaExtent(w, h + 1, 2)));
    rt_report("memset3D empty extent", cudaMemset3D(p, 1, make_cudaExtent(0, h, d)));
    CHECK_CUDA(cudaStreamDestroy(s));
    FREE_DEVICE(p.ptr, q);
}

static void bus_id(void)
{
    char id[32];
    int dev = -1;
    CHECK_CUDA(cudaDeviceGetPCIBusId(id, sizeof(id), 0));
    CHECK_CUDA(cudaDeviceGetByPCIBusId(&dev, id));
    std::printf("device by its bus id: %s\n", dev == 0 ? "yes" : "no");
    rt_report("device by a string that is no bus id", cudaDeviceGetByPCIBusId(&dev, "not a bus id"));
    rt_report("device by a bus id no device has", cudaDeviceGetByPCIBusId(&dev, "0000fffe:fe:1f.0"));
}

static void stream_ids(void)
{
    cudaStream_t s[3];
    std::set<unsigned long long> seen;
    bool stable = true;
    for (auto &st : s) {
        unsigned long long a, b;
        st = nonblocking_stream();
        CHECK_CUDA(cudaStreamGetId(st, &a));
        CHECK_CU(cuStreamGetId((CUstream)st, &b));
        stable = stable && a == b;
        seen.insert(a);
    }
    unsigned long long zero, legacy, pt, other = 0;
    CHECK_CUDA(cudaStreamGetId(0, &zero));
    CHECK_CUDA(cudaStreamGetId(cudaStreamLegacy, &legacy));
    CHECK_CUDA(cudaStreamGetId(cudaStreamPerThread, &pt));
    std::thread t([&] { CHECK_CUDA(cudaStreamGetId(cudaStreamPerThread, &other)); });
    t.join();
    seen.insert(legacy);
    seen.insert(pt);
    seen.insert(other);
    std::printf("stream ids: runtime as driver %s, stream 0 the legacy stream's %s, all different %s\n",
                stable ? "yes" : "no", zero == legacy ? "yes" : "no", seen.size() == 6 ? "yes" : "no");
    for (auto st : s)
        CHECK_CUDA(cudaStreamDestroy(st));
}

static void configs(CUfunction f)
{
    cudaFuncCache cache;
    cudaSharedMemConfig bank;
    CUsharedconfig cbank;
    rt_report("cudaDeviceSetCacheConfig(PreferL1)", cudaDeviceSetCacheConfig(cudaFuncCachePreferL1));
    CHECK_CUDA(cudaDeviceGetCacheConfig(&cache));
    std::printf("cache preference read back: %d\n", (int)cache);
    rt_report("cudaDeviceSetCacheConfig(PreferNone)", cudaDeviceSetCacheConfig(cudaFuncCachePreferNone));
    rt_report("cudaDeviceSetCacheConfig(5)", cudaDeviceSetCacheConfig((cudaFuncCache)5));
    CHECK_CUDA(cudaDeviceGetSharedMemConfig(&bank));
    std::printf("bank size: %d\n", (int)bank);
    rt_report("cudaDeviceSetSharedMemConfig(EightByte)", cudaDeviceSetSharedMemConfig(cudaSharedMemBankSizeEightByte));
    CHECK_CUDA(cudaDeviceGetSharedMemConfig(&bank));
    std::printf("bank size after EightByte: %d\n", (int)bank);
    rt_report("cudaDeviceSetSharedMemConfig(3)", cudaDeviceSetSharedMemConfig((cudaSharedMemConfig)3));
    rt_report("cudaFuncSetSharedMemConfig(k_plain, FourByte)",
              cudaFuncSetSharedMemConfig((const void *)k_plain, cudaSharedMemBankSizeFourByte));
    rt_report("cudaFuncSetSharedMemConfig(k_plain, 3)", cudaFuncSetSharedMemConfig((const void *)k_plain, (cudaSharedMemConfig)3));
    CHECK_CU(cuCtxGetSharedMemConfig(&cbank));
    std::printf("driver bank size: %d\n", (int)cbank);
    cu_report("cuCtxSetSharedMemConfig(EIGHT_BYTE)", cuCtxSetSharedMemConfig(CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE));
    cu_report("cuCtxSetSharedMemConfig(3)", cuCtxSetSharedMemConfig((CUsharedconfig)3));
    cu_report("cuFuncSetSharedMemConfig(k_ptx, FOUR_BYTE)", cuFuncSetSharedMemConfig(f, CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE));
    cu_report("cuFuncSetSharedMemConfig(k_ptx, 3)", cuFuncSetSharedMemConfig(f, (CUsharedconfig)3));
}

static void managed_attach_and_peers(void)
{
    unsigned char *m, *d;
    int v = -1;
    cudaStream_t s = nonblocking_stream();
    CHECK_CUDA(cudaMallocManaged(&m, 1 << 16, cudaMemAttachGlobal));
    CHECK_CUDA(cudaMalloc(&d, 1 << 16));
    rt_report("attach whole, the stream alone", cudaStreamAttachMemAsync(s, m, 0, cudaMemAttachSingle));
    rt_report("attach part, host", cudaStreamAttachMemAsync(s, m + 4096, 4096, cudaMemAttachHost));
    rt_report("attach whole by its size, host", cudaStreamAttachMemAsync(s, m, 1 << 16, cudaMemAttachHost));
    rt_report("attach on stream 0, global", cudaStreamAttachMemAsync(0, m, 1 << 16, cudaMemAttachGlobal));
    // (no flag at all: NVIDIA's runtime crashes on an H200; mearas refuses it, tests/sim)
    rt_report("attach device memory", cudaStreamAttachMemAsync(s, d, 0, cudaMemAttachGlobal));
    CHECK_CUDA(cudaStreamSynchronize(s));
    rt_report("P2P attribute of device 0 with itself", cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrAccessSupported, 0, 0));
    rt_report("cudaCtxResetPersistingL2Cache", cudaCtxResetPersistingL2Cache());
    CHECK_CUDA(cudaStreamDestroy(s));
    FREE_DEVICE(m, d);
}

static void func_names(void)
{
    const char *name = nullptr;
    CHECK_CUDA(cudaFuncGetName(&name, (const void *)k_mixed));
    std::printf("k_mixed's name: %s\n", name);
    CHECK_CUDA(cudaFuncGetName(&name, (const void *)k_static_smem));
    std::printf("k_static_smem's name: %s\n", name);
    for (size_t i = 0; i < 6; i++) {
        size_t off = 0, size = 0;
        cudaError_t e = cudaFuncGetParamInfo((const void *)k_mixed, i, &off, &size);
        std::printf("k_mixed parameter %zu: %s, offset %zu, size %zu\n", i, cudaGetErrorName(e), off, size);
    }
    (void)cudaGetLastError();
}

// the runtime's kernel as the driver's function (cudaGetFuncBySymbol): its
// name, an attribute, a launch through cuLaunchKernel, a global of its module
static void func_by_symbol(void)
{
    cudaFunction_t f = nullptr, again = nullptr;
    CUmodule mod = nullptr;
    CUfunction other = nullptr;
    const char *name = nullptr;
    int regs = -1, *d, h[32];
    void *args[] = {&d};

    CHECK_CUDA(cudaGetFuncBySymbol(&f, (const void *)k_plain));
    CHECK_CUDA(cudaGetFuncBySymbol(&again, (const void *)k_plain));
    CHECK_CU(cuFuncGetName(&name, (CUfunction)f));
    CHECK_CU(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, (CUfunction)f));
    CHECK_CUDA(cudaMalloc(&d, sizeof(h)));
    CHECK_CUDA(cudaMemset(d, 0, sizeof(h)));
    CHECK_CU(cuLaunchKernel((CUfunction)f, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
    CHECK_CUDA(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
    int ones = 0;
    for (int i = 0; i < 32; i++)
        ones += h[i];
    CHECK_CU(cuFuncGetModule(&mod, (CUfunction)f));
    CHECK_CU(cuModuleGetFunction(&other, mod, "_Z13k_static_smemPi"));
    std::printf("cudaGetFuncBySymbol: same handle %s, name %s, registers known %s, driver launch wrote %d ones, "
                "module's other kernel found %s\n",
                f == again ? "yes" : "no", name, regs >= 0 ? "yes" : "no", ones, other ? "yes" : "no");
    CHECK_CUDA(cudaFree(d));
}

static void stream_attrs(void)
{
    int least, greatest;
    cudaStream_t s, t;
    cudaStreamAttrValue v;
    CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CHECK_CUDA(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest));
    t = nonblocking_stream();
    CHECK_CUDA(cudaStreamGetAttribute(s, cudaStreamAttributeSynchronizationPolicy, &v));
    std::printf("stream attributes: policy %d", (int)v.syncPolicy);
    CHECK_CUDA(cudaStreamGetAttribute(s, cudaStreamAttributePriority, &v));
    std::printf(", priority the stream's %s", v.priority == greatest ? "yes" : "no");
    CHECK_CUDA(cudaStreamGetAttribute(s, cudaStreamAttributeMemSyncDomain, &v));
    std::printf(", domain %d", (int)v.memSyncDomain);
    CHECK_CUDA(cudaStreamGetAttribute(s, cudaStreamAttributeMemSyncDomainMap, &v));
    std::printf(", map %u %u", v.memSyncDomainMap.default_, v.memSyncDomainMap.remote);
    CHECK_CUDA(cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));
    std::printf(", window %zu bytes\n", v.accessPolicyWindow.num_bytes);
    v = {};
    v.syncPolicy = cudaSyncPolicySpin;
    rt_report("set policy Spin", cudaStreamSetAttribute(s, cudaStreamAttributeSynchronizationPolicy, &v));
    CHECK_CUDA(cudaStreamCopyAttributes(t, s));
    CHECK_CUDA(cudaStreamGetAttribute(t, cudaStreamAttributeSynchronizationPolicy, &v));
    std::printf("policy copied to another stream: %d\n", (int)v.syncPolicy);
    v.syncPolicy = (cudaSynchronizationPolicy)5;
    rt_report("set policy 5", cudaStreamSetAttribute(s, cudaStreamAttributeSynchronizationPolicy, &v));
    rt_report("get cooperative of a stream", cudaStreamGetAttribute(s, cudaLaunchAttributeCooperative, &v));
    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaStreamDestroy(t));
}

static size_t smem_per_thread_64(int block) { return (size_t)block * 64; }
static size_t smem_per_thread_200(int block) { return (size_t)block * 200; }

static void occupancy(CUfunction f)
{
    const int shapes[][2] = {{1, 128}, {2, 256}, {4, 256}, {8, 128}, {16, 64}, {32, 64}, {33, 32}, {3, 1024}, {2, 1024}};
    for (auto &sh : shapes) {
        size_t a = 0, b = 0, c = 0;
        cudaError_t e1 = cudaOccupancyAvailableDynamicSMemPerBlock(&a, (const void *)k_plain, sh[0], sh[1]);
        cudaError_t e2 = cudaOccupancyAvailableDynamicSMemPerBlock(&b, (const void *)k_static_smem, sh[0], sh[1]);
        CUresult e3 = cuOccupancyAvailableDynamicSMemPerBlock(&c, f, sh[0], sh[1]);
        std::printf("dynamic smem for %d blocks of %d: %zu (%s), static 4 KiB %zu (%s), driver %zu (%d)\n", sh[0], sh[1],
                    a, cudaGetErrorName(e1), b, cudaGetErrorName(e2), c, (int)e3);
    }
    rt_report("dynamic smem for 0 blocks", cudaOccupancyAvailableDynamicSMemPerBlock(nullptr, (const void *)k_plain, 0, 32));

    struct {
        CUoccupancyB2DSize fn;
        size_t smem;
        int limit;
    } cases[] = {{nullptr, 0, 0}, {nullptr, 40000, 0}, {smem_per_thread_64, 0, 0}, {smem_per_thread_200, 0, 0},
                 {smem_per_thread_200, 0, 100}, {nullptr, 0, 200}};
    for (auto &c : cases) {
        int grid = -1, size = -1, grid2 = -1, size2 = -1, rgrid = -1, rsize = -1;
        CHECK_CU(cuOccupancyMaxPotentialBlockSize(&grid, &size, f, c.fn, c.smem, c.limit));
        CHECK_CU(cuOccupancyMaxPotentialBlockSizeWithFlags(&grid2, &size2, f, c.fn, c.smem, c.limit,
                                                           CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE));
        if (c.fn)
            CHECK_CUDA(cudaOccupancyMaxPotentialBlockSizeVariableSMem(&rgrid, &rsize, k_static_smem, c.fn, c.limit));
        else
            CHECK_CUDA(cudaOccupancyMaxPotentialBlockSize(&rgrid, &rsize, k_static_smem, c.smem, c.limit));
        std::printf("potential block size (%s, %zu, limit %d): driver %d, grid %d; with flags %d, %d; runtime %d, %d\n",
                    c.fn == smem_per_thread_64 ? "64 B/thread" : c.fn ? "200 B/thread" : "fixed", c.smem, c.limit,
                    size, grid, size2, grid2, rsize, rgrid);
    }
    int grid, size;
    cu_report("potential block size, no grid", cuOccupancyMaxPotentialBlockSize(nullptr, &size, f, nullptr, 0, 0));
    cu_report("potential block size, limit -1", cuOccupancyMaxPotentialBlockSize(&grid, &size, f, nullptr, 0, -1));
}

int main(void)
{
    setvbuf(stdout, nullptr, _IOLBF, 0); // what was printed stays if a call crashes
    CHECK_CUDA(cudaSetDevice(0));
    CUmodule mod;
    CUfunction f;
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "k_ptx"));
    memset_3d();
    bus_id();
    stream_ids();
    configs(f);
    managed_attach_and_peers();
    func_names();
    func_by_symbol();
    stream_attrs();
    occupancy(f);
    CHECK_CU(cuModuleUnload(mod));
    return pass();
}
