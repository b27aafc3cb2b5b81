// Tiled matrix multiply in shared memory, checked exactly with small integers.
#include <vector>
#include "check.cuh"

#define TILE 16

__global__ void matmul_tiled(const float *a, const float *b, float *c, int m, int k, int n)
{
    __shared__ float ta[TILE][TILE];
    __shared__ float tb[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < (k + TILE - 1) / TILE; t++) {
        int ka = t * TILE + threadIdx.x;
        int kb = t * TILE + threadIdx.y;
        ta[threadIdx.y][threadIdx.x] = (row < m && ka < k) ? a[row * k + ka] : 0.0f;
        tb[threadIdx.y][threadIdx.x] = (kb < k && col < n) ? b[kb * n + col] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE; i++)
            acc += ta[threadIdx.y][i] * tb[i][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n)
        c[row * n + col] = acc;
}

static void run_case(int m, int k, int n)
{
    // Entries in [-4, 4]: every partial sum is an exactly representable integer.
    std::vector<float> a((size_t)m * k), b((size_t)k * n), c((size_t)m * n);
    unsigned int seed = 12345u + (unsigned int)(m * 31 + k * 7 + n);
    for (auto &x : a)
        x = (float)((int)(lcg_next(&seed) >> 16) % 9 - 4);
    for (auto &x : b)
        x = (float)((int)(lcg_next(&seed) >> 16) % 9 - 4);
    float *da, *db, *dc;
    CHECK_CUDA(cudaMalloc(&da, a.size() * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&db, b.size() * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dc, c.size() * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));
    dim3 block(TILE, TILE);
    dim3 grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
    matmul_tiled<<<grid, block>>>(da, db, dc, m, k, n);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(c.data(), dc, c.size() * sizeof(float), cudaMemcpyDeviceToHost));
    long long checksum = 0;
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
            long long ref = 0;
            for (int p = 0; p < k; p++)
                ref += (long long)a[(size_t)i * k + p] * (long long)b[(size_t)p * n + j];
            float got = c[(size_t)i * n + j];
            REQUIRE((long long)got == ref, "%dx%dx%d: c[%d][%d]=%f expected %lld", m, k, n, i, j,
                    (double)got, ref);
            checksum += ref * (long long)((i + 3 * j) % 17);
        }
    }
    std::printf("matmul %dx%dx%d checksum=%lld\n", m, k, n, checksum);
    FREE_DEVICE(da, db, dc);
}

int main(void)
{
    run_case(16, 16, 16);
    run_case(33, 17, 45);
    run_case(256, 512, 128);
    run_case(500, 300, 400);
    return pass();
}
