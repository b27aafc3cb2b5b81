// SPDX-License-Identifier: MIT
/* User objects through the runtime API: the core's (guest/core/userobj.c). */
#include "rt.h"

static cudaError_t object_of(cudaUserObject_t h, struct rt_uobj **o)
{
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	*o = rt_uobj_get(h);
	return *o ? cudaSuccess : cudaErrorInvalidValue;
}

RT_EXPORT cudaError_t cudaUserObjectCreate(cudaUserObject_t *object_out, void *ptr, cudaHostFn_t destroy,
					   unsigned int initialRefcount, unsigned int flags)
{
	struct rt_uobj *o;
	cudaError_t e = rt_ensure();

	if (!e)
		e = rt_uobj_create(ptr, destroy, initialRefcount, flags, &o);
	if (!e)
		*object_out = (cudaUserObject_t)o;
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaUserObjectRetain(cudaUserObject_t object, unsigned int count)
{
	struct rt_uobj *o;
	cudaError_t e = object_of(object, &o);

	return rt_set_error(e ? e : rt_uobj_retain(o, count));
}

RT_EXPORT cudaError_t cudaUserObjectRelease(cudaUserObject_t object, unsigned int count)
{
	struct rt_uobj *o;
	cudaError_t e = object_of(object, &o);

	return rt_set_error(e ? e : rt_uobj_release(o, count));
}

/* the graph and the object of a graph's Retain or Release */
static cudaError_t graph_object(cudaGraph_t graph, cudaUserObject_t object, struct rt_graph **g, struct rt_uobj **o)
{
	cudaError_t e = rt_graph_of(graph, g);

	return e ? e : object_of(object, o);
}

RT_EXPORT cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object, unsigned int count,
						unsigned int flags)
{
	struct rt_graph *g;
	struct rt_uobj *o;
	cudaError_t e = graph_object(graph, object, &g, &o);

	return rt_set_error(e ? e : rt_uobj_graph_retain(g, o, count, flags));
}

RT_EXPORT cudaError_t cudaGraphReleaseUserObject(cudaGraph_t graph, cudaUserObject_t object, unsigned int count)
{
	struct rt_graph *g;
	struct rt_uobj *o;
	cudaError_t e = graph_object(graph, object, &g, &o);

	return rt_set_error(e ? e : rt_uobj_graph_release(g, o, count));
}
