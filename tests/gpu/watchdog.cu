// GPU-time-limit check for the GPU lane (scripts/gpu-watchdog.sh), against a
// mearasd started with --kernel-timeout-ms. Two tenants:
//   watchdog victim CTLDIR     tenant B: for each phase (alone, during,
//                              after) waits for the file CTLDIR/PHASE (its
//                              content: seconds to measure), measures its
//                              kernel and copy throughput, prints
//                              PHASE_kernels_per_s= and PHASE_copy_gbps=,
//                              then creates CTLDIR/PHASE.done
//   watchdog spin LIMIT_MS MARKER
//                              tenant A: a kernel on every SM that spins
//                              forever; creates MARKER and waits: mearasd
//                              must end it with cudaErrorLaunchTimeout within
//                              the limit plus 2 s (prints timeout_after_ms=),
//                              and later calls must fail the same way at once
// Exit 0 when the mode's checks held. The spinning kernel is named as the
// device model's (mearas_sim_spin), so the script also runs on --device=sim.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

static double now_s(void)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

#define TRY(call)                                                                                   \
    do {                                                                                            \
        cudaError_t e_ = (call);                                                                    \
        if (e_ != cudaSuccess)                                                                      \
            return std::printf("FAIL: %s: %s (line %d)\n", #call, cudaGetErrorName(e_), __LINE__), 1; \
    } while (0)

// some tens of microseconds of arithmetic per launch on a GPU, so the rate
// measures the GPU rather than the launch path
__global__ void busy(float *x, int iters)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    for (int k = 0; k < iters; k++)
        v = v * 0.999f + 0.5f;
    x[i] = v;
}

// never ends: *flag stays 0
extern "C" __global__ void mearas_sim_spin(volatile unsigned *flag)
{
    while (!*flag)
        ;
}

struct bench {
    int sms;
    size_t bytes;
    float *x;
    void *h, *d;
    cudaStream_t s;
};

static int bench_init(struct bench *b)
{
    b->bytes = 64u << 20;
    TRY(cudaDeviceGetAttribute(&b->sms, cudaDevAttrMultiProcessorCount, 0));
    TRY(cudaStreamCreateWithFlags(&b->s, cudaStreamNonBlocking));
    TRY(cudaMalloc(&b->x, (size_t)b->sms * 2 * 256 * sizeof(float)));
    TRY(cudaMemset(b->x, 0, (size_t)b->sms * 2 * 256 * sizeof(float)));
    TRY(cudaMallocHost(&b->h, b->bytes));
    TRY(cudaMalloc(&b->d, b->bytes));
    memset(b->h, 1, b->bytes);
    busy<<<b->sms * 2, 256, 0, b->s>>>(b->x, 20000);
    TRY(cudaMemcpyAsync(b->d, b->h, b->bytes, cudaMemcpyHostToDevice, b->s));
    TRY(cudaStreamSynchronize(b->s));
    return 0;
}

// half the time kernels, half copies
static int measure(struct bench *b, const char *phase, double seconds)
{
    double t0, t;
    long kernels = 0, copies = 0;

    for (t0 = now_s(); (t = now_s() - t0) < seconds / 2;) {
        for (int k = 0; k < 50; k++)
            busy<<<b->sms * 2, 256, 0, b->s>>>(b->x, 20000);
        TRY(cudaGetLastError());
        TRY(cudaStreamSynchronize(b->s));
        kernels += 50;
    }
    std::printf("%s_kernels_per_s=%.0f\n", phase, kernels / t);
    for (t0 = now_s(); (t = now_s() - t0) < seconds / 2;) {
        TRY(cudaMemcpyAsync(b->d, b->h, b->bytes, cudaMemcpyHostToDevice, b->s));
        TRY(cudaMemcpyAsync(b->h, b->d, b->bytes, cudaMemcpyDeviceToHost, b->s));
        TRY(cudaStreamSynchronize(b->s));
        copies += 2;
    }
    std::printf("%s_copy_gbps=%.2f\n", phase, copies * (double)b->bytes / t / 1e9);
    std::fflush(stdout);
    return 0;
}

static int victim(const char *dir)
{
    static const char *phases[] = { "alone", "during", "after" };
    struct bench b;
    char path[4096];

    if (bench_init(&b))
        return 1;
    for (const char *phase : phases) {
        double seconds = 0, t0 = now_s();
        FILE *f;

        std::snprintf(path, sizeof(path), "%s/%s", dir, phase);
        while (!(f = std::fopen(path, "r"))) {
            if (now_s() - t0 > 120)
                return std::printf("FAIL: no %s after 120 s\n", path), 1;
            struct timespec ts = { 0, 10000000 };
            nanosleep(&ts, nullptr);
        }
        if (std::fscanf(f, "%lf", &seconds) != 1 || seconds <= 0)
            seconds = 2;
        std::fclose(f);
        if (measure(&b, phase, seconds))
            return 1;
        std::snprintf(path, sizeof(path), "%s/%s.done", dir, phase);
        if ((f = std::fopen(path, "w")))
            std::fclose(f);
    }
    return 0;
}

static int spin_forever(double limit_ms, const char *marker)
{
    int sms = 0;
    unsigned *flag;
    void *p;
    double t0, took;
    cudaError_t e;

    TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    TRY(cudaMalloc(&flag, sizeof(unsigned)));
    TRY(cudaMemset(flag, 0, sizeof(unsigned)));
    TRY(cudaDeviceSynchronize());
    mearas_sim_spin<<<sms * 4, 1024>>>(flag);
    TRY(cudaGetLastError());
    t0 = now_s();
    if (FILE *f = std::fopen(marker, "w"))
        std::fclose(f);
    e = cudaDeviceSynchronize();
    took = (now_s() - t0) * 1e3;
    std::printf("timeout_after_ms=%.0f\nspin_status=%s\n", took, cudaGetErrorName(e));
    if (e != cudaErrorLaunchTimeout)
        return std::printf("FAIL: the spinning kernel ended with %s, not cudaErrorLaunchTimeout\n",
                           cudaGetErrorName(e)), 1;
    if (took > limit_ms + 2000)
        return std::printf("FAIL: cudaErrorLaunchTimeout after %.0f ms, limit %.0f ms\n", took, limit_ms), 1;
    t0 = now_s();
    if ((e = cudaMalloc(&p, 4096)) != cudaErrorLaunchTimeout)
        return std::printf("FAIL: cudaMalloc after the limit: %s\n", cudaGetErrorName(e)), 1;
    if ((e = cudaDeviceSynchronize()) != cudaErrorLaunchTimeout)
        return std::printf("FAIL: cudaDeviceSynchronize after the limit: %s\n", cudaGetErrorName(e)), 1;
    if (now_s() - t0 > 1.0)
        return std::printf("FAIL: calls after the limit took %.2f s\n", now_s() - t0), 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !std::strcmp(argv[1], "victim"))
        return victim(argv[2]);
    if (argc == 4 && !std::strcmp(argv[1], "spin"))
        return spin_forever(std::atof(argv[2]), argv[3]);
    std::fprintf(stderr, "usage: watchdog victim CTLDIR | spin LIMIT_MS MARKER\n");
    return 2;
}
