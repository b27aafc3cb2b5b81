// SPDX-License-Identifier: MIT
/* Graphs by stream capture: the back end captures the records it runs on
 * the stream, so everything that can be posted can be captured. */
#include <stdlib.h>

#include "rt.h"

#define GRAPH_MAGIC 0x6d477268u
#define EXEC_MAGIC  0x6d457865u

struct rt_graph {
	uint32_t magic;
	uint32_t id;
	int vgpu;
};

RT_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
	if ((unsigned)mode > cudaStreamCaptureModeRelaxed)
		return rt_set_error(cudaErrorInvalidValue);
	if (stream == NULL || stream == cudaStreamLegacy)
		return rt_set_error(cudaErrorStreamCaptureUnsupported);
	{
		struct rt_stream_ref st;
		cudaError_t e = rt_stream_of(stream, &st);

		return rt_set_error(e ? e : rt_do_CAPTURE_BEGIN(st.vgpu, &st, (uint64_t)mode));
	}
}

RT_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
	struct rt_stream_ref st;
	struct rt_graph *g;
	cudaError_t e;

	if (!pGraph)
		return rt_set_error(cudaErrorInvalidValue);
	e = rt_stream_of(stream, &st);
	if (e)
		return rt_set_error(e);
	g = calloc(1, sizeof(*g));
	if (!g)
		return rt_set_error(cudaErrorMemoryAllocation);
	g->magic = GRAPH_MAGIC;
	g->id = rt_new_handle();
	g->vgpu = st.vgpu;
	e = rt_do_CAPTURE_END(st.vgpu, &st, g->id);
	if (e) {
		free(g);
		return rt_set_error(e);
	}
	*pGraph = (cudaGraph_t)g;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
	struct rt_stream_ref st;
	int32_t status;
	cudaError_t e;

	if (!pCaptureStatus)
		return rt_set_error(cudaErrorInvalidValue);
	e = rt_stream_of(stream, &st);
	if (!e)
		e = rt_do_CAPTURE_STATUS(st.vgpu, &st, &status);
	if (e)
		return rt_set_error(e);
	*pCaptureStatus = (enum cudaStreamCaptureStatus)status;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
					   unsigned long long flags)
{
	struct rt_graph *g = (struct rt_graph *)graph, *x;
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	if (!pGraphExec || !g || g->magic != GRAPH_MAGIC || flags)
		return rt_set_error(cudaErrorInvalidValue);
	x = calloc(1, sizeof(*x));
	if (!x)
		return rt_set_error(cudaErrorMemoryAllocation);
	x->magic = EXEC_MAGIC;
	x->id = rt_new_handle();
	x->vgpu = g->vgpu;
	e = rt_do_GRAPH_INSTANTIATE(g->vgpu, g->id, x->id);
	if (e) {
		free(x);
		return rt_set_error(e);
	}
	*pGraphExec = (cudaGraphExec_t)x;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
						    unsigned long long flags)
{
	return cudaGraphInstantiate(pGraphExec, graph, flags);
}

RT_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	struct rt_graph *x = (struct rt_graph *)graphExec;
	struct rt_stream_ref st;
	cudaError_t e;

	if (!x || x->magic != EXEC_MAGIC)
		return rt_set_error(cudaErrorInvalidValue);
	e = rt_stream_of(stream, &st);
	if (!e && st.vgpu != x->vgpu)
		e = cudaErrorInvalidValue;
	return rt_set_error(e ? e : rt_do_GRAPH_LAUNCH(st.vgpu, &st, x->id));
}

static cudaError_t destroy(void *h, uint32_t magic)
{
	struct rt_graph *g = h;
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	if (!g || g->magic != magic)
		return cudaErrorInvalidValue;
	e = magic == GRAPH_MAGIC ? rt_do_GRAPH_DESTROY(g->vgpu, g->id) : rt_do_GRAPH_EXEC_DESTROY(g->vgpu, g->id);
	g->magic = 0;
	free(g);
	return e;
}

RT_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
	return rt_set_error(destroy(graph, GRAPH_MAGIC));
}

RT_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
	return rt_set_error(destroy(graphExec, EXEC_MAGIC));
}

RT_EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes)
{
	struct rt_graph *g = (struct rt_graph *)graph;
	uint64_t n;
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	if (!g || g->magic != GRAPH_MAGIC || !numNodes)
		return rt_set_error(cudaErrorInvalidValue);
	if (nodes) {
		rt_log_unsupported("cudaGraphGetNodes with a node array (node handles)");
		return rt_set_error(cudaErrorNotSupported);
	}
	e = rt_do_GRAPH_NODE_COUNT(g->vgpu, g->id, &n);
	if (e)
		return rt_set_error(e);
	*numNodes = n;
	return cudaSuccess;
}
