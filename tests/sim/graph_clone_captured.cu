// A graph made by stream capture, cloned (as CUDA's simpleCudaGraphs does):
// the clone has the original's nodes, stands alone once the original is
// destroyed, and each instantiation of either replays the copies, the memset
// and the captured host function at every launch.
#include <chrono>
#include <thread>

#include "sim_check.cuh"

#define LAUNCHES 6

static volatile int runs;

static void CUDART_CB host_fn(void *)
{
    runs = runs + 1;
}

static void wait_runs(int want)
{
    for (int i = 0; i < 2000 && runs < want; i++)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(runs == want, "the host function ran %d times, expected %d", runs, want);
}

int main(void)
{
    int *dev, *pinned;
    cudaStream_t s;
    cudaGraph_t graph, clone, clone2;
    cudaGraphExec_t exec_orig, exec_clone;
    size_t nodes = 0, clone_nodes = 0;

    CHECK_CUDA(cudaMalloc(&dev, 2 * sizeof(int)));
    CHECK_CUDA(cudaMallocHost(&pinned, 3 * sizeof(int)));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_CUDA(cudaMemcpyAsync(dev, pinned, sizeof(int), cudaMemcpyHostToDevice, s));
    CHECK_CUDA(cudaMemsetAsync(dev + 1, 0x5a, sizeof(int), s));
    CHECK_CUDA(cudaLaunchHostFunc(s, host_fn, nullptr));
    CHECK_CUDA(cudaMemcpyAsync(pinned + 1, dev, 2 * sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamEndCapture(s, &graph));

    CHECK_CUDA(cudaGraphClone(&clone, graph));
    REQUIRE(clone != graph, "the clone is the original");
    CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
    CHECK_CUDA(cudaGraphGetNodes(clone, nullptr, &clone_nodes));
    REQUIRE(nodes == 4 && clone_nodes == nodes, "original %zu nodes, clone %zu (expected 4)", nodes, clone_nodes);
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphClone(nullptr, graph));
    cudaGetLastError();

    /* the original instantiated, then gone; the clone stands alone */
    CHECK_CUDA(cudaGraphInstantiate(&exec_orig, graph, 0));
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK_CUDA(cudaGraphClone(&clone2, clone)); /* a clone of a clone */
    CHECK_CUDA(cudaGraphInstantiate(&exec_clone, clone, 0));
    CHECK_CUDA(cudaGraphDestroy(clone));
    REQUIRE(runs == 0, "the host function ran before any launch");

    for (int l = 1; l <= LAUNCHES; l++) {
        cudaGraphExec_t x = l % 2 ? exec_clone : exec_orig;

        pinned[0] = 1000 + l;
        pinned[1] = pinned[2] = 0;
        CHECK_CUDA(cudaGraphLaunch(x, s));
        CHECK_CUDA(cudaStreamSynchronize(s));
        REQUIRE(pinned[1] == 1000 + l && pinned[2] == 0x5a5a5a5a, "launch %d (%s): copied %d and %#x", l,
                l % 2 ? "clone" : "original", pinned[1], (unsigned)pinned[2]);
        wait_runs(l);
    }
    CHECK_CUDA(cudaGraphExecDestroy(exec_orig));
    CHECK_CUDA(cudaGraphExecDestroy(exec_clone));

    /* the clone of the clone, instantiated after both are gone */
    CHECK_CUDA(cudaGraphInstantiate(&exec_clone, clone2, 0));
    CHECK_CUDA(cudaGraphDestroy(clone2));
    pinned[0] = 77;
    CHECK_CUDA(cudaGraphLaunch(exec_clone, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    REQUIRE(pinned[1] == 77, "clone of the clone copied %d", pinned[1]);
    wait_runs(LAUNCHES + 1);
    CHECK_CUDA(cudaGraphExecDestroy(exec_clone));

    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFreeHost(pinned));
    CHECK_CUDA(cudaFree(dev));
    return pass();
}
