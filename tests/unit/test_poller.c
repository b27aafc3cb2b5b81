// SPDX-License-Identifier: MIT
/* poller.c through a running poller thread: records submitted on the SQ are
 * executed and completed (also a ring filled to exactly sq_entries, and
 * indices wrapping), the need-wakeup kick wakes a sleeping poller, and a
 * tail more than sq_entries ahead of head marks the client broken without
 * executing anything. */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/poller.h"
#include "fixture_cases.h"
#include "mearas/ring.h"

static pthread_t poller;
static uint32_t sq_tail;
static bool poller_running;

static void start_poller(struct vgpu *v, uint32_t start)
{
	sq_tail = start;
	v->sq.head = start;
	v->sq.ctl->head = v->sq.ctl->tail = start;
	fx.w->stop = 0;
	REQUIRE(pthread_create(&poller, NULL, poller_main, v) == 0);
	poller_running = true;
}

static void kick_if_asleep(struct vgpu *v)
{
	uint64_t one = 1;

	if (mearas_ring_needs_wakeup(v->sq.ctl))
		CHECK(write(v->kick_fd, &one, sizeof(one)) == sizeof(one));
}

/* join with a deadline: a poller that does not stop fails the case (10 s:
 * a liveness bound, far above what stopping takes even on a loaded machine) */
static void join_poller(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	REQUIRE(pthread_timedjoin_np(poller, NULL, &ts) == 0);
	poller_running = false;
}

static void stop_poller(struct vgpu *v)
{
	uint64_t one = 1;

	fx.w->stop = 1;
	CHECK(write(v->kick_fd, &one, sizeof(one)) == sizeof(one));
	join_poller();
}

static void submit(struct vgpu *v, unsigned n, uint16_t flags, uint16_t slot)
{
	for (unsigned i = 0; i < n; i++) {
		struct mearas_sqe *e = &v->rings.sqes[(sq_tail + i) & (MEARAS_SQ_ENTRIES - 1)];

		memset(e, 0, sizeof(*e));
		e->op = MEARAS_OP_NOP;
		e->flags = flags;
		e->cq = slot;
		e->user_data = sq_tail + i;
	}
	sq_tail += n;
	mearas_store_release(&v->sq.ctl->tail, sq_tail);
	kick_if_asleep(v);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void wait_completions(unsigned slot, unsigned n, uint32_t first)
{
	uint64_t start = now_ms();
	struct mearas_cqe c;

	for (unsigned got = 0; got < n;) {
		if (fixture_cq_pop(&fx, 0, slot, &c)) {
			CHECK_EQ(c.status, 0);
			CHECK_EQ(c.user_data, (uint32_t)(first + got));
			got++;
			continue;
		}
		REQUIRE_MSG(now_ms() - start < 10000, "%u of %u completions in 10 s", got, n);
		usleep(100);
	}
}

static void wait_head(struct vgpu *v, uint32_t want)
{
	uint64_t start = now_ms();

	while (mearas_load_acquire(&v->sq.ctl->head) != want) {
		REQUIRE_MSG(now_ms() - start < 10000, "SQ head not at %u in 10 s", want);
		usleep(100);
	}
}

/* 10 s above: liveness deadlines (a record or a wakeup was lost), not timings */

static void setup(void)
{
	poller_running = false;
	REQUIRE(fixture_init(&fx, 1, 0) == 0);
}

static void teardown(void)
{
	if (poller_running) {
		/* a case that ended early: stop its poller, and leave the worker
		 * to one that will not stop */
		uint64_t one = 1;
		struct timespec ts;

		fx.w->stop = 1;
		CHECK(write(fx.w->vgpus[0].kick_fd, &one, sizeof(one)) == sizeof(one));
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 10;
		if (pthread_timedjoin_np(poller, NULL, &ts)) {
			CHECK_FAIL("the poller thread still runs: worker not freed");
			return;
		}
		poller_running = false;
	}
	fixture_destroy(&fx);
}

/* records run in order; indices cross UINT32_MAX; the poller sleeps on its
 * kick now and then and wakes for the next records */
static void records_in_order_across_wrap(void)
{
	struct vgpu *v = &fx.w->vgpus[0];

	start_poller(v, UINT32_MAX - 5);
	for (unsigned round = 0; round < 20; round++) {
		uint32_t first = sq_tail;

		submit(v, 1 + round % 7, MEARAS_SQE_WANT_CQE, 2);
		wait_completions(2, 1 + round % 7, first);
		if (round % 5 == 4)
			usleep(300 * 1000); /* let the poller go to sleep on its kick */
	}
	stop_poller(v);
}

/* a full ring (exactly sq_entries ahead) is valid */
static void full_ring_valid(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	uint64_t records = v->records;

	start_poller(v, UINT32_MAX - 100);
	submit(v, MEARAS_SQ_ENTRIES, 0, 0);     /* all published by one tail store */
	wait_head(v, sq_tail);
	CHECK_EQ(v->records, records + MEARAS_SQ_ENTRIES);
	CHECK(!fx.w->broken);
	stop_poller(v);
}

/* tail more than sq_entries ahead: the client is cut off, nothing runs */
static void tail_too_far_ahead_breaks_client(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	uint64_t records;

	start_poller(v, 1000);
	records = v->records;
	mearas_store_release(&v->sq.ctl->tail, 1000 + MEARAS_SQ_ENTRIES + 1);
	kick_if_asleep(v);
	join_poller();          /* the poller ends by itself */
	CHECK(fx.w->broken);
	CHECK_EQ(v->records, records);
	CHECK_EQ(v->sq.ctl->head, 1000);
}

/* tail behind head (a huge unsigned distance): the same */
static void tail_behind_head_breaks_client(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	uint64_t records = v->records;

	start_poller(v, 5000);
	mearas_store_release(&v->sq.ctl->tail, 4999);
	kick_if_asleep(v);
	join_poller();
	CHECK(fx.w->broken);
	CHECK_EQ(v->records, records);
}

static const struct check_case cases[] = {
	{ "records_in_order_across_wrap", records_in_order_across_wrap },
	{ "full_ring_valid", full_ring_valid },
	{ "tail_too_far_ahead_breaks_client", tail_too_far_ahead_breaks_client },
	{ "tail_behind_head_breaks_client", tail_behind_head_breaks_client },
};
CHECK_MAIN_FIXTURE(cases, setup, teardown)
