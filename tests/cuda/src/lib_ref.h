// Host-side inputs and references shared by the lib_* programs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>
#include "check.cuh"

static inline std::vector<float> random_floats(size_t n, unsigned int seed)
{
    std::vector<float> v(n);
    for (auto &x : v) // in [-1, 1)
        x = (float)((lcg_next(&seed) >> 8) * (1.0 / 8388608.0) - 1.0);
    return v;
}

// Copies to new device memory / back to the host, ordered on stream s.
template <typename T> static inline T *to_device(const std::vector<T> &h, cudaStream_t s = 0)
{
    T *d;
    CHECK_CUDA(cudaMalloc(&d, h.size() * sizeof(T)));
    CHECK_CUDA(cudaMemcpyAsync(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    return d;
}

template <typename T> static inline std::vector<T> to_host(const T *d, size_t n, cudaStream_t s = 0)
{
    std::vector<T> h(n);
    CHECK_CUDA(cudaMemcpyAsync(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    return h;
}

// Column-major C = alpha op(A) op(B) + beta C0 in double; returns the largest
// |got - ref| divided by |alpha| sum_p |op(A)_ip op(B)_pj| + |beta C0_ij|, the
// scale a floating-point GEMM's rounding error is proportional to.
static inline double gemm_err(bool ta, bool tb, int m, int n, int k, double alpha, const float *a,
                              int lda, const float *b, int ldb, double beta, const float *c0,
                              const float *got, int ldc)
{
    double worst = 0.0;
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < m; i++) {
            double sum = 0.0, mag = 0.0;
            for (int p = 0; p < k; p++) {
                double x = ta ? a[p + (size_t)i * lda] : a[i + (size_t)p * lda];
                double y = tb ? b[j + (size_t)p * ldb] : b[p + (size_t)j * ldb];
                sum += x * y;
                mag += std::fabs(x * y);
            }
            double c = c0[i + (size_t)j * ldc];
            double ref = alpha * sum + beta * c;
            double scale = std::fabs(alpha) * mag + std::fabs(beta * c) + 1e-30;
            worst = std::fmax(worst, std::fabs(got[i + (size_t)j * ldc] - ref) / scale);
        }
    }
    return worst;
}

// Round to nearest even bf16 (inputs are finite).
static inline uint16_t to_bf16(float f, float *rounded)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(rounded, &u, 4);
    return (uint16_t)(u >> 16);
}
