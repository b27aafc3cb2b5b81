// SPDX-License-Identifier: MIT
/* The VM output byte rings (include/mearas/vm_output.h): bytes come out in
 * order across the index wrap, a full ring drops and counts, and a guest's
 * scribbled tail never makes the host write outside the data area (the ASan
 * variant checks the bounds; the data area is malloc'd to its exact size). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mearas/vm_output.h"

#define SIZE 4096u

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 131 + (i >> 8));
}

static void stream_in_order(uint32_t start)
{
	struct mearas_vm_out_ring r = { .head = start, .tail = start };
	uint8_t *buf = malloc(SIZE), src[1500], dst[1500];
	uint32_t head = start;
	uint64_t in = 0, out = 0;

	REQUIRE(buf);
	for (unsigned round = 0; round < 200; round++) {
		size_t len = 1 + (round * 37) % sizeof(src), got;

		for (size_t i = 0; i < len; i++)
			src[i] = pattern(in + i);
		CHECK_EQ(mearas_vm_out_put(&r, buf, SIZE, &head, src, len), len);
		in += len;
		CHECK_EQ(r.head, head);
		got = mearas_vm_out_get(&r, buf, SIZE, dst, sizeof(dst));
		CHECK_EQ(got, len);
		for (size_t i = 0; i < got; i++)
			CHECK_EQ(dst[i], pattern(out + i));
		out += got;
	}
	CHECK_EQ(mearas_vm_out_get(&r, buf, SIZE, dst, sizeof(dst)), 0);
	CHECK_EQ(r.dropped, 0);
	free(buf);
}

static void full_ring_drops(void)
{
	struct mearas_vm_out_ring r = { 0 };
	uint8_t *buf = malloc(SIZE), src[SIZE + 100], dst[SIZE + 100];
	uint32_t head = 0;

	REQUIRE(buf);
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = pattern(i);
	CHECK_EQ(mearas_vm_out_put(&r, buf, SIZE, &head, src, sizeof(src)), SIZE);
	CHECK_EQ(r.dropped, 100);
	CHECK_EQ(mearas_vm_out_put(&r, buf, SIZE, &head, src, 10), 0);
	CHECK_EQ(r.dropped, 110);
	CHECK_EQ(mearas_vm_out_get(&r, buf, SIZE, dst, sizeof(dst)), SIZE);
	CHECK(memcmp(dst, src, SIZE) == 0);
	/* room again once the guest consumed */
	CHECK_EQ(mearas_vm_out_put(&r, buf, SIZE, &head, src, 10), 10);
	free(buf);
}

static void hostile_tail(void)
{
	uint8_t *buf = malloc(SIZE), src[SIZE];
	uint32_t tails[] = { 5, UINT32_MAX, 0x80000000u, 1000 - SIZE - 1, 999, 1001 };

	REQUIRE(buf);
	memset(src, 0xab, sizeof(src));
	for (size_t t = 0; t < sizeof(tails) / sizeof(tails[0]); t++) {
		struct mearas_vm_out_ring r = { .tail = tails[t] };
		uint32_t head = 1000, used = head - tails[t];
		size_t n;

		memset(buf, 0, SIZE);
		n = mearas_vm_out_put(&r, buf, SIZE, &head, src, sizeof(src));
		/* only a tail in [head - SIZE, head] leaves room */
		CHECK_EQ(n, used <= SIZE ? SIZE - used : 0);
		CHECK_EQ(head, 1000 + n);
	}
	/* random tails: never out of bounds (ASan), never more than fits */
	srand(7);
	for (int i = 0; i < 10000; i++) {
		struct mearas_vm_out_ring r = { .tail = (uint32_t)rand() * 2654435761u };
		uint32_t head = (uint32_t)rand() * 40503u;

		CHECK(mearas_vm_out_put(&r, buf, SIZE, &head, src, (size_t)(rand() % (SIZE + 1))) <= SIZE);
	}
	free(buf);
}

static void broken_head_reads_empty(void)
{
	struct mearas_vm_out_ring r = { .head = 10 + SIZE + 1, .tail = 10 };
	uint8_t *buf = calloc(1, SIZE), dst[64];

	REQUIRE(buf);
	CHECK_EQ(mearas_vm_out_get(&r, buf, SIZE, dst, sizeof(dst)), 0);
	CHECK_EQ(r.tail, 10);
	free(buf);
}

static void stream_in_order_from_0(void)
{
	stream_in_order(0);
}

static void stream_in_order_across_wrap(void)
{
	stream_in_order(UINT32_MAX - 3000);
}

static const struct check_case cases[] = {
	{ "stream_in_order_from_0", stream_in_order_from_0 },
	{ "stream_in_order_across_wrap", stream_in_order_across_wrap },
	{ "full_ring_drops", full_ring_drops },
	{ "hostile_tail", hostile_tail },
	{ "broken_head_reads_empty", broken_head_reads_empty },
};
CHECK_MAIN(cases)
