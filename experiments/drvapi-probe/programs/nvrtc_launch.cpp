// Subject (g): NVRTC compiles a kernel at run time; the driver API
// (linked against the toolkit's stub libcuda.so, so libcuda.so.1 is a
// DT_NEEDED) loads it with cuModuleLoadData and launches it with
// cuLaunchKernel. No CUDA runtime.
#include <cuda.h>
#include <nvrtc.h>

#include <string>
#include <vector>

#include "check.h"

static const char *kSource = R"(
extern "C" __global__ void axpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
)";

int main() {
    CK(cuInit(0));
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    int major = 0, minor = 0;
    CK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));

    nvrtcProgram prog;
    CK(nvrtcCreateProgram(&prog, kSource, "axpy.cu", 0, nullptr, nullptr));
    // SASS for this GPU when NVRTC knows it, else PTX for the driver's JIT.
    std::string sm = "--gpu-architecture=sm_" + std::to_string(major * 10 + minor);
    const char *opts[] = {sm.c_str()};
    std::vector<char> image;
    bool cubin = nvrtcCompileProgram(prog, 1, opts) == NVRTC_SUCCESS;
    if (cubin) {
        size_t size;
        CK(nvrtcGetCUBINSize(prog, &size));
        image.resize(size);
        CK(nvrtcGetCUBIN(prog, image.data()));
    } else {
        CK(nvrtcDestroyProgram(&prog));
        CK(nvrtcCreateProgram(&prog, kSource, "axpy.cu", 0, nullptr, nullptr));
        const char *popts[] = {"--gpu-architecture=compute_80"};
        CK(nvrtcCompileProgram(prog, 1, popts));
        size_t size;
        CK(nvrtcGetPTXSize(prog, &size));
        image.resize(size);
        CK(nvrtcGetPTX(prog, image.data()));
    }
    CK(nvrtcDestroyProgram(&prog));

    CUmodule mod;
    CK(cuModuleLoadData(&mod, image.data()));
    CUfunction fn;
    CK(cuModuleGetFunction(&fn, mod, "axpy"));
    const int n = 1 << 14;
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; i++) {
        x[i] = static_cast<float>(i);
        y[i] = 1.0f;
    }
    CUdeviceptr dx, dy;
    CK(cuMemAlloc(&dx, n * sizeof(float)));
    CK(cuMemAlloc(&dy, n * sizeof(float)));
    CK(cuMemcpyHtoD(dx, x.data(), n * sizeof(float)));
    CK(cuMemcpyHtoD(dy, y.data(), n * sizeof(float)));
    float a = 2.0f;
    int nn = n;
    void *args[] = {&a, &dx, &dy, &nn};
    CK(cuLaunchKernel(fn, n / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
    CK(cuCtxSynchronize());
    CK(cuMemcpyDtoH(y.data(), dy, n * sizeof(float)));
    for (int i = 0; i < n; i++)
        EXPECT(y[i] == 2.0f * static_cast<float>(i) + 1.0f, "y[%d] = %g", i, y[i]);
    CK(cuMemFree(dx));
    CK(cuMemFree(dy));
    CK(cuModuleUnload(mod));
    CK(cuDevicePrimaryCtxRelease(dev));
    std::printf("PASS nvrtc (%s)\n", cubin ? "cubin" : "ptx");
    return 0;
}
