// SPDX-License-Identifier: MIT
/*
 * Streams, events and host functions: the core's objects (a CUstream is a
 * struct rt_stream, a CUevent a struct rt_event), on the current context.
 */
#include "ptds.h"
#include "cu.h"

bool cu_stream_known(CUstream s)
{
	return !s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || rt_stream_get(s);
}

CUresult cu_stream_ref(CUstream s, struct rt_stream_ref *out)
{
	struct cu_ctx *c;
	CUresult r = cu_current_ctx(&c);

	if (!r && !cu_stream_known(s))
		r = CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
	return r ? r : cu_result(rt_stream_ref((cudaStream_t)s, out));
}

CU_EXPORT CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
	struct cu_ctx *c;
	struct rt_stream *s;
	CUresult r = cu_current_ctx(&c);

	if (r)
		return r;
	if (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	r = cu_result(rt_stream_create(c->vgpu, flags, priority, &s));
	if (!r)
		*phStream = (CUstream)s;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	return cuStreamCreateWithPriority(phStream, Flags, 0);
}

CU_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
	void *s;
	CUresult r = cu_handle(hStream, CU_STREAM_OBJ, CUDA_ERROR_INVALID_HANDLE, &s);

	return r ? r : cu_result(rt_stream_destroy(s));
}

/* a stream operation that takes only the stream (sync, query) */
static CUresult stream_op(CUstream hStream, cudaError_t (*op)(int, const struct rt_stream_ref *))
{
	struct rt_stream_ref st;
	CUresult r = cu_stream_ref(hStream, &st);

	return r ? r : cu_result(op(st.vgpu, &st));
}

/* the stream and the event of a wait or a record, with no flag beyond allowed */
static CUresult stream_event(CUstream hStream, CUevent hEvent, unsigned int flags, unsigned int allowed,
			     struct rt_stream_ref *st, struct rt_event **ev)
{
	CUresult r = cu_stream_ref(hStream, st);

	if (r)
		return r;
	*ev = rt_event_get(hEvent);
	if (!*ev)
		return CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
	return flags & ~allowed ? CU_REFUSE(CUDA_ERROR_INVALID_VALUE) : CUDA_SUCCESS;
}

static CUresult stream_wait(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	struct rt_stream_ref st;
	struct rt_event *ev;
	CUresult r = stream_event(hStream, hEvent, Flags, CU_EVENT_WAIT_EXTERNAL, &st, &ev);

	/* CU_EVENT_WAIT_EXTERNAL: in a stream capture, a wait node of the graph */
	return r ? r : cu_result(rt_stream_wait(&st, ev, Flags));
}

/* the stream (*st), and arg (what the call writes or runs) is there */
static CUresult stream_with(CUstream h, const void *arg, struct rt_stream_ref *st)
{
	CUresult r = cu_stream_ref(h, st);

	return r ? r : arg ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
}

/* what cuStreamGet* reads of a stream */
enum stream_attr { STREAM_FLAGS, STREAM_PRIORITY, STREAM_ID, STREAM_CTX, STREAM_DEVICE };

static CUresult stream_attr(CUstream h, enum stream_attr what, void *out)
{
	struct rt_stream_ref st;
	struct rt_stream *s;
	CUresult r = stream_with(h, out, &st);

	if (r)
		return r;
	s = rt_stream_get(h);
	switch (what) {
	case STREAM_FLAGS:
		*(unsigned int *)out = s ? s->flags : CU_STREAM_DEFAULT;
		break;
	case STREAM_PRIORITY:
		*(int *)out = s ? s->priority : 0;
		break;
	case STREAM_ID:
		*(unsigned long long *)out = rt_stream_ref_id(&st);
		break;
	case STREAM_CTX:
		*(CUcontext *)out = s ? (CUcontext)cu_primary(st.vgpu) : (CUcontext)cu_current();
		break;
	case STREAM_DEVICE:
		*(CUdevice *)out = st.vgpu;
		break;
	}
	return CUDA_SUCCESS;
}

static CUresult host_func(CUstream hStream, CUhostFn fn, void *userData)
{
	struct rt_stream_ref st;
	CUresult r = stream_with(hStream, (const void *)fn, &st);

	return r ? r : cu_result(rt_post_host_fn((cudaStream_t)hStream, fn, NULL, userData));
}

/* CUstreamCallback and cudaStreamCallback_t differ only in their types'
 * names: the status it gets is CUDA_SUCCESS = cudaSuccess = 0 */
static CUresult add_callback(CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags)
{
	struct rt_stream_ref st;
	CUresult r = stream_with(hStream, (const void *)callback, &st);

	if (!r && flags)
		r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	return r ? r : cu_result(rt_post_host_fn((cudaStream_t)hStream, NULL,
						 (cudaStreamCallback_t)(void (*)(void))callback, userData));
}

/* plain and per-thread-default-stream exports of each */
CU_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream h) { return stream_op(h, rt_do_STREAM_SYNC); }
CU_EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream h) { return CU_PTSZ(stream_op(h, rt_do_STREAM_SYNC)); }
CU_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream h) { return stream_op(h, rt_do_STREAM_QUERY); }
CU_EXPORT CUresult CUDAAPI cuStreamQuery_ptsz(CUstream h) { return CU_PTSZ(stream_op(h, rt_do_STREAM_QUERY)); }
CU_EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream h, CUevent e, unsigned int f) { return stream_wait(h, e, f); }
CU_EXPORT CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream h, CUevent e, unsigned int f)
{
	return CU_PTSZ(stream_wait(h, e, f));
}
CU_EXPORT CUresult CUDAAPI cuStreamGetFlags(CUstream h, unsigned int *f) { return stream_attr(h, STREAM_FLAGS, f); }
CU_EXPORT CUresult CUDAAPI cuStreamGetFlags_ptsz(CUstream h, unsigned int *f)
{
	return CU_PTSZ(stream_attr(h, STREAM_FLAGS, f));
}
CU_EXPORT CUresult CUDAAPI cuStreamGetPriority(CUstream h, int *p) { return stream_attr(h, STREAM_PRIORITY, p); }
CU_EXPORT CUresult CUDAAPI cuStreamGetPriority_ptsz(CUstream h, int *p)
{
	return CU_PTSZ(stream_attr(h, STREAM_PRIORITY, p));
}
CU_EXPORT CUresult CUDAAPI cuStreamGetId(CUstream h, unsigned long long *id) { return stream_attr(h, STREAM_ID, id); }
CU_EXPORT CUresult CUDAAPI cuStreamGetId_ptsz(CUstream h, unsigned long long *id)
{
	return CU_PTSZ(stream_attr(h, STREAM_ID, id));
}
CU_EXPORT CUresult CUDAAPI cuStreamGetCtx(CUstream h, CUcontext *c) { return stream_attr(h, STREAM_CTX, c); }
CU_EXPORT CUresult CUDAAPI cuStreamGetCtx_ptsz(CUstream h, CUcontext *c)
{
	return CU_PTSZ(stream_attr(h, STREAM_CTX, c));
}
CU_EXPORT CUresult CUDAAPI cuStreamGetDevice(CUstream h, CUdevice *d) { return stream_attr(h, STREAM_DEVICE, d); }
CU_EXPORT CUresult CUDAAPI cuStreamGetDevice_ptsz(CUstream h, CUdevice *d)
{
	return CU_PTSZ(stream_attr(h, STREAM_DEVICE, d));
}
CU_EXPORT CUresult CUDAAPI cuLaunchHostFunc(CUstream h, CUhostFn fn, void *u) { return host_func(h, fn, u); }
CU_EXPORT CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream h, CUhostFn fn, void *u)
{
	return CU_PTSZ(host_func(h, fn, u));
}
CU_EXPORT CUresult CUDAAPI cuStreamAddCallback(CUstream h, CUstreamCallback cb, void *u, unsigned int f)
{
	return add_callback(h, cb, u, f);
}
CU_EXPORT CUresult CUDAAPI cuStreamAddCallback_ptsz(CUstream h, CUstreamCallback cb, void *u, unsigned int f)
{
	return CU_PTSZ(add_callback(h, cb, u, f));
}

/* ---- events ---- */

CU_EXPORT CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	struct cu_ctx *c;
	struct rt_event *ev;
	CUresult r = cu_current_ctx(&c);

	if (r)
		return r;
	if (!phEvent ||
	    (Flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	r = cu_result(rt_event_create(c->vgpu, Flags, &ev));
	if (!r)
		*phEvent = (CUevent)ev;
	return r;
}

/* an event operation that takes only the event (destroy, sync, query) */
static CUresult event_op(CUevent hEvent, cudaError_t (*op)(struct rt_event *))
{
	void *ev;
	CUresult r = cu_handle(hEvent, CU_EVENT_OBJ, CUDA_ERROR_INVALID_HANDLE, &ev);

	return r ? r : cu_result(op(ev));
}

CU_EXPORT CUresult CUDAAPI cuEventDestroy(CUevent hEvent) { return event_op(hEvent, rt_event_destroy); }

static CUresult event_record(CUevent hEvent, CUstream hStream, unsigned flags)
{
	struct rt_stream_ref st;
	struct rt_event *ev;
	CUresult r = stream_event(hStream, hEvent, flags, CU_EVENT_RECORD_EXTERNAL, &st, &ev);

	return r ? r : cu_result(rt_event_record(ev, &st, flags ? MEARAS_EVENT_RECORD_EXTERNAL : 0));
}

CU_EXPORT CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s) { return event_record(e, s, 0); }
CU_EXPORT CUresult CUDAAPI cuEventRecord_ptsz(CUevent e, CUstream s) { return CU_PTSZ(event_record(e, s, 0)); }
CU_EXPORT CUresult CUDAAPI cuEventRecordWithFlags(CUevent e, CUstream s, unsigned int f)
{
	return event_record(e, s, f);
}
CU_EXPORT CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int f)
{
	return CU_PTSZ(event_record(e, s, f));
}

CU_EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) { return event_op(hEvent, rt_event_sync); }

CU_EXPORT CUresult CUDAAPI cuEventQuery(CUevent hEvent) { return event_op(hEvent, rt_event_query); }

static CUresult elapsed(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	struct rt_event *a, *b;
	CUresult r = cu_need(cu_ready(), pMilliseconds);

	if (r)
		return r;
	a = rt_event_get(hStart);
	b = rt_event_get(hEnd);
	if (!a || !b)
		return CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
	return cu_result(rt_event_elapsed(a, b, pMilliseconds));
}

/* _v2 (CUDA 12.8) and the older name: the same answer here */
#undef cuEventElapsedTime
CU_EXPORT CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CU_EXPORT CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	return elapsed(pMilliseconds, hStart, hEnd);
}

CU_EXPORT CUresult CUDAAPI cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	return elapsed(pMilliseconds, hStart, hEnd);
}

/* the stream attributes (guest/core/streamattr.c), on the current context's streams */
static CUresult stream_get_attr(CUstream h, CUstreamAttrID attr, CUstreamAttrValue *v)
{
	struct rt_stream_ref st;
	CUresult r = cu_stream_ref(h, &st);

	return r ? r : cu_result(rt_stream_get_attr((cudaStream_t)h, (int)attr, (cudaLaunchAttributeValue *)v));
}

static CUresult stream_set_attr(CUstream h, CUstreamAttrID attr, const CUstreamAttrValue *v)
{
	struct rt_stream_ref st;
	CUresult r = cu_stream_ref(h, &st);

	return r ? r : cu_result(rt_stream_set_attr((cudaStream_t)h, (int)attr, (const cudaLaunchAttributeValue *)v,
						    "cuStreamSetAttribute"));
}

static CUresult stream_copy_attrs(CUstream dst, CUstream src)
{
	struct rt_stream_ref d, s;
	CUresult r = cu_stream_ref(dst, &d);

	if (!r)
		r = cu_stream_ref(src, &s);
	return r ? r : cu_result(rt_stream_copy_attrs((cudaStream_t)dst, (cudaStream_t)src));
}

CU_EXPORT CUresult CUDAAPI cuStreamGetAttribute(CUstream h, CUstreamAttrID attr, CUstreamAttrValue *v)
{
	return stream_get_attr(h, attr, v);
}

/* cuda.h declares no per-thread form of it */
CU_EXPORT CUresult CUDAAPI cuStreamGetAttribute_ptsz(CUstream h, CUstreamAttrID attr, CUstreamAttrValue *v);
CU_EXPORT CUresult CUDAAPI cuStreamGetAttribute_ptsz(CUstream h, CUstreamAttrID attr, CUstreamAttrValue *v)
{
	return CU_PTSZ(stream_get_attr(h, attr, v));
}

CU_EXPORT CUresult CUDAAPI cuStreamSetAttribute(CUstream h, CUstreamAttrID attr, const CUstreamAttrValue *v)
{
	return stream_set_attr(h, attr, v);
}

/* cuda.h declares no per-thread form of it */
CU_EXPORT CUresult CUDAAPI cuStreamSetAttribute_ptsz(CUstream h, CUstreamAttrID attr, const CUstreamAttrValue *v);
CU_EXPORT CUresult CUDAAPI cuStreamSetAttribute_ptsz(CUstream h, CUstreamAttrID attr, const CUstreamAttrValue *v)
{
	return CU_PTSZ(stream_set_attr(h, attr, v));
}

CU_EXPORT CUresult CUDAAPI cuStreamCopyAttributes(CUstream dst, CUstream src)
{
	return stream_copy_attrs(dst, src);
}

/* cuda.h declares no per-thread form of it */
CU_EXPORT CUresult CUDAAPI cuStreamCopyAttributes_ptsz(CUstream dst, CUstream src);
CU_EXPORT CUresult CUDAAPI cuStreamCopyAttributes_ptsz(CUstream dst, CUstream src)
{
	return CU_PTSZ(stream_copy_attrs(dst, src));
}
