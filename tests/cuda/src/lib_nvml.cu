// NVML the way NCCL uses it at its initialization: libnvidia-ml.so.1 opened
// with dlopen, nvmlInit_v2, the NVML device of CUDA device 0 found by its PCI
// bus id, nvmlDeviceGetP2PStatus between that device and itself (NCCL asks
// every pair, a device and itself too, and gives up on an error), the PCIe
// link's maximum generation (the GPU's own, and what GPU and system allow
// together) and maximum width, and a field-values call. Prints the maxima
// (fixed for a machine) and the calls' results; not the current link
// figures (a link retrains while idle), not the P2P status value and not
// field values (a vGPU has no NVLink where the GPU may have some).
#include <cstring>
#include <dlfcn.h>
#include <nvml.h>
#include "check.cuh"

template <typename F> static F sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    REQUIRE(p, "libnvidia-ml.so.1 has no %s", name);
    return reinterpret_cast<F>(p);
}

int main()
{
    char bus[64];
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);

    REQUIRE(lib, "cannot open libnvidia-ml.so.1: %s", dlerror());
    auto init = sym<nvmlReturn_t (*)(void)>(lib, "nvmlInit_v2");
    auto by_bus = sym<nvmlReturn_t (*)(const char *, nvmlDevice_t *)>(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    auto p2p = sym<nvmlReturn_t (*)(nvmlDevice_t, nvmlDevice_t, nvmlGpuP2PCapsIndex_t, nvmlGpuP2PStatus_t *)>(
        lib, "nvmlDeviceGetP2PStatus");
    auto max_gen = sym<nvmlReturn_t (*)(nvmlDevice_t, unsigned *)>(lib, "nvmlDeviceGetMaxPcieLinkGeneration");
    auto gpu_max_gen = sym<nvmlReturn_t (*)(nvmlDevice_t, unsigned *)>(lib, "nvmlDeviceGetGpuMaxPcieLinkGeneration");
    auto max_width = sym<nvmlReturn_t (*)(nvmlDevice_t, unsigned *)>(lib, "nvmlDeviceGetMaxPcieLinkWidth");
    auto fields = sym<nvmlReturn_t (*)(nvmlDevice_t, int, nvmlFieldValue_t *)>(lib, "nvmlDeviceGetFieldValues");
    auto shutdown = sym<nvmlReturn_t (*)(void)>(lib, "nvmlShutdown");

    CHECK_CUDA(cudaDeviceGetPCIBusId(bus, sizeof(bus), 0));
    REQUIRE(init() == NVML_SUCCESS, "nvmlInit_v2 failed");
    nvmlDevice_t d;
    REQUIRE(by_bus(bus, &d) == NVML_SUCCESS, "no NVML device at CUDA device 0's bus id");
    std::printf("NVML device of CUDA device 0 found by bus id: yes\n");

    for (int c = NVML_P2P_CAPS_INDEX_READ; c <= NVML_P2P_CAPS_INDEX_WRITE; c++) {
        nvmlGpuP2PStatus_t st;
        REQUIRE(p2p(d, d, (nvmlGpuP2PCapsIndex_t)c, &st) == NVML_SUCCESS, "nvmlDeviceGetP2PStatus(%d) failed", c);
    }
    std::printf("P2P status of the device with itself, read and write: answered\n");

    unsigned v = 0;
    nvmlReturn_t r = max_gen(d, &v);
    REQUIRE(r == NVML_SUCCESS, "nvmlDeviceGetMaxPcieLinkGeneration returned %d", (int)r);
    std::printf("PCIe max link generation (GPU and system): %u\n", v);
    r = gpu_max_gen(d, &v);
    REQUIRE(r == NVML_SUCCESS, "nvmlDeviceGetGpuMaxPcieLinkGeneration returned %d", (int)r);
    std::printf("PCIe max link generation (GPU): %u\n", v);
    r = max_width(d, &v);
    REQUIRE(r == NVML_SUCCESS, "nvmlDeviceGetMaxPcieLinkWidth returned %d", (int)r);
    std::printf("PCIe max link width: %u\n", v);

    nvmlFieldValue_t f[2];
    std::memset(f, 0, sizeof(f));
    f[0].fieldId = NVML_FI_DEV_NVLINK_LINK_COUNT;
    f[1].fieldId = NVML_FI_DEV_C2C_LINK_COUNT;
    REQUIRE(fields(d, 2, f) == NVML_SUCCESS, "nvmlDeviceGetFieldValues failed");
    std::printf("field values call: answered\n");
    REQUIRE(shutdown() == NVML_SUCCESS, "nvmlShutdown failed");
    return pass();
}
