// Stream capture and graphs through both APIs on the sim: capture status and
// ids (unique per capture, 0 outside one), a second BeginCapture, the legacy
// stream, the thread's capture mode, EndCapture from another thread (refused
// unless relaxed), the graph being captured into (not supported), two
// threads capturing their per-thread default streams at once; a graph
// captured with the driver API (cuStreamBeginCapture_v2, the CUDA 10.0
// entry point without a mode from cuGetProcAddress) instantiated by the
// runtime and launched by the driver and vice versa (one object), uploads,
// instantiation flags (read back by GraphExecGetFlags) and params. Copies into a capture: pinned memory is
// captured and read at each launch, pageable memory refused (as in CUDA).
#include <cuda.h>
#include <thread>

#include "sim_check.cuh"
#include "../cuda/src/cu_check.cuh"

static void runtime_capture(cudaStream_t s, int *dev)
{
    cudaStreamCaptureStatus st;
    unsigned long long id1 = 1, id2 = 0;
    cudaGraph_t g = nullptr, graph_out;
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaError_t from_thread = cudaSuccess;

    CHECK_CUDA(cudaStreamGetCaptureInfo(s, &st, &id1));
    REQUIRE(st == cudaStreamCaptureStatusNone && id1 == 0, "idle stream: status %d id %llu", (int)st, id1);
    EXPECT_ERR(cudaErrorStreamCaptureUnsupported, cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal));
    EXPECT_ERR(cudaErrorInvalidValue, cudaStreamBeginCapture(s, (cudaStreamCaptureMode)7));
    cudaGetLastError();

    /* the thread's mode: global by default, exchanged */
    CHECK_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
    REQUIRE(mode == cudaStreamCaptureModeGlobal, "default mode %d", (int)mode);
    CHECK_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
    REQUIRE(mode == cudaStreamCaptureModeRelaxed, "exchanged mode %d", (int)mode);

    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    EXPECT_ERR(cudaErrorIllegalState, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_CUDA(cudaStreamIsCapturing(s, &st));
    REQUIRE(st == cudaStreamCaptureStatusActive, "capturing: status %d", (int)st);
    CHECK_CUDA(cudaStreamGetCaptureInfo(s, &st, &id1));
    REQUIRE(st == cudaStreamCaptureStatusActive && id1 != 0, "capturing: status %d id %llu", (int)st, id1);
    EXPECT_ERR(cudaErrorNotSupported, cudaStreamGetCaptureInfo(s, &st, nullptr, &graph_out));
    CHECK_CUDA(cudaMemsetAsync(dev, 7, sizeof(int), s));
    /* global mode: only the thread that began it ends it */
    std::thread([&] { from_thread = cudaStreamEndCapture(s, &g); }).join();
    REQUIRE(from_thread == cudaErrorStreamCaptureWrongThread, "EndCapture from another thread: %s",
            cudaGetErrorName(from_thread));
    CHECK_CUDA(cudaStreamEndCapture(s, &g));
    EXPECT_ERR(cudaErrorIllegalState, cudaStreamEndCapture(s, &g));
    cudaGetLastError();
    CHECK_CUDA(cudaGraphDestroy(g));

    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CHECK_CUDA(cudaStreamGetCaptureInfo(s, &st, &id2));
    REQUIRE(id2 != 0 && id2 != id1, "second capture id %llu, first %llu", id2, id1);
    /* relaxed: any thread may end it */
    std::thread([&] { from_thread = cudaStreamEndCapture(s, &g); }).join();
    CHECK_CUDA(from_thread);
    CHECK_CUDA(cudaGraphDestroy(g));
}

/* pinned host memory captures (each launch reads it anew); pageable memory is
 * refused in a capture, small (its bytes in the record) or large (staged) */
static void host_copies_capture(cudaStream_t s, int *pinned)
{
    const size_t big = 1 << 20;
    int *dev, *pageable = (int *)malloc(big);
    cudaGraph_t g;
    cudaGraphExec_t x;

    REQUIRE(pageable, "malloc");
    CHECK_CUDA(cudaMalloc(&dev, big));
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    EXPECT_ERR(cudaErrorStreamCaptureUnsupported, cudaMemcpyAsync(dev, pageable, sizeof(int), cudaMemcpyHostToDevice, s));
    EXPECT_ERR(cudaErrorStreamCaptureUnsupported, cudaMemcpyAsync(dev, pageable, big, cudaMemcpyHostToDevice, s));
    EXPECT_ERR(cudaErrorStreamCaptureUnsupported, cudaMemcpyAsync(pageable, dev, sizeof(int), cudaMemcpyDeviceToHost, s));
    cudaGetLastError();
    CHECK_CUDA(cudaMemcpyAsync(dev, pinned, sizeof(int), cudaMemcpyHostToDevice, s));
    CHECK_CUDA(cudaMemcpyAsync(pinned + 1, dev, sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamEndCapture(s, &g));
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    for (int v = 41; v < 44; v++) {
        pinned[0] = v;
        pinned[1] = 0;
        CHECK_CUDA(cudaGraphLaunch(x, s));
        CHECK_CUDA(cudaStreamSynchronize(s));
        REQUIRE(pinned[1] == v, "launch with %d in the pinned source: %d came back", v, pinned[1]);
    }
    /* the capture over: pageable copies as before */
    pageable[0] = 9;
    CHECK_CUDA(cudaMemcpyAsync(dev, pageable, sizeof(int), cudaMemcpyHostToDevice, s));
    CHECK_CUDA(cudaMemcpyAsync(pinned, dev, sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    REQUIRE(pinned[0] == 9, "pageable copy after the capture: %d", pinned[0]);
    CHECK_CUDA(cudaGraphExecDestroy(x));
    CHECK_CUDA(cudaGraphDestroy(g));
    CHECK_CUDA(cudaFree(dev));
    free(pageable);
}

/* each thread's per-thread default stream captures on its own */
static void per_thread_capture(int *dev)
{
    unsigned long long ids[2] = {0, 0};
    cudaError_t errs[2] = {cudaSuccess, cudaSuccess};
    std::thread t[2];

    for (int i = 0; i < 2; i++)
        t[i] = std::thread([&, i] {
            cudaStreamCaptureStatus st;
            cudaGraph_t g;
            cudaGraphExec_t x;
            cudaError_t e = cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeThreadLocal);

            if (!e)
                e = cudaMemsetAsync(dev, 9, sizeof(int), cudaStreamPerThread);
            if (!e)
                e = cudaStreamGetCaptureInfo(cudaStreamPerThread, &st, &ids[i]);
            if (!e && st != cudaStreamCaptureStatusActive)
                e = cudaErrorUnknown;
            if (!e)
                e = cudaStreamEndCapture(cudaStreamPerThread, &g);
            if (!e)
                e = cudaGraphInstantiate(&x, g, 0);
            if (!e)
                e = cudaGraphLaunch(x, cudaStreamPerThread);
            if (!e)
                e = cudaStreamSynchronize(cudaStreamPerThread);
            if (!e)
                e = cudaGraphExecDestroy(x);
            if (!e)
                e = cudaGraphDestroy(g);
            errs[i] = e;
        });
    for (int i = 0; i < 2; i++)
        t[i].join();
    for (int i = 0; i < 2; i++)
        REQUIRE(errs[i] == cudaSuccess, "per-thread capture %d: %s", i, cudaGetErrorName(errs[i]));
    REQUIRE(ids[0] && ids[1] && ids[0] != ids[1], "per-thread capture ids %llu %llu", ids[0], ids[1]);
}

/* captured by the driver, instantiated by the runtime, launched by the driver */
static void driver_capture(CUstream s, int *dev, int *pinned)
{
    CUstreamCaptureStatus st;
    cuuint64_t id = 0;
    CUgraph g;
    CUgraphExec x;
    CUgraphNode node;
    size_t nodes = 0;
    cudaGraphExec_t rx;
    CUresult (*begin_10_0)(CUstream) = nullptr;
    CUdriverProcAddressQueryResult q;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;

    CHECK_CU(cuThreadExchangeStreamCaptureMode(&mode));
    REQUIRE(mode == CU_STREAM_CAPTURE_MODE_GLOBAL, "driver: default mode %d", (int)mode);
    CHECK_CU(cuThreadExchangeStreamCaptureMode(&mode));

    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CHECK_CU(cuStreamGetCaptureInfo(s, &st, &id, nullptr, nullptr, nullptr, nullptr));
    REQUIRE(st == CU_STREAM_CAPTURE_STATUS_ACTIVE && id != 0, "driver capture: status %d id %llu", (int)st,
            (unsigned long long)id);
    CHECK_CU(cuMemcpyHtoDAsync((CUdeviceptr)dev, pinned, sizeof(int), s));
    CHECK_CU(cuMemcpyDtoHAsync(pinned + 1, (CUdeviceptr)dev, sizeof(int), s));
    CHECK_CU(cuStreamEndCapture(s, &g));
    CHECK_CU(cuGraphGetNodes(g, nullptr, &nodes));
    REQUIRE(nodes == 2, "driver capture: %zu nodes", nodes);
    EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuGraphGetNodes(g, &node, &nodes));

    /* one object: the runtime instantiates the driver's graph */
    CHECK_CUDA(cudaGraphInstantiate(&rx, (cudaGraph_t)g, 0));
    EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuGraphInstantiateWithFlags(&x, g, CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH));
    /* passed on to where the graph runs (PyTorch's CUDA graphs ask for it) */
    CHECK_CU(cuGraphInstantiateWithFlags(&x, g, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                                                    CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY));
    {
        cuuint64_t xf = 0;
        unsigned long long rf = 99;

        CHECK_CU(cuGraphExecGetFlags(x, &xf));
        REQUIRE(xf == (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY),
                "executable graph flags %#llx", (unsigned long long)xf);
        CHECK_CUDA(cudaGraphExecGetFlags(rx, &rf));
        REQUIRE(rf == 0, "runtime-instantiated flags %#llx", rf);
        EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphExecGetFlags(x, nullptr));
        EXPECT_ERR(cudaErrorInvalidValue, cudaGraphExecGetFlags(nullptr, &rf));
        cudaGetLastError();
    }
    pinned[0] = 77;
    CHECK_CU(cuGraphLaunch(x, s));
    CHECK_CU(cuStreamSynchronize(s));
    REQUIRE(pinned[1] == 77, "auto-free instantiation copied %d", pinned[1]);
    CHECK_CU(cuGraphExecDestroy(x));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiateWithFlags(&x, g, CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD));
    CHECK_CU(cuGraphUpload((CUgraphExec)rx, s));
    for (int l = 1; l <= 5; l++) {
        pinned[0] = 500 + l;
        CHECK_CU(cuGraphLaunch((CUgraphExec)rx, s));
        CHECK_CU(cuStreamSynchronize(s));
        REQUIRE(pinned[1] == 500 + l, "driver launch %d copied %d", l, pinned[1]);
    }
    CHECK_CU(cuGraphExecDestroy((CUgraphExec)rx));

    /* params with an upload; the runtime launches the driver's exec */
    CUDA_GRAPH_INSTANTIATE_PARAMS p = {};
    p.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
    p.hUploadStream = s;
    p.result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
    CHECK_CU(cuGraphInstantiateWithParams(&x, g, &p));
    REQUIRE(p.result_out == CUDA_GRAPH_INSTANTIATE_SUCCESS, "params result %d", (int)p.result_out);
    {
        cuuint64_t xf = 99;

        CHECK_CU(cuGraphExecGetFlags(x, &xf));
        REQUIRE(xf == 0, "an upload leaves no flag: %#llx", (unsigned long long)xf);
    }
    pinned[0] = 4242;
    CHECK_CUDA(cudaGraphLaunch((cudaGraphExec_t)x, (cudaStream_t)s));
    CHECK_CUDA(cudaStreamSynchronize((cudaStream_t)s));
    REQUIRE(pinned[1] == 4242, "runtime launch of a driver exec copied %d", pinned[1]);
    CHECK_CU(cuGraphExecDestroy(x));
    CHECK_CU(cuGraphDestroy(g));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphDestroy(g));

    /* CUDA 10.0's entry point, without a mode */
    CHECK_CU(cuGetProcAddress("cuStreamBeginCapture", (void **)&begin_10_0, 10000, CU_GET_PROC_ADDRESS_DEFAULT, &q));
    REQUIRE(begin_10_0 != nullptr, "no cuStreamBeginCapture for CUDA 10.0");
    CHECK_CU(begin_10_0(s));
    CHECK_CU(cuStreamIsCapturing(s, &st));
    REQUIRE(st == CU_STREAM_CAPTURE_STATUS_ACTIVE, "10.0 capture: status %d", (int)st);
    CHECK_CU(cuStreamEndCapture(s, &g));
    CHECK_CU(cuGraphDestroy(g));
}

int main(void)
{
    int *dev, *pinned;
    cudaStream_t s;
    CUcontext ctx;

    CHECK_CUDA(cudaMalloc(&dev, sizeof(int)));
    CHECK_CUDA(cudaMallocHost(&pinned, 2 * sizeof(int)));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    runtime_capture(s, dev);
    per_thread_capture(dev);
    host_copies_capture(s, pinned);

    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK_CU(cuCtxSetCurrent(ctx));
    driver_capture((CUstream)s, dev, pinned);

    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFreeHost(pinned));
    CHECK_CUDA(cudaFree(dev));
    return pass();
}
