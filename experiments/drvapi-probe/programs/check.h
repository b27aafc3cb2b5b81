// Self-checking helpers for the drvapi-probe subject programs.
#pragma once
#include <cstdio>
#include <cstdlib>

#define CK(call)                                                                        \
    do {                                                                                \
        auto ck_rc_ = (call);                                                           \
        if (ck_rc_ != 0) {                                                              \
            std::fprintf(stderr, "FAIL %s:%d %s -> %d\n", __FILE__, __LINE__, #call,    \
                         static_cast<int>(ck_rc_));                                     \
            std::exit(1);                                                               \
        }                                                                               \
    } while (0)

#define EXPECT(cond, ...)                                                               \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            std::fprintf(stderr, "FAIL %s:%d %s: ", __FILE__, __LINE__, #cond);         \
            std::fprintf(stderr, __VA_ARGS__);                                          \
            std::fprintf(stderr, "\n");                                                 \
            std::exit(1);                                                               \
        }                                                                               \
    } while (0)
