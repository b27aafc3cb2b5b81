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
	return rt_set_error(rt_stream_call(stream, MEARAS_OP_CAPTURE_BEGIN, (uint64_t)mode, false, NULL, NULL));
}

RT_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
	struct rt_graph *g;
	cudaError_t e;

	if (!pGraph)
		return rt_set_error(cudaErrorInvalidValue);
	g = calloc(1, sizeof(*g));
	if (!g)
		return rt_set_error(cudaErrorMemoryAllocation);
	g->magic = GRAPH_MAGIC;
	g->id = rt_new_handle();
	e = rt_stream_call(stream, MEARAS_OP_CAPTURE_END, g->id, true, NULL, &g->vgpu);
	if (e) {
		free(g);
		return rt_set_error(e);
	}
	*pGraph = (cudaGraph_t)g;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
	struct mearas_cqe cqe;
	cudaError_t e;

	if (!pCaptureStatus)
		return rt_set_error(cudaErrorInvalidValue);
	e = rt_stream_call(stream, MEARAS_OP_CAPTURE_STATUS, 0, true, &cqe, NULL);
	if (e)
		return rt_set_error(e);
	*pCaptureStatus = (enum cudaStreamCaptureStatus)cqe.val[0];
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
					   unsigned long long flags)
{
	struct rt_graph *g = (struct rt_graph *)graph, *x;
	struct rt_call c;
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
	rt_call_init(&c, MEARAS_OP_GRAPH_INSTANTIATE, 0);
	c.sqe.args.a[0] = g->id;
	c.sqe.args.a[1] = x->id;
	e = rt_call(g->vgpu, &c, NULL);
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
	int vgpu;
	cudaError_t e;

	if (!x || x->magic != EXEC_MAGIC)
		return rt_set_error(cudaErrorInvalidValue);
	e = rt_ensure();
	if (!e) {
		struct rt_stream_ref st;

		e = rt_stream_ref(stream, &st);
		if (!e && st.vgpu != x->vgpu)
			e = cudaErrorInvalidValue;
	}
	if (e)
		return rt_set_error(e);
	return rt_set_error(rt_stream_call(stream, MEARAS_OP_GRAPH_LAUNCH, x->id, false, NULL, &vgpu));
}

static cudaError_t destroy(void *h, uint32_t magic, unsigned op)
{
	struct rt_graph *g = h;
	struct rt_call c;
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	if (!g || g->magic != magic)
		return cudaErrorInvalidValue;
	rt_call_init(&c, op, 0);
	c.sqe.args.a[0] = g->id;
	e = rt_post(g->vgpu, &c);
	g->magic = 0;
	free(g);
	return e;
}

RT_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
	return rt_set_error(destroy(graph, GRAPH_MAGIC, MEARAS_OP_GRAPH_DESTROY));
}

RT_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
	return rt_set_error(destroy(graphExec, EXEC_MAGIC, MEARAS_OP_GRAPH_EXEC_DESTROY));
}

RT_EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes)
{
	struct rt_graph *g = (struct rt_graph *)graph;
	struct rt_call c;
	struct mearas_cqe cqe;
	cudaError_t e = rt_ensure();

	if (e)
		return rt_set_error(e);
	if (!g || g->magic != GRAPH_MAGIC || !numNodes)
		return rt_set_error(cudaErrorInvalidValue);
	if (nodes) {
		rt_log_unsupported("cudaGraphGetNodes with a node array (node handles)");
		return rt_set_error(cudaErrorNotSupported);
	}
	rt_call_init(&c, MEARAS_OP_GRAPH_NODE_COUNT, 0);
	c.sqe.args.a[0] = g->id;
	e = rt_call(g->vgpu, &c, &cqe);
	if (e)
		return rt_set_error(e);
	*numNodes = cqe.val[0];
	return cudaSuccess;
}
