// SPDX-License-Identifier: MIT
/* exec_stream.c's host-function trampoline (the driver's thread holding the
 * stream while the client runs the function) goes on when the client's word
 * in CQ 0 (region.h, consumer_done) says the run is done, without the
 * HOST_FUNC_DONE record: the poller that would take that record may be
 * inside a driver call that waits for this very host function
 * (cuModuleLoadData does). An older run in the word does not release it.
 * On a remote session's worker it asks the client only after a round of
 * the vGPU's poller that began after the function's turn came (the
 * completions of the work before it, with the device-to-host bytes the
 * function reads, go first); a poller that does not come round (inside a
 * driver call) delays the request by a bounded time only. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/exec_internal.h"
#include "mearas/clock.h"
#include "vgpu_fixture.h"

static struct fixture fx;
/* the sim's ops at another address: the trampoline waits as on a GPU (the
 * model's own trampoline runs on the poller and cannot) */
static struct mdev_ops gpu_like_ops;

static void setup(void)
{
	REQUIRE(fixture_init(&fx, 1, 0) == 0);
	gpu_like_ops = *fx.w->vgpus[0].ops;
	fx.w->vgpus[0].ops = &gpu_like_ops;
}

static void teardown(void)
{
	fx.w->vgpus[0].ops = &mdev_sim_ops;
	fixture_destroy(&fx);
}

static void *trampoline_thread(void *arg)
{
	exec_host_func_trampoline(arg);
	return NULL;
}

/* starts the trampoline for one host function; its run number (the CQE's
 * user_data) into *run */
static pthread_t start(uint64_t *run)
{
	struct host_func_req *req = calloc(1, sizeof(*req));
	struct mearas_cqe c;
	pthread_t t;

	REQUIRE(req);
	req->v = &fx.w->vgpus[0];
	req->token = 42;
	REQUIRE(pthread_create(&t, NULL, trampoline_thread, req) == 0);
	for (int i = 0; i < 10000 && !fixture_cq_pop(&fx, 0, 0, &c); i++)
		usleep(100);
	CHECK(c.flags & MEARAS_CQE_HOST_FUNC);
	CHECK_EQ(c.val[0], 42);
	*run = c.user_data;
	return t;
}

static bool joined_within(pthread_t t, int ms)
{
	struct timespec ts = mearas_realtime_after_ms((uint64_t)ms);

	return pthread_timedjoin_np(t, NULL, &ts) == 0;
}

/* the trampoline left waiting by a case: released the way a departed client's are */
static void release(pthread_t t)
{
	struct vgpu *v = &fx.w->vgpus[0];

	pthread_mutex_lock(&v->hf_lock);
	v->hf_done_token = UINT64_MAX;
	pthread_cond_broadcast(&v->hf_cond);
	pthread_mutex_unlock(&v->hf_lock);
	pthread_join(t, NULL);
}

static void word_releases_without_record(void)
{
	uint64_t run;
	pthread_t t = start(&run);

	__atomic_store_n(&fx.w->vgpus[0].cq[0].ctl->consumer_done, run, __ATOMIC_RELEASE);
	/* 10 s: a liveness deadline (the word is looked at every millisecond) */
	if (!joined_within(t, 10000)) {
		CHECK_FAIL("the trampoline still waits 10 s after the client's word said run %llu is done",
			   (unsigned long long)run);
		release(t);
	}
}

static void older_run_does_not_release(void)
{
	uint64_t run;
	pthread_t t = start(&run);

	__atomic_store_n(&fx.w->vgpus[0].cq[0].ctl->consumer_done, run - 1, __ATOMIC_RELEASE);
	CHECK_MSG(!joined_within(t, 200), "a word naming the run before %llu released it", (unsigned long long)run);
	release(t);
}

static void wiring_zeroes_the_word(void)
{
	/* fixture_init wired fresh rings: a word left by an earlier client is gone */
	CHECK_EQ(__atomic_load_n(&fx.w->vgpus[0].cq[0].ctl->consumer_done, __ATOMIC_ACQUIRE), 0);
}

/* the request, within ms; false if none came */
static bool request_within(int ms, struct mearas_cqe *c)
{
	uint64_t end = mearas_mono_ns() + (uint64_t)ms * 1000000ull;

	do {
		if (fixture_cq_pop(&fx, 0, 0, c))
			return true;
		usleep(200);
	} while (mearas_mono_ns() < end);
	return false;
}

/* a remote session's trampoline started; its request is not taken yet */
static pthread_t start_remote(void)
{
	struct host_func_req *req = calloc(1, sizeof(*req));
	pthread_t t;

	fx.cfg.serves_remote = true;
	REQUIRE(req);
	req->v = &fx.w->vgpus[0];
	req->token = 7;
	REQUIRE(pthread_create(&t, NULL, trampoline_thread, req) == 0);
	return t;
}

/* the run answered through the client's word */
static void finish(pthread_t t, uint64_t run)
{
	__atomic_store_n(&fx.w->vgpus[0].cq[0].ctl->consumer_done, run, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
}

static void remote_request_waits_for_poller_round(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	struct mearas_cqe c;
	pthread_t t = start_remote();

	/* no round of the poller yet (none runs here): no request */
	CHECK_MSG(!request_within(50, &c), "the host function was asked for before the poller came round");
	atomic_fetch_add(&v->poll_rounds, 1);
	atomic_fetch_add(&v->poll_rounds, 1);
	/* 10 s: a liveness deadline */
	REQUIRE_MSG(request_within(10000, &c), "no request 10 s after two rounds of the poller");
	CHECK(c.flags & MEARAS_CQE_HOST_FUNC);
	CHECK_EQ(c.val[0], 7);
	finish(t, c.user_data);
}

static void remote_request_goes_when_poller_stays_away(void)
{
	struct mearas_cqe c;
	pthread_t t = start_remote();

	/* the poller never comes round (stuck in a driver call): the request
	 * goes anyway once the bound has passed; 10 s: a liveness deadline */
	REQUIRE_MSG(request_within(10000, &c), "no request within 10 s without the poller");
	CHECK(c.flags & MEARAS_CQE_HOST_FUNC);
	finish(t, c.user_data);
}

static const struct check_case cases[] = {
	{ "word_releases_without_record", word_releases_without_record },
	{ "older_run_does_not_release", older_run_does_not_release },
	{ "wiring_zeroes_the_word", wiring_zeroes_the_word },
	{ "remote_request_waits_for_poller_round", remote_request_waits_for_poller_round },
	{ "remote_request_goes_when_poller_stays_away", remote_request_goes_when_poller_stays_away },
};
CHECK_MAIN_FIXTURE(cases, setup, teardown)
