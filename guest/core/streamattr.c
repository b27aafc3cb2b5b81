// SPDX-License-Identifier: MIT
/*
 * Stream attributes (cudaStreamGet/SetAttribute, cuStreamGet/SetAttribute;
 * the two APIs' ids and value layout are the launch attributes'). The host's
 * wait policy is kept per stream: it is read back and changes nothing, as
 * mearas waits its own way. Priority reads the stream's. The ones the GPU
 * would apply to the stream's launches (the memory synchronization domain
 * and its map, the access policy window) read their defaults; setting them
 * to anything else is not supported yet: cudaErrorNotSupported and a log
 * line. Ids that are no stream attribute are cudaErrorInvalidValue.
 */
#include <string.h>

#include "mearas/log.h"
#include "core.h"

/* the stream the program created that h names, or NULL for a default stream */
static struct rt_stream *created(cudaStream_t h, const struct rt_stream_ref *st)
{
	return st->id != MEARAS_STREAM_LEGACY ? rt_stream_get(h) : NULL;
}

/* the wait policy of a stream, or of its vGPU's default streams */
static int *sync_policy_of(cudaStream_t h, const struct rt_stream_ref *st)
{
	struct rt_stream *s = created(h, st);

	return s ? &s->sync_policy : &rt.v[st->vgpu].default_sync_policy;
}

static int stream_priority(cudaStream_t h, const struct rt_stream_ref *st)
{
	struct rt_stream *s = created(h, st);

	return s ? s->priority : 0;
}

/* the stream h names (*st), and a value to read or write (v) */
static cudaError_t stream_and_value(cudaStream_t h, const void *v, struct rt_stream_ref *st)
{
	cudaError_t e = rt_stream_of(h, st);

	return e ? e : v ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t rt_stream_get_attr(cudaStream_t h, int id, cudaLaunchAttributeValue *v)
{
	struct rt_stream_ref st;
	cudaError_t e = stream_and_value(h, v, &st);

	if (e)
		return e;
	switch (id) {
	case cudaLaunchAttributeSynchronizationPolicy: {
		int p = *sync_policy_of(h, &st);

		memset(v, 0, sizeof(*v));
		/* never set: -1, as NVIDIA's driver answers (H200, 580) */
		v->syncPolicy = (enum cudaSynchronizationPolicy)(p ? p : -1);
		return cudaSuccess;
	}
	case cudaLaunchAttributePriority:
		memset(v, 0, sizeof(*v));
		v->priority = stream_priority(h, &st);
		return cudaSuccess;
	case cudaLaunchAttributeAccessPolicyWindow:
		memset(v, 0, sizeof(*v));
		return cudaSuccess;
	case cudaLaunchAttributeMemSyncDomainMap:
		memset(v, 0, sizeof(*v));
		v->memSyncDomainMap.default_ = 0;
		v->memSyncDomainMap.remote = 1;
		return cudaSuccess;
	case cudaLaunchAttributeMemSyncDomain:
		memset(v, 0, sizeof(*v));
		v->memSyncDomain = cudaLaunchMemSyncDomainDefault;
		return cudaSuccess;
	default:
		return cudaErrorInvalidValue;
	}
}

/* a value the stream has already (its default): taken; another is not supported yet */
static cudaError_t only_as_is(bool as_is, int id, const char *caller)
{
	if (as_is)
		return cudaSuccess;
	log_warn("%s: stream attribute %d with a value other than its default is not supported by mearas yet",
		 caller, id);
	return cudaErrorNotSupported;
}

cudaError_t rt_stream_set_attr(cudaStream_t h, int id, const cudaLaunchAttributeValue *v, const char *caller)
{
	struct rt_stream_ref st;
	cudaError_t e = stream_and_value(h, v, &st);

	if (e)
		return e;
	switch (id) {
	case cudaLaunchAttributeSynchronizationPolicy:
		if (v->syncPolicy < cudaSyncPolicyAuto || v->syncPolicy > cudaSyncPolicyBlockingSync)
			return cudaErrorInvalidValue;
		*sync_policy_of(h, &st) = (int)v->syncPolicy;
		return cudaSuccess;
	case cudaLaunchAttributePriority:
		return only_as_is(v->priority == stream_priority(h, &st), id, caller);
	case cudaLaunchAttributeAccessPolicyWindow:
		return only_as_is(v->accessPolicyWindow.num_bytes == 0, id, caller);
	case cudaLaunchAttributeMemSyncDomainMap:
		return only_as_is(v->memSyncDomainMap.default_ == 0 && v->memSyncDomainMap.remote == 1, id, caller);
	case cudaLaunchAttributeMemSyncDomain:
		if ((unsigned)v->memSyncDomain > cudaLaunchMemSyncDomainRemote)
			return cudaErrorInvalidValue;
		return only_as_is(v->memSyncDomain == cudaLaunchMemSyncDomainDefault, id, caller);
	default:
		return cudaErrorInvalidValue;
	}
}

cudaError_t rt_stream_copy_attrs(cudaStream_t dst, cudaStream_t src)
{
	struct rt_stream_ref d, s;
	cudaError_t e = rt_stream_of(dst, &d);

	if (!e)
		e = rt_stream_of(src, &s);
	if (!e)
		*sync_policy_of(dst, &d) = *sync_policy_of(src, &s);
	return e;
}
