// BlackScholes: European call and put prices for N options. Many short
// kernels: every iteration is one launch over all options, with inputs
// resident on the device, so the kernel-launch rate dominates.
#include <algorithm>
#include <cmath>
#include <vector>
#include "app_common.cuh"

__device__ __forceinline__ float cnd(float d)
{
    return normcdff(d);
}

__global__ void black_scholes(const float *spot, const float *strike, const float *years,
                              float *call, float *put, int n, float rate, float volatility)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float s = spot[i], x = strike[i], t = years[i];
        float sqrt_t = sqrtf(t);
        float d1 = (logf(s / x) + (rate + 0.5f * volatility * volatility) * t) / (volatility * sqrt_t);
        float d2 = d1 - volatility * sqrt_t;
        float discount = expf(-rate * t);
        call[i] = s * cnd(d1) - x * discount * cnd(d2);
        put[i] = x * discount * cnd(-d2) - s * cnd(-d1);
    }
}

static double cnd_ref(double d)
{
    return 0.5 * std::erfc(-d / std::sqrt(2.0));
}

int main(int argc, char **argv)
{
    const app_option_spec spec = {"blackscholes", "number of options", 1 << 20, 512, false, 1 << 28};
    app_options o = app_parse(argc, argv, spec);
    const int n = (int)o.size;
    const float rate = 0.02f, volatility = 0.30f;
    std::vector<float> spot(n), strike(n), years(n), call(n), put(n);
    app_lcg rng{42u};
    auto uniform = [&rng](float lo, float hi) { return rng.uniform(lo, hi); };
    for (int i = 0; i < n; i++) {
        spot[i] = uniform(5.0f, 30.0f);
        strike[i] = uniform(1.0f, 100.0f);
        years[i] = uniform(0.25f, 10.0f);
    }
    float *d_spot, *d_strike, *d_years, *d_call, *d_put;
    size_t bytes = (size_t)n * sizeof(float);
    APP_CHECK(cudaMalloc(&d_spot, bytes));
    APP_CHECK(cudaMalloc(&d_strike, bytes));
    APP_CHECK(cudaMalloc(&d_years, bytes));
    APP_CHECK(cudaMalloc(&d_call, bytes));
    APP_CHECK(cudaMalloc(&d_put, bytes));
    APP_CHECK(cudaMemcpy(d_spot, spot.data(), bytes, cudaMemcpyHostToDevice));
    APP_CHECK(cudaMemcpy(d_strike, strike.data(), bytes, cudaMemcpyHostToDevice));
    APP_CHECK(cudaMemcpy(d_years, years.data(), bytes, cudaMemcpyHostToDevice));

    const int block = 128;
    const int grid = (int)std::min<long long>(((long long)n + block - 1) / block, 65535);
    auto launch = [&]() {
        black_scholes<<<grid, block>>>(d_spot, d_strike, d_years, d_call, d_put, n, rate, volatility);
        APP_CHECK(cudaGetLastError());
    };
    launch(); // warm-up
    APP_CHECK(cudaDeviceSynchronize());

    // Launches are asynchronous and queue back to back (high call rate); the
    // loop synchronizes every 64 launches so --seconds reads finished work.
    double seconds = 0.0;
    long long iterations = app_timed_loop(o, 64, &seconds, launch, app_device_sync);

    APP_CHECK(cudaMemcpy(call.data(), d_call, bytes, cudaMemcpyDeviceToHost));
    APP_CHECK(cudaMemcpy(put.data(), d_put, bytes, cudaMemcpyDeviceToHost));
    int check = -1;
    if (!o.skip_check) {
        check = 1;
        double max_err = 0.0;
        int stride = n > 100000 ? 97 : 1;
        for (int i = 0; i < n; i += stride) {
            double s = spot[i], x = strike[i], t = years[i];
            double d1 = (std::log(s / x) + (rate + 0.5 * volatility * volatility) * t) /
                        (volatility * std::sqrt(t));
            double d2 = d1 - volatility * std::sqrt(t);
            double discount = std::exp(-(double)rate * t);
            double c = s * cnd_ref(d1) - x * discount * cnd_ref(d2);
            double p = x * discount * cnd_ref(-d2) - s * cnd_ref(-d1);
            double err = std::max(std::fabs(c - call[i]), std::fabs(p - put[i]));
            max_err = std::max(max_err, err);
            if (err > 1e-3 * std::max(1.0, std::max(std::fabs(c), std::fabs(p)))) {
                std::fprintf(stderr, "blackscholes: option %d: gpu call=%f put=%f, cpu %f %f\n", i,
                             (double)call[i], (double)put[i], c, p);
                check = 0;
                break;
            }
        }
        std::fprintf(stderr, "blackscholes: max abs error %.3g\n", max_err);
    }
    char extra[64];
    std::snprintf(extra, sizeof(extra), "launches=%lld", iterations);
    app_report("blackscholes", o, (double)n * (double)iterations, iterations, seconds, "options/s",
               check, extra);
    APP_FREE(d_spot, d_strike, d_years, d_call, d_put);
    return check == 0 ? 1 : 0;
}
