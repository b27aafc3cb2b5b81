// Vector add over several sizes, including ones not a multiple of the block.
#include <vector>
#include "check.cuh"

__global__ void vector_add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

static void run_size(int n)
{
    std::vector<float> a(n), b(n), c(n, -1.0f);
    for (int i = 0; i < n; i++) {
        a[i] = (float)(i % 1000);
        b[i] = (float)(2 * (i % 777));
    }
    size_t bytes = (size_t)n * sizeof(float);
    float *da, *db, *dc;
    CHECK_CUDA(cudaMalloc(&da, bytes));
    CHECK_CUDA(cudaMalloc(&db, bytes));
    CHECK_CUDA(cudaMalloc(&dc, bytes));
    CHECK_CUDA(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice));
    int block = 256;
    int grid = (n + block - 1) / block;
    vector_add<<<grid, block>>>(da, db, dc, n);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost));
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        REQUIRE(c[i] == a[i] + b[i], "n=%d mismatch at %d: %f", n, i, (double)c[i]);
        sum += c[i];
    }
    std::printf("n=%d sum=%.1f\n", n, sum);
    FREE_DEVICE(da, db, dc);
}

int main(void)
{
    const int sizes[] = {1, 255, 256, 257, 100000, 1 << 22};
    for (int n : sizes)
        run_size(n);
    return pass();
}
