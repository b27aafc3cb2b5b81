// Graph memory on the sim, one behaviour per mode (graph_mem MODE):
//   capture   cudaMallocAsync / cudaFreeAsync on a capturing stream: alloc
//             and free nodes of the graph (counted), the memory there at
//             every launch of its instantiation after the graph is gone,
//             given back when the instantiation goes
//   nodes     cudaGraphAddMemAllocNode / AddMemFreeNode: the address fixed
//             when added, a memset and a copy through it at each launch,
//             the parameters read back, bad frees refused
//   outlive   memory a graph allocates and does not free stays the
//             program's: cudaFree while an instantiation holds it defers
//             the free (launches still find it), a second free is refused
//   attrs     cudaDeviceGet/SetGraphMemAttribute: what graphs hold, the high
//             watermark and its reset, refusals; cudaDeviceGraphMemTrim
#include <cstring>

#include "sim_check.cuh"

#define N 4096

static uint64_t used_now(void)
{
    uint64_t v = 1;

    CHECK_CUDA(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &v));
    return v;
}

static void run_checked(cudaGraphExec_t x, cudaStream_t s, unsigned char *pinned, int value, const char *what)
{
    for (int l = 0; l < 3; l++) {
        memset(pinned, 0, N);
        CHECK_CUDA(cudaGraphLaunch(x, s));
        CHECK_CUDA(cudaStreamSynchronize(s));
        for (int i = 0; i < N; i++)
            REQUIRE(pinned[i] == value, "%s: launch %d byte %d is %d, expected %d", what, l, i, pinned[i], value);
    }
}

static void capture(cudaStream_t s, unsigned char *pinned)
{
    cudaGraph_t g;
    cudaGraphExec_t x;
    void *d = nullptr;
    size_t nodes = 0;

    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_CUDA(cudaMallocAsync(&d, N, s));
    REQUIRE(d != nullptr, "no address from a captured cudaMallocAsync");
    CHECK_CUDA(cudaMemsetAsync(d, 0x3c, N, s));
    CHECK_CUDA(cudaMemcpyAsync(pinned, d, N, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaFreeAsync(d, s));
    CHECK_CUDA(cudaStreamEndCapture(s, &g));
    CHECK_CUDA(cudaGraphGetNodes(g, nullptr, &nodes));
    REQUIRE(nodes == 4, "captured %zu nodes, expected 4 (alloc, memset, copy, free)", nodes);
    REQUIRE(used_now() == N, "graphs hold %llu bytes, expected %d", (unsigned long long)used_now(), N);
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    CHECK_CUDA(cudaGraphDestroy(g));
    run_checked(x, s, pinned, 0x3c, "captured");
    CHECK_CUDA(cudaGraphExecDestroy(x));
    REQUIRE(used_now() == 0, "%llu bytes held after the graph and its instantiation are gone",
            (unsigned long long)used_now());
    /* outside a capture: an ordinary stream-ordered allocation */
    CHECK_CUDA(cudaMallocAsync(&d, N, s));
    REQUIRE(used_now() == 0, "an allocation outside a capture counted as graph memory");
    CHECK_CUDA(cudaFreeAsync(d, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
}

static void nodes(cudaStream_t s, unsigned char *pinned)
{
    cudaGraph_t g;
    cudaGraphExec_t x;
    cudaGraphNode_t a, m, c, f, bad;
    cudaMemAllocNodeParams ap = {}, back = {};
    cudaMemsetParams sp = {};
    void *freed = nullptr, *plain;

    CHECK_CUDA(cudaGraphCreate(&g, 0));
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.poolProps.location.id = 0;
    ap.bytesize = N;
    CHECK_CUDA(cudaGraphAddMemAllocNode(&a, g, nullptr, 0, &ap));
    REQUIRE(ap.dptr != nullptr, "the alloc node gave no address");
    sp.dst = ap.dptr;
    sp.value = 0x5d;
    sp.elementSize = 1;
    sp.width = N;
    sp.height = 1;
    CHECK_CUDA(cudaGraphAddMemsetNode(&m, g, &a, 1, &sp));
    CHECK_CUDA(cudaGraphAddMemcpyNode1D(&c, g, &m, 1, pinned, ap.dptr, N, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaGraphAddMemFreeNode(&f, g, &c, 1, ap.dptr));
    /* read back */
    CHECK_CUDA(cudaGraphMemAllocNodeGetParams(a, &back));
    REQUIRE(back.dptr == ap.dptr && back.bytesize == N && back.poolProps.location.id == 0 &&
                back.poolProps.allocType == cudaMemAllocationTypePinned,
            "alloc node params read back: %p %zu dev %d", back.dptr, back.bytesize, back.poolProps.location.id);
    CHECK_CUDA(cudaGraphMemFreeNodeGetParams(f, &freed));
    REQUIRE(freed == ap.dptr, "free node frees %p, expected %p", freed, ap.dptr);
    /* refused: freed twice, not graph memory, no size, wrong node kinds */
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphAddMemFreeNode(&bad, g, &f, 1, ap.dptr));
    CHECK_CUDA(cudaMalloc(&plain, N));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphAddMemFreeNode(&bad, g, nullptr, 0, plain));
    ap.bytesize = 0;
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphAddMemAllocNode(&bad, g, nullptr, 0, &ap));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphMemAllocNodeGetParams(f, &back));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphMemFreeNodeGetParams(a, &freed));
    cudaGetLastError();
    CHECK_CUDA(cudaFree(plain));
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    CHECK_CUDA(cudaGraphDestroy(g));
    run_checked(x, s, pinned, 0x5d, "alloc node");
    CHECK_CUDA(cudaGraphExecDestroy(x));
    REQUIRE(used_now() == 0, "%llu bytes held after the graph is gone", (unsigned long long)used_now());
}

static void outlive(cudaStream_t s, unsigned char *pinned)
{
    cudaGraph_t g;
    cudaGraphExec_t x;
    void *d = nullptr;

    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_CUDA(cudaMallocAsync(&d, N, s));
    CHECK_CUDA(cudaMemsetAsync(d, 0x71, N, s));
    CHECK_CUDA(cudaMemcpyAsync(pinned, d, N, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamEndCapture(s, &g));
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    CHECK_CUDA(cudaGraphDestroy(g));
    run_checked(x, s, pinned, 0x71, "before the program's free");
    CHECK_CUDA(cudaFree(d)); /* the instantiation still holds it */
    EXPECT_ERR(cudaErrorInvalidValue, cudaFree(d));
    cudaGetLastError();
    run_checked(x, s, pinned, 0x71, "after the program's free");
    CHECK_CUDA(cudaGraphExecDestroy(x));
    REQUIRE(used_now() == 0, "%llu bytes held", (unsigned long long)used_now());
    EXPECT_ERR(cudaErrorInvalidValue, cudaFree(d)); /* gone with its holder */
    cudaGetLastError();

    /* not freed by anyone: the program's once the graph is gone */
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_CUDA(cudaMallocAsync(&d, N, s));
    CHECK_CUDA(cudaMemsetAsync(d, 0x12, N, s));
    CHECK_CUDA(cudaStreamEndCapture(s, &g));
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    CHECK_CUDA(cudaGraphLaunch(x, s));
    CHECK_CUDA(cudaGraphExecDestroy(x));
    CHECK_CUDA(cudaGraphDestroy(g));
    CHECK_CUDA(cudaMemcpy(pinned, d, N, cudaMemcpyDeviceToHost));
    REQUIRE(pinned[N - 1] == 0x12, "graph memory after its graph: byte %d", pinned[N - 1]);
    CHECK_CUDA(cudaFree(d));
}

static void attrs(cudaStream_t s, unsigned char *pinned)
{
    cudaGraph_t g1, g2;
    cudaGraphNode_t a;
    cudaMemAllocNodeParams ap = {};
    uint64_t v = 0;

    (void)s, (void)pinned;
    REQUIRE(used_now() == 0, "graphs hold %llu bytes before any", (unsigned long long)used_now());
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.bytesize = 3 * N;
    CHECK_CUDA(cudaGraphCreate(&g1, 0));
    CHECK_CUDA(cudaGraphAddMemAllocNode(&a, g1, nullptr, 0, &ap));
    CHECK_CUDA(cudaGraphClone(&g2, g1)); /* the clone holds the same memory */
    ap.bytesize = N;
    CHECK_CUDA(cudaGraphAddMemAllocNode(&a, g2, nullptr, 0, &ap));
    REQUIRE(used_now() == 4 * N, "graphs hold %llu bytes, expected %d", (unsigned long long)used_now(), 4 * N);
    CHECK_CUDA(cudaGraphDestroy(g1));
    REQUIRE(used_now() == 4 * N, "the clone's memory went with the original");
    CHECK_CUDA(cudaDeviceGraphMemTrim(0));
    CHECK_CUDA(cudaGraphDestroy(g2));
    CHECK_CUDA(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &v));
    REQUIRE(v == 4 * N, "high watermark %llu, expected %d", (unsigned long long)v, 4 * N);
    REQUIRE(used_now() == 0, "graphs hold %llu bytes after all are gone", (unsigned long long)used_now());
    v = 0;
    CHECK_CUDA(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &v));
    CHECK_CUDA(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &v));
    REQUIRE(v == 0, "high watermark after its reset: %llu", (unsigned long long)v);
    v = 5;
    EXPECT_ERR(cudaErrorInvalidValue, cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &v));
    v = 0;
    EXPECT_ERR(cudaErrorInvalidValue, cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &v));
    EXPECT_ERR(cudaErrorInvalidValue, cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, nullptr));
    EXPECT_ERR(cudaErrorInvalidDevice, cudaDeviceGetGraphMemAttribute(7, cudaGraphMemAttrUsedMemCurrent, &v));
    cudaGetLastError();
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    void (*run)(cudaStream_t, unsigned char *) = !strcmp(mode, "capture") ? capture
                                                : !strcmp(mode, "nodes")  ? nodes
                                                : !strcmp(mode, "outlive") ? outlive
                                                : !strcmp(mode, "attrs")  ? attrs
                                                                          : nullptr;
    cudaStream_t s;
    unsigned char *pinned;

    REQUIRE(run, "usage: graph_mem capture|nodes|outlive|attrs");
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMallocHost(&pinned, N));
    run(s, pinned);
    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFreeHost(pinned));
    return pass();
}
