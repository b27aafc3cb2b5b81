// SPDX-License-Identifier: MIT
/* exec_record(): memory records -- data-area offsets (range, off+len wrap),
 * device ranges (outside any allocation, crossing an end, freed memory,
 * another vGPU's memory), memset element sizes, 2D pitches, copy
 * directions, frees of bad pointers, the quota, and the device memory a
 * vGPU keeps mapped for freed allocations (bounded whatever the sizes), and
 * copies into another vGPU's memory while that vGPU's thread allocates and
 * frees (run under TSan: its allocations are read by both threads). */
#include <pthread.h>

#include "check.h"
#include "fixture_cases.h"

#define QUOTA (64ull << 20)

static uint64_t A, B;   /* 4096-byte allocations on vGPU 0 */

static int copy(uint64_t dst, uint64_t src, uint64_t size, uint64_t dir)
{
	return FIXTURE_OP(MEARAS_OP_MEMCPY, 0, dst, src, size, dir);
}

static int memset1(uint64_t dst, uint64_t value, uint64_t count, uint64_t elem)
{
	return FIXTURE_OP(MEARAS_OP_MEMSET, 0, dst, value, count, elem);
}

static int copy2d(uint64_t dst, uint64_t dpitch, uint64_t src, uint64_t spitch, uint64_t w, uint64_t h,
		  uint64_t dir)
{
	return FIXTURE_OP(MEARAS_OP_MEMCPY_2D, 0, dst, dpitch, src, spitch, w, h, dir);
}

static int memset2d(uint64_t dst, uint64_t pitch, uint64_t value, uint64_t w, uint64_t h)
{
	return FIXTURE_OP(MEARAS_OP_MEMSET_2D, 0, dst, pitch, value, w, h);
}

static int mem_free(uint64_t va)
{
	return FIXTURE_OP(MEARAS_OP_MEM_FREE, 0, va);
}

static void test_data_area(void)
{
	const uint64_t ds = FIXTURE_DATA_SIZE;

	CHECK_EQ(copy(A, 0, 4096, MEARAS_COPY_HTOD), 0);
	CHECK_EQ(copy(A, ds - 4096, 4096, MEARAS_COPY_HTOD), 0);
	CHECK_EQ(copy(A, ds - 4095, 4096, MEARAS_COPY_HTOD), cudaErrorInvalidValue);
	CHECK_EQ(copy(A, ds, 1, MEARAS_COPY_HTOD), cudaErrorInvalidValue);
	CHECK_EQ(copy(A, ds + 1, 0, MEARAS_COPY_HTOD), cudaErrorInvalidValue);
	CHECK_EQ(copy(A, UINT64_MAX - 10, 100, MEARAS_COPY_HTOD), cudaErrorInvalidValue); /* off+len wraps */
	CHECK_EQ(copy(A, 16, UINT64_MAX, MEARAS_COPY_HTOD), cudaErrorInvalidValue);
	CHECK_EQ(copy(ds - 100, A, 101, MEARAS_COPY_DTOH), cudaErrorInvalidValue);
	CHECK_EQ(copy(UINT64_MAX, A, 2, MEARAS_COPY_DTOH), cudaErrorInvalidValue);
	/* host-to-host is not a device record */
	CHECK_EQ(copy(0, 4096, 16, MEARAS_COPY_HTOH), cudaErrorInvalidMemcpyDirection);
	CHECK_EQ(copy(A, 0, 16, 0), cudaErrorInvalidMemcpyDirection);
	CHECK_EQ(copy(A, 0, 16, 77), cudaErrorInvalidMemcpyDirection);
	/* module images come from the data area too */
	{
		struct mearas_sqe e = sqe_of(MEARAS_OP_MODULE_LOAD);

		e.args.a[0] = 1;
		e.args.a[1] = ds - 16;
		e.args.a[2] = 17;
		CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
		e.args.a[1] = UINT64_MAX - 8;
		e.args.a[2] = 64;
		CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
	}
}

static void test_device_ranges(void)
{
	uint64_t gone = fixture_alloc(&fx, 0, 4096), other = fixture_alloc(&fx, 1, 4096);

	CHECK(gone && other);
	CHECK_EQ(mem_free(gone), 0);
	CHECK_EQ(copy(A + 4095, 0, 1, MEARAS_COPY_HTOD), 0);
	CHECK_EQ(copy(A + 4095, 0, 2, MEARAS_COPY_HTOD), cudaErrorInvalidValue);  /* crosses A's end */
	CHECK_EQ(copy(A, 0, 8192, MEARAS_COPY_HTOD), cudaErrorInvalidValue);      /* spans A and B */
	CHECK_EQ(copy(A - 1, 0, 2, MEARAS_COPY_HTOD), cudaErrorInvalidValue);
	CHECK_EQ(copy(0, 0, 1, MEARAS_COPY_HTOD), cudaErrorInvalidValue);
	CHECK_EQ(copy(A + (1ull << 30), 0, 1, MEARAS_COPY_HTOD), cudaErrorInvalidValue);
	CHECK_EQ(copy(gone, 0, 16, MEARAS_COPY_HTOD), cudaErrorInvalidValue);     /* freed */
	CHECK_EQ(copy(0, gone, 16, MEARAS_COPY_DTOH), cudaErrorInvalidValue);
	CHECK_EQ(copy(A, gone, 16, MEARAS_COPY_DTOD), cudaErrorInvalidValue);
	CHECK_EQ(copy(A + 8, UINT64_MAX - 4, 16, MEARAS_COPY_DTOD), cudaErrorInvalidValue);
	CHECK_EQ(copy(A + 8, A + 4000, 100, MEARAS_COPY_DTOD), cudaErrorInvalidValue);
	/* another vGPU of the same client: allowed (peer copy), its bounds too */
	CHECK_EQ(copy(other, 0, 4096, MEARAS_COPY_HTOD), 0);
	CHECK_EQ(copy(other, 0, 4097, MEARAS_COPY_HTOD), cudaErrorInvalidValue);
	CHECK_EQ(copy(A, other, 4096, MEARAS_COPY_DTOD), 0);
	/* the bytes move: data -> A -> B -> data */
	for (unsigned i = 0; i < 4096; i++)
		fx.w->data[i] = (uint8_t)(i ^ 0xa5);
	CHECK_EQ(copy(A, 0, 4096, MEARAS_COPY_HTOD), 0);
	CHECK_EQ(copy(B, A, 4096, MEARAS_COPY_DTOD), 0);
	CHECK_EQ(copy(8192, B, 4096, MEARAS_COPY_DTOH), 0);
	CHECK(memcmp(fx.w->data, fx.w->data + 8192, 4096) == 0);
}

static void test_memset(void)
{
	static const uint64_t bad_elem[] = { 0, 3, 5, 8, 16, UINT64_MAX };

	for (unsigned i = 0; i < sizeof(bad_elem) / sizeof(bad_elem[0]); i++)
		CHECK_EQ(memset1(A, 0, 16, bad_elem[i]), cudaErrorInvalidValue);
	CHECK_EQ(memset1(A, 0x11, 4096, 1), 0);
	CHECK_EQ(memset1(A, 0x11, 4097, 1), cudaErrorInvalidValue);
	CHECK_EQ(memset1(A, 0x2233, 2049, 2), cudaErrorInvalidValue);
	CHECK_EQ(memset1(A, 0x44556677, 1025, 4), cudaErrorInvalidValue);
	CHECK_EQ(memset1(A, 0, UINT64_MAX / 4 + 2, 4), cudaErrorInvalidValue); /* count*4 wraps */
	CHECK_EQ(memset1(A, 0, 1ull << 62, 4), cudaErrorInvalidValue);
	CHECK_EQ(memset1(A + 4090, 0, 0, 4), 0);        /* nothing to do */
	CHECK_EQ(memset1(A + 2, 0x44556677, 1, 4), 0);
	CHECK_EQ(memset1(A + 6, 0xbeef, 1, 2), 0);
	CHECK_EQ(copy(0, A, 16, MEARAS_COPY_DTOH), 0);
	{
		static const uint8_t want[16] = { 0x11, 0x11, 0x77, 0x66, 0x55, 0x44, 0xef, 0xbe,
						  0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11 };

		CHECK(memcmp(fx.w->data, want, 16) == 0);
	}
}

static void test_2d(void)
{
	/* pitches smaller than the width */
	CHECK_EQ(copy2d(A, 16, 0, 64, 32, 4, MEARAS_COPY_HTOD), cudaErrorInvalidPitchValue);
	CHECK_EQ(copy2d(A, 64, 0, 16, 32, 4, MEARAS_COPY_HTOD), cudaErrorInvalidPitchValue);
	CHECK_EQ(copy2d(A, 0, 0, 0, 1, 1, MEARAS_COPY_HTOD), cudaErrorInvalidPitchValue);
	CHECK_EQ(memset2d(A, 16, 0, 32, 4), cudaErrorInvalidValue);
	/* sizes whose span overflows or is absurd */
	CHECK_EQ(copy2d(A, 1ull << 41, 0, 64, 32, 2, MEARAS_COPY_HTOD), cudaErrorInvalidPitchValue);
	CHECK_EQ(copy2d(A, 64, 0, 64, 32, (1ull << 32) + 1, MEARAS_COPY_HTOD), cudaErrorInvalidPitchValue);
	CHECK_EQ(copy2d(A, 1ull << 40, 0, 1ull << 40, 32, 1ull << 32, MEARAS_COPY_HTOD), cudaErrorInvalidValue);
	CHECK_EQ(memset2d(A, 1ull << 41, 0, 32, 2), cudaErrorInvalidValue);
	CHECK_EQ(memset2d(A, 1ull << 40, 0, 32, 1ull << 32), cudaErrorInvalidValue);
	/* spans leaving the allocation or the data area */
	CHECK_EQ(copy2d(A, 1024, 0, 1024, 1024, 4, MEARAS_COPY_HTOD), 0);
	CHECK_EQ(copy2d(A, 1024, 0, 1024, 1025, 4, MEARAS_COPY_HTOD), cudaErrorInvalidPitchValue);
	CHECK_EQ(copy2d(A, 1025, 0, 1025, 1024, 4, MEARAS_COPY_HTOD), cudaErrorInvalidValue);
	CHECK_EQ(copy2d(A, 1024, FIXTURE_DATA_SIZE - 3000, 1024, 1024, 4, MEARAS_COPY_HTOD),
		 cudaErrorInvalidValue);
	CHECK_EQ(copy2d(FIXTURE_DATA_SIZE - 3000, 1024, A, 1024, 1024, 4, MEARAS_COPY_DTOH),
		 cudaErrorInvalidValue);
	CHECK_EQ(copy2d(B, 2048, A, 1024, 1024, 3, MEARAS_COPY_DTOD), cudaErrorInvalidValue);
	CHECK_EQ(copy2d(B, 1024, A, 1024, 1024, 4, 9), cudaErrorInvalidMemcpyDirection);
	CHECK_EQ(memset2d(A, 1024, 0, 1024, 5), cudaErrorInvalidValue);
	CHECK_EQ(memset2d(A + 1, 1024, 0, 1024, 4), cudaErrorInvalidValue);
	CHECK_EQ(copy2d(A, 0, 0, 0, 0, 5, MEARAS_COPY_HTOD), 0);        /* empty: nothing checked */
	/* a valid 2D round trip: 8 rows of 100 bytes, pitches 128 (device) and 100 (host) */
	for (unsigned i = 0; i < 800; i++)
		fx.w->data[i] = (uint8_t)(i * 13);
	CHECK_EQ(memset2d(A, 128, 0xee, 128, 8), 0);
	CHECK_EQ(copy2d(A, 128, 0, 100, 100, 8, MEARAS_COPY_HTOD), 0);
	CHECK_EQ(copy(65536, A, 1024, MEARAS_COPY_DTOH), 0);
	for (unsigned r = 0; r < 8; r++) {
		CHECK(memcmp(fx.w->data + 65536 + r * 128, fx.w->data + r * 100, 100) == 0);
		for (unsigned c = 100; c < 128; c++)
			CHECK_EQ(fx.w->data[65536 + r * 128 + c], 0xee);
	}
}

static void test_free_and_quota(void)
{
	uint64_t big, x;
	uint64_t val[2];
	struct mearas_sqe e = sqe_of(MEARAS_OP_MEM_GET_INFO);

	CHECK_EQ(mem_free(A + 256), cudaErrorInvalidValue);
	CHECK_EQ(mem_free(A + 1), cudaErrorInvalidValue);
	CHECK_EQ(mem_free(0), cudaErrorInvalidValue);
	CHECK_EQ(mem_free(0x12345678), cudaErrorInvalidValue);
	e = sqe_of(MEARAS_OP_MEM_FREE_ASYNC);
	e.args.a[0] = B + 512;
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
	e.args.a[0] = B;
	e.stream = 4242;                /* unknown stream: refused, nothing freed */
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidResourceHandle);
	CHECK(vaheap_find(&fx.w->vgpus[0].heap, B, 1));
	/* the vGPU sees its quota as its memory */
	e = sqe_of(MEARAS_OP_MEM_GET_INFO);
	CHECK_EQ(fixture_run(&fx, 0, &e, val), 0);
	CHECK_EQ(val[1], QUOTA);
	CHECK_EQ(val[0], QUOTA - fx.w->vgpus[0].heap.used);
	e = sqe_of(MEARAS_OP_MEM_ALLOC);
	e.args.a[0] = QUOTA;
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorMemoryAllocation);
	e.args.a[0] = 0;
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorMemoryAllocation);
	e.args.a[0] = UINT64_MAX;
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorMemoryAllocation);
	big = fixture_alloc(&fx, 0, QUOTA - fx.w->vgpus[0].heap.used);
	CHECK(big);
	CHECK_EQ(fixture_alloc(&fx, 0, 1), 0);
	CHECK_EQ(mem_free(big), 0);
	CHECK_EQ(mem_free(big), cudaErrorInvalidValue);
	x = fixture_alloc(&fx, 0, 1);
	CHECK(x);
	CHECK_EQ(mem_free(x), 0);
	CHECK_EQ(mem_free(A), 0);
	CHECK_EQ(copy(A, 0, 1, MEARAS_COPY_HTOD), cudaErrorInvalidValue);
}

/* HOST_MAPPED: a range inside the data area, mapped (1) or not (0); else refused */
static int host_mapped(uint64_t off, uint64_t size, uint64_t on)
{
	return FIXTURE_OP(MEARAS_OP_HOST_MAPPED, 0, off, size, on);
}

static void test_host_mapped(void)
{
	const int bad = cudaErrorInvalidValue;

	CHECK_EQ(host_mapped(0, 4096, 1), 0);
	CHECK_EQ(host_mapped(FIXTURE_DATA_SIZE - 1, 1, 0), 0);
	CHECK_EQ(host_mapped(0, 0, 1), bad);                        /* empty */
	CHECK_EQ(host_mapped(FIXTURE_DATA_SIZE - 1, 2, 1), bad);    /* past the end */
	CHECK_EQ(host_mapped(FIXTURE_DATA_SIZE + 1, 1, 1), bad);
	CHECK_EQ(host_mapped(8, UINT64_MAX, 1), bad);               /* wraps */
	CHECK_EQ(host_mapped(0, 4096, 2), bad);                     /* neither on nor off */
}

/* Device memory mapped for vGPU 0's allocations (its heap's chunks). */
static uint64_t mapped_bytes(void)
{
	const struct vaheap *h = &fx.w->vgpus[0].heap;
	uint64_t sum = 0;

	for (size_t i = 0; i < h->nchunks; i++)
		if (!h->chunks[i].reserved)
			sum += h->chunks[i].size;
	return sum;
}

/* A client allocating and freeing ever larger buffers below 64 MiB, each
 * too large for the chunks freed before it, used to leave every chunk
 * mapped (only idle chunks of 64 MiB and more went back): 752 MiB of device
 * memory held with nothing allocated, past a 64 MiB quota. */
static void test_freed_chunks_bounded(void)
{
	uint64_t most = 0;

	CHECK_EQ(mem_free(A), 0);
	CHECK_EQ(mem_free(B), 0);
	for (uint64_t mib = 32; mib < 62; mib += 2) {
		uint64_t x = fixture_alloc(&fx, 0, (mib << 20) + 1);

		REQUIRE(x);
		CHECK_EQ(mem_free(x), 0);
		if (mapped_bytes() > most)
			most = mapped_bytes();
	}
	printf("  %llu MiB mapped at most, %llu MiB after, nothing allocated\n", (unsigned long long)(most >> 20),
	       (unsigned long long)(mapped_bytes() >> 20));
	CHECK_EQ(fx.w->vgpus[0].heap.used, 0);
	CHECK(mapped_bytes() <= QUOTA);
	/* the quota's worth is still there to allocate, freed chunks or not */
	A = fixture_alloc(&fx, 0, QUOTA);
	CHECK(A != 0);
	CHECK_EQ(mem_free(A), 0);
	CHECK(mapped_bytes() <= QUOTA);
}

/* vGPU 1's thread: allocations made and freed in bulk, so that its heap's
 * tables grow, move and shrink while vGPU 0 checks copies against them */
static _Atomic int peer_stop;

static void *peer_churn(void *arg)
{
	struct vgpu *v = &fx.w->vgpus[1];
	static uint64_t live[3000];
	uint64_t ud = 0;

	(void)arg;
	while (!peer_stop) {
		size_t n = 0;

		for (; n < sizeof(live) / sizeof(live[0]); n++) {
			struct mearas_sqe e = sqe_of(MEARAS_OP_MEM_ALLOC);
			struct mearas_cqe c;

			e.args.a[0] = 256;
			e.flags = MEARAS_SQE_WANT_CQE;
			e.user_data = ++ud;
			exec_record(v, &e);
			if (!fixture_cq_pop(&fx, 1, 0, &c) || c.status)
				break;
			live[n] = c.val[0];
		}
		while (n > 0) {
			struct mearas_sqe e = sqe_of(MEARAS_OP_MEM_FREE);

			e.args.a[0] = live[--n];
			exec_record(v, &e);
		}
	}
	return NULL;
}

static void test_peer_copy_while_peer_allocates(void)
{
	uint64_t other = fixture_alloc(&fx, 1, 4096);
	pthread_t t;

	REQUIRE(other);
	peer_stop = 0;
	REQUIRE(pthread_create(&t, NULL, peer_churn, NULL) == 0);
	for (int i = 0; i < 20000; i++) {
		CHECK_EQ(copy(other, 0, 4096, MEARAS_COPY_HTOD), 0);
		CHECK_EQ(copy(other + 4095, 0, 2, MEARAS_COPY_HTOD), cudaErrorInvalidValue); /* past its end */
	}
	peer_stop = 1;
	pthread_join(t, NULL);
	CHECK_EQ(fx.w->vgpus[1].deferred_error, 0);
}

static int memop(unsigned op, uint64_t addr, uint64_t value, uint32_t size, uint32_t place, uint32_t flags)
{
	struct mearas_sqe e = sqe_of(op);

	/* the two ops have the same arguments */
	e.args.STREAM_WRITE_VALUE.addr = addr;
	e.args.STREAM_WRITE_VALUE.value = value;
	e.args.STREAM_WRITE_VALUE.size = size;
	e.args.STREAM_WRITE_VALUE.place = place;
	e.args.STREAM_WRITE_VALUE.flags = flags;
	return fixture_run(&fx, 0, &e, NULL);
}

/* Stream memory operations name a word of this client's device memory or
 * data area, aligned, of 4 or 8 bytes; anything else is refused before the
 * device sees it. */
static void test_stream_memops(void)
{
	const unsigned W = MEARAS_OP_STREAM_WRITE_VALUE, T = MEARAS_OP_STREAM_WAIT_VALUE;

	CHECK_EQ(memop(W, A, 5, 4, MEARAS_MEMOP_DEVICE, 0), 0);
	CHECK_EQ(memop(T, A, 5, 4, MEARAS_MEMOP_DEVICE, MEARAS_MEMOP_EQ), 0);
	CHECK_EQ(memop(W, B + 4088, 1ull << 40, 8, MEARAS_MEMOP_DEVICE, MEARAS_MEMOP_NO_BARRIER), 0);
	CHECK_EQ(memop(W, 64, 9, 8, MEARAS_MEMOP_HOST, 0), 0);
	CHECK_EQ(memop(T, 64, 9, 8, MEARAS_MEMOP_HOST, MEARAS_MEMOP_GEQ | MEARAS_MEMOP_FLUSH), 0);
	CHECK_EQ(memop(W, B + 4096, 1, 4, MEARAS_MEMOP_DEVICE, 0), cudaErrorInvalidValue);     /* past B */
	CHECK_EQ(memop(W, A + 2, 1, 4, MEARAS_MEMOP_DEVICE, 0), cudaErrorInvalidValue);        /* misaligned */
	CHECK_EQ(memop(W, A, 1, 2, MEARAS_MEMOP_DEVICE, 0), cudaErrorInvalidValue);            /* no such size */
	CHECK_EQ(memop(W, A, 1ull << 32, 4, MEARAS_MEMOP_DEVICE, 0), cudaErrorInvalidValue);   /* does not fit */
	CHECK_EQ(memop(W, A, 1, 4, 2, 0), cudaErrorInvalidValue);                              /* no such place */
	CHECK_EQ(memop(W, A, 1, 4, MEARAS_MEMOP_DEVICE, 2), cudaErrorInvalidValue);            /* unknown flag */
	CHECK_EQ(memop(T, A, 1, 4, MEARAS_MEMOP_DEVICE, 4), cudaErrorInvalidValue);            /* unknown condition */
	CHECK_EQ(memop(W, FIXTURE_DATA_SIZE - 4, 1, 8, MEARAS_MEMOP_HOST, 0), cudaErrorInvalidValue);
	CHECK_EQ(memop(T, UINT64_MAX - 3, 1, 4, MEARAS_MEMOP_HOST, 0), cudaErrorInvalidValue);
	CHECK_EQ(memop(W, 0x1000, 1, 8, MEARAS_MEMOP_DEVICE, 0), cudaErrorInvalidValue);      /* nobody's memory */
	CHECK_EQ(memop(W, A, 3, 4, MEARAS_MEMOP_DEVICE, 0), 0);                                /* still served */
}

/* A and B, adjacent, for every case */
static void alloc_a_b(void)
{
	A = fixture_alloc(&fx, 0, 4096);
	B = fixture_alloc(&fx, 0, 4096);
	REQUIRE(A && B && B == A + 4096);
}

static const struct check_case cases[] = {
	{ "data_area_offsets", test_data_area },
	{ "device_ranges", test_device_ranges },
	{ "memset", test_memset },
	{ "copy_and_memset_2d", test_2d },
	{ "free_and_quota", test_free_and_quota },
	{ "host_mapped", test_host_mapped },
	{ "freed_chunks_bounded", test_freed_chunks_bounded },
	{ "peer_copy_while_peer_allocates", test_peer_copy_while_peer_allocates },
	{ "stream_memops", test_stream_memops },
};
FIXTURE_MAIN(cases, 2, QUOTA, alloc_a_b)
