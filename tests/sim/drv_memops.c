// SPDX-License-Identifier: MIT
/*
 * Stream memory operations through the driver API, one behaviour per mode
 * (drv_memops MODE):
 *   write    cuStreamWriteValue32/64 land in device memory and in page-locked
 *            host memory, in stream order (after a memset before them)
 *   wait     cuStreamWaitValue32/64: a condition that holds lets the stream
 *            go on; one that does not holds it until a host thread writes the
 *            word (the write after the wait lands only then); GEQ (cyclic),
 *            EQ, AND and NOR
 *   batch    cuStreamBatchMemOp_v2: writes, waits, a flush and a barrier in
 *            order; a barrier of no known scope refused
 *   refused  misaligned words, memory of no vGPU, unknown flags and
 *            operations: CUDA_ERROR_INVALID_VALUE
 *   remote   (device 0 a remote vGPU: tests/remote) device memory as in
 *            batch; a word of host memory refused, CUDA_ERROR_NOT_SUPPORTED
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "drv_check.h"

static CUstream stream(void)
{
	CUstream s;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	return s;
}

static void write_mode(void)
{
	CUstream s = stream();
	CUdeviceptr d;
	uint64_t *h, back[2] = { 0, 0 };

	CHECK(cuMemAlloc(&d, 64));
	CHECK(cuMemAllocHost((void **)&h, 64));
	memset(h, 0, 64);
	CHECK(cuMemsetD8Async(d, 0xff, 64, s));
	CHECK(cuStreamWriteValue32(s, d, 0x12345678u, 0));
	CHECK(cuStreamWriteValue64_v2(s, d + 8, 0x1122334455667788ull, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
	CHECK(cuStreamWriteValue32_v2(s, (CUdeviceptr)(uintptr_t)h, 7u, 0));
	CHECK(cuStreamWriteValue64(s, (CUdeviceptr)(uintptr_t)(h + 1), 0xabcdef0123456789ull, 0));
	CHECK(cuMemcpyDtoHAsync(back, d, sizeof(back), s));
	CHECK(cuStreamSynchronize(s));
	REQUIRE(back[0] == 0xffffffff12345678ull && back[1] == 0x1122334455667788ull,
		"device words %#llx %#llx", (unsigned long long)back[0], (unsigned long long)back[1]);
	REQUIRE(h[0] == 7 && h[1] == 0xabcdef0123456789ull, "host words %#llx %#llx", (unsigned long long)h[0],
		(unsigned long long)h[1]);
	CHECK(cuMemFreeHost(h));
	CHECK(cuMemFree(d));
	CHECK(cuStreamDestroy(s));
}

struct later {
	volatile uint32_t *word;
	uint32_t value;
};

static void *write_later(void *arg)
{
	struct later *l = arg;

	usleep(200000);
	__atomic_store_n(l->word, l->value, __ATOMIC_RELEASE);
	return NULL;
}

static void wait_mode(void)
{
	CUstream s = stream();
	CUdeviceptr d;
	uint32_t *h;
	uint64_t back = 0;
	pthread_t t;
	struct later l;
	struct timespec t0, t1;

	CHECK(cuMemAlloc(&d, 64));
	CHECK(cuMemAllocHost((void **)&h, 64));
	memset(h, 0, 64);
	CHECK(cuMemsetD8(d, 0, 64));
	/* conditions that hold */
	CHECK(cuStreamWriteValue32(s, d, 5, 0));
	CHECK(cuStreamWaitValue32(s, d, 5, CU_STREAM_WAIT_VALUE_EQ));
	CHECK(cuStreamWaitValue32(s, d, 3, CU_STREAM_WAIT_VALUE_GEQ));
	CHECK(cuStreamWaitValue32(s, d, 0xfffffff0u, CU_STREAM_WAIT_VALUE_GEQ)); /* cyclic: 5 - (-16) >= 0 */
	CHECK(cuStreamWaitValue32(s, d, 4, CU_STREAM_WAIT_VALUE_AND));
	CHECK(cuStreamWaitValue32(s, d, 0, CU_STREAM_WAIT_VALUE_NOR));
	CHECK(cuStreamWriteValue64(s, d + 8, 1ull << 40, 0));
	CHECK(cuStreamWaitValue64_v2(s, d + 8, 1ull << 40, CU_STREAM_WAIT_VALUE_EQ | CU_STREAM_WAIT_VALUE_FLUSH));
	CHECK(cuStreamSynchronize(s));
	/* one that holds only once a host thread writes the word */
	l.word = h;
	l.value = 9;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(cuStreamWaitValue32(s, (CUdeviceptr)(uintptr_t)h, 9, CU_STREAM_WAIT_VALUE_EQ));
	CHECK(cuStreamWriteValue64(s, d + 16, 77, 0));
	REQUIRE(pthread_create(&t, NULL, write_later, &l) == 0, "no thread");
	CHECK(cuStreamSynchronize(s));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(t, NULL);
	CHECK(cuMemcpyDtoH(&back, d + 16, sizeof(back)));
	REQUIRE(back == 77, "the write after the wait: %llu", (unsigned long long)back);
	REQUIRE((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 150,
		"the stream did not wait for the host's write");
	CHECK(cuMemFreeHost(h));
	CHECK(cuMemFree(d));
	CHECK(cuStreamDestroy(s));
}

static void batch_mode(void)
{
	CUstream s = stream();
	CUdeviceptr d;
	uint64_t back[2] = { 0, 0 };
	CUstreamBatchMemOpParams ops[5];

	CHECK(cuMemAlloc(&d, 64));
	memset(ops, 0, sizeof(ops));
	ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
	ops[0].writeValue.address = d;
	ops[0].writeValue.value = 11;
	ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
	ops[1].waitValue.address = d;
	ops[1].waitValue.value = 11;
	ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
	ops[2].flushRemoteWrites.operation = CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES;
	ops[3].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
	ops[3].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_GPU;
	ops[4].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
	ops[4].writeValue.address = d + 8;
	ops[4].writeValue.value64 = 1ull << 50;
	CHECK(cuStreamBatchMemOp_v2(s, 5, ops, 0));
	CHECK(cuMemcpyDtoHAsync(back, d, sizeof(back), s));
	CHECK(cuStreamSynchronize(s));
	REQUIRE((uint32_t)back[0] == 11 && back[1] == 1ull << 50, "batch wrote %#llx %#llx",
		(unsigned long long)back[0], (unsigned long long)back[1]);
	ops[3].memoryBarrier.flags = 7;
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamBatchMemOp_v2(s, 5, ops, 0)); /* no such barrier */
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamBatchMemOp_v2(s, 1, ops, 1));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamBatchMemOp_v2(s, 1, NULL, 0));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuMemFree(d));
	CHECK(cuStreamDestroy(s));
}

static void refused_mode(void)
{
	CUstream s = stream();
	CUdeviceptr d;
	static uint32_t not_pinned[4];
	CUstreamBatchMemOpParams bad;

	CHECK(cuMemAlloc(&d, 64));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue32(s, d + 2, 1, 0));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue64(s, d + 4, 1, 0));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue32(s, d + 64, 1, 0));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue32(s, (CUdeviceptr)(uintptr_t)not_pinned, 1, 0));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue32(s, d, 1, 2));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue32(s, d, 1, 4));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue64(s, 0, 1, 0));
	memset(&bad, 0, sizeof(bad));
	bad.operation = (CUstreamBatchMemOpType)9;
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamBatchMemOp_v2(s, 1, &bad, 0));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuMemFree(d));
	CHECK(cuStreamDestroy(s));
}

static void remote_mode(void)
{
	CUstream s = stream();
	uint32_t *h;

	batch_mode();
	CHECK(cuMemAllocHost((void **)&h, 64));
	EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuStreamWriteValue32(s, (CUdeviceptr)(uintptr_t)h, 1, 0));
	EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuStreamWaitValue32(s, (CUdeviceptr)(uintptr_t)h, 0, CU_STREAM_WAIT_VALUE_GEQ));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuMemFreeHost(h));
	CHECK(cuStreamDestroy(s));
}

int main(int argc, char **argv)
{
	static const struct drv_mode modes[] = {
		{ "write", write_mode },
		{ "wait", wait_mode },
		{ "batch", batch_mode },
		{ "refused", refused_mode },
		{ "remote", remote_mode },
	};

	return drv_run_mode_in_primary(argc, argv, modes, DRV_NMODES(modes));
}
