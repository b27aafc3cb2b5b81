// Client side of the robustness tests (driven by robust_*.sh).
//   robust_client copy-forever MARKER        large copies until killed
//   robust_client exit-mid-copy              another thread exits the process
//                                            while a large copy is in flight
//   robust_client killed-in-sync MARKER      waits in cudaStreamSynchronize (on copies)
//                                            while the test kills mearasd
//   robust_client killed-while-posting MARKER KILLED
//                                            posts async work while the test
//                                            kills mearasd (KILLED appears)
//   robust_client no-daemon                  mearasd is not there
// Every mode that outlives mearasd checks that calls fail with
// cudaErrorDevicesUnavailable quickly instead of hanging.
#include <chrono>
#include <thread>
#include <unistd.h>
#include <sys/stat.h>
#include "sim_check.cuh"

__global__ void k_noop(int *p) { p[0] = 0; }

// after mearasd is gone, every call fails at once with the same error
static void expect_all_fail(void)
{
    double t0 = now_s();
    void *p = nullptr;
    static char host[4096];
    EXPECT_ERR(cudaErrorDevicesUnavailable, cudaMalloc(&p, 4096));
    EXPECT_ERR(cudaErrorDevicesUnavailable, cudaMemcpy(host, host + 2048, 16, cudaMemcpyHostToHost));
    EXPECT_ERR(cudaErrorDevicesUnavailable, cudaDeviceSynchronize());
    cudaStream_t s;
    EXPECT_ERR(cudaErrorDevicesUnavailable, cudaStreamCreate(&s));
    EXPECT_ERR(cudaErrorDevicesUnavailable, cudaStreamSynchronize(0));
    k_noop<<<1, 1>>>(nullptr);
    EXPECT_ERR(cudaErrorDevicesUnavailable, cudaGetLastError());
    REQUIRE(now_s() - t0 < 1.0, "calls after the loss took %.2f s", now_s() - t0);
}

static int copy_forever(const char *marker)
{
    const size_t n = 256u << 20;
    unsigned char *d, *h = (unsigned char *)malloc(n);
    REQUIRE(h, "malloc");
    memset(h, 1, n);
    CHECK_CUDA(cudaMalloc(&d, n));
    touch(marker);
    for (;;) {
        CHECK_CUDA(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost));
    }
}

static int exit_mid_copy(void)
{
    const size_t n = 256u << 20;
    unsigned char *d, *h = (unsigned char *)malloc(n), *p;
    REQUIRE(h, "malloc");
    memset(h, 1, n);
    CHECK_CUDA(cudaMalloc(&d, n));
    CHECK_CUDA(cudaMallocHost(&p, 64u << 20));
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreate(&s));
    std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        std::printf("exiting in the middle of copies\n");
        std::fflush(stdout);
        _exit(0);
    }).detach();
    for (;;) {
        for (int i = 0; i < 4; i++)
            CHECK_CUDA(cudaMemcpyAsync(d + (i << 26), p, 64u << 20, cudaMemcpyHostToDevice, s));
        CHECK_CUDA(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost));
    }
}

static int killed_in_sync(const char *marker)
{
    // several seconds of device-to-device copies queued on a stream (host
    // functions cannot hold a stream in the sim), then wait for them
    const size_t n = 128u << 20;
    unsigned char *a, *b;
    CHECK_CUDA(cudaMalloc(&a, n));
    CHECK_CUDA(cudaMalloc(&b, n));
    CHECK_CUDA(cudaMemset(a, 1, n));
    CHECK_CUDA(cudaDeviceSynchronize());
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreate(&s));
    for (int i = 0; i < 200; i++)
        CHECK_CUDA(cudaMemcpyAsync(i % 2 ? a : b, i % 2 ? b : a, n, cudaMemcpyDeviceToDevice, s));
    touch(marker); // the test kills mearasd now
    double t0 = now_s();
    cudaError_t e = cudaStreamSynchronize(s);
    double waited = now_s() - t0;
    std::printf("cudaStreamSynchronize -> %s after %.2f s\n", cudaGetErrorName(e), waited);
    REQUIRE(e == cudaErrorDevicesUnavailable, "synchronize returned %s (copies done before the kill?)",
            cudaGetErrorName(e));
    EXPECT_ERR(cudaErrorDevicesUnavailable, cudaGetLastError());
    expect_all_fail();
    return pass();
}

static int killed_while_posting(const char *marker, const char *killed)
{
    int *d;
    const size_t n = 1u << 20;
    unsigned char *p;
    CHECK_CUDA(cudaMalloc(&d, n));
    CHECK_CUDA(cudaMallocHost(&p, n));
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreate(&s));
    touch(marker);
    double noticed = 0;
    for (long i = 0;; i++) {
        cudaError_t e;
        switch (i % 3) {
        case 0: e = cudaMemsetAsync(d, (int)i, n, s); break;
        case 1: e = cudaMemcpyAsync(d, p, n, cudaMemcpyHostToDevice, s); break;
        default:
            k_noop<<<1, 1, 0, s>>>(d);
            e = cudaGetLastError();
        }
        if (noticed == 0 && (i % 64) == 0 && exists(killed))
            noticed = now_s();
        if (e != cudaSuccess) {
            REQUIRE(e == cudaErrorDevicesUnavailable, "post %ld returned %s", i, cudaGetErrorName(e));
            // the test marks the kill right after it: allow it a moment to do so
            for (int w = 0; w < 200 && noticed == 0; w++) {
                if (exists(killed))
                    noticed = now_s();
                else
                    std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            REQUIRE(noticed != 0, "post %ld failed before mearasd was killed", i);
            std::printf("async post failed %.2f s after the kill was noticed\n", now_s() - noticed);
            cudaGetLastError();
            break;
        }
        REQUIRE(noticed == 0 || now_s() - noticed < 5.0, "posts still succeed 5 s after mearasd was killed");
    }
    EXPECT_ERR(cudaErrorDevicesUnavailable, cudaStreamSynchronize(s));
    EXPECT_ERR(cudaErrorDevicesUnavailable, cudaMemsetAsync(d, 0, n, s));
    expect_all_fail();
    return pass();
}

static int no_daemon(void)
{
    int n = -1;
    double t0 = now_s();
    cudaError_t e = cudaGetDeviceCount(&n);
    REQUIRE(e == cudaErrorNoDevice, "cudaGetDeviceCount returned %s", cudaGetErrorName(e));
    EXPECT_ERR(cudaErrorNoDevice, cudaGetLastError());
    void *p;
    EXPECT_ERR(cudaErrorNoDevice, cudaMalloc(&p, 16));
    EXPECT_ERR(cudaErrorNoDevice, cudaDeviceSynchronize());
    REQUIRE(now_s() - t0 < 2.0, "took %.2f s to fail", now_s() - t0);
    return pass();
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "copy-forever") && argc == 3)
        return copy_forever(argv[2]);
    if (!strcmp(mode, "exit-mid-copy"))
        return exit_mid_copy();
    if (!strcmp(mode, "killed-in-sync") && argc == 3)
        return killed_in_sync(argv[2]);
    if (!strcmp(mode, "killed-while-posting") && argc == 4)
        return killed_while_posting(argv[2], argv[3]);
    if (!strcmp(mode, "no-daemon"))
        return no_daemon();
    std::fprintf(stderr, "usage: see the comment at the top of robust_client.cu\n");
    return 2;
}
