// SPDX-License-Identifier: MIT
/*
 * Stream capture: the core's (guest/core/capture.c), on the current
 * context. Every ABI the driver still exports, each with its _ptsz twin;
 * the capture statuses and modes are the runtime's numbers.
 */
/* cuda.h as the driver's own build sees it: every ABI declared under its
 * exported name (the older ones too), no name #defined to another */
#define __CUDA_API_VERSION_INTERNAL
#include "ptds.h"
#include "cu.h"

static CUresult begin(CUstream hStream, CUstreamCaptureMode mode)
{
	struct rt_stream_ref st;
	CUresult r = cu_stream_ref(hStream, &st);

	return r ? r : cu_result(rt_capture_begin(&st, (int)mode));
}

static CUresult end(CUstream hStream, CUgraph *phGraph)
{
	struct rt_stream_ref st;
	struct rt_graph *g;
	CUresult r = cu_need(cu_stream_ref(hStream, &st), phGraph);

	if (r)
		return r;
	r = cu_result(rt_capture_end(&st, &g));
	if (!r)
		*phGraph = (CUgraph)g;
	return r;
}

static CUresult info(const char *call, CUstream hStream, CUstreamCaptureStatus *status, cuuint64_t *id_out,
		     CUgraph *graph, const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps)
{
	struct rt_stream_ref st;
	enum cudaStreamCaptureStatus s;
	unsigned long long id;
	CUresult r = cu_need(cu_stream_ref(hStream, &st), status);

	if (r)
		return r;
	/* CUgraph and CUgraphNode are the runtime's types; the edge data
	 * structs differ in name only */
	r = cu_result(rt_capture_info(&st, call, &s, &id, graph, deps, (const cudaGraphEdgeData **)edges, ndeps));
	if (r)
		return r;
	*status = (CUstreamCaptureStatus)s;
	if (id_out)
		*id_out = id;
	return CUDA_SUCCESS;
}

/* the entry point of CUDA 10.0, before modes: CUDA's default, global */
CU_EXPORT CUresult CUDAAPI cuStreamBeginCapture(CUstream h) { return begin(h, CU_STREAM_CAPTURE_MODE_GLOBAL); }
CU_EXPORT CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream h)
{
	return CU_PTSZ(begin(h, CU_STREAM_CAPTURE_MODE_GLOBAL));
}
CU_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode m) { return begin(h, m); }
CU_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode m)
{
	return CU_PTSZ(begin(h, m));
}
CU_EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream h, CUgraph *g) { return end(h, g); }
CU_EXPORT CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream h, CUgraph *g) { return CU_PTSZ(end(h, g)); }

CU_EXPORT CUresult CUDAAPI cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus *s)
{
	return info("cuStreamIsCapturing", h, s, NULL, NULL, NULL, NULL, NULL);
}
CU_EXPORT CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream h, CUstreamCaptureStatus *s)
{
	return CU_PTSZ(info("cuStreamIsCapturing_ptsz", h, s, NULL, NULL, NULL, NULL, NULL));
}

CU_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream h, CUstreamCaptureStatus *s, cuuint64_t *id)
{
	return info("cuStreamGetCaptureInfo", h, s, id, NULL, NULL, NULL, NULL);
}
CU_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_ptsz(CUstream h, CUstreamCaptureStatus *s, cuuint64_t *id)
{
	return CU_PTSZ(info("cuStreamGetCaptureInfo_ptsz", h, s, id, NULL, NULL, NULL, NULL));
}
CU_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream h, CUstreamCaptureStatus *s, cuuint64_t *id,
						     CUgraph *g, const CUgraphNode **d, size_t *n)
{
	return info("cuStreamGetCaptureInfo_v2", h, s, id, g, d, NULL, n);
}
CU_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v2_ptsz(CUstream h, CUstreamCaptureStatus *s, cuuint64_t *id,
							  CUgraph *g, const CUgraphNode **d, size_t *n)
{
	return CU_PTSZ(info("cuStreamGetCaptureInfo_v2_ptsz", h, s, id, g, d, NULL, n));
}
CU_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream h, CUstreamCaptureStatus *s, cuuint64_t *id,
						     CUgraph *g, const CUgraphNode **d, const CUgraphEdgeData **e,
						     size_t *n)
{
	return info("cuStreamGetCaptureInfo_v3", h, s, id, g, d, e, n);
}
CU_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream h, CUstreamCaptureStatus *s, cuuint64_t *id,
							  CUgraph *g, const CUgraphNode **d,
							  const CUgraphEdgeData **e, size_t *n)
{
	return CU_PTSZ(info("cuStreamGetCaptureInfo_v3_ptsz", h, s, id, g, d, e, n));
}

CU_EXPORT CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	enum cudaStreamCaptureMode m;
	CUresult r = cu_need(cu_ready(), mode);

	if (r)
		return r;
	m = (enum cudaStreamCaptureMode)*mode;
	r = cu_result(rt_capture_mode_exchange(&m));
	if (!r)
		*mode = (CUstreamCaptureMode)m;
	return r;
}
