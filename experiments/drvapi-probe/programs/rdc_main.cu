// Subject (d): -rdc=true across two files (rdc_dev.cu), which gives the
// runtime a device-linked fat binary.
#include <vector>

#include "check.h"

extern __device__ float rdc_scale(float x);
extern __device__ int rdc_calls;

__global__ void apply(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = rdc_scale(x[i]);
}

int main() {
    const int n = 4096;
    std::vector<float> h(n);
    for (int i = 0; i < n; i++)
        h[i] = static_cast<float>(i);
    CK(cudaFree(nullptr));
    float *d;
    CK(cudaMalloc(&d, n * sizeof(float)));
    CK(cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    apply<<<n / 256, 256>>>(d, n);
    CK(cudaGetLastError());
    CK(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
    int calls = 0;
    CK(cudaMemcpyFromSymbol(&calls, rdc_calls, sizeof calls));
    for (int i = 0; i < n; i++)
        EXPECT(h[i] == 3.0f * static_cast<float>(i) + 1.0f, "h[%d] = %g", i, h[i]);
    EXPECT(calls == n, "rdc_calls = %d", calls);
    CK(cudaFree(d));
    CK(cudaDeviceReset());
    std::printf("PASS rdc\n");
    return 0;
}
