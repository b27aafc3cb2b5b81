// The GPU time limit (mearasd --kernel-timeout-ms), against the device
// model's kernel that never finishes (mearas_sim_hang).
//   gpu_time_limit fire LIMIT_MS FIRED CHECKED
//       a kernel spins on one stream while another thread copies on its own:
//       the synchronization fails with cudaErrorLaunchTimeout within the
//       limit plus a margin, so does the copying thread, and every later
//       call at once; then FIRED is created and, once the test has seen the
//       worker exit and created CHECKED, calls still fail the same way
//   gpu_time_limit off SECONDS
//       no limit (the default): the kernel spins for SECONDS, nothing is
//       torn down, copies on another stream keep working
#include <atomic>
#include <chrono>
#include <thread>
#include <sys/stat.h>
#include "sim_check.cuh"

// spins while *flag is 0 (on a GPU); the device model never ends it
extern "C" __global__ void mearas_sim_hang(volatile unsigned *flag)
{
    while (!*flag)
        ;
}

__global__ void k_noop(int *p) { p[0] = 0; }

// copies on a stream of its own until a call fails; returns that error
static std::atomic<int> copier_err{-1};
static std::atomic<unsigned> copier_rounds{0};
static std::atomic<bool> copier_stop{false};

static void copier(void)
{
    const size_t n = 64 << 10;
    unsigned char *h, *d;
    cudaStream_t s;
    cudaError_t e;

    if ((e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) || (e = cudaMallocHost(&h, n)) ||
        (e = cudaMalloc(&d, n))) {
        copier_err = e;
        return;
    }
    while (!copier_stop) {
        fill_pattern(h, n, copier_rounds);
        if ((e = cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s)) || (e = cudaStreamSynchronize(s)))
            break;
        memset(h, 0, n);
        if ((e = cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, s)) || (e = cudaStreamSynchronize(s)))
            break;
        REQUIRE(check_pattern(h, n, copier_rounds) < 0, "copy round %u: wrong bytes", copier_rounds.load());
        copier_rounds++;
    }
    copier_err = e;
}

static void spin(cudaStream_t s, unsigned **flag)
{
    CHECK_CUDA(cudaMalloc(flag, sizeof(unsigned)));
    CHECK_CUDA(cudaMemset(*flag, 0, sizeof(unsigned)));
    mearas_sim_hang<<<1, 1, 0, s>>>(*flag);
    CHECK_CUDA(cudaGetLastError());
}

// every call fails at once with cudaErrorLaunchTimeout
static void expect_all_timed_out(void)
{
    double t0 = now_s();
    void *p = nullptr;
    static char host[4096];
    cudaStream_t s;

    EXPECT_ERR(cudaErrorLaunchTimeout, cudaMalloc(&p, 4096));
    EXPECT_ERR(cudaErrorLaunchTimeout, cudaMemcpy(host, host + 2048, 16, cudaMemcpyHostToHost));
    EXPECT_ERR(cudaErrorLaunchTimeout, cudaDeviceSynchronize());
    EXPECT_ERR(cudaErrorLaunchTimeout, cudaStreamCreate(&s));
    EXPECT_ERR(cudaErrorLaunchTimeout, cudaStreamSynchronize(0));
    k_noop<<<1, 1>>>(nullptr);
    EXPECT_ERR(cudaErrorLaunchTimeout, cudaGetLastError());
    REQUIRE(now_s() - t0 < 1.0, "calls after the time limit took %.2f s", now_s() - t0);
}

static int fire(double limit_ms, const char *fired, const char *checked)
{
    cudaStream_t s;
    unsigned *flag;
    double t0, took_ms;

    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::thread c(copier);
    while (copier_rounds < 3 && copier_err < 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(copier_err < 0, "the copier failed before the spin: %s", cudaGetErrorName((cudaError_t)copier_err.load()));
    spin(s, &flag);
    t0 = now_s();
    EXPECT_ERR(cudaErrorLaunchTimeout, cudaStreamSynchronize(s));
    took_ms = (now_s() - t0) * 1e3;
    printf("spinning kernel ended by the time limit after %.0f ms (limit %.0f ms)\n", took_ms, limit_ms);
    REQUIRE(took_ms > limit_ms * 0.9 && took_ms < limit_ms + 2000,
            "cudaErrorLaunchTimeout after %.0f ms, limit %.0f ms", took_ms, limit_ms);
    c.join();
    REQUIRE(copier_err == cudaErrorLaunchTimeout, "the other thread's copies ended with %s",
            cudaGetErrorName((cudaError_t)copier_err.load()));
    printf("the copying thread ran %u rounds, then got cudaErrorLaunchTimeout\n", copier_rounds.load());
    expect_all_timed_out();
    touch(fired);
    for (t0 = now_s(); !exists(checked); std::this_thread::sleep_for(std::chrono::milliseconds(20)))
        REQUIRE(now_s() - t0 < 20, "the test never saw the worker exit");
    expect_all_timed_out();
    printf("fire: ok\n");
    return 0;
}

static int off(double secs)
{
    cudaStream_t s;
    unsigned *flag;
    double t0;
    unsigned queries = 0;

    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::thread c(copier);
    spin(s, &flag);
    for (t0 = now_s(); now_s() - t0 < secs; queries++) {
        EXPECT_ERR(cudaErrorNotReady, cudaStreamQuery(s));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    copier_stop = true;
    c.join();
    REQUIRE(copier_err == cudaSuccess, "copies beside the spin failed: %s",
            cudaGetErrorName((cudaError_t)copier_err.load()));
    REQUIRE(copier_rounds > 10, "only %u copy rounds beside the spin", copier_rounds.load());
    printf("off: the kernel still runs after %.1f s (%u queries), %u copy rounds beside it\n", secs, queries,
           copier_rounds.load());
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "fire"))
        return fire(atof(argv[2]), argv[3], argv[4]);
    if (argc == 3 && !strcmp(argv[1], "off"))
        return off(atof(argv[2]));
    fprintf(stderr, "usage: gpu_time_limit fire LIMIT_MS FIRED CHECKED | off SECONDS\n");
    return 2;
}
