// SPDX-License-Identifier: MIT
/*
 * Host functions (cudaLaunchHostFunc, cudaStreamAddCallback, cuLaunchHostFunc):
 * the back end asks (an unsolicited completion on slot 0) when one reaches
 * the head of its stream; the core's callback thread runs it and answers,
 * and the stream waits until then.
 */
#include <pthread.h>

#include "mearas/log.h"
#include "mearas/ring.h"
#include "core.h"

struct host_fn {
	cudaHostFn_t fn;
	void *user;
	cudaStreamCallback_t cb;
	cudaStream_t stream;
};

#define HOST_FN_MAX 4096
static struct host_fn host_fns[HOST_FN_MAX];
static uint64_t host_fn_next = 1;
static pthread_mutex_t host_fn_lock = PTHREAD_MUTEX_INITIALIZER;

/* token: which function; run: the back end's number for this run of it
 * (a graph runs its host functions at every launch), echoed when done */
static void run_host_fn(unsigned vgpu, uint64_t token, uint64_t run)
{
	struct host_fn h;

	pthread_mutex_lock(&host_fn_lock);
	h = host_fns[token % HOST_FN_MAX];
	pthread_mutex_unlock(&host_fn_lock);
	if (h.fn)
		h.fn(h.user);
	else if (h.cb)
		h.cb(h.stream, cudaSuccess, h.user);
	/* seen by the waiting back end at once, even while its poller is busy
	 * in the driver (region.h); the record wakes it sooner when not */
	__atomic_store_n(&rt.v[vgpu].cq[0].ctl->consumer_done, run, __ATOMIC_RELEASE);
	rt_do_HOST_FUNC_DONE((int)vgpu, token, run);
}

static void *callback_thread(void *arg)
{
	(void)arg;
	rt_tls.slot = 0;
	while (!rt.dead) {
		bool any = false;

		for (unsigned v = 0; v < rt.nvgpus; v++) {
			struct mearas_cqe cqe;

			while (mearas_cqc_pop(&rt.v[v].cq[0], &cqe)) {
				any = true;
				if (cqe.flags & MEARAS_CQE_HOST_FUNC)
					run_host_fn(v, cqe.val[0], cqe.user_data);
			}
		}
		if (any)
			continue;
		{
			bool empty = true;

			for (unsigned v = 0; v < rt.nvgpus; v++)
				empty &= mearas_ring_prepare_sleep(rt.v[v].cq[0].ctl);
			if (empty && !tp_wait(&rt.tp, 0, 1000)) {
				rt.dead = 1;
				break;
			}
			for (unsigned v = 0; v < rt.nvgpus; v++)
				mearas_ring_end_sleep(rt.v[v].cq[0].ctl);
		}
	}
	return NULL;
}

void rt_callback_thread_start(void)
{
	pthread_t t;
	pthread_attr_t a;

	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, callback_thread, NULL))
		log_warn("cannot start the host-function thread: cudaLaunchHostFunc will hang streams");
	pthread_attr_destroy(&a);
}

/* on a resolved stream; stream is what a callback is handed */
cudaError_t rt_post_host_fn_on(const struct rt_stream_ref *st, cudaStream_t stream, cudaHostFn_t fn,
			       cudaStreamCallback_t cb, void *user)
{
	uint64_t token;

	if (!fn && !cb)
		return cudaErrorInvalidValue;
	pthread_mutex_lock(&host_fn_lock);
	token = host_fn_next++;
	host_fns[token % HOST_FN_MAX] = (struct host_fn){ fn, user, cb, stream };
	pthread_mutex_unlock(&host_fn_lock);
	return rt_do_HOST_FUNC(st->vgpu, st, token);
}

cudaError_t rt_post_host_fn(cudaStream_t stream, cudaHostFn_t fn, cudaStreamCallback_t cb, void *user)
{
	struct rt_stream_ref st;
	cudaError_t e = rt_ensure();

	if (!e && !fn && !cb)
		e = cudaErrorInvalidValue;
	if (!e)
		e = rt_stream_ref(stream, &st);
	return e ? e : rt_post_host_fn_on(&st, stream, fn, cb, user);
}

