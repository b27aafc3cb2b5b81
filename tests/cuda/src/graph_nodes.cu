// Builds a graph node by node (no capture): a memset, two kernels on the
// two halves of a buffer after it (a diamond), a scaling kernel after both,
// a child graph with a kernel of its own, a copy to pinned memory and a host
// node; launches it 5 times, then changes a kernel's parameters in the
// executable graph, then updates the executable graph from a second graph of
// the same topology (cudaGraphExecUpdate), checking every launch on the host.
// Then a graph of memcpy nodes to and from a __device__ symbol around a kernel
// that scales it.
#include "check.cuh"
#include "int_kernels.cuh"

#define N 4096
#define HALF (N / 2)

__global__ void scale(int *x, int n, int f)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= f;
}

static int host_runs;

static void CUDART_CB count_run(void *)
{
    host_runs++;
}

struct params {
    int *dev, *other, *host;
    int n, half, c, f, child_c;
};

static cudaKernelNodeParams kernel(void *fn, void **args, int n)
{
    cudaKernelNodeParams k = {};
    k.func = fn;
    k.gridDim = dim3((n + 255) / 256);
    k.blockDim = dim3(256);
    k.kernelParams = args;
    return k;
}

/* memset -> {add_const first half, add_index second half} -> scale -> child(add_const other) -> copy -> host */
static cudaGraph_t build(params *p, cudaGraphNode_t *first_half)
{
    cudaGraph_t g, child;
    cudaGraphNode_t set, a, b, sc, ch, cp, h, ab[2], cn;
    cudaMemsetParams m = {};
    int *second = p->dev + HALF;
    void *a_args[] = {&p->dev, &p->half, &p->c};
    void *b_args[] = {&second, &p->half};
    void *s_args[] = {&p->dev, &p->n, &p->f};
    void *c_args[] = {&p->other, &p->n, &p->child_c};
    cudaKernelNodeParams k;
    cudaHostNodeParams hp = {count_run, nullptr};

    CHECK_CUDA(cudaGraphCreate(&g, 0));
    m.dst = p->dev;
    m.value = 0;
    m.elementSize = 4;
    m.width = N;
    m.height = 1;
    CHECK_CUDA(cudaGraphAddMemsetNode(&set, g, nullptr, 0, &m));
    k = kernel((void *)add_const, a_args, HALF);
    CHECK_CUDA(cudaGraphAddKernelNode(&a, g, &set, 1, &k));
    k = kernel((void *)add_index, b_args, HALF);
    CHECK_CUDA(cudaGraphAddKernelNode(&b, g, &set, 1, &k));
    ab[0] = a;
    ab[1] = b;
    k = kernel((void *)scale, s_args, N);
    CHECK_CUDA(cudaGraphAddKernelNode(&sc, g, ab, 2, &k));
    CHECK_CUDA(cudaGraphCreate(&child, 0));
    k = kernel((void *)add_const, c_args, N);
    CHECK_CUDA(cudaGraphAddKernelNode(&cn, child, nullptr, 0, &k));
    CHECK_CUDA(cudaGraphAddChildGraphNode(&ch, g, &sc, 1, child));
    CHECK_CUDA(cudaGraphDestroy(child));
    CHECK_CUDA(cudaGraphAddMemcpyNode1D(&cp, g, &ch, 1, p->host, p->dev, N * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaGraphAddHostNode(&h, g, &cp, 1, &hp));
    *first_half = a;
    return g;
}

/* host holds the scaled diamond; other gained child_c at each launch */
static long long check(const params *p, int *other_host, int launches_of_other, int other_sum_c)
{
    long long sum = 0;

    for (int i = 0; i < N; i++) {
        int want = (i < HALF ? p->c : i - HALF) * p->f;
        REQUIRE(p->host[i] == want, "element %d: %d expected %d", i, p->host[i], want);
        sum += p->host[i];
    }
    CHECK_CUDA(cudaMemcpy(other_host, p->other, N * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++)
        REQUIRE(other_host[i] == other_sum_c, "child: element %d is %d, expected %d after %d launches", i,
                other_host[i], other_sum_c, launches_of_other);
    return sum;
}

#define SYM_N 256

__device__ int table[SYM_N];

/* pinned in -> table (ToSymbol), table *= 3, table[64, 192) -> pinned out
 * (FromSymbol at an offset) */
static void symbol_nodes(cudaStream_t s)
{
    int *in, *out, *dtable;
    int n = SYM_N, f = 3;
    cudaGraph_t g;
    cudaGraphExec_t x;
    cudaGraphNode_t to, k, from;
    void *args[] = { &dtable, &n, &f };

    CHECK_CUDA(cudaMallocHost(&in, SYM_N * sizeof(int)));
    CHECK_CUDA(cudaMallocHost(&out, SYM_N * sizeof(int)));
    for (int i = 0; i < SYM_N; i++)
        in[i] = i * 7 - 100;
    CHECK_CUDA(cudaGetSymbolAddress((void **)&dtable, table));
    cudaKernelNodeParams kp = kernel((void *)scale, args, SYM_N);
    CHECK_CUDA(cudaGraphCreate(&g, 0));
    CHECK_CUDA(cudaGraphAddMemcpyNodeToSymbol(&to, g, nullptr, 0, table, in, SYM_N * sizeof(int), 0,
                                              cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaGraphAddKernelNode(&k, g, &to, 1, &kp));
    CHECK_CUDA(cudaGraphAddMemcpyNodeFromSymbol(&from, g, &k, 1, out, table, 128 * sizeof(int), 64 * sizeof(int),
                                                cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    CHECK_CUDA(cudaGraphLaunch(x, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    long long sum = 0;
    for (int i = 0; i < 128; i++) {
        REQUIRE(out[i] == in[64 + i] * 3, "symbol word %d: %d, expected %d", 64 + i, out[i], in[64 + i] * 3);
        sum += out[i];
    }
    std::printf("symbol memcpy nodes: sum=%lld\n", sum);
    CHECK_CUDA(cudaGraphExecDestroy(x));
    CHECK_CUDA(cudaGraphDestroy(g));
    CHECK_CUDA(cudaFreeHost(in));
    CHECK_CUDA(cudaFreeHost(out));
}

int main(void)
{
    params p = {}, q;
    cudaStream_t s;
    cudaGraph_t g, g2;
    cudaGraphNode_t a, a2;
    cudaGraphExec_t exec;
    cudaGraphExecUpdateResultInfo info;
    static int other_host[N];
    int other = 0, launches = 0;
    size_t nodes = 0;

    CHECK_CUDA(cudaMalloc(&p.dev, N * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&p.other, N * sizeof(int)));
    CHECK_CUDA(cudaMemset(p.other, 0, N * sizeof(int)));
    CHECK_CUDA(cudaMallocHost(&p.host, N * sizeof(int)));
    s = nonblocking_stream();
    p.n = N;
    p.half = HALF;
    p.c = 3;
    p.f = 2;
    p.child_c = 1;
    g = build(&p, &a);
    p.c = 1000; /* the nodes hold copies: no effect */
    CHECK_CUDA(cudaGraphGetNodes(g, nullptr, &nodes));
    std::printf("nodes=%zu\n", nodes);
    REQUIRE(nodes == 7, "expected 7 nodes, got %zu", nodes);
    p.c = 3;
    CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
    for (int l = 1; l <= 5; l++) {
        CHECK_CUDA(cudaGraphLaunch(exec, s));
        CHECK_CUDA(cudaStreamSynchronize(s));
        other += p.child_c;
        launches++;
        std::printf("launch %d sum=%lld\n", l, check(&p, other_host, launches, other));
    }

    /* a kernel's parameters changed in the executable graph only */
    {
        int c = 5;
        void *args[] = {&p.dev, &p.half, &c};
        cudaKernelNodeParams k = kernel((void *)add_const, args, HALF);
        CHECK_CUDA(cudaGraphExecKernelNodeSetParams(exec, a, &k));
        CHECK_CUDA(cudaGraphLaunch(exec, s));
        CHECK_CUDA(cudaStreamSynchronize(s));
        p.c = 5;
        other += p.child_c;
        launches++;
        std::printf("after exec kernel update sum=%lld\n", check(&p, other_host, launches, other));
    }

    /* the same topology with other parameters: the update takes them */
    q = p;
    q.c = 7;
    q.f = 3;
    q.child_c = 10;
    g2 = build(&q, &a2);
    CHECK_CUDA(cudaGraphExecUpdate(exec, g2, &info));
    REQUIRE(info.result == cudaGraphExecUpdateSuccess, "update result %d", (int)info.result);
    CHECK_CUDA(cudaGraphLaunch(exec, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    other += q.child_c;
    launches++;
    std::printf("after cudaGraphExecUpdate sum=%lld\n", check(&q, other_host, launches, other));
    REQUIRE(host_runs == launches, "host node ran %d times in %d launches", host_runs, launches);
    std::printf("host node runs=%d\n", host_runs);
    symbol_nodes(s);

    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(g2));
    CHECK_CUDA(cudaGraphDestroy(g));
    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFreeHost(p.host));
    FREE_DEVICE(p.other, p.dev);
    return pass();
}
