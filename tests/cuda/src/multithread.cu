// 8 host threads share one device; each owns a stream and runs
// memcpy -> kernel -> memcpy on its own buffers. Results print in thread order.
#include <thread>
#include <vector>
#include "check.cuh"

#define NTHREADS 8
#define ROUNDS 20

__global__ void affine(int *x, int n, int mul, int add)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = x[i] * mul + add;
}

struct worker_result {
    long long sum;
    char error[160];
};

static void worker(int id, worker_result *res)
{
    res->sum = 0;
    res->error[0] = '\0';
    const int n = 65536 + id * 1000;
    std::vector<int> host(n);
    int *dev = nullptr;
    cudaStream_t stream = nullptr;
    cudaError_t err = cudaStreamCreate(&stream);
    if (err == cudaSuccess)
        err = cudaMalloc(&dev, (size_t)n * sizeof(int));
    for (int r = 0; r < ROUNDS && err == cudaSuccess; r++) {
        for (int i = 0; i < n; i++)
            host[i] = i + r;
        err = cudaMemcpyAsync(dev, host.data(), (size_t)n * sizeof(int), cudaMemcpyHostToDevice,
                              stream);
        if (err != cudaSuccess)
            break;
        affine<<<(n + 255) / 256, 256, 0, stream>>>(dev, n, id + 2, r);
        err = cudaGetLastError();
        if (err != cudaSuccess)
            break;
        err = cudaMemcpyAsync(host.data(), dev, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost,
                              stream);
        if (err == cudaSuccess)
            err = cudaStreamSynchronize(stream);
        for (int i = 0; i < n && err == cudaSuccess; i++) {
            int expect = (i + r) * (id + 2) + r;
            if (host[i] != expect) {
                std::snprintf(res->error, sizeof(res->error),
                              "thread %d round %d element %d: %d expected %d", id, r, i, host[i],
                              expect);
                break;
            }
            res->sum += host[i];
        }
        if (res->error[0] != '\0')
            break;
    }
    if (err != cudaSuccess)
        std::snprintf(res->error, sizeof(res->error), "thread %d: %s", id, cudaGetErrorName(err));
    if (dev != nullptr)
        cudaFree(dev);
    if (stream != nullptr)
        cudaStreamDestroy(stream);
}

int main(void)
{
    CHECK_CUDA(cudaFree(nullptr)); // create the context before the threads race for it
    worker_result results[NTHREADS];
    std::vector<std::thread> threads;
    for (int t = 0; t < NTHREADS; t++)
        threads.emplace_back(worker, t, &results[t]);
    for (auto &th : threads)
        th.join();
    for (int t = 0; t < NTHREADS; t++) {
        REQUIRE(results[t].error[0] == '\0', "%s", results[t].error);
        std::printf("thread %d rounds=%d sum=%lld\n", t, ROUNDS, results[t].sum);
    }
    return pass();
}
