// Cross-thread event ordering: thread A writes a buffer and records an
// event; thread B makes its own stream wait on that event (and also
// synchronizes on it directly) before reading the buffer. Pairs on the same
// vGPU and on different vGPUs (run with MEARAS_VGPUS=2).
#include <atomic>
#include <thread>
#include <vector>
#include "sim_check.cuh"

struct Channel {
    std::atomic<int> recorded{-1}; // round whose event A has recorded
    std::atomic<int> consumed{-1}; // round B has finished reading
    cudaEvent_t ev;
    unsigned char *buf;
    size_t n;
    int dev_a, dev_b;
    std::atomic<int> failed{0};
};

static void producer(Channel *c, int rounds)
{
    if (cudaSetDevice(c->dev_a) != cudaSuccess) {
        c->failed = 1;
        return;
    }
    cudaStream_t s;
    unsigned char *pinned;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) || cudaMallocHost(&pinned, c->n)) {
        c->failed = 1;
        return;
    }
    for (int r = 0; r < rounds && !c->failed; r++) {
        while (c->consumed.load() != r - 1 && !c->failed)
            std::this_thread::yield();
        fill_pattern(pinned, c->n, (uint32_t)r * 7919u);
        // several pieces, so the event must come after all of them
        size_t quarter = c->n / 4;
        cudaError_t e = cudaMemsetAsync(c->buf, 0, c->n, s);
        for (int q = 0; q < 4 && !e; q++) {
            size_t off = quarter * q, len = q == 3 ? c->n - off : quarter;
            e = cudaMemcpyAsync(c->buf + off, pinned + off, len, cudaMemcpyHostToDevice, s);
        }
        if (!e)
            e = cudaEventRecord(c->ev, s);
        if (e) {
            std::printf("FAIL: producer round %d: %s\n", r, cudaGetErrorName(e));
            c->failed = 1;
            return;
        }
        c->recorded.store(r);
        // B reads asynchronously: wait until it is done before overwriting pinned
        while (c->consumed.load() != r && !c->failed)
            std::this_thread::yield();
    }
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
    cudaFreeHost(pinned);
}

static void consumer(Channel *c, int rounds)
{
    if (cudaSetDevice(c->dev_b) != cudaSuccess) {
        c->failed = 1;
        return;
    }
    cudaStream_t s;
    if (cudaStreamCreate(&s)) {
        c->failed = 1;
        return;
    }
    std::vector<unsigned char> out(c->n);
    for (int r = 0; r < rounds && !c->failed; r++) {
        while (c->recorded.load() != r && !c->failed)
            std::this_thread::yield();
        cudaError_t e;
        if (r % 2 == 0) {
            e = cudaStreamWaitEvent(s, c->ev, 0);
        } else {
            e = cudaEventSynchronize(c->ev);
            if (!e && cudaEventQuery(c->ev) != cudaSuccess)
                e = cudaErrorNotReady;
        }
        if (!e)
            e = cudaMemcpyAsync(out.data(), c->buf, c->n, cudaMemcpyDeviceToHost, s);
        if (!e)
            e = cudaStreamSynchronize(s);
        if (e) {
            std::printf("FAIL: consumer round %d: %s\n", r, cudaGetErrorName(e));
            c->failed = 1;
            return;
        }
        long long bad = check_pattern(out.data(), c->n, (uint32_t)r * 7919u);
        if (bad >= 0) {
            std::printf("FAIL: devices %d->%d round %d: byte %lld not ordered after the event\n", c->dev_a,
                        c->dev_b, r, bad);
            c->failed = 1;
            return;
        }
        c->consumed.store(r);
    }
    cudaStreamDestroy(s);
}

int main(void)
{
    int ndev = 0;
    CHECK_CUDA(cudaGetDeviceCount(&ndev));
    REQUIRE(ndev == 2, "run with MEARAS_VGPUS=2 (got %d devices)", ndev);
    const int pairs[][2] = {{0, 0}, {1, 1}, {0, 1}, {1, 0}};
    Channel ch[4];
    for (int i = 0; i < 4; i++) {
        ch[i].dev_a = pairs[i][0];
        ch[i].dev_b = pairs[i][1];
        ch[i].n = (1u << 20) + 3 * i + 1;
        CHECK_CUDA(cudaSetDevice(ch[i].dev_a));
        CHECK_CUDA(cudaMalloc(&ch[i].buf, ch[i].n));
        CHECK_CUDA(cudaEventCreate(&ch[i].ev));
    }
    std::vector<std::thread> t;
    for (int i = 0; i < 4; i++) {
        t.emplace_back(producer, &ch[i], 50);
        t.emplace_back(consumer, &ch[i], 50);
    }
    for (auto &th : t)
        th.join();
    for (int i = 0; i < 4; i++)
        REQUIRE(!ch[i].failed, "pair %d (devices %d->%d) failed", i, ch[i].dev_a, ch[i].dev_b);
    return pass();
}
