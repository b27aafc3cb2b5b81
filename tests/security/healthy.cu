// The healthy client of the hostile suite: it runs beside an attacker and
// checks that nothing it does is lost or changed. Copies patterned bytes to
// its vGPU and back (pageable and pinned, plus a memset), comparing every
// byte, until SECONDS have passed (or STOPFILE exists), then prints
// "healthy: N rounds ok" and exits 0; any error or wrong byte exits 1.
//   healthy SECONDS [STOPFILE]
#include "../sim/sim_check.cuh"

int main(int argc, char **argv)
{
    const size_t n = 1u << 20;
    double secs = argc > 1 ? atof(argv[1]) : 2.0, t0;
    const char *stop = argc > 2 ? argv[2] : nullptr;
    unsigned char *host = (unsigned char *)malloc(n), *pinned, *dev;
    unsigned rounds = 0;

    REQUIRE(host, "malloc");
    CHECK_CUDA(cudaMallocHost((void **)&pinned, n));
    CHECK_CUDA(cudaMalloc((void **)&dev, n));
    /* timed from here: connecting (a worker started) can take seconds on a
     * loaded machine, and at least one round must run to say anything */
    t0 = now_s();
    while (rounds == 0 || (now_s() - t0 < secs && !(stop && exists(stop)))) {
        uint32_t seed = rounds * 7u + 1u;
        long long bad;

        fill_pattern(host, n, seed);
        CHECK_CUDA(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice));
        memset(pinned, 0, n);
        CHECK_CUDA(cudaMemcpy(pinned, dev, n, cudaMemcpyDeviceToHost));
        bad = check_pattern(pinned, n, seed);
        REQUIRE(bad < 0, "round %u: byte %lld differs after the round trip", rounds, bad);
        CHECK_CUDA(cudaMemsetAsync(dev + 4096, 0x5a, 512, 0));
        CHECK_CUDA(cudaMemcpyAsync(host, dev + 4000, 1024, cudaMemcpyDeviceToHost, 0));
        CHECK_CUDA(cudaStreamSynchronize(0));
        for (size_t i = 0; i < 1024; i++) {
            unsigned char want = (i >= 96 && i < 96 + 512) ? 0x5a : pinned[4000 + i];
            REQUIRE(host[i] == want, "round %u: memset byte %zu is %#x, want %#x", rounds, i, host[i], want);
        }
        rounds++;
    }
    CHECK_CUDA(cudaFree(dev));
    CHECK_CUDA(cudaFreeHost(pinned));
    free(host);
    printf("healthy: %u rounds ok\n", rounds);
    return 0;
}
