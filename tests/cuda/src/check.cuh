// Shared helpers for the GPU-lane test programs: every failure prints one
// "FAIL: reason" line and exits non-zero, so outputs stay diffable.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK_CUDA(call)                                                     \
    do {                                                                     \
        cudaError_t check_err_ = (call);                                     \
        if (check_err_ != cudaSuccess) {                                     \
            std::printf("FAIL: %s returned %s at %s:%d\n", #call,            \
                        cudaGetErrorName(check_err_), __FILE__, __LINE__);   \
            std::fflush(stdout);                                             \
            std::exit(1);                                                    \
        }                                                                    \
    } while (0)

// Checks both the launch itself and any error raised while the kernel ran.
#define CHECK_LAUNCH()                                                       \
    do {                                                                     \
        CHECK_CUDA(cudaGetLastError());                                      \
        CHECK_CUDA(cudaDeviceSynchronize());                                 \
    } while (0)

#define REQUIRE(cond, ...)                                                   \
    do {                                                                     \
        if (!(cond)) {                                                       \
            std::printf("FAIL: ");                                           \
            std::printf(__VA_ARGS__);                                        \
            std::printf(" (%s:%d)\n", __FILE__, __LINE__);                   \
            std::fflush(stdout);                                             \
            std::exit(1);                                                    \
        }                                                                    \
    } while (0)

static inline int pass(void)
{
    std::printf("PASS\n");
    std::fflush(stdout);
    return 0;
}

// Deterministic pseudo-random stream (no dependence on libc rand state).
static inline unsigned int lcg_next(unsigned int *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state;
}

// For the CUDA libraries' status codes (the lib_* programs): `ok` is the
// library's success value, `name_of` turns a status into its name, e.g.
//   #define CHECK_CUBLAS(call) CHECK_STATUS(call, CUBLAS_STATUS_SUCCESS, cublasGetStatusName)
#define CHECK_STATUS(call, ok, name_of)                                      \
    do {                                                                     \
        auto check_st_ = (call);                                             \
        if (check_st_ != (ok)) {                                             \
            std::printf("FAIL: %s returned %s at %s:%d\n", #call,            \
                        name_of(check_st_), __FILE__, __LINE__);             \
            std::fflush(stdout);                                             \
            std::exit(1);                                                    \
        }                                                                    \
    } while (0)

// For libraries without a status-name function: a switch of
//   STATUS_CASE(CUFFT_SUCCESS);
// lines, each returning the status's name.
#define STATUS_CASE(x)                                                       \
    case x:                                                                  \
        return #x

// Prints "WHAT: METRIC within TOL: yes" (deterministic: only the fixed
// tolerance is printed, never the error itself, whose last bits may depend on
// a library's reduction order), or fails with the error found.
static inline void check_within(const char *what, const char *metric, double err, double tol)
{
    REQUIRE(err <= tol, "%s: %s %.3e exceeds %g", what, metric, err, tol);
    std::printf("%s: %s within %g: yes\n", what, metric, tol);
}
