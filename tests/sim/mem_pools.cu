// Memory pools on vGPUs: each vGPU has a default pool that is also its
// current one; stream-ordered allocations come from the current pool and
// count in its used memory until freed; a created pool can become current;
// attributes read back; the default pool cannot be destroyed; pools shared
// with other processes and peer access are refused with clear errors.
#include "sim_check.cuh"

static uint64_t used_of(cudaMemPool_t pool)
{
    uint64_t v = 0;
    CHECK_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &v));
    return v;
}

int main(void)
{
    cudaMemPool_t def = NULL, cur = NULL, mine = NULL, def1 = NULL;
    cudaStream_t s;
    void *a, *b, *c;
    uint64_t v;
    int flag;

    CHECK_CUDA(cudaStreamCreate(&s));
    CHECK_CUDA(cudaDeviceGetDefaultMemPool(&def, 0));
    CHECK_CUDA(cudaDeviceGetMemPool(&cur, 0));
    REQUIRE(def && cur == def, "the current pool is not the default one");
    CHECK_CUDA(cudaDeviceGetDefaultMemPool(&def1, 1));
    REQUIRE(def1 && def1 != def, "vGPU 1 shares vGPU 0's default pool");

    // stream-ordered allocations count in the current pool
    REQUIRE(used_of(def) == 0, "fresh pool uses %llu bytes", (unsigned long long)used_of(def));
    CHECK_CUDA(cudaMallocAsync(&a, 1 << 20, s));
    CHECK_CUDA(cudaMallocAsync(&b, 3 << 20, s));
    REQUIRE(used_of(def) == 4u << 20, "used %llu after 4 MiB", (unsigned long long)used_of(def));
    // the memory works like any other
    CHECK_CUDA(cudaMemsetAsync(a, 7, 1 << 20, s));
    unsigned char host[16];
    CHECK_CUDA(cudaMemcpyAsync(host, a, sizeof(host), cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    REQUIRE(host[0] == 7 && host[15] == 7, "pool memory reads %d", host[0]);
    CHECK_CUDA(cudaFreeAsync(a, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    REQUIRE(used_of(def) == 3u << 20, "used %llu after freeing 1 MiB", (unsigned long long)used_of(def));
    CHECK_CUDA(cudaMemPoolGetAttribute(def, cudaMemPoolAttrUsedMemHigh, &v));
    REQUIRE(v == 4u << 20, "high water %llu", (unsigned long long)v);
    v = 0;
    CHECK_CUDA(cudaMemPoolSetAttribute(def, cudaMemPoolAttrUsedMemHigh, &v));
    CHECK_CUDA(cudaMemPoolGetAttribute(def, cudaMemPoolAttrUsedMemHigh, &v));
    REQUIRE(v == 3u << 20, "high water after reset %llu", (unsigned long long)v);
    v = 5;
    EXPECT_ERR(cudaErrorInvalidValue, cudaMemPoolSetAttribute(def, cudaMemPoolAttrUsedMemHigh, &v));

    // cudaMalloc memory is not a pool's
    CHECK_CUDA(cudaMalloc(&c, 1 << 20));
    REQUIRE(used_of(def) == 3u << 20, "cudaMalloc counted in the pool");
    CHECK_CUDA(cudaFree(c));

    // attributes
    v = ~0ull;
    CHECK_CUDA(cudaMemPoolSetAttribute(def, cudaMemPoolAttrReleaseThreshold, &v));
    v = 0;
    CHECK_CUDA(cudaMemPoolGetAttribute(def, cudaMemPoolAttrReleaseThreshold, &v));
    REQUIRE(v == ~0ull, "release threshold %llx", (unsigned long long)v);
    CHECK_CUDA(cudaMemPoolGetAttribute(def, cudaMemPoolReuseAllowOpportunistic, &flag));
    REQUIRE(flag == 1, "opportunistic reuse %d", flag);
    flag = 0;
    CHECK_CUDA(cudaMemPoolSetAttribute(def, cudaMemPoolReuseAllowOpportunistic, &flag));
    CHECK_CUDA(cudaMemPoolGetAttribute(def, cudaMemPoolReuseAllowOpportunistic, &flag));
    REQUIRE(flag == 0, "opportunistic reuse after set %d", flag);
    EXPECT_ERR(cudaErrorInvalidValue, cudaMemPoolSetAttribute(def, (cudaMemPoolAttr)77, &v));
    CHECK_CUDA(cudaMemPoolTrimTo(def, 0));

    // a pool of our own, made current
    mine = new_device_pool(0);
    CHECK_CUDA(cudaDeviceSetMemPool(0, mine));
    CHECK_CUDA(cudaDeviceGetMemPool(&cur, 0));
    REQUIRE(cur == mine, "cudaDeviceSetMemPool did not take");
    CHECK_CUDA(cudaMallocAsync(&c, 2 << 20, s));
    REQUIRE(used_of(mine) == 2u << 20 && used_of(def) == 3u << 20, "allocation went to the wrong pool");
    CHECK_CUDA(cudaMallocFromPoolAsync(&a, 1 << 20, def, s));
    REQUIRE(used_of(def) == 4u << 20, "cudaMallocFromPoolAsync did not use the pool named");
    EXPECT_ERR(cudaErrorInvalidDevice, cudaDeviceSetMemPool(1, mine));

    // access: the pool's own vGPU only
    cudaMemLocation loc = {};
    cudaMemAccessFlags acc;
    loc.type = cudaMemLocationTypeDevice;
    loc.id = 0;
    CHECK_CUDA(cudaMemPoolGetAccess(&acc, mine, &loc));
    REQUIRE(acc == cudaMemAccessFlagsProtReadWrite, "own access %d", (int)acc);
    loc.id = 1;
    CHECK_CUDA(cudaMemPoolGetAccess(&acc, mine, &loc));
    REQUIRE(acc == cudaMemAccessFlagsProtNone, "peer access %d", (int)acc);
    cudaMemAccessDesc d = {};
    d.location = loc;
    d.flags = cudaMemAccessFlagsProtReadWrite;
    EXPECT_ERR(cudaErrorNotSupported, cudaMemPoolSetAccess(mine, &d, 1));

    // destroying: the default pool stays; ours goes, its allocation still frees
    EXPECT_ERR(cudaErrorInvalidValue, cudaMemPoolDestroy(def));
    CHECK_CUDA(cudaMemPoolDestroy(mine));
    CHECK_CUDA(cudaDeviceGetMemPool(&cur, 0));
    REQUIRE(cur == def, "the current pool did not fall back to the default");
    CHECK_CUDA(cudaFreeAsync(c, s));
    CHECK_CUDA(cudaFreeAsync(a, s));
    CHECK_CUDA(cudaFreeAsync(b, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    REQUIRE(used_of(def) == 0, "used %llu after freeing all", (unsigned long long)used_of(def));

    // pools for other processes are not supported
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
    EXPECT_ERR(cudaErrorNotSupported, cudaMemPoolCreate(&mine, &props));
    CHECK_CUDA(cudaStreamDestroy(s));
    pass();
}
