// The generic graph node calls on the sim (built twice: mearas's shared
// runtime, and NVIDIA's static runtime over mearas's libcuda.so.1, whose
// cuGraphAddNode it calls): cudaGraphAddNode builds a graph of every kind
// mearas serves (memset, memcpy, kernel, empty, host, event record, child
// graph), which runs as the node-by-node calls' would, and a graph of memory
// alloc and free nodes, which has one executable graph at a time;
// cudaGraphNodeSetParams changes a node for later instantiations,
// cudaGraphExecNodeSetParams one executable graph's copy; a programmatic
// edge is taken (kept as a full dependency); and the errors: no parameters,
// reserved bytes set, parameters of another kind than the node's, a child
// graph the node would take over.
#include <chrono>
#include <thread>

#include "sim_graph.cuh"
#include "../cuda/src/graph_params.cuh"

#define N 64 /* ints */

static node_params kernel_node(void **args)
{
    node_params q(cudaGraphNodeTypeKernel);
    q->kernel.func = (void *)mearas_sim_add_u32;
    q->kernel.gridDim = dim3(1);
    q->kernel.blockDim = dim3(1);
    q->kernel.kernelParams = args;
    return q;
}

struct built {
    cudaGraph_t g;
    cudaGraphNode_t set, copy, kern, kern2, host;
};

static unsigned *pinned;
static unsigned char *dev1, *dev2;
static int host_step = 1;

// set: dev1 := `value` bytes; copy: pinned := dev1; kern: pinned += add;
// kern2 (programmatic edge): pinned += 1; empty; host; record `rec`; a child
// graph (dev2 := 9s)
static built build(unsigned value, unsigned add, cudaEvent_t rec)
{
    built b = {};
    unsigned *p = pinned;
    unsigned n = N, one = 1;
    void *args[] = {&p, &n, &add};
    void *args2[] = {&p, &n, &one};
    cudaGraphNode_t empty, record, child;
    cudaGraphEdgeData programmatic = {};
    cudaGraph_t cg;
    cudaGraphNode_t cn;

    CHECK_CUDA(cudaGraphCreate(&b.g, 0));
    node_params set = memset_node(dev1, value, 1, N * sizeof(int));
    CHECK_CUDA(cudaGraphAddNode(&b.set, b.g, nullptr, nullptr, 0, set.get()));
    node_params copy(cudaGraphNodeTypeMemcpy);
    copy->memcpy.copyParams.srcPtr = make_cudaPitchedPtr(dev1, N * sizeof(int), N * sizeof(int), 1);
    copy->memcpy.copyParams.dstPtr = make_cudaPitchedPtr(pinned, N * sizeof(int), N * sizeof(int), 1);
    copy->memcpy.copyParams.extent = make_cudaExtent(N * sizeof(int), 1, 1);
    copy->memcpy.copyParams.kind = cudaMemcpyDeviceToHost;
    CHECK_CUDA(cudaGraphAddNode(&b.copy, b.g, &b.set, nullptr, 1, copy.get()));
    node_params kern = kernel_node(args);
    CHECK_CUDA(cudaGraphAddNode(&b.kern, b.g, &b.copy, nullptr, 1, kern.get()));
    add = 12345; /* the node keeps its own copy of the parameters */
    node_params kern2 = kernel_node(args2);
    programmatic.type = cudaGraphDependencyTypeProgrammatic;
    programmatic.from_port = cudaGraphKernelNodePortProgrammatic;
    CHECK_CUDA(cudaGraphAddNode(&b.kern2, b.g, &b.kern, &programmatic, 1, kern2.get()));
    node_params none(cudaGraphNodeTypeEmpty);
    CHECK_CUDA(cudaGraphAddNode(&empty, b.g, &b.kern2, nullptr, 1, none.get()));
    node_params host(cudaGraphNodeTypeHost);
    host->host.fn = host_fn;
    host->host.userData = &host_step;
    CHECK_CUDA(cudaGraphAddNode(&b.host, b.g, &empty, nullptr, 1, host.get()));
    node_params rq(cudaGraphNodeTypeEventRecord);
    rq->eventRecord.event = rec;
    CHECK_CUDA(cudaGraphAddNode(&record, b.g, &empty, nullptr, 1, rq.get()));
    CHECK_CUDA(cudaGraphCreate(&cg, 0));
    node_params nine = memset_node(dev2, 9, 1, N);
    CHECK_CUDA(cudaGraphAddNode(&cn, cg, nullptr, nullptr, 0, nine.get()));
    node_params sub(cudaGraphNodeTypeGraph);
    sub->graph.graph = cg;
    CHECK_CUDA(cudaGraphAddNode(&child, b.g, &empty, nullptr, 1, sub.get()));
    CHECK_CUDA(cudaGraphDestroy(cg)); /* the node keeps a copy */
    return b;
}

// an alloc node, a memset of its memory, its free node: the graph runs, and
// as in CUDA has one executable graph at a time
static void memory_nodes(cudaStream_t s)
{
    cudaGraph_t g = memory_node_graph(4096);
    cudaGraphExec_t x, x2;

    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    CHECK_CUDA(cudaGraphLaunch(x, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    EXPECT_ERR(cudaErrorNotSupported, cudaGraphInstantiate(&x2, g, 0));
    cudaGetLastError();
    CHECK_CUDA(cudaGraphExecDestroy(x));
    CHECK_CUDA(cudaGraphInstantiate(&x2, g, 0)); /* the first is gone */
    CHECK_CUDA(cudaGraphLaunch(x2, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaGraphDestroy(g)); /* before its executable graph */
    CHECK_CUDA(cudaGraphExecDestroy(x2));
}

// clear, launch, and check what the graph left: dev1's bytes plus add and 1
static void run_and_check(cudaGraphExec_t x, cudaStream_t s, unsigned value, unsigned add, const char *what)
{
    unsigned char d2[N];
    int before = host_runs;

    CHECK_CUDA(cudaMemsetAsync(dev2, 0, N, s));
    CHECK_CUDA(cudaGraphLaunch(x, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    for (int i = 0; i < N; i++)
        REQUIRE(pinned[i] == bytes4(value) + add + 1, "%s: word %d is %#x, expected %#x", what, i, pinned[i],
                bytes4(value) + add + 1);
    CHECK_CUDA(cudaMemcpy(d2, dev2, N, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++)
        REQUIRE(d2[i] == 9, "%s: the child graph's memset left byte %d at %d", what, i, d2[i]);
    /* the sim does not hold the stream for host functions: awaited */
    for (int i = 0; i < 2000 && host_runs < before + host_step; i++)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(host_runs == before + host_step, "%s: host node ran %d times", what, host_runs - before);
}

int main(void)
{
    cudaStream_t s;
    cudaEvent_t rec;
    cudaGraphExec_t x, x2;
    cudaGraphNodeType type;
    cudaGraphNode_t bad;
    cudaMemsetParams m;
    unsigned add = 7;

    CHECK_CUDA(cudaMalloc(&dev1, N * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&dev2, N));
    CHECK_CUDA(cudaMallocHost(&pinned, N * sizeof(int)));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_CUDA(cudaEventCreate(&rec));

    built b = build(3, 5, rec);
    CHECK_CUDA(cudaGraphNodeGetType(b.kern, &type));
    REQUIRE(type == cudaGraphNodeTypeKernel, "the kernel node's type is %d", (int)type);
    CHECK_CUDA(cudaGraphMemsetNodeGetParams(b.set, &m));
    REQUIRE(m.value == 3 && m.width == N * sizeof(int), "the memset node reads back value %u width %zu", m.value,
            m.width);
    CHECK_CUDA(cudaGraphInstantiate(&x, b.g, 0));
    run_and_check(x, s, 3, 5, "first launch");
    CHECK_CUDA(cudaEventSynchronize(rec)); /* the record node recorded */

    // set in the graph: a later instantiation sees it, x does not
    node_params four = memset_node(dev1, 4, 1, N * sizeof(int));
    CHECK_CUDA(cudaGraphNodeSetParams(b.set, four.get()));
    CHECK_CUDA(cudaGraphInstantiate(&x2, b.g, 0));
    run_and_check(x2, s, 4, 5, "after cudaGraphNodeSetParams");
    run_and_check(x, s, 3, 5, "the earlier instantiation");
    // set in one executable graph: the kernel adds 7 there only
    {
        unsigned *p = pinned;
        unsigned n = N;
        void *args[] = {&p, &n, &add};
        node_params seven = kernel_node(args);
        CHECK_CUDA(cudaGraphExecNodeSetParams(x, b.kern, seven.get()));
    }
    run_and_check(x, s, 3, 7, "after cudaGraphExecNodeSetParams");
    run_and_check(x2, s, 4, 5, "the other executable graph");

    memory_nodes(s);

    // errors
    node_params one = memset_node(dev1, 1, 1, 4);
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphAddNode(&bad, b.g, nullptr, nullptr, 0, nullptr));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphNodeSetParams(b.kern, one.get()));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphExecNodeSetParams(x, b.kern, one.get()));
    one->reserved0[1] = 1;
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphAddNode(&bad, b.g, nullptr, nullptr, 0, one.get()));
    {
        cudaGraph_t cg;
        CHECK_CUDA(cudaGraphCreate(&cg, 0));
        node_params moved(cudaGraphNodeTypeGraph);
        moved->graph.graph = cg;
        moved->graph.ownership = cudaGraphChildGraphOwnershipMove;
        EXPECT_ERR(cudaErrorNotSupported, cudaGraphAddNode(&bad, b.g, nullptr, nullptr, 0, moved.get()));
        CHECK_CUDA(cudaGraphDestroy(cg));
    }

    CHECK_CUDA(cudaGraphExecDestroy(x));
    CHECK_CUDA(cudaGraphExecDestroy(x2));
    CHECK_CUDA(cudaGraphDestroy(b.g));
    CHECK_CUDA(cudaEventDestroy(rec));
    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFreeHost(pinned));
    FREE_DEVICE(dev2, dev1);
    return pass();
}
