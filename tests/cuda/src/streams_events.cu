// Several streams overlapping H2D copy, compute and D2H copy on pinned memory,
// with cross-stream dependencies expressed through events.
#include "check.cuh"

#define NSTREAMS 4
#define CHUNK (1 << 20)

__global__ void scale_add(float *x, int n, float scale, float add)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = x[i] * scale + add;
}

__global__ void add_other(float *x, const float *other, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] += other[i];
}

int main(void)
{
    const int n = NSTREAMS * CHUNK;
    float *host_in, *host_out, *dev;
    CHECK_CUDA(cudaMallocHost(&host_in, (size_t)n * sizeof(float)));
    CHECK_CUDA(cudaMallocHost(&host_out, (size_t)n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dev, (size_t)n * sizeof(float)));
    for (int i = 0; i < n; i++) {
        host_in[i] = (float)(i % 4096);
        host_out[i] = -1.0f;
    }

    cudaStream_t streams[NSTREAMS];
    cudaEvent_t computed[NSTREAMS];
    cudaEvent_t start, stop;
    for (int s = 0; s < NSTREAMS; s++) {
        CHECK_CUDA(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
        CHECK_CUDA(cudaEventCreateWithFlags(&computed[s], cudaEventDisableTiming));
    }
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));

    CHECK_CUDA(cudaEventRecord(start, streams[0]));
    int block = 256, grid = (CHUNK + block - 1) / block;
    for (int s = 0; s < NSTREAMS; s++) {
        size_t off = (size_t)s * CHUNK;
        CHECK_CUDA(cudaMemcpyAsync(dev + off, host_in + off, CHUNK * sizeof(float),
                                   cudaMemcpyHostToDevice, streams[s]));
        scale_add<<<grid, block, 0, streams[s]>>>(dev + off, CHUNK, 2.0f, 1.0f);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaEventRecord(computed[s], streams[s]));
    }
    // Stream s snapshots the neighbour's computed chunk: needs the neighbour's event.
    float *neighbour_copy;
    CHECK_CUDA(cudaMalloc(&neighbour_copy, (size_t)n * sizeof(float)));
    for (int s = 0; s < NSTREAMS; s++) {
        int other = (s + 1) % NSTREAMS;
        size_t off = (size_t)s * CHUNK, other_off = (size_t)other * CHUNK;
        CHECK_CUDA(cudaStreamWaitEvent(streams[s], computed[other], 0));
        CHECK_CUDA(cudaMemcpyAsync(neighbour_copy + off, dev + other_off, CHUNK * sizeof(float),
                                   cudaMemcpyDeviceToDevice, streams[s]));
    }
    // Every stream must finish reading before any chunk is modified again.
    cudaEvent_t copied[NSTREAMS];
    for (int s = 0; s < NSTREAMS; s++) {
        CHECK_CUDA(cudaEventCreateWithFlags(&copied[s], cudaEventDisableTiming));
        CHECK_CUDA(cudaEventRecord(copied[s], streams[s]));
    }
    for (int s = 0; s < NSTREAMS; s++) {
        size_t off = (size_t)s * CHUNK;
        int reader = (s + NSTREAMS - 1) % NSTREAMS;
        CHECK_CUDA(cudaStreamWaitEvent(streams[s], copied[reader], 0));
        add_other<<<grid, block, 0, streams[s]>>>(dev + off, neighbour_copy + off, CHUNK);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaMemcpyAsync(host_out + off, dev + off, CHUNK * sizeof(float),
                                   cudaMemcpyDeviceToHost, streams[s]));
    }
    for (int s = 1; s < NSTREAMS; s++) {
        cudaEvent_t done;
        CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
        CHECK_CUDA(cudaEventRecord(done, streams[s]));
        CHECK_CUDA(cudaStreamWaitEvent(streams[0], done, 0));
        CHECK_CUDA(cudaEventDestroy(done));
    }
    CHECK_CUDA(cudaEventRecord(stop, streams[0]));
    CHECK_CUDA(cudaEventSynchronize(stop));
    REQUIRE(cudaEventQuery(stop) == cudaSuccess, "event query after synchronize not ready");
    float ms = -1.0f;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    REQUIRE(ms >= 0.0f, "elapsed time negative");
    std::printf("elapsed time non-negative: yes\n");
    for (int s = 0; s < NSTREAMS; s++)
        CHECK_CUDA(cudaStreamSynchronize(streams[s]));

    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        int neighbour = (i + CHUNK) % n;
        float expect = (host_in[i] * 2.0f + 1.0f) + (host_in[neighbour] * 2.0f + 1.0f);
        REQUIRE(host_out[i] == expect, "element %d: %f expected %f", i, (double)host_out[i],
                (double)expect);
        sum += host_out[i];
    }
    std::printf("streams=%d elements=%d sum=%.1f\n", NSTREAMS, n, sum);

    for (int s = 0; s < NSTREAMS; s++) {
        CHECK_CUDA(cudaEventDestroy(computed[s]));
        CHECK_CUDA(cudaEventDestroy(copied[s]));
        CHECK_CUDA(cudaStreamDestroy(streams[s]));
    }
    CHECK_CUDA(cudaEventDestroy(start));
    CHECK_CUDA(cudaEventDestroy(stop));
    FREE_DEVICE(neighbour_copy, dev);
    FREE_HOST(host_in, host_out);
    return pass();
}
