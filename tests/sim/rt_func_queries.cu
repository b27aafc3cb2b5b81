// Function attributes and occupancy asked many times through mearas's own
// runtime, as CUB does before its launches: the answers stay the same, and
// the runtime asks the back end once per function (attributes) and once per
// block size and dynamic shared memory until an attribute or the cache
// preference is set (occupancy). run-tests.sh's rt_func_queries scenario
// counts the back end's records (its "synchronizing records ... by op" line).
#include "sim_check.cuh"

extern "C" __global__ void mearas_sim_add_u32(unsigned *p, unsigned n, unsigned v)
{
    (void)p, (void)n, (void)v;
}

#define ASKS 100

// occupancy at 256 threads asked ASKS times: the back end sees one ask at most
static void ask_occupancy(void)
{
    int v;

    for (int i = 0; i < ASKS; i++)
        CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, mearas_sim_add_u32, 256, 0));
}

int main(void)
{
    cudaFuncAttributes a0, a;
    int blocks0, blocks_big0, v;

    CHECK_CUDA(cudaFuncGetAttributes(&a0, mearas_sim_add_u32));
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks0, mearas_sim_add_u32, 256, 0));
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_big0, mearas_sim_add_u32, 1024, 0));
    for (int i = 0; i < ASKS; i++) {
        CHECK_CUDA(cudaFuncGetAttributes(&a, mearas_sim_add_u32));
        REQUIRE(a.numRegs == a0.numRegs && a.maxThreadsPerBlock == a0.maxThreadsPerBlock &&
                    a.sharedSizeBytes == a0.sharedSizeBytes,
                "attributes changed: %d/%d registers, %d/%d threads", a0.numRegs, a.numRegs,
                a0.maxThreadsPerBlock, a.maxThreadsPerBlock);
        CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, mearas_sim_add_u32, 256, 0));
        REQUIRE(v == blocks0, "occupancy at 256 threads: %d, then %d", blocks0, v);
        CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, mearas_sim_add_u32, 1024, 0));
        REQUIRE(v == blocks_big0, "occupancy at 1024 threads: %d, then %d", blocks_big0, v);
    }
    // an attribute set, then a cache preference: occupancy is asked again, once each
    CHECK_CUDA(cudaFuncSetAttribute(mearas_sim_add_u32, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024));
    ask_occupancy();
    CHECK_CUDA(cudaFuncSetCacheConfig(mearas_sim_add_u32, cudaFuncCachePreferShared));
    ask_occupancy();
    REQUIRE(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, mearas_sim_add_u32, 0, 0) == cudaErrorInvalidValue,
            "a block of 0 threads was answered");
    cudaGetLastError();
    std::printf("PASS\n");
    return 0;
}
