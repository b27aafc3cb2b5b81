// SPDX-License-Identifier: MIT
/*
 * Streams and events: ids chosen here, so creating one is a posted record,
 * not a round trip. Both front ends hand out pointers to these structs
 * (cudaStream_t and CUstream alike), so a stream made by one is usable by
 * the other.
 */
#include <stdlib.h>

#include "core.h"

#define STREAM_MAGIC 0x6d537472u
#define EVENT_MAGIC  0x6d457674u

struct rt_stream *rt_stream_get(void *h)
{
	struct rt_stream *s = h;

	return s && h != (void *)cudaStreamLegacy && h != (void *)cudaStreamPerThread &&
	       s->magic == STREAM_MAGIC ? s : NULL;
}

struct rt_event *rt_event_get(void *h)
{
	struct rt_event *ev = h;

	return ev && ev->magic == EVENT_MAGIC ? ev : NULL;
}

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

/* A created stream's id is its handle; the default streams' lie above every
 * handle: each vGPU's legacy stream, and each vGPU's per-thread stream of
 * each thread slot (the back end keeps one per slot: exec_resolve_stream). */
unsigned long long rt_stream_ref_id(const struct rt_stream_ref *st)
{
	unsigned long long base = MEARAS_MAX_HANDLES;

	if (st->id != MEARAS_STREAM_LEGACY)
		return st->id;
	if (!(st->sqe_flags & MEARAS_SQE_PER_THREAD))
		return base + (unsigned)st->vgpu;
	return base + MEARAS_MAX_VGPUS * (1ull + (unsigned)rt_slot()) + (unsigned)st->vgpu;
}

cudaError_t rt_stream_of(cudaStream_t stream, struct rt_stream_ref *st)
{
	cudaError_t e = rt_ensure();

	return e ? e : rt_stream_ref(stream, st);
}

/* e, the outcome of creating obj on the back end: obj freed when it failed */
static cudaError_t kept(void *obj, cudaError_t e)
{
	if (e)
		free(obj);
	return e;
}

cudaError_t rt_stream_create(int vgpu, unsigned flags, int priority, struct rt_stream **out)
{
	struct rt_stream *s = malloc(sizeof(*s));
	cudaError_t e;

	if (!s)
		return cudaErrorMemoryAllocation;
	/* the priority in the range every current GPU reports */
	*s = (struct rt_stream){ .magic = STREAM_MAGIC, .id = rt_new_handle(), .vgpu = vgpu, .flags = flags,
				 .priority = rt_priority_clamp(priority) };
	e = kept(s, s->id ? rt_do_STREAM_CREATE(vgpu, s->id, flags, s->priority) : cudaErrorMemoryAllocation);
	if (!e)
		*out = s;
	return e;
}

cudaError_t rt_stream_destroy(struct rt_stream *s)
{
	cudaError_t e = rt_do_STREAM_DESTROY(s->vgpu, s->id);

	rt_capture_forget_stream(s->vgpu, s->id);
	s->magic = 0;
	free(s);
	return e;
}

cudaError_t rt_event_create(int vgpu, unsigned flags, struct rt_event **out)
{
	struct rt_event *ev = malloc(sizeof(*ev));
	cudaError_t e;

	if (!ev)
		return cudaErrorMemoryAllocation;
	*ev = (struct rt_event){ .magic = EVENT_MAGIC, .id = rt_new_handle(), .vgpu = vgpu, .flags = flags };
	e = kept(ev, ev->id ? rt_do_EVENT_CREATE(vgpu, ev->id, flags) : cudaErrorMemoryAllocation);
	if (!e)
		*out = ev;
	return e;
}

cudaError_t rt_event_destroy(struct rt_event *ev)
{
	cudaError_t e = rt_do_EVENT_DESTROY(ev->vgpu, ev->id);

	ev->magic = 0;
	free(ev);
	return e;
}

cudaError_t rt_event_record(struct rt_event *ev, const struct rt_stream_ref *st, unsigned flags)
{
	cudaError_t e;

	if (st->vgpu != ev->vgpu)
		return cudaErrorInvalidResourceHandle;
	e = rt_do_EVENT_RECORD(st->vgpu, st, ev->id, flags);
	if (!e)
		ev->recorded = 1;
	return e;
}

cudaError_t rt_stream_wait(const struct rt_stream_ref *st, struct rt_event *ev, unsigned flags)
{
	if (!ev->recorded)
		return cudaSuccess; /* waiting on a never-recorded event is a no-op in CUDA too */
	/* across vGPUs: wait for the event on the host, then go on */
	if (ev->vgpu != st->vgpu)
		return rt_do_EVENT_SYNC(ev->vgpu, ev->id);
	return rt_do_STREAM_WAIT_EVENT(st->vgpu, st, ev->id, flags);
}

/* an unrecorded event counts as complete */
cudaError_t rt_event_sync(struct rt_event *ev)
{
	return ev->recorded ? rt_do_EVENT_SYNC(ev->vgpu, ev->id) : cudaSuccess;
}

cudaError_t rt_event_query(struct rt_event *ev)
{
	return ev->recorded ? rt_do_EVENT_QUERY(ev->vgpu, ev->id) : cudaSuccess;
}

cudaError_t rt_event_elapsed(struct rt_event *a, struct rt_event *b, float *ms)
{
	if (a->vgpu != b->vgpu || !a->recorded || !b->recorded || ((a->flags | b->flags) & cudaEventDisableTiming))
		return cudaErrorInvalidResourceHandle;
	return rt_do_EVENT_ELAPSED(a->vgpu, a->id, b->id, ms);
}
