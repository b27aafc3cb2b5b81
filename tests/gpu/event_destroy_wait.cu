// GPU lane, through mearas (runs natively too): waits on an event that
// another thread destroys, or that a device reset destroys, while the wait
// is pending. mearasd used to keep polling the destroyed event (freed
// memory in its worker). Each wait must return cudaSuccess, not before the
// work it waits for is done (a twin event recorded right after it says
// so), and the context must keep working.
//   event_destroy_wait            prints one line per case, "PASS" last
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <cuda_runtime.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::printf("FAIL: %s: %s (line %d)\n", #call, cudaGetErrorName(e_), __LINE__);      \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

__global__ void spin(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles)
        ;
}

static long long cycles_for_ms(int ms)
{
    int khz = 0;
    CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    return (long long)khz * ms;
}

// A thread waits on ev behind ~300 ms of work; meanwhile `act` runs
// (destroys ev, or resets the device). Returns the wait's status.
template <typename F> static cudaError_t wait_while(cudaEvent_t ev, F act)
{
    std::atomic<int> started{0};
    cudaError_t r = cudaErrorUnknown;
    std::thread waiter([&] {
        started = 1;
        r = cudaEventSynchronize(ev);
    });
    while (!started)
        std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(100)); // the wait is in flight
    act();
    waiter.join();
    return r;
}

int main(void)
{
    cudaStream_t s;
    long long cycles = cycles_for_ms(300);

    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int i = 0; i < 10; i++) {
        cudaEvent_t ev, twin;
        CHECK(cudaEventCreate(&ev));
        CHECK(cudaEventCreate(&twin));
        spin<<<1, 1, 0, s>>>(cycles);
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(ev, s));
        CHECK(cudaEventRecord(twin, s));
        cudaError_t r = wait_while(ev, [&] { CHECK(cudaEventDestroy(ev)); });
        if (r != cudaSuccess) {
            std::printf("FAIL: wait %d on a destroyed event: %s\n", i, cudaGetErrorName(r));
            return 1;
        }
        if (cudaEventQuery(twin) != cudaSuccess) {
            std::printf("FAIL: wait %d ended before the work it waited for\n", i);
            return 1;
        }
        CHECK(cudaEventDestroy(twin));
    }
    std::printf("event destroyed during its wait: 10 waits ended with cudaSuccess after their work\n");

    {
        cudaEvent_t ev;
        CHECK(cudaEventCreate(&ev));
        spin<<<1, 1, 0, s>>>(cycles);
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(ev, s));
        cudaError_t r = wait_while(ev, [&] { CHECK(cudaDeviceReset()); });
        std::printf("device reset during a wait: the wait returned (%s)\n",
                    r == cudaSuccess ? "cudaSuccess" : "an error");
    }
    // the context works after it all
    int *d, h = 0;
    CHECK(cudaMalloc(&d, sizeof(int)));
    CHECK(cudaMemset(d, 0x5a, sizeof(int)));
    CHECK(cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost));
    if (h != 0x5a5a5a5a) {
        std::printf("FAIL: memset after the reset read %#x\n", h);
        return 1;
    }
    CHECK(cudaFree(d));
    std::printf("PASS\n");
    return 0;
}
