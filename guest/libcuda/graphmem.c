// SPDX-License-Identifier: MIT
/*
 * Graph memory through the driver API: alloc and free nodes, and the
 * device's graph memory attributes (guest/core/graphmem.c: the memory is
 * allocated when the node is added and held while a graph that can run it
 * exists). CUDA_MEM_ALLOC_NODE_PARAMS is laid out as the runtime's
 * cudaMemAllocNodeParams, which the core takes.
 */
#define __CUDA_API_VERSION_INTERNAL
#include <stddef.h>

#include "cu.h"

_Static_assert(sizeof(CUDA_MEM_ALLOC_NODE_PARAMS) == sizeof(struct cudaMemAllocNodeParams) &&
		       offsetof(CUDA_MEM_ALLOC_NODE_PARAMS, bytesize) ==
			       offsetof(struct cudaMemAllocNodeParams, bytesize) &&
		       offsetof(CUDA_MEM_ALLOC_NODE_PARAMS, dptr) == offsetof(struct cudaMemAllocNodeParams, dptr) &&
		       sizeof(CUmemPoolProps) == sizeof(struct cudaMemPoolProps),
	       "the driver's and the runtime's alloc node parameters differ");

CU_EXPORT CUresult CUDAAPI cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
						  const CUgraphNode *dependencies, size_t numDependencies,
						  CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
	struct rt_graph *g;
	struct rt_gnode *n;
	CUresult r = cu_need(cu_graph_of(hGraph, &g), phGraphNode);

	if (!r)
		r = cu_result(rt_graph_add_mem_alloc("cuGraphAddMemAllocNode", g, (void *const *)dependencies,
						     numDependencies, (struct cudaMemAllocNodeParams *)nodeParams,
						     &n));
	if (!r)
		*phGraphNode = (CUgraphNode)n;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
						 const CUgraphNode *dependencies, size_t numDependencies, CUdeviceptr dptr)
{
	struct rt_node_params p = { .type = cudaGraphNodeTypeMemFree };
	struct rt_graph *g;
	struct rt_gnode *n;
	CUresult r = cu_need(cu_graph_of(hGraph, &g), phGraphNode);

	p.u.m.dptr = (void *)(uintptr_t)dptr;
	if (!r)
		r = cu_result(rt_graph_add("cuGraphAddMemFreeNode", g, (void *const *)dependencies, numDependencies,
					   &p, &n));
	if (!r)
		*phGraphNode = (CUgraphNode)n;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
	const struct rt_node_params *p;
	CUresult r = cu_node_params(hNode, cudaGraphNodeTypeMemAlloc, params_out, &p);

	if (!r)
		rt_gmem_node_params(p, (struct cudaMemAllocNodeParams *)params_out);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out)
{
	const struct rt_node_params *p;
	CUresult r = cu_node_params(hNode, cudaGraphNodeTypeMemFree, dptr_out, &p);

	if (!r)
		*dptr_out = (CUdeviceptr)(uintptr_t)p->u.m.dptr;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
	CUresult r = cu_ready();

	return r ? r : cu_result(rt_gmem_attr(device, (int)attr, value, false));
}

CU_EXPORT CUresult CUDAAPI cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
	CUresult r = cu_ready();

	return r ? r : cu_result(rt_gmem_attr(device, (int)attr, value, true));
}

/* nothing is kept beyond what graphs hold: nothing to give back */
CU_EXPORT CUresult CUDAAPI cuDeviceGraphMemTrim(CUdevice device)
{
	uint64_t v;
	CUresult r = cu_ready();

	return r ? r : cu_result(rt_gmem_attr(device, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &v, false));
}
