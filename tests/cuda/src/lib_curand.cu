// cuRAND: the host API (PHILOX4_32_10 and MRG32K3A generators writing device
// memory on a stream: curandGenerate, curandGenerateUniform/Normal) and the
// device API (curand_init/curand/curand_uniform with Philox4_32_10 and XORWOW
// states in a kernel). Seeded generators are deterministic, so every output is
// printed as an FNV-1a hash of its bits besides the statistics checked; the
// device Philox output is compared exactly with a CPU Philox4x32-10.
#include <curand.h>
#include <curand_kernel.h>
#include "lib_ref.h"

static const char *curand_name(curandStatus_t st)
{
    switch (st) {
        STATUS_CASE(CURAND_STATUS_SUCCESS);
        STATUS_CASE(CURAND_STATUS_VERSION_MISMATCH);
        STATUS_CASE(CURAND_STATUS_NOT_INITIALIZED);
        STATUS_CASE(CURAND_STATUS_ALLOCATION_FAILED);
        STATUS_CASE(CURAND_STATUS_TYPE_ERROR);
        STATUS_CASE(CURAND_STATUS_OUT_OF_RANGE);
        STATUS_CASE(CURAND_STATUS_LENGTH_NOT_MULTIPLE);
        STATUS_CASE(CURAND_STATUS_DOUBLE_PRECISION_REQUIRED);
        STATUS_CASE(CURAND_STATUS_LAUNCH_FAILURE);
        STATUS_CASE(CURAND_STATUS_PREEXISTING_FAILURE);
        STATUS_CASE(CURAND_STATUS_INITIALIZATION_FAILED);
        STATUS_CASE(CURAND_STATUS_ARCH_MISMATCH);
        STATUS_CASE(CURAND_STATUS_INTERNAL_ERROR);
    }
    return "unknown curandStatus_t";
}

#define CHECK_CURAND(call) CHECK_STATUS(call, CURAND_STATUS_SUCCESS, curand_name)

template <typename T> static unsigned long long fnv1a(const std::vector<T> &v)
{
    const unsigned char *p = (const unsigned char *)v.data();
    unsigned long long h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < v.size() * sizeof(T); i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

// Sample mean and variance against the distribution's; the tolerances are
// about 5 standard errors for the sample sizes used (the seeded samples are
// fixed, so this either always passes or never does).
static void check_stats(const char *what, const std::vector<float> &v, double mean, double var,
                        double tol_mean, double tol_var, bool unit_interval)
{
    double sum = 0.0, sq = 0.0;
    for (float x : v) {
        REQUIRE(!unit_interval || (x > 0.0f && x <= 1.0f), "%s: %a outside (0, 1]", what, x);
        sum += x;
    }
    double m = sum / v.size();
    for (float x : v)
        sq += (x - m) * (x - m);
    double s2 = sq / (v.size() - 1);
    REQUIRE(std::fabs(m - mean) <= tol_mean, "%s: mean %.6f, expected %g", what, m, mean);
    REQUIRE(std::fabs(s2 - var) <= tol_var, "%s: variance %.6f, expected %g", what, s2, var);
    std::printf("%s n=%zu: mean within %g of %g: yes, variance within %g of %g: yes%s, "
                "fnv1a=%016llx\n",
                what, v.size(), tol_mean, mean, tol_var, var, unit_interval ? ", in (0,1]" : "",
                fnv1a(v));
}

static void host_api(cudaStream_t s, curandRngType_t type, const char *name, size_t n)
{
    curandGenerator_t g;
    CHECK_CURAND(curandCreateGenerator(&g, type));
    CHECK_CURAND(curandSetPseudoRandomGeneratorSeed(g, 20240611ull));
    CHECK_CURAND(curandSetStream(g, s));
    float *d;
    CHECK_CUDA(cudaMalloc(&d, n * sizeof(float)));
    char what[96];
    if (type == CURAND_RNG_PSEUDO_PHILOX4_32_10) {
        CHECK_CURAND(curandGenerate(g, (unsigned int *)d, n));
        auto bits = to_host((const unsigned int *)d, n, s);
        unsigned long long ones = 0;
        for (unsigned int b : bits)
            ones += __builtin_popcount(b);
        double frac = (double)ones / (32.0 * n); // standard error 1.4e-4 for n=2^20
        REQUIRE(std::fabs(frac - 0.5) <= 1e-3, "%s bits: fraction of ones %.6f", name, frac);
        std::printf("host %s bits n=%zu: fraction of ones within 0.001 of 0.5: yes, "
                    "fnv1a=%016llx\n",
                    name, n, fnv1a(bits));
    }
    CHECK_CURAND(curandGenerateUniform(g, d, n));
    std::snprintf(what, sizeof what, "host %s uniform", name);
    check_stats(what, to_host(d, n, s), 0.5, 1.0 / 12, 2e-3, 5e-4, true);
    CHECK_CURAND(curandGenerateNormal(g, d, n, 2.0f, 3.0f)); // n even, as required
    std::snprintf(what, sizeof what, "host %s normal(2,3)", name);
    check_stats(what, to_host(d, n, s), 2.0, 9.0, 0.02, 0.07, false);
    CHECK_CURAND(curandDestroyGenerator(g));
    CHECK_CUDA(cudaFree(d));
}

#define PER_THREAD 16

__global__ void philox_kernel(unsigned long long seed, unsigned int *bits, float *uni)
{
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    curandStatePhilox4_32_10_t st;
    curand_init(seed, id, 0, &st);
    for (int j = 0; j < PER_THREAD; j++)
        bits[id * PER_THREAD + j] = curand(&st);
    for (int j = 0; j < PER_THREAD; j++)
        uni[id * PER_THREAD + j] = curand_uniform(&st);
}

__global__ void xorwow_kernel(unsigned long long seed, float *uni)
{
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    curandState_t st;
    curand_init(seed, id, 0, &st);
    for (int j = 0; j < PER_THREAD; j++)
        uni[id * PER_THREAD + j] = curand_uniform(&st);
}

// Philox4x32-10 as curand_philox4x32_x.h defines it: value j of subsequence id
// is word j % 4 of the block function at counter (j / 4, 0, id, 0).
static unsigned int philox_cpu(unsigned long long seed, unsigned int id, unsigned int j)
{
    unsigned int c[4] = {j / 4, 0, id, 0}, k[2] = {(unsigned int)seed, (unsigned int)(seed >> 32)};
    for (int r = 0; r < 10; r++) {
        unsigned long long p0 = 0xD2511F53ull * c[0], p1 = 0xCD9E8D57ull * c[2];
        unsigned int n[4] = {(unsigned int)(p1 >> 32) ^ c[1] ^ k[0], (unsigned int)p1,
                             (unsigned int)(p0 >> 32) ^ c[3] ^ k[1], (unsigned int)p0};
        std::memcpy(c, n, sizeof c);
        k[0] += 0x9E3779B9u;
        k[1] += 0xBB67AE85u;
    }
    return c[j % 4];
}

static void device_api(cudaStream_t s, int blocks, int threads)
{
    const unsigned long long seed = 0x0123456789abcdefull;
    size_t n = (size_t)blocks * threads * PER_THREAD;
    unsigned int *dbits;
    float *duni;
    CHECK_CUDA(cudaMalloc(&dbits, n * sizeof(unsigned int)));
    CHECK_CUDA(cudaMalloc(&duni, n * sizeof(float)));
    philox_kernel<<<blocks, threads, 0, s>>>(seed, dbits, duni);
    CHECK_CUDA(cudaGetLastError());
    auto bits = to_host(dbits, n, s);
    auto uni = to_host(duni, n, s);
    for (size_t i = 0; i < n; i++) {
        unsigned int id = (unsigned int)(i / PER_THREAD), j = (unsigned int)(i % PER_THREAD);
        unsigned int want = philox_cpu(seed, id, j);
        REQUIRE(bits[i] == want, "device philox thread %u value %u: %08x, expected %08x", id, j,
                bits[i], want);
        float wantf = (float)philox_cpu(seed, id, PER_THREAD + j) * CURAND_2POW32_INV +
                      (CURAND_2POW32_INV / 2.0f);
        REQUIRE(uni[i] == wantf, "device philox thread %u uniform %u: %a, expected %a", id, j,
                uni[i], wantf);
    }
    std::printf("device philox4_32_10 %d threads x %d: curand and curand_uniform equal to the "
                "CPU Philox4x32-10: yes, fnv1a=%016llx\n",
                blocks * threads, PER_THREAD, fnv1a(bits));
    check_stats("device philox4_32_10 uniform", uni, 0.5, 1.0 / 12, 4e-3, 1e-3, true);
    xorwow_kernel<<<blocks, threads, 0, s>>>(seed, duni);
    CHECK_CUDA(cudaGetLastError());
    check_stats("device xorwow uniform", to_host(duni, n, s), 0.5, 1.0 / 12, 4e-3, 1e-3, true);
    FREE_DEVICE(dbits, duni);
}

int main(void)
{
    cudaStream_t s = nonblocking_stream();
    host_api(s, CURAND_RNG_PSEUDO_PHILOX4_32_10, "philox4_32_10", 1 << 20);
    host_api(s, CURAND_RNG_PSEUDO_MRG32K3A, "mrg32k3a", 1 << 20);
    device_api(s, 64, 128);
    CHECK_CUDA(cudaStreamDestroy(s));
    return pass();
}
