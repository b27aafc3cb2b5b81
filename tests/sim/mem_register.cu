// Registered and mapped host memory: cudaHostRegister'ed malloc memory
// (aligned and not) carries sync and async copies; small heap buffers, whose
// pages hold other heap objects (the library's own record of the
// registration among them), leave those objects and the heap intact through
// registration and unregistration; double registration and
// unregistration give CUDA's errors; cudaHostAlloc flags, mapped device
// pointers and pointer attributes of pinned memory.
#include <cstdlib>
#include <vector>
#include "sim_check.cuh"

static void copies_through(unsigned char *h, size_t n, uint32_t seed, cudaStream_t s)
{
    unsigned char *d;
    CHECK_CUDA(cudaMalloc(&d, n));
    fill_pattern(h, n, seed);
    CHECK_CUDA(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
    memset(h, 0, n);
    CHECK_CUDA(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost));
    REQUIRE(check_pattern(h, n, seed) < 0, "registered sync round trip of %zu bytes", n);
    fill_pattern(h, n, seed + 1);
    CHECK_CUDA(cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    memset(h, 0, n);
    CHECK_CUDA(cudaMemcpyAsync(h, d, n, cudaMemcpyDefault, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    REQUIRE(check_pattern(h, n, seed + 1) < 0, "registered async round trip of %zu bytes", n);
    CHECK_CUDA(cudaFree(d));
}

int main(void)
{
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreate(&s));
    const size_t n = (3u << 20) + 17;
    void *aligned = nullptr;
    REQUIRE(posix_memalign(&aligned, 4096, n) == 0, "posix_memalign");
    CHECK_CUDA(cudaHostRegister(aligned, n, cudaHostRegisterDefault));
    EXPECT_ERR(cudaErrorHostMemoryAlreadyRegistered, cudaHostRegister(aligned, n, cudaHostRegisterDefault));
    EXPECT_ERR(cudaErrorHostMemoryAlreadyRegistered, cudaGetLastError());
    copies_through((unsigned char *)aligned, n, 10, s);
    CHECK_CUDA(cudaHostUnregister(aligned));
    EXPECT_ERR(cudaErrorHostMemoryNotRegistered, cudaHostUnregister(aligned));
    EXPECT_ERR(cudaErrorHostMemoryNotRegistered, cudaGetLastError());

    std::vector<unsigned char> odd(n + 3);
    CHECK_CUDA(cudaHostRegister(odd.data() + 3, n, cudaHostRegisterPortable));
    copies_through(odd.data() + 3, n, 20, s);
    CHECK_CUDA(cudaHostUnregister(odd.data() + 3));

    // small heap buffers between heap neighbours, registered one after another
    for (size_t sz : {100, 4096, 10000, 65536}) {
        std::vector<unsigned char *> around;
        for (int k = 0; k < 8; k++) {
            around.push_back(static_cast<unsigned char *>(std::malloc(64 + k)));
            REQUIRE(around.back(), "malloc");
            fill_pattern(around.back(), 64 + k, 100 + k);
        }
        unsigned char *small = static_cast<unsigned char *>(std::malloc(sz));
        REQUIRE(small, "malloc");
        CHECK_CUDA(cudaHostRegister(small, sz, cudaHostRegisterDefault));
        copies_through(small, sz, 40, s);
        CHECK_CUDA(cudaHostUnregister(small));
        REQUIRE(check_pattern(small, sz, 41) < 0, "a %zu-byte buffer lost its bytes at unregistration", sz);
        for (int k = 0; k < 8; k++) {
            REQUIRE(check_pattern(around[k], 64 + k, 100 + k) < 0, "heap neighbour %d of a %zu-byte buffer changed",
                    k, sz);
            std::free(around[k]);
        }
        std::free(small);
    }

    // cudaHostAlloc flags
    const unsigned flags[] = {cudaHostAllocDefault, cudaHostAllocPortable, cudaHostAllocMapped,
                              cudaHostAllocWriteCombined, cudaHostAllocPortable | cudaHostAllocMapped};
    for (unsigned f : flags) {
        unsigned char *p;
        CHECK_CUDA(cudaHostAlloc(&p, 65537, f));
        copies_through(p, 65537, 30 + f, s);
        cudaPointerAttributes attr;
        CHECK_CUDA(cudaPointerGetAttributes(&attr, p + 100));
        REQUIRE(attr.type == cudaMemoryTypeHost, "cudaHostAlloc(%#x) pointer type %d", f, (int)attr.type);
        unsigned got = 0;
        CHECK_CUDA(cudaHostGetFlags(&got, p));
        if (f & cudaHostAllocMapped) {
            REQUIRE(got & cudaHostAllocMapped, "flags %#x lack cudaHostAllocMapped", got);
            void *dp = nullptr;
            CHECK_CUDA(cudaHostGetDevicePointer(&dp, p, 0));
            REQUIRE(dp != nullptr, "no device pointer for mapped memory");
        }
        CHECK_CUDA(cudaFreeHost(p));
    }
    unsigned char *p;
    EXPECT_ERR(cudaErrorInvalidValue, cudaHostAlloc(&p, 16, 0x80));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGetLastError());

    // stream-ordered allocation
    unsigned char *d;
    CHECK_CUDA(cudaMallocAsync(&d, n, s));
    std::vector<unsigned char> h(n), back(n);
    fill_pattern(h.data(), n, 40);
    CHECK_CUDA(cudaMemcpyAsync(d, h.data(), n, cudaMemcpyHostToDevice, s));
    CHECK_CUDA(cudaMemcpyAsync(back.data(), d, n, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaFreeAsync(d, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    REQUIRE(back == h, "cudaMallocAsync round trip");

    CHECK_CUDA(cudaStreamDestroy(s));
    free(aligned);
    return pass();
}
