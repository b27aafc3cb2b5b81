// SPDX-License-Identifier: MIT
/* exec_poll_pending(): completions of work ordered on the device leave in
 * submission order even when the device finishes both between two fence
 * queries of one pass (a remote vGPU ships a copy's bytes with its
 * completion: a later stream synchronization overtaking it would hand the
 * client stale bytes), and a finished fence is not held back by an older
 * unfinished one. The device is the sim with a scripted event_query, or
 * (the _flags cases) scripted completion flags. */
#include "check.h"
#include "device/device.h"
#include "fixture_cases.h"

static struct mdev_ops scripted;
static unsigned queries, done_after; /* fences pass once `queries` reaches done_after */
static void *slow_fence;              /* this one never passes (0: none) */
static int next_is_slow;              /* the next fence recorded becomes slow_fence */
static int (*sim_record)(struct mdev *d, void *e, void *stream);
static uint32_t flag_words[MEARAS_FLAG_SLOTS]; /* what the scripted flags were written */
static int slow_slot;                          /* the flag that never passes (-1: none) */
static unsigned flag_fences, event_fences;     /* fences made since the case began, by kind */

static int event_error;                /* what events' queries return once set (a failed context) */

static int scripted_query(struct mdev *d, void *e)
{
	int r = event_error ? event_error : (e != slow_fence && queries >= done_after) ? 0 : cudaErrorNotReady;

	(void)d;
	queries++;
	return r;
}

static int recording(struct mdev *d, void *e, void *stream)
{
	event_fences++;
	if (next_is_slow)
		slow_fence = e;
	next_is_slow = 0;
	return sim_record(d, e, stream);
}

static int scripted_flag_write(struct mdev *d, void *flags, unsigned i, uint32_t value, void *stream)
{
	(void)d, (void)flags, (void)stream;
	flag_fences++;
	if (next_is_slow)
		slow_slot = (int)i;
	next_is_slow = 0;
	flag_words[i] = value;
	return 0;
}

static uint32_t scripted_flag_read(struct mdev *d, void *flags, unsigned i)
{
	uint32_t r = ((int)i != slow_slot && queries >= done_after) ? flag_words[i] : 0;

	(void)d, (void)flags;
	queries++;
	return r;
}

static void release_slow(void)
{
	slow_fence = NULL;
	slow_slot = -1;
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
	release_slow();
	exec_poll_pending(v);
	CHECK_EQ(v->npend, 0);
	CHECK(fixture_cq_pop(&fx, 0, 0, &c));
	CHECK_EQ(c.user_data, 10);
}

/* The flags' writes and reads are scripted; none is made before use_flags(). */
static void script_flags(struct mdev_ops *o)
{
	o->flags_create = NULL;
	o->flags_destroy = NULL;
	o->flag_write = scripted_flag_write;
	o->flag_read = scripted_flag_read;
}

/* the same cases with completion flags as the fences */
static void use_flags(void)
{
	scripted.flags_create = mdev_sim_ops.flags_create;
	scripted.flags_destroy = mdev_sim_ops.flags_destroy;
}

/* A case with completion flags: fences pass once `after` queries were
 * made, the next one never if slow. */
static struct vgpu *flags_case(unsigned after, int slow)
{
	use_flags();
	queries = 0;
	done_after = after;
	next_is_slow = slow;
	return &fx.w->vgpus[0];
}

static void test_same_stream_in_order_flags(void)
{
	use_flags();
	test_same_stream_in_order();
	CHECK(flag_fences == 2 && event_fences == 0);
	CHECK_EQ(fx.w->vgpus[0].flags_state, 1);
}

static void test_unrelated_not_held_back_flags(void)
{
	use_flags();
	test_unrelated_not_held_back();
	CHECK(flag_fences == 2 && event_fences == 0);
	CHECK_EQ(fx.w->vgpus[0].flags_state, 1);
}

/* A context that failed never writes a flag: the wait ends with the
 * context's error, asked now and then, and the flag stays taken (a write
 * still queued could land on its next use). */
static int failed_status(struct mdev *d)
{
	(void)d;
	return cudaErrorIllegalAddress;
}

static void test_flag_error_ends_wait(void)
{
	struct vgpu *v = flags_case(0, 1);
	struct mearas_cqe c;
	unsigned free_before;

	scripted.status = failed_status;
	sync_record(v, 0, 20);
	free_before = v->nflag_free;
	for (int i = 0; i < 1000 && v->npend; i++)
		exec_poll_pending(v);
	CHECK_EQ(v->npend, 0);
	CHECK(fixture_cq_pop(&fx, 0, 0, &c));
	CHECK_EQ(c.user_data, 20);
	CHECK_EQ(c.status, cudaErrorIllegalAddress);
	CHECK_EQ(v->nflag_free, free_before);
}

/* The context fails while an older record waits on a flag and a newer one
 * on an event: the event's query sees it at once, and the flag's record
 * fails in the same pass, ahead of it (completions stay in order). */
static void test_failure_keeps_order_across_fences(void)
{
	struct vgpu *v = flags_case(1000000, 1);
	struct mearas_cqe c;

	scripted.status = failed_status;
	sync_record(v, 0, 70);
	CHECK(v->pend[0].flag != 0);
	v->captures_open = true; /* the next fence is an event */
	sync_record(v, 0, 71);
	v->captures_open = false;
	CHECK_EQ(v->npend, 2);
	CHECK(v->pend[1].flag == 0);
	event_error = cudaErrorIllegalAddress;
	exec_poll_pending(v);
	CHECK_EQ(v->npend, 0);
	CHECK(fixture_cq_pop(&fx, 0, 0, &c));
	CHECK_EQ(c.user_data, 70);
	CHECK_EQ(c.status, cudaErrorIllegalAddress);
	CHECK(fixture_cq_pop(&fx, 0, 0, &c));
	CHECK_EQ(c.user_data, 71);
}

/* A passed flag is free again: the next fence takes the same word. */
static void test_flag_reused_once_passed(void)
{
	struct vgpu *v = flags_case(1, 0);
	struct mearas_cqe c;
	uint16_t first;

	sync_record(v, 0, 30);
	CHECK_EQ(v->npend, 1);
	first = v->pend[0].flag;
	CHECK(first != 0);
	CHECK_EQ(v->nflag_free, MEARAS_FLAG_SLOTS - 1);
	exec_poll_pending(v);
	CHECK(fixture_cq_pop(&fx, 0, 0, &c));
	CHECK_EQ(v->nflag_free, MEARAS_FLAG_SLOTS);
	queries = 0;
	sync_record(v, 0, 31);
	CHECK_EQ(v->npend, 1);
	CHECK_EQ(v->pend[0].flag, first);
	exec_poll_pending(v);
	CHECK(fixture_cq_pop(&fx, 0, 0, &c));
}

static int refuse_flag(struct mdev *d, void *flags, unsigned i, uint32_t value, void *stream)
{
	(void)d, (void)flags, (void)i, (void)value, (void)stream;
	return cudaErrorNotSupported;
}

/* A device that refuses the flags' writes gets events, from then on. */
static void test_flag_refused_falls_back_to_events(void)
{
	struct vgpu *v = flags_case(1, 0);
	struct mearas_cqe c;

	scripted.flag_write = refuse_flag;
	sync_record(v, 0, 40);
	CHECK_EQ(v->flags_state, -1);
	CHECK_EQ(v->npend, 1);
	CHECK(v->pend[0].flag == 0 && v->pend[0].fence != NULL);
	while (v->npend)
		exec_poll_pending(v);
	CHECK(fixture_cq_pop(&fx, 0, 0, &c));
	CHECK_EQ(c.user_data, 40);
	CHECK_EQ(c.status, 0);
}

/* While a capture is open a write would be a node of its graph: events. */
static void test_capture_open_uses_events(void)
{
	struct vgpu *v = flags_case(1, 0);

	v->captures_open = true;
	sync_record(v, 0, 50);
	CHECK_EQ(v->npend, 1);
	CHECK(v->pend[0].flag == 0 && v->pend[0].fence != NULL);
	while (v->npend)
		exec_poll_pending(v);
	v->captures_open = false;
}

/* vGPU 0 of every case's worker queries fences through scripted_query
 * (no completion flags), or reads scripted flags once a case asks */
static void script_device(void)
{
	struct vgpu *v = &fx.w->vgpus[0];

	scripted = *v->ops;
	sim_record = scripted.event_record;
	scripted.event_query = scripted_query;
	scripted.event_record = recording;
	script_flags(&scripted);
	v->ops = &scripted;
	release_slow();
	next_is_slow = 0;
	flag_fences = event_fences = 0;
	event_error = 0;
}

static const struct check_case cases[] = {
	{ "same_stream_in_order", test_same_stream_in_order },
	{ "unrelated_not_held_back", test_unrelated_not_held_back },
	{ "same_stream_in_order_flags", test_same_stream_in_order_flags },
	{ "unrelated_not_held_back_flags", test_unrelated_not_held_back_flags },
	{ "flag_error_ends_wait", test_flag_error_ends_wait },
	{ "failure_keeps_order_across_fences", test_failure_keeps_order_across_fences },
	{ "flag_reused_once_passed", test_flag_reused_once_passed },
	{ "flag_refused_falls_back_to_events", test_flag_refused_falls_back_to_events },
	{ "capture_open_uses_events", test_capture_open_uses_events },
};
FIXTURE_MAIN(cases, 1, 0, script_device)
