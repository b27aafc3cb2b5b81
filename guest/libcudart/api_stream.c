// SPDX-License-Identifier: MIT
/*
 * Streams, events and host functions. Streams and events get ids chosen
 * here, so creating one is a posted record, not a round trip.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mearas/log.h"
#include "mearas/ring.h"
#include "rt.h"

#define STREAM_MAGIC 0x6d537472u
#define EVENT_MAGIC  0x6d457674u

struct rt_stream {
	uint32_t magic;
	uint32_t id;
	int vgpu;
	unsigned flags;
	int priority;
};

struct rt_event {
	uint32_t magic;
	uint32_t id;
	int vgpu;
	unsigned flags;
	int recorded;
};

cudaError_t rt_stream_ref(cudaStream_t s, struct rt_stream_ref *out)
{
	const struct rt_stream *st = (const struct rt_stream *)s;

	out->sqe_flags = 0;
	if (s == NULL || s == cudaStreamLegacy || s == cudaStreamPerThread) {
		out->vgpu = rt_tls.device;
		out->id = MEARAS_STREAM_LEGACY;
		if (s == cudaStreamPerThread || (s == NULL && rt_tls.ptds))
			out->sqe_flags = MEARAS_SQE_PER_THREAD;
		if (out->vgpu < 0 || (unsigned)out->vgpu >= rt.nvgpus)
			return cudaErrorInvalidDevice;
		return cudaSuccess;
	}
	if (st->magic != STREAM_MAGIC)
		return cudaErrorInvalidResourceHandle;
	out->vgpu = st->vgpu;
	out->id = st->id;
	return cudaSuccess;
}

static struct rt_event *event_of(cudaEvent_t e)
{
	struct rt_event *ev = (struct rt_event *)e;

	return ev && ev->magic == EVENT_MAGIC ? ev : NULL;
}

/* The runtime is up and event is one it created (*ev). */
static cudaError_t check_event(cudaEvent_t event, struct rt_event **ev)
{
	cudaError_t e;

	*ev = event_of(event);
	e = rt_ensure();
	if (e)
		return e;
	return *ev ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

/* check_event, and the stream is valid too (*st): what cudaEventRecord and
 * cudaStreamWaitEvent check before anything else. */
static cudaError_t check_event_on_stream(cudaEvent_t event, cudaStream_t stream, struct rt_event **ev,
					 struct rt_stream_ref *st)
{
	cudaError_t e = check_event(event, ev);

	return e ? e : rt_stream_ref(stream, st);
}

RT_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
	struct rt_stream *s;
	int dev;
	cudaError_t e;

	if (!pStream || (flags & ~(unsigned)cudaStreamNonBlocking))
		return rt_set_error(cudaErrorInvalidValue);
	e = rt_ensure_device(&dev);
	if (e)
		return rt_set_error(e);
	s = calloc(1, sizeof(*s));
	if (!s)
		return rt_set_error(cudaErrorMemoryAllocation);
	s->magic = STREAM_MAGIC;
	s->id = rt_new_handle();
	s->vgpu = dev;
	s->flags = flags;
	s->priority = priority < -5 ? -5 : priority > 0 ? 0 : priority;
	if (!s->id) {
		free(s);
		return rt_set_error(cudaErrorMemoryAllocation);
	}
	e = rt_do_STREAM_CREATE(dev, s->id, flags, s->priority);
	if (e) {
		free(s);
		return rt_set_error(e);
	}
	*pStream = (cudaStream_t)s;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
	return cudaStreamCreateWithPriority(pStream, flags, 0);
}

RT_EXPORT cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
	return cudaStreamCreateWithPriority(pStream, cudaStreamDefault, 0);
}

RT_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
	struct rt_stream *s = (struct rt_stream *)stream;
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	if (!s || stream == cudaStreamLegacy || stream == cudaStreamPerThread || s->magic != STREAM_MAGIC)
		return rt_set_error(cudaErrorInvalidResourceHandle);
	e = rt_do_STREAM_DESTROY(s->vgpu, s->id);
	s->magic = 0;
	free(s);
	return rt_set_error(e);
}

cudaError_t rt_stream_of(cudaStream_t stream, struct rt_stream_ref *st)
{
	cudaError_t e = rt_ensure();

	return e ? e : rt_stream_ref(stream, st);
}

RT_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	struct rt_stream_ref st;
	cudaError_t e = rt_stream_of(stream, &st);

	return rt_set_error(e ? e : rt_do_STREAM_SYNC(st.vgpu, &st));
}

RT_EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream)
{
	struct rt_stream_ref st;
	cudaError_t e = rt_stream_of(stream, &st);

	if (!e)
		e = rt_do_STREAM_QUERY(st.vgpu, &st);
	return e == cudaErrorNotReady ? e : rt_set_error(e);
}

/* A stream the program created (*s), or a default stream (*s = NULL). */
static cudaError_t user_stream(cudaStream_t h, const void *out, const struct rt_stream **s)
{
	const struct rt_stream *st = (const struct rt_stream *)h;

	*s = NULL;
	if (!out)
		return cudaErrorInvalidValue;
	if (!st || h == cudaStreamLegacy || h == cudaStreamPerThread)
		return cudaSuccess;
	if (st->magic != STREAM_MAGIC)
		return cudaErrorInvalidResourceHandle;
	*s = st;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags)
{
	const struct rt_stream *s;
	cudaError_t e = user_stream(hStream, flags, &s);

	if (e)
		return rt_set_error(e);
	*flags = s ? s->flags : 0;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
	const struct rt_stream *s;
	cudaError_t e = user_stream(hStream, priority, &s);

	if (e)
		return rt_set_error(e);
	*priority = s ? s->priority : 0;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int *device)
{
	struct rt_stream_ref st;
	cudaError_t e = rt_ensure();

	if (!e)
		e = device ? rt_stream_ref(hStream, &st) : cudaErrorInvalidValue;
	if (e)
		return rt_set_error(e);
	*device = st.vgpu;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
	struct rt_event *ev;
	struct rt_stream_ref st;
	cudaError_t e = check_event_on_stream(event, stream, &ev, &st);

	if (e)
		return rt_set_error(e);
	if (!ev->recorded)
		return cudaSuccess; /* waiting on a never-recorded event is a no-op in CUDA too */
	if (ev->vgpu != st.vgpu) {
		/* cross-vGPU dependency: wait for the event on the host, then go on */
		e = cudaEventSynchronize(event);
		return rt_set_error(e);
	}
	return rt_set_error(rt_do_STREAM_WAIT_EVENT(st.vgpu, &st, ev->id, flags));
}

/* ---- events ---- */

RT_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
	struct rt_event *ev;
	int dev;
	cudaError_t e;

	if (!event || (flags & ~(unsigned)(cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess)))
		return rt_set_error(cudaErrorInvalidValue);
	e = rt_ensure_device(&dev);
	if (e)
		return rt_set_error(e);
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return rt_set_error(cudaErrorMemoryAllocation);
	ev->magic = EVENT_MAGIC;
	ev->id = rt_new_handle();
	ev->vgpu = dev;
	ev->flags = flags;
	e = ev->id ? rt_do_EVENT_CREATE(dev, ev->id, flags) : cudaErrorMemoryAllocation;
	if (e) {
		free(ev);
		return rt_set_error(e);
	}
	*event = (cudaEvent_t)ev;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaEventCreate(cudaEvent_t *event)
{
	return cudaEventCreateWithFlags(event, cudaEventDefault);
}

RT_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event)
{
	struct rt_event *ev;
	cudaError_t e = check_event(event, &ev);

	if (e)
		return rt_set_error(e);
	e = rt_do_EVENT_DESTROY(ev->vgpu, ev->id);
	ev->magic = 0;
	free(ev);
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	struct rt_event *ev;
	struct rt_stream_ref st;
	cudaError_t e = check_event_on_stream(event, stream, &ev, &st);

	if (e)
		return rt_set_error(e);
	if (st.vgpu != ev->vgpu)
		return rt_set_error(cudaErrorInvalidResourceHandle);
	e = rt_do_EVENT_RECORD(st.vgpu, &st, ev->id);
	if (!e)
		ev->recorded = 1;
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
	if (flags & ~(unsigned)cudaEventRecordExternal)
		return rt_set_error(cudaErrorInvalidValue);
	return cudaEventRecord(event, stream);
}

/* The event's vGPU (*ev), or *ev NULL when there is nothing to wait for:
 * an unrecorded event counts as complete. */
static cudaError_t recorded_event(cudaEvent_t event, struct rt_event **ev)
{
	cudaError_t e = check_event(event, ev);

	if (!e && !(*ev)->recorded)
		*ev = NULL;
	return e;
}

RT_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	struct rt_event *ev;
	cudaError_t e = recorded_event(event, &ev);

	return rt_set_error(e || !ev ? e : rt_do_EVENT_SYNC(ev->vgpu, ev->id));
}

RT_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event)
{
	struct rt_event *ev;
	cudaError_t e = recorded_event(event, &ev);

	if (!e && ev)
		e = rt_do_EVENT_QUERY(ev->vgpu, ev->id);
	return e == cudaErrorNotReady ? e : rt_set_error(e);
}

RT_EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
	struct rt_event *a = event_of(start), *b = event_of(end);
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	if (!ms)
		return rt_set_error(cudaErrorInvalidValue);
	if (!a || !b || a->vgpu != b->vgpu)
		return rt_set_error(cudaErrorInvalidResourceHandle);
	if (!a->recorded || !b->recorded || ((a->flags | b->flags) & cudaEventDisableTiming))
		return rt_set_error(cudaErrorInvalidResourceHandle);
	e = rt_do_EVENT_ELAPSED(a->vgpu, a->id, b->id, ms);
	return e == cudaErrorNotReady ? e : rt_set_error(e);
}

/* ---- host functions ----
 * The back end asks (an unsolicited completion on slot 0) when a host
 * function reaches the head of its stream; this thread runs it and answers,
 * and the stream waits until then. */

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

static cudaError_t post_host_fn(cudaStream_t stream, cudaHostFn_t fn, cudaStreamCallback_t cb, void *user)
{
	struct rt_stream_ref st;
	uint64_t token;
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	if (!fn && !cb)
		return cudaErrorInvalidValue;
	e = rt_stream_ref(stream, &st);
	if (e)
		return e;
	pthread_mutex_lock(&host_fn_lock);
	token = host_fn_next++;
	host_fns[token % HOST_FN_MAX] = (struct host_fn){ fn, user, cb, stream };
	pthread_mutex_unlock(&host_fn_lock);
	return rt_do_HOST_FUNC(st.vgpu, &st, token);
}

RT_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
	return rt_set_error(post_host_fn(stream, fn, NULL, userData));
}

RT_EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData,
					    unsigned int flags)
{
	if (flags)
		return rt_set_error(cudaErrorInvalidValue);
	return rt_set_error(post_host_fn(stream, NULL, callback, userData));
}
