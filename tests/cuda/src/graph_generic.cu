// Builds a graph with the generic node call (cudaGraphAddNode) only: a
// memset, two kernels, a child graph with a kernel of its own, a copy to
// pinned memory (3D parameters), a host node and an event record node (and,
// in a graph of their own, an alloc node, a memset of its memory and its
// free node: one executable graph at a time); launches it 3
// times, then changes a kernel's parameters in the graph
// (cudaGraphNodeSetParams: a second instantiation sees them, the first not)
// and in the first executable graph (cudaGraphExecNodeSetParams), checking
// every launch on the host; disables that kernel node in the first
// executable graph and enables it again; a user object held by the graph
// outlives an executable graph of it and goes with the graph. Prints the errors of parameters of
// the wrong kind and of none, which the output comparison holds to native's.
#include <unistd.h>

#include "check.cuh"
#include "graph_params.cuh"
#include "int_kernels.cuh"

#define N 4096

static int host_runs;
static int object_gone;

static void CUDART_CB object_destroyed(void *arg)
{
    __atomic_store_n((int *)arg, 1, __ATOMIC_SEQ_CST);
}

// waits up to 2 s for the user object's destructor: yes or no
static const char *object_destroyed_yet(void)
{
    for (int t = 0; t < 2000 && !__atomic_load_n(&object_gone, __ATOMIC_SEQ_CST); t++)
        usleep(1000);
    return __atomic_load_n(&object_gone, __ATOMIC_SEQ_CST) ? "yes" : "no";
}

static void CUDART_CB count_run(void *)
{
    host_runs++;
}

static node_params kernel(void *fn, void **args)
{
    node_params q(cudaGraphNodeTypeKernel);
    q->kernel.func = fn;
    q->kernel.gridDim = dim3((N + 255) / 256);
    q->kernel.blockDim = dim3(256);
    q->kernel.kernelParams = args;
    return q;
}

struct bufs {
    int *dev, *other, *host;
    int n, c, child_c;
};

struct built {
    cudaGraph_t g;
    cudaGraphNode_t add;
};

// memset dev := 0 -> add_const(c) -> add_index -> copy to host -> host node;
// child (other += child_c) and a record of `rec` after add_index
static built build(bufs *b, cudaEvent_t rec)
{
    built r;
    cudaGraph_t child;
    cudaGraphNode_t set, idx, ch, cp, h, ev, cn;
    void *a_args[] = {&b->dev, &b->n, &b->c};
    void *i_args[] = {&b->dev, &b->n};
    void *c_args[] = {&b->other, &b->n, &b->child_c};

    CHECK_CUDA(cudaGraphCreate(&r.g, 0));
    node_params m = memset_node(b->dev, 0, 4, N);
    CHECK_CUDA(cudaGraphAddNode(&set, r.g, nullptr, nullptr, 0, m.get()));
    node_params a = kernel((void *)add_const, a_args);
    CHECK_CUDA(cudaGraphAddNode(&r.add, r.g, &set, nullptr, 1, a.get()));
    node_params i = kernel((void *)add_index, i_args);
    CHECK_CUDA(cudaGraphAddNode(&idx, r.g, &r.add, nullptr, 1, i.get()));
    CHECK_CUDA(cudaGraphCreate(&child, 0));
    node_params k = kernel((void *)add_const, c_args);
    CHECK_CUDA(cudaGraphAddNode(&cn, child, nullptr, nullptr, 0, k.get()));
    node_params sub(cudaGraphNodeTypeGraph);
    sub->graph.graph = child;
    CHECK_CUDA(cudaGraphAddNode(&ch, r.g, &idx, nullptr, 1, sub.get()));
    CHECK_CUDA(cudaGraphDestroy(child)); /* the node holds a copy */
    node_params c(cudaGraphNodeTypeMemcpy);
    c->memcpy.copyParams.srcPtr = make_cudaPitchedPtr(b->dev, N * sizeof(int), N * sizeof(int), 1);
    c->memcpy.copyParams.dstPtr = make_cudaPitchedPtr(b->host, N * sizeof(int), N * sizeof(int), 1);
    c->memcpy.copyParams.extent = make_cudaExtent(N * sizeof(int), 1, 1);
    c->memcpy.copyParams.kind = cudaMemcpyDeviceToHost;
    CHECK_CUDA(cudaGraphAddNode(&cp, r.g, &idx, nullptr, 1, c.get()));
    node_params hq(cudaGraphNodeTypeHost);
    hq->host.fn = count_run;
    CHECK_CUDA(cudaGraphAddNode(&h, r.g, &cp, nullptr, 1, hq.get()));
    node_params rq(cudaGraphNodeTypeEventRecord);
    rq->eventRecord.event = rec;
    CHECK_CUDA(cudaGraphAddNode(&ev, r.g, &idx, nullptr, 1, rq.get()));
    return r;
}

// an alloc node, a memset of its memory, its free node: launched; a second
// instantiation while the first lives, and after it is destroyed
static void memory_nodes(cudaStream_t s)
{
    cudaGraph_t g = memory_node_graph(1 << 20);
    cudaGraphExec_t x, x2;

    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    CHECK_CUDA(cudaGraphLaunch(x, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    std::printf("memory nodes: launched; a second instantiation: %s", cudaGetErrorName(cudaGraphInstantiate(&x2, g, 0)));
    cudaGetLastError();
    CHECK_CUDA(cudaGraphExecDestroy(x));
    std::printf(", after the first is destroyed: %s\n", cudaGetErrorName(cudaGraphInstantiate(&x2, g, 0)));
    CHECK_CUDA(cudaGraphLaunch(x2, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaGraphExecDestroy(x2));
    CHECK_CUDA(cudaGraphDestroy(g));
}

// host[i] == c + i; other gained child_c per launch; returns the host sum
static long long check(const bufs *b, int c, int other_want)
{
    static int other_host[N];
    long long sum = 0;

    for (int i = 0; i < N; i++) {
        REQUIRE(b->host[i] == c + i, "element %d: %d expected %d", i, b->host[i], c + i);
        sum += b->host[i];
    }
    CHECK_CUDA(cudaMemcpy(other_host, b->other, N * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++)
        REQUIRE(other_host[i] == other_want, "child: element %d is %d, expected %d", i, other_host[i], other_want);
    return sum;
}

int main(void)
{
    bufs b = {};
    cudaStream_t s;
    cudaEvent_t rec;
    cudaGraphExec_t x, x2;
    cudaGraphNode_t bad;
    size_t nodes = 0;
    int other = 0;

    CHECK_CUDA(cudaMalloc(&b.dev, N * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&b.other, N * sizeof(int)));
    CHECK_CUDA(cudaMemset(b.other, 0, N * sizeof(int)));
    CHECK_CUDA(cudaMallocHost(&b.host, N * sizeof(int)));
    CHECK_CUDA(cudaEventCreate(&rec));
    s = nonblocking_stream();
    b.n = N;
    b.c = 3;
    b.child_c = 2;
    built g = build(&b, rec);
    b.c = 1000; /* the nodes hold copies of their parameters */
    CHECK_CUDA(cudaGraphGetNodes(g.g, nullptr, &nodes));
    std::printf("nodes=%zu\n", nodes);
    CHECK_CUDA(cudaGraphInstantiate(&x, g.g, 0));
    for (int l = 1; l <= 3; l++) {
        CHECK_CUDA(cudaGraphLaunch(x, s));
        CHECK_CUDA(cudaStreamSynchronize(s));
        other += 2;
        std::printf("launch %d: sum=%lld host_runs=%d record=%s\n", l, check(&b, 3, other), host_runs,
                    cudaGetErrorName(cudaEventQuery(rec)));
    }

    // the graph's node: a new instantiation adds 5, the first still 3
    b.c = 5;
    {
        void *args[] = {&b.dev, &b.n, &b.c};
        node_params a = kernel((void *)add_const, args);
        CHECK_CUDA(cudaGraphNodeSetParams(g.add, a.get()));
    }
    CHECK_CUDA(cudaGraphInstantiate(&x2, g.g, 0));
    CHECK_CUDA(cudaGraphLaunch(x2, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    other += 2;
    std::printf("set in the graph: sum=%lld\n", check(&b, 5, other));
    CHECK_CUDA(cudaGraphLaunch(x, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    other += 2;
    std::printf("the first instantiation: sum=%lld\n", check(&b, 3, other));

    // the first executable graph's node: adds 11 there
    b.c = 11;
    {
        void *args[] = {&b.dev, &b.n, &b.c};
        node_params a = kernel((void *)add_const, args);
        CHECK_CUDA(cudaGraphExecNodeSetParams(x, g.add, a.get()));
    }
    CHECK_CUDA(cudaGraphLaunch(x, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    other += 2;
    std::printf("set in the executable graph: sum=%lld host_runs=%d\n", check(&b, 11, other), host_runs);

    // the first executable graph's add_const disabled: host[i] == i, the
    // rest runs as before; enabled again: 11 again
    {
        unsigned on = 7;
        CHECK_CUDA(cudaGraphNodeSetEnabled(x, g.add, 0));
        CHECK_CUDA(cudaGraphNodeGetEnabled(x, g.add, &on));
        CHECK_CUDA(cudaGraphLaunch(x, s));
        CHECK_CUDA(cudaStreamSynchronize(s));
        other += 2;
        std::printf("add_const disabled (enabled=%u): sum=%lld\n", on, check(&b, 0, other));
        CHECK_CUDA(cudaGraphNodeSetEnabled(x, g.add, 1));
        CHECK_CUDA(cudaGraphLaunch(x, s));
        CHECK_CUDA(cudaStreamSynchronize(s));
        other += 2;
        std::printf("enabled again: sum=%lld\n", check(&b, 11, other));
    }

    memory_nodes(s);

    // a user object moved into the graph: an executable graph made, launched
    // and destroyed leaves it to the graph; destroying the graph (last) ends it
    {
        cudaUserObject_t o;
        cudaGraphExec_t x3;
        CHECK_CUDA(cudaUserObjectCreate(&o, &object_gone, object_destroyed, 1, cudaUserObjectNoDestructorSync));
        CHECK_CUDA(cudaGraphRetainUserObject(g.g, o, 1, cudaGraphUserObjectMove));
        CHECK_CUDA(cudaGraphInstantiate(&x3, g.g, 0));
        CHECK_CUDA(cudaGraphLaunch(x3, s));
        CHECK_CUDA(cudaGraphExecDestroy(x3));
        CHECK_CUDA(cudaStreamSynchronize(s));
        other += 2;
        std::printf("user object after its executable graph: destroyed %s\n",
                    __atomic_load_n(&object_gone, __ATOMIC_SEQ_CST) ? "yes" : "no");
    }

    // errors, as native gives them
    node_params wrong = memset_node(b.dev, 1, 4, 4);
    std::printf("memset parameters on a kernel node: %s\n",
                cudaGetErrorName(cudaGraphNodeSetParams(g.add, wrong.get())));
    std::printf("no parameters: %s\n", cudaGetErrorName(cudaGraphAddNode(&bad, g.g, nullptr, nullptr, 0, nullptr)));
    cudaGetLastError();

    CHECK_CUDA(cudaGraphExecDestroy(x2));
    CHECK_CUDA(cudaGraphExecDestroy(x));
    CHECK_CUDA(cudaGraphDestroy(g.g));
    std::printf("user object after its graph: destroyed %s\n", object_destroyed_yet());
    CHECK_CUDA(cudaEventDestroy(rec));
    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFreeHost(b.host));
    CHECK_CUDA(cudaFree(b.other));
    CHECK_CUDA(cudaFree(b.dev));
    return pass();
}
