// Device limits, the profiler calls and memory pools: limits read back what
// was set (the context's own), stream-ordered allocations come from the
// current pool (default, or one made and set current) and hold what kernels
// write, pool attributes read back, and used memory follows allocations.
// Prints only what a GPU and a vGPU must agree on.
#include <cstdint>
#include <cuda_profiler_api.h>
#include "check.cuh"

__global__ void fill(unsigned *p, int n, unsigned base)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = base + (unsigned)i;
}

static unsigned long long sum_of(const unsigned *d, int n, cudaStream_t s)
{
    static unsigned host[1 << 18];
    unsigned long long t = 0;
    CHECK_CUDA(cudaMemcpyAsync(host, d, n * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    for (int i = 0; i < n; i++)
        t += host[i];
    return t;
}

static uint64_t used_of(cudaMemPool_t pool)
{
    uint64_t v = 0;
    CHECK_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &v));
    return v;
}

static void test_limits(void)
{
    size_t v;
    CHECK_CUDA(cudaDeviceGetLimit(&v, cudaLimitStackSize));
    std::printf("limit stack default %zu\n", v);
    CHECK_CUDA(cudaDeviceGetLimit(&v, cudaLimitPrintfFifoSize));
    std::printf("limit printf default %zu\n", v);
    CHECK_CUDA(cudaDeviceGetLimit(&v, cudaLimitMallocHeapSize));
    std::printf("limit heap default %zu\n", v);
    CHECK_CUDA(cudaDeviceSetLimit(cudaLimitStackSize, 4096));
    CHECK_CUDA(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 32u << 20));
    CHECK_CUDA(cudaDeviceGetLimit(&v, cudaLimitStackSize));
    std::printf("limit stack set %zu\n", v);
    CHECK_CUDA(cudaDeviceGetLimit(&v, cudaLimitMallocHeapSize));
    std::printf("limit heap set %zu\n", v);
    std::printf("limit 99: %s\n", cudaGetErrorName(cudaDeviceSetLimit((cudaLimit)99, 1)));
    cudaGetLastError();
}

static void test_profiler(void)
{
    std::printf("profiler start: %s\n", cudaGetErrorName(cudaProfilerStart()));
    std::printf("profiler stop: %s\n", cudaGetErrorName(cudaProfilerStop()));
}

static void test_pools(void)
{
    const int n = 1 << 18; // 1 MiB of unsigned
    cudaMemPool_t def, cur, mine;
    cudaStream_t s;
    unsigned *a, *b, *c;
    CHECK_CUDA(cudaStreamCreate(&s));
    CHECK_CUDA(cudaDeviceGetDefaultMemPool(&def, 0));
    CHECK_CUDA(cudaDeviceGetMemPool(&cur, 0));
    std::printf("pool current is default: %d\n", cur == def);

    uint64_t before = used_of(def);
    CHECK_CUDA(cudaMallocAsync(&a, n * sizeof(unsigned), s));
    CHECK_CUDA(cudaMallocAsync(&b, 3 * n * sizeof(unsigned), s));
    fill<<<(n + 255) / 256, 256, 0, s>>>(a, n, 7);
    fill<<<(3 * n + 255) / 256, 256, 0, s>>>(b, 3 * n, 11);
    CHECK_CUDA(cudaGetLastError());
    std::printf("pool a sum %llu\n", sum_of(a, n, s));
    std::printf("pool used grew by 4 MiB or more: %d\n", used_of(def) - before >= (4u << 20));
    uint64_t high = 0;
    CHECK_CUDA(cudaMemPoolGetAttribute(def, cudaMemPoolAttrUsedMemHigh, &high));
    std::printf("pool high >= used: %d\n", high >= used_of(def));
    uint64_t with_a = used_of(def);
    CHECK_CUDA(cudaFreeAsync(a, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    std::printf("pool used fell after a free: %d\n", used_of(def) < with_a);

    uint64_t thr = ~0ull, got = 0;
    CHECK_CUDA(cudaMemPoolSetAttribute(def, cudaMemPoolAttrReleaseThreshold, &thr));
    CHECK_CUDA(cudaMemPoolGetAttribute(def, cudaMemPoolAttrReleaseThreshold, &got));
    std::printf("pool release threshold %llx\n", (unsigned long long)got);
    int flag = 0;
    CHECK_CUDA(cudaMemPoolSetAttribute(def, cudaMemPoolReuseAllowOpportunistic, &flag));
    flag = 1;
    CHECK_CUDA(cudaMemPoolGetAttribute(def, cudaMemPoolReuseAllowOpportunistic, &flag));
    std::printf("pool opportunistic reuse %d\n", flag);
    CHECK_CUDA(cudaMemPoolTrimTo(def, 0));

    mine = new_device_pool(0);
    CHECK_CUDA(cudaDeviceSetMemPool(0, mine));
    CHECK_CUDA(cudaDeviceGetMemPool(&cur, 0));
    std::printf("pool current is ours: %d\n", cur == mine);
    CHECK_CUDA(cudaMallocAsync(&c, n * sizeof(unsigned), s));
    fill<<<(n + 255) / 256, 256, 0, s>>>(c, n, 100);
    CHECK_CUDA(cudaGetLastError());
    std::printf("pool c sum %llu, our pool used: %d\n", sum_of(c, n, s), used_of(mine) >= (1u << 20));
    unsigned *d;
    CHECK_CUDA(cudaMallocFromPoolAsync(&d, n * sizeof(unsigned), def, s));
    fill<<<(n + 255) / 256, 256, 0, s>>>(d, n, 5);
    std::printf("pool d sum %llu\n", sum_of(d, n, s));

    cudaMemLocation loc = {};
    cudaMemAccessFlags acc;
    loc.type = cudaMemLocationTypeDevice;
    loc.id = 0;
    CHECK_CUDA(cudaMemPoolGetAccess(&acc, mine, &loc));
    std::printf("pool own access %d\n", (int)acc);

    std::printf("destroy the default pool refused: %d\n", cudaMemPoolDestroy(def) != cudaSuccess);
    cudaGetLastError();
    CHECK_CUDA(cudaFreeAsync(c, s));
    CHECK_CUDA(cudaFreeAsync(d, s));
    CHECK_CUDA(cudaFreeAsync(b, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemPoolDestroy(mine));
    CHECK_CUDA(cudaDeviceGetMemPool(&cur, 0));
    std::printf("pool current back to default: %d\n", cur == def);
    CHECK_CUDA(cudaStreamDestroy(s));
}

int main(void)
{
    test_limits();
    test_profiler();
    test_pools();
    return pass();
}
