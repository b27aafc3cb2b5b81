// cudaOccupancyAvailableDynamicSMemPerBlock is the back end's answer: on
// the sim's model multiprocessor (228 KiB shared out, 48 KiB at most a block,
// 2048 threads, 32 blocks; the shape the H200's driver answers) the share of
// each of numBlocks blocks; fewer blocks never get less; blocks that cannot be
// resident together, bad counts and what is no kernel are refused (the last
// cudaErrorInvalidResourceHandle, as for cudaFuncGetAttributes).
#include "sim_check.cuh"

__global__ void k_touch(int *p) { p[threadIdx.x] = 1; }

static size_t avail(int blocks, int threads)
{
    size_t v = ~(size_t)0;
    CHECK_CUDA(cudaOccupancyAvailableDynamicSMemPerBlock(&v, (const void *)k_touch, blocks, threads));
    return v;
}

int main(void)
{
    REQUIRE(avail(1, 128) == 49152, "1 block: %zu", avail(1, 128));
    REQUIRE(avail(8, 128) == 233472 / 8, "8 blocks: %zu", avail(8, 128));
    REQUIRE(avail(32, 64) == 233472 / 32, "32 blocks: %zu", avail(32, 64));
    size_t prev = ~(size_t)0;
    for (int b = 1; b <= 32; b++) {
        size_t v = avail(b, 64);
        REQUIRE(v <= prev, "%d blocks get %zu, %d got %zu", b, v, b - 1, prev);
        prev = v;
    }
    size_t v;
    const void *k = (const void *)k_touch;
    EXPECT_ERR(cudaErrorInvalidValue, cudaOccupancyAvailableDynamicSMemPerBlock(&v, k, 33, 32));
    EXPECT_ERR(cudaErrorInvalidValue, cudaOccupancyAvailableDynamicSMemPerBlock(&v, k, 3, 1024));
    EXPECT_ERR(cudaErrorInvalidValue, cudaOccupancyAvailableDynamicSMemPerBlock(&v, k, 0, 128));
    EXPECT_ERR(cudaErrorInvalidValue, cudaOccupancyAvailableDynamicSMemPerBlock(&v, k, 1, 0));
    EXPECT_ERR(cudaErrorInvalidValue, cudaOccupancyAvailableDynamicSMemPerBlock(nullptr, k, 1, 32));
    EXPECT_ERR(cudaErrorInvalidResourceHandle,
               cudaOccupancyAvailableDynamicSMemPerBlock(&v, (const void *)&prev, 1, 32));
    (void)cudaGetLastError();
    return pass();
}
