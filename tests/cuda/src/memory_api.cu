// Coverage of the memory API surface: pitched 2D copies, memsets (into
// pinned host memory too), batches of copies (cudaMemcpyBatchAsync), symbols,
// cudaMemcpyDefault, pointer attributes, stream-ordered allocation, host
// registration and transfer sizes from 1 byte to 64 MiB.
#include <cstring>
#include <vector>
#include "check.cuh"

__device__ int g_device_table[64];
__constant__ float g_const_coef[16];

__global__ void apply_coef(int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = g_device_table[i % 64] * (int)g_const_coef[i % 16];
}

__global__ void double_table(void)
{
    int i = threadIdx.x;
    if (i < 64)
        g_device_table[i] *= 2;
}

__global__ void write_pattern(unsigned int *p, int n, unsigned int base)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = base + (unsigned int)i;
}

static void test_pitched(void)
{
    const int width = 333, height = 77; // in floats / rows
    std::vector<float> src((size_t)width * height), dst((size_t)width * height, 0.0f);
    for (size_t i = 0; i < src.size(); i++)
        src[i] = (float)i * 0.25f;
    float *a, *b;
    size_t pitch_a = 0, pitch_b = 0;
    CHECK_CUDA(cudaMallocPitch(&a, &pitch_a, width * sizeof(float), height));
    CHECK_CUDA(cudaMallocPitch(&b, &pitch_b, width * sizeof(float), height));
    REQUIRE(pitch_a >= width * sizeof(float), "pitch smaller than row");
    CHECK_CUDA(cudaMemcpy2D(a, pitch_a, src.data(), width * sizeof(float), width * sizeof(float),
                            height, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy2D(b, pitch_b, a, pitch_a, width * sizeof(float), height,
                            cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaMemcpy2D(dst.data(), width * sizeof(float), b, pitch_b, width * sizeof(float),
                            height, cudaMemcpyDeviceToHost));
    REQUIRE(src == dst, "pitched round trip differs");
    // A sub-rectangle: columns 10..109 of rows 5..24.
    std::vector<float> sub(100 * 20, -1.0f);
    CHECK_CUDA(cudaMemcpy2D(sub.data(), 100 * sizeof(float), (char *)a + 5 * pitch_a + 10 * sizeof(float),
                            pitch_a, 100 * sizeof(float), 20, cudaMemcpyDeviceToHost));
    for (int r = 0; r < 20; r++)
        for (int c = 0; c < 100; c++)
            REQUIRE(sub[r * 100 + c] == src[(size_t)(r + 5) * width + c + 10],
                    "sub-rectangle mismatch at %d,%d", r, c);
    std::printf("cudaMallocPitch + cudaMemcpy2D H2D/D2D/D2H/sub-rect: ok\n");
    FREE_DEVICE(a, b);
}

static void test_memset(void)
{
    const size_t n = 1000003;
    unsigned char *d;
    CHECK_CUDA(cudaMalloc(&d, n));
    CHECK_CUDA(cudaMemset(d, 0xab, n));
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreate(&s));
    CHECK_CUDA(cudaMemsetAsync(d + 1000, 0x11, 5000, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    std::vector<unsigned char> h(n);
    CHECK_CUDA(cudaMemcpy(h.data(), d, n, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) {
        unsigned char expect = (i >= 1000 && i < 6000) ? 0x11 : 0xab;
        REQUIRE(h[i] == expect, "memset byte %zu = 0x%02x", i, h[i]);
    }
    std::printf("cudaMemset + cudaMemsetAsync: ok\n");
    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFree(d));
}

static void test_symbols(void)
{
    int table[64];
    float coef[16];
    for (int i = 0; i < 64; i++)
        table[i] = i - 20;
    for (int i = 0; i < 16; i++)
        coef[i] = (float)(i + 1);
    CHECK_CUDA(cudaMemcpyToSymbol(g_device_table, table, sizeof(table)));
    CHECK_CUDA(cudaMemcpyToSymbol(g_const_coef, coef, sizeof(coef)));
    // Overwrite coef[8..15] through an offset.
    float high[8];
    for (int i = 0; i < 8; i++)
        high[i] = (float)(100 + i);
    CHECK_CUDA(cudaMemcpyToSymbol(g_const_coef, high, sizeof(high), 8 * sizeof(float)));
    double_table<<<1, 64>>>();
    CHECK_LAUNCH();
    const int n = 1000;
    int *dout;
    CHECK_CUDA(cudaMalloc(&dout, n * sizeof(int)));
    apply_coef<<<(n + 127) / 128, 128>>>(dout, n);
    CHECK_LAUNCH();
    std::vector<int> out(n);
    CHECK_CUDA(cudaMemcpy(out.data(), dout, n * sizeof(int), cudaMemcpyDeviceToHost));
    long long sum = 0;
    for (int i = 0; i < n; i++) {
        int c = i % 16 < 8 ? i % 16 + 1 : 100 + i % 16 - 8;
        int expect = 2 * (i % 64 - 20) * c;
        REQUIRE(out[i] == expect, "symbol kernel element %d: %d expected %d", i, out[i], expect);
        sum += out[i];
    }
    int back[64];
    float coef_back[16];
    CHECK_CUDA(cudaMemcpyFromSymbol(back, g_device_table, sizeof(back)));
    CHECK_CUDA(cudaMemcpyFromSymbol(coef_back, g_const_coef, 4 * sizeof(float), 10 * sizeof(float)));
    for (int i = 0; i < 64; i++)
        REQUIRE(back[i] == 2 * (i - 20), "device symbol readback %d", i);
    for (int i = 0; i < 4; i++)
        REQUIRE(coef_back[i] == (float)(102 + i), "constant symbol readback %d", i);
    std::printf("cudaMemcpyToSymbol/FromSymbol __device__ + __constant__: ok sum=%lld\n", sum);
    CHECK_CUDA(cudaFree(dout));
}

static void test_default_kind(void)
{
    const size_t n = 1 << 16;
    std::vector<unsigned int> pageable(n), back(n, 0);
    for (size_t i = 0; i < n; i++)
        pageable[i] = (unsigned int)(i * 2654435761u);
    unsigned int *pinned, *d1, *d2;
    CHECK_CUDA(cudaMallocHost(&pinned, n * sizeof(unsigned int)));
    CHECK_CUDA(cudaMalloc(&d1, n * sizeof(unsigned int)));
    CHECK_CUDA(cudaMalloc(&d2, n * sizeof(unsigned int)));
    CHECK_CUDA(cudaMemcpy(d1, pageable.data(), n * sizeof(unsigned int), cudaMemcpyDefault));
    CHECK_CUDA(cudaMemcpy(d2, d1, n * sizeof(unsigned int), cudaMemcpyDefault));
    CHECK_CUDA(cudaMemcpy(pinned, d2, n * sizeof(unsigned int), cudaMemcpyDefault));
    CHECK_CUDA(cudaMemcpy(back.data(), pinned, n * sizeof(unsigned int), cudaMemcpyDefault));
    REQUIRE(back == pageable, "cudaMemcpyDefault chain differs");
    std::printf("cudaMemcpyDefault H2D/D2D/D2H/H2H: ok\n");
    CHECK_CUDA(cudaFreeHost(pinned));
    FREE_DEVICE(d1, d2);
}

static const char *memory_type_name(cudaMemoryType t)
{
    switch (t) {
    case cudaMemoryTypeUnregistered: return "unregistered";
    case cudaMemoryTypeHost: return "host";
    case cudaMemoryTypeDevice: return "device";
    case cudaMemoryTypeManaged: return "managed";
    }
    return "unknown";
}

static void test_pointer_attributes(void)
{
    int dev = 0;
    CHECK_CUDA(cudaGetDevice(&dev));
    void *d, *pinned;
    std::vector<char> pageable(4096);
    CHECK_CUDA(cudaMalloc(&d, 4096));
    CHECK_CUDA(cudaMallocHost(&pinned, 4096));
    cudaPointerAttributes attr;
    CHECK_CUDA(cudaPointerGetAttributes(&attr, d));
    std::printf("attributes device ptr: type=%s on current device=%s\n", memory_type_name(attr.type),
                attr.device == dev ? "yes" : "no");
    REQUIRE(attr.type == cudaMemoryTypeDevice && attr.device == dev && attr.devicePointer == d,
            "device pointer attributes wrong");
    CHECK_CUDA(cudaPointerGetAttributes(&attr, (char *)d + 100));
    REQUIRE(attr.type == cudaMemoryTypeDevice && attr.devicePointer == (char *)d + 100,
            "interior device pointer attributes wrong");
    CHECK_CUDA(cudaPointerGetAttributes(&attr, pinned));
    std::printf("attributes pinned ptr: type=%s host pointer matches=%s\n",
                memory_type_name(attr.type), attr.hostPointer == pinned ? "yes" : "no");
    REQUIRE(attr.type == cudaMemoryTypeHost && attr.hostPointer == pinned,
            "pinned pointer attributes wrong");
    CHECK_CUDA(cudaPointerGetAttributes(&attr, pageable.data()));
    std::printf("attributes pageable ptr: type=%s\n", memory_type_name(attr.type));
    REQUIRE(attr.type == cudaMemoryTypeUnregistered, "pageable pointer attributes wrong");
    CHECK_CUDA(cudaFree(d));
    CHECK_CUDA(cudaFreeHost(pinned));
}

// memsets into pinned host memory (unified addressing): after the stream's
// earlier work, rows of a 2D one
static void test_memset_pinned(void)
{
    cudaStream_t s = nonblocking_stream();
    unsigned char *pinned, *d;
    int ok = 1;
    CHECK_CUDA(cudaMallocHost(&pinned, 4096));
    CHECK_CUDA(cudaMalloc(&d, 4096));
    CHECK_CUDA(cudaMemset(pinned, 0x5a, 4096));
    for (int i = 0; i < 4096; i++)
        ok &= pinned[i] == 0x5a;
    CHECK_CUDA(cudaMemset(d, 0x11, 4096));
    CHECK_CUDA(cudaMemcpyAsync(pinned, d, 4096, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaMemsetAsync(pinned, 0x22, 4096, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    for (int i = 0; i < 4096; i++)
        ok &= pinned[i] == 0x22;
    CHECK_CUDA(cudaMemset2D(pinned, 256, 0x33, 100, 4));
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < 256; i++)
            ok &= pinned[r * 256 + i] == (i < 100 ? 0x33 : 0x22);
    std::printf("memsets into pinned host memory: %s\n", ok ? "as expected" : "WRONG");
    REQUIRE(ok, "a memset into pinned host memory set the wrong bytes");
    CHECK_CUDA(cudaFree(d));
    CHECK_CUDA(cudaFreeHost(pinned));
    CHECK_CUDA(cudaStreamDestroy(s));
}

// cudaMemcpyBatchAsync: pageable and pinned uploads, a device-to-device and
// a download in one batch under two sets of attributes; the legacy stream
// and an invalid source access order as native answers them
static void test_memcpy_batch(void)
{
    const size_t n = 1 << 20;
    cudaStream_t s = nonblocking_stream();
    std::vector<unsigned char> up(n, 0x31), down(n);
    unsigned char *pinned, *d1, *d2, *d3;
    CHECK_CUDA(cudaMallocHost(&pinned, n));
    memset(pinned, 0x42, n);
    CHECK_CUDA(cudaMalloc(&d1, n));
    CHECK_CUDA(cudaMalloc(&d2, n));
    CHECK_CUDA(cudaMalloc(&d3, n));
    void *dsts[] = {d1, d2, d3, down.data()};
    const void *srcs[] = {up.data(), pinned, d2, d1};
    size_t sizes[] = {n, n, n, n}, idxs[] = {0, 2};
    cudaMemcpyAttributes attrs[2] = {};
    attrs[0].srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall;
    attrs[1].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    // the copies of a batch have no order among them: the last two read
    // what the first two wrote only in the second batch
    CHECK_CUDA(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, attrs, idxs, 1, s));
    CHECK_CUDA(cudaMemcpyBatchAsync(dsts + 2, srcs + 2, sizes + 2, 2, attrs + 1, idxs, 1, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    std::vector<unsigned char> d3h(n);
    CHECK_CUDA(cudaMemcpy(d3h.data(), d3, n, cudaMemcpyDeviceToHost));
    bool ok = down == up && d3h == std::vector<unsigned char>(n, 0x42);
    std::printf("cudaMemcpyBatchAsync: bytes %s", ok ? "as expected" : "WRONG");
    REQUIRE(ok, "a batch of copies moved the wrong bytes");
    std::printf(", legacy stream: %s",
                cudaGetErrorName(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, attrs, idxs, 1, cudaStreamLegacy)));
    attrs[0].srcAccessOrder = cudaMemcpySrcAccessOrderInvalid;
    std::printf(", invalid access order: %s\n",
                cudaGetErrorName(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, attrs, idxs, 1, s)));
    (void)cudaGetLastError();
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaFree(d3));
    CHECK_CUDA(cudaFree(d2));
    CHECK_CUDA(cudaFree(d1));
    CHECK_CUDA(cudaFreeHost(pinned));
    CHECK_CUDA(cudaStreamDestroy(s));
}

static void test_malloc_async(void)
{
    cudaStream_t s = nonblocking_stream();
    const int n = 300000;
    unsigned int *pinned;
    CHECK_CUDA(cudaMallocHost(&pinned, n * sizeof(unsigned int)));
    for (int round = 0; round < 3; round++) {
        unsigned int *d = nullptr;
        CHECK_CUDA(cudaMallocAsync(&d, n * sizeof(unsigned int), s));
        write_pattern<<<(n + 255) / 256, 256, 0, s>>>(d, n, 1000u * (unsigned int)round);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaMemcpyAsync(pinned, d, n * sizeof(unsigned int), cudaMemcpyDeviceToHost, s));
        CHECK_CUDA(cudaFreeAsync(d, s));
        CHECK_CUDA(cudaStreamSynchronize(s));
        for (int i = 0; i < n; i++)
            REQUIRE(pinned[i] == 1000u * (unsigned int)round + (unsigned int)i,
                    "mallocAsync round %d element %d", round, i);
    }
    std::printf("cudaMallocAsync/cudaFreeAsync 3 rounds: ok\n");
    CHECK_CUDA(cudaFreeHost(pinned));
    CHECK_CUDA(cudaStreamDestroy(s));
}

static void test_host_register(void)
{
    const int n = 1 << 20;
    unsigned int *host = (unsigned int *)std::malloc(n * sizeof(unsigned int));
    REQUIRE(host != nullptr, "malloc failed");
    std::memset(host, 0, n * sizeof(unsigned int));
    CHECK_CUDA(cudaHostRegister(host, n * sizeof(unsigned int), cudaHostRegisterMapped));
    cudaPointerAttributes attr;
    CHECK_CUDA(cudaPointerGetAttributes(&attr, host));
    std::printf("attributes registered ptr: type=%s\n", memory_type_name(attr.type));
    REQUIRE(attr.type == cudaMemoryTypeHost, "registered memory not reported as host");

    unsigned int *d;
    CHECK_CUDA(cudaMalloc(&d, n * sizeof(unsigned int)));
    write_pattern<<<(n + 255) / 256, 256>>>(d, n, 7u);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(host, d, n * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        REQUIRE(host[i] == 7u + (unsigned int)i, "registered copy element %d", i);

    // Kernel writes straight into the registered pages through its mapping.
    unsigned int *mapped = nullptr;
    CHECK_CUDA(cudaHostGetDevicePointer((void **)&mapped, host, 0));
    write_pattern<<<(n + 255) / 256, 256>>>(mapped, n, 99u);
    CHECK_LAUNCH();
    for (int i = 0; i < n; i++)
        REQUIRE(host[i] == 99u + (unsigned int)i, "mapped write element %d", i);
    std::printf("cudaHostRegister malloc memory, copy + mapped kernel write: ok\n");
    CHECK_CUDA(cudaHostUnregister(host));
    std::free(host);
    CHECK_CUDA(cudaFree(d));
}

static void test_sizes(void)
{
    const size_t sizes[] = {1, 2, 3, 7, 64, 4095, 4096, 4097, 65537, 1 << 20, (1 << 20) + 1,
                            16u << 20, 64u << 20};
    const size_t max = 64u << 20;
    std::vector<unsigned char> src(max), dst(max);
    unsigned int seed = 5u;
    for (size_t i = 0; i < max; i += 4) {
        unsigned int r = lcg_next(&seed);
        std::memcpy(&src[i], &r, 4);
    }
    unsigned char *d1, *d2;
    CHECK_CUDA(cudaMalloc(&d1, max));
    CHECK_CUDA(cudaMalloc(&d2, max));
    for (size_t size : sizes) {
        std::memset(dst.data(), 0, size + (size < max ? 1 : 0));
        CHECK_CUDA(cudaMemset(d2, 0, size));
        CHECK_CUDA(cudaMemcpy(d1, src.data(), size, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(d2, d1, size, cudaMemcpyDeviceToDevice));
        CHECK_CUDA(cudaMemcpy(dst.data(), d2, size, cudaMemcpyDeviceToHost));
        REQUIRE(std::memcmp(src.data(), dst.data(), size) == 0, "round trip of %zu bytes differs", size);
        if (size < max)
            REQUIRE(dst[size] == 0, "copy of %zu bytes wrote past its end", size);
        std::printf("round trip %zu bytes: ok\n", size);
    }
    FREE_DEVICE(d1, d2);
}

int main(void)
{
    test_pitched();
    test_memset();
    test_symbols();
    test_default_kind();
    test_pointer_attributes();
    test_memset_pinned();
    test_memcpy_batch();
    test_malloc_async();
    test_host_register();
    test_sizes();
    return pass();
}
