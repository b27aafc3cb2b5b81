// Enabling and disabling nodes of an executable graph on the sim (built
// twice: mearas's shared runtime, and NVIDIA's static runtime over mearas's
// libcuda.so.1): a graph memset -> copy to pinned memory -> kernel (+5) ->
// kernel (+1), the sim's mearas_sim_add_u32 adding to mapped host memory. A
// disabled kernel or memset does nothing at the next launches while what
// depends on it still runs in order; enabling it again restores it; a
// parameter update of a disabled node keeps it disabled; another executable
// graph of the same graph is not touched; host and empty nodes, a missing
// executable graph or out pointer, and a node of another graph are
// cudaErrorInvalidValue.
#include "sim_graph.cuh"

#define N 64 /* ints */

static unsigned *pinned;
static unsigned char *dev;

static void run(cudaGraphExec_t x, cudaStream_t s, unsigned want, const char *what)
{
    CHECK_CUDA(cudaMemset(pinned, 0, N * sizeof(int)));
    CHECK_CUDA(cudaGraphLaunch(x, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    for (int i = 0; i < N; i++)
        REQUIRE(pinned[i] == want, "%s: word %d is %#x, expected %#x", what, i, pinned[i], want);
}

static unsigned enabled(cudaGraphExec_t x, cudaGraphNode_t n)
{
    unsigned on = 7;

    CHECK_CUDA(cudaGraphNodeGetEnabled(x, n, &on));
    return on;
}

int main(void)
{
    cudaStream_t s;
    cudaGraph_t g, other;
    cudaGraphExec_t x, x2;
    cudaGraphNode_t set, copy, k5, k1, host, empty, foreign;
    cudaMemsetParams m = {};
    int step = 1;
    cudaHostNodeParams hp = {host_fn, &step};
    unsigned n = N, five = 5, one = 1, seven = 7;
    unsigned *p;
    void *args5[] = {&p, &n, &five};
    void *args1[] = {&p, &n, &one};
    void *args7[] = {&p, &n, &seven};
    cudaKernelNodeParams k = {};

    CHECK_CUDA(cudaMalloc(&dev, N * sizeof(int)));
    CHECK_CUDA(cudaMallocHost(&pinned, N * sizeof(int)));
    p = pinned;
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_CUDA(cudaGraphCreate(&g, 0));
    m.dst = dev;
    m.value = 3;
    m.elementSize = 1;
    m.width = N * sizeof(int);
    m.height = 1;
    CHECK_CUDA(cudaGraphAddMemsetNode(&set, g, nullptr, 0, &m));
    CHECK_CUDA(cudaGraphAddMemcpyNode1D(&copy, g, &set, 1, pinned, dev, N * sizeof(int), cudaMemcpyDeviceToHost));
    k.func = (void *)mearas_sim_add_u32;
    k.gridDim = dim3(1);
    k.blockDim = dim3(1);
    k.kernelParams = args5;
    CHECK_CUDA(cudaGraphAddKernelNode(&k5, g, &copy, 1, &k));
    k.kernelParams = args1;
    CHECK_CUDA(cudaGraphAddKernelNode(&k1, g, &k5, 1, &k));
    CHECK_CUDA(cudaGraphAddHostNode(&host, g, &k1, 1, &hp));
    CHECK_CUDA(cudaGraphAddEmptyNode(&empty, g, &k1, 1));
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    CHECK_CUDA(cudaGraphInstantiate(&x2, g, 0));
    run(x, s, bytes4(3) + 6, "all enabled");
    REQUIRE(enabled(x, k5) == 1 && enabled(x, set) == 1 && enabled(x, copy) == 1, "a node starts disabled");

    // the +5 kernel off: the copy and the +1 kernel still run, in order
    CHECK_CUDA(cudaGraphNodeSetEnabled(x, k5, 0));
    REQUIRE(enabled(x, k5) == 0, "the kernel node still reads enabled");
    run(x, s, bytes4(3) + 1, "kernel disabled");
    run(x2, s, bytes4(3) + 6, "the other executable graph");
    // the memset off too: the copy reads what the device holds
    CHECK_CUDA(cudaMemset(dev, 9, N * sizeof(int)));
    CHECK_CUDA(cudaGraphNodeSetEnabled(x, set, 0));
    run(x, s, bytes4(9) + 1, "memset and kernel disabled");
    CHECK_CUDA(cudaGraphNodeSetEnabled(x, set, 1));
    // an update of the disabled kernel keeps it disabled
    k.kernelParams = args7;
    CHECK_CUDA(cudaGraphExecKernelNodeSetParams(x, k5, &k));
    run(x, s, bytes4(3) + 1, "updated while disabled");
    CHECK_CUDA(cudaGraphNodeSetEnabled(x, k5, 1));
    run(x, s, bytes4(3) + 8, "enabled again, with the update");
    CHECK_CUDA(cudaGraphNodeSetEnabled(x, k5, 1)); /* already: nothing changes */
    run(x, s, bytes4(3) + 8, "enabled twice");

    // errors
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphNodeSetEnabled(x, host, 0));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphNodeSetEnabled(x, empty, 0));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphNodeSetEnabled(nullptr, k5, 0));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphNodeGetEnabled(x, k5, nullptr));
    CHECK_CUDA(cudaGraphCreate(&other, 0));
    CHECK_CUDA(cudaGraphAddMemsetNode(&foreign, other, nullptr, 0, &m));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphNodeSetEnabled(x, foreign, 0));
    CHECK_CUDA(cudaGraphDestroy(other));
    cudaGetLastError();
    for (cudaGraphExec_t e : {x, x2})
        CHECK_CUDA(cudaGraphExecDestroy(e));
    CHECK_CUDA(cudaGraphDestroy(g));
    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFreeHost(pinned));
    FREE_DEVICE(dev);
    return pass();
}
