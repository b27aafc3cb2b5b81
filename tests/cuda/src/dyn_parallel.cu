// Dynamic parallelism (CUDA's cdp* samples): a kernel launches child
// kernels from the device, recursively to depth 3, into a tail-launch
// stream, and a parent sums what its children wrote after they complete
// (a second kernel launched from the device once the first ones are
// done: fire-and-forget children, then a tail launch). Built with
// -rdc=true and the device runtime (cudadevrt).
#include "check.cuh"

#define N 1024
#define DEPTH 3

// each level fills its quarter of what it was given, then hands the rest on
__global__ void fill_level(int *x, int n, int depth)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int mine = n / 4;
    if (i < mine)
        x[i] = depth * 1000 + i;
    if (i == 0 && depth < DEPTH)
        fill_level<<<(n - mine + 127) / 128, 128, 0, cudaStreamFireAndForget>>>(x + mine, n - mine, depth + 1);
}

__global__ void sum_after(const int *x, int n, long long *out)
{
    long long s = 0;
    for (int i = 0; i < n; i++)
        s += x[i];
    *out = s;
}

__global__ void parent(int *x, int n, long long *out)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        fill_level<<<(n + 127) / 128, 128, 0, cudaStreamFireAndForget>>>(x, n, 1);
        // a tail launch runs once the parent grid and its fire-and-forget work are done
        sum_after<<<1, 1, 0, cudaStreamTailLaunch>>>(x, n, out);
    }
}

int main(void)
{
    int *x;
    long long *sum, host_sum = 0;
    CHECK_CUDA(cudaMalloc(&x, N * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&sum, sizeof(long long)));
    CHECK_CUDA(cudaMemset(x, 0, N * sizeof(int)));
    CHECK_CUDA(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, 4096));
    parent<<<1, 32>>>(x, N, sum);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(&host_sum, sum, sizeof(host_sum), cudaMemcpyDeviceToHost));
    int host[N];
    CHECK_CUDA(cudaMemcpy(host, x, sizeof(host), cudaMemcpyDeviceToHost));
    // expected: levels 1..DEPTH-1 fill a quarter of what they got, the last level a quarter too
    long long want = 0;
    int off = 0, n = N;
    for (int d = 1; d <= DEPTH; d++) {
        int mine = n / 4;
        for (int i = 0; i < mine; i++) {
            REQUIRE(host[off + i] == d * 1000 + i, "depth %d element %d: %d", d, i, host[off + i]);
            want += d * 1000 + i;
        }
        off += mine;
        n -= mine;
    }
    REQUIRE(host_sum == want, "device sum %lld, expected %lld", host_sum, want);
    std::printf("depth=%d filled=%d sum=%lld\n", DEPTH, off, host_sum);
    CHECK_CUDA(cudaFree(x));
    CHECK_CUDA(cudaFree(sum));
    return pass();
}
