// Template kernels: every instantiation is registered under its own
// mangled name and takes its own parameter layout.
#include "sim_check.cuh"

template <typename T, int N>
__global__ void k_fill(T *out, T value)
{
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        out[i] = value;
}

template <typename A, typename B>
__global__ void k_pair(A a, B b, A *out)
{
    out[0] = a + (A)b;
}

template <typename T>
struct Wrap {
    T v[3];
};

template <typename T>
__global__ void k_wrap(Wrap<T> w, T *out)
{
    out[0] = w.v[0] + w.v[1] + w.v[2];
}

int main(void)
{
    void *d = nullptr;
    CHECK_CUDA(cudaMalloc(&d, 4096));
    k_fill<int, 16><<<1, 16>>>((int *)d, 3);
    CHECK_LAUNCH();
    k_fill<double, 64><<<1, 64>>>((double *)d, 2.0);
    CHECK_LAUNCH();
    k_fill<char, 1><<<1, 1>>>((char *)d, 'x');
    CHECK_LAUNCH();
    k_pair<char, double><<<1, 1>>>('a', 1.0, (char *)d);
    CHECK_LAUNCH();
    k_pair<double, char><<<1, 1>>>(1.0, 'a', (double *)d);
    CHECK_LAUNCH();
    k_wrap<short><<<1, 1>>>(Wrap<short>{{1, 2, 3}}, (short *)d);
    CHECK_LAUNCH();
    k_wrap<double><<<1, 1>>>(Wrap<double>{{1, 2, 3}}, (double *)d);
    CHECK_LAUNCH();
    cudaFuncAttributes attr;
    CHECK_CUDA(cudaFuncGetAttributes(&attr, k_fill<double, 64>));
    CHECK_CUDA(cudaFuncGetAttributes(&attr, k_wrap<short>));
    CHECK_CUDA(cudaFree(d));
    return pass();
}
