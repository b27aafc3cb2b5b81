// __device__ and __constant__ variables: cudaMemcpyToSymbol/FromSymbol
// (sync and async, with offsets), cudaGetSymbolAddress/Size, and a symbol
// address used as an ordinary device pointer.
#include "sim_check.cuh"

__device__ int g_dev[1000];
__constant__ float c_table[256];
__device__ double g_scalar;
__device__ char g_odd[37];

__global__ void k_use(int *out)
{
    out[0] = g_dev[0] + (int)c_table[0] + (int)g_scalar + g_odd[0];
}

int main(void)
{
    size_t size = 0;
    CHECK_CUDA(cudaGetSymbolSize(&size, g_dev));
    REQUIRE(size == sizeof(g_dev), "g_dev size %zu", size);
    CHECK_CUDA(cudaGetSymbolSize(&size, c_table));
    REQUIRE(size == sizeof(c_table), "c_table size %zu", size);
    CHECK_CUDA(cudaGetSymbolSize(&size, g_scalar));
    REQUIRE(size == sizeof(double), "g_scalar size %zu", size);
    CHECK_CUDA(cudaGetSymbolSize(&size, g_odd));
    REQUIRE(size == 37, "g_odd size %zu", size);

    int h[1000], back[1000];
    for (int i = 0; i < 1000; i++)
        h[i] = i * 7 - 3;
    CHECK_CUDA(cudaMemcpyToSymbol(g_dev, h, sizeof(h)));
    memset(back, 0, sizeof(back));
    CHECK_CUDA(cudaMemcpyFromSymbol(back, g_dev, sizeof(back)));
    REQUIRE(memcmp(h, back, sizeof(h)) == 0, "g_dev round trip");

    // offsets: rewrite the middle only
    int mid[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    CHECK_CUDA(cudaMemcpyToSymbol(g_dev, mid, sizeof(mid), 500 * sizeof(int)));
    CHECK_CUDA(cudaMemcpyFromSymbol(back, g_dev, sizeof(back)));
    for (int i = 0; i < 1000; i++) {
        int want = (i >= 500 && i < 510) ? mid[i - 500] : h[i];
        REQUIRE(back[i] == want, "g_dev[%d] = %d, want %d", i, back[i], want);
    }
    int part[3];
    CHECK_CUDA(cudaMemcpyFromSymbol(part, g_dev, sizeof(part), 508 * sizeof(int)));
    REQUIRE(part[0] == 9 && part[1] == 10 && part[2] == h[510], "offset read");

    float t[256], tb[256];
    for (int i = 0; i < 256; i++)
        t[i] = i * 0.5f;
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreate(&s));
    CHECK_CUDA(cudaMemcpyToSymbolAsync(c_table, t, sizeof(t), 0, cudaMemcpyHostToDevice, s));
    CHECK_CUDA(cudaMemcpyFromSymbolAsync(tb, c_table, sizeof(tb), 0, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    REQUIRE(memcmp(t, tb, sizeof(t)) == 0, "c_table async round trip");

    double v = 3.25, vb = 0;
    CHECK_CUDA(cudaMemcpyToSymbol(g_scalar, &v, sizeof(v)));
    CHECK_CUDA(cudaMemcpyFromSymbol(&vb, g_scalar, sizeof(vb)));
    REQUIRE(vb == 3.25, "g_scalar %f", vb);

    // the symbol address is a device pointer: plain copies reach the variable
    void *addr = nullptr;
    CHECK_CUDA(cudaGetSymbolAddress(&addr, g_dev));
    REQUIRE(addr != nullptr, "null symbol address");
    int first = 0;
    CHECK_CUDA(cudaMemcpy(&first, addr, sizeof(int), cudaMemcpyDeviceToHost));
    REQUIRE(first == h[0], "read through symbol address %d", first);
    int nine = 99;
    CHECK_CUDA(cudaMemcpy((int *)addr + 999, &nine, sizeof(int), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpyFromSymbol(back, g_dev, sizeof(back)));
    REQUIRE(back[999] == 99, "write through symbol address");
    cudaPointerAttributes pa;
    CHECK_CUDA(cudaPointerGetAttributes(&pa, addr));
    REQUIRE(pa.type == cudaMemoryTypeDevice, "symbol pointer type %d", (int)pa.type);

    // device-to-device between a symbol and an allocation
    int *d;
    CHECK_CUDA(cudaMalloc(&d, sizeof(h)));
    CHECK_CUDA(cudaMemcpyFromSymbol(d, g_dev, sizeof(h), 0, cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaMemcpy(back, d, sizeof(h), cudaMemcpyDeviceToHost));
    REQUIRE(back[999] == 99 && back[0] == h[0], "symbol to device copy");
    CHECK_CUDA(cudaMemset(d, 0, sizeof(h)));
    CHECK_CUDA(cudaMemcpyToSymbol(g_dev, d, sizeof(h), 0, cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaMemcpyFromSymbol(back, g_dev, sizeof(back)));
    for (int i = 0; i < 1000; i++)
        REQUIRE(back[i] == 0, "g_dev[%d] not cleared", i);

    char odd[37];
    for (int i = 0; i < 37; i++)
        odd[i] = (char)(i + 1);
    CHECK_CUDA(cudaMemcpyToSymbol(g_odd, odd, 37));
    char oddb[37] = {0};
    CHECK_CUDA(cudaMemcpyFromSymbol(oddb, g_odd, 37));
    REQUIRE(memcmp(odd, oddb, 37) == 0, "g_odd round trip");

    k_use<<<1, 1>>>(d);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFree(d));
    return pass();
}
