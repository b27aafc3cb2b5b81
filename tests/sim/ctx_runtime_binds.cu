// A runtime call binds the calling thread to its device's primary context
// (-lcuda; run with 2 vGPUs): after cudaMalloc, cuCtxGetCurrent gives the
// primary context of device 0, as NVIDIA's runtime leaves it (a library
// that launches through the driver, cuFFT, relies on it); once the thread's
// context stack is emptied, the next runtime call makes it current again;
// a context the thread made current itself (device 1's primary, and a
// created one) stays current through runtime calls, which then work on its
// device; a new thread is bound by its own first runtime call.
#include <cuda.h>
#include <pthread.h>

#include "sim_check.cuh"

#define CHECK_CU(call)                                                                              \
    do {                                                                                            \
        CUresult r_ = (call);                                                                       \
        const char *n_ = nullptr;                                                                   \
        if (r_ != CUDA_SUCCESS) {                                                                   \
            cuGetErrorName(r_, &n_);                                                                \
            std::printf("FAIL: %s returned %s at %s:%d\n", #call, n_ ? n_ : "?", __FILE__, __LINE__); \
            std::exit(1);                                                                           \
        }                                                                                           \
    } while (0)

static CUcontext primary(int dev)
{
    CUcontext c = nullptr;
    CHECK_CU(cuDevicePrimaryCtxRetain(&c, dev));
    CHECK_CU(cuDevicePrimaryCtxRelease(dev));
    return c;
}

static CUcontext current()
{
    CUcontext c = (CUcontext)1;
    CHECK_CU(cuCtxGetCurrent(&c));
    return c;
}

static void *other_thread(void *arg)
{
    void *p = nullptr;
    REQUIRE(current() == nullptr, "a new thread starts with a context current");
    CHECK_CUDA(cudaMalloc(&p, 64));
    REQUIRE(current() == *(CUcontext *)arg, "a new thread's cudaMalloc left no primary context current");
    CHECK_CUDA(cudaFree(p));
    return nullptr;
}

int main()
{
    void *p = nullptr;
    int dev = -1;
    CUcontext popped = nullptr, created = nullptr;
    pthread_t t;

    CHECK_CU(cuInit(0));
    REQUIRE(current() == nullptr, "a context is current before any call");
    CHECK_CUDA(cudaMalloc(&p, 256));
    CUcontext p0 = primary(0), p1 = primary(1);
    REQUIRE(current() == p0, "after cudaMalloc, device 0's primary context is not current");
    CHECK_CUDA(cudaFree(p));

    // the stack emptied: the next runtime call binds the thread again
    CHECK_CU(cuCtxPopCurrent(&popped));
    REQUIRE(popped == p0, "popped another context than the primary");
    REQUIRE(current() == nullptr, "a context is current after the pop");
    CHECK_CUDA(cudaMalloc(&p, 256));
    REQUIRE(current() == p0, "the stack emptied: cudaMalloc left no primary context current");
    CHECK_CUDA(cudaFree(p));

    // a context made current by the thread stays, and the runtime follows it
    CHECK_CU(cuCtxSetCurrent(p1));
    CHECK_CUDA(cudaMalloc(&p, 256));
    REQUIRE(current() == p1, "cudaMalloc replaced the current primary context of device 1");
    CHECK_CUDA(cudaGetDevice(&dev));
    REQUIRE(dev == 1, "cudaGetDevice: %d, the current context's device is 1", dev);
    cudaPointerAttributes a;
    CHECK_CUDA(cudaPointerGetAttributes(&a, p));
    REQUIRE(a.device == 1, "cudaMalloc allocated on device %d, not the current context's", a.device);
    CHECK_CUDA(cudaFree(p));
    CHECK_CU(cuCtxCreate(&created, nullptr, 0, 0));
    REQUIRE(current() == created, "cuCtxCreate did not make its context current");
    CHECK_CUDA(cudaMalloc(&p, 256));
    REQUIRE(current() == created, "cudaMalloc replaced a created context");
    CHECK_CUDA(cudaFree(p));
    CHECK_CU(cuCtxDestroy(created));

    // a new thread starts with none, and its first runtime call binds it
    CHECK_CU(cuCtxSetCurrent(p0));
    REQUIRE(pthread_create(&t, nullptr, other_thread, &p0) == 0, "pthread_create");
    REQUIRE(pthread_join(t, nullptr) == 0, "pthread_join");
    printf("PASS\n");
    return 0;
}
