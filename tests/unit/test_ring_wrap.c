// SPDX-License-Identifier: MIT
/* Free-running 32-bit ring indices across UINT32_MAX: ready/space stay right
 * and records come out in order and intact. */
#include "check.h"
#include "ring_util.h"

static void run(uint32_t entries, uint32_t start, unsigned batch)
{
	struct test_ring r;
	struct mearas_sqe e;
	uint64_t next_in = 0, next_out = 0;

	test_ring_init(&r, entries, start);
	REQUIRE(r.sqes);
	for (unsigned round = 0; round < 8 + 4 * entries / batch; round++) {
		for (unsigned i = 0; i < batch; i++) {
			test_sqe_fill(&e, next_in);
			CHECK(test_ring_push(&r, &e));
			next_in++;
		}
		CHECK_EQ(mearas_ring_ready(&r.ctl), batch);
		CHECK_EQ(mearas_ring_space(&r.ctl, entries), entries - batch);
		for (unsigned i = 0; i < batch; i++) {
			CHECK(test_ring_pop(&r, &e));
			CHECK(test_sqe_valid(&e, next_out));
			next_out++;
		}
		CHECK(!test_ring_pop(&r, &e));
		CHECK_EQ(mearas_ring_ready(&r.ctl), 0);
		CHECK_EQ(mearas_ring_space(&r.ctl, entries), entries);
	}
	/* the indices really wrapped */
	CHECK((uint64_t)start + next_in > UINT32_MAX);
	CHECK(r.ctl.tail < start);
	test_ring_fini(&r);
}

static void batches_of_3_in_8(void)
{
	run(8, UINT32_MAX - 3, 3);
}

/* batches that fill the submission ring (one slot always stays free)
 * straddling the wrap */
static void full_batches_of_8(void)
{
	run(8, UINT32_MAX, 7);
}

static void batches_of_7_in_64(void)
{
	run(64, UINT32_MAX - 100, 7);
}

static void sq_sized_nearly_full_batches(void)
{
	run(MEARAS_SQ_ENTRIES, UINT32_MAX - MEARAS_SQ_ENTRIES / 2, MEARAS_SQ_ENTRIES - 1);
}

static const struct check_case cases[] = {
	{ "batches_of_3_in_8", batches_of_3_in_8 },
	{ "full_batches_of_8", full_batches_of_8 },
	{ "batches_of_7_in_64", batches_of_7_in_64 },
	{ "sq_sized_nearly_full_batches", sq_sized_nearly_full_batches },
};
CHECK_MAIN(cases)
