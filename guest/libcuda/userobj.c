// SPDX-License-Identifier: MIT
/* User objects through the driver API: the core's (guest/core/userobj.c);
 * CU_USER_OBJECT_NO_DESTRUCTOR_SYNC and CU_GRAPH_USER_OBJECT_MOVE are the
 * runtime's numbers. */
#include "cu.h"

static CUresult object_of(CUuserObject h, struct rt_uobj **o)
{
	CUresult r = cu_ready();

	if (r)
		return r;
	*o = rt_uobj_get(h);
	return *o ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
}

CU_EXPORT CUresult CUDAAPI cuUserObjectCreate(CUuserObject *object_out, void *ptr, CUhostFn destroy,
					      unsigned int initialRefcount, unsigned int flags)
{
	struct rt_uobj *o;
	CUresult r = cu_ready();

	if (!r)
		r = cu_result(rt_uobj_create(ptr, destroy, initialRefcount, flags, &o));
	if (!r)
		*object_out = (CUuserObject)o;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuUserObjectRetain(CUuserObject object, unsigned int count)
{
	struct rt_uobj *o;
	CUresult r = object_of(object, &o);

	return r ? r : cu_result(rt_uobj_retain(o, count));
}

CU_EXPORT CUresult CUDAAPI cuUserObjectRelease(CUuserObject object, unsigned int count)
{
	struct rt_uobj *o;
	CUresult r = object_of(object, &o);

	return r ? r : cu_result(rt_uobj_release(o, count));
}

/* the graph and the object of a graph's Retain or Release */
static CUresult graph_object(CUgraph graph, CUuserObject object, struct rt_graph **g, struct rt_uobj **o)
{
	CUresult r = cu_graph_of(graph, g);

	return r ? r : object_of(object, o);
}

CU_EXPORT CUresult CUDAAPI cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned int count,
						   unsigned int flags)
{
	struct rt_graph *g;
	struct rt_uobj *o;
	CUresult r = graph_object(graph, object, &g, &o);

	return r ? r : cu_result(rt_uobj_graph_retain(g, o, count, flags));
}

CU_EXPORT CUresult CUDAAPI cuGraphReleaseUserObject(CUgraph graph, CUuserObject object, unsigned int count)
{
	struct rt_graph *g;
	struct rt_uobj *o;
	CUresult r = graph_object(graph, object, &g, &o);

	return r ? r : cu_result(rt_uobj_graph_release(g, o, count));
}
