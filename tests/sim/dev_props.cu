// Device count follows MEARAS_VGPUS (run with 3); every device's
// cudaGetDeviceProperties agrees with cudaDeviceGetAttribute; current device
// selection works per device.
#include "sim_check.cuh"

struct AttrField {
    cudaDeviceAttr attr;
    const char *name;
    long long (*get)(const cudaDeviceProp &);
};

#define F(attr, field) {attr, #field, [](const cudaDeviceProp &p) { return (long long)p.field; }}

static const AttrField fields[] = {
    F(cudaDevAttrMaxThreadsPerBlock, maxThreadsPerBlock),
    F(cudaDevAttrMaxBlockDimX, maxThreadsDim[0]),
    F(cudaDevAttrMaxBlockDimY, maxThreadsDim[1]),
    F(cudaDevAttrMaxBlockDimZ, maxThreadsDim[2]),
    F(cudaDevAttrMaxGridDimX, maxGridSize[0]),
    F(cudaDevAttrMaxGridDimY, maxGridSize[1]),
    F(cudaDevAttrMaxGridDimZ, maxGridSize[2]),
    F(cudaDevAttrMaxSharedMemoryPerBlock, sharedMemPerBlock),
    F(cudaDevAttrTotalConstantMemory, totalConstMem),
    F(cudaDevAttrWarpSize, warpSize),
    F(cudaDevAttrMaxPitch, memPitch),
    F(cudaDevAttrMaxRegistersPerBlock, regsPerBlock),
    F(cudaDevAttrMultiProcessorCount, multiProcessorCount),
    F(cudaDevAttrComputeCapabilityMajor, major),
    F(cudaDevAttrComputeCapabilityMinor, minor),
    F(cudaDevAttrTextureAlignment, textureAlignment),
    F(cudaDevAttrIntegrated, integrated),
    F(cudaDevAttrCanMapHostMemory, canMapHostMemory),
    F(cudaDevAttrConcurrentKernels, concurrentKernels),
    F(cudaDevAttrEccEnabled, ECCEnabled),
    F(cudaDevAttrPciBusId, pciBusID),
    F(cudaDevAttrPciDeviceId, pciDeviceID),
    F(cudaDevAttrPciDomainId, pciDomainID),
    F(cudaDevAttrAsyncEngineCount, asyncEngineCount),
    F(cudaDevAttrUnifiedAddressing, unifiedAddressing),
    F(cudaDevAttrGlobalMemoryBusWidth, memoryBusWidth),
    F(cudaDevAttrL2CacheSize, l2CacheSize),
    F(cudaDevAttrMaxThreadsPerMultiProcessor, maxThreadsPerMultiProcessor),
    F(cudaDevAttrStreamPrioritiesSupported, streamPrioritiesSupported),
    F(cudaDevAttrMaxSharedMemoryPerMultiprocessor, sharedMemPerMultiprocessor),
    F(cudaDevAttrMaxRegistersPerMultiprocessor, regsPerMultiprocessor),
    F(cudaDevAttrManagedMemory, managedMemory),
    F(cudaDevAttrCooperativeLaunch, cooperativeLaunch),
    F(cudaDevAttrMaxSharedMemoryPerBlockOptin, sharedMemPerBlockOptin),
    F(cudaDevAttrMaxBlocksPerMultiprocessor, maxBlocksPerMultiProcessor),
    F(cudaDevAttrReservedSharedMemoryPerBlock, reservedSharedMemPerBlock),
    F(cudaDevAttrMemoryPoolsSupported, memoryPoolsSupported),
};

int main(void)
{
    int n = 0;
    CHECK_CUDA(cudaGetDeviceCount(&n));
    REQUIRE(n == 3, "MEARAS_VGPUS=3 gave %d devices", n);
    for (int dev = 0; dev < n; dev++) {
        cudaDeviceProp p;
        CHECK_CUDA(cudaGetDeviceProperties(&p, dev));
        REQUIRE(p.name[0] != 0, "device %d has no name", dev);
        REQUIRE(p.totalGlobalMem > 0, "device %d: no memory", dev);
        REQUIRE(p.warpSize == 32, "device %d: warp size %d", dev, p.warpSize);
        REQUIRE(p.maxThreadsPerBlock >= 1024, "device %d: maxThreadsPerBlock %d", dev, p.maxThreadsPerBlock);
        REQUIRE(p.major >= 1, "device %d: compute capability %d.%d", dev, p.major, p.minor);
        for (const AttrField &f : fields) {
            int v = -12345;
            CHECK_CUDA(cudaDeviceGetAttribute(&v, f.attr, dev));
            REQUIRE((long long)v == f.get(p), "device %d: attribute %d = %d but prop.%s = %lld", dev,
                    (int)f.attr, v, f.name, f.get(p));
        }
        // memory info of the current device matches its properties
        set_device_checked(dev);
        size_t free_b = 0, total = 0;
        CHECK_CUDA(cudaMemGetInfo(&free_b, &total));
        REQUIRE(total == p.totalGlobalMem, "device %d: cudaMemGetInfo total %zu, prop %zu", dev, total,
                p.totalGlobalMem);
        REQUIRE(free_b <= total, "device %d: free %zu > total %zu", dev, free_b, total);
        void *d;
        CHECK_CUDA(cudaMalloc(&d, 64u << 20));
        size_t free_after = 0;
        CHECK_CUDA(cudaMemGetInfo(&free_after, &total));
        REQUIRE(free_after + (64u << 20) <= free_b, "device %d: 64 MiB allocation not reflected (%zu -> %zu)",
                dev, free_b, free_after);
        CHECK_CUDA(cudaFree(d));
        char bus[32];
        CHECK_CUDA(cudaDeviceGetPCIBusId(bus, sizeof(bus), dev));
        REQUIRE(bus[0] != 0, "device %d: empty PCI bus id", dev);
        int driver = 0, runtime = 0;
        CHECK_CUDA(cudaDriverGetVersion(&driver));
        CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
        REQUIRE(driver >= 13000 && runtime >= 13000, "versions driver %d runtime %d", driver, runtime);
    }
    int v;
    EXPECT_ERR(cudaErrorInvalidDevice, cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, n));
    EXPECT_ERR(cudaErrorInvalidDevice, cudaSetDevice(n));
    EXPECT_ERR(cudaErrorInvalidDevice, cudaGetLastError());
    return pass();
}
