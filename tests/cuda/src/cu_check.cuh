// Driver-API checks for the CUDA programs that call libcuda themselves
// (tests/cuda and tests/sim): include after check.cuh (or sim_check.cuh).
#pragma once

#include <cstring>
#include <cuda.h>

#include "check.cuh"

// a CUresult by name ("?" for a code the driver does not name)
static inline const char *cu_error_name(CUresult r)
{
    const char *n = nullptr;

    cuGetErrorName(r, &n);
    return n ? n : "?";
}

// the call must return CUDA_SUCCESS
#define CHECK_CU(call) CHECK_STATUS_AS(call, #call, CUDA_SUCCESS, cu_error_name)

// the call must return exactly `expected`
#define EXPECT_CU(expected, call)                                                                   \
    do {                                                                                            \
        CUresult r_ = (call);                                                                       \
        REQUIRE(r_ == (expected), "%s returned %d, expected %s (%d)", #call, (int)r_, #expected,    \
                (int)(expected));                                                                   \
    } while (0)

// read-write access for device `dev` to [va, va + size)
static inline void cu_access_rw(CUdeviceptr va, size_t size, int dev)
{
    CUmemAccessDesc a;

    std::memset(&a, 0, sizeof(a));
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = dev;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_CU(cuMemSetAccess(va, size, &a, 1));
}

// cuInit, then device 0's primary context retained and made current (the
// start of a program without the runtime); release it with
// cuDevicePrimaryCtxRelease
static inline CUdevice cu_primary_current(void)
{
    CUdevice dev;
    CUcontext ctx;

    CHECK_CU(cuInit(0));
    CHECK_CU(cuDeviceGet(&dev, 0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));
    return dev;
}
