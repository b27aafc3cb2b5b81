// SPDX-License-Identifier: MIT
/* exec_poll_pending(): completions of work ordered on the device leave in
 * submission order even when the device finishes both between two fence
 * queries of one pass (a remote vGPU ships a copy's bytes with its
 * completion: a later stream synchronization overtaking it would hand the
 * client stale bytes), and a finished fence is not held back by an older
 * unfinished one. The device is the sim with a scripted event_query. */
#include "check.h"
#include "device/device.h"
#include "fixture_cases.h"

static struct mdev_ops scripted;
static unsigned queries, done_after; /* fences pass once `queries` reaches done_after */
static void *slow_fence;              /* this one never passes (0: none) */
static int next_is_slow;              /* the next fence recorded becomes slow_fence */
static int (*sim_record)(struct mdev *d, void *e, void *stream);

static int scripted_query(struct mdev *d, void *e)
{
	int r = (e != slow_fence && queries >= done_after) ? 0 : cudaErrorNotReady;

	(void)d;
	queries++;
	return r;
}

static int recording(struct mdev *d, void *e, void *stream)
{
	if (next_is_slow)
		slow_fence = e;
	next_is_slow = 0;
	return sim_record(d, e, stream);
}

static void sync_record(struct vgpu *v, uint32_t stream, uint64_t user_data)
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_STREAM_SYNC);

	e.flags = MEARAS_SQE_WANT_CQE;
	e.stream = stream;
	e.user_data = user_data;
	exec_record(v, &e);
}

static void test_same_stream_in_order(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	struct mearas_cqe c;

	queries = 0;
	done_after = 2; /* the first sync's own query misses; both pass during the next pass */
	sync_record(v, 0, 1);
	CHECK_EQ(v->npend, 1);
	sync_record(v, 0, 2);
	/* whatever this pass saw, the first completion out is the first record's */
	CHECK(fixture_cq_pop(&fx, 0, 0, &c));
	CHECK_EQ(c.user_data, 1);
	while (v->npend)
		exec_poll_pending(v);
	CHECK(fixture_cq_pop(&fx, 0, 0, &c));
	CHECK_EQ(c.user_data, 2);
	CHECK(!fixture_cq_pop(&fx, 0, 0, &c));
}

static void test_unrelated_not_held_back(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	struct mearas_cqe c;

	queries = 0;
	done_after = 0;
	next_is_slow = 1;
	sync_record(v, 0, 10);
	exec_poll_pending(v);
	CHECK_EQ(v->npend, 1);  /* the first still runs */
	sync_record(v, 0, 11);  /* passes at once (another stream on a real device) */
	CHECK(fixture_cq_pop(&fx, 0, 0, &c));
	CHECK_EQ(c.user_data, 11);
	CHECK_EQ(v->npend, 1);
	slow_fence = NULL;
	exec_poll_pending(v);
	CHECK_EQ(v->npend, 0);
	CHECK(fixture_cq_pop(&fx, 0, 0, &c));
	CHECK_EQ(c.user_data, 10);
}

/* vGPU 0 of every case's worker queries fences through scripted_query */
static void script_device(void)
{
	struct vgpu *v = &fx.w->vgpus[0];

	scripted = *v->ops;
	sim_record = scripted.event_record;
	scripted.event_query = scripted_query;
	scripted.event_record = recording;
	v->ops = &scripted;
	slow_fence = NULL;
	next_is_slow = 0;
}

static const struct check_case cases[] = {
	{ "same_stream_in_order", test_same_stream_in_order },
	{ "unrelated_not_held_back", test_unrelated_not_held_back },
};
FIXTURE_MAIN(cases, 1, 0, script_device)
