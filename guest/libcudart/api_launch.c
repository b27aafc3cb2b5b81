// SPDX-License-Identifier: MIT
/* Kernel launches: posted without waiting; the configuration is checked
 * here against the vGPU's limits so misuse fails at once, as in CUDA. */
#include <string.h>

#include "mearas/fatbin.h"
#include "mearas/log.h"
#include "rt.h"

struct call_config {
	dim3 grid, block;
	size_t smem;
	cudaStream_t stream;
};

/* <<<...>>> pushes, the generated stub pops: a small per-thread stack */
#define CONFIG_DEPTH 16
static __thread struct call_config config_stack[CONFIG_DEPTH];
static __thread unsigned config_top;

RT_EXPORT unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
					       struct CUstream_st *stream)
{
	if (config_top >= CONFIG_DEPTH)
		return 1;
	config_stack[config_top++] = (struct call_config){ gridDim, blockDim, sharedMem, stream };
	return 0;
}

RT_EXPORT cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
						 void *stream)
{
	struct call_config *c;

	if (!config_top)
		return cudaErrorInvalidConfiguration;
	c = &config_stack[--config_top];
	*gridDim = c->grid;
	*blockDim = c->block;
	*sharedMem = c->smem;
	*(cudaStream_t *)stream = c->stream;
	return cudaSuccess;
}

cudaError_t rt_launch_check(int vgpu, dim3 g, dim3 b, size_t smem)
{
	const struct cudaDeviceProp *p = &rt.v[vgpu].prop;
	uint64_t threads = (uint64_t)b.x * b.y * b.z;

	if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z)
		return cudaErrorInvalidConfiguration;
	if (threads > (uint64_t)p->maxThreadsPerBlock || b.x > (unsigned)p->maxThreadsDim[0] ||
	    b.y > (unsigned)p->maxThreadsDim[1] || b.z > (unsigned)p->maxThreadsDim[2])
		return cudaErrorInvalidValue;
	if (g.x > (unsigned)p->maxGridSize[0] || g.y > (unsigned)p->maxGridSize[1] ||
	    g.z > (unsigned)p->maxGridSize[2])
		return cudaErrorInvalidValue;
	if (smem > p->sharedMemPerBlockOptin)
		return cudaErrorInvalidValue;
	return cudaSuccess;
}

#define NO_CLUSTER ((const uint32_t[3]){ 0, 0, 0 })

static cudaError_t launch(struct rt_func *f, dim3 grid, dim3 block, const uint32_t cluster[3], void **args,
			  size_t smem, cudaStream_t stream, uint32_t flags)
{
	struct rt_stream_ref st;
	uint8_t params[MEARAS_MAX_PARAM_BYTES];
	uint32_t len;
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	if (!f)
		return cudaErrorInvalidResourceHandle;
	e = rt_stream_ref(stream, &st);
	if (e)
		return e;
	e = rt_launch_check(st.vgpu, grid, block, smem);
	if (e)
		return e;
	e = rt_func_ready(f, st.vgpu);
	if (e)
		return e;
	e = rt_func_pack(f, args, params, &len);
	if (e)
		return e;
	return rt_do_LAUNCH(st.vgpu, &st, rt_func_id(f), (const uint32_t[3]){ grid.x, grid.y, grid.z },
			    (const uint32_t[3]){ block.x, block.y, block.z }, cluster, smem, flags, params,
			    len, false);
}

RT_EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
				       size_t sharedMem, cudaStream_t stream)
{
	return rt_set_error(launch(rt_func_by_host(func), gridDim, blockDim, NO_CLUSTER, args, sharedMem, stream, 0));
}

RT_EXPORT cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
						  size_t sharedMem, cudaStream_t stream)
{
	return rt_set_error(launch(rt_func_by_host(func), gridDim, blockDim, NO_CLUSTER, args, sharedMem, stream,
				   MEARAS_LAUNCH_COOPERATIVE));
}

/* CUDA 13 stubs: __cudaGetKernel once, then __cudaLaunchKernel with the handle */
RT_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *funcAddr)
{
	struct rt_func *f = rt_func_by_host(funcAddr);

	if (!kernel)
		return cudaErrorInvalidValue;
	*kernel = (cudaKernel_t)f;
	return f ? cudaSuccess : cudaErrorInvalidDeviceFunction;
}

/* the kernel as a CUfunction of mearas's libcuda.so.1, for the driver calls
 * programs make with it (libcuda's rtfunc.c), on the current device */
RT_EXPORT cudaError_t cudaGetFuncBySymbol(cudaFunction_t *functionPtr, const void *symbolPtr)
{
	struct rt_func *f;
	int dev;
	cudaError_t e = rt_ensure_device(&dev);

	if (!e && !functionPtr)
		e = cudaErrorInvalidValue;
	if (e)
		return rt_set_error(e);
	f = rt_func_by_host(symbolPtr);
	if (!f)
		return rt_set_error(cudaErrorInvalidDeviceFunction);
	return rt_set_error(rt_func_as_driver(f, dev, (void **)functionPtr));
}

RT_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
					 size_t sharedMem, cudaStream_t stream)
{
	return rt_set_error(launch((struct rt_func *)kernel, gridDim, blockDim, NO_CLUSTER, args, sharedMem, stream, 0));
}

RT_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
	uint32_t cluster[3] = { 0, 0, 0 }, flags = 0;
	cudaError_t e;

	if (!config)
		return rt_set_error(cudaErrorInvalidValue);
	e = rt_launch_attrs(config->attrs, config->numAttrs, "cudaLaunchKernelExC", &flags, cluster);
	if (e)
		return rt_set_error(e);
	return rt_set_error(launch(rt_func_by_host(func), config->gridDim, config->blockDim, cluster, args,
				   config->dynamicSmemBytes, config->stream, flags));
}

static cudaError_t func_on_device(const void *func, struct rt_func **f, int *dev)
{
	cudaError_t e = rt_ensure_device(dev);

	if (e)
		return e;
	*f = rt_func_by_host(func);
	if (!*f)
		return cudaErrorInvalidResourceHandle;
	return rt_func_ready(*f, *dev);
}

RT_EXPORT cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
	struct rt_func *f;
	uint64_t p[2];
	int dev;
	cudaError_t e;

	if (!attr)
		return rt_set_error(cudaErrorInvalidValue);
	e = func_on_device(func, &f, &dev);
	if (e)
		return rt_set_error(e);
	e = rt_func_attrs(dev, rt_func_id(f), p);
	if (e)
		return rt_set_error(e);
	memset(attr, 0, sizeof(*attr));
	attr->numRegs = (int)(p[0] & 0xffff);
	attr->maxThreadsPerBlock = (int)((p[0] >> 16) & 0xffff);
	attr->ptxVersion = (int)((p[0] >> 32) & 0xffff);
	attr->binaryVersion = (int)((p[0] >> 48) & 0xffff);
	attr->sharedSizeBytes = p[1] & 0xffffff;
	attr->localSizeBytes = (p[1] >> 24) & 0xffffff;
	attr->constSizeBytes = (p[1] >> 48) & 0xffff;
	attr->maxDynamicSharedSizeBytes = (int)(rt.v[dev].prop.sharedMemPerBlock - attr->sharedSizeBytes);
	attr->preferredShmemCarveout = -1;
	/* what the program set reads back as set */
	const struct {
		enum cudaFuncAttribute attr;
		int *field;
	} settable[] = {
		{ cudaFuncAttributeMaxDynamicSharedMemorySize, &attr->maxDynamicSharedSizeBytes },
		{ cudaFuncAttributePreferredSharedMemoryCarveout, &attr->preferredShmemCarveout },
		{ cudaFuncAttributeClusterDimMustBeSet, &attr->clusterDimMustBeSet },
		{ cudaFuncAttributeRequiredClusterWidth, &attr->requiredClusterWidth },
		{ cudaFuncAttributeRequiredClusterHeight, &attr->requiredClusterHeight },
		{ cudaFuncAttributeRequiredClusterDepth, &attr->requiredClusterDepth },
		{ cudaFuncAttributeNonPortableClusterSizeAllowed, &attr->nonPortableClusterSizeAllowed },
		{ cudaFuncAttributeClusterSchedulingPolicyPreference, &attr->clusterSchedulingPolicyPreference },
	};
	for (size_t i = 0; i < sizeof(settable) / sizeof(settable[0]); i++)
		rt_func_set_value(dev, rt_func_id(f), (int)settable[i].attr, settable[i].field);
	return cudaSuccess;
}

static cudaError_t set_attr(const void *func, int attr, int value)
{
	struct rt_func *f;
	int dev;
	cudaError_t e = func_on_device(func, &f, &dev);

	if (e)
		return e;
	if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize &&
	    (value < 0 || (size_t)value > rt.v[dev].prop.sharedMemPerBlockOptin))
		return cudaErrorInvalidValue;
	/* occupancy depends on what is set here (the cache preference too):
	 * forgotten before and after, for a thread asking meanwhile */
	rt_func_forget(dev, rt_func_id(f));
	e = rt_do_FUNC_SET_ATTR(dev, rt_func_id(f), attr, value);
	rt_func_forget(dev, rt_func_id(f));
	/* attributes, unlike the cache preference (-1), read back as set */
	if (!e && attr >= 0)
		e = rt_func_note_set(dev, rt_func_id(f), attr, value);
	return e;
}

RT_EXPORT cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value)
{
	return rt_set_error(set_attr(func, (int)attr, value));
}

RT_EXPORT cudaError_t cudaFuncSetCacheConfig(const void *func, enum cudaFuncCache cacheConfig)
{
	/* attribute -1 carries the cache preference to the back end */
	return rt_set_error(set_attr(func, -1, (int)cacheConfig));
}

/* the kernel's name as its fat binary has it (mangled), as cuFuncGetName */
RT_EXPORT cudaError_t cudaFuncGetName(const char **name, const void *func)
{
	struct rt_func *f;
	int dev;
	cudaError_t e = name ? func_on_device(func, &f, &dev) : cudaErrorInvalidValue;

	if (e)
		return rt_set_error(e);
	*name = rt_func_name(f);
	return cudaSuccess;
}

/* where parameter paramIndex lies in the kernel's parameter buffer, from its
 * fat binary (the layout launches pack by), as cuFuncGetParamInfo */
RT_EXPORT cudaError_t cudaFuncGetParamInfo(const void *func, size_t paramIndex, size_t *paramOffset,
					   size_t *paramSize)
{
	const struct mearas_kernel_info *k;
	struct rt_func *f;
	int dev;
	cudaError_t e = func_on_device(func, &f, &dev);

	if (e)
		return rt_set_error(e);
	k = rt_func_info(f);
	if (paramIndex >= k->nparams)
		return rt_set_error(cudaErrorInvalidValue);
	if (paramOffset)
		*paramOffset = k->params[paramIndex].offset;
	if (paramSize)
		*paramSize = k->params[paramIndex].size;
	return cudaSuccess;
}

/* bank sizes are fixed on every GPU CUDA 13 runs on (cudaDeviceSetSharedMemConfig) */
RT_EXPORT cudaError_t cudaFuncSetSharedMemConfig(const void *func, enum cudaSharedMemConfig config)
{
	struct rt_func *f;
	int dev;
	cudaError_t e = func_on_device(func, &f, &dev);

	if (e)
		return rt_set_error(e);
	return (unsigned)config <= cudaSharedMemBankSizeEightByte ? cudaSuccess : rt_set_error(cudaErrorInvalidValue);
}

RT_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, const void *func,
									    int blockSize, size_t dynamicSMemSize,
									    unsigned int flags)
{
	struct rt_func *f;
	int32_t blocks;
	int dev;
	cudaError_t e;

	(void)flags;
	if (!numBlocks || blockSize <= 0)
		return rt_set_error(cudaErrorInvalidValue);
	e = func_on_device(func, &f, &dev);
	if (e)
		return rt_set_error(e);
	e = rt_func_occupancy(dev, rt_func_id(f), (uint64_t)blockSize, dynamicSMemSize, &blocks);
	if (e)
		return rt_set_error(e);
	*numBlocks = blocks;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func,
								    int blockSize, size_t dynamicSMemSize)
{
	return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize,
								      dynamicSMemSize, 0);
}

/* answered by the host's driver (its allocation granularity and carveouts
 * included) */
RT_EXPORT cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, const void *func,
								int numBlocks, int blockSize)
{
	struct rt_func *f;
	uint64_t smem;
	int dev;
	cudaError_t e;

	if (!dynamicSmemSize || numBlocks <= 0 || blockSize <= 0)
		return rt_set_error(cudaErrorInvalidValue);
	e = func_on_device(func, &f, &dev);
	if (!e)
		e = rt_do_OCCUPANCY_SMEM(dev, rt_func_id(f), (uint32_t)numBlocks, (uint32_t)blockSize, &smem);
	if (e)
		return rt_set_error(e);
	*dynamicSmemSize = (size_t)smem;
	return cudaSuccess;
}

/* answered by the host's driver for the configuration's cluster shape (or,
 * without one, the kernel's own) */
RT_EXPORT cudaError_t cudaOccupancyMaxActiveClusters(int *numClusters, const void *func,
						     const cudaLaunchConfig_t *config)
{
	uint32_t cluster[3] = { 0, 0, 0 };
	struct rt_func *f;
	int32_t n;
	int dev;
	cudaError_t e;

	if (!numClusters || !config)
		return rt_set_error(cudaErrorInvalidValue);
	e = rt_launch_cluster(config->attrs, config->numAttrs, cluster);
	if (e)
		return rt_set_error(e);
	e = func_on_device(func, &f, &dev);
	if (!e)
		e = rt_do_OCCUPANCY_CLUSTERS(dev, rt_func_id(f),
					     (const uint32_t[3]){ config->gridDim.x, config->gridDim.y, config->gridDim.z },
					     (const uint32_t[3]){ config->blockDim.x, config->blockDim.y, config->blockDim.z },
					     cluster, (uint32_t)config->dynamicSmemBytes, &n);
	if (e)
		return rt_set_error(e);
	*numClusters = n;
	return cudaSuccess;
}
