/* SPDX-License-Identifier: MIT */
/*
 * Internal state of mearas's CUDA runtime library (libcudart.so.13): the
 * runtime's own pieces (last error, registration, launches) over the
 * guest core (guest/core/core.h, in libcuda.so.1). Public CUDA types come
 * from the toolkit's cuda_runtime_api.h; everything here is private.
 */
#ifndef MEARAS_RT_H
#define MEARAS_RT_H

#include "core.h"

#define RT_HIDDEN __attribute__((visibility("hidden")))
#define RT_EXPORT __attribute__((visibility("default")))

/* api_error.c */
RT_HIDDEN cudaError_t rt_set_error(cudaError_t e);     /* records last error, returns e */
/* api_graphnodes.c: the graph a handle names (connected first), and node_of
 * of a node of type (-1: any) with the pointer a Get call fills in, then the
 * node's parameters */
RT_HIDDEN cudaError_t rt_graph_of(cudaGraph_t h, struct rt_graph **g);
RT_HIDDEN cudaError_t rt_node_params_of(cudaGraphNode_t h, int type, const void *out, const struct rt_node_params **p);

/* registration (api_register.c) */
struct rt_func;
RT_HIDDEN struct rt_func *rt_func_by_host(const void *host_fun);
RT_HIDDEN cudaError_t rt_func_ready(struct rt_func *f, int vgpu);
RT_HIDDEN uint32_t rt_func_id(const struct rt_func *f);
RT_HIDDEN const char *rt_func_name(const struct rt_func *f);
struct mearas_kernel_info;
RT_HIDDEN const struct mearas_kernel_info *rt_func_info(const struct rt_func *f);
RT_HIDDEN cudaError_t rt_func_as_driver(struct rt_func *f, int vgpu, void **out);
/* a launch configuration checked against vgpu's limits (api_launch.c) */
RT_HIDDEN cudaError_t rt_launch_check(int vgpu, dim3 g, dim3 b, size_t smem);
RT_HIDDEN cudaError_t rt_func_pack(const struct rt_func *f, void **args, uint8_t *buf, uint32_t *len);
RT_HIDDEN cudaError_t rt_symbol(const void *symbol, int vgpu, uint64_t *dptr, uint64_t *size);
/* the device address of count bytes at offset in symbol on vgpu (api_copy.c),
 * and whether kind is a direction a copy to (to) or from a symbol takes */
RT_HIDDEN cudaError_t rt_symbol_range(const void *symbol, int vgpu, size_t count, size_t offset, uint64_t *dptr);
RT_HIDDEN cudaError_t rt_symbol_kind(bool to, enum cudaMemcpyKind kind);
RT_HIDDEN void rt_modules_forget_vgpu(int vgpu);

/* Entry points called by nvcc-generated code (not in the public headers). */
RT_EXPORT void **__cudaRegisterFatBinary(void *fatCubin);
RT_EXPORT void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
RT_EXPORT void __cudaUnregisterFatBinary(void **fatCubinHandle);
RT_EXPORT char __cudaInitModule(void **fatCubinHandle);
RT_EXPORT void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
				      const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
				      dim3 *bDim, dim3 *gDim, int *wSize);
RT_EXPORT void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
				 const char *deviceName, int ext, size_t size, int constant, int global);
RT_EXPORT void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress, char *deviceAddress,
					const char *deviceName, int ext, size_t size, int constant, int global);
RT_EXPORT void __cudaRegisterHostVar(void **fatCubinHandle, const char *deviceName, char *hostVar, size_t size);
RT_EXPORT unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
					       struct CUstream_st *stream);
RT_EXPORT cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
						 void *stream);
RT_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *funcAddr);
RT_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
					 size_t sharedMem, cudaStream_t stream);

#endif
