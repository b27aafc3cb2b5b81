// Launch attributes as cuBLASLt, XLA and PyTorch use them: a producer and a
// consumer launched with programmatic dependent launch (the consumer starts
// early and waits in cudaGridDependencySynchronize for the producer's data),
// in a loop and in a captured graph; a kernel with priority, the remote
// memory-sync domain, a cluster scheduling policy and a shared-memory
// carveout; the refusal of an out-of-range carveout. Prints checksums.
#include "check.cuh"
#include "launch_attrs.cuh"

__global__ void produce(unsigned *buf, size_t n, unsigned round)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        buf[i] = (unsigned)i * 2654435761u + round;
    cudaTriggerProgrammaticLaunchCompletion();
}

__global__ void consume(const unsigned *buf, size_t n, unsigned long long *sum)
{
    cudaGridDependencySynchronize();
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(sum, (unsigned long long)(buf[i] & 0xffff));
}

static cudaError_t launch_pdl(cudaStream_t s, const unsigned *buf, size_t n, unsigned long long *sum)
{
    cudaLaunchAttribute a[1];
    a[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    a[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t c = {};
    c.gridDim = dim3((unsigned)((n + 255) / 256));
    c.blockDim = dim3(256);
    c.stream = s;
    c.attrs = a;
    c.numAttrs = 1;
    return cudaLaunchKernelEx(&c, consume, buf, n, sum);
}

int main(void)
{
    const size_t n = 1 << 20;
    unsigned *buf;
    unsigned long long *sum, host;
    cudaStream_t s;
    CHECK_CUDA(cudaMalloc(&buf, n * sizeof(unsigned)));
    CHECK_CUDA(cudaMalloc(&sum, sizeof(*sum)));
    s = nonblocking_stream();

    // producer, then a consumer that may start before the producer ends
    unsigned long long total = 0;
    for (unsigned round = 0; round < 20; round++) {
        CHECK_CUDA(cudaMemsetAsync(sum, 0, sizeof(*sum), s));
        produce<<<(unsigned)(n / 256), 256, 0, s>>>(buf, n, round);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(launch_pdl(s, buf, n, sum));
        CHECK_CUDA(cudaMemcpyAsync(&host, sum, sizeof(host), cudaMemcpyDeviceToHost, s));
        CHECK_CUDA(cudaStreamSynchronize(s));
        total += host;
    }
    std::printf("programmatic dependent launch, 20 rounds: sum %llu\n", total);

    // the same pair captured into a graph and replayed
    cudaGraph_t g;
    cudaGraphExec_t x;
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_CUDA(cudaMemsetAsync(sum, 0, sizeof(*sum), s));
    produce<<<(unsigned)(n / 256), 256, 0, s>>>(buf, n, 7);
    CHECK_CUDA(launch_pdl(s, buf, n, sum));
    CHECK_CUDA(cudaStreamEndCapture(s, &g));
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    total = 0;
    for (int i = 0; i < 5; i++) {
        CHECK_CUDA(cudaGraphLaunch(x, s));
        CHECK_CUDA(cudaMemcpyAsync(&host, sum, sizeof(host), cudaMemcpyDeviceToHost, s));
        CHECK_CUDA(cudaStreamSynchronize(s));
        total += host;
    }
    std::printf("programmatic dependent launch in a graph, 5 replays: sum %llu\n", total);
    CHECK_CUDA(cudaGraphExecDestroy(x));
    CHECK_CUDA(cudaGraphDestroy(g));

    // the other value attributes together
    int lo = 0, hi = 0;
    CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    cudaLaunchAttribute a[4];
    value_attrs(a, hi);
    cudaLaunchConfig_t c = {};
    c.gridDim = dim3((unsigned)(n / 256));
    c.blockDim = dim3(256);
    c.stream = s;
    c.attrs = a;
    c.numAttrs = 4;
    CHECK_CUDA(cudaLaunchKernelEx(&c, produce, buf, n, 3u));
    CHECK_CUDA(cudaMemsetAsync(sum, 0, sizeof(*sum), s));
    consume<<<(unsigned)(n / 256), 256, 0, s>>>(buf, n, sum);
    CHECK_CUDA(cudaMemcpyAsync(&host, sum, sizeof(host), cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    std::printf("priority, remote sync domain, spread policy, carveout 50: sum %llu\n", host);

    // a carveout over 100 percent is refused before anything runs
    a[0].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
    a[0].val.sharedMemCarveout = 150;
    c.numAttrs = 1;
    cudaError_t e = cudaLaunchKernelEx(&c, produce, buf, n, 4u);
    std::printf("carveout of 150 percent: %s\n", cudaGetErrorName(e));
    cudaGetLastError();

    CHECK_CUDA(cudaStreamDestroy(s));
    FREE_DEVICE(buf, sum);
    return pass();
}
