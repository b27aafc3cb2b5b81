// MatrixMultiply: C = A * B for square float matrices, tiled through shared
// memory. One iteration is one kernel launch plus a synchronize; inputs stay
// on the device.
#include <algorithm>
#include <cmath>
#include <vector>
#include "app_common.cuh"

#define TILE 32

__global__ void matmul_tiled(const float *a, const float *b, float *c, int n)
{
    __shared__ float ta[TILE][TILE];
    __shared__ float tb[TILE][TILE + 1]; // padding avoids bank conflicts on the column reads
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n; t += TILE) {
        ta[threadIdx.y][threadIdx.x] = (row < n && t + threadIdx.x < n) ? a[(size_t)row * n + t + threadIdx.x] : 0.0f;
        tb[threadIdx.y][threadIdx.x] = (t + threadIdx.y < n && col < n) ? b[(size_t)(t + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; k++)
            acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
        __syncthreads();
    }
    if (row < n && col < n)
        c[(size_t)row * n + col] = acc;
}

int main(int argc, char **argv)
{
    const app_option_spec spec = {"matrixmul", "matrix dimension N (N x N floats)", 2048, 20, false, 32768};
    app_options o = app_parse(argc, argv, spec);
    const int n = (int)o.size;
    const size_t elems = (size_t)n * n;
    std::vector<float> a(elems), b(elems), c(elems);
    app_lcg rng{3u};
    auto uniform = [&rng]() { return (float)(rng.next() >> 8) / 8388608.0f - 1.0f; };
    for (auto &x : a)
        x = uniform();
    for (auto &x : b)
        x = uniform();
    float *d_a, *d_b, *d_c;
    APP_CHECK(cudaMalloc(&d_a, elems * sizeof(float)));
    APP_CHECK(cudaMalloc(&d_b, elems * sizeof(float)));
    APP_CHECK(cudaMalloc(&d_c, elems * sizeof(float)));
    APP_CHECK(cudaMemcpy(d_a, a.data(), elems * sizeof(float), cudaMemcpyHostToDevice));
    APP_CHECK(cudaMemcpy(d_b, b.data(), elems * sizeof(float), cudaMemcpyHostToDevice));
    APP_CHECK(cudaMemset(d_c, 0, elems * sizeof(float)));

    dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
    auto launch = [&]() {
        matmul_tiled<<<grid, block>>>(d_a, d_b, d_c, n);
        APP_CHECK(cudaGetLastError());
    };
    launch(); // warm-up
    APP_CHECK(cudaDeviceSynchronize());
    double seconds = 0.0;
    long long iterations = app_timed_loop(o, 1, &seconds, launch, app_device_sync);
    APP_CHECK(cudaMemcpy(c.data(), d_c, elems * sizeof(float), cudaMemcpyDeviceToHost));

    int check = -1;
    if (!o.skip_check) {
        check = 1;
        app_lcg pick{11u};
        for (int s = 0; s < 512; s++) {
            int i = (int)((pick.next() >> 8) % (unsigned int)n);
            int j = (int)((pick.next() >> 8) % (unsigned int)n);
            app_ref_sum ref;
            for (int k = 0; k < n; k++)
                ref.add((double)a[(size_t)i * n + k] * (double)b[(size_t)k * n + j]);
            double got = c[(size_t)i * n + j];
            if (!ref.near(got, 1e-5, 1e-6)) {
                std::fprintf(stderr, "matrixmul: c[%d][%d]=%.7g expected %.7g\n", i, j, got, ref.sum);
                check = 0;
                break;
            }
        }
    }
    double flops = 2.0 * (double)n * (double)n * (double)n;
    char extra[64];
    std::snprintf(extra, sizeof(extra), "n=%d gflops=%.1f", n,
                  seconds > 0 ? flops * (double)iterations / seconds / 1e9 : 0.0);
    app_report("matrixmul", o, flops * (double)iterations, iterations, seconds, "flop/s", check, extra);
    APP_FREE(d_a, d_b, d_c);
    return check == 0 ? 1 : 0;
}
