// Command-line options, timing and result reporting shared by the benchmark
// applications. Each app prints exactly one "RESULT ..." line on success.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <initializer_list>

#define APP_CHECK(call)                                                      \
    do {                                                                     \
        cudaError_t app_err_ = (call);                                       \
        if (app_err_ != cudaSuccess) {                                       \
            std::fprintf(stderr, "error: %s returned %s (%s) at %s:%d\n",    \
                         #call, cudaGetErrorName(app_err_),                  \
                         cudaGetErrorString(app_err_), __FILE__, __LINE__);  \
            std::exit(1);                                                    \
        }                                                                    \
    } while (0)

struct app_options {
    long long size;      // problem size; meaning is app-specific, 0 = app default
    int iterations;      // timed iterations (ignored when seconds > 0)
    int device;
    double seconds;      // > 0: repeat iterations for about this long
    int launches;        // BinomialOptions: kernel launches per iteration
    bool skip_check;
};

struct app_option_spec {
    const char *name;
    const char *size_help;
    long long default_size;
    int default_iterations;
    bool has_launches;
    long long max_size;  // --size at most this
};

static inline void app_usage(const app_option_spec &spec)
{
    std::fprintf(stderr,
                 "usage: %s [--size N] [--iterations N] [--device N] [--seconds S]%s [--no-check]\n"
                 "  --size N        %s (default %lld)\n"
                 "  --iterations N  timed iterations (default %d)\n"
                 "  --device N      CUDA device ordinal (default 0)\n"
                 "  --seconds S     run iterations repeatedly for about S seconds\n"
                 "%s"
                 "  --no-check      skip the CPU reference check (reports check=skipped)\n",
                 spec.name, spec.has_launches ? " [--launches N]" : "", spec.size_help,
                 spec.default_size, spec.default_iterations,
                 spec.has_launches ? "  --launches N    split each iteration's work over N kernel launches\n"
                                   : "");
}

static inline bool app_parse_number(const char *text, double lo, double hi, double *out)
{
    char *end = nullptr;
    double v = std::strtod(text, &end);
    if (end == text || *end != '\0' || !(v >= lo && v <= hi))
        return false;
    *out = v;
    return true;
}

static inline app_options app_parse(int argc, char **argv, const app_option_spec &spec)
{
    app_options o = {spec.default_size, spec.default_iterations, 0, 0.0, 1, false};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (std::strcmp(arg, "--help") == 0 || std::strcmp(arg, "-h") == 0) {
            app_usage(spec);
            std::exit(0);
        }
        if (std::strcmp(arg, "--no-check") == 0) {
            o.skip_check = true;
            continue;
        }
        bool known = std::strcmp(arg, "--size") == 0 || std::strcmp(arg, "--iterations") == 0 ||
                     std::strcmp(arg, "--device") == 0 || std::strcmp(arg, "--seconds") == 0 ||
                     (spec.has_launches && std::strcmp(arg, "--launches") == 0);
        if (!known) {
            std::fprintf(stderr, "%s: unknown option '%s'\n", spec.name, arg);
            app_usage(spec);
            std::exit(2);
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "%s: option %s needs a value\n", spec.name, arg);
            std::exit(2);
        }
        const char *val = argv[++i];
        double v = 0.0;
        bool ok;
        if (std::strcmp(arg, "--size") == 0) {
            ok = app_parse_number(val, 1, 1e12, &v) && v == (double)(long long)v;
            o.size = (long long)v;
        } else if (std::strcmp(arg, "--iterations") == 0) {
            ok = app_parse_number(val, 1, 1e9, &v) && v == (double)(int)v;
            o.iterations = (int)v;
        } else if (std::strcmp(arg, "--device") == 0) {
            ok = app_parse_number(val, 0, 1024, &v) && v == (double)(int)v;
            o.device = (int)v;
        } else if (std::strcmp(arg, "--seconds") == 0) {
            ok = app_parse_number(val, 0.001, 86400, &v);
            o.seconds = v;
        } else {
            ok = app_parse_number(val, 1, 1 << 20, &v) && v == (double)(int)v;
            o.launches = (int)v;
        }
        if (!ok) {
            std::fprintf(stderr, "%s: bad value '%s' for %s\n", spec.name, val, arg);
            std::exit(2);
        }
    }
    if (o.size > spec.max_size) {
        std::fprintf(stderr, "%s: --size at most %lld\n", spec.name, spec.max_size);
        std::exit(2);
    }
    int count = 0;
    APP_CHECK(cudaGetDeviceCount(&count));
    if (o.device >= count) {
        std::fprintf(stderr, "%s: --device %d but only %d device(s)\n", spec.name, o.device, count);
        std::exit(2);
    }
    APP_CHECK(cudaSetDevice(o.device));
    APP_CHECK(cudaFree(nullptr)); // create the context outside the timed region
    return o;
}

// A check's reference sum on the CPU, in double, with the sum of its terms'
// magnitudes: the GPU's float result may differ by rounding relative to those.
struct app_ref_sum {
    double sum = 0.0, magnitude = 0.0;

    void add(double term)
    {
        sum += term;
        magnitude += std::fabs(term);
    }
    // got within rel of the terms' magnitudes, plus abs
    bool near(double got, double rel, double abs) const
    {
        return std::fabs(got - sum) <= rel * magnitude + abs;
    }
};

// The apps' deterministic inputs: a linear congruential generator.
struct app_lcg {
    unsigned int state;

    unsigned int next()
    {
        state = state * 1664525u + 1013904223u;
        return state;
    }
    // uniform in [lo, hi), from the generator's top 24 bits
    template <typename T> T uniform(T lo, T hi)
    {
        return lo + (hi - lo) * (T)(next() >> 8) / (T)16777216;
    }
};

// cudaFree of each device pointer, in order (an app's closing cleanup)
#define APP_FREE(...) app_free_each({__VA_ARGS__}, __FILE__, __LINE__)

static inline void app_free_each(std::initializer_list<void *> ptrs, const char *file, int line)
{
    for (void *p : ptrs) {
        cudaError_t err = cudaFree(p);
        if (err != cudaSuccess) {
            std::fprintf(stderr, "error: cudaFree returned %s (%s) at %s:%d\n", cudaGetErrorName(err),
                         cudaGetErrorString(err), file, line);
            std::exit(1);
        }
    }
}

static inline double app_now(void)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Runs one_iteration() either o.iterations times or, with --seconds, until
// about o.seconds have passed. synchronize() is called after every `batch`
// iterations and at the end, so the clock only reads completed work; an app
// whose iteration already ends in a synchronizing call uses batch 1.
// Returns the iterations done and the elapsed wall time through *seconds.
template <typename F, typename S>
static long long app_timed_loop(const app_options &o, int batch, double *seconds, F one_iteration,
                                S synchronize)
{
    long long done = 0;
    double start = app_now(), now = start;
    if (o.seconds > 0.0) {
        do {
            for (int b = 0; b < batch; b++)
                one_iteration();
            synchronize();
            done += batch;
            now = app_now();
        } while (now - start < o.seconds);
    } else {
        for (int i = 0; i < o.iterations; i++) {
            one_iteration();
            if ((i + 1) % batch == 0 || i + 1 == o.iterations)
                synchronize();
        }
        done = o.iterations;
        now = app_now();
    }
    *seconds = now - start;
    return done;
}

// For apps whose iteration ends in a synchronizing call: one warm-up
// iteration, then app_timed_loop with batch 1 and nothing more to synchronize.
template <typename F> static long long app_timed_sync_loop(const app_options &o, double *seconds, F one_iteration)
{
    one_iteration(); // warm-up
    return app_timed_loop(o, 1, seconds, one_iteration, []() {});
}

static inline void app_device_sync(void)
{
    APP_CHECK(cudaDeviceSynchronize());
}

static inline void app_report(const char *app, const app_options &o, double items, long long iterations,
                              double seconds, const char *unit, int check, const char *extra)
{
    const char *check_text = check < 0 ? "skipped" : (check ? "ok" : "fail");
    std::printf("RESULT app=%s items=%.0f iterations=%lld seconds=%.6f throughput=%.6g unit=%s "
                "per_iteration_us=%.3f device=%d%s%s check=%s\n",
                app, items, iterations, seconds, seconds > 0 ? items / seconds : 0.0, unit,
                iterations > 0 ? seconds * 1e6 / (double)iterations : 0.0, o.device,
                extra[0] ? " " : "", extra, check_text);
    std::fflush(stdout);
}
