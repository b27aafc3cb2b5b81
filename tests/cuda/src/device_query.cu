// Device queries; prints only facts that hold on any H100/H200 setup, not
// counts or names, so native and virtualized runs print the same lines.
#include "check.cuh"

static void require_attr(int dev, cudaDeviceAttr attr, const char *name, long long prop_value)
{
    int value = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&value, attr, dev));
    REQUIRE((long long)value == prop_value, "device %d %s: attribute %d, property %lld", dev, name,
            value, prop_value);
}

int main(void)
{
    int count = 0;
    CHECK_CUDA(cudaGetDeviceCount(&count));
    REQUIRE(count > 0, "device count %d", count);
    std::printf("device count > 0: yes\n");
    int driver = 0, runtime = 0;
    CHECK_CUDA(cudaDriverGetVersion(&driver));
    CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
    REQUIRE(runtime >= 13000, "runtime version %d below 13.0", runtime);
    REQUIRE(driver >= runtime, "driver version %d older than runtime %d", driver, runtime);
    std::printf("runtime >= 13.0 and driver >= runtime: yes\n");

    for (int dev = 0; dev < count; dev++) {
        cudaDeviceProp prop;
        CHECK_CUDA(cudaGetDeviceProperties(&prop, dev));
        REQUIRE(prop.major >= 9, "device %d compute capability %d.%d", dev, prop.major, prop.minor);
        require_attr(dev, cudaDevAttrComputeCapabilityMajor, "major", prop.major);
        require_attr(dev, cudaDevAttrComputeCapabilityMinor, "minor", prop.minor);
        require_attr(dev, cudaDevAttrMultiProcessorCount, "multiProcessorCount",
                     prop.multiProcessorCount);
        require_attr(dev, cudaDevAttrWarpSize, "warpSize", prop.warpSize);
        require_attr(dev, cudaDevAttrMaxThreadsPerBlock, "maxThreadsPerBlock",
                     prop.maxThreadsPerBlock);
        require_attr(dev, cudaDevAttrMaxSharedMemoryPerBlock, "sharedMemPerBlock",
                     (long long)prop.sharedMemPerBlock);
        require_attr(dev, cudaDevAttrMaxSharedMemoryPerBlockOptin, "sharedMemPerBlockOptin",
                     (long long)prop.sharedMemPerBlockOptin);
        require_attr(dev, cudaDevAttrMaxBlockDimX, "maxThreadsDim[0]", prop.maxThreadsDim[0]);
        require_attr(dev, cudaDevAttrMaxGridDimX, "maxGridSize[0]", prop.maxGridSize[0]);
        require_attr(dev, cudaDevAttrTotalConstantMemory, "totalConstMem",
                     (long long)prop.totalConstMem);
        require_attr(dev, cudaDevAttrL2CacheSize, "l2CacheSize", prop.l2CacheSize);
        require_attr(dev, cudaDevAttrGlobalMemoryBusWidth, "memoryBusWidth", prop.memoryBusWidth);
        require_attr(dev, cudaDevAttrUnifiedAddressing, "unifiedAddressing", prop.unifiedAddressing);
        require_attr(dev, cudaDevAttrConcurrentKernels, "concurrentKernels", prop.concurrentKernels);
        require_attr(dev, cudaDevAttrPciBusId, "pciBusID", prop.pciBusID);
        REQUIRE(prop.warpSize == 32, "warp size %d", prop.warpSize);
        REQUIRE(prop.maxThreadsPerBlock == 1024, "max threads per block %d", prop.maxThreadsPerBlock);
        REQUIRE(prop.totalGlobalMem > (size_t)1 << 30, "total memory below 1 GiB");
        REQUIRE(prop.name[0] != '\0', "empty device name");

        set_device_checked(dev);
        size_t free_bytes = 0, total_bytes = 0;
        CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
        REQUIRE(free_bytes <= total_bytes && free_bytes > 0, "cudaMemGetInfo free=%zu total=%zu",
                free_bytes, total_bytes);
        REQUIRE(total_bytes <= prop.totalGlobalMem, "cudaMemGetInfo total above totalGlobalMem");
    }
    // One summary line for all devices, so the output does not depend on how
    // many devices this machine (or virtual machine) exposes.
    std::printf("every device: major>=9 yes, warpSize=32, properties match attributes, "
                "free<=total yes\n");
    return pass();
}
