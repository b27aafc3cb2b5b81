// Host callbacks (cudaLaunchHostFunc and cudaStreamAddCallback) interleaved
// with kernels; each records its sequence number and the device value it
// observes, proving it ran after the preceding kernel and in stream order.
#include <atomic>
#include "check.cuh"

#define STEPS 12

struct callback_log {
    std::atomic<int> counter{0};
    int order[STEPS];
    int observed[STEPS];
    const int *host_value;
    cudaError_t status[STEPS];
};

struct callback_arg {
    callback_log *log;
    int step;
};

static void record(callback_arg *arg)
{
    int seq = arg->log->counter.fetch_add(1);
    arg->log->order[arg->step] = seq;
    arg->log->observed[arg->step] = *arg->log->host_value;
}

static void CUDART_CB host_func(void *data)
{
    callback_arg *arg = (callback_arg *)data;
    arg->log->status[arg->step] = cudaSuccess;
    record(arg);
}

static void CUDART_CB stream_callback(cudaStream_t, cudaError_t status, void *data)
{
    callback_arg *arg = (callback_arg *)data;
    arg->log->status[arg->step] = status;
    record(arg);
}

__global__ void increment(int *value)
{
    *value += 1;
}

int main(void)
{
    int *mapped_host;
    CHECK_CUDA(cudaHostAlloc(&mapped_host, sizeof(int), cudaHostAllocMapped));
    *mapped_host = 0;
    cudaStream_t s = nonblocking_stream();
    callback_log log;
    log.host_value = mapped_host;
    callback_arg args[STEPS];
    for (int step = 0; step < STEPS; step++) {
        args[step].log = &log;
        args[step].step = step;
        log.order[step] = -1;
        log.observed[step] = -1;
        increment<<<1, 1, 0, s>>>(mapped_host);
        CHECK_CUDA(cudaGetLastError());
        if (step % 2 == 0)
            CHECK_CUDA(cudaLaunchHostFunc(s, host_func, &args[step]));
        else
            CHECK_CUDA(cudaStreamAddCallback(s, stream_callback, &args[step], 0));
    }
    CHECK_CUDA(cudaStreamSynchronize(s));
    REQUIRE(log.counter.load() == STEPS, "callbacks run=%d expected %d", log.counter.load(), STEPS);
    for (int step = 0; step < STEPS; step++) {
        std::printf("step %d via %s: order=%d observed=%d\n", step,
                    step % 2 == 0 ? "cudaLaunchHostFunc" : "cudaStreamAddCallback",
                    log.order[step], log.observed[step]);
        REQUIRE(log.status[step] == cudaSuccess, "step %d status %s", step,
                cudaGetErrorName(log.status[step]));
        REQUIRE(log.order[step] == step, "step %d ran as callback %d", step, log.order[step]);
        REQUIRE(log.observed[step] == step + 1, "step %d saw value %d", step, log.observed[step]);
    }
    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFreeHost(mapped_host));
    return pass();
}
