// Stream memory operations on device memory (the suite runs through remote
// vGPUs too, where words of host memory are refused): a stream waits on the
// GPU for a flag that another stream sets later (cuStreamWaitValue32 against
// cuStreamWriteValue32), then a kernel runs and the stream writes a 32- and
// a 64-bit word (cuStreamWriteValue32/64); a batch (cuStreamBatchMemOp)
// writes and waits in order. Nothing runs past a wait before its word is
// set. The kernel runs once first: with lazy module loading, a first launch
// loads its module, which waits for the device, and so for the blocked
// stream (natively too).
#include <chrono>
#include <thread>

#include "check.cuh"
#include "cu_check.cuh"

__global__ void after_flag(const unsigned *flag, int *out)
{
    out[0] = (int)flag[0] + 100;
}

int main(void)
{
    unsigned *flag;
    int *out, got = 0;
    unsigned long long word64 = 0;
    cudaStream_t s, t;
    CHECK_CUDA(cudaMalloc(&out, 64));
    CHECK_CUDA(cudaMalloc(&flag, 64));
    CHECK_CUDA(cudaMemset(out, 0, 64));
    CHECK_CUDA(cudaMemset(flag, 0, 64));
    after_flag<<<1, 1>>>(flag, out); /* loaded before any stream waits */
    CHECK_LAUNCH();
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));

    CHECK_CU(cuStreamWaitValue32((CUstream)s, (CUdeviceptr)flag, 1, CU_STREAM_WAIT_VALUE_EQ));
    after_flag<<<1, 1, 0, s>>>(flag, out);
    CHECK_CUDA(cudaGetLastError()); /* no device synchronization: s waits for t */
    CHECK_CU(cuStreamWriteValue32((CUstream)s, (CUdeviceptr)(out + 1), 7u, 0));
    CHECK_CU(cuStreamWriteValue64((CUstream)s, (CUdeviceptr)(out + 8), 0x1122334455667788ull, 0));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    REQUIRE(cudaStreamQuery(s) == cudaErrorNotReady, "the stream went past its wait before the flag was set");
    CHECK_CU(cuStreamWriteValue32((CUstream)t, (CUdeviceptr)flag, 1u, 0));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(&got, out, sizeof(got), cudaMemcpyDeviceToHost));
    REQUIRE(got == 101, "the kernel after the wait read the flag as %d", got - 100);
    CHECK_CUDA(cudaMemcpy(&got, out + 1, sizeof(got), cudaMemcpyDeviceToHost));
    REQUIRE(got == 7, "written word %d", got);
    CHECK_CUDA(cudaMemcpy(&word64, out + 8, sizeof(word64), cudaMemcpyDeviceToHost));
    REQUIRE(word64 == 0x1122334455667788ull, "64-bit word %#llx", word64);
    std::printf("wait then kernel: %d, words %d %#llx\n", 101, got, word64);

    /* a batch: write a word, wait for it, write another */
    CUstreamBatchMemOpParams ops[3] = {};
    ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    ops[0].writeValue.address = (CUdeviceptr)(out + 2);
    ops[0].writeValue.value = 42;
    ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    ops[1].waitValue.address = (CUdeviceptr)(out + 2);
    ops[1].waitValue.value = 40;
    ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
    ops[2].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    ops[2].writeValue.address = (CUdeviceptr)(out + 3);
    ops[2].writeValue.value = 43;
    CHECK_CU(cuStreamBatchMemOp((CUstream)s, 3, ops, 0));
    int pair[2] = { 0, 0 };
    CHECK_CUDA(cudaMemcpyAsync(pair, out + 2, sizeof(pair), cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    REQUIRE(pair[0] == 42 && pair[1] == 43, "batch wrote %d %d", pair[0], pair[1]);
    std::printf("batch: %d %d\n", pair[0], pair[1]);
    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaStreamDestroy(t));
    CHECK_CUDA(cudaFree(flag));
    CHECK_CUDA(cudaFree(out));
    return pass();
}
