// Helpers for the CPU-lane (mearasd --device=sim) test programs: each
// program checks itself; any failure prints one "FAIL: ..." line and exits 1.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <sys/stat.h>

// CHECK_CUDA, CHECK_LAUNCH, REQUIRE and pass(): the GPU-lane suite's own helpers
#include "../cuda/src/check.cuh"

// The call must return exactly the expected error code.
#define EXPECT_ERR(expected, call)                                           \
    do {                                                                     \
        cudaError_t got_ = (call);                                           \
        if (got_ != (expected)) {                                            \
            std::printf("FAIL: %s returned %s, expected %s at %s:%d\n",      \
                        #call, cudaGetErrorName(got_),                       \
                        cudaGetErrorName(expected), __FILE__, __LINE__);     \
            std::fflush(stdout);                                             \
            std::exit(1);                                                    \
        }                                                                    \
    } while (0)

// Fills buf with a pattern that differs for every byte position and seed.
static inline void fill_pattern(void *buf, size_t n, uint32_t seed)
{
    unsigned char *p = (unsigned char *)buf;
    uint32_t s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (unsigned char)(s >> 24);
    }
}

// Index of the first byte that differs from the pattern, or -1.
static inline long long check_pattern(const void *buf, size_t n, uint32_t seed)
{
    const unsigned char *p = (const unsigned char *)buf;
    uint32_t s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        if (p[i] != (unsigned char)(s >> 24))
            return (long long)i;
    }
    return -1;
}

// seconds on the monotonic clock
static inline double now_s(void)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// marker files, for programs the suite's script steps through a scenario
static inline void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    REQUIRE(f, "cannot create %s", path);
    fclose(f);
}

static inline bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}
