// SPDX-License-Identifier: MIT
/* exec_record(): record framing checks -- unknown op, unknown flags,
 * completion slot out of range, inline/arena payload bounds, deferred
 * errors of records without a completion, a client CQ that is full. */
#include <unistd.h>

#include "check.h"
#include "mearas/ring.h"
#include "fixture_cases.h"


static void test_op_and_flags(void)
{
	struct mearas_sqe e;

	e = sqe_of(MEARAS_OP_COUNT);
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
	e = sqe_of(0xffff);
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
	e = sqe_of(MEARAS_OP_NOP);
	e.flags = 8;
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
	e = sqe_of(MEARAS_OP_NOP);
	e.flags = 0x8000;
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
	e = sqe_of(MEARAS_OP_NOP);
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), 0);
	CHECK(!fx.w->broken);
}

static void test_slot_out_of_range(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	struct mearas_sqe e = sqe_of(MEARAS_OP_NOP);
	struct mearas_sqe s = sqe_of(MEARAS_OP_SYNC_ERROR);
	unsigned bad[] = { MEARAS_MAX_THREADS, MEARAS_MAX_THREADS + 1, 0xffff };

	for (unsigned i = 0; i < 3; i++) {
		/* with a completion wanted: nowhere to post it, the client is cut off */
		e.flags = MEARAS_SQE_WANT_CQE;
		e.cq = (uint16_t)bad[i];
		exec_record(v, &e);
		CHECK(fx.w->broken);
		for (unsigned t = 0; t < MEARAS_MAX_THREADS; t++)
			CHECK_EQ(fixture_cq_ready(&fx, 0, t), 0);
		fx.w->broken = false;
		/* without: a deferred error, reported by the next synchronizing call */
		e.flags = 0;
		exec_record(v, &e);
		CHECK(!fx.w->broken);
		CHECK_EQ(v->deferred_error, cudaErrorInvalidValue);
		CHECK_EQ(fixture_run(&fx, 0, &s, NULL), cudaErrorInvalidValue);
		CHECK_EQ(fixture_run(&fx, 0, &s, NULL), 0); /* reported once */
	}
	/* a per-thread stream named with a bad slot touches no array out of bounds */
	e = sqe_of(MEARAS_OP_STREAM_SYNC);
	e.flags = MEARAS_SQE_PER_THREAD;
	e.cq = MEARAS_MAX_THREADS;
	exec_record(v, &e);
	CHECK_EQ(v->deferred_error, cudaErrorInvalidValue);
	v->deferred_error = 0;
}

static void test_payload_bounds(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	uint64_t dev = fixture_alloc(&fx, 0, 1 << 20);
	struct mearas_sqe e;
	static const struct { uint32_t off, len; int ok; } arena[] = {
		{ 0, 0, 1 },
		{ 0, MEARAS_ARENA_SIZE, 1 },
		{ MEARAS_ARENA_SIZE - 16, 16, 1 },
		{ MEARAS_ARENA_SIZE, 0, 1 },
		{ MEARAS_ARENA_SIZE - 16, 17, 0 },
		{ MEARAS_ARENA_SIZE, 1, 0 },
		{ MEARAS_ARENA_SIZE + 1, 0, 0 },
		{ 16, UINT32_MAX - 8, 0 },      /* off + len wraps 32 bits */
		{ UINT32_MAX, 2, 0 },
		{ UINT32_MAX, UINT32_MAX, 0 },
		{ 0, MEARAS_ARENA_SIZE + 1, 0 },
	};

	CHECK(dev);
	for (unsigned i = 0; i < sizeof(arena) / sizeof(arena[0]); i++) {
		e = sqe_of(MEARAS_OP_MEMCPY_INLINE);
		e.flags = MEARAS_SQE_PAYLOAD_ARENA;
		e.payload_off = arena[i].off;
		e.payload_len = arena[i].len;
		e.args.a[0] = dev;
		CHECK_EQ(fixture_run(&fx, 0, &e, NULL), arena[i].ok ? 0 : cudaErrorInvalidValue);
	}
	/* inline payloads: at most MEARAS_SQE_INLINE bytes */
	e = sqe_of(MEARAS_OP_MEMCPY_INLINE);
	e.args.a[0] = dev;
	e.payload_len = MEARAS_SQE_INLINE;
	memset(e.inline_payload, 0x5a, MEARAS_SQE_INLINE);
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), 0);
	e.payload_len = MEARAS_SQE_INLINE + 1;
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
	e.payload_len = UINT32_MAX;
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
	/* the bytes of a valid arena payload really arrive */
	for (unsigned i = 0; i < 64; i++)
		v->rings.arena[MEARAS_ARENA_SIZE - 64 + i] = (uint8_t)(i * 7);
	e = sqe_of(MEARAS_OP_MEMCPY_INLINE);
	e.flags = MEARAS_SQE_PAYLOAD_ARENA;
	e.payload_off = MEARAS_ARENA_SIZE - 64;
	e.payload_len = 64;
	e.args.a[0] = dev + 100;
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), 0);
	e = sqe_of(MEARAS_OP_MEMCPY);
	e.args.a[0] = 4096;     /* data offset */
	e.args.a[1] = dev;
	e.args.a[2] = 300;
	e.args.a[3] = MEARAS_COPY_DTOH;
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), 0);
	for (unsigned i = 0; i < 100; i++)
		CHECK_EQ(fx.w->data[4096 + i], 0x5a);   /* the inline copy above */
	for (unsigned i = 0; i < 64; i++)
		CHECK_EQ(fx.w->data[4096 + 100 + i], (uint8_t)(i * 7));
	/* payload strings must be NUL-terminated inside the payload */
	e = sqe_of(MEARAS_OP_FUNC_GET);
	e.args.a[0] = 1;
	e.args.a[1] = 1;
	e.payload_len = 4;
	memcpy(e.inline_payload, "abcd", 4);
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
	e.payload_len = 0;
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
	e.payload_len = 1;
	e.inline_payload[0] = 0;        /* empty name */
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
}

static void test_cq_full(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	struct mearas_sqe e = sqe_of(MEARAS_OP_NOP);
	struct mearas_cqe c;

	e.flags = MEARAS_SQE_WANT_CQE;
	e.cq = 5;
	for (unsigned i = 0; i < MEARAS_CQ_ENTRIES; i++) {
		e.user_data = i;
		exec_record(v, &e);
		CHECK(!fx.w->broken);
	}
	CHECK_EQ(fixture_cq_ready(&fx, 0, 5), MEARAS_CQ_ENTRIES);
	e.user_data = 999;
	exec_record(v, &e);             /* the client does not drain its CQ */
	CHECK(fx.w->broken);
	fx.w->broken = false;
	for (unsigned i = 0; i < MEARAS_CQ_ENTRIES; i++) {
		CHECK(fixture_cq_pop(&fx, 0, 5, &c));
		CHECK_EQ(c.user_data, i);       /* nothing was overwritten */
	}
	CHECK(!fixture_cq_pop(&fx, 0, 5, &c));
	/* a client that moved its CQ head past the tail gets no completions posted */
	{
		struct mearas_ring_ctl *ctl = mearas_cq_ctl(&v->rings, 6);

		ctl->head = 1000;
		e.cq = 6;
		exec_record(v, &e);
		CHECK(fx.w->broken);
		fx.w->broken = false;
		ctl->head = 0;
	}
}

static void test_wakeup_posted(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	struct mearas_ring_ctl *ctl = mearas_cq_ctl(&v->rings, 9);
	struct mearas_sqe e = sqe_of(MEARAS_OP_NOP);
	struct mearas_cqe c;
	uint64_t cnt = 0;

	e.flags = MEARAS_SQE_WANT_CQE;
	e.cq = 9;
	exec_record(v, &e);             /* client not asleep: no eventfd write */
	CHECK(read(fx.w->wake_fds[9], &cnt, sizeof(cnt)) < 0);
	CHECK(mearas_ring_prepare_sleep(ctl) == false); /* one is waiting */
	CHECK(fixture_cq_pop(&fx, 0, 9, &c));
	CHECK(mearas_ring_prepare_sleep(ctl));
	exec_record(v, &e);
	CHECK_EQ(read(fx.w->wake_fds[9], &cnt, sizeof(cnt)), sizeof(cnt));
	CHECK_EQ(cnt, 1);
	mearas_ring_end_sleep(ctl);
	CHECK(fixture_cq_pop(&fx, 0, 9, &c));
}

static const struct check_case cases[] = {
	{ "op_and_flags", test_op_and_flags },
	{ "slot_out_of_range", test_slot_out_of_range },
	{ "payload_bounds", test_payload_bounds },
	{ "cq_full", test_cq_full },
	{ "wakeup_posted", test_wakeup_posted },
};
FIXTURE_MAIN(cases, 2, 0, NULL)
