// SPDX-License-Identifier: MIT
/*
 * Graphs: the core's objects (a CUgraph is a struct rt_graph, a CUgraphExec
 * a struct rt_graph_exec, the same handles as the runtime's). Instantiation,
 * launch and destruction of graphs made by stream capture or built node by
 * node (graphnodes.c). The nodes of a captured graph have no handles here.
 */
/* cuda.h as the driver's own build sees it: every ABI declared under its
 * exported name (the older ones too), no name #defined to another */
#define __CUDA_API_VERSION_INTERNAL
#include "mearas/log.h"
#include "ptds.h"
#include "cu.h"

/* flags: CUgraphInstantiate_flags, the runtime's numbers */
static CUresult instantiate(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags,
			    const struct rt_stream_ref *upload, const char *call)
{
	void *g;
	struct rt_graph_exec *x;
	CUresult r = cu_handle(hGraph, CU_GRAPH_OBJ, CUDA_ERROR_INVALID_VALUE, &g);

	if (!r && !phGraphExec)
		r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (r)
		return r;
	r = cu_result(rt_graph_instantiate(g, flags, upload, call, &x));
	if (!r)
		*phGraphExec = (CUgraphExec)x;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
						       unsigned long long flags)
{
	return instantiate(phGraphExec, hGraph, flags, NULL, "cuGraphInstantiateWithFlags");
}

/* no node is ever to blame, and there is nothing to log */
static CUresult instantiate_log(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,
				size_t bufferSize, const char *call)
{
	if (phErrorNode)
		*phErrorNode = NULL;
	if (logBuffer && bufferSize)
		logBuffer[0] = '\0';
	return instantiate(phGraphExec, hGraph, 0, NULL, call);
}

CU_EXPORT CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *x, CUgraph g, CUgraphNode *n, char *log, size_t size)
{
	return instantiate_log(x, g, n, log, size, "cuGraphInstantiate");
}

CU_EXPORT CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *x, CUgraph g, CUgraphNode *n, char *log, size_t size)
{
	return instantiate_log(x, g, n, log, size, "cuGraphInstantiate_v2");
}

static CUresult instantiate_params(CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *p,
				   const char *call)
{
	struct rt_stream_ref st;
	bool upload;
	CUresult r;

	if (!p)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	/* the upload stream means something only with the upload flag */
	upload = p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
	r = upload ? cu_stream_ref(p->hUploadStream, &st) : CUDA_SUCCESS;
	if (!r)
		r = instantiate(phGraphExec, hGraph, p->flags, upload ? &st : NULL, call);
	p->hErrNode_out = NULL;
	p->result_out = r ? CUDA_GRAPH_INSTANTIATE_ERROR : CUDA_GRAPH_INSTANTIATE_SUCCESS;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec *x, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	return instantiate_params(x, g, p, "cuGraphInstantiateWithParams");
}

CU_EXPORT CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(CUgraphExec *x, CUgraph g,
							     CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	return CU_PTSZ(instantiate_params(x, g, p, "cuGraphInstantiateWithParams_ptsz"));
}

/* a launch, or an upload (rt_graph_upload: nothing to post) */
static CUresult launch(CUgraphExec hGraphExec, CUstream hStream, bool upload)
{
	struct rt_graph_exec *x;
	struct rt_stream_ref st;
	CUresult r = cu_stream_ref(hStream, &st);

	if (r)
		return r;
	x = rt_graph_exec_get(hGraphExec);
	if (!x)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	return cu_result(upload ? rt_graph_upload(x, &st) : rt_graph_launch(x, &st));
}

/* the instantiation flags, Upload aside (it leaves nothing in the executable graph) */
CU_EXPORT CUresult CUDAAPI cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t *flags)
{
	struct rt_graph_exec *x;
	CUresult r = cu_need(cu_ready(), flags);

	if (r)
		return r;
	x = rt_graph_exec_get(hGraphExec);
	if (!x)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	*flags = x->flags;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec x, CUstream s) { return launch(x, s, false); }
CU_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec x, CUstream s) { return CU_PTSZ(launch(x, s, false)); }
CU_EXPORT CUresult CUDAAPI cuGraphUpload(CUgraphExec x, CUstream s) { return launch(x, s, true); }
CU_EXPORT CUresult CUDAAPI cuGraphUpload_ptsz(CUgraphExec x, CUstream s) { return CU_PTSZ(launch(x, s, true)); }

CU_EXPORT CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph)
{
	void *o;
	CUresult r = cu_handle(hGraph, CU_GRAPH_OBJ, CUDA_ERROR_INVALID_VALUE, &o);

	return r ? r : cu_result(rt_graph_destroy(o));
}

CU_EXPORT CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	void *o;
	CUresult r = cu_handle(hGraphExec, CU_GRAPH_EXEC_OBJ, CUDA_ERROR_INVALID_VALUE, &o);

	return r ? r : cu_result(rt_graph_exec_destroy(o));
}

CU_EXPORT CUresult CUDAAPI cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
	struct rt_graph *g;
	void *o;
	CUresult r = cu_handle(hGraph, CU_GRAPH_OBJ, CUDA_ERROR_INVALID_VALUE, &o);

	if (!r && !numNodes)
		r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (r)
		return r;
	g = o;
	if (g->built)
		return cu_result(rt_graph_nodes(g, false, (void **)nodes, numNodes));
	if (nodes) {
		log_warn("cuGraphGetNodes with a node array (node handles) is not supported by mearas: "
			 "returning CUDA_ERROR_NOT_SUPPORTED");
		return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
	}
	return cu_result(rt_graph_node_count(g, numNodes));
}
