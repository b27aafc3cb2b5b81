// Subject (a) static cudart, (b) -cudart shared, (c) --default-stream
// per-thread: cudaFree(0), cudaMalloc, H2D, a kernel launch, D2H,
// cudaDeviceReset.
#include <vector>

#include "check.h"
#include "operands.h"

__global__ void vecadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

int main() {
    const int n = 1 << 16;
    std::vector<float> a(n), b(n), c(n, 0.0f);
    for (int i = 0; i < n; i++) {
        a[i] = static_cast<float>(i);
        b[i] = 2.0f * static_cast<float>(i);
    }
    CK(cudaFree(nullptr));
    float *da, *db, *dc;
    upload_operands(a, b, &da, &db, &dc);
    vecadd<<<(n + 255) / 256, 256>>>(da, db, dc, n);
    CK(cudaGetLastError());
    CK(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        EXPECT(c[i] == 3.0f * static_cast<float>(i), "c[%d] = %g", i, c[i]);
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dc));
    CK(cudaDeviceReset());
    std::printf("PASS vecadd\n");
    return 0;
}
