// Memcpy nodes to and from a __device__ symbol (cudaGraphAddMemcpyNodeToSymbol
// and FromSymbol, their SetParams and ExecSetParams; built twice: mearas's
// shared runtime, and NVIDIA's static runtime, which makes them plain memcpy
// nodes through mearas's libcuda.so.1). Pinned host memory in, the symbol,
// pinned host memory out, at offsets; new parameters in the graph (a new
// instantiation sees them) and in the executable graph; refusals.
#include "sim_check.cuh"

#define WORDS 64

__device__ unsigned sym[WORDS];

static unsigned *in, *in2, *out;
static cudaStream_t stream;

static void fill(unsigned *p, unsigned base)
{
    for (unsigned i = 0; i < WORDS; i++)
        p[i] = base + i;
}

static void launch(cudaGraphExec_t x)
{
    std::memset(out, 0, WORDS * sizeof(unsigned));
    CHECK_CUDA(cudaGraphLaunch(x, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
}

// out[0, n) holds want[from, from + n)
static void expect(const unsigned *want, unsigned from, unsigned n, const char *what)
{
    for (unsigned i = 0; i < n; i++)
        REQUIRE(out[i] == want[from + i], "%s: word %u is %u, want %u", what, i, out[i], want[from + i]);
}

int main(void)
{
    cudaGraph_t g;
    cudaGraphExec_t x, x2;
    cudaGraphNode_t to, from;
    unsigned pageable[WORDS];

    CHECK_CUDA(cudaMallocHost(&in, WORDS * sizeof(unsigned)));
    CHECK_CUDA(cudaMallocHost(&in2, WORDS * sizeof(unsigned)));
    CHECK_CUDA(cudaMallocHost(&out, WORDS * sizeof(unsigned)));
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    fill(in, 1000);
    fill(in2, 5000);

    // the whole symbol in, 32 words from word 16 out
    CHECK_CUDA(cudaGraphCreate(&g, 0));
    CHECK_CUDA(cudaGraphAddMemcpyNodeToSymbol(&to, g, nullptr, 0, sym, in, WORDS * sizeof(unsigned), 0,
                                              cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaGraphAddMemcpyNodeFromSymbol(&from, g, &to, 1, out, sym, 32 * sizeof(unsigned),
                                                16 * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    launch(x);
    expect(in, 16, 32, "to the symbol, then 32 words from word 16");

    // new parameters in the graph: in2's first 8 words to word 8; a new
    // instantiation copies them, the old one not
    CHECK_CUDA(cudaGraphMemcpyNodeSetParamsToSymbol(to, sym, in2, 8 * sizeof(unsigned), 8 * sizeof(unsigned),
                                                    cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaGraphMemcpyNodeSetParamsFromSymbol(from, out, sym, 16 * sizeof(unsigned), 0,
                                                      cudaMemcpyDeviceToHost));
    launch(x);
    expect(in, 16, 32, "the old instantiation");
    CHECK_CUDA(cudaGraphInstantiate(&x2, g, 0));
    launch(x2);
    expect(in, 0, 8, "the new instantiation, words 0-7");
    for (unsigned i = 8; i < 16; i++)
        REQUIRE(out[i] == in2[i - 8], "the new instantiation: word %u is %u, want %u", i, out[i], in2[i - 8]);

    // in the executable graph only: the whole symbol from in2, all of it out
    CHECK_CUDA(cudaGraphExecMemcpyNodeSetParamsToSymbol(x2, to, sym, in2, WORDS * sizeof(unsigned), 0,
                                                        cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaGraphExecMemcpyNodeSetParamsFromSymbol(x2, from, out, sym, WORDS * sizeof(unsigned), 0,
                                                          cudaMemcpyDeviceToHost));
    launch(x2);
    expect(in2, 0, WORDS, "the executable graph's new parameters");

    // past the symbol's end, the wrong direction, pageable memory
    cudaGraphNode_t bad;
    EXPECT_ERR(cudaErrorInvalidValue,
               cudaGraphAddMemcpyNodeToSymbol(&bad, g, nullptr, 0, sym, in, 8 * sizeof(unsigned),
                                              (WORDS - 4) * sizeof(unsigned), cudaMemcpyHostToDevice));
    EXPECT_ERR(cudaErrorInvalidMemcpyDirection,
               cudaGraphAddMemcpyNodeToSymbol(&bad, g, nullptr, 0, sym, in, 4, 0, cudaMemcpyDeviceToHost));
    EXPECT_ERR(cudaErrorInvalidMemcpyDirection,
               cudaGraphMemcpyNodeSetParamsFromSymbol(from, out, sym, 4, 0, cudaMemcpyHostToDevice));
    EXPECT_ERR(cudaErrorNotSupported,
               cudaGraphAddMemcpyNodeToSymbol(&bad, g, nullptr, 0, sym, pageable, 4, 0, cudaMemcpyHostToDevice));
    cudaGetLastError();

    for (cudaGraphExec_t e : { x, x2 })
        CHECK_CUDA(cudaGraphExecDestroy(e));
    CHECK_CUDA(cudaGraphDestroy(g));
    CHECK_CUDA(cudaStreamDestroy(stream));
    for (unsigned *p : { in, in2, out })
        CHECK_CUDA(cudaFreeHost(p));
    return pass();
}
