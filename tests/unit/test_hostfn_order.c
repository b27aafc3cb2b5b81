// SPDX-License-Identifier: MIT
/* exec_stream.c's host-function trampoline on a remote session's worker asks
 * the client only after a round of the vGPU's poller that began after the
 * function's turn came: the completions of the work before it (with the
 * device-to-host bytes the function reads) are posted first, so the session
 * sends them first. A poller that does not come round in time (inside a
 * driver call) delays the request by a bounded time only. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "core/exec_internal.h"
#include "mearas/clock.h"
#include "vgpu_fixture.h"

static struct fixture fx;
/* the sim's ops at another address: the trampoline runs as on a GPU */
static struct mdev_ops gpu_like_ops;

static void setup(void)
{
	REQUIRE(fixture_init(&fx, 1, 0) == 0);
	fx.cfg.serves_remote = true;
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

static pthread_t start(void)
{
	struct host_func_req *req = calloc(1, sizeof(*req));
	pthread_t t;

	REQUIRE(req);
	req->v = &fx.w->vgpus[0];
	req->token = 7;
	REQUIRE(pthread_create(&t, NULL, trampoline_thread, req) == 0);
	return t;
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

/* the run answered through the client's word (as test_hostfn_done shows) */
static void finish(pthread_t t, uint64_t run)
{
	__atomic_store_n(&fx.w->vgpus[0].cq[0].ctl->consumer_done, run, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
}

static void request_waits_for_poller_round(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	struct mearas_cqe c;
	pthread_t t = start();

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

static void request_goes_when_poller_stays_away(void)
{
	struct mearas_cqe c;
	pthread_t t = start();

	/* the poller never comes round (stuck in a driver call): the request
	 * goes anyway once the bound has passed; 10 s: a liveness deadline */
	REQUIRE_MSG(request_within(10000, &c), "no request within 10 s without the poller");
	CHECK(c.flags & MEARAS_CQE_HOST_FUNC);
	finish(t, c.user_data);
}

static const struct check_case cases[] = {
	{ "request_waits_for_poller_round", request_waits_for_poller_round },
	{ "request_goes_when_poller_stays_away", request_goes_when_poller_stays_away },
};
CHECK_MAIN_FIXTURE(cases, setup, teardown)
