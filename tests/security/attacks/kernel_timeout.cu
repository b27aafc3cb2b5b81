// A tenant that tries to keep the GPU for itself: kernels that never end
// (the device model's mearas_sim_hang; on a GPU it spins on a flag that
// stays 0) on several streams of both its vGPUs, then it waits. mearasd's
// GPU time limit must end its context: its wait, and every call after it,
// fail with cudaErrorLaunchTimeout within the limit plus a margin, and
// nothing hangs. Exit 0 when all of that held.
//   kernel_timeout LIMIT_MS
#include "../../sim/sim_check.cuh"

extern "C" __global__ void mearas_sim_hang(volatile unsigned *flag)
{
    while (!*flag)
        ;
}

int main(int argc, char **argv)
{
    double limit_ms = argc > 1 ? atof(argv[1]) : 500, t0, took_ms;
    int ndev = 0;
    void *p;

    CHECK_CUDA(cudaGetDeviceCount(&ndev));
    REQUIRE(ndev >= 1, "no vGPU");
    for (int dev = ndev - 1; dev >= 0; dev--) {
        unsigned *flag;

        CHECK_CUDA(cudaSetDevice(dev));
        CHECK_CUDA(cudaMalloc(&flag, sizeof(unsigned)));
        CHECK_CUDA(cudaMemset(flag, 0, sizeof(unsigned)));
        for (int k = 0; k < 4; k++) {
            cudaStream_t s;

            CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
            mearas_sim_hang<<<1, 1, 0, s>>>(flag);
            CHECK_CUDA(cudaGetLastError());
        }
    }
    t0 = now_s();
    EXPECT_ERR(cudaErrorLaunchTimeout, cudaDeviceSynchronize());
    took_ms = (now_s() - t0) * 1e3;
    printf("attacker: spinning kernels ended by the GPU time limit after %.0f ms (limit %.0f ms)\n", took_ms,
           limit_ms);
    REQUIRE(took_ms > limit_ms * 0.9 && took_ms < limit_ms + 2000, "cudaErrorLaunchTimeout after %.0f ms", took_ms);
    /* the tenant tries again: refused at once */
    t0 = now_s();
    EXPECT_ERR(cudaErrorLaunchTimeout, cudaMalloc(&p, 4096));
    mearas_sim_hang<<<1, 1>>>(nullptr);
    EXPECT_ERR(cudaErrorLaunchTimeout, cudaGetLastError());
    EXPECT_ERR(cudaErrorLaunchTimeout, cudaDeviceSynchronize());
    REQUIRE(now_s() - t0 < 1.0, "calls after the limit took %.2f s", now_s() - t0);
    printf("attacker: every later call fails with cudaErrorLaunchTimeout\n");
    return 0;
}
