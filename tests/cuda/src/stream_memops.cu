// Stream memory operations: a stream waits on the GPU for a flag in device
// memory that another stream sets later (cuStreamWaitValue32 against
// cuStreamWriteValue32), then a kernel runs and the stream writes a word
// into device memory and a 64-bit one into page-locked host memory
// (cuStreamWriteValue32/64); a wait for a word of host memory the host sets;
// a batch (cuStreamBatchMemOp) writes and waits in order. Nothing runs past
// a wait before its word is set. The kernel runs once first: with lazy
// module loading, a first launch loads its module, which waits for the
// device, and so for the blocked stream (natively too).
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
    unsigned *host, *flag;
    int *out, got = 0;
    unsigned long long *host64;
    cudaStream_t s, t;
    CHECK_CUDA(cudaHostAlloc(&host, 4096, cudaHostAllocMapped));
    host64 = (unsigned long long *)(host + 16);
    CHECK_CUDA(cudaMalloc(&out, 64));
    CHECK_CUDA(cudaMalloc(&flag, 64));
    CHECK_CUDA(cudaMemset(out, 0, 64));
    CHECK_CUDA(cudaMemset(flag, 0, 64));
    after_flag<<<1, 1>>>(flag, out); /* loaded before any stream waits */
    CHECK_LAUNCH();
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
    *host64 = 0;
    unsigned long long *dev64;
    CHECK_CUDA(cudaHostGetDevicePointer((void **)&dev64, host64, 0));

    CHECK_CU(cuStreamWaitValue32((CUstream)s, (CUdeviceptr)flag, 1, CU_STREAM_WAIT_VALUE_EQ));
    after_flag<<<1, 1, 0, s>>>(flag, out);
    CHECK_CUDA(cudaGetLastError()); /* no device synchronization: s waits for t */
    CHECK_CU(cuStreamWriteValue32((CUstream)s, (CUdeviceptr)(out + 1), 7u, 0));
    CHECK_CU(cuStreamWriteValue64((CUstream)s, (CUdeviceptr)dev64, 0x1122334455667788ull, 0));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    REQUIRE(cudaStreamQuery(s) == cudaErrorNotReady, "the stream went past its wait before the flag was set");
    CHECK_CU(cuStreamWriteValue32((CUstream)t, (CUdeviceptr)flag, 1u, 0));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(&got, out, sizeof(got), cudaMemcpyDeviceToHost));
    REQUIRE(got == 101, "the kernel after the wait read the flag as %d", got - 100);
    CHECK_CUDA(cudaMemcpy(&got, out + 1, sizeof(got), cudaMemcpyDeviceToHost));
    REQUIRE(got == 7, "written word %d", got);
    REQUIRE(*host64 == 0x1122334455667788ull, "host word %#llx", *host64);
    std::printf("wait then kernel: %d, words %d %#llx\n", 101, got, *host64);

    /* a wait for a word of page-locked host memory the host sets */
    unsigned *dev_host;
    CHECK_CUDA(cudaHostGetDevicePointer((void **)&dev_host, host, 0));
    *(volatile unsigned *)host = 0;
    CHECK_CU(cuStreamWaitValue32((CUstream)s, (CUdeviceptr)dev_host, 5, CU_STREAM_WAIT_VALUE_GEQ));
    CHECK_CU(cuStreamWriteValue32((CUstream)s, (CUdeviceptr)(out + 4), 9u, 0));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    REQUIRE(cudaStreamQuery(s) == cudaErrorNotReady, "the stream went past its wait for host memory");
    *(volatile unsigned *)host = 6;
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(&got, out + 4, sizeof(got), cudaMemcpyDeviceToHost));
    REQUIRE(got == 9, "the write after the host's flag: %d", got);
    std::printf("host flag wait: %d\n", got);

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
    CHECK_CUDA(cudaFreeHost(host));
    return pass();
}
