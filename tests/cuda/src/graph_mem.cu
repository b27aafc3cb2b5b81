// Graph memory: a stream-ordered allocation captured into a graph (alloc
// and free nodes around two kernels and a copy out) launched 5 times after
// the graph is destroyed, then a graph built with an alloc node, a memset,
// a kernel, a copy and a free node. Each launch's result is checked; the
// node counts and sums are printed.
#include <cstring>

#include "check.cuh"
#include "int_kernels.cuh"

#define N 4096
#define LAUNCHES 5

int main(void)
{
    int *host;
    cudaStream_t stream = nonblocking_stream();
    CHECK_CUDA(cudaMallocHost(&host, N * sizeof(int)));

    /* captured: the memory exists for each launch of the graph */
    cudaGraph_t graph;
    int *d = nullptr;
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    CHECK_CUDA(cudaMallocAsync(&d, N * sizeof(int), stream));
    CHECK_CUDA(cudaMemsetAsync(d, 0, N * sizeof(int), stream));
    add_const<<<(N + 255) / 256, 256, 0, stream>>>(d, N, 3);
    add_index<<<(N + 255) / 256, 256, 0, stream>>>(d, N);
    CHECK_CUDA(cudaMemcpyAsync(host, d, N * sizeof(int), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaFreeAsync(d, stream));
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK_CUDA(cudaGetLastError());
    size_t nodes = 0;
    CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
    std::printf("captured nodes=%zu\n", nodes);
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CHECK_CUDA(cudaGraphDestroy(graph));
    for (int l = 0; l < LAUNCHES; l++) {
        std::memset(host, 0xff, N * sizeof(int));
        CHECK_CUDA(cudaGraphLaunch(exec, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        for (int i = 0; i < N; i++)
            REQUIRE(host[i] == 3 + i, "captured launch %d element %d: %d expected %d", l, i, host[i], 3 + i);
    }
    long long sum = 0;
    for (int i = 0; i < N; i++)
        sum += host[i];
    std::printf("captured launches=%d sum=%lld\n", LAUNCHES, sum);
    CHECK_CUDA(cudaGraphExecDestroy(exec));

    /* built: alloc node -> memset -> kernel -> copy -> free node */
    int dev = 0;
    CHECK_CUDA(cudaGetDevice(&dev));
    CHECK_CUDA(cudaGraphCreate(&graph, 0));
    cudaMemAllocNodeParams ap = {};
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.poolProps.location.id = dev;
    ap.bytesize = N * sizeof(int);
    cudaGraphNode_t alloc, set, kern, copy, release;
    CHECK_CUDA(cudaGraphAddMemAllocNode(&alloc, graph, nullptr, 0, &ap));
    REQUIRE(ap.dptr != nullptr, "the alloc node gave no address");
    int *m = (int *)ap.dptr;
    cudaMemsetParams sp = {};
    sp.dst = m;
    sp.value = 7;
    sp.elementSize = 4;
    sp.width = N;
    sp.height = 1;
    CHECK_CUDA(cudaGraphAddMemsetNode(&set, graph, &alloc, 1, &sp));
    int n = N, c = 5;
    void *args[] = { &m, &n, &c };
    cudaKernelNodeParams kp = {};
    kp.func = (void *)add_const;
    kp.gridDim = dim3((N + 255) / 256);
    kp.blockDim = dim3(256);
    kp.kernelParams = args;
    CHECK_CUDA(cudaGraphAddKernelNode(&kern, graph, &set, 1, &kp));
    CHECK_CUDA(cudaGraphAddMemcpyNode1D(&copy, graph, &kern, 1, host, m, N * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaGraphAddMemFreeNode(&release, graph, &copy, 1, m));
    cudaMemAllocNodeParams back = {};
    CHECK_CUDA(cudaGraphMemAllocNodeGetParams(alloc, &back));
    void *freed = nullptr;
    CHECK_CUDA(cudaGraphMemFreeNodeGetParams(release, &freed));
    REQUIRE(back.dptr == m && freed == m, "alloc node %p, free node %p, expected %p", back.dptr, freed, (void *)m);
    std::printf("alloc node bytes=%zu device=%d\n", back.bytesize, back.poolProps.location.id);
    CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
    std::printf("built nodes=%zu\n", nodes);
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int l = 0; l < LAUNCHES; l++) {
        std::memset(host, 0, N * sizeof(int));
        CHECK_CUDA(cudaGraphLaunch(exec, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        for (int i = 0; i < N; i++)
            REQUIRE(host[i] == 12, "built launch %d element %d: %d expected 12", l, i, host[i]);
    }
    std::printf("built launches=%d ok\n", LAUNCHES);
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK_CUDA(cudaStreamDestroy(stream));
    CHECK_CUDA(cudaFreeHost(host));
    return pass();
}
