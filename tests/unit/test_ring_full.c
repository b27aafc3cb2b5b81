// SPDX-License-Identifier: MIT
/* A full ring: the producer is refused and overwrites nothing, the consumer
 * sees exactly `entries` records; a tail more than `entries` ahead of head
 * (a corrupt ring) shows as ready > entries. */
#include "check.h"
#include "ring_util.h"

static void full(uint32_t entries, uint32_t start)
{
	struct test_ring r;
	struct mearas_sqe e;
	uint32_t n = 0;

	test_ring_init(&r, entries, start);
	REQUIRE(r.sqes);
	for (;;) {
		test_sqe_fill(&e, n);
		if (!test_ring_push(&r, &e))
			break;
		n++;
		REQUIRE(n <= entries);
	}
	CHECK_EQ(n, entries);
	CHECK_EQ(mearas_ring_ready(&r.ctl), entries);
	CHECK_EQ(mearas_ring_space(&r.ctl, entries), 0);
	/* refused again, and the oldest record is untouched */
	test_sqe_fill(&e, 999999);
	CHECK(!test_ring_push(&r, &e));
	CHECK(test_sqe_valid(&r.sqes[start & (entries - 1)], 0));
	for (uint32_t i = 0; i < entries; i++) {
		CHECK(test_ring_pop(&r, &e));
		CHECK(test_sqe_valid(&e, i));
	}
	CHECK(!test_ring_pop(&r, &e));
	/* one slot free again after the consumer made room */
	test_sqe_fill(&e, entries);
	CHECK(test_ring_push(&r, &e));
	CHECK_EQ(mearas_ring_ready(&r.ctl), 1);
	test_ring_fini(&r);
}

static void corrupt(uint32_t entries)
{
	struct mearas_ring_ctl c = { 0 };

	c.head = UINT32_MAX - 2;
	c.tail = c.head + entries + 1;  /* wraps to a small number */
	CHECK(mearas_ring_ready(&c) > entries);
	c.tail = c.head - 1;            /* tail behind head */
	CHECK(mearas_ring_ready(&c) > entries);
	c.tail = c.head + entries;
	CHECK_EQ(mearas_ring_ready(&c), entries);
}

static void full_4_from_0(void)
{
	full(4, 0);
}

static void full_16_across_wrap(void)
{
	full(16, UINT32_MAX - 5);
}

static void full_cq_ending_at_wrap(void)
{
	full(MEARAS_CQ_ENTRIES, UINT32_MAX - MEARAS_CQ_ENTRIES + 1);
}

static void full_sq(void)
{
	full(MEARAS_SQ_ENTRIES, 12345);
}

static void corrupt_sq_indices(void)
{
	corrupt(MEARAS_SQ_ENTRIES);
}

static void corrupt_cq_indices(void)
{
	corrupt(MEARAS_CQ_ENTRIES);
}

static const struct check_case cases[] = {
	{ "full_4_from_0", full_4_from_0 },
	{ "full_16_across_wrap", full_16_across_wrap },
	{ "full_cq_ending_at_wrap", full_cq_ending_at_wrap },
	{ "full_sq", full_sq },
	{ "corrupt_sq_indices", corrupt_sq_indices },
	{ "corrupt_cq_indices", corrupt_cq_indices },
};
CHECK_MAIN(cases)
