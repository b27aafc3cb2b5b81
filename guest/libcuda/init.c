// SPDX-License-Identifier: MIT
/* cuInit and the driver version. */
#include "mearas/log.h"
#include "cu.h"

static int initialized;         /* cuInit succeeded */

CUresult cu_ready(void)
{
	/* a runtime call of mearas's libcudart connected the core: NVIDIA's
	 * runtime calls cuInit there too, so the driver is initialized */
	if (!__atomic_load_n(&initialized, __ATOMIC_ACQUIRE) && !(rt.region && !rt.init_err && rt.nvgpus))
		return CU_REFUSE(CUDA_ERROR_NOT_INITIALIZED);
	if (rt_stopped())
		return cu_result(rt_gone());
	return CUDA_SUCCESS;
}

CUresult cu_handle(void *h, enum cu_kind kind, CUresult bad, void **obj)
{
	CUresult r = cu_ready();

	*obj = NULL;
	if (r)
		return r;
	switch (kind) {
	case CU_STREAM_OBJ:
		*obj = rt_stream_get(h);
		break;
	case CU_EVENT_OBJ:
		*obj = rt_event_get(h);
		break;
	case CU_GRAPH_OBJ:
		*obj = rt_graph_get(h);
		break;
	case CU_GRAPH_EXEC_OBJ:
		*obj = rt_graph_exec_get(h);
		break;
	case CU_NODE_OBJ:
		*obj = rt_gnode_get(h);
		break;
	case CU_POOL_OBJ:
		*obj = rt_pool_get(h);
		break;
	case CU_CTX_OBJ:
		*obj = cu_ctx_get(h);
		break;
	}
	return *obj ? CUDA_SUCCESS : CU_REFUSE(bad);
}

CU_EXPORT CUresult CUDAAPI cuInit(unsigned int Flags)
{
	cudaError_t e;

	if (Flags)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	e = rt_ensure();
	if (e) {
		/* no mearasd to reach: to the program, a machine without GPUs */
		if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorInitializationError)
			return CU_REFUSE(CUDA_ERROR_NO_DEVICE);
		return cu_result(e);
	}
	if (!rt.nvgpus)
		return CU_REFUSE(CUDA_ERROR_NO_DEVICE);
	__atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	*driverVersion = CU_DRIVER_VERSION;
	return CUDA_SUCCESS;
}
