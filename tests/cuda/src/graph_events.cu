// Events in graphs: a graph built node by node whose event record node
// follows a kernel that spins ~20 ms (the host's cudaEventSynchronize on
// that event returns after the kernel), its event set in the graph and in
// the executable graph; a wait node that holds a graph until another
// stream's record (a kernel there writes a flag the graph's kernel reads);
// external records and waits in a stream capture (cudaEventRecordExternal,
// cudaEventWaitExternal). Output: what the host saw (the same on a GPU and a
// vGPU); times only as comparisons.
#include "check.cuh"

__global__ void spin_then_set(unsigned *flag, unsigned v)
{
    long long t0 = clock64();
    while (clock64() - t0 < 30000000)
        ;
    *flag = v;
}

__global__ void copy_flag(const unsigned *flag, unsigned *out)
{
    *out = *(volatile const unsigned *)flag;
}

// launches x on s after recording start there, waits for ev on the host:
// the flag then, and whether ev came over 1 ms after start
static unsigned launch_and_read(cudaGraphExec_t x, cudaStream_t s, cudaEvent_t start, cudaEvent_t ev,
                                const unsigned *flag, int *later)
{
    unsigned h = 0;

    CHECK_CUDA(cudaEventRecord(start, s));
    CHECK_CUDA(cudaGraphLaunch(x, s));
    CHECK_CUDA(cudaEventSynchronize(ev));
    CHECK_CUDA(cudaMemcpy(&h, flag, sizeof(h), cudaMemcpyDeviceToHost));
    *later = ms_between(start, ev) > 1.0f;
    return h;
}

int main(void)
{
    cudaStream_t s, s2;
    cudaEvent_t start, rec, rec2, gate;
    cudaGraph_t g, gw, cap;
    cudaGraphExec_t x, xw, xc;
    cudaGraphNode_t k, r, w, c;
    cudaGraphNodeType type;
    cudaEvent_t got = nullptr;
    unsigned *flag = nullptr, *out = nullptr, h = 0;
    int later = 0;

    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    for (cudaEvent_t *e : { &start, &rec, &rec2, &gate })
        CHECK_CUDA(cudaEventCreate(e));
    CHECK_CUDA(cudaMalloc(&flag, sizeof(unsigned)));
    CHECK_CUDA(cudaMalloc(&out, sizeof(unsigned)));
    CHECK_CUDA(cudaMemset(flag, 0, sizeof(unsigned)));
    CHECK_CUDA(cudaDeviceSynchronize());

    // built: spin_then_set(flag, 1) -> record(rec)
    CHECK_CUDA(cudaGraphCreate(&g, 0));
    unsigned one = 1;
    void *kargs[] = { &flag, &one };
    cudaKernelNodeParams kp = one_thread_node((void *)spin_then_set, kargs);
    CHECK_CUDA(cudaGraphAddKernelNode(&k, g, nullptr, 0, &kp));
    CHECK_CUDA(cudaGraphAddEventRecordNode(&r, g, &k, 1, rec));
    CHECK_CUDA(cudaGraphNodeGetType(r, &type));
    CHECK_CUDA(cudaGraphEventRecordNodeGetEvent(r, &got));
    printf("record node: type is EventRecord %d, event is the one given %d\n", type == cudaGraphNodeTypeEventRecord,
           got == rec);
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    for (int i = 0; i < 2; i++) {
        h = launch_and_read(x, s, start, rec, flag, &later);
        printf("launch %d: after the node's event the kernel had set the flag %u; rec after start %d\n", i, h,
               later);
        CHECK_CUDA(cudaMemset(flag, 0, sizeof(unsigned)));
        CHECK_CUDA(cudaDeviceSynchronize());
    }
    CHECK_CUDA(cudaGraphExecEventRecordNodeSetEvent(x, r, rec2));
    h = launch_and_read(x, s, start, rec2, flag, &later);
    CHECK_CUDA(cudaGraphEventRecordNodeGetEvent(r, &got));
    printf("exec node set to rec2: flag %u at rec2, rec2 after start %d, the graph's node still rec %d\n", h,
           later, got == rec);
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaGraphExecDestroy(x));
    CHECK_CUDA(cudaGraphDestroy(g));

    // a wait node: the graph's copy_flag waits for gate, recorded on s2
    // after spin_then_set(flag, 2) there
    CHECK_CUDA(cudaMemset(flag, 0, sizeof(unsigned)));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaGraphCreate(&gw, 0));
    CHECK_CUDA(cudaGraphAddEventWaitNode(&w, gw, nullptr, 0, gate));
    void *cargs[] = { &flag, &out };
    cudaKernelNodeParams cp = one_thread_node((void *)copy_flag, cargs);
    CHECK_CUDA(cudaGraphAddKernelNode(&c, gw, &w, 1, &cp));
    CHECK_CUDA(cudaGraphInstantiate(&xw, gw, 0));
    unsigned two = 2;
    spin_then_set<<<1, 1, 0, s2>>>(flag, two);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaEventRecord(gate, s2));
    CHECK_CUDA(cudaGraphLaunch(xw, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(&h, out, sizeof(h), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaGraphNodeGetType(w, &type));
    printf("wait node: type is WaitEvent %d, the graph's kernel read the flag %u\n", type == cudaGraphNodeTypeWaitEvent,
           h);
    CHECK_CUDA(cudaGraphExecDestroy(xw));
    CHECK_CUDA(cudaGraphDestroy(gw));

    // a capture: an external wait for gate, the spin, an external record
    CHECK_CUDA(cudaStreamSynchronize(s2));
    CHECK_CUDA(cudaMemset(flag, 0, sizeof(unsigned)));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_CUDA(cudaStreamWaitEvent(s, gate, cudaEventWaitExternal));
    unsigned three = 3;
    spin_then_set<<<1, 1, 0, s>>>(flag, three);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaEventRecordWithFlags(rec, s, cudaEventRecordExternal));
    copy_flag<<<1, 1, 0, s>>>(flag, out);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaStreamEndCapture(s, &cap));
    size_t n = 0;
    CHECK_CUDA(cudaGraphGetNodes(cap, nullptr, &n));
    CHECK_CUDA(cudaGraphInstantiate(&xc, cap, 0));
    h = launch_and_read(xc, s, start, rec, flag, &later);
    printf("capture: %zu nodes; at the external record the flag is %u; rec after start %d\n", n, h, later);
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaGraphExecDestroy(xc));
    CHECK_CUDA(cudaGraphDestroy(cap));

    for (cudaEvent_t e : { start, rec, rec2, gate })
        CHECK_CUDA(cudaEventDestroy(e));
    CHECK_CUDA(cudaFree(out));
    CHECK_CUDA(cudaFree(flag));
    printf("PASS\n");
    return 0;
}
