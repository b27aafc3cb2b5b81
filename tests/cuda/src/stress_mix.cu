// A stress mix, all at once: 8 host threads, each with two non-blocking
// streams joined by events both ways, copying from cudaHostRegister'ed
// malloc memory to the device and back into cudaHostAlloc'ed pinned memory,
// kernels between, a host function per round reading the round's result
// (cudaLaunchHostFunc) and a stream callback per round (cudaStreamAddCallback),
// a kernel adding into mapped host memory (cudaHostAllocMapped,
// cudaHostGetDevicePointer), events queried and synchronized on mid-run; then
// one stream waiting for the 8 threads' last events (fan-in). Every result is
// checked against a CPU reference; only checksums and counts are printed.
//
// The kernel that adds is named and shaped as the one kernel the sim device
// models (mearas_sim_add_u32 in host-backend/device/device_sim.c), so the same
// program runs on mearasd --device=sim in the CPU lane (tests/sim, tests/remote).
// On a GPU a second kernel (mix_u32, which does not commute with the add)
// also runs; the sim runs no other kernel, so there the add takes its place,
// the program says so in one line, and its checksums differ from a GPU's.
// The sim also runs host functions without holding their stream: there the
// program waits up to 10 s after the synchronize for them to have run; on a
// GPU they must all have run when cudaStreamSynchronize returns.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>
#include "check.cuh"

#define THREADS 8
#define ROUNDS 24
#define WORDS (64u * 1024u)  // per copy: 256 KiB
#define MAPPED_WORDS 1024u

extern "C" __global__ void mearas_sim_add_u32(unsigned *p, unsigned n, unsigned v)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] += v;
}

__host__ __device__ static inline unsigned mix(unsigned x, unsigned v)
{
    x ^= v;
    x *= 2654435761u;
    return x ^ (x >> 13);
}

__global__ void mix_u32(unsigned *p, unsigned n, unsigned v)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = mix(p[i], v);
}

static bool on_sim;

static unsigned fnv1a(const unsigned *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

struct worker;

struct round_arg {
    worker *w;
    int round;
};

struct worker {
    int id;
    unsigned *src;     // cudaHostRegister'ed malloc memory, ROUNDS * WORDS
    unsigned *dst;     // cudaHostAlloc'ed, ROUNDS * WORDS
    unsigned *mapped;  // cudaHostAllocMapped, MAPPED_WORDS
    unsigned host_sum[ROUNDS];  // checksums the host functions computed
    std::atomic<int> host_funcs{0};
    std::atomic<int> callbacks{0};
    std::atomic<int> callback_errors{0};
    round_arg args[ROUNDS];
    cudaEvent_t last;  // recorded after the thread's last round (fan-in)
    unsigned checksum = 0, mapped_sum = 0;
    int mid_checks = 0;
};

// v1, v2 of a round: what the two kernels add or mix in
static unsigned v1_of(int t, int r) { return 1000u * (unsigned)t + (unsigned)r + 1u; }
static unsigned v2_of(int t, int r) { return 0x9e3779b9u * (unsigned)(t * ROUNDS + r + 1); }
static unsigned src_of(int t, int r, unsigned i) { return (unsigned)t * 0x01000193u ^ ((unsigned)r << 20) ^ i * 2246822519u; }

static unsigned expect(int t, int r, unsigned i)
{
    unsigned x = src_of(t, r, i) + v1_of(t, r);
    return on_sim ? x + v2_of(t, r) : mix(x, v2_of(t, r));
}

static void CUDART_CB host_func(void *data)
{
    round_arg *a = (round_arg *)data;
    a->w->host_sum[a->round] = fnv1a(a->w->dst + (size_t)a->round * WORDS, WORDS);
    a->w->host_funcs.fetch_add(1);
}

static void CUDART_CB stream_callback(cudaStream_t, cudaError_t status, void *data)
{
    worker *w = (worker *)data;
    if (status != cudaSuccess)
        w->callback_errors.fetch_add(1);
    w->callbacks.fetch_add(1);
}

static void run(worker *w)
{
    const int t = w->id;
    const size_t bytes = (size_t)ROUNDS * WORDS * sizeof(unsigned);
    w->src = (unsigned *)std::aligned_alloc(4096, bytes);
    REQUIRE(w->src, "thread %d: malloc", t);
    for (int r = 0; r < ROUNDS; r++)
        for (unsigned i = 0; i < WORDS; i++)
            w->src[(size_t)r * WORDS + i] = src_of(t, r, i);
    CHECK_CUDA(cudaHostRegister(w->src, bytes, cudaHostRegisterDefault));
    CHECK_CUDA(cudaHostAlloc(&w->dst, bytes, cudaHostAllocDefault));
    std::memset(w->dst, 0, bytes);
    CHECK_CUDA(cudaHostAlloc(&w->mapped, MAPPED_WORDS * sizeof(unsigned), cudaHostAllocMapped));
    for (unsigned k = 0; k < MAPPED_WORDS; k++)
        w->mapped[k] = k * 7u + (unsigned)t;
    unsigned *mapped_dev;
    CHECK_CUDA(cudaHostGetDevicePointer(&mapped_dev, w->mapped, 0));
    unsigned *d;
    CHECK_CUDA(cudaMalloc(&d, WORDS * sizeof(unsigned)));
    cudaStream_t a = nonblocking_stream(), b = nonblocking_stream();
    cudaEvent_t ev_a, ev_b;
    CHECK_CUDA(cudaEventCreateWithFlags(&ev_a, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventCreate(&ev_b));
    CHECK_CUDA(cudaEventCreateWithFlags(&w->last, cudaEventDisableTiming));

    for (int r = 0; r < ROUNDS; r++) {
        unsigned *out = w->dst + (size_t)r * WORDS;
        w->args[r] = {w, r};
        // stream a: wait until b is done with d (the previous round), then
        // the registered source in, the first kernel
        CHECK_CUDA(cudaStreamWaitEvent(a, ev_b, 0));
        CHECK_CUDA(cudaMemcpyAsync(d, w->src + (size_t)r * WORDS, WORDS * sizeof(unsigned),
                                   cudaMemcpyHostToDevice, a));
        mearas_sim_add_u32<<<64, 256, 0, a>>>(d, WORDS, v1_of(t, r));
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaEventRecord(ev_a, a));
        CHECK_CUDA(cudaStreamAddCallback(a, stream_callback, w, 0));
        // stream b: after a's kernel, the second kernel, the result out to
        // pinned memory, a host function reading it, the mapped-memory kernel
        CHECK_CUDA(cudaStreamWaitEvent(b, ev_a, 0));
        if (on_sim)
            mearas_sim_add_u32<<<64, 256, 0, b>>>(d, WORDS, v2_of(t, r));
        else
            mix_u32<<<64, 256, 0, b>>>(d, WORDS, v2_of(t, r));
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaMemcpyAsync(out, d, WORDS * sizeof(unsigned), cudaMemcpyDeviceToHost, b));
        CHECK_CUDA(cudaLaunchHostFunc(b, host_func, &w->args[r]));
        mearas_sim_add_u32<<<4, 256, 0, b>>>(mapped_dev, MAPPED_WORDS, (unsigned)r + 1u);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaEventRecord(ev_b, b));
        cudaError_t q = cudaEventQuery(ev_b);
        REQUIRE(q == cudaSuccess || q == cudaErrorNotReady, "thread %d round %d: cudaEventQuery gave %s", t, r,
                cudaGetErrorName(q));
        if (r % 4 == 3) {
            // mid-run: the round's result is in pinned memory once its event is
            CHECK_CUDA(cudaEventSynchronize(ev_b));
            CHECK_CUDA(cudaEventQuery(ev_b));
            for (unsigned i = 0; i < WORDS; i++)
                REQUIRE(out[i] == expect(t, r, i), "thread %d round %d: word %u is %#x, expected %#x", t, r, i,
                        out[i], expect(t, r, i));
            w->mid_checks++;
        }
    }
    CHECK_CUDA(cudaEventRecord(w->last, b));
    CHECK_CUDA(cudaStreamSynchronize(b));
    CHECK_CUDA(cudaStreamSynchronize(a));
    if (on_sim) {
        for (int i = 0; i < 1000 && (w->host_funcs.load() < ROUNDS || w->callbacks.load() < ROUNDS); i++)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(w->host_funcs.load() == ROUNDS, "thread %d: %d host functions ran after the synchronize, expected %d", t,
            w->host_funcs.load(), ROUNDS);
    REQUIRE(w->callbacks.load() == ROUNDS && w->callback_errors.load() == 0,
            "thread %d: %d stream callbacks (%d with an error), expected %d", t, w->callbacks.load(),
            w->callback_errors.load(), ROUNDS);
    for (int r = 0; r < ROUNDS; r++) {
        const unsigned *out = w->dst + (size_t)r * WORDS;
        for (unsigned i = 0; i < WORDS; i++)
            REQUIRE(out[i] == expect(t, r, i), "thread %d round %d: word %u is %#x, expected %#x", t, r, i, out[i],
                    expect(t, r, i));
        REQUIRE(w->host_sum[r] == fnv1a(out, WORDS), "thread %d round %d: the host function saw %#x, not %#x", t,
                r, w->host_sum[r], fnv1a(out, WORDS));
        w->checksum = w->checksum * 31u + w->host_sum[r];
    }
    const unsigned added = ROUNDS * (ROUNDS + 1) / 2;
    for (unsigned k = 0; k < MAPPED_WORDS; k++)
        REQUIRE(w->mapped[k] == k * 7u + (unsigned)t + added, "thread %d: mapped word %u is %u, expected %u", t, k,
                w->mapped[k], k * 7u + (unsigned)t + added);
    w->mapped_sum = fnv1a(w->mapped, MAPPED_WORDS);
    CHECK_CUDA(cudaEventDestroy(ev_a));
    CHECK_CUDA(cudaEventDestroy(ev_b));
    CHECK_CUDA(cudaStreamDestroy(a));
    CHECK_CUDA(cudaStreamDestroy(b));
    CHECK_CUDA(cudaFree(d));
    CHECK_CUDA(cudaHostUnregister(w->src));
    std::free(w->src);
}

int main(void)
{
    cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    on_sim = std::strncmp(prop.name, "mearas-sim", 10) == 0;
    std::printf("stress_mix: %d threads x %d rounds, 2 streams each, %u words per copy\n", THREADS, ROUNDS, WORDS);
    if (on_sim)
        std::printf("kernels: the sim's add only (mix_u32 replaced by an add)\n");
    std::vector<worker> workers(THREADS);
    std::vector<std::thread> threads;
    for (int t = 0; t < THREADS; t++) {
        workers[t].id = t;
        threads.emplace_back(run, &workers[t]);
    }
    for (auto &th : threads)
        th.join();
    for (const worker &w : workers)
        std::printf("thread %d: %d rounds checked (%d mid-run), host functions %d, callbacks %d, checksum %08x, "
                    "mapped %08x\n",
                    w.id, ROUNDS, w.mid_checks, w.host_funcs.load(), w.callbacks.load(), w.checksum, w.mapped_sum);

    // fan-in: one stream waits for every thread's last event, then adds to
    // each thread's last result and brings it back
    cudaStream_t s = nonblocking_stream();
    unsigned *d;
    CHECK_CUDA(cudaMalloc(&d, (size_t)THREADS * WORDS * sizeof(unsigned)));
    unsigned *back;
    CHECK_CUDA(cudaHostAlloc(&back, (size_t)THREADS * WORDS * sizeof(unsigned), cudaHostAllocDefault));
    for (const worker &w : workers)
        CHECK_CUDA(cudaStreamWaitEvent(s, w.last, 0));
    for (int t = 0; t < THREADS; t++)
        CHECK_CUDA(cudaMemcpyAsync(d + (size_t)t * WORDS, workers[t].dst + (size_t)(ROUNDS - 1) * WORDS,
                                   WORDS * sizeof(unsigned), cudaMemcpyHostToDevice, s));
    mearas_sim_add_u32<<<64, 256, 0, s>>>(d, THREADS * WORDS, 5u);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpyAsync(back, d, (size_t)THREADS * WORDS * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    for (int t = 0; t < THREADS; t++)
        for (unsigned i = 0; i < WORDS; i++)
            REQUIRE(back[(size_t)t * WORDS + i] == expect(t, ROUNDS - 1, i) + 5u, "fan-in: thread %d word %u", t, i);
    std::printf("fan-in: %d events waited for, checksum %08x\n", THREADS, fnv1a(back, (size_t)THREADS * WORDS));
    for (const worker &w : workers) {
        CHECK_CUDA(cudaEventDestroy(w.last));
        FREE_HOST(w.dst, w.mapped);
    }
    CHECK_CUDA(cudaFreeHost(back));
    CHECK_CUDA(cudaFree(d));
    CHECK_CUDA(cudaStreamDestroy(s));
    return pass();
}
