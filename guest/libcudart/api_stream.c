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

static struct rt_event *event_of(cudaEvent_t e)
{
	return rt_event_get(e);
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
	e = rt_stream_create(dev, flags, priority, &s);
	if (e)
		return rt_set_error(e);
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
	struct rt_stream *s = rt_stream_get(stream);
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	if (!s)
		return rt_set_error(cudaErrorInvalidResourceHandle);
	return rt_set_error(rt_stream_destroy(s));
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
	*s = NULL;
	if (!out)
		return cudaErrorInvalidValue;
	if (!h || h == cudaStreamLegacy || h == cudaStreamPerThread)
		return cudaSuccess;
	*s = rt_stream_get(h);
	return *s ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

/* cudaStreamGetFlags (flags) and cudaStreamGetPriority (priority): the
 * program's stream's, 0 for a default stream */
static cudaError_t stream_attr(cudaStream_t hStream, unsigned int *flags, int *priority)
{
	const struct rt_stream *s;
	cudaError_t e = user_stream(hStream, flags ? (const void *)flags : (const void *)priority, &s);

	if (e)
		return rt_set_error(e);
	if (flags)
		*flags = s ? s->flags : 0;
	else
		*priority = s ? s->priority : 0;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags)
{
	return stream_attr(hStream, flags, NULL);
}

RT_EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
	return stream_attr(hStream, NULL, priority);
}

/* the stream h names (*st), for a call that answers into out */
static cudaError_t stream_answering(cudaStream_t h, const void *out, struct rt_stream_ref *st)
{
	cudaError_t e = rt_ensure();

	return e ? e : out ? rt_stream_ref(h, st) : cudaErrorInvalidValue;
}

RT_EXPORT cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int *device)
{
	struct rt_stream_ref st;
	cudaError_t e = stream_answering(hStream, device, &st);

	if (e)
		return rt_set_error(e);
	*device = st.vgpu;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaStreamGetId(cudaStream_t hStream, unsigned long long *streamId)
{
	struct rt_stream_ref st;
	cudaError_t e = stream_answering(hStream, streamId, &st);

	if (e)
		return rt_set_error(e);
	*streamId = rt_stream_ref_id(&st);
	return cudaSuccess;
}

/* the stream attributes: guest/core/streamattr.c */
RT_EXPORT cudaError_t cudaStreamGetAttribute(cudaStream_t hStream, cudaStreamAttrID attr, cudaStreamAttrValue *value_out)
{
	return rt_set_error(rt_stream_get_attr(hStream, (int)attr, value_out));
}

RT_EXPORT cudaError_t cudaStreamSetAttribute(cudaStream_t hStream, cudaStreamAttrID attr, const cudaStreamAttrValue *value)
{
	return rt_set_error(rt_stream_set_attr(hStream, (int)attr, value, "cudaStreamSetAttribute"));
}

RT_EXPORT cudaError_t cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src)
{
	return rt_set_error(rt_stream_copy_attrs(dst, src));
}

RT_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
	struct rt_event *ev;
	struct rt_stream_ref st;
	cudaError_t e = check_event_on_stream(event, stream, &ev, &st);

	if (e)
		return rt_set_error(e);
	return rt_set_error(rt_stream_wait(&st, ev, flags));
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
	e = rt_event_create(dev, flags, &ev);
	if (e)
		return rt_set_error(e);
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
	return rt_set_error(rt_event_destroy(ev));
}

static cudaError_t event_record(cudaEvent_t event, cudaStream_t stream, unsigned flags)
{
	struct rt_event *ev;
	struct rt_stream_ref st;
	cudaError_t e = check_event_on_stream(event, stream, &ev, &st);

	if (e)
		return e;
	if (flags & ~(unsigned)cudaEventRecordExternal)
		return cudaErrorInvalidValue;
	return rt_event_record(ev, &st, flags ? MEARAS_EVENT_RECORD_EXTERNAL : 0);
}

RT_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	return rt_set_error(event_record(event, stream, 0));
}

/* cudaEventRecordExternal: in a stream capture, a record node of the graph */
RT_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
	return rt_set_error(event_record(event, stream, flags));
}

RT_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	struct rt_event *ev;
	cudaError_t e = check_event(event, &ev);

	return rt_set_error(e ? e : rt_event_sync(ev));
}

RT_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event)
{
	struct rt_event *ev;
	cudaError_t e = check_event(event, &ev);

	if (!e)
		e = rt_event_query(ev);
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
	if (!a || !b)
		return rt_set_error(cudaErrorInvalidResourceHandle);
	e = rt_event_elapsed(a, b, ms);
	return e == cudaErrorNotReady ? e : rt_set_error(e);
}

RT_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
	return rt_set_error(rt_post_host_fn(stream, fn, NULL, userData));
}

RT_EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData,
					    unsigned int flags)
{
	if (flags)
		return rt_set_error(cudaErrorInvalidValue);
	return rt_set_error(rt_post_host_fn(stream, NULL, callback, userData));
}
