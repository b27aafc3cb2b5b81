// Built with -default-stream per-thread: the default stream of each host
// thread is distinct, and the runtime entry points are the _ptsz/_ptds ones.
#include <thread>
#include <vector>
#include "check.cuh"

#define NTHREADS 4
#define N (1 << 18)

__global__ void square_plus(int *x, int n, int add)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = (x[i] % 1000) * (x[i] % 1000) + add;
}

static void worker(int id, cudaError_t *result, int *first_bad, long long *sum)
{
    std::vector<int> host(N);
    for (int i = 0; i < N; i++)
        host[i] = i * (id + 1);
    int *dev = nullptr;
    *sum = 0;
    *first_bad = -1;
    cudaError_t err = cudaMalloc(&dev, N * sizeof(int));
    if (err == cudaSuccess)
        err = cudaMemcpyAsync(dev, host.data(), N * sizeof(int), cudaMemcpyHostToDevice,
                              cudaStreamPerThread);
    if (err == cudaSuccess) {
        square_plus<<<(N + 255) / 256, 256>>>(dev, N, id); // default stream = per-thread
        err = cudaGetLastError();
    }
    if (err == cudaSuccess)
        err = cudaMemcpy(host.data(), dev, N * sizeof(int), cudaMemcpyDeviceToHost);
    if (err == cudaSuccess)
        err = cudaStreamSynchronize(0);
    for (int i = 0; i < N && err == cudaSuccess; i++) {
        int v = (i * (id + 1)) % 1000;
        if (host[i] != v * v + id) {
            *first_bad = i;
            break;
        }
        *sum += host[i];
    }
    if (dev != nullptr)
        cudaFree(dev);
    *result = err;
}

int main(void)
{
    CHECK_CUDA(cudaFree(nullptr));
    cudaError_t results[NTHREADS];
    int first_bad[NTHREADS];
    long long sums[NTHREADS];
    std::vector<std::thread> threads;
    for (int t = 0; t < NTHREADS; t++)
        threads.emplace_back(worker, t, &results[t], &first_bad[t], &sums[t]);
    for (auto &th : threads)
        th.join();
    for (int t = 0; t < NTHREADS; t++) {
        REQUIRE(results[t] == cudaSuccess, "thread %d: %s", t, cudaGetErrorName(results[t]));
        REQUIRE(first_bad[t] < 0, "thread %d: wrong value at element %d", t, first_bad[t]);
        std::printf("thread %d per-thread default stream sum=%lld\n", t, sums[t]);
    }
    return pass();
}
