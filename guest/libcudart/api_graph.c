// SPDX-License-Identifier: MIT
/* Stream capture and graphs: the runtime's checks and errors over the
 * core's (guest/core/capture.c, graphs.c). */
#include "rt.h"

RT_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
	struct rt_stream_ref st;
	cudaError_t e = rt_stream_of(stream, &st);

	return rt_set_error(e ? e : rt_capture_begin(&st, (int)mode));
}

RT_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
	struct rt_stream_ref st;
	struct rt_graph *g;
	cudaError_t e;

	if (!pGraph)
		return rt_set_error(cudaErrorInvalidValue);
	e = rt_stream_of(stream, &st);
	if (!e)
		e = rt_capture_end(&st, &g);
	if (!e)
		*pGraph = (cudaGraph_t)g;
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
	struct rt_stream_ref st;
	cudaError_t e = rt_stream_of(stream, &st);

	return rt_set_error(e ? e : rt_capture_info(&st, "cudaStreamIsCapturing", pCaptureStatus, NULL, NULL, NULL,
						    NULL, NULL));
}

RT_EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
					       unsigned long long *id_out, cudaGraph_t *graph_out,
					       const cudaGraphNode_t **dependencies_out,
					       const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
	struct rt_stream_ref st;
	cudaError_t e = rt_stream_of(stream, &st);

	return rt_set_error(e ? e : rt_capture_info(&st, "cudaStreamGetCaptureInfo", captureStatus_out, id_out,
						    graph_out, dependencies_out, edgeData_out,
						    numDependencies_out));
}

RT_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
	return rt_set_error(rt_capture_mode_exchange(mode));
}

static cudaError_t instantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags,
			       const struct rt_stream_ref *upload, const char *call)
{
	struct rt_graph *g = rt_graph_get(graph);
	struct rt_graph_exec *x;
	cudaError_t e = rt_need(rt_ensure(), pGraphExec && g);

	if (e)
		return e;
	e = rt_graph_instantiate(g, flags, upload, call, &x);
	if (!e)
		*pGraphExec = (cudaGraphExec_t)x;
	return e;
}

RT_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
					   unsigned long long flags)
{
	return rt_set_error(instantiate(pGraphExec, graph, flags, NULL, "cudaGraphInstantiate"));
}

RT_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
						    unsigned long long flags)
{
	return rt_set_error(instantiate(pGraphExec, graph, flags, NULL, "cudaGraphInstantiateWithFlags"));
}

RT_EXPORT cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
						     cudaGraphInstantiateParams *params)
{
	struct rt_stream_ref st;
	cudaError_t e;

	if (!params)
		return rt_set_error(cudaErrorInvalidValue);
	/* the upload stream means something only with the Upload flag */
	e = (params->flags & cudaGraphInstantiateFlagUpload) ? rt_stream_of(params->uploadStream, &st) : cudaSuccess;
	if (!e)
		e = instantiate(pGraphExec, graph, params->flags,
				(params->flags & cudaGraphInstantiateFlagUpload) ? &st : NULL,
				"cudaGraphInstantiateWithParams");
	params->errNode_out = NULL;
	params->result_out = e ? cudaGraphInstantiateError : cudaGraphInstantiateSuccess;
	return rt_set_error(e);
}

/* the instantiation flags, Upload aside (it leaves nothing in the executable graph) */
RT_EXPORT cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t graphExec, unsigned long long *flags)
{
	cudaError_t e = rt_ensure();
	struct rt_graph_exec *x = e ? NULL : rt_graph_exec_get(graphExec);

	if (!e && (!x || !flags))
		e = cudaErrorInvalidValue;
	if (!e)
		*flags = x->flags;
	return rt_set_error(e);
}

/* a launch or an upload (run) of graphExec into stream */
static cudaError_t graph_run(cudaGraphExec_t graphExec, cudaStream_t stream,
			     cudaError_t (*run)(struct rt_graph_exec *, const struct rt_stream_ref *))
{
	struct rt_graph_exec *x = rt_graph_exec_get(graphExec);
	struct rt_stream_ref st;
	cudaError_t e;

	if (!x)
		return rt_set_error(cudaErrorInvalidValue);
	e = rt_stream_of(stream, &st);
	return rt_set_error(e ? e : run(x, &st));
}

RT_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	return graph_run(graphExec, stream, rt_graph_launch);
}

RT_EXPORT cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	return graph_run(graphExec, stream, rt_graph_upload);
}

/* connects, then destroys the graph g or the executable graph x (the one
 * given: NULL where the handle named none) */
static cudaError_t graph_destroy(struct rt_graph *g, struct rt_graph_exec *x)
{
	cudaError_t e = rt_ensure();

	if (!e && !g && !x)
		e = cudaErrorInvalidValue;
	return rt_set_error(e ? e : g ? rt_graph_destroy(g) : rt_graph_exec_destroy(x));
}

RT_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph) { return graph_destroy(rt_graph_get(graph), NULL); }

RT_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
	return graph_destroy(NULL, rt_graph_exec_get(graphExec));
}

RT_EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes)
{
	struct rt_graph *g = rt_graph_get(graph);
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	if (!g || !numNodes)
		return rt_set_error(cudaErrorInvalidValue);
	if (g->built)
		return rt_set_error(rt_graph_nodes(g, false, (void **)nodes, numNodes));
	if (nodes) {
		rt_log_unsupported("cudaGraphGetNodes with a node array (node handles)");
		return rt_set_error(cudaErrorNotSupported);
	}
	return rt_set_error(rt_graph_node_count(g, numNodes));
}
