// SPDX-License-Identifier: MIT
/*
 * Entry points of `--default-stream per-thread` builds (_ptsz/_ptds): the
 * same calls, except that stream 0 means the calling thread's own default
 * stream. One table; each line makes one wrapper.
 */
/* the table holds cuda_runtime_api.h's deprecated count-byte array copies
 * (cudaMemcpyToArray ...), which programs still call: their wrappers call them */
#define CUDA_ENABLE_DEPRECATED
#include "rt.h"

#define PER_THREAD_ENTRIES(X)                                                                           \
	X(cudaLaunchKernel, _ptsz, (const void *f, dim3 g, dim3 b, void **a, size_t m, cudaStream_t s),   \
	  (f, g, b, a, m, s))                                                                             \
	X(__cudaLaunchKernel, _ptsz, (cudaKernel_t f, dim3 g, dim3 b, void **a, size_t m, cudaStream_t s), \
	  (f, g, b, a, m, s))                                                                             \
	X(cudaLaunchCooperativeKernel, _ptsz,                                                           \
	  (const void *f, dim3 g, dim3 b, void **a, size_t m, cudaStream_t s), (f, g, b, a, m, s))       \
	X(cudaLaunchKernelExC, _ptsz, (const cudaLaunchConfig_t *c, const void *f, void **a), (c, f, a)) \
	X(cudaMemcpy, _ptds, (void *d, const void *s, size_t n, enum cudaMemcpyKind k), (d, s, n, k))    \
	X(cudaMemcpyAsync, _ptsz,                                                                       \
	  (void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st), (d, s, n, k, st))  \
	X(cudaMemcpyBatchAsync, _ptsz,                                                                  \
	  (void *const *d, const void *const *s, const size_t *n, size_t c, struct cudaMemcpyAttributes *a, \
	   size_t *i, size_t na, cudaStream_t st), (d, s, n, c, a, i, na, st))                            \
	X(cudaMemcpy2D, _ptds,                                                                          \
	  (void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k),     \
	  (d, dp, s, sp, w, h, k))                                                                        \
	X(cudaMemcpy2DAsync, _ptsz,                                                                     \
	  (void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k,      \
	   cudaStream_t st), (d, dp, s, sp, w, h, k, st))                                                \
	X(cudaMemcpy2DToArray, _ptds,                                                                   \
	  (cudaArray_t a, size_t x, size_t y, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k), \
	  (a, x, y, s, sp, w, h, k))                                                                      \
	X(cudaMemcpy2DToArrayAsync, _ptsz,                                                              \
	  (cudaArray_t a, size_t x, size_t y, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k, \
	   cudaStream_t st), (a, x, y, s, sp, w, h, k, st))                                               \
	X(cudaMemcpy2DFromArray, _ptds,                                                                 \
	  (void *d, size_t dp, cudaArray_const_t a, size_t x, size_t y, size_t w, size_t h, enum cudaMemcpyKind k), \
	  (d, dp, a, x, y, w, h, k))                                                                      \
	X(cudaMemcpy2DFromArrayAsync, _ptsz,                                                            \
	  (void *d, size_t dp, cudaArray_const_t a, size_t x, size_t y, size_t w, size_t h, enum cudaMemcpyKind k, \
	   cudaStream_t st), (d, dp, a, x, y, w, h, k, st))                                               \
	X(cudaMemcpyToArray, _ptds,                                                                     \
	  (cudaArray_t a, size_t x, size_t y, const void *s, size_t n, enum cudaMemcpyKind k), (a, x, y, s, n, k)) \
	X(cudaMemcpyToArrayAsync, _ptsz,                                                                \
	  (cudaArray_t a, size_t x, size_t y, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st), \
	  (a, x, y, s, n, k, st))                                                                         \
	X(cudaMemcpyFromArray, _ptds,                                                                   \
	  (void *d, cudaArray_const_t a, size_t x, size_t y, size_t n, enum cudaMemcpyKind k), (d, a, x, y, n, k)) \
	X(cudaMemcpyFromArrayAsync, _ptsz,                                                              \
	  (void *d, cudaArray_const_t a, size_t x, size_t y, size_t n, enum cudaMemcpyKind k, cudaStream_t st), \
	  (d, a, x, y, n, k, st))                                                                         \
	X(cudaMemcpy2DArrayToArray, _ptds,                                                              \
	  (cudaArray_t d, size_t dx, size_t dy, cudaArray_const_t s, size_t sx, size_t sy, size_t w, size_t h,  \
	   enum cudaMemcpyKind k), (d, dx, dy, s, sx, sy, w, h, k))                                        \
	X(cudaMemcpyArrayToArray, _ptds,                                                                \
	  (cudaArray_t d, size_t dx, size_t dy, cudaArray_const_t s, size_t sx, size_t sy, size_t n,      \
	   enum cudaMemcpyKind k), (d, dx, dy, s, sx, sy, n, k))                                           \
	X(cudaMemcpy3D, _ptds, (const struct cudaMemcpy3DParms *p), (p))                               \
	X(cudaMemcpy3DAsync, _ptsz, (const struct cudaMemcpy3DParms *p, cudaStream_t st), (p, st))      \
	X(cudaMemcpyToSymbol, _ptds, (const void *y, const void *s, size_t n, size_t o, enum cudaMemcpyKind k), \
	  (y, s, n, o, k))                                                                                \
	X(cudaMemcpyFromSymbol, _ptds, (void *d, const void *y, size_t n, size_t o, enum cudaMemcpyKind k), \
	  (d, y, n, o, k))                                                                                \
	X(cudaMemcpyToSymbolAsync, _ptsz,                                                               \
	  (const void *y, const void *s, size_t n, size_t o, enum cudaMemcpyKind k, cudaStream_t st),    \
	  (y, s, n, o, k, st))                                                                            \
	X(cudaMemcpyFromSymbolAsync, _ptsz,                                                             \
	  (void *d, const void *y, size_t n, size_t o, enum cudaMemcpyKind k, cudaStream_t st),          \
	  (d, y, n, o, k, st))                                                                            \
	X(cudaMemset, _ptds, (void *p, int v, size_t n), (p, v, n))                                    \
	X(cudaMemsetAsync, _ptsz, (void *p, int v, size_t n, cudaStream_t s), (p, v, n, s))             \
	X(cudaMemPrefetchAsync, _ptsz,                                                                  \
	  (const void *p, size_t n, struct cudaMemLocation l, unsigned f, cudaStream_t s), (p, n, l, f, s)) \
	X(cudaMemset2D, _ptds, (void *p, size_t pi, int v, size_t w, size_t h), (p, pi, v, w, h))      \
	X(cudaMemset2DAsync, _ptsz, (void *p, size_t pi, int v, size_t w, size_t h, cudaStream_t s),    \
	  (p, pi, v, w, h, s))                                                                            \
	X(cudaMemset3D, _ptds, (struct cudaPitchedPtr p, int v, struct cudaExtent e), (p, v, e))        \
	X(cudaMemset3DAsync, _ptsz, (struct cudaPitchedPtr p, int v, struct cudaExtent e, cudaStream_t s), \
	  (p, v, e, s))                                                                                   \
	X(cudaStreamSynchronize, _ptsz, (cudaStream_t s), (s))                                         \
	X(cudaStreamQuery, _ptsz, (cudaStream_t s), (s))                                               \
	X(cudaStreamWaitEvent, _ptsz, (cudaStream_t s, cudaEvent_t e, unsigned f), (s, e, f))            \
	X(cudaStreamGetFlags, _ptsz, (cudaStream_t s, unsigned *f), (s, f))                            \
	X(cudaStreamGetPriority, _ptsz, (cudaStream_t s, int *p), (s, p))                              \
	X(cudaStreamGetDevice, _ptsz, (cudaStream_t s, int *d), (s, d))                                \
	X(cudaStreamGetId, _ptsz, (cudaStream_t s, unsigned long long *i), (s, i))                     \
	X(cudaStreamAttachMemAsync, _ptsz, (cudaStream_t s, void *p, size_t n, unsigned f), (s, p, n, f)) \
	X(cudaStreamGetAttribute, _ptsz, (cudaStream_t s, cudaStreamAttrID a, cudaStreamAttrValue *v), (s, a, v)) \
	X(cudaStreamSetAttribute, _ptsz, (cudaStream_t s, cudaStreamAttrID a, const cudaStreamAttrValue *v),   \
	  (s, a, v))                                                                                      \
	X(cudaStreamCopyAttributes, _ptsz, (cudaStream_t d, cudaStream_t s), (d, s))                   \
	X(cudaEventRecord, _ptsz, (cudaEvent_t e, cudaStream_t s), (e, s))                             \
	X(cudaEventRecordWithFlags, _ptsz, (cudaEvent_t e, cudaStream_t s, unsigned f), (e, s, f))       \
	X(cudaLaunchHostFunc, _ptsz, (cudaStream_t s, cudaHostFn_t f, void *u), (s, f, u))             \
	X(cudaStreamAddCallback, _ptsz, (cudaStream_t s, cudaStreamCallback_t c, void *u, unsigned f),   \
	  (s, c, u, f))                                                                                   \
	X(cudaMallocAsync, _ptsz, (void **p, size_t n, cudaStream_t s), (p, n, s))                     \
	X(cudaFreeAsync, _ptsz, (void *p, cudaStream_t s), (p, s))                                     \
	X(cudaMallocFromPoolAsync, _ptsz, (void **p, size_t n, cudaMemPool_t m, cudaStream_t s), (p, n, m, s)) \
	X(cudaStreamBeginCapture, _ptsz, (cudaStream_t s, enum cudaStreamCaptureMode m), (s, m))        \
	X(cudaStreamEndCapture, _ptsz, (cudaStream_t s, cudaGraph_t *g), (s, g))                       \
	X(cudaStreamIsCapturing, _ptsz, (cudaStream_t s, enum cudaStreamCaptureStatus *c), (s, c))      \
	X(cudaStreamGetCaptureInfo, _ptsz,                                                              \
	  (cudaStream_t s, enum cudaStreamCaptureStatus *c, unsigned long long *i, cudaGraph_t *g,       \
	   const cudaGraphNode_t **d, const cudaGraphEdgeData **e, size_t *n), (s, c, i, g, d, e, n))    \
	X(cudaGraphInstantiateWithParams, _ptsz, (cudaGraphExec_t *x, cudaGraph_t g, cudaGraphInstantiateParams *p), \
	  (x, g, p))                                                                                      \
	X(cudaGraphUpload, _ptsz, (cudaGraphExec_t x, cudaStream_t s), (x, s))                         \
	X(cudaGraphLaunch, _ptsz, (cudaGraphExec_t x, cudaStream_t s), (x, s))                         \
	X(cudaGetDriverEntryPoint, _ptsz,                                                               \
	  (const char *y, void **f, unsigned long long l, enum cudaDriverEntryPointQueryResult *q), (y, f, l, q)) \
	X(cudaGetDriverEntryPointByVersion, _ptsz,                                                      \
	  (const char *y, void **f, unsigned int v, unsigned long long l, enum cudaDriverEntryPointQueryResult *q), \
	  (y, f, v, l, q))

#define PER_THREAD_WRAPPER(name, suffix, params, args)          \
	RT_EXPORT cudaError_t name##suffix params;              \
	RT_EXPORT cudaError_t name##suffix params               \
	{                                                       \
		int saved = rt_tls.ptds;                        \
		cudaError_t r;                                  \
		rt_tls.ptds = 1;                                \
		r = name args;                                  \
		rt_tls.ptds = saved;                            \
		return r;                                       \
	}

PER_THREAD_ENTRIES(PER_THREAD_WRAPPER)
