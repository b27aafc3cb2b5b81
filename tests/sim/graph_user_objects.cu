// User objects on the sim (built twice: mearas's shared runtime, whose calls
// were NotSupported stubs, and NVIDIA's static runtime over mearas's
// libcuda.so.1): the destructor runs when the last reference goes, and not
// before: references moved into a graph, held by its executable graph after
// the graph is destroyed, and by a launch until its work is done (a
// modelled 30 ms kernel) after the executable graph is destroyed;
// references added and released by the program and by a graph (not more
// than it holds), a clone's; a child graph's, held by the parent's
// executable graph; a graph made by stream capture. CUDA's argument checks.
#include <chrono>
#include <thread>

#include "sim_check.cuh"

extern "C" __global__ void mearas_sim_spin(unsigned ms)
{
    (void)ms;
}

static int destroyed[8];

static void CUDART_CB destroy(void *arg)
{
    __atomic_add_fetch((int *)arg, 1, __ATOMIC_SEQ_CST);
}

static int count(int i)
{
    return __atomic_load_n(&destroyed[i], __ATOMIC_SEQ_CST);
}

// waits up to 2 s for object i's destructor
static void await(int i, const char *what)
{
    for (int t = 0; t < 2000 && !count(i); t++)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(count(i) == 1, "%s: the destructor ran %d times", what, count(i));
}

static cudaUserObject_t object(int i, unsigned refs)
{
    cudaUserObject_t o;

    CHECK_CUDA(cudaUserObjectCreate(&o, &destroyed[i], destroy, refs, cudaUserObjectNoDestructorSync));
    return o;
}

static cudaGraph_t spin_graph(unsigned *ms)
{
    cudaGraph_t g;
    cudaGraphNode_t n;
    void *args[] = {ms};
    cudaKernelNodeParams k = one_thread_node((void *)mearas_sim_spin, args);

    CHECK_CUDA(cudaGraphCreate(&g, 0));
    CHECK_CUDA(cudaGraphAddKernelNode(&n, g, nullptr, 0, &k));
    return g;
}

int main(void)
{
    cudaStream_t s;
    cudaGraph_t g, c, parent, captured;
    cudaGraphExec_t x;
    cudaGraphNode_t child;
    cudaUserObject_t o;
    unsigned ms = 30;
    void *dev;

    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc(&dev, 64));

    // moved into a graph; the executable graph, then a launch, hold it
    g = spin_graph(&ms);
    CHECK_CUDA(cudaGraphRetainUserObject(g, object(0, 1), 1, cudaGraphUserObjectMove));
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    CHECK_CUDA(cudaGraphDestroy(g));
    REQUIRE(count(0) == 0, "destroyed with the graph while its executable graph holds it");
    CHECK_CUDA(cudaGraphLaunch(x, s));
    CHECK_CUDA(cudaGraphExecDestroy(x));
    REQUIRE(count(0) == 0, "destroyed with the executable graph while its launch runs");
    CHECK_CUDA(cudaStreamSynchronize(s));
    await(0, "after the launch");

    // the program's and a graph's own references; a clone's
    o = object(1, 1);
    g = spin_graph(&ms);
    CHECK_CUDA(cudaGraphRetainUserObject(g, o, 2, 0)); /* 3 */
    CHECK_CUDA(cudaUserObjectRelease(o, 1));          /* 2: the graph's */
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphReleaseUserObject(g, o, 3));
    CHECK_CUDA(cudaGraphReleaseUserObject(g, o, 1)); /* 1 */
    CHECK_CUDA(cudaGraphClone(&c, g));               /* 2 */
    CHECK_CUDA(cudaGraphDestroy(g));
    REQUIRE(count(1) == 0, "destroyed while the clone holds it");
    CHECK_CUDA(cudaGraphDestroy(c));
    await(1, "after the clone");

    // a child graph's, held by the parent's executable graph
    c = spin_graph(&ms);
    CHECK_CUDA(cudaGraphRetainUserObject(c, object(2, 1), 1, cudaGraphUserObjectMove));
    CHECK_CUDA(cudaGraphCreate(&parent, 0));
    CHECK_CUDA(cudaGraphAddChildGraphNode(&child, parent, nullptr, 0, c));
    CHECK_CUDA(cudaGraphDestroy(c)); /* the node's copy holds it */
    CHECK_CUDA(cudaGraphInstantiate(&x, parent, 0));
    CHECK_CUDA(cudaGraphDestroy(parent));
    REQUIRE(count(2) == 0, "a child graph's destroyed while the parent's executable graph holds it");
    CHECK_CUDA(cudaGraphExecDestroy(x));
    await(2, "after the parent's executable graph");

    // a graph made by stream capture
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CHECK_CUDA(cudaMemsetAsync(dev, 1, 64, s));
    CHECK_CUDA(cudaStreamEndCapture(s, &captured));
    CHECK_CUDA(cudaGraphRetainUserObject(captured, object(3, 1), 1, cudaGraphUserObjectMove));
    CHECK_CUDA(cudaGraphInstantiate(&x, captured, 0));
    CHECK_CUDA(cudaGraphDestroy(captured));
    CHECK_CUDA(cudaGraphLaunch(x, s));
    CHECK_CUDA(cudaGraphExecDestroy(x));
    CHECK_CUDA(cudaStreamSynchronize(s));
    await(3, "a captured graph's");

    // CUDA's checks
    EXPECT_ERR(cudaErrorInvalidValue, cudaUserObjectCreate(&o, &destroyed[4], destroy, 1, 0));
    EXPECT_ERR(cudaErrorInvalidValue,
               cudaUserObjectCreate(&o, &destroyed[4], destroy, 0, cudaUserObjectNoDestructorSync));
    o = object(4, 1);
    g = spin_graph(&ms);
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphRetainUserObject(g, o, 1, 2));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphReleaseUserObject(g, o, 1)); /* holds none */
    cudaGetLastError();
    CHECK_CUDA(cudaGraphDestroy(g));
    CHECK_CUDA(cudaUserObjectRelease(o, 1));
    await(4, "the program's last reference");

    CHECK_CUDA(cudaFree(dev));
    CHECK_CUDA(cudaStreamDestroy(s));
    return pass();
}
