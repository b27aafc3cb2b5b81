// SPDX-License-Identifier: MIT
/* exec_record(): virtual memory management records (exec_vmm.c) on the sim
 * device -- handle ids (range, in use, per vGPU), sizes and alignment, the
 * quota shared with MEM_ALLOC, mappings at an offset of a handle and one
 * handle at two addresses (bytes seen through both), copies checked against
 * mapped stretches only, MEM_FREE of a mapping refused, memory kept while a
 * released handle is mapped, and a device reset freeing it all. */
#include <string.h>

#include "check.h"
#include "fixture_cases.h"

#define QUOTA (64ull << 20)
#define G (2ull << 20)

static int create(unsigned vg, uint64_t id, uint64_t size)
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_VMM_CREATE);

	mearas_prep_VMM_CREATE(&e, id, size);
	return fixture_run(&fx, vg, &e, NULL);
}

static int release(uint64_t id)
{
	return FIXTURE_OP(MEARAS_OP_VMM_RELEASE, 0, id);
}

static uint64_t reserve(uint64_t size)
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_VMM_RESERVE);
	uint64_t val[2] = { 0 };

	mearas_prep_VMM_RESERVE(&e, size, 0, 0);
	return fixture_run(&fx, 0, &e, val) == 0 ? val[0] : 0;
}

static int map(uint64_t va, uint64_t size, uint64_t offset, uint64_t id)
{
	return FIXTURE_OP(MEARAS_OP_VMM_MAP, 0, va, size, offset, id);
}

static int unmap(uint64_t va, uint64_t size)
{
	return FIXTURE_OP(MEARAS_OP_VMM_UNMAP, 0, va, size);
}

static int copy(uint64_t dst, uint64_t src, uint64_t size, uint64_t dir)
{
	return FIXTURE_OP(MEARAS_OP_MEMCPY, 0, dst, src, size, dir);
}

static uint64_t used(void)
{
	return fx.w->vgpus[0].heap.used;
}

static void test_handles(void)
{
	CHECK_EQ(create(0, 1, 0), cudaErrorInvalidValue);
	CHECK_EQ(create(0, 1, G + 4096), cudaErrorInvalidValue);
	CHECK_EQ(create(0, 0, G), cudaErrorInvalidValue);              /* id 0 */
	CHECK_EQ(create(0, UINT64_MAX, G), cudaErrorInvalidValue);     /* out of range */
	CHECK_EQ(create(0, 5, G), 0);
	CHECK_EQ(create(0, 5, G), cudaErrorInvalidValue);              /* in use */
	CHECK_EQ(used(), G);
	/* ids are per vGPU: vGPU 1 has no handle 5 */
	CHECK_EQ(fixture_op(&fx, 1, 0, MEARAS_OP_VMM_RELEASE, 0, (const uint64_t[]){ 5 }, 1),
		 cudaErrorInvalidResourceHandle);
	CHECK_EQ(map(reserve(2 * G), G, 0, 6), cudaErrorInvalidValue); /* no handle 6 */
	CHECK_EQ(release(6), cudaErrorInvalidResourceHandle);
	CHECK_EQ(release(5), 0);
	CHECK_EQ(release(5), cudaErrorInvalidResourceHandle);
	CHECK_EQ(used(), 0);
}

static void test_quota(void)
{
	uint64_t val[2];
	struct mearas_sqe e = sqe_of(MEARAS_OP_MEM_GET_INFO);

	CHECK_EQ(create(0, 1, QUOTA + G), cudaErrorMemoryAllocation);
	CHECK_EQ(create(0, 1, UINT64_MAX - G + 1), cudaErrorMemoryAllocation);
	CHECK_EQ(create(0, 1, QUOTA), 0);
	CHECK_EQ(fixture_alloc(&fx, 0, 4096), 0);                        /* MEM_ALLOC draws on the same bytes */
	CHECK_EQ(create(0, 2, G), cudaErrorMemoryAllocation);
	CHECK_EQ(fixture_run(&fx, 0, &e, val), 0);
	CHECK_EQ(val[0], 0);
	CHECK_EQ(release(1), 0);
	CHECK(fixture_alloc(&fx, 0, 4096) != 0);
	CHECK_EQ(create(0, 2, QUOTA - G), 0);                           /* with the 4096 allocated bytes */
	CHECK_EQ(create(0, 3, G), cudaErrorMemoryAllocation);
}

static void test_map_and_copy(void)
{
	uint64_t va = reserve(8 * G);
	uint8_t *data = fx.w->data;

	REQUIRE(va);
	CHECK_EQ(create(0, 1, 2 * G), 0);
	/* offsets: within the handle, aligned */
	CHECK_EQ(map(va, G, 2 * G, 1), cudaErrorInvalidValue);
	CHECK_EQ(map(va, 2 * G, G, 1), cudaErrorInvalidValue);
	CHECK_EQ(map(va, G, 4096, 1), cudaErrorInvalidValue);
	CHECK_EQ(map(va, G, UINT64_MAX - G + 1, 1), cudaErrorInvalidValue);
	CHECK_EQ(map(va + 4096, G, 0, 1), cudaErrorInvalidValue);
	CHECK_EQ(map(va + 7 * G, 2 * G, 0, 1), cudaErrorInvalidValue);  /* past the reservation */
	CHECK_EQ(map(fx.w->vgpus[0].heap.base + (1ull << 39), G, 0, 1), cudaErrorInvalidValue); /* no reservation */
	/* the handle's second granule at va, the whole handle at va + 4G */
	CHECK_EQ(map(va, G, G, 1), 0);
	CHECK_EQ(map(va + 4 * G, 2 * G, 0, 1), 0);
	CHECK_EQ(map(va + 4 * G, G, 0, 1), cudaErrorInvalidValue);      /* over a mapping */
	for (unsigned i = 0; i < 4096; i++)
		data[i] = (uint8_t)(i * 7 + 3);
	CHECK_EQ(copy(va + 100, 0, 4096, MEARAS_COPY_HTOD), 0);
	memset(data + 8192, 0, 4096);
	CHECK_EQ(copy(8192, va + 5 * G + 100, 4096, MEARAS_COPY_DTOH), 0);
	CHECK(memcmp(data, data + 8192, 4096) == 0);
	/* the unmapped rest of the reservation is no memory */
	CHECK_EQ(copy(va + G - 2048, 0, 4096, MEARAS_COPY_HTOD), cudaErrorInvalidValue);
	CHECK_EQ(copy(va + 2 * G, 0, 16, MEARAS_COPY_HTOD), cudaErrorInvalidValue);
	CHECK_EQ(FIXTURE_OP(MEARAS_OP_MEM_FREE, 0, va), cudaErrorInvalidValue);
	CHECK_EQ(FIXTURE_OP(MEARAS_OP_VMM_ADDRESS_FREE, 0, va, 8 * G), cudaErrorInvalidValue);
	/* released while mapped: the memory stays, charged, until the last unmap */
	CHECK_EQ(release(1), 0);
	CHECK_EQ(used(), 2 * G);
	CHECK_EQ(copy(8192, va + 100, 4096, MEARAS_COPY_DTOH), 0);
	CHECK(memcmp(data, data + 8192, 4096) == 0);
	CHECK_EQ(map(va + 2 * G, G, 0, 1), cudaErrorInvalidValue);     /* its id is gone */
	CHECK_EQ(unmap(va, 2 * G), cudaErrorInvalidValue);              /* not whole mappings */
	CHECK_EQ(unmap(va, G), 0);
	CHECK_EQ(used(), 2 * G);
	CHECK_EQ(unmap(va + 4 * G, 2 * G), 0);
	CHECK_EQ(used(), 0);
	CHECK_EQ(copy(8192, va + 100, 16, MEARAS_COPY_DTOH), cudaErrorInvalidValue);
	CHECK_EQ(FIXTURE_OP(MEARAS_OP_VMM_ADDRESS_FREE, 0, va, 4 * G), cudaErrorInvalidValue);
	CHECK_EQ(FIXTURE_OP(MEARAS_OP_VMM_ADDRESS_FREE, 0, va, 8 * G), 0);
	CHECK_EQ(FIXTURE_OP(MEARAS_OP_VMM_ADDRESS_FREE, 0, va, 8 * G), cudaErrorInvalidValue);
}

static void test_reset(void)
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_DEVICE_RESET);
	uint64_t va = reserve(4 * G);
	const struct vaheap *h = &fx.w->vgpus[0].heap;

	REQUIRE(va);
	CHECK_EQ(create(0, 1, 2 * G), 0);
	CHECK_EQ(create(0, 2, 2 * G), 0);
	CHECK_EQ(map(va, 2 * G, 0, 1), 0);
	CHECK_EQ(map(va + 2 * G, 2 * G, 0, 2), 0);
	CHECK_EQ(release(2), 0);
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), 0);
	CHECK_EQ(h->used, 0);
	CHECK_EQ(h->nallocs, 0);
	CHECK_EQ(h->nchunks, 0);
	CHECK_EQ(create(0, 1, 2 * G), 0);                                /* the id is free again */
	CHECK_EQ(map(va, 2 * G, 0, 1), cudaErrorInvalidValue);           /* the reservation is gone */
}

static const struct check_case cases[] = {
	{ "handles", test_handles },
	{ "quota", test_quota },
	{ "map_and_copy", test_map_and_copy },
	{ "reset", test_reset },
};
FIXTURE_MAIN(cases, 2, QUOTA, NULL)
