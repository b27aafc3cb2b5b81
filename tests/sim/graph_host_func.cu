// Graphs by capture on the sim: copies and a host function captured, the
// graph destroyed after instantiation, launched 20 times. Each launch
// replays the copies (new bytes each time) and runs the host function once
// (the sim does not hold the stream for it: its count is awaited).
#include <chrono>
#include <thread>

#include "sim_check.cuh"

#define LAUNCHES 20

static volatile int runs;

static void CUDART_CB host_fn(void *)
{
    runs = runs + 1;
}

int main(void)
{
    int *dev, *pinned;
    cudaStream_t s;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    size_t nodes = 0;

    CHECK_CUDA(cudaMalloc(&dev, sizeof(int)));
    CHECK_CUDA(cudaMallocHost(&pinned, 2 * sizeof(int)));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_CUDA(cudaMemcpyAsync(dev, pinned, sizeof(int), cudaMemcpyHostToDevice, s));
    CHECK_CUDA(cudaLaunchHostFunc(s, host_fn, nullptr));
    CHECK_CUDA(cudaMemcpyAsync(pinned + 1, dev, sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamEndCapture(s, &graph));
    CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
    REQUIRE(nodes == 3, "captured %zu nodes, expected 3", nodes);
    REQUIRE(runs == 0, "the host function ran during capture");
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CHECK_CUDA(cudaGraphDestroy(graph));
    for (int l = 1; l <= LAUNCHES; l++) {
        pinned[0] = 1000 + l;
        CHECK_CUDA(cudaGraphLaunch(exec, s));
        CHECK_CUDA(cudaStreamSynchronize(s));
        REQUIRE(pinned[1] == 1000 + l, "launch %d copied %d", l, pinned[1]);
        for (int i = 0; i < 2000 && runs < l; i++)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        REQUIRE(runs == l, "launch %d: the host function ran %d times", l, runs);
    }
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFreeHost(pinned));
    CHECK_CUDA(cudaFree(dev));
    return pass();
}
