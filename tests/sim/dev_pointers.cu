// Device pointers of different vGPUs never collide, and
// cudaPointerGetAttributes reports the owning device and memory type for
// device, pinned and pageable memory (run with MEARAS_VGPUS=3). Copies
// between devices carry the data.
#include <vector>
#include "sim_check.cuh"

struct Alloc {
    int dev;
    uintptr_t base;
    size_t size;
};

int main(void)
{
    int n = 0;
    CHECK_CUDA(cudaGetDeviceCount(&n));
    REQUIRE(n == 3, "MEARAS_VGPUS=3 gave %d devices", n);
    std::vector<Alloc> allocs;
    const size_t sizes[] = {1, 256, 4096, 65537, 1u << 20, 16u << 20};
    for (int round = 0; round < 3; round++) {
        for (int dev = 0; dev < n; dev++) {
            CHECK_CUDA(cudaSetDevice(dev));
            for (size_t s : sizes) {
                void *p = nullptr;
                CHECK_CUDA(cudaMalloc(&p, s));
                allocs.push_back({dev, (uintptr_t)p, s});
            }
        }
    }
    for (size_t i = 0; i < allocs.size(); i++) {
        for (size_t j = i + 1; j < allocs.size(); j++) {
            const Alloc &a = allocs[i], &b = allocs[j];
            bool overlap = a.base < b.base + b.size && b.base < a.base + a.size;
            REQUIRE(!overlap, "allocation %#lx+%zu (device %d) overlaps %#lx+%zu (device %d)",
                    (unsigned long)a.base, a.size, a.dev, (unsigned long)b.base, b.size, b.dev);
        }
        // every device pointer maps to its device, also in its middle and last byte,
        // whichever device is current
        CHECK_CUDA(cudaSetDevice((int)(i % (size_t)n)));
        const Alloc &a = allocs[i];
        const uintptr_t probes[] = {a.base, a.base + a.size / 2, a.base + a.size - 1};
        for (uintptr_t q : probes) {
            cudaPointerAttributes attr;
            CHECK_CUDA(cudaPointerGetAttributes(&attr, (void *)q));
            REQUIRE(attr.type == cudaMemoryTypeDevice, "pointer %#lx: type %d", (unsigned long)q, (int)attr.type);
            REQUIRE(attr.device == a.dev, "pointer %#lx: device %d, want %d", (unsigned long)q, attr.device,
                    a.dev);
            REQUIRE(attr.devicePointer == (void *)q, "pointer %#lx: devicePointer %p", (unsigned long)q,
                    attr.devicePointer);
        }
    }

    // host memory
    void *pinned;
    CHECK_CUDA(cudaSetDevice(1));
    CHECK_CUDA(cudaMallocHost(&pinned, 4096));
    cudaPointerAttributes attr;
    CHECK_CUDA(cudaPointerGetAttributes(&attr, pinned));
    REQUIRE(attr.type == cudaMemoryTypeHost, "pinned pointer type %d", (int)attr.type);
    REQUIRE(attr.hostPointer == pinned, "pinned hostPointer %p", attr.hostPointer);
    static char pageable[4096];
    CHECK_CUDA(cudaPointerGetAttributes(&attr, pageable));
    REQUIRE(attr.type == cudaMemoryTypeUnregistered, "pageable pointer type %d", (int)attr.type);

    // data moves between devices (cudaMemcpyPeer and a plain D2D copy)
    const size_t m = (1u << 20) + 5;
    std::vector<unsigned char> src(m), back(m);
    fill_pattern(src.data(), m, 42);
    unsigned char *on[3];
    for (int dev = 0; dev < n; dev++) {
        CHECK_CUDA(cudaSetDevice(dev));
        CHECK_CUDA(cudaMalloc(&on[dev], m));
    }
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaMemcpy(on[0], src.data(), m, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpyPeer(on[1], 1, on[0], 0, m));
    // a peer copy is ordered before later work on the destination device
    CHECK_CUDA(cudaSetDevice(1));
    CHECK_CUDA(cudaMemcpy(back.data(), on[1], m, cudaMemcpyDeviceToHost));
    REQUIRE(check_pattern(back.data(), m, 42) < 0, "device 1 read stale data after cudaMemcpyPeer 0 -> 1");
    memset(back.data(), 0, m);
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaMemcpy(on[2], on[1], m, cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaSetDevice(2));
    CHECK_CUDA(cudaMemcpy(back.data(), on[2], m, cudaMemcpyDeviceToHost));
    REQUIRE(check_pattern(back.data(), m, 42) < 0, "data did not survive device 0 -> 1 -> 2");

    // a freed pointer is no longer a device pointer
    void *gone;
    CHECK_CUDA(cudaMalloc(&gone, 4096));
    CHECK_CUDA(cudaFree(gone));
    EXPECT_ERR(cudaErrorInvalidValue, cudaMemset(gone, 0, 16));
    EXPECT_ERR(cudaErrorInvalidValue, cudaGetLastError());

    for (const Alloc &a : allocs) {
        CHECK_CUDA(cudaSetDevice(a.dev));
        CHECK_CUDA(cudaFree((void *)a.base));
    }
    CHECK_CUDA(cudaFreeHost(pinned));
    return pass();
}
