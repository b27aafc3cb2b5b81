// BinomialOptions: European call prices on a Cox-Ross-Rubinstein tree of
// STEPS steps, one thread block per option, in double precision. Few long
// kernels: by default one launch per iteration prices every option;
// --launches N splits the options over N launches per iteration.
#include <algorithm>
#include <cmath>
#include <vector>
#include "app_common.cuh"

#define STEPS 2048
#define BLOCK 256

struct option_params {
    double spot, strike, years, rate, volatility;
};

struct tree_coefficients {
    double vsdt;     // volatility * sqrt(dt): log-price step
    double pu_disc;  // discounted up probability
    double pd_disc;  // discounted down probability
};

__host__ __device__ inline tree_coefficients make_coefficients(const option_params &p)
{
    double dt = p.years / STEPS;
    double vsdt = p.volatility * sqrt(dt);
    double u = exp(vsdt), d = exp(-vsdt);
    double pu = (exp(p.rate * dt) - d) / (u - d);
    double disc = exp(-p.rate * dt);
    tree_coefficients c = {vsdt, pu * disc, (1.0 - pu) * disc};
    return c;
}

__host__ __device__ inline double leaf_value(const option_params &p, double vsdt, int j)
{
    double price = p.spot * exp(vsdt * (double)(2 * j - STEPS));
    return price > p.strike ? price - p.strike : 0.0;
}

__global__ void binomial_price(const option_params *options, double *prices, int first)
{
    __shared__ double values[2][STEPS + 1];
    const option_params p = options[first + blockIdx.x];
    const tree_coefficients c = make_coefficients(p);
    for (int j = threadIdx.x; j <= STEPS; j += blockDim.x)
        values[0][j] = leaf_value(p, c.vsdt, j);
    __syncthreads();
    int cur = 0;
    for (int i = STEPS; i > 0; i--) {
        for (int j = threadIdx.x; j < i; j += blockDim.x)
            values[1 - cur][j] = c.pu_disc * values[cur][j + 1] + c.pd_disc * values[cur][j];
        __syncthreads();
        cur = 1 - cur;
    }
    if (threadIdx.x == 0)
        prices[first + blockIdx.x] = values[cur][0];
}

static double binomial_reference(const option_params &p)
{
    tree_coefficients c = make_coefficients(p);
    std::vector<double> v(STEPS + 1);
    for (int j = 0; j <= STEPS; j++)
        v[j] = leaf_value(p, c.vsdt, j);
    for (int i = STEPS; i > 0; i--)
        for (int j = 0; j < i; j++)
            v[j] = c.pu_disc * v[j + 1] + c.pd_disc * v[j];
    return v[0];
}

int main(int argc, char **argv)
{
    const app_option_spec spec = {"binomialoptions", "number of options", 4096, 10, true, 1 << 24};
    app_options o = app_parse(argc, argv, spec);
    const int n = (int)o.size;
    if (o.launches > n) {
        std::fprintf(stderr, "binomialoptions: --launches %d exceeds the %d options\n", o.launches, n);
        return 2;
    }
    std::vector<option_params> options(n);
    app_lcg rng{7u};
    auto uniform = [&rng](double lo, double hi) { return rng.uniform(lo, hi); };
    for (auto &p : options)
        p = {uniform(5.0, 30.0), uniform(1.0, 100.0), uniform(0.25, 10.0), 0.06, 0.10};

    option_params *d_options;
    double *d_prices;
    APP_CHECK(cudaMalloc(&d_options, n * sizeof(option_params)));
    APP_CHECK(cudaMalloc(&d_prices, n * sizeof(double)));
    APP_CHECK(cudaMemcpy(d_options, options.data(), n * sizeof(option_params), cudaMemcpyHostToDevice));
    std::vector<double> prices(n, -1.0);

    // One iteration: o.launches kernels over consecutive option ranges, then
    // the prices come back (synchronizing).
    auto iteration = [&]() {
        for (int l = 0; l < o.launches; l++) {
            int first = (int)((long long)n * l / o.launches);
            int last = (int)((long long)n * (l + 1) / o.launches);
            binomial_price<<<last - first, BLOCK>>>(d_options, d_prices, first);
            APP_CHECK(cudaGetLastError());
        }
        APP_CHECK(cudaMemcpy(prices.data(), d_prices, n * sizeof(double), cudaMemcpyDeviceToHost));
    };
    double seconds = 0.0;
    long long iterations = app_timed_sync_loop(o, &seconds, iteration);

    int check = -1;
    if (!o.skip_check) {
        check = 1;
        int samples = std::min(n, 48);
        for (int s = 0; s < samples; s++) {
            int i = (int)((long long)n * s / samples);
            double ref = binomial_reference(options[i]);
            if (!(std::fabs(prices[i] - ref) <= 1e-9 * std::max(1.0, std::fabs(ref)))) {
                std::fprintf(stderr, "binomialoptions: option %d: gpu %.12f cpu %.12f\n", i, prices[i],
                             ref);
                check = 0;
                break;
            }
        }
        for (int i = 0; i < n && check; i++) {
            if (!(prices[i] >= 0.0 && prices[i] <= options[i].spot)) {
                std::fprintf(stderr, "binomialoptions: option %d price %f out of bounds\n", i, prices[i]);
                check = 0;
            }
        }
    }
    char extra[96];
    std::snprintf(extra, sizeof(extra), "steps=%d launches_per_iteration=%d launches=%lld", STEPS,
                  o.launches, iterations * o.launches);
    app_report("binomialoptions", o, (double)n * (double)iterations, iterations, seconds, "options/s",
               check, extra);
    APP_FREE(d_options, d_prices);
    return check == 0 ? 1 : 0;
}
