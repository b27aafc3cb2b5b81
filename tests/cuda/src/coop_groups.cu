// Cooperative groups: warp-tile reductions inside blocks, and a grid-wide
// sync in a kernel launched with cudaLaunchCooperativeKernel at the largest
// grid the occupancy calculator allows.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <vector>
#include "check.cuh"

namespace cg = cooperative_groups;

#define BLOCK 256

// Block sum using 32-wide tiles and 4-wide sub-tiles; one result per block.
__global__ void tile_reduce(const int *in, int n, long long *block_sums, long long *tile4_total)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    cg::thread_block_tile<4> quad = cg::tiled_partition<4>(block);
    __shared__ long long warp_sums[BLOCK / 32];

    int i = blockIdx.x * blockDim.x + threadIdx.x;
    long long v = i < n ? in[i] : 0;

    long long quad_sum = cg::reduce(quad, v, cg::plus<long long>());
    if (quad.thread_rank() == 0)
        atomicAdd((unsigned long long *)tile4_total, (unsigned long long)quad_sum);

    // Manual shuffle-down reduction over the 32-wide tile.
    long long w = v;
    for (int offset = warp.size() / 2; offset > 0; offset /= 2)
        w += warp.shfl_down(w, offset);
    if (warp.thread_rank() == 0)
        warp_sums[warp.meta_group_rank()] = w;
    block.sync();
    if (warp.meta_group_rank() == 0) {
        long long s = warp.thread_rank() < warp.meta_group_size() ? warp_sums[warp.thread_rank()] : 0;
        s = cg::reduce(warp, s, cg::plus<long long>());
        if (warp.thread_rank() == 0)
            block_sums[blockIdx.x] = s;
    }
}

// Phase 1 writes per-block partial sums, grid.sync(), phase 2 lets every
// block read all partials: wrong without a real grid-wide barrier.
__global__ void grid_sum(const int *in, int n, long long *partials, long long *seen_totals)
{
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    __shared__ long long shared_sum;
    if (block.thread_rank() == 0)
        shared_sum = 0;
    block.sync();
    long long local = 0;
    for (long long i = grid.thread_rank(); i < n; i += grid.size())
        local += in[i];
    atomicAdd((unsigned long long *)&shared_sum, (unsigned long long)local);
    block.sync();
    if (block.thread_rank() == 0)
        partials[blockIdx.x] = shared_sum;
    grid.sync();
    if (block.thread_rank() == 0) {
        long long total = 0;
        for (unsigned int b = 0; b < gridDim.x; b++)
            total += partials[b];
        seen_totals[blockIdx.x] = total;
    }
}

int main(void)
{
    int dev = 0;
    CHECK_CUDA(cudaGetDevice(&dev));
    int coop = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    REQUIRE(coop != 0, "device does not support cooperative launch");

    const int n = 1 << 20;
    std::vector<int> host(n);
    unsigned int seed = 7u;
    long long expect = 0;
    for (int i = 0; i < n; i++) {
        host[i] = (int)(lcg_next(&seed) % 2001u) - 1000;
        expect += host[i];
    }
    int *din;
    CHECK_CUDA(cudaMalloc(&din, n * sizeof(int)));
    CHECK_CUDA(cudaMemcpy(din, host.data(), n * sizeof(int), cudaMemcpyHostToDevice));

    int blocks = (n + BLOCK - 1) / BLOCK;
    long long *dblock_sums, *dtile4;
    CHECK_CUDA(cudaMalloc(&dblock_sums, blocks * sizeof(long long)));
    CHECK_CUDA(cudaMalloc(&dtile4, sizeof(long long)));
    CHECK_CUDA(cudaMemset(dtile4, 0, sizeof(long long)));
    tile_reduce<<<blocks, BLOCK>>>(din, n, dblock_sums, dtile4);
    CHECK_LAUNCH();
    std::vector<long long> block_sums(blocks);
    long long tile4 = 0;
    CHECK_CUDA(cudaMemcpy(block_sums.data(), dblock_sums, blocks * sizeof(long long),
                          cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(&tile4, dtile4, sizeof(long long), cudaMemcpyDeviceToHost));
    long long tile_total = 0;
    for (int b = 0; b < blocks; b++) {
        long long ref = 0;
        for (int i = b * BLOCK; i < (b + 1) * BLOCK && i < n; i++)
            ref += host[i];
        REQUIRE(block_sums[b] == ref, "block %d sum %lld expected %lld", b, block_sums[b], ref);
        tile_total += block_sums[b];
    }
    REQUIRE(tile4 == expect, "4-wide tile total %lld expected %lld", tile4, expect);
    std::printf("thread_block_tile reductions total=%lld\n", tile_total);

    int per_sm = 0, sms = 0;
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_sum, BLOCK, 0));
    CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    REQUIRE(per_sm > 0 && sms > 0, "occupancy calculator gave no blocks");
    int grid_blocks = per_sm * sms;
    long long *dpartials, *dseen;
    CHECK_CUDA(cudaMalloc(&dpartials, grid_blocks * sizeof(long long)));
    CHECK_CUDA(cudaMalloc(&dseen, grid_blocks * sizeof(long long)));
    int n_arg = n;
    void *args[] = {&din, &n_arg, &dpartials, &dseen};
    CHECK_CUDA(cudaLaunchCooperativeKernel((void *)grid_sum, dim3(grid_blocks), dim3(BLOCK), args,
                                           0, 0));
    CHECK_LAUNCH();
    std::vector<long long> seen(grid_blocks);
    CHECK_CUDA(cudaMemcpy(seen.data(), dseen, grid_blocks * sizeof(long long),
                          cudaMemcpyDeviceToHost));
    for (int b = 0; b < grid_blocks; b++)
        REQUIRE(seen[b] == expect, "block %d saw total %lld expected %lld", b, seen[b], expect);
    std::printf("grid.sync: every block saw total=%lld\n", expect);

    FREE_DEVICE(din, dblock_sums, dtile4, dpartials, dseen);
    return pass();
}
