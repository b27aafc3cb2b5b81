// One templated kernel instantiated for int, float and double.
#include <vector>
#include "check.cuh"

template <typename T>
__global__ void axpy(T alpha, const T *x, T *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = alpha * x[i] + y[i];
}

template <typename T>
static double run_axpy(const char *type_name, T alpha)
{
    const int n = 10000;
    std::vector<T> x(n), y(n), out(n);
    for (int i = 0; i < n; i++) {
        x[i] = (T)(i % 100);
        y[i] = (T)(i % 7);
    }
    T *dx, *dy;
    CHECK_CUDA(cudaMalloc(&dx, n * sizeof(T)));
    CHECK_CUDA(cudaMalloc(&dy, n * sizeof(T)));
    CHECK_CUDA(cudaMemcpy(dx, x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dy, y.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    axpy<T><<<(n + 127) / 128, 128>>>(alpha, dx, dy, n);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(out.data(), dy, n * sizeof(T), cudaMemcpyDeviceToHost));
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        T expect = alpha * x[i] + y[i]; // exact for these small values
        REQUIRE(out[i] == expect, "%s element %d differs", type_name, i);
        sum += (double)out[i];
    }
    std::printf("axpy<%s> sizeof=%zu sum=%.2f\n", type_name, sizeof(T), sum);
    FREE_DEVICE(dx, dy);
    return sum;
}

int main(void)
{
    run_axpy<int>("int", 3);
    run_axpy<float>("float", 2.5f);
    run_axpy<double>("double", -0.75);
    return pass();
}
