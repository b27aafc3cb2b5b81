// Linear copies with data verification for sizes from 1 byte up: pageable
// and pinned (cudaMallocHost, cudaHostAlloc), sync and async on a created
// stream, device to device, cudaMemcpyDefault, unaligned offsets.
// Usage: mem_roundtrip [size ...]   (default: 1 B .. 16 MiB)
#include <vector>
#include "sim_check.cuh"

static void expect_same(const void *got, const void *want, size_t n, const char *what, size_t size)
{
    if (memcmp(got, want, n) == 0)
        return;
    const unsigned char *g = (const unsigned char *)got, *w = (const unsigned char *)want;
    size_t i = 0;
    while (g[i] == w[i])
        i++;
    REQUIRE(false, "%s, size %zu: byte %zu is %u, want %u", what, size, i, g[i], w[i]);
}

// host memory dst cleared, then n bytes of src copied into it with cudaMemcpy
// (kind), and compared with want
static void read_back(unsigned char *dst, const void *src, size_t n, cudaMemcpyKind kind, const void *want,
                      const char *what)
{
    memset(dst, 0, n);
    CHECK_CUDA(cudaMemcpy(dst, src, n, kind));
    expect_same(dst, want, n, what, n);
}

static void roundtrip(size_t n, cudaStream_t s)
{
    std::vector<unsigned char> ref_a(n), ref_b(n), host(n);
    fill_pattern(ref_a.data(), n, (uint32_t)n);
    fill_pattern(ref_b.data(), n, (uint32_t)n + 1);
    unsigned char *d1, *d2, *p1, *p2;
    CHECK_CUDA(cudaMalloc(&d1, n));
    CHECK_CUDA(cudaMalloc(&d2, n));
    CHECK_CUDA(cudaMallocHost(&p1, n));
    CHECK_CUDA(cudaHostAlloc(&p2, n, cudaHostAllocDefault));

    // pageable, synchronous
    CHECK_CUDA(cudaMemcpy(d1, ref_a.data(), n, cudaMemcpyHostToDevice));
    read_back(host.data(), d1, n, cudaMemcpyDeviceToHost, ref_a.data(), "pageable H2D/D2H");

    // device to device
    CHECK_CUDA(cudaMemset(d2, 0, n));
    CHECK_CUDA(cudaMemcpy(d2, d1, n, cudaMemcpyDeviceToDevice));
    read_back(host.data(), d2, n, cudaMemcpyDeviceToHost, ref_a.data(), "D2D");

    // pinned, synchronous
    memcpy(p1, ref_b.data(), n);
    CHECK_CUDA(cudaMemcpy(d1, p1, n, cudaMemcpyHostToDevice));
    read_back(p2, d1, n, cudaMemcpyDeviceToHost, ref_b.data(), "pinned H2D/D2H");

    // pinned, asynchronous on a created stream
    memcpy(p1, ref_a.data(), n);
    CHECK_CUDA(cudaMemcpyAsync(d2, p1, n, cudaMemcpyHostToDevice, s));
    memset(p2, 0, n);
    CHECK_CUDA(cudaMemcpyAsync(d1, d2, n, cudaMemcpyDeviceToDevice, s));
    CHECK_CUDA(cudaMemcpyAsync(p2, d1, n, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    expect_same(p2, ref_a.data(), n, "pinned async H2D/D2D/D2H", n);

    // pageable, asynchronous
    CHECK_CUDA(cudaMemcpyAsync(d1, ref_b.data(), n, cudaMemcpyHostToDevice, s));
    memset(host.data(), 0, n);
    CHECK_CUDA(cudaMemcpyAsync(host.data(), d1, n, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    expect_same(host.data(), ref_b.data(), n, "pageable async", n);

    // cudaMemcpyDefault: direction from the pointers (pageable, pinned, device)
    CHECK_CUDA(cudaMemcpy(d2, ref_a.data(), n, cudaMemcpyDefault));
    CHECK_CUDA(cudaMemcpy(d1, d2, n, cudaMemcpyDefault));
    read_back(p2, d1, n, cudaMemcpyDefault, ref_a.data(), "cudaMemcpyDefault");
    memcpy(p1, ref_b.data(), n);
    CHECK_CUDA(cudaMemcpyAsync(d1, p1, n, cudaMemcpyDefault, s));
    memset(host.data(), 0, n);
    CHECK_CUDA(cudaMemcpyAsync(host.data(), d1, n, cudaMemcpyDefault, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    expect_same(host.data(), ref_b.data(), n, "cudaMemcpyDefault async", n);
    // host to host through the runtime
    read_back(host.data(), p1, n, cudaMemcpyHostToHost, ref_b.data(), "H2H");

    // unaligned offsets inside the allocations: neighbours stay untouched
    if (n > 8) {
        size_t m = n - 8;
        CHECK_CUDA(cudaMemcpy(d1, ref_a.data(), n, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(d1 + 3, ref_b.data() + 5, m, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(host.data(), d1, n, cudaMemcpyDeviceToHost));
        expect_same(host.data(), ref_a.data(), 3, "offset copy head", n);
        expect_same(host.data() + 3, ref_b.data() + 5, m, "offset copy body", n);
        expect_same(host.data() + 3 + m, ref_a.data() + 3 + m, 5, "offset copy tail", n);
        memset(host.data(), 0, n);
        CHECK_CUDA(cudaMemcpy(host.data() + 7, d1 + 3, m, cudaMemcpyDeviceToHost));
        expect_same(host.data() + 7, ref_b.data() + 5, m, "offset D2H", n);
    }

    FREE_DEVICE(d1, d2);
    FREE_HOST(p1, p2);
}

int main(int argc, char **argv)
{
    std::vector<size_t> sizes = {1, 2, 3, 4095, 4096, 4097, 65535, 65536, 65537,
                                 (1u << 20) + 1, (4u << 20) - 1, (4u << 20) + 1, 16u << 20};
    if (argc > 1) {
        sizes.clear();
        for (int i = 1; i < argc; i++)
            sizes.push_back((size_t)strtoull(argv[i], nullptr, 0));
    }
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreate(&s));
    for (size_t n : sizes) {
        roundtrip(n, s);
        std::printf("size %zu ok\n", n);
    }
    CHECK_CUDA(cudaStreamDestroy(s));
    return pass();
}
