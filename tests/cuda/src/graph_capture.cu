// Builds a graph by stream capture, launches it 10 times and checks the
// accumulated effect of every launch; then clones it (as CUDA's
// simpleCudaGraphs does), destroys the original and launches the clone's
// instantiation 10 more times.
#include "check.cuh"
#include "int_kernels.cuh"

#define N 4096
#define LAUNCHES 10

int main(void)
{
    int *dev, *host;
    CHECK_CUDA(cudaMalloc(&dev, N * sizeof(int)));
    CHECK_CUDA(cudaMallocHost(&host, N * sizeof(int)));
    CHECK_CUDA(cudaMemset(dev, 0, N * sizeof(int)));
    cudaStream_t stream = nonblocking_stream();

    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    add_const<<<(N + 255) / 256, 256, 0, stream>>>(dev, N, 1);
    add_index<<<(N + 255) / 256, 256, 0, stream>>>(dev, N);
    CHECK_CUDA(cudaMemcpyAsync(host, dev, N * sizeof(int), cudaMemcpyDeviceToHost, stream));
    cudaGraph_t graph;
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK_CUDA(cudaGetLastError());

    size_t nodes = 0;
    CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
    std::printf("captured nodes=%zu\n", nodes);
    REQUIRE(nodes == 3, "expected 3 nodes, got %zu", nodes);

    cudaGraphExec_t exec;
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int l = 1; l <= LAUNCHES; l++) {
        CHECK_CUDA(cudaGraphLaunch(exec, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        for (int i = 0; i < N; i++)
            REQUIRE(host[i] == l * (1 + i), "launch %d element %d: %d expected %d", l, i, host[i],
                    l * (1 + i));
    }
    long long sum = 0;
    for (int i = 0; i < N; i++)
        sum += host[i];
    std::printf("launches=%d sum=%lld\n", LAUNCHES, sum);
    CHECK_CUDA(cudaGraphExecDestroy(exec));

    cudaGraph_t clone;
    cudaGraphExec_t clone_exec;
    CHECK_CUDA(cudaGraphClone(&clone, graph));
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK_CUDA(cudaGraphGetNodes(clone, nullptr, &nodes));
    std::printf("clone nodes=%zu\n", nodes);
    CHECK_CUDA(cudaGraphInstantiate(&clone_exec, clone, 0));
    CHECK_CUDA(cudaGraphDestroy(clone));
    for (int l = LAUNCHES + 1; l <= 2 * LAUNCHES; l++) {
        CHECK_CUDA(cudaGraphLaunch(clone_exec, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        for (int i = 0; i < N; i++)
            REQUIRE(host[i] == l * (1 + i), "clone launch %d element %d: %d expected %d", l, i, host[i],
                    l * (1 + i));
    }
    sum = 0;
    for (int i = 0; i < N; i++)
        sum += host[i];
    std::printf("clone launches=%d sum=%lld\n", LAUNCHES, sum);
    CHECK_CUDA(cudaGraphExecDestroy(clone_exec));
    CHECK_CUDA(cudaStreamDestroy(stream));
    CHECK_CUDA(cudaFreeHost(host));
    CHECK_CUDA(cudaFree(dev));
    return pass();
}
