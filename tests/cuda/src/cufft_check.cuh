// cuFFT's status codes by name, and CHECK_CUFFT (tests/cuda lib_cufft and
// tests/sim lib_cufft)
#pragma once
#include <cufft.h>

#include "check.cuh"

static const char *cufft_name(cufftResult r)
{
    switch (r) {
        STATUS_CASE(CUFFT_SUCCESS);
        STATUS_CASE(CUFFT_INVALID_PLAN);
        STATUS_CASE(CUFFT_ALLOC_FAILED);
        STATUS_CASE(CUFFT_INVALID_TYPE);
        STATUS_CASE(CUFFT_INVALID_VALUE);
        STATUS_CASE(CUFFT_INTERNAL_ERROR);
        STATUS_CASE(CUFFT_EXEC_FAILED);
        STATUS_CASE(CUFFT_SETUP_FAILED);
        STATUS_CASE(CUFFT_INVALID_SIZE);
        STATUS_CASE(CUFFT_UNALIGNED_DATA);
        STATUS_CASE(CUFFT_INVALID_DEVICE);
        STATUS_CASE(CUFFT_NO_WORKSPACE);
        STATUS_CASE(CUFFT_NOT_IMPLEMENTED);
        STATUS_CASE(CUFFT_NOT_SUPPORTED);
        STATUS_CASE(CUFFT_MISSING_DEPENDENCY);
        STATUS_CASE(CUFFT_NVRTC_FAILURE);
        STATUS_CASE(CUFFT_NVJITLINK_FAILURE);
        STATUS_CASE(CUFFT_NVSHMEM_FAILURE);
    }
    return "unknown cufftResult";
}

#define CHECK_CUFFT(call) CHECK_STATUS(call, CUFFT_SUCCESS, cufft_name)
