// Subject (e): __device__, __constant__ and __managed__ variables,
// cudaMemcpyToSymbol / cudaMemcpyFromSymbol (registration of host
// variables; the research report suspects it feeds slot 6 arguments).
#include "check.h"

__device__ int dev_table[64];
__constant__ float cscale;
__managed__ long long managed_sum;

__global__ void accumulate() {
    int i = threadIdx.x;
    dev_table[i] = static_cast<int>(static_cast<float>(dev_table[i]) * cscale);
    atomicAdd(reinterpret_cast<unsigned long long *>(&managed_sum),
              static_cast<unsigned long long>(dev_table[i]));
}

int main() {
    int h[64];
    long long want = 0;
    for (int i = 0; i < 64; i++) {
        h[i] = i + 1;
        want += 2 * (i + 1);
    }
    const float s = 2.0f;
    CK(cudaFree(nullptr));
    CK(cudaMemcpyToSymbol(dev_table, h, sizeof h));
    CK(cudaMemcpyToSymbol(cscale, &s, sizeof s));
    managed_sum = 0;
    accumulate<<<1, 64>>>();
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    int back[64];
    CK(cudaMemcpyFromSymbol(back, dev_table, sizeof back));
    for (int i = 0; i < 64; i++)
        EXPECT(back[i] == 2 * (i + 1), "dev_table[%d] = %d", i, back[i]);
    EXPECT(managed_sum == want, "managed_sum = %lld, want %lld", managed_sum, want);
    CK(cudaDeviceReset());
    std::printf("PASS symbols\n");
    return 0;
}
