// SPDX-License-Identifier: MIT
/* watchdog.c, the GPU time limit, against a device whose stream progress
 * the test controls: a queue of short kernels longer than the limit in all
 * is not taken for one long kernel (time counts from when a kernel became
 * its stream's oldest work); waits for events and host functions do not
 * count; a kernel that never ends fires the limit once it has passed,
 * marks the region TIMED_OUT, and its pending waits fail with
 * cudaErrorLaunchTimeout; more kernels than the mark queue holds are still
 * watched to the last; more busy streams than it watches, or a poller stuck
 * in a driver call, end the context too; a kernel whose module the client
 * unloaded while it runs still fires, and its freed function is not read
 * to name it (on the sim itself, with its never-ending kernel). */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/watchdog.h"
#include "fixture_cases.h"
#include "mearas/clock.h"
#include "mearas/log.h"

#define LIMIT_MS 200

/* The model: each stream counts the work items (kernels, waits) issued on
 * it and how many of them are done; an event passes once the work before it
 * is done. */
#define MAX_EVENTS 8192
#define MAX_STREAMS 4200
static struct { void *ev, *stream; unsigned seq; } evs[MAX_EVENTS];
static unsigned nevs;
static struct { void *stream; unsigned issued, released; } streams[MAX_STREAMS];
static struct mdev_ops ops;

static unsigned *stream_counts(void *s, bool released)
{
	for (unsigned i = 0; i < MAX_STREAMS; i++) {
		if (!streams[i].stream)
			streams[i].stream = s;
		if (streams[i].stream == s)
			return released ? &streams[i].released : &streams[i].issued;
	}
	REQUIRE(!"too many streams");
	return NULL;
}

static int ev_record(struct mdev *d, void *e, void *s)
{
	unsigned i;

	(void)d;
	for (i = 0; i < nevs && evs[i].ev != e; i++)
		;
	if (i == nevs) {
		REQUIRE(nevs < MAX_EVENTS);
		nevs++;
	}
	evs[i].ev = e;
	evs[i].stream = s;
	evs[i].seq = *stream_counts(s, false);
	return 0;
}

static int ev_query(struct mdev *d, void *e)
{
	(void)d;
	for (unsigned i = 0; i < nevs; i++)
		if (evs[i].ev == e)
			return evs[i].seq <= *stream_counts(evs[i].stream, true) ? 0 : cudaErrorNotReady;
	return 0;
}

static int ev_destroy(struct mdev *d, void *e)
{
	for (unsigned i = 0; i < nevs; i++)
		if (evs[i].ev == e)
			evs[i--] = evs[--nevs];
	return mdev_sim_ops.event_destroy(d, e);
}

/* the streams here are tokens, not the model's: none is capturing */
static int cap_status(struct mdev *d, void *s, int *status)
{
	(void)d;
	(void)s;
	*status = cudaStreamCaptureStatusNone;
	return 0;
}

/* one work item on stream s, as exec.c issues it */
static void issue(struct vgpu *v, void *s, bool kernel)
{
	(*stream_counts(s, false))++;
	watchdog_mark(v, s, kernel, NULL);
}

/* the first n work items of stream s are done */
static void release(void *s, unsigned n)
{
	*stream_counts(s, true) = n;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* poll the watchdog for ms milliseconds; true if it fired */
static bool poll_for(struct vgpu *v, unsigned ms)
{
	uint64_t end = mearas_mono_ns() + ms * 1000000ull;

	while (mearas_mono_ns() < end) {
		watchdog_poll(v);
		if (v->w->timed_out)
			return true;
		sleep_ms(2);
	}
	return false;
}

static struct vgpu *v;

/* a worker whose vGPU 0 is the model above, the watchdog not armed */
static void setup(void)
{
	ops = mdev_sim_ops;
	ops.event_record = ev_record;
	ops.event_query = ev_query;
	ops.event_destroy = ev_destroy;
	ops.capture_status = cap_status;
	nevs = 0;
	memset(streams, 0, sizeof(streams));
	/* the model's fences are events: no completion flags */
	ops.flags_create = NULL;
	v = NULL;
	REQUIRE(fixture_init(&fx, 1, 0) == 0);
	v = &fx.w->vgpus[0];
}

/* the watchdog armed with a limit of LIMIT_MS */
static void arm(void)
{
	fx.cfg.kernel_timeout_ms = LIMIT_MS;
	v->ops = &ops;
	REQUIRE(watchdog_arm(fx.w) == 0);
	REQUIRE(v->watch != NULL);
}

static void teardown(void)
{
	/* let the model finish everything, then free */
	for (unsigned i = 0; i < MAX_STREAMS; i++)
		streams[i].released = ~0u;
	if (fx.w && v)
		watchdog_disarm(v);
	fixture_destroy(&fx);
}

/* off by default: no watchdog at all */
static void off_by_default(void)
{
	CHECK(watchdog_arm(fx.w) == 0);
	CHECK(v->watch == NULL);
}

/* five kernels of 0.6 x the limit each, queued at once: 3 x the limit in all */
static void short_kernels_not_one_long(void)
{
	void *s = (void *)0x1000;

	arm();
	for (int k = 0; k < 5; k++)
		issue(v, s, true);
	for (unsigned k = 1; k <= 5; k++) {
		CHECK(!poll_for(v, LIMIT_MS * 6 / 10));
		release(s, k);
	}
	CHECK(!poll_for(v, 20));
	CHECK(v->watch && watchdog_nap_ms(v) == 200); /* nothing in flight */
}

/* a wait (event or host function) of 2 x the limit does not count; the
 * kernel after it counts from when the wait ended */
static void waits_do_not_count(void)
{
	void *s = (void *)0x1000;

	arm();
	issue(v, s, false);
	issue(v, s, true);
	CHECK(!poll_for(v, LIMIT_MS * 2));
	release(s, 1);
	CHECK(!poll_for(v, LIMIT_MS / 2));
	release(s, 2);
	CHECK(!poll_for(v, 20));
}

/* a kernel that never ends, beside a healthy stream: fires after the limit,
 * not before; the region says TIMED_OUT and a pending synchronization fails
 * with cudaErrorLaunchTimeout */
static void endless_kernel_times_out(void)
{
	void *s, *s2 = (void *)0x2000;
	uint64_t t0, took;
	struct mearas_cqe c;

	arm();
	issue(v, s2, true);
	release(s2, 1);
	t0 = mearas_mono_ns();
	{
		struct mearas_sqe e = sqe_of(MEARAS_OP_STREAM_SYNC);

		/* the legacy stream: its kernel, then a synchronization waiting on it */
		s = v->ops->stream_default(v->dev);
		issue(v, s, true);
		e.flags = MEARAS_SQE_WANT_CQE;
		exec_record(v, &e);
		CHECK_EQ(v->npend, 1);
	}
	CHECK(poll_for(v, LIMIT_MS * 3));
	took = (mearas_mono_ns() - t0) / 1000000;
	printf("  fired after %llu ms (limit %d)\n", (unsigned long long)took, LIMIT_MS);
	/* Not before the limit. The upper bound is a generous liveness deadline,
	 * not a measure of precision: the watchdog is polled every 2 ms here, but
	 * a loaded CI machine can hold this thread back for tens of ms; one that
	 * fires a whole limit late counts from the wrong start. */
	CHECK(took >= LIMIT_MS && took < 2 * LIMIT_MS);
	CHECK_EQ(((struct mearas_region_hdr *)fx.w->region)->state, MEARAS_BACKEND_TIMED_OUT);
	CHECK(!fixture_cq_pop(&fx, 0, 0, &c));
	exec_fail_pending(v, cudaErrorLaunchTimeout);
	CHECK_EQ(v->npend, 0);
	CHECK(fixture_cq_pop(&fx, 0, 0, &c));
	CHECK_EQ(c.status, cudaErrorLaunchTimeout);
}

/* 40 kernels, more than a stream's mark queue: all but the last end at
 * once; the last never does and is still caught */
static void past_mark_queue_still_watched(void)
{
	void *s = (void *)0x1000;

	arm();
	for (int k = 0; k < 40; k++)
		issue(v, s, true);
	release(s, 39);
	CHECK(poll_for(v, LIMIT_MS * 3));
}

/* more streams busy at once than the watchdog can watch: that is no way
 * around the limit, the client is timed out at once */
static void too_many_busy_streams(void)
{
	arm();
	for (uintptr_t k = 1; k <= 4096; k++)
		issue(v, (void *)(k << 12), true);
	CHECK(!fx.w->timed_out);
	issue(v, (void *)(4097ul << 12), true);
	CHECK(fx.w->timed_out);
}

/* a poller stuck in one driver call (behind the kernel) for 2 x the
 * limit + 10 s: the main thread's check ends the context; a poller that
 * went round recently, or one that has not started, is left alone */
static void stuck_poller_ends_context(void)
{
	arm();
	CHECK(!watchdog_pollers_stuck(fx.w));
	/* the poller went round between the check's two clock readings */
	v->alive_ns = mearas_mono_ns() + 1000000000ull;
	CHECK(!watchdog_pollers_stuck(fx.w));
	v->alive_ns = mearas_mono_ns() - (2 * LIMIT_MS + 9000) * 1000000ull;
	CHECK(!watchdog_pollers_stuck(fx.w));
	v->alive_ns = mearas_mono_ns() - (2 * LIMIT_MS + 10100) * 1000000ull;
	CHECK(watchdog_pollers_stuck(fx.w));
	CHECK(fx.w->timed_out);
	CHECK_EQ(((struct mearas_region_hdr *)fx.w->region)->state, MEARAS_BACKEND_TIMED_OUT);
}

/* The sim's never-ending kernel (mearas_sim_hang) launched, its module
 * unloaded while it runs (MODULE_UNLOAD frees the module's functions; the
 * mark behind the launch still holds the function): the limit fires, and
 * names no freed function (ASan: no use after free). */
static void unloaded_kernel_times_out(void)
{
	static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
				  ".visible .entry mearas_sim_hang(.param .u64 flag)\n{\n\tret;\n}\n";
	static const char name[] = "mearas_sim_hang";
	char path[] = "/tmp/mearas-unit-log.XXXXXX", buf[16384];
	struct mearas_sqe e;
	int fd;
	ssize_t n;

	/* armed on the sim itself, not the model: its streams hang for real */
	fx.cfg.kernel_timeout_ms = LIMIT_MS;
	REQUIRE(watchdog_arm(fx.w) == 0);
	memcpy(fx.w->data, ptx, sizeof(ptx));
	REQUIRE(FIXTURE_OP(MEARAS_OP_MODULE_LOAD, 0, 1, 0, sizeof(ptx)) == 0);
	e = sqe_of(MEARAS_OP_FUNC_GET);
	e.args.a[0] = 1;
	e.args.a[1] = 10;
	e.payload_len = sizeof(name);
	memcpy(e.inline_payload, name, sizeof(name));
	REQUIRE(fixture_run(&fx, 0, &e, NULL) == 0);
	REQUIRE(FIXTURE_OP(MEARAS_OP_STREAM_CREATE, 0, 7, 0, 0) == 0);
	e = sqe_of(MEARAS_OP_LAUNCH);
	e.stream = 7;
	e.args.a[0] = 10;
	e.args.a[1] = 1 | (1ull << 32);
	e.args.a[2] = 1 | (1ull << 32);
	e.args.a[3] = 1 | (1ull << 32);
	e.payload_len = 8;
	memset(e.inline_payload, 0, 8);
	exec_record(v, &e);     /* no completion asked: it would wait forever */
	REQUIRE(v->deferred_error == 0);
	CHECK_EQ(FIXTURE_OP(MEARAS_OP_MODULE_UNLOAD, 0, 1), 0);
	fd = mkstemp(path);
	REQUIRE(fd >= 0);
	unlink(path);
	mearas_log_set_fd(fd);
	CHECK(poll_for(v, LIMIT_MS * 3));
	mearas_log_set_fd(STDERR_FILENO);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	CHECK_MSG(strstr(buf, "kernel (unknown) has run"), "the limit's log line: %s", buf);
}

static const struct check_case cases[] = {
	{ "off_by_default", off_by_default },
	{ "short_kernels_not_one_long", short_kernels_not_one_long },
	{ "waits_do_not_count", waits_do_not_count },
	{ "endless_kernel_times_out", endless_kernel_times_out },
	{ "past_mark_queue_still_watched", past_mark_queue_still_watched },
	{ "too_many_busy_streams", too_many_busy_streams },
	{ "stuck_poller_ends_context", stuck_poller_ends_context },
	{ "unloaded_kernel_times_out", unloaded_kernel_times_out },
};
CHECK_MAIN_FIXTURE(cases, setup, teardown)
