// Events in graphs on the sim (built twice: mearas's shared runtime, and
// NVIDIA's static runtime over mearas's libcuda.so.1): event record and wait
// nodes of a graph built node by node, and external records and waits
// (cudaEventRecordExternal, cudaEventWaitExternal) in a stream capture. The
// sim's mearas_sim_spin keeps a stream busy for a time, so that what a node
// records or waits for shows in event times and in what the host waits for.
// Node queries, setting a node's event (in the graph and in an executable
// graph), and the refusals.
#include "sim_check.cuh"

extern "C" __global__ void mearas_sim_spin(unsigned ms)
{
    (void)ms;
}

int main(void)
{
    cudaStream_t s, s2;
    cudaEvent_t start, rec, rec2, gate, after;
    cudaGraph_t g, cap;
    cudaGraphExec_t x, xc;
    cudaGraphNode_t spin, r, w, m;
    cudaEvent_t got = nullptr;
    unsigned char h[64];
    cudaGraphNodeType type;
    void *dev = nullptr;
    void *args[1];
    unsigned ms = 30;

    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    for (cudaEvent_t *e : { &start, &rec, &rec2, &gate, &after })
        CHECK_CUDA(cudaEventCreate(e));
    CHECK_CUDA(cudaMalloc(&dev, 64));

    // a built graph: spin 30 ms, then record `rec`
    CHECK_CUDA(cudaGraphCreate(&g, 0));
    args[0] = &ms;
    cudaKernelNodeParams k = one_thread_node((void *)mearas_sim_spin, args);
    CHECK_CUDA(cudaGraphAddKernelNode(&spin, g, nullptr, 0, &k));
    CHECK_CUDA(cudaGraphAddEventRecordNode(&r, g, &spin, 1, rec));
    CHECK_CUDA(cudaGraphNodeGetType(r, &type));
    REQUIRE(type == cudaGraphNodeTypeEventRecord, "record node type %d", (int)type);
    CHECK_CUDA(cudaGraphEventRecordNodeGetEvent(r, &got));
    REQUIRE(got == rec, "the record node's event is not the one given");
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    for (int i = 0; i < 2; i++) {
        CHECK_CUDA(cudaEventRecord(start, s));
        CHECK_CUDA(cudaGraphLaunch(x, s));
        // the host waits for the node's record: the spin before it is done
        CHECK_CUDA(cudaEventSynchronize(rec));
        REQUIRE(ms_between(start, rec) >= 29.0f, "launch %d: rec %.2f ms after start, want >= 30", i,
                ms_between(start, rec));
    }
    // the node's event set in the executable graph: rec2 records now
    CHECK_CUDA(cudaGraphExecEventRecordNodeSetEvent(x, r, rec2));
    CHECK_CUDA(cudaEventRecord(start, s));
    CHECK_CUDA(cudaGraphLaunch(x, s));
    CHECK_CUDA(cudaEventSynchronize(rec2));
    REQUIRE(ms_between(start, rec2) >= 29.0f, "rec2 %.2f ms after start", ms_between(start, rec2));
    // ... and in the graph: the node there still names rec, then rec2
    CHECK_CUDA(cudaGraphEventRecordNodeGetEvent(r, &got));
    REQUIRE(got == rec, "setting the executable graph's node changed the graph's");
    CHECK_CUDA(cudaGraphEventRecordNodeSetEvent(r, rec2));
    CHECK_CUDA(cudaGraphEventRecordNodeGetEvent(r, &got));
    REQUIRE(got == rec2, "the graph's node did not take rec2");

    // a wait node: the graph waits for `gate`, recorded on s2 after 30 ms
    // of spinning there, then records `after`
    cudaGraph_t gw;
    CHECK_CUDA(cudaGraphCreate(&gw, 0));
    CHECK_CUDA(cudaGraphAddEventWaitNode(&w, gw, nullptr, 0, gate));
    CHECK_CUDA(cudaGraphNodeGetType(w, &type));
    REQUIRE(type == cudaGraphNodeTypeWaitEvent, "wait node type %d", (int)type);
    cudaMemsetParams mp = {};
    mp.dst = dev;
    mp.value = 7;
    mp.elementSize = 1;
    mp.width = 64;
    mp.height = 1;
    CHECK_CUDA(cudaGraphAddMemsetNode(&m, gw, &w, 1, &mp));
    CHECK_CUDA(cudaGraphAddEventRecordNode(&r, gw, &m, 1, after));
    cudaGraphExec_t xw;
    CHECK_CUDA(cudaGraphInstantiate(&xw, gw, 0));
    CHECK_CUDA(cudaEventRecord(start, s2));
    mearas_sim_spin<<<1, 1, 0, s2>>>(ms);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaEventRecord(gate, s2));
    CHECK_CUDA(cudaGraphLaunch(xw, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    REQUIRE(ms_between(start, after) >= 29.0f, "the graph ran %.2f ms after s2's start: it did not wait for gate",
            ms_between(start, after));
    CHECK_CUDA(cudaMemcpy(h, dev, 64, cudaMemcpyDeviceToHost));
    REQUIRE(h[0] == 7 && h[63] == 7, "the memset after the wait did not run");

    // a capture: spin, an external record, a memset; an external wait too
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_CUDA(cudaStreamWaitEvent(s, gate, cudaEventWaitExternal));
    mearas_sim_spin<<<1, 1, 0, s>>>(ms);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaEventRecordWithFlags(rec, s, cudaEventRecordExternal));
    CHECK_CUDA(cudaMemsetAsync(dev, 1, 64, s));
    CHECK_CUDA(cudaStreamEndCapture(s, &cap));
    size_t n = 0;
    CHECK_CUDA(cudaGraphGetNodes(cap, nullptr, &n));
    REQUIRE(n == 4, "the capture has %zu nodes, want 4 (wait, kernel, record, memset)", n);
    CHECK_CUDA(cudaGraphInstantiate(&xc, cap, 0));
    CHECK_CUDA(cudaEventRecord(start, s));
    CHECK_CUDA(cudaGraphLaunch(xc, s));
    CHECK_CUDA(cudaEventSynchronize(rec));
    REQUIRE(ms_between(start, rec) >= 29.0f, "captured external record %.2f ms after start", ms_between(start, rec));
    CHECK_CUDA(cudaStreamSynchronize(s));

    // refusals: no event, a flag that is not one
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphAddEventRecordNode(&r, g, nullptr, 0, nullptr));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphAddEventWaitNode(&r, g, nullptr, 0, (cudaEvent_t)&h));
    EXPECT_ERR(cudaErrorInvalidValue, cudaEventRecordWithFlags(rec, s, 2));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGraphEventWaitNodeGetEvent(spin, &got));
    cudaGetLastError();

    CHECK_CUDA(cudaGraphExecDestroy(xc));
    CHECK_CUDA(cudaGraphExecDestroy(xw));
    CHECK_CUDA(cudaGraphExecDestroy(x));
    CHECK_CUDA(cudaGraphDestroy(cap));
    CHECK_CUDA(cudaGraphDestroy(gw));
    CHECK_CUDA(cudaGraphDestroy(g));
    for (cudaEvent_t e : { start, rec, rec2, gate, after })
        CHECK_CUDA(cudaEventDestroy(e));
    CHECK_CUDA(cudaFree(dev));
    pass();
    return 0;
}
