// Shared helpers for the GPU-lane test programs: every failure prints one
// "FAIL: reason" line and exits non-zero, so outputs stay diffable.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <initializer_list>

// The call must return `ok`; else "FAIL: <text> returned <name_of(status)>
// at FILE:LINE" and exit 1 (CHECK_CUDA, CHECK_STATUS).
#define CHECK_STATUS_AS(call, text, ok, name_of)                             \
    do {                                                                     \
        auto check_st_ = (call);                                             \
        if (check_st_ != (ok)) {                                             \
            std::printf("FAIL: %s returned %s at %s:%d\n", text,             \
                        name_of(check_st_), __FILE__, __LINE__);             \
            std::fflush(stdout);                                             \
            std::exit(1);                                                    \
        }                                                                    \
    } while (0)

#define CHECK_CUDA(call) CHECK_STATUS_AS(call, #call, cudaSuccess, cudaGetErrorName)

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

// A program's closing cleanup: cudaFree (FREE_DEVICE) or cudaFreeHost
// (FREE_HOST) on each pointer, in the order given, each checked; a failure
// names the pointer's position and the caller's line.
#define FREE_DEVICE(...) free_each_at(cudaFree, "cudaFree", {__VA_ARGS__}, __FILE__, __LINE__)
#define FREE_HOST(...) free_each_at(cudaFreeHost, "cudaFreeHost", {__VA_ARGS__}, __FILE__, __LINE__)

static inline void free_each_at(cudaError_t (*free_fn)(void *), const char *what,
                                std::initializer_list<void *> ptrs, const char *file, int line)
{
    size_t i = 0;
    for (void *p : ptrs) {
        i++;
        cudaError_t err = free_fn(p);
        if (err != cudaSuccess) {
            std::printf("FAIL: %s of pointer %zu returned %s at %s:%d\n", what, i,
                        cudaGetErrorName(err), file, line);
            std::fflush(stdout);
            std::exit(1);
        }
    }
}

// cudaSetDevice(dev), and cudaGetDevice must then answer dev
static inline void set_device_checked(int dev)
{
    int current = -1;

    CHECK_CUDA(cudaSetDevice(dev));
    CHECK_CUDA(cudaGetDevice(&current));
    REQUIRE(current == dev, "cudaGetDevice=%d after cudaSetDevice(%d)", current, dev);
}

// a new memory pool of pinned memory on device dev
static inline cudaMemPool_t new_device_pool(int dev)
{
    cudaMemPoolProps props = {};
    cudaMemPool_t pool;

    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    CHECK_CUDA(cudaMemPoolCreate(&pool, &props));
    return pool;
}

// a stream of the program's own that does not wait on the legacy default stream
static inline cudaStream_t nonblocking_stream(void)
{
    cudaStream_t s;

    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
}

// milliseconds from event a to event b (both recorded with timing)
static inline float ms_between(cudaEvent_t a, cudaEvent_t b)
{
    float ms = -1;

    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

// a kernel node's parameters: a 1x1 launch of func with args
static inline cudaKernelNodeParams one_thread_node(void *func, void **args)
{
    cudaKernelNodeParams k = {};

    k.func = func;
    k.gridDim = dim3(1);
    k.blockDim = dim3(1);
    k.kernelParams = args;
    return k;
}

static inline int pass(void)
{
    std::printf("PASS\n");
    std::fflush(stdout);
    return 0;
}

// FNV-1a of n bytes: a short line for a program's output to compare with native's
static inline unsigned hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
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
#define CHECK_STATUS(call, ok, name_of) CHECK_STATUS_AS(call, #call, ok, name_of)

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
