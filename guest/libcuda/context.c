// SPDX-License-Identifier: MIT
/*
 * Contexts: a context is one vGPU (cu.h). Kept in the process: the primary
 * contexts, created ones, and each thread's stack of current contexts.
 */
#include <stdlib.h>

#include <cudaProfiler.h>

#include "mearas/log.h"
#include "cu.h"

#define CTX_MAGIC 0x6d437478u
#define STACK_MAX 32

static struct cu_ctx primaries[MEARAS_MAX_VGPUS];
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long next_id = 1;

static __thread struct cu_ctx *stack[STACK_MAX];
static __thread unsigned depth;

struct cu_ctx *cu_primary(int vgpu)
{
	struct cu_ctx *c = &primaries[vgpu];

	if (!c->magic) {
		pthread_mutex_lock(&ctx_lock);
		if (!c->magic) {
			c->vgpu = vgpu;
			c->primary = true;
			c->id = next_id++;
			__atomic_store_n(&c->magic, CTX_MAGIC, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&ctx_lock);
	}
	return c;
}

struct cu_ctx *cu_ctx_get(CUcontext h)
{
	struct cu_ctx *c = (struct cu_ctx *)h;

	return c && __atomic_load_n(&c->magic, __ATOMIC_ACQUIRE) == CTX_MAGIC ? c : NULL;
}

struct cu_ctx *cu_current(void)
{
	return depth ? stack[depth - 1] : NULL;
}

void cu_set_current(struct cu_ctx *c)
{
	if (!c) {
		if (depth)
			depth--;
	} else {
		if (!depth)
			depth = 1;
		stack[depth - 1] = c;
		if (c->primary)
			c->active = true;
	}
	if (depth)
		rt_tls.device = stack[depth - 1]->vgpu;
}

CUresult cu_current_ctx(struct cu_ctx **out)
{
	CUresult r = cu_ready();

	if (r)
		return r;
	*out = cu_current();
	return *out ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_INVALID_CONTEXT);
}

/* ctx, or the current context when ctx is NULL */
static CUresult ctx_or_current(CUcontext ctx, struct cu_ctx **out)
{
	void *c;
	CUresult r;

	if (!ctx)
		return cu_current_ctx(out);
	r = cu_handle(ctx, CU_CTX_OBJ, CUDA_ERROR_INVALID_CONTEXT, &c);
	*out = c;
	return r;
}

static CUresult check_dev(CUdevice dev)
{
	CUresult r = cu_ready();

	if (r)
		return r;
	return dev >= 0 && (unsigned)dev < rt.nvgpus ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_INVALID_DEVICE);
}

/* op on the vGPU of ctx (the current context when ctx is NULL) */
static CUresult ctx_op(CUcontext ctx, cudaError_t (*op)(int))
{
	struct cu_ctx *c;
	CUresult r = ctx_or_current(ctx, &c);

	return r ? r : cu_result(op(c->vgpu));
}

/* where c's cache preference is kept: a primary context's is its device's,
 * which the runtime's cudaDeviceSetCacheConfig sets too */
static int *ctx_cache_config(struct cu_ctx *c)
{
	return c->primary ? &rt.v[c->vgpu].cache_config : &c->cache_config;
}

/* what cuCtxGet* answer */
enum ctx_attr { CTX_DEVICE, CTX_FLAGS, CTX_ID, CTX_API_VERSION, CTX_CACHE_CONFIG };

/* the capabilities level every current driver reports */
#define CTX_API_LEVEL 3020

/* cuCtxGet*: of ctx (the current context when ctx is NULL), the answer into out */
static CUresult ctx_attr(CUcontext ctx, enum ctx_attr what, void *out)
{
	struct cu_ctx *c;
	CUresult r = cu_need(ctx_or_current(ctx, &c), out);

	if (r)
		return r;
	switch (what) {
	case CTX_DEVICE:
		*(CUdevice *)out = c->vgpu;
		break;
	case CTX_FLAGS:
		*(unsigned int *)out = c->flags;
		break;
	case CTX_ID:
		*(unsigned long long *)out = c->id;
		break;
	case CTX_API_VERSION:
		/* a primary context nobody retained or made current is not usable yet */
		if (c->primary && !c->active)
			return CU_REFUSE(CUDA_ERROR_INVALID_CONTEXT);
		*(unsigned int *)out = CTX_API_LEVEL;
		break;
	case CTX_CACHE_CONFIG:
		*(CUfunc_cache *)out = (CUfunc_cache)*ctx_cache_config(c);
		break;
	}
	return CUDA_SUCCESS;
}

/* ---- primary contexts ---- */

CU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	struct cu_ctx *c;
	CUresult r = cu_need(check_dev(dev), pctx);

	if (r)
		return r;
	c = cu_primary(dev);
	pthread_mutex_lock(&ctx_lock);
	c->refs++;
	c->active = true;
	pthread_mutex_unlock(&ctx_lock);
	*pctx = (CUcontext)c;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
	struct cu_ctx *c;
	bool last = false;
	CUresult r = check_dev(dev);

	if (r)
		return r;
	c = cu_primary(dev);
	pthread_mutex_lock(&ctx_lock);
	if (!c->refs) {
		pthread_mutex_unlock(&ctx_lock);
		return CU_REFUSE(CUDA_ERROR_INVALID_CONTEXT);
	}
	if (--c->refs == 0) {
		c->active = false;
		last = true;
	}
	pthread_mutex_unlock(&ctx_lock);
	if (last)
		cu_cls_destroy(c);
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
	struct cu_ctx *c;
	CUresult r = check_dev(dev);

	if (r)
		return r;
	c = cu_primary(dev);
	cu_cls_destroy(c);
	c->active = false;
	c->flags = 0;
	return cu_result(rt_device_reset(dev));
}

CU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	struct cu_ctx *c;
	CUresult r = cu_need(check_dev(dev), flags && active);

	if (r)
		return r;
	c = cu_primary(dev);
	*flags = c->flags;
	*active = c->active;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	CUresult r = check_dev(dev);

	if (r)
		return r;
	if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	cu_primary(dev)->flags = flags;
	return CUDA_SUCCESS;
}

/* ---- the current context ---- */

CU_EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
	return cu_answer(pctx, (CUcontext)cu_current());
}

CU_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
	struct cu_ctx *c = NULL;
	CUresult r = cu_ready();

	if (r)
		return r;
	if (ctx && !(c = cu_ctx_get(ctx)))
		return CU_REFUSE(CUDA_ERROR_INVALID_CONTEXT);
	cu_set_current(c);
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
	void *c;
	CUresult r = cu_handle(ctx, CU_CTX_OBJ, CUDA_ERROR_INVALID_CONTEXT, &c);

	if (r)
		return r;
	if (depth == STACK_MAX)
		return CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	stack[depth++] = c;
	cu_set_current(c);
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
	CUresult r = cu_ready();

	if (r)
		return r;
	if (!depth)
		return CU_REFUSE(CUDA_ERROR_INVALID_CONTEXT);
	if (pctx)
		*pctx = (CUcontext)stack[depth - 1];
	cu_set_current(NULL);
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
	return ctx_attr(NULL, CTX_DEVICE, device);
}

CU_EXPORT CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	return ctx_attr(ctx, CTX_DEVICE, device);
}

CU_EXPORT CUresult CUDAAPI cuCtxSynchronize(void)
{
	return ctx_op(NULL, rt_do_CTX_SYNC);
}

CU_EXPORT CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx)
{
	return ctx_op(ctx, rt_do_CTX_SYNC);
}

CU_EXPORT CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	return ctx_attr(ctx, CTX_API_VERSION, version);
}

CU_EXPORT CUresult CUDAAPI cuCtxGetFlags(unsigned int *flags)
{
	return ctx_attr(NULL, CTX_FLAGS, flags);
}

CU_EXPORT CUresult CUDAAPI cuCtxSetFlags(unsigned int flags)
{
	struct cu_ctx *c;
	CUresult r = cu_current_ctx(&c);

	if (r)
		return r;
	if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	c->flags = flags;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
	return ctx_attr(ctx, CTX_ID, ctxId);
}

/* ---- created contexts ---- */

static CUresult create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	struct cu_ctx *c;
	CUresult r = check_dev(dev);

	if (r)
		return r;
	if (!pctx || (flags & ~(unsigned)CU_CTX_FLAGS_MASK))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	c = calloc(1, sizeof(*c));
	if (!c)
		return CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	c->vgpu = dev;
	c->flags = flags;
	c->refs = 1;
	c->active = true;
	pthread_mutex_lock(&ctx_lock);
	c->id = next_id++;
	pthread_mutex_unlock(&ctx_lock);
	__atomic_store_n(&c->magic, CTX_MAGIC, __ATOMIC_RELEASE);
	/* a new context is pushed onto the caller's stack */
	if (depth == STACK_MAX) {
		c->magic = 0;
		free(c);
		return CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	}
	stack[depth++] = c;
	cu_set_current(c);
	*pctx = (CUcontext)c;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CU_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return create(pctx, flags, dev);
}

CU_EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
					  CUdevice dev)
{
	if (ctxCreateParams && (ctxCreateParams->execAffinityParams || ctxCreateParams->cigParams)) {
		log_warn("cuCtxCreate with execution affinity or CIG parameters is not supported by mearas");
		return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
	}
	return create(pctx, flags, dev);
}

/*
 * A created context shares its vGPU with the primary one: its memory and
 * modules stay until the vGPU is reset (a limit of the model, documented
 * in docs/driver-api.md).
 */
CU_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
	struct cu_ctx *c;
	void *o;
	CUresult r = cu_handle(ctx, CU_CTX_OBJ, CUDA_ERROR_INVALID_CONTEXT, &o);

	if (r)
		return r;
	c = o;
	if (c->primary)
		return CU_REFUSE(CUDA_ERROR_INVALID_CONTEXT);
	cu_cls_destroy(c);
	for (unsigned i = 0; i < depth; i++)
		if (stack[i] == c) {
			for (unsigned j = i; j + 1 < depth; j++)
				stack[j] = stack[j + 1];
			depth--;
			i--;
		}
	if (depth)
		rt_tls.device = stack[depth - 1]->vgpu;
	__atomic_store_n(&c->magic, 0, __ATOMIC_RELEASE);
	free(c);
	return CUDA_SUCCESS;
}

/* ---- limits and configuration of the current context ---- */

CU_EXPORT CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value)
{
	struct cu_ctx *c;
	CUresult r = cu_current_ctx(&c);

	return r ? r : cu_result(rt_do_DEVICE_SET_LIMIT(c->vgpu, (uint32_t)limit, value));
}

CU_EXPORT CUresult CUDAAPI cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	struct cu_ctx *c;
	uint64_t v;
	CUresult r = cu_need(cu_current_ctx(&c), pvalue);

	if (r)
		return r;
	r = cu_result(rt_do_DEVICE_GET_LIMIT(c->vgpu, (uint32_t)limit, &v));
	if (!r)
		*pvalue = (size_t)v;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	struct cu_ctx *c;
	CUresult r = cu_current_ctx(&c);

	if (r)
		return r;
	/* the range of every GPU mearas serves; streams clamp to it (guest/core/objects.c) */
	if (leastPriority)
		*leastPriority = RT_PRIORITY_LEAST;
	if (greatestPriority)
		*greatestPriority = RT_PRIORITY_GREATEST;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
	return ctx_attr(NULL, CTX_CACHE_CONFIG, pconfig);
}

/* a preference only, kept to be read back: the GPU behind the vGPU chooses */
CU_EXPORT CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache config)
{
	struct cu_ctx *c;
	CUresult r = cu_current_ctx(&c);

	if (r)
		return r;
	if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	*ctx_cache_config(c) = (int)config;
	return CUDA_SUCCESS;
}

/* Nothing persists in the L2 cache: launch attributes that would make lines
 * persist (an access policy window) are refused (guest/core/launchattr.c) */
CU_EXPORT CUresult CUDAAPI cuCtxResetPersistingL2Cache(void)
{
	struct cu_ctx *c;

	return cu_current_ctx(&c);
}

/* Shared memory bank sizes are fixed (four bytes) on every GPU CUDA 13
 * runs on: the setting is accepted and changes nothing, as there. */
CU_EXPORT CUresult CUDAAPI cuCtxGetSharedMemConfig(CUsharedconfig *pConfig)
{
	struct cu_ctx *c;
	CUresult r = cu_current_ctx(&c);

	if (r)
		return r;
	if (!pConfig)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	*pConfig = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuCtxSetSharedMemConfig(CUsharedconfig config)
{
	struct cu_ctx *c;
	CUresult r = cu_current_ctx(&c);

	if (r)
		return r;
	return (unsigned)config <= CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE ? CUDA_SUCCESS
									     : CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
}

/* the names before CUDA 11 (_v2 since): the same calls */
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxSetFlags
CU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev);
CU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
	return cuDevicePrimaryCtxRelease_v2(dev);
}

CU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev);
CU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
	return cuDevicePrimaryCtxReset_v2(dev);
}

CU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags);
CU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

/* ---- the profiler: started and stopped on the host for the vGPU ---- */

CU_EXPORT CUresult CUDAAPI cuProfilerStart(void)
{
	return ctx_op(NULL, rt_do_PROFILER_START);
}

CU_EXPORT CUresult CUDAAPI cuProfilerStop(void)
{
	return ctx_op(NULL, rt_do_PROFILER_STOP);
}

/* ---- peer access: vGPUs do not reach each other's memory (device.c) ---- */

CU_EXPORT CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
	struct cu_ctx *c;
	CUresult r = cu_current_ctx(&c);

	if (r)
		return r;
	if (!cu_ctx_get(peerContext))
		return CU_REFUSE(CUDA_ERROR_INVALID_CONTEXT);
	if (Flags)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	return CU_REFUSE(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
}

CU_EXPORT CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peerContext)
{
	struct cu_ctx *c;
	CUresult r = cu_current_ctx(&c);

	if (r)
		return r;
	return CU_REFUSE(cu_ctx_get(peerContext) ? CUDA_ERROR_PEER_ACCESS_NOT_ENABLED : CUDA_ERROR_INVALID_CONTEXT);
}

/* The runtime chose a device (cudaSetDevice): its primary context becomes
 * the thread's current one, so the driver's callers (a library's own
 * runtime, cuBLAS's for one) work on the same device. */
static void runtime_set_device(int vgpu)
{
	struct cu_ctx *c = cu_current();

	if (!c || c->vgpu != vgpu)
		cu_set_current(cu_primary(vgpu));
}

__attribute__((constructor)) static void follow_runtime(void)
{
	rt_on_set_device(runtime_set_device);
}
