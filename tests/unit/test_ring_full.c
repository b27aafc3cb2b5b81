// SPDX-License-Identifier: MIT
/* Full rings, through the shipped ring ends (common/ring.c): the submission
 * ring takes entries - 1 records (one slot stays free, so the arena mark of
 * the last consumed record survives), a completion ring takes `entries`;
 * a refused producer overwrites nothing; a tail more than `entries` ahead of
 * head (a corrupt ring) shows as ready > entries and the SQ consumer says so.
 * Arena payloads: contiguous, the arena's tail skipped, space given back as
 * records are consumed, and refused while it is in use. */
#include "check.h"
#include "ring_util.h"

static void sq_full(uint32_t entries, uint32_t start)
{
	struct test_ring r;
	struct mearas_sqe e;
	uint32_t n = 0;

	REQUIRE(test_ring_init(&r, entries, start));
	for (;;) {
		test_sqe_fill(&e, n);
		if (!test_ring_push(&r, &e))
			break;
		n++;
		REQUIRE(n < entries);
	}
	CHECK_EQ(n, entries - 1);
	CHECK_EQ(mearas_ring_ready(&r.ctl), entries - 1);
	/* refused again, and the oldest record is untouched */
	test_sqe_fill(&e, 999999);
	CHECK(!test_ring_push(&r, &e));
	CHECK(test_sqe_valid(&r.sqes[start & (entries - 1)], 0));
	for (uint32_t i = 0; i < entries - 1; i++) {
		CHECK(test_ring_pop(&r, &e));
		CHECK(test_sqe_valid(&e, i));
	}
	CHECK(!test_ring_pop(&r, &e));
	/* room again after the consumer moved on */
	test_sqe_fill(&e, entries);
	CHECK(test_ring_push(&r, &e));
	CHECK_EQ(mearas_ring_ready(&r.ctl), 1);
	test_ring_fini(&r);
}

static void cq_full(uint32_t entries, uint32_t start)
{
	struct test_ring r;
	struct mearas_cqe c = { 0 };
	uint32_t n = 0;

	REQUIRE(test_ring_init(&r, entries, start));
	for (;;) {
		c.user_data = n;
		if (!mearas_cqp_push(&r.cqp, &c))
			break;
		n++;
		REQUIRE(n <= entries);
	}
	CHECK_EQ(n, entries);
	CHECK(mearas_cqc_ready(&r.cqc));
	for (uint32_t i = 0; i < entries; i++) {
		CHECK(mearas_cqc_pop(&r.cqc, &c));
		CHECK_EQ(c.user_data, i);
	}
	CHECK(!mearas_cqc_pop(&r.cqc, &c));
	c.user_data = 77;
	CHECK(mearas_cqp_push(&r.cqp, &c));
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

static void sq_full_4_from_0(void)
{
	sq_full(4, 0);
}

static void sq_full_16_across_wrap(void)
{
	sq_full(16, UINT32_MAX - 5);
}

static void sq_full_real_size(void)
{
	sq_full(MEARAS_SQ_ENTRIES, 12345);
}

static void cq_full_ending_at_wrap(void)
{
	cq_full(MEARAS_CQ_ENTRIES, UINT32_MAX - MEARAS_CQ_ENTRIES + 1);
}

static void cq_full_4_from_0(void)
{
	cq_full(4, 0);
}

static void corrupt_sq_indices(void)
{
	corrupt(MEARAS_SQ_ENTRIES);
}

static void corrupt_cq_indices(void)
{
	corrupt(MEARAS_CQ_ENTRIES);
}

/* the SQ consumer refuses a producer tail out of range */
static void sq_consumer_sees_corrupt_tail(void)
{
	struct test_ring r;

	REQUIRE(test_ring_init(&r, 16, 100));
	r.ctl.tail = 100 + 17;
	CHECK_EQ(mearas_sqc_available(&r.cons), -1);
	r.ctl.tail = 99;
	CHECK_EQ(mearas_sqc_available(&r.cons), -1);
	r.ctl.tail = 116;
	CHECK_EQ(mearas_sqc_available(&r.cons), 16);
	test_ring_fini(&r);
}

/* a CQ producer refuses a consumer head moved past its tail */
static void cq_producer_sees_corrupt_head(void)
{
	struct test_ring r;
	struct mearas_cqe c = { 0 };

	REQUIRE(test_ring_init(&r, 8, 0));
	mearas_cq_ctl(&r.r, 0)->head = 1000;
	CHECK(!mearas_cqp_push(&r.cqp, &c));
	test_ring_fini(&r);
}

static void fill_bytes(uint8_t *p, uint32_t n, uint32_t seed)
{
	for (uint32_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7);
}

/* a fresh NOP record carrying the n bytes at p, pushed */
static bool push_nop(struct test_ring *r, const uint8_t *p, uint32_t n)
{
	struct mearas_sqe e = { .op = MEARAS_OP_NOP };

	return test_ring_push_payload(r, &e, p, n);
}

/* push_nop, then the record popped into got */
static void nop_round_trip(struct test_ring *r, const uint8_t *p, uint32_t n, struct mearas_sqe *got)
{
	CHECK(push_nop(r, p, n));
	CHECK(test_ring_pop(r, got));
}

/* a ring of 16 records with a 4096-byte arena, and n bytes of seed at p */
static void arena_ring(struct test_ring *r, uint8_t *p, uint32_t n, uint32_t seed)
{
	REQUIRE(test_ring_init_arena(r, 16, 0, 4096));
	fill_bytes(p, n, seed);
}

/* payloads past the inline bytes go to the arena, contiguously: the record
 * names where, the consumer reads them there */
static void arena_payload_lands_whole(void)
{
	struct test_ring r;
	struct mearas_sqe got;
	uint8_t p[1000];

	arena_ring(&r, p, sizeof(p), 1);
	nop_round_trip(&r, p, sizeof(p), &got);
	CHECK(got.flags & MEARAS_SQE_PAYLOAD_ARENA);
	CHECK_EQ(got.payload_len, sizeof(p));
	CHECK(got.payload_off + got.payload_len <= 4096);
	CHECK(memcmp(r.arena + got.payload_off, p, sizeof(p)) == 0);
	test_ring_fini(&r);
}

/* a payload that does not fit before the arena's end starts at 0, and its
 * space is counted from the skipped tail */
static void arena_skips_its_tail(void)
{
	struct test_ring r;
	struct mearas_sqe got;
	uint8_t p[1500];

	arena_ring(&r, p, sizeof(p), 2);
	CHECK(push_nop(&r, p, sizeof(p)));                            /* [0, 1500) */
	CHECK(push_nop(&r, p, sizeof(p)));                            /* [1500, 3000) */
	CHECK_EQ(mearas_sqp_arena_need(&r.prod, sizeof(p)), 1500 + (4096 - 3000));
	/* the first two still hold the arena: a third does not fit */
	CHECK(!push_nop(&r, p, sizeof(p)));
	CHECK(test_ring_pop(&r, &got));                               /* gives [0, 1500) back */
	CHECK(push_nop(&r, p, sizeof(p)));
	CHECK(test_ring_pop(&r, &got));
	CHECK_EQ(got.payload_off, 1500);
	CHECK(test_ring_pop(&r, &got));
	CHECK_EQ(got.payload_off, 0);                                 /* wrapped to the start */
	CHECK(memcmp(r.arena, p, sizeof(p)) == 0);
	test_ring_fini(&r);
}

/* once everything is consumed the whole arena is free, whatever the
 * position, across many rounds and the index wrap */
static void arena_reclaimed_when_drained(void)
{
	struct test_ring r;
	uint8_t p[3000];

	REQUIRE(test_ring_init_arena(&r, 8, UINT32_MAX - 20, 4096));
	for (uint32_t round = 0; round < 200; round++) {
		struct mearas_sqe e = { .op = MEARAS_OP_NOP, .user_data = round }, got;

		fill_bytes(p, sizeof(p), round);
		REQUIRE(test_ring_push_payload(&r, &e, p, sizeof(p)));
		REQUIRE(test_ring_pop(&r, &got));
		CHECK_EQ(got.user_data, round);
		CHECK(memcmp(r.arena + got.payload_off, p, sizeof(p)) == 0);
		CHECK(mearas_sqp_drained(&r.prod));
	}
	test_ring_fini(&r);
}

/* small payloads travel in the record, not the arena */
static void inline_payload_stays_inline(void)
{
	struct test_ring r;
	struct mearas_sqe got;
	uint8_t p[MEARAS_SQE_INLINE];

	REQUIRE(test_ring_init(&r, 8, 0));
	fill_bytes(p, sizeof(p), 3);
	nop_round_trip(&r, p, sizeof(p), &got);
	CHECK(!(got.flags & MEARAS_SQE_PAYLOAD_ARENA));
	CHECK(memcmp(got.inline_payload, p, sizeof(p)) == 0);
	test_ring_fini(&r);
}

static const struct check_case cases[] = {
	{ "sq_full_4_from_0", sq_full_4_from_0 },
	{ "sq_full_16_across_wrap", sq_full_16_across_wrap },
	{ "sq_full_real_size", sq_full_real_size },
	{ "cq_full_4_from_0", cq_full_4_from_0 },
	{ "cq_full_ending_at_wrap", cq_full_ending_at_wrap },
	{ "corrupt_sq_indices", corrupt_sq_indices },
	{ "corrupt_cq_indices", corrupt_cq_indices },
	{ "sq_consumer_sees_corrupt_tail", sq_consumer_sees_corrupt_tail },
	{ "cq_producer_sees_corrupt_head", cq_producer_sees_corrupt_head },
	{ "arena_payload_lands_whole", arena_payload_lands_whole },
	{ "arena_skips_its_tail", arena_skips_its_tail },
	{ "arena_reclaimed_when_drained", arena_reclaimed_when_drained },
	{ "inline_payload_stays_inline", inline_payload_stays_inline },
};
CHECK_MAIN(cases)
