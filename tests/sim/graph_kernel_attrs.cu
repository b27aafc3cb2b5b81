// A graph kernel node's attributes (cudaGraphKernelNodeSetAttribute, Get,
// CopyAttributes; built twice: mearas's shared runtime, and NVIDIA's static
// runtime over mearas's libcuda.so.1, whose cuGraphKernelNode*Attribute
// it calls). The sim's kernel mearas_sim_launch_attrs writes what its launch
// came with, so each run of the graph shows what reached the device: set
// attributes go with the node's launch, read back as set (a priority clamped
// to the device's range, as the driver does), survive new parameters and a
// clone, are copied to another node, and an executable graph keeps those of
// its instantiation; the node attributes a launch does not carry read as
// their defaults. Checked against the driver on an H200: unset attributes
// read 0, a cluster that does not divide the grid is InvalidClusterSize. Values the driver refuses are
// refused, and a launch's attributes on a node (InvalidValue, as NVIDIA's
// runtime answers); a node's attribute mearas does not carry fails with
// cudaErrorNotSupported.
#include "sim_check.cuh"
#include "../cuda/src/graph_params.cuh"
#include "../cuda/src/launch_attrs.cuh"

// out[0..7] = cooperative, programmatic, remote domain, cluster policy,
// priority given, priority, carveout given, carveout
extern "C" __global__ void mearas_sim_launch_attrs(unsigned *out)
{
    (void)out;
}

static unsigned *out_a, *out_b;
static cudaStream_t stream;

static cudaKernelNodeParams attrs_kernel(unsigned **out)
{
    static void *args[1];
    args[0] = out;
    return kernel_node((const void *)mearas_sim_launch_attrs, dim3(1), dim3(32), args);
}

static cudaGraphNode_t add_node(cudaGraph_t g, unsigned **out)
{
    cudaGraphNode_t n;
    cudaKernelNodeParams k = attrs_kernel(out);
    CHECK_CUDA(cudaGraphAddKernelNode(&n, g, nullptr, 0, &k));
    return n;
}

// a new graph of one such node
static cudaGraphNode_t graph_of_one(cudaGraph_t *g, unsigned **out)
{
    CHECK_CUDA(cudaGraphCreate(g, 0));
    return add_node(*g, out);
}

// every carried value attribute (priority -3), and cooperative
static void set_all(cudaGraphNode_t n)
{
    cudaLaunchAttribute a[5] = {};
    value_attrs(a, -3);
    a[4].id = cudaLaunchAttributeCooperative;
    a[4].val.cooperative = 1;
    for (int i = 0; i < 5; i++)
        CHECK_CUDA(cudaGraphKernelNodeSetAttribute(n, a[i].id, &a[i].val));
}

static void run(cudaGraphExec_t x)
{
    CHECK_CUDA(cudaMemset(out_a, 0xff, 8 * sizeof(unsigned)));
    CHECK_CUDA(cudaMemset(out_b, 0xff, 8 * sizeof(unsigned)));
    CHECK_CUDA(cudaGraphLaunch(x, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
}

static void expect_words(const unsigned *dev, const unsigned want[8], const char *what)
{
    unsigned got[8];
    CHECK_CUDA(cudaMemcpy(got, dev, sizeof(got), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 8; i++)
        REQUIRE(got[i] == want[i], "%s: word %d is %u, want %u", what, i, got[i], want[i]);
}

// g instantiated and run once: dev's words are want; g destroyed
static void run_graph_once(cudaGraph_t g, const unsigned *dev, const unsigned want[8], const char *what)
{
    cudaGraphExec_t x;
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    run(x);
    expect_words(dev, want, what);
    CHECK_CUDA(cudaGraphExecDestroy(x));
    CHECK_CUDA(cudaGraphDestroy(g));
}

static const unsigned all_set[8] = { 1, 0, 1, 1, 1, (unsigned)-3, 1, 50 };
static const unsigned none_set[8] = {};

static void expect_read_back(cudaGraphNode_t n, const char *what)
{
    cudaLaunchAttributeValue v;
    CHECK_CUDA(cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributePriority, &v));
    REQUIRE(v.priority == -3, "%s: priority reads %d", what, v.priority);
    CHECK_CUDA(cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributeMemSyncDomain, &v));
    REQUIRE(v.memSyncDomain == cudaLaunchMemSyncDomainRemote, "%s: sync domain reads %d", what, (int)v.memSyncDomain);
    CHECK_CUDA(cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributeClusterSchedulingPolicyPreference, &v));
    REQUIRE(v.clusterSchedulingPolicyPreference == cudaClusterSchedulingPolicySpread, "%s: policy reads %d", what,
            (int)v.clusterSchedulingPolicyPreference);
    CHECK_CUDA(cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributePreferredSharedMemoryCarveout, &v));
    REQUIRE(v.sharedMemCarveout == 50, "%s: carveout reads %u", what, v.sharedMemCarveout);
    CHECK_CUDA(cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributeCooperative, &v));
    REQUIRE(v.cooperative == 1, "%s: cooperative reads %d", what, v.cooperative);
}

// the node's launch carries its attributes; a node without any runs without
static void attrs_reach_the_launch(void)
{
    cudaGraph_t g;
    cudaGraphExec_t x;
    cudaGraphNode_t a = graph_of_one(&g, &out_a);
    add_node(g, &out_b);
    set_all(a);
    expect_read_back(a, "set");
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    run(x);
    expect_words(out_a, all_set, "the node with attributes");
    expect_words(out_b, none_set, "the node without");
    CHECK_CUDA(cudaGraphExecDestroy(x));
    CHECK_CUDA(cudaGraphDestroy(g));
}

// attributes never set read as a launch without them
static void unset_attrs_read_as_none(void)
{
    cudaGraph_t g;
    cudaLaunchAttributeValue v;
    cudaGraphNode_t n = graph_of_one(&g, &out_a);
    v.priority = 77;
    CHECK_CUDA(cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributePriority, &v));
    REQUIRE(v.priority == 0, "unset priority reads %d", v.priority);
    v.cooperative = 77;
    CHECK_CUDA(cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributeCooperative, &v));
    REQUIRE(v.cooperative == 0, "unset cooperative reads %d", v.cooperative);
    v.clusterDim.x = v.clusterDim.y = v.clusterDim.z = 77;
    CHECK_CUDA(cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributeClusterDimension, &v));
    REQUIRE(!v.clusterDim.x && !v.clusterDim.y && !v.clusterDim.z, "unset cluster reads %u %u %u", v.clusterDim.x,
            v.clusterDim.y, v.clusterDim.z);
    CHECK_CUDA(cudaGraphDestroy(g));
}

// a cluster shape that divides the grid is kept and read back (the sim runs
// no clusters), all 0s clear it; one that does not divide the grid is the
// driver's InvalidClusterSize
static void cluster_shape_read_back(void)
{
    cudaGraph_t g;
    cudaGraphNode_t n;
    cudaLaunchAttributeValue v = {}, w = {};
    cudaKernelNodeParams k = attrs_kernel(&out_a);
    k.gridDim = dim3(4);
    CHECK_CUDA(cudaGraphCreate(&g, 0));
    CHECK_CUDA(cudaGraphAddKernelNode(&n, g, nullptr, 0, &k));
    v.clusterDim.x = 3;
    v.clusterDim.y = 1;
    v.clusterDim.z = 1;
    EXPECT_ERR(cudaErrorInvalidClusterSize, cudaGraphKernelNodeSetAttribute(n, cudaLaunchAttributeClusterDimension, &v));
    v.clusterDim.x = 0;
    EXPECT_ERR(cudaErrorInvalidClusterSize, cudaGraphKernelNodeSetAttribute(n, cudaLaunchAttributeClusterDimension, &v));
    cudaGetLastError();
    v.clusterDim.x = 2;
    v.clusterDim.y = 1;
    v.clusterDim.z = 1;
    CHECK_CUDA(cudaGraphKernelNodeSetAttribute(n, cudaLaunchAttributeClusterDimension, &v));
    CHECK_CUDA(cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributeClusterDimension, &w));
    REQUIRE(w.clusterDim.x == 2 && w.clusterDim.y == 1 && w.clusterDim.z == 1, "cluster reads %u %u %u",
            w.clusterDim.x, w.clusterDim.y, w.clusterDim.z);
    // all 0s: no cluster shape again
    v.clusterDim.x = v.clusterDim.y = v.clusterDim.z = 0;
    CHECK_CUDA(cudaGraphKernelNodeSetAttribute(n, cudaLaunchAttributeClusterDimension, &v));
    CHECK_CUDA(cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributeClusterDimension, &w));
    REQUIRE(!w.clusterDim.x && !w.clusterDim.y && !w.clusterDim.z, "cluster reads %u %u %u after 0s",
            w.clusterDim.x, w.clusterDim.y, w.clusterDim.z);
    CHECK_CUDA(cudaGraphDestroy(g));
}

// a priority out of the device's range is clamped to it, as the driver does
static void priority_clamped(void)
{
    cudaGraph_t g;
    cudaLaunchAttributeValue v = {};
    int least, greatest;
    CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaGraphNode_t n = graph_of_one(&g, &out_a);
    v.priority = greatest - 100;
    CHECK_CUDA(cudaGraphKernelNodeSetAttribute(n, cudaLaunchAttributePriority, &v));
    v.priority = 77;
    CHECK_CUDA(cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributePriority, &v));
    REQUIRE(v.priority == greatest, "priority %d set reads %d, the range's greatest is %d", greatest - 100,
            v.priority, greatest);
    const unsigned want[8] = { 0, 0, 0, 0, 1, (unsigned)greatest, 0, 0 };
    run_graph_once(g, out_a, want, "a clamped priority");
}

// the node attributes a launch does not carry read as their defaults and
// may be set to them
static void uncarried_defaults(void)
{
    cudaGraph_t g;
    cudaLaunchAttributeValue v;
    cudaGraphNode_t n = graph_of_one(&g, &out_a);
    memset(&v, 0x5a, sizeof(v));
    CHECK_CUDA(cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributeAccessPolicyWindow, &v));
    REQUIRE(!v.accessPolicyWindow.base_ptr && !v.accessPolicyWindow.num_bytes, "the window reads %p + %zu",
            v.accessPolicyWindow.base_ptr, v.accessPolicyWindow.num_bytes);
    CHECK_CUDA(cudaGraphKernelNodeSetAttribute(n, cudaLaunchAttributeAccessPolicyWindow, &v));
    memset(&v, 0x5a, sizeof(v));
    CHECK_CUDA(cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributeMemSyncDomainMap, &v));
    REQUIRE(v.memSyncDomainMap.default_ == 0 && v.memSyncDomainMap.remote == 1, "the domain map reads %u, %u",
            v.memSyncDomainMap.default_, v.memSyncDomainMap.remote);
    CHECK_CUDA(cudaGraphKernelNodeSetAttribute(n, cudaLaunchAttributeMemSyncDomainMap, &v));
    memset(&v, 0x5a, sizeof(v));
    CHECK_CUDA(cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributeDeviceUpdatableKernelNode, &v));
    REQUIRE(!v.deviceUpdatableKernelNode.deviceUpdatable, "device updatable reads %d",
            v.deviceUpdatableKernelNode.deviceUpdatable);
    CHECK_CUDA(cudaGraphDestroy(g));
}

// new parameters keep the node's attributes
static void set_params_keeps_attrs(void)
{
    cudaGraph_t g;
    cudaGraphExec_t x;
    cudaGraphNode_t n = graph_of_one(&g, &out_b);
    set_all(n);
    cudaKernelNodeParams k = attrs_kernel(&out_a);
    CHECK_CUDA(cudaGraphKernelNodeSetParams(n, &k));
    expect_read_back(n, "after SetParams");
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    run(x);
    expect_words(out_a, all_set, "after SetParams");
    // and in the executable graph
    k = attrs_kernel(&out_b);
    CHECK_CUDA(cudaGraphExecKernelNodeSetParams(x, n, &k));
    run(x);
    expect_words(out_b, all_set, "after ExecKernelNodeSetParams");
    CHECK_CUDA(cudaGraphExecDestroy(x));
    CHECK_CUDA(cudaGraphDestroy(g));
}

// CopyAttributes gives the destination node the source's
static void copy_attrs(void)
{
    cudaGraph_t g;
    cudaGraphNode_t src = graph_of_one(&g, &out_a);
    cudaGraphNode_t dst = add_node(g, &out_b);
    set_all(src);
    CHECK_CUDA(cudaGraphKernelNodeCopyAttributes(dst, src));
    expect_read_back(dst, "copied");
    run_graph_once(g, out_b, all_set, "the copy's launch");
}

// an executable graph keeps its instantiation's attributes; a clone the graph's
static void exec_and_clone_keep_their_own(void)
{
    cudaGraph_t g, c;
    cudaGraphExec_t x, xc;
    cudaGraphNode_t cn;
    cudaLaunchAttributeValue v = {};
    cudaGraphNode_t n = graph_of_one(&g, &out_a);
    set_all(n);
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    CHECK_CUDA(cudaGraphClone(&c, g));
    v.priority = 0;
    CHECK_CUDA(cudaGraphKernelNodeSetAttribute(n, cudaLaunchAttributePriority, &v));
    run(x);
    expect_words(out_a, all_set, "the executable graph after a later Set");
    CHECK_CUDA(cudaGraphNodeFindInClone(&cn, n, c));
    expect_read_back(cn, "the clone");
    CHECK_CUDA(cudaGraphInstantiate(&xc, c, 0));
    run(xc);
    expect_words(out_a, all_set, "the clone's launch");
    CHECK_CUDA(cudaGraphExecDestroy(xc));
    CHECK_CUDA(cudaGraphExecDestroy(x));
    CHECK_CUDA(cudaGraphDestroy(c));
    CHECK_CUDA(cudaGraphDestroy(g));
}

static void refusals(void)
{
    cudaGraph_t g;
    cudaGraphNode_t empty;
    cudaLaunchAttributeValue v = {};
    cudaGraphNode_t n = graph_of_one(&g, &out_a);
    CHECK_CUDA(cudaGraphAddEmptyNode(&empty, g, nullptr, 0));
    v.sharedMemCarveout = 150;
    EXPECT_ERR(cudaErrorInvalidValue,
               cudaGraphKernelNodeSetAttribute(n, cudaLaunchAttributePreferredSharedMemoryCarveout, &v));
    v.clusterSchedulingPolicyPreference = (cudaClusterSchedulingPolicy)7;
    EXPECT_ERR(cudaErrorInvalidValue,
               cudaGraphKernelNodeSetAttribute(n, cudaLaunchAttributeClusterSchedulingPolicyPreference, &v));
    v.priority = 1;
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphKernelNodeSetAttribute(empty, cudaLaunchAttributePriority, &v));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphKernelNodeGetAttribute(empty, cudaLaunchAttributePriority, &v));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphKernelNodeCopyAttributes(empty, n));
    // a launch's attribute is not a node's
    v.programmaticStreamSerializationAllowed = 1;
    EXPECT_ERR(cudaErrorInvalidValue,
               cudaGraphKernelNodeSetAttribute(n, cudaLaunchAttributeProgrammaticStreamSerialization, &v));
    // the preferred cluster shape: not carried (NVIDIA's runtime, the static
    // build, refuses it on a node of this kernel before asking the driver)
    v.preferredClusterDim.x = 2;
    v.preferredClusterDim.y = 1;
    v.preferredClusterDim.z = 1;
    cudaError_t e = cudaGraphKernelNodeSetAttribute(n, cudaLaunchAttributePreferredClusterDimension, &v);
    REQUIRE(e == cudaErrorNotSupported || e == cudaErrorInvalidValue, "a preferred cluster shape: %s",
            cudaGetErrorName(e));
    // the access policy window names device memory: not carried
    v.accessPolicyWindow.base_ptr = out_a;
    v.accessPolicyWindow.num_bytes = 64;
    v.accessPolicyWindow.hitRatio = 1.0f;
    v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    EXPECT_ERR(cudaErrorNotSupported, cudaGraphKernelNodeSetAttribute(n, cudaLaunchAttributeAccessPolicyWindow, &v));
    // a refused Set leaves the node as it was
    CHECK_CUDA(cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributePreferredSharedMemoryCarveout, &v));
    REQUIRE(v.sharedMemCarveout == 0, "carveout reads %u after refusals", v.sharedMemCarveout);
    cudaGetLastError();
    CHECK_CUDA(cudaGraphDestroy(g));
}

int main(void)
{
    CHECK_CUDA(cudaMalloc(&out_a, 8 * sizeof(unsigned)));
    CHECK_CUDA(cudaMalloc(&out_b, 8 * sizeof(unsigned)));
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    attrs_reach_the_launch();
    unset_attrs_read_as_none();
    cluster_shape_read_back();
    priority_clamped();
    uncarried_defaults();
    set_params_keeps_attrs();
    copy_attrs();
    exec_and_clone_keep_their_own();
    refusals();
    CHECK_CUDA(cudaStreamDestroy(stream));
    CHECK_CUDA(cudaFree(out_a));
    CHECK_CUDA(cudaFree(out_b));
    return pass();
}
