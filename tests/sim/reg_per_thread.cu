// Built with --default-stream per-thread: launches, copies and syncs go
// through the _ptsz/_ptds entry points, from several host threads.
#include <thread>
#include <vector>
#include "sim_check.cuh"

__global__ void k_set(int *p, int v)
{
    p[threadIdx.x] = v;
}

static void work(int id, int *result)
{
    const int n = 4096;
    int *d;
    std::vector<int> h(n), back(n);
    for (int i = 0; i < n; i++)
        h[i] = id * 100000 + i;
    if (cudaMalloc(&d, n * sizeof(int)) != cudaSuccess)
        return;
    for (int round = 0; round < 20; round++) {
        k_set<<<1, 32>>>(d, round);
        if (cudaGetLastError() != cudaSuccess)
            return;
        if (cudaMemcpyAsync(d, h.data(), n * sizeof(int), cudaMemcpyHostToDevice, 0) != cudaSuccess)
            return;
        if (cudaMemcpy(back.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess)
            return;
        if (cudaStreamSynchronize(cudaStreamPerThread) != cudaSuccess)
            return;
        if (back != h)
            return;
    }
    if (cudaFree(d) != cudaSuccess)
        return;
    *result = 1;
}

int main(void)
{
    int ok[4] = {0, 0, 0, 0};
    std::vector<std::thread> t;
    for (int i = 0; i < 4; i++)
        t.emplace_back(work, i, &ok[i]);
    for (auto &th : t)
        th.join();
    for (int i = 0; i < 4; i++)
        REQUIRE(ok[i], "thread %d failed", i);
    k_set<<<1, 1, 0, cudaStreamPerThread>>>(nullptr, 0);
    CHECK_LAUNCH();
    k_set<<<1, 1, 0, cudaStreamLegacy>>>(nullptr, 0);
    CHECK_LAUNCH();
    return pass();
}
