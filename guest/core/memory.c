// SPDX-License-Identifier: MIT
/* Device allocations, for both front ends. */
#include "core.h"

/* An allocation on vgpu, from memory pool `pool` (0: none, as cudaMalloc). */
cudaError_t rt_malloc_on(int vgpu, void **devPtr, size_t size, uint32_t pool)
{
	uint64_t ptr;
	cudaError_t e;

	if (!devPtr)
		return cudaErrorInvalidValue;
	if (size == 0) {
		*devPtr = NULL;
		return cudaSuccess;
	}
	e = rt_do_MEM_ALLOC(vgpu, size, pool, &ptr);
	if (e) {
		*devPtr = NULL;
		return e;
	}
	dm_add(vgpu, ptr, size, 0);
	*devPtr = (void *)(uintptr_t)ptr;
	return cudaSuccess;
}

cudaError_t rt_free(void *devPtr, cudaStream_t stream, bool async)
{
	uint64_t ptr = (uint64_t)(uintptr_t)devPtr;
	int vgpu = devPtr ? dm_find(ptr, 1, NULL, NULL) : 0;
	struct rt_stream_ref s = { .vgpu = vgpu };
	cudaError_t e;

	if (!devPtr)
		return cudaSuccess;
	if (vgpu < 0)
		return cudaErrorInvalidValue;
	if (async) {
		bool taken;

		e = rt_stream_ref(stream, &s);
		if (e)
			return e;
		/* a free node of a capture: graph memory, freed when no graph holds it */
		e = rt_capture_free(&s, ptr, &taken);
		if (taken)
			return e;
	}
	if (dm_find(ptr, 1, NULL, NULL) != vgpu)
		return cudaErrorInvalidValue;
	/* memory a graph holds goes when the graph (and its instantiations) go */
	switch (rt_gmem_free_outside(ptr)) {
	case 1:
		return cudaSuccess;
	case -1:
		return cudaErrorInvalidValue;
	}
	if (async && s.vgpu != vgpu) {
		/* a stream of another vGPU means nothing to vgpu's back end: the
		 * free waits here for that stream's work, then goes in order on
		 * vgpu's own default stream */
		e = rt_do_STREAM_SYNC(s.vgpu, &s);
		if (e)
			return e;
		s = (struct rt_stream_ref){ .vgpu = vgpu, .id = MEARAS_STREAM_LEGACY };
	}
	if (!dm_remove(vgpu, ptr))
		return cudaErrorInvalidValue;
	if (async)
		return rt_do_MEM_FREE_ASYNC(vgpu, &s, ptr);
	return rt_do_MEM_FREE(vgpu, ptr);
}
