/* SPDX-License-Identifier: MIT */
/*
 * Internal state of mearas's driver-API front end (libcuda.so.1): contexts,
 * modules and kernels of the CUDA driver API over the guest core
 * (guest/core/core.h). Public types come from the toolkit's cuda.h.
 */
#ifndef MEARAS_CU_H
#define MEARAS_CU_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda.h>

#include "core.h"
#include "version.h"

#define CU_EXPORT __attribute__((visibility("default")))
#define CU_HIDDEN __attribute__((visibility("hidden")))

/* runs call with the core's per-thread-stream flag as the entry point asks:
 * on (1) in the _ptds/_ptsz twins, where stream 0 is the thread's own */
#define WITH_PTDS(on_, call)                  \
	({                                    \
		int saved_ = rt_tls.ptds;     \
		CUresult r_;                  \
		rt_tls.ptds = (on_);          \
		r_ = (call);                  \
		rt_tls.ptds = saved_;         \
		r_;                           \
	})

/*
 * errors.c: refusals named. Every error this library makes goes through
 * CU_REFUSE (or cu_result, cu_need, cu_handle), which logs it at debug level
 * (MEARAS_LOG=debug) with the entry point the program called, found on the
 * stack, and the place that refused: "cuLaunchKernelEx: CUDA_ERROR_INVALID_VALUE
 * (launch.c:78 cu_launch_pack)". A framework's failure then names the call.
 * CUDA_ERROR_NOT_READY (a query's answer) is not logged. Returns r.
 */
CU_HIDDEN CUresult cu_refused(CUresult r, const char *fn, const char *file, int line);
#define CU_REFUSE(r) cu_refused((r), __func__, __FILE_NAME__, __LINE__)

/* the back end's error as the driver API's (refused as above unless success) */
CU_HIDDEN CUresult cu_result_at(cudaError_t e, const char *fn, const char *file, int line);
#define cu_result(e) cu_result_at((e), __func__, __FILE_NAME__, __LINE__)

/* init.c: cuInit has succeeded (else CUDA_ERROR_NOT_INITIALIZED), and the
 * back end still serves us */
CU_HIDDEN CUresult cu_ready(void);
/* an entry point's first check r (cu_ready, a handle's lookup ...), then
 * ok: the pointers it must have are there (else CUDA_ERROR_INVALID_VALUE) */
#define cu_need(r, ok)                                                         \
	({                                                                     \
		CUresult need_r_ = (r);                                        \
		need_r_ ? need_r_ : (ok) ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_INVALID_VALUE); \
	})

/* The entry points that only answer a value: cu_ready, then *out = value
 * (out must be given). */
#define cu_answer(out, value)                                                  \
	({                                                                     \
		CUresult answer_r_ = cu_need(cu_ready(), out);                 \
		if (!answer_r_)                                                \
			*(out) = (value);                                      \
		answer_r_;                                                     \
	})

/* the core's objects a driver-API handle names */
enum cu_kind { CU_STREAM_OBJ, CU_EVENT_OBJ, CU_GRAPH_OBJ, CU_GRAPH_EXEC_OBJ, CU_NODE_OBJ, CU_POOL_OBJ, CU_CTX_OBJ };

/* cu_ready, then the live object of that kind behind h into *obj (NULL and
 * bad when h names none) */
CU_HIDDEN CUresult cu_handle(void *h, enum cu_kind kind, CUresult bad, void **obj);
/* graphnodes.c: the graph a handle names, and the parameters of a node of
 * type (-1: any) with the pointer a Get call fills in (refused if NULL) */
CU_HIDDEN CUresult cu_graph_of(CUgraph h, struct rt_graph **g);
CU_HIDDEN CUresult cu_node_params(CUgraphNode h, int type, const void *out, const struct rt_node_params **p);

/*
 * Contexts (context.c). A context is one vGPU; each vGPU has one primary
 * context (retained and released by count) and may have created ones
 * (cuCtxCreate). The current context is per thread, a stack; setting one
 * also makes its vGPU the core's current device, so the runtime and the
 * driver agree on it.
 */
struct cu_cls;
struct cu_ctx {
	uint32_t magic;
	int vgpu;
	bool primary;
	bool active;            /* primary: retained or made current */
	unsigned refs;          /* primary: retains; created: 1 until destroyed */
	unsigned flags;         /* CU_CTX_* */
	unsigned long long id;  /* unique per process (cuCtxGetId) */
	int cache_config;       /* created: its cache preference (a primary's: rt.v[vgpu].cache_config) */
	struct cu_cls *cls;     /* context-local storage (export table c693...) */
};

CU_HIDDEN struct cu_ctx *cu_ctx_get(CUcontext c);       /* NULL unless a live context */
CU_HIDDEN struct cu_ctx *cu_current(void);              /* NULL: none current */
/* cu_ready, then the current context (CUDA_ERROR_INVALID_CONTEXT if none) */
CU_HIDDEN CUresult cu_current_ctx(struct cu_ctx **out);
CU_HIDDEN struct cu_ctx *cu_primary(int vgpu);          /* not retained */
CU_HIDDEN void cu_set_current(struct cu_ctx *c);
/* context-local storage (exptables_cls.c): run and drop every destructor */
CU_HIDDEN void cu_cls_destroy(struct cu_ctx *c);

/*
 * Modules (module.c). A module is loaded on one vGPU; a library
 * (cuLibrary*) holds its image and loads a module per vGPU the first time
 * one of its kernels or globals is used there. Kernel parameter layouts are
 * read from the image (common/fatbin.c) and checked against the device's.
 */
struct mearas_fatbin_index;
struct mearas_kernel_info;
struct cu_library;

#define MODULE_MAGIC 0x6d4d6f64u

struct cu_module {
	uint32_t magic;
	uint32_t id;
	int vgpu;
	struct mearas_fatbin_index *index;
	struct cu_library *lib; /* the library it was loaded for, or NULL */
	bool gone;              /* its vGPU was reset */
	bool runtime;           /* the CUDA runtime's (rtfunc.c): its image and index are the runtime's */
	/* every kernel of the image as a function, made on first enumeration
	 * (cuModuleEnumerateFunctions) and kept with the module */
	struct cu_function **fns;
	unsigned nfns;
};

struct cu_function {
	uint32_t magic;
	uint32_t id;
	struct cu_module *m;
	const struct mearas_kernel_info *info;
	char *name;
};

/* a new function of module m by kernel name (FUNC_GET) */
CU_HIDDEN CUresult cu_function_get(struct cu_module *m, const char *name, struct cu_function **out);
/* rtfunc.c: the runtime's modules as CUmodules are forgotten at a reset */
CU_HIDDEN void cu_runtime_modules_forget_vgpu(int vgpu);
/* a CUfunction, or a CUkernel resolved on the current context's vGPU */
CU_HIDDEN CUresult cu_function_of(CUfunction f, struct cu_function **out);
/* a whole file (module.c), malloc'd with one zero byte more (PTX text ends
 * there); *size (may be NULL) its length */
CU_HIDDEN CUresult cu_read_file(const char *fname, void **data, size_t *size);
CU_HIDDEN void cu_modules_forget_vgpu(int vgpu);

/* launches (launch.c): the configuration checked against vgpu's limits;
 * kernelParams (one pointer per parameter) or extra's one buffer packed */
CU_HIDDEN CUresult cu_launch_check(int vgpu, const unsigned grid[3], const unsigned block[3], unsigned smem);
CU_HIDDEN CUresult cu_launch_pack(const struct cu_function *f, void **params, void **extra, uint8_t *buf,
				  uint32_t *len);

/* streams (stream.c): a CUstream as the core's reference, on the current context */
CU_HIDDEN CUresult cu_stream_ref(CUstream s, struct rt_stream_ref *out);
/* s is 0, the legacy or the per-thread default stream, or a live stream */
CU_HIDDEN bool cu_stream_known(CUstream s);

/* a _ptsz/_ptds entry point: call with the per-thread default stream in effect */
#define CU_PTSZ(call) WITH_PTDS(1, call)

/* virtual memory management (vmm.c): the cuMemAddressReserve reservation
 * holding ptr, which the range pointer attributes report for an address in
 * it (mapped or not); false if no reservation holds ptr */
CU_HIDDEN bool cu_vmm_reservation_of(CUdeviceptr ptr, uint64_t *va, uint64_t *size);

/* export tables (exptables.c) */
CU_HIDDEN CUresult cu_export_table(const void **table, const CUuuid *id);

/* copy.c: initialized, a current context and a known stream, as a copy needs */
CU_HIDDEN CUresult cu_copy_ready(CUstream s);
/* copy.c: a CUDA_MEMCPY2D copy on stream s (any memory types) */
CU_HIDDEN CUresult cu_copy_2d(const CUDA_MEMCPY2D *p, CUstream s, bool async);
/* array.c: a 2D copy with an array on a side (cu_copy_2d hands it over) */
CU_HIDDEN CUresult cu_copy_2d_array(const CUDA_MEMCPY2D *p, CUstream s, bool async);

#endif
