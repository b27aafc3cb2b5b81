// MEARAS_VISIBLE_VGPUS (guest/core/connect.c): the process sees only the
// vGPUs it names, in its order. tests/sim/run-tests.sh runs this with and
// without the variable and compares what each device is.
//   dev_visible list    per device: its PCI bus (the sim's GPU behind the
//                       vGPU) and the address of its first allocation (its
//                       vGPU's own address window); data through every
//                       device, and between the first and the last one
//   dev_visible count   prints cudaGetDeviceCount's result and count only
#include "sim_check.cuh"

static void list(void)
{
    int n = 0;
    CHECK_CUDA(cudaGetDeviceCount(&n));
    std::printf("devices: %d\n", n);
    const size_t size = 1 << 20;
    void *first[16] = {};
    REQUIRE(n > 0 && n <= 16, "%d devices", n);
    unsigned char *host = (unsigned char *)std::malloc(size), *back = (unsigned char *)std::malloc(size);
    REQUIRE(host && back, "malloc");
    for (int d = 0; d < n; d++) {
        cudaDeviceProp prop;
        CHECK_CUDA(cudaSetDevice(d));
        CHECK_CUDA(cudaGetDeviceProperties(&prop, d));
        CHECK_CUDA(cudaMalloc(&first[d], size));
        std::printf("device %d: pci bus %d, first allocation %p\n", d, prop.pciBusID, first[d]);
        cudaPointerAttributes attr;
        CHECK_CUDA(cudaPointerGetAttributes(&attr, first[d]));
        REQUIRE(attr.device == d, "device %d's allocation reported on device %d", d, attr.device);
        // the records go to this vGPU's rings, its poller is woken for them
        fill_pattern(host, size, 7u + (unsigned)d);
        CHECK_CUDA(cudaMemcpy(first[d], host, size, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemset((char *)first[d] + 4096, 0x5a, 4096));
        CHECK_CUDA(cudaDeviceSynchronize());
        CHECK_CUDA(cudaMemcpy(back, first[d], size, cudaMemcpyDeviceToHost));
        for (size_t i = 4096; i < 8192; i++)
            REQUIRE(back[i] == 0x5a, "device %d: byte %zu is %#x after the memset", d, i, back[i]);
        std::memset(back + 4096, 0, 4096);
        std::memset(host + 4096, 0, 4096);
        REQUIRE(std::memcmp(host, back, size) == 0, "device %d: data changed on the way", d);
    }
    if (n > 1) {
        CHECK_CUDA(cudaMemcpyPeer(first[n - 1], n - 1, first[0], 0, size));
        CHECK_CUDA(cudaSetDevice(n - 1));
        CHECK_CUDA(cudaMemcpy(back, first[n - 1], size, cudaMemcpyDeviceToHost));
        fill_pattern(host, size, 7u);
        std::memset(host + 4096, 0x5a, 4096);
        REQUIRE(std::memcmp(host, back, size) == 0, "cudaMemcpyPeer from device 0 to %d", n - 1);
    }
    for (int d = 0; d < n; d++) {
        CHECK_CUDA(cudaSetDevice(d));
        CHECK_CUDA(cudaFree(first[d]));
    }
    std::free(host);
    std::free(back);
}

int main(int argc, char **argv)
{
    if (argc == 2 && !std::strcmp(argv[1], "count")) {
        int n = -1;
        cudaError_t e = cudaGetDeviceCount(&n);
        std::printf("cudaGetDeviceCount: %s, %d\n", cudaGetErrorName(e), e ? -1 : n);
        return 0;
    }
    REQUIRE(argc == 2 && !std::strcmp(argv[1], "list"), "usage: dev_visible list|count");
    list();
    return pass();
}
