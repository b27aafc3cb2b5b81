// 8 host threads over the vGPUs (run with MEARAS_VGPUS=2), each with its own
// streams, doing many rounds of memset/copy/launch/event/synchronize with
// data verification.
#include <atomic>
#include <thread>
#include <vector>
#include "sim_check.cuh"

__global__ void k_touch(unsigned char *p, int n, int round)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] ^= (unsigned char)round;
}

static std::atomic<int> failures{0};

#define T_CHECK(call)                                                                    \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        if (e_ != cudaSuccess) {                                                         \
            std::printf("FAIL: thread %d round %d: %s -> %s\n", id, round, #call,         \
                        cudaGetErrorName(e_));                                           \
            failures++;                                                                  \
            return;                                                                      \
        }                                                                                \
    } while (0)

static void worker(int id, int ndev, int rounds)
{
    int round = -1;
    const int dev = id % ndev;
    T_CHECK(cudaSetDevice(dev));
    const size_t n = 65536 + 4096 * id + 7;
    cudaStream_t s[2];
    T_CHECK(cudaStreamCreateWithFlags(&s[0], cudaStreamNonBlocking));
    T_CHECK(cudaStreamCreate(&s[1]));
    cudaEvent_t ev;
    T_CHECK(cudaEventCreate(&ev));
    unsigned char *d, *d2, *pinned;
    T_CHECK(cudaMalloc(&d, n));
    T_CHECK(cudaMalloc(&d2, n));
    T_CHECK(cudaMallocHost(&pinned, n));
    std::vector<unsigned char> page(n), want(n);
    for (round = 0; round < rounds; round++) {
        cudaStream_t a = s[round & 1], b = s[(round + 1) & 1];
        uint32_t seed = (uint32_t)(id * 100000 + round);
        fill_pattern(pinned, n, seed);
        fill_pattern(want.data(), n, seed);
        T_CHECK(cudaMemsetAsync(d, 0xFF, n, a));
        T_CHECK(cudaMemcpyAsync(d, pinned, n - 3, cudaMemcpyHostToDevice, a));
        k_touch<<<(unsigned)((n + 255) / 256), 256, 0, a>>>(d2, (int)n, round);
        T_CHECK(cudaGetLastError());
        T_CHECK(cudaEventRecord(ev, a));
        // stream b continues after a's work, through the event
        T_CHECK(cudaStreamWaitEvent(b, ev, 0));
        T_CHECK(cudaMemcpyAsync(d2, d, n, cudaMemcpyDeviceToDevice, b));
        T_CHECK(cudaMemcpyAsync(page.data(), d2, n, cudaMemcpyDeviceToHost, b));
        T_CHECK(cudaStreamSynchronize(b));
        T_CHECK(cudaEventQuery(ev));
        for (size_t i = n - 3; i < n; i++)
            want[i] = 0xFF;
        if (page != want) {
            std::printf("FAIL: thread %d (device %d) round %d: data mismatch\n", id, dev, round);
            failures++;
            return;
        }
        if (round % 8 == 7) {
            T_CHECK(cudaEventSynchronize(ev));
            T_CHECK(cudaDeviceSynchronize());
            int cur = -1;
            T_CHECK(cudaGetDevice(&cur));
            if (cur != dev) {
                std::printf("FAIL: thread %d: current device %d, want %d\n", id, cur, dev);
                failures++;
                return;
            }
        }
    }
    T_CHECK(cudaStreamDestroy(s[0]));
    T_CHECK(cudaStreamDestroy(s[1]));
    T_CHECK(cudaEventDestroy(ev));
    T_CHECK(cudaFree(d));
    T_CHECK(cudaFree(d2));
    T_CHECK(cudaFreeHost(pinned));
}

int main(int argc, char **argv)
{
    int ndev = 0;
    CHECK_CUDA(cudaGetDeviceCount(&ndev));
    REQUIRE(ndev == 2, "run with MEARAS_VGPUS=2 (got %d devices)", ndev);
    const int rounds = argc > 1 ? atoi(argv[1]) : 200;
    std::vector<std::thread> t;
    for (int i = 0; i < 8; i++)
        t.emplace_back(worker, i, ndev, rounds);
    for (auto &th : t)
        th.join();
    REQUIRE(failures == 0, "%d thread(s) failed", failures.load());
    for (int dev = 0; dev < ndev; dev++) {
        CHECK_CUDA(cudaSetDevice(dev));
        CHECK_CUDA(cudaDeviceSynchronize());
    }
    return pass();
}
