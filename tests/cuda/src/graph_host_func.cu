// A host function captured into a graph runs at every launch, in stream
// order: the graph's copies before it are done when it runs, the copies
// after it wait for it. The graph is destroyed after instantiation (the
// executable graph keeps running its host function), then launched 20 times.
// Graph: kernel dev+=1 -> D2H dev->count -> host fn (val = count*10, runs++)
//        -> H2D val->dev2 -> D2H dev2->out
#include "check.cuh"

#define LAUNCHES 20

struct host_state {
    volatile int *count;   // pinned: the kernel's result, copied before the host function
    volatile int *val;     // pinned: written by the host function, copied after it
    int runs;
    int bad;               // runs that saw a count out of order
};

__global__ void add_one(int *x)
{
    *x += 1;
}

static void CUDART_CB host_fn(void *arg)
{
    host_state *s = (host_state *)arg;
    s->runs++;
    if (*s->count != s->runs)
        s->bad++;
    *s->val = *s->count * 10;
}

int main(void)
{
    int *dev, *dev2, *pinned;
    host_state st = {};
    cudaStream_t stream;
    cudaGraph_t graph;
    cudaGraphExec_t exec;

    CHECK_CUDA(cudaMalloc(&dev, sizeof(int)));
    CHECK_CUDA(cudaMalloc(&dev2, sizeof(int)));
    CHECK_CUDA(cudaMemset(dev, 0, sizeof(int)));
    CHECK_CUDA(cudaMallocHost(&pinned, 3 * sizeof(int)));
    pinned[0] = pinned[1] = pinned[2] = -1;
    st.count = pinned;
    st.val = pinned + 1;
    stream = nonblocking_stream();

    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    add_one<<<1, 1, 0, stream>>>(dev);
    CHECK_CUDA(cudaMemcpyAsync(pinned, dev, sizeof(int), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaLaunchHostFunc(stream, host_fn, &st));
    CHECK_CUDA(cudaMemcpyAsync(dev2, pinned + 1, sizeof(int), cudaMemcpyHostToDevice, stream));
    CHECK_CUDA(cudaMemcpyAsync(pinned + 2, dev2, sizeof(int), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    size_t nodes = 0;
    CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
    std::printf("captured nodes=%zu\n", nodes);
    REQUIRE(nodes == 5, "expected 5 nodes, got %zu", nodes);
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CHECK_CUDA(cudaGraphDestroy(graph));

    for (int l = 1; l <= LAUNCHES; l++) {
        CHECK_CUDA(cudaGraphLaunch(exec, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        REQUIRE(st.runs == l, "launch %d: the host function ran %d times", l, st.runs);
        REQUIRE(pinned[2] == l * 10, "launch %d: the copy after the host function read %d, expected %d", l,
                pinned[2], l * 10);
    }
    std::printf("launches=%d host function runs=%d out of order=%d last=%d\n", LAUNCHES, st.runs, st.bad,
                pinned[2]);
    REQUIRE(st.bad == 0, "%d runs saw the kernel's count out of order", st.bad);
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaStreamDestroy(stream));
    CHECK_CUDA(cudaFreeHost(pinned));
    FREE_DEVICE(dev2, dev);
    return pass();
}
