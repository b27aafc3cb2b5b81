// Graphs built node by node through the runtime API on the sim (built twice:
// mearas's shared runtime, and NVIDIA's static runtime over mearas's
// libcuda.so.1). A diamond A -> {B, C} -> join -> D of memsets and copies
// whose order shows in host memory, a kernel node (the sim's
// mearas_sim_add_u32, which adds to mapped host memory) after D, a child
// graph, a host node; queries (nodes, roots, edges, types, dependencies,
// parameters), parameters copied when added, relaunches, parameters set in
// the graph (a new instantiation sees them, the old one not) and in the
// executable graph, cudaGraphExecUpdate (same topology: taken; another
// topology or node type: refused with the node to blame), clone, node
// destruction, and the errors CUDA documents.
#include <chrono>
#include <thread>

#include "sim_graph.cuh"
#include "../cuda/src/graph_params.cuh"

#define N 256           /* ints in each buffer */
#define HALF (N / 2)

struct diamond {
    cudaGraph_t g;
    cudaGraphNode_t a, b, c, join, d, k, child, host;
};

static unsigned char *dev1, *dev2, *dev3;
static unsigned *pinned;
static int host_step = 1;

static cudaMemsetParams memset_of(void *dst, unsigned value, size_t bytes)
{
    cudaMemsetParams m = {};
    m.dst = dst;
    m.value = value;
    m.elementSize = 1;
    m.width = bytes;
    m.height = 1;
    return m;
}

static cudaKernelNodeParams kernel_of(void **args)
{
    return kernel_node((const void *)mearas_sim_add_u32, dim3(1), dim3(1), args);
}

/* A: dev1 := a_value bytes; B: dev2[0, half) := dev1 (copy); C: dev2[half, N)
 * := 2s; join; D: pinned := dev2; K: pinned += add; child: dev3 := 9s after K;
 * host node after the child */
static diamond build(unsigned a_value, unsigned add)
{
    diamond x;
    cudaMemsetParams m;
    unsigned *p = pinned;
    unsigned n = N;
    void *args[] = {&p, &n, &add};
    cudaKernelNodeParams kp = kernel_of(args);
    cudaHostNodeParams hp = {host_fn, &host_step};
    cudaGraph_t child;
    cudaGraphNode_t cm, bc[2];

    CHECK_CUDA(cudaGraphCreate(&x.g, 0));
    m = memset_of(dev1, a_value, N * sizeof(int));
    CHECK_CUDA(cudaGraphAddMemsetNode(&x.a, x.g, nullptr, 0, &m));
    CHECK_CUDA(cudaGraphAddMemcpyNode1D(&x.b, x.g, &x.a, 1, dev2, dev1, HALF * sizeof(int),
                                        cudaMemcpyDeviceToDevice));
    m = memset_of(dev2 + HALF * sizeof(int), 2, HALF * sizeof(int));
    CHECK_CUDA(cudaGraphAddMemsetNode(&x.c, x.g, &x.a, 1, &m));
    bc[0] = x.b;
    bc[1] = x.c;
    CHECK_CUDA(cudaGraphAddEmptyNode(&x.join, x.g, bc, 2));
    CHECK_CUDA(cudaGraphAddMemcpyNode1D(&x.d, x.g, &x.join, 1, pinned, dev2, N * sizeof(int),
                                        cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaGraphAddKernelNode(&x.k, x.g, &x.d, 1, &kp));
    add = 12345; /* the node keeps its own copy of the parameters */
    p = nullptr;
    CHECK_CUDA(cudaGraphCreate(&child, 0));
    m = memset_of(dev3, 9, N);
    CHECK_CUDA(cudaGraphAddMemsetNode(&cm, child, nullptr, 0, &m));
    CHECK_CUDA(cudaGraphAddChildGraphNode(&x.child, x.g, &x.k, 1, child));
    CHECK_CUDA(cudaGraphDestroy(child)); /* the node keeps a copy */
    CHECK_CUDA(cudaGraphAddHostNode(&x.host, x.g, &x.child, 1, &hp));
    return x;
}

/* reset the device buffers, launch, and check what the diamond produced */
static void run_and_check(cudaGraphExec_t exec, cudaStream_t s, unsigned a_value, unsigned add, const char *what)
{
    unsigned char d3[N];
    int before = host_runs;

    CHECK_CUDA(cudaMemsetAsync(dev2, 0, N * sizeof(int), s));
    CHECK_CUDA(cudaMemsetAsync(dev3, 0, N, s));
    CHECK_CUDA(cudaGraphLaunch(exec, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    for (int i = 0; i < N; i++) {
        unsigned want = (i < HALF ? bytes4(a_value) : bytes4(2)) + add;
        REQUIRE(pinned[i] == want, "%s: word %d is %#x, expected %#x", what, i, pinned[i], want);
    }
    CHECK_CUDA(cudaMemcpy(d3, dev3, N, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++)
        REQUIRE(d3[i] == 9, "%s: the child graph's memset left byte %d at %d", what, i, d3[i]);
    /* the sim does not hold the stream for host functions: awaited */
    for (int i = 0; i < 2000 && host_runs < before + host_step; i++)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(host_runs == before + host_step, "%s: host node ran %d times, expected %d", what, host_runs - before,
            host_step);
}

static void queries(diamond &x)
{
    cudaGraphNode_t nodes[16], from[16], to[16];
    cudaGraphEdgeData ed[16];
    size_t n = 0;
    cudaGraphNodeType t;
    cudaMemsetParams m;
    cudaKernelNodeParams kp;
    cudaMemcpy3DParms cp;
    cudaHostNodeParams hp;
    cudaGraph_t child;

    CHECK_CUDA(cudaGraphGetNodes(x.g, nullptr, &n));
    REQUIRE(n == 8, "%zu nodes, expected 8", n);
    n = 16;
    CHECK_CUDA(cudaGraphGetNodes(x.g, nodes, &n));
    REQUIRE(n == 8 && nodes[0] == x.a && nodes[7] == x.host && nodes[8] == nullptr, "node list: %zu", n);
    n = 3;
    CHECK_CUDA(cudaGraphGetNodes(x.g, nodes, &n));
    REQUIRE(n == 3 && nodes[2] == x.c, "a short node list: %zu", n);
    n = 4;
    CHECK_CUDA(cudaGraphGetRootNodes(x.g, nodes, &n));
    REQUIRE(n == 1 && nodes[0] == x.a, "roots: %zu", n);
    CHECK_CUDA(cudaGraphGetEdges(x.g, nullptr, nullptr, nullptr, &n));
    REQUIRE(n == 8, "%zu edges, expected 8", n);
    memset(ed, 0xff, sizeof(ed));
    n = 16;
    CHECK_CUDA(cudaGraphGetEdges(x.g, from, to, ed, &n));
    REQUIRE(n == 8 && from[0] == x.a && to[0] == x.b && from[3] == x.c && to[3] == x.join && ed[0].type == 0,
            "edges: %zu", n);
    n = 4;
    CHECK_CUDA(cudaGraphNodeGetDependencies(x.join, nodes, nullptr, &n));
    REQUIRE(n == 2 && nodes[0] == x.b && nodes[1] == x.c, "join's dependencies: %zu", n);
    n = 4;
    CHECK_CUDA(cudaGraphNodeGetDependentNodes(x.a, nodes, nullptr, &n));
    REQUIRE(n == 2 && nodes[0] == x.b && nodes[1] == x.c, "A's dependents: %zu", n);

    const struct {
        cudaGraphNode_t node;
        cudaGraphNodeType type;
        const char *name;
    } types[] = {
        { x.a, cudaGraphNodeTypeMemset, "A" },     { x.b, cudaGraphNodeTypeMemcpy, "B" },
        { x.join, cudaGraphNodeTypeEmpty, "join" }, { x.k, cudaGraphNodeTypeKernel, "K" },
        { x.child, cudaGraphNodeTypeGraph, "child" }, { x.host, cudaGraphNodeTypeHost, "host" },
    };
    for (const auto &w : types) {
        CHECK_CUDA(cudaGraphNodeGetType(w.node, &t));
        REQUIRE(t == w.type, "%s's type %d", w.name, (int)t);
    }

    CHECK_CUDA(cudaGraphMemsetNodeGetParams(x.c, &m));
    REQUIRE(m.dst == dev2 + HALF * sizeof(int) && m.value == 2 && m.elementSize == 1 &&
                m.width == HALF * sizeof(int) && m.height == 1,
            "C's memset parameters");
    CHECK_CUDA(cudaGraphKernelNodeGetParams(x.k, &kp));
    REQUIRE(kp.func == (void *)mearas_sim_add_u32 && kp.gridDim.x == 1 && kp.blockDim.x == 1 && kp.kernelParams,
            "K's parameters");
    REQUIRE(*(unsigned **)kp.kernelParams[0] == pinned && *(unsigned *)kp.kernelParams[1] == N &&
                *(unsigned *)kp.kernelParams[2] == 3,
            "K's arguments: %p %u %u", *(void **)kp.kernelParams[0], *(unsigned *)kp.kernelParams[1],
            *(unsigned *)kp.kernelParams[2]);
    CHECK_CUDA(cudaGraphMemcpyNodeGetParams(x.d, &cp));
    REQUIRE(cp.dstPtr.ptr == pinned && cp.srcPtr.ptr == dev2 && cp.extent.width == N * sizeof(int) &&
                cp.extent.height == 1 && cp.extent.depth == 1 && cp.kind == cudaMemcpyDeviceToHost,
            "D's copy parameters");
    CHECK_CUDA(cudaGraphHostNodeGetParams(x.host, &hp));
    REQUIRE(hp.fn == host_fn && hp.userData == &host_step, "host node parameters");
    CHECK_CUDA(cudaGraphChildGraphNodeGetGraph(x.child, &child));
    CHECK_CUDA(cudaGraphGetNodes(child, nullptr, &n));
    REQUIRE(n == 1, "the child's copy has %zu nodes", n);
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphMemsetNodeGetParams(x.b, &m)); /* a memcpy node */
    cudaGetLastError();
}

static void errors(diamond &x, cudaStream_t s)
{
    cudaGraph_t other, cap;
    cudaGraphNode_t n, deps[2];
    cudaGraphExec_t exec;
    cudaMemsetParams m = memset_of(dev1, 1, 16);
    cudaGraphExecUpdateResultInfo info;
    static unsigned char pageable[64];

    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphCreate(&other, 1));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphCreate(nullptr, 0));
    CHECK_CUDA(cudaGraphCreate(&other, 0));
    /* a dependency of another graph, twice the same one, a null list */
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphAddEmptyNode(&n, other, &x.a, 1));
    CHECK_CUDA(cudaGraphAddEmptyNode(&deps[0], other, nullptr, 0));
    deps[1] = deps[0];
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphAddEmptyNode(&n, other, deps, 2));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphAddEmptyNode(&n, other, nullptr, 1));
    /* not a graph, not a node */
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphAddEmptyNode(&n, (cudaGraph_t)&m, nullptr, 0));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphNodeGetType((cudaGraphNode_t)&m, nullptr));
    /* a memset of memory that is not the device's, of a bad element size */
    m.dst = pinned;
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphAddMemsetNode(&n, other, nullptr, 0, &m));
    m = memset_of(dev1, 1, 16);
    m.elementSize = 3;
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphAddMemsetNode(&n, other, nullptr, 0, &m));
    /* what mearas does not do: said so */
    EXPECT_ERR(cudaErrorNotSupported, cudaGraphAddMemcpyNode1D(&n, other, nullptr, 0, dev1, pageable,
                                                               sizeof(pageable), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_CUDA(cudaMemsetAsync(dev1, 0, 4, s));
    CHECK_CUDA(cudaStreamEndCapture(s, &cap));
    EXPECT_ERR(cudaErrorNotSupported, cudaGraphAddChildGraphNode(&n, other, nullptr, 0, cap));
    EXPECT_ERR(cudaErrorNotSupported, cudaGraphAddEmptyNode(&n, cap, nullptr, 0));
    cudaGetLastError();

    /* a cycle is refused at instantiation */
    CHECK_CUDA(cudaGraphAddEmptyNode(&deps[1], other, &deps[0], 1));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphAddDependencies(other, &deps[0], &deps[1], nullptr, 1)); /* exists */
    CHECK_CUDA(cudaGraphAddDependencies(other, &deps[1], &deps[0], nullptr, 1));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphInstantiate(&exec, other, 0));
    CHECK_CUDA(cudaGraphRemoveDependencies(other, &deps[1], &deps[0], nullptr, 1));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphRemoveDependencies(other, &deps[1], &deps[0], nullptr, 1));
    CHECK_CUDA(cudaGraphInstantiate(&exec, other, 0));
    CHECK_CUDA(cudaGraphLaunch(exec, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    /* an executable graph of a captured graph is not updated: CUDA's failure, said why */
    EXPECT_ERR(cudaErrorGraphExecUpdateFailure, cudaGraphExecUpdate(exec, cap, &info));
    REQUIRE(info.result == cudaGraphExecUpdateErrorNotSupported, "update from a captured graph: result %d",
            (int)info.result);
    cudaGetLastError();
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(cap));
    CHECK_CUDA(cudaGraphDestroy(other));
}

static void updates(cudaStream_t s)
{
    diamond x = build(1, 3), y, z;
    cudaGraphExec_t exec, exec2;
    cudaGraphExecUpdateResultInfo info;
    cudaMemsetParams m = memset_of(dev1, 7, N * sizeof(int));
    unsigned *p = pinned, n = N, add = 40;
    void *args[] = {&p, &n, &add};
    cudaKernelNodeParams kp = kernel_of(args);
    cudaGraphNode_t extra;

    queries(x);
    CHECK_CUDA(cudaGraphInstantiate(&exec, x.g, 0));
    for (int l = 0; l < 3; l++)
        run_and_check(exec, s, 1, 3, "relaunch");

    /* set in the graph: a new instantiation sees it, the first one not */
    CHECK_CUDA(cudaGraphMemsetNodeSetParams(x.a, &m));
    CHECK_CUDA(cudaGraphInstantiate(&exec2, x.g, 0));
    run_and_check(exec2, s, 7, 3, "new params, new instantiation");
    run_and_check(exec, s, 1, 3, "new params, first instantiation");
    CHECK_CUDA(cudaGraphExecDestroy(exec2));

    /* set in the executable graph */
    m.value = 5;
    CHECK_CUDA(cudaGraphExecMemsetNodeSetParams(exec, x.a, &m));
    CHECK_CUDA(cudaGraphExecKernelNodeSetParams(exec, x.k, &kp));
    run_and_check(exec, s, 5, 40, "exec node params");
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphExecMemsetNodeSetParams(exec, x.b, &m)); /* a memcpy node */
    cudaGetLastError();

    /* the same topology: the update takes y's parameters */
    y = build(6, 100);
    CHECK_CUDA(cudaGraphExecUpdate(exec, y.g, &info));
    REQUIRE(info.result == cudaGraphExecUpdateSuccess, "update result %d", (int)info.result);
    run_and_check(exec, s, 6, 100, "after cudaGraphExecUpdate");
    /* nodes of the graph it was updated from name the exec's nodes too */
    m.value = 8;
    CHECK_CUDA(cudaGraphExecMemsetNodeSetParams(exec, y.a, &m));
    run_and_check(exec, s, 8, 100, "exec params by the update's node");

    /* another topology: refused, the exec unchanged */
    z = build(4, 1);
    CHECK_CUDA(cudaGraphAddEmptyNode(&extra, z.g, &z.a, 1));
    EXPECT_ERR(cudaErrorGraphExecUpdateFailure, cudaGraphExecUpdate(exec, z.g, &info));
    REQUIRE(info.result == cudaGraphExecUpdateErrorTopologyChanged && info.errorNode == nullptr,
            "a node more: result %d", (int)info.result);
    CHECK_CUDA(cudaGraphDestroyNode(extra));
    CHECK_CUDA(cudaGraphRemoveDependencies(z.g, &z.a, &z.c, nullptr, 1));
    EXPECT_ERR(cudaErrorGraphExecUpdateFailure, cudaGraphExecUpdate(exec, z.g, &info));
    REQUIRE(info.result == cudaGraphExecUpdateErrorTopologyChanged && info.errorNode == z.c,
            "an edge less: result %d", (int)info.result);
    CHECK_CUDA(cudaGraphDestroy(z.g));
    /* a node of another type in the same place */
    z = build(4, 1);
    CHECK_CUDA(cudaGraphDestroyNode(z.host));
    CHECK_CUDA(cudaGraphAddEmptyNode(&z.host, z.g, &z.child, 1));
    EXPECT_ERR(cudaErrorGraphExecUpdateFailure, cudaGraphExecUpdate(exec, z.g, &info));
    REQUIRE(info.result == cudaGraphExecUpdateErrorNodeTypeChanged && info.errorNode == z.host,
            "a node of another type: result %d", (int)info.result);
    cudaGetLastError();
    run_and_check(exec, s, 8, 100, "after refused updates");
    CHECK_CUDA(cudaGraphDestroy(z.g));

    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(y.g));
    errors(x, s);
    CHECK_CUDA(cudaGraphDestroy(x.g));
}

static void clone_and_destroy(cudaStream_t s)
{
    diamond x = build(1, 0);
    cudaGraph_t c;
    cudaGraphNode_t cn;
    cudaGraphExec_t exec;
    cudaMemsetParams m;
    size_t n = 0;

    CHECK_CUDA(cudaGraphClone(&c, x.g));
    CHECK_CUDA(cudaGraphNodeFindInClone(&cn, x.a, c));
    REQUIRE(cn != x.a, "the clone's node is the original's");
    CHECK_CUDA(cudaGraphMemsetNodeGetParams(cn, &m));
    REQUIRE(m.value == 1, "the clone's A sets %u", m.value);
    CHECK_CUDA(cudaGraphDestroy(x.g)); /* the clone stands alone */
    CHECK_CUDA(cudaGraphInstantiate(&exec, c, 0));
    run_and_check(exec, s, 1, 0, "clone");
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroyNode(cn));
    CHECK_CUDA(cudaGraphGetNodes(c, nullptr, &n));
    REQUIRE(n == 7, "%zu nodes after destroying one", n);
    CHECK_CUDA(cudaGraphGetRootNodes(c, nullptr, &n));
    REQUIRE(n == 2, "%zu roots after destroying A", n);
    CHECK_CUDA(cudaGraphDestroy(c));
}

int main(void)
{
    cudaStream_t s;

    CHECK_CUDA(cudaMalloc(&dev1, N * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&dev2, N * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&dev3, N));
    CHECK_CUDA(cudaMallocHost(&pinned, N * sizeof(int)));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    updates(s);
    clone_and_destroy(s);
    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFreeHost(pinned));
    FREE_DEVICE(dev3, dev2, dev1);
    return pass();
}
