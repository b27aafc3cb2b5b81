// SPDX-License-Identifier: MIT
/*
 * Graph memory through the runtime API: alloc and free nodes, and the
 * device's graph memory attributes. The memory is the core's (guest/core/graphmem.c:
 * allocated when the node is added, held while a graph that can run it exists).
 */
#include "rt.h"

RT_EXPORT cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
					       const cudaGraphNode_t *pDependencies, size_t numDependencies,
					       struct cudaMemAllocNodeParams *nodeParams)
{
	struct rt_graph *g;
	struct rt_gnode *n;
	cudaError_t e = rt_need(rt_graph_of(graph, &g), pGraphNode);

	if (!e)
		e = rt_graph_add_mem_alloc("cudaGraphAddMemAllocNode", g, (void *const *)pDependencies,
					   numDependencies, nodeParams, &n);
	if (!e)
		*pGraphNode = (cudaGraphNode_t)n;
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
					      const cudaGraphNode_t *pDependencies, size_t numDependencies, void *dptr)
{
	struct rt_node_params p = { .type = cudaGraphNodeTypeMemFree };
	struct rt_graph *g;
	struct rt_gnode *n;
	cudaError_t e = rt_need(rt_graph_of(graph, &g), pGraphNode);

	p.u.m.dptr = dptr;
	if (!e)
		e = rt_graph_add("cudaGraphAddMemFreeNode", g, (void *const *)pDependencies, numDependencies, &p, &n);
	if (!e)
		*pGraphNode = (cudaGraphNode_t)n;
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node, struct cudaMemAllocNodeParams *params_out)
{
	const struct rt_node_params *p;
	cudaError_t e = rt_node_params_of(node, cudaGraphNodeTypeMemAlloc, params_out, &p);

	if (!e)
		rt_gmem_node_params(p, params_out);
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void *dptr_out)
{
	const struct rt_node_params *p;
	cudaError_t e = rt_node_params_of(node, cudaGraphNodeTypeMemFree, dptr_out, &p);

	if (!e)
		*(void **)dptr_out = p->u.m.dptr;
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr, void *value)
{
	cudaError_t e = rt_ensure();

	return rt_set_error(e ? e : rt_gmem_attr(device, (int)attr, value, false));
}

RT_EXPORT cudaError_t cudaDeviceSetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr, void *value)
{
	cudaError_t e = rt_ensure();

	return rt_set_error(e ? e : rt_gmem_attr(device, (int)attr, value, true));
}

/* nothing is kept beyond what graphs hold: nothing to give back */
RT_EXPORT cudaError_t cudaDeviceGraphMemTrim(int device)
{
	uint64_t v;
	cudaError_t e = rt_ensure();

	return rt_set_error(e ? e : rt_gmem_attr(device, cudaGraphMemAttrUsedMemCurrent, &v, false));
}
