// SPDX-License-Identifier: MIT
/*
 * Kernel launches: posted without waiting; the parameters are packed here
 * with the layout read from the module's image (or passed as one buffer
 * through `extra`), the configuration checked against the vGPU's limits.
 */
#include <stddef.h>
#include <string.h>

#include "mearas/fatbin.h"
#include "mearas/log.h"
#include "ptds.h"
#include "cu.h"

CUresult cu_launch_check(int vgpu, const unsigned grid[3], const unsigned block[3], unsigned smem)
{
	const int32_t *a = rt.v[vgpu].info->attrs;
	uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
	const char *why = NULL;

	for (unsigned i = 0; i < 3; i++)
		if (!grid[i] || !block[i])
			why = "a zero grid or block dimension";
	if (threads > (uint64_t)a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK] ||
	    block[0] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X] ||
	    block[1] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y] ||
	    block[2] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z])
		why = "a block over the device's limits";
	if (grid[0] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X] ||
	    grid[1] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y] ||
	    grid[2] > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z])
		why = "a grid over the device's limits";
	if (smem > (unsigned)a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN])
		why = "more dynamic shared memory than a block may opt in to";
	if (!why)
		return CUDA_SUCCESS;
	log_info("launch refused: %s (grid %ux%ux%u, block %ux%ux%u, %u bytes of shared memory): invalid value", why,
		 grid[0], grid[1], grid[2], block[0], block[1], block[2], smem);
	return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
}

/* kernelParams (one pointer per parameter), or extra's one buffer */
CUresult cu_launch_pack(const struct cu_function *f, void **params, void **extra, uint8_t *buf, uint32_t *len)
{
	const struct mearas_kernel_info *k = f->info;

	if (params && extra) {
		log_info("launch of %s refused: both kernelParams and extra given: invalid value", f->name);
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
	if (extra) {
		void *p = NULL;
		size_t *size = NULL;

		for (unsigned i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
			if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
				p = extra[i + 1];
			else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
				size = extra[i + 1];
			else
				return log_info("launch of %s refused: unknown extra option %p: invalid value", f->name,
						extra[i]), CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
		}
		if (!p || !size || *size > MEARAS_MAX_PARAM_BYTES) {
			log_info("launch of %s refused: extra without a parameter buffer and its size, or over %u bytes: "
				 "invalid value", f->name, MEARAS_MAX_PARAM_BYTES);
			return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
		}
		memcpy(buf, p, *size);
		*len = (uint32_t)*size;
		return CUDA_SUCCESS;
	}
	if (!k) {
		log_err("launch of %s: its parameter layout is unknown (the module image was not readable)", f->name);
		return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
	}
	if (k->param_bytes > MEARAS_MAX_PARAM_BYTES || (k->nparams && !params)) {
		log_info("launch of %s refused: %s: invalid value", f->name,
			 k->nparams && !params ? "no kernelParams for its parameters" : "parameters over the limit");
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
	memset(buf, 0, k->param_bytes);
	for (uint32_t i = 0; i < k->nparams; i++) {
		if (!params[i]) {
			log_info("launch of %s refused: kernelParams[%u] is NULL: invalid value", f->name, i);
			return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
		}
		memcpy(buf + k->params[i].offset, params[i], k->params[i].size);
	}
	*len = k->param_bytes;
	return CUDA_SUCCESS;
}

static CUresult launch(CUfunction h, const unsigned grid[3], const unsigned block[3], const unsigned cluster[3],
		       unsigned smem, CUstream s, void **params, void **extra, uint32_t flags)
{
	uint8_t buf[MEARAS_MAX_PARAM_BYTES];
	struct rt_stream_ref st;
	struct cu_function *f;
	uint32_t len = 0;
	CUresult r = cu_stream_ref(s, &st);

	if (r)
		return r;
	r = cu_function_of(h, &f);
	if (r)
		return r;
	if (f->m->vgpu != st.vgpu)
		return CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);       /* a function of another context */
	r = cu_launch_check(st.vgpu, grid, block, smem);
	if (!r)
		r = cu_launch_pack(f, params, extra, buf, &len);
	if (r)
		return r;
	return cu_result(rt_do_LAUNCH(st.vgpu, &st, f->id, grid, block, cluster, smem, flags, buf, len,
				      false));
}

#define LAUNCH_ARGS                                                                                          \
	CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,   \
		unsigned int bz, unsigned int smem, CUstream s
#define GRID (const unsigned[3]){ gx, gy, gz }
#define BLOCK (const unsigned[3]){ bx, by, bz }
#define NO_CLUSTER (const unsigned[3]){ 0, 0, 0 }

CU_EXPORT CUresult CUDAAPI cuLaunchKernel(LAUNCH_ARGS, void **kernelParams, void **extra)
{
	return launch(f, GRID, BLOCK, NO_CLUSTER, smem, s, kernelParams, extra, 0);
}

CU_EXPORT CUresult CUDAAPI cuLaunchKernel_ptsz(LAUNCH_ARGS, void **kernelParams, void **extra)
{
	return CU_PTSZ(launch(f, GRID, BLOCK, NO_CLUSTER, smem, s, kernelParams, extra, 0));
}

CU_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel(LAUNCH_ARGS, void **kernelParams)
{
	return launch(f, GRID, BLOCK, NO_CLUSTER, smem, s, kernelParams, NULL, MEARAS_LAUNCH_COOPERATIVE);
}

CU_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(LAUNCH_ARGS, void **kernelParams)
{
	return CU_PTSZ(launch(f, GRID, BLOCK, NO_CLUSTER, smem, s, kernelParams, NULL, MEARAS_LAUNCH_COOPERATIVE));
}

/* the driver's and the runtime's launch attributes share ids and layout */
_Static_assert(sizeof(CUlaunchAttribute) == sizeof(cudaLaunchAttribute), "launch attribute layout");
_Static_assert(offsetof(CUlaunchAttribute, value) == offsetof(cudaLaunchAttribute, val), "launch attribute layout");
_Static_assert(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION ==
		       (int)cudaLaunchAttributeProgrammaticStreamSerialization &&
	       CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT ==
		       (int)cudaLaunchAttributePreferredSharedMemoryCarveout,
	       "launch attribute ids");

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
	uint32_t cluster[3] = { 0, 0, 0 }, flags = 0;
	cudaError_t e;

	if (!config)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	e = rt_launch_attrs((const cudaLaunchAttribute *)config->attrs, config->numAttrs, "cuLaunchKernelEx", &flags,
			    cluster);
	if (e)
		return cu_result(e);
	return launch(f, (const unsigned[3]){ config->gridDimX, config->gridDimY, config->gridDimZ },
		      (const unsigned[3]){ config->blockDimX, config->blockDimY, config->blockDimZ }, cluster,
		      config->sharedMemBytes, config->hStream, kernelParams, extra, flags);
}

CU_EXPORT CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
					    void **extra)
{
	return launch_ex(config, f, kernelParams, extra);
}

CU_EXPORT CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
						 void **extra)
{
	return CU_PTSZ(launch_ex(config, f, kernelParams, extra));
}

/* ---- occupancy ---- */

static CUresult occupancy(int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize)
{
	struct cu_function *f;
	int32_t blocks;
	CUresult r = cu_ready();

	if (r)
		return r;
	if (!numBlocks || blockSize <= 0)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	r = cu_function_of(func, &f);
	if (r)
		return r;
	r = cu_result(rt_func_occupancy(f->m->vgpu, f->id, (uint64_t)blockSize, dynamicSMemSize, &blocks));
	if (r)
		return r;
	*numBlocks = blocks;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
								       int blockSize, size_t dynamicSMemSize)
{
	return occupancy(numBlocks, func, blockSize, dynamicSMemSize);
}

CU_EXPORT CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func,
										int blockSize,
										size_t dynamicSMemSize,
										unsigned int flags)
{
	(void)flags; /* caching-override flags change nothing the host does not decide */
	return occupancy(numBlocks, func, blockSize, dynamicSMemSize);
}

/*
 * The block size that keeps the most threads resident on a multiprocessor
 * (of equals, the largest: the fewest blocks), and the grid that fills every
 * multiprocessor with it. Block sizes are tried from the largest allowed
 * down, a warp at a time, each with the dynamic shared memory the program's
 * function gives for it (or dynamicSMemSize), until the multiprocessor is
 * full; each try is the driver's occupancy for it (rt_func_occupancy).
 */
static CUresult potential_block_size(int *minGridSize, int *blockSize, CUfunction func,
				     CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
				     int blockSizeLimit)
{
	struct cu_function *f;
	const int32_t *a;
	int func_max, limit, warp, best_size = 0, best_blocks = 0, best_threads = 0;
	CUresult r = cu_ready();

	if (r)
		return r;
	if (!minGridSize || !blockSize || blockSizeLimit < 0)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	r = cu_function_of(func, &f);
	if (!r)
		r = cuFuncGetAttribute(&func_max, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, func);
	if (r)
		return r;
	a = rt.v[f->m->vgpu].info->attrs;
	warp = a[CU_DEVICE_ATTRIBUTE_WARP_SIZE] > 0 ? a[CU_DEVICE_ATTRIBUTE_WARP_SIZE] : 32;
	limit = a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
	if (blockSizeLimit && blockSizeLimit < limit)
		limit = blockSizeLimit;
	if (func_max < limit)
		limit = func_max;
	for (int aligned = (limit + warp - 1) / warp * warp; aligned > 0; aligned -= warp) {
		int size = aligned < limit ? aligned : limit;
		size_t smem = blockSizeToDynamicSMemSize ? blockSizeToDynamicSMemSize(size) : dynamicSMemSize;
		int32_t blocks;

		r = cu_result(rt_func_occupancy(f->m->vgpu, f->id, (uint64_t)size, smem, &blocks));
		if (r)
			return r;
		if (size * blocks > best_threads) {
			best_size = size;
			best_blocks = blocks;
			best_threads = size * blocks;
		}
		if (best_threads >= a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR])
			break;
	}
	*minGridSize = best_blocks * a[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT];
	*blockSize = best_size;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
							     CUoccupancyB2DSize blockSizeToDynamicSMemSize,
							     size_t dynamicSMemSize, int blockSizeLimit)
{
	return potential_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize,
				    blockSizeLimit);
}

/* the caching-override flag changes nothing the host decides (as in
 * cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags) */
CU_EXPORT CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize,
								      CUfunction func,
								      CUoccupancyB2DSize blockSizeToDynamicSMemSize,
								      size_t dynamicSMemSize, int blockSizeLimit,
								      unsigned int flags)
{
	(void)flags;
	return potential_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize,
				    blockSizeLimit);
}

/* answered by the host's driver (its allocation granularity and carveouts
 * included) */
CU_EXPORT CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func,
								    int numBlocks, int blockSize)
{
	struct cu_function *f;
	uint64_t smem;
	CUresult r = cu_ready();

	if (r)
		return r;
	if (!dynamicSmemSize || numBlocks <= 0 || blockSize <= 0)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	r = cu_function_of(func, &f);
	if (!r)
		r = cu_result(rt_do_OCCUPANCY_SMEM(f->m->vgpu, f->id, (uint32_t)numBlocks, (uint32_t)blockSize, &smem));
	if (r)
		return r;
	*dynamicSmemSize = (size_t)smem;
	return CUDA_SUCCESS;
}

/* answered by the host's driver for the configuration's cluster shape (or,
 * without one, the kernel's own) */
CU_EXPORT CUresult CUDAAPI cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func, const CUlaunchConfig *config)
{
	unsigned cluster[3] = { 0, 0, 0 };
	struct cu_function *f;
	int32_t n = 0;
	CUresult r = cu_ready();

	if (r)
		return r;
	if (!numClusters || !config)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	r = cu_result(rt_launch_cluster((const cudaLaunchAttribute *)config->attrs, config->numAttrs, cluster));
	if (r)
		return r;
	r = cu_function_of(func, &f);
	if (!r)
		r = cu_result(rt_do_OCCUPANCY_CLUSTERS(
			f->m->vgpu, f->id, (const uint32_t[3]){ config->gridDimX, config->gridDimY, config->gridDimZ },
			(const uint32_t[3]){ config->blockDimX, config->blockDimY, config->blockDimZ }, cluster,
			config->sharedMemBytes, &n));
	if (!r)
		*numClusters = n;
	return r;
}
