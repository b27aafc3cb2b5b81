// Device printf in a fixed order: threads take turns separated by barriers,
// and only block 0 prints.
#include "check.cuh"

__global__ void chatty(int *done, int base)
{
    for (int turn = 0; turn < 4; turn++) {
        if (blockIdx.x == 0 && threadIdx.x == turn)
            printf("device line %d from thread %d value=%d half=%.2f\n", turn, threadIdx.x,
                   base + turn * turn, (double)(base + turn) * 0.5);
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(done, 1);
}

int main(void)
{
    int *done;
    CHECK_CUDA(cudaMalloc(&done, sizeof(int)));
    CHECK_CUDA(cudaMemset(done, 0, sizeof(int)));
    std::printf("host line before launch\n");
    std::fflush(stdout);
    chatty<<<3, 32>>>(done, 40);
    CHECK_LAUNCH();
    std::fflush(stdout);
    std::printf("host line after first sync\n");
    std::fflush(stdout);
    chatty<<<1, 32>>>(done, 7);
    CHECK_LAUNCH();
    std::fflush(stdout);
    int blocks_done = 0;
    CHECK_CUDA(cudaMemcpy(&blocks_done, done, sizeof(int), cudaMemcpyDeviceToHost));
    REQUIRE(blocks_done == 4, "blocks finished=%d expected 4", blocks_done);
    std::printf("blocks finished=%d\n", blocks_done);
    CHECK_CUDA(cudaFree(done));
    return pass();
}
