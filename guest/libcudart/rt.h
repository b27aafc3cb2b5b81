/* SPDX-License-Identifier: MIT */
/*
 * Internal state of the mearas CUDA runtime library (guest front end).
 * Public CUDA types come from the toolkit's cuda_runtime_api.h; everything
 * here is private (hidden visibility).
 */
#ifndef MEARAS_RT_H
#define MEARAS_RT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "mearas/region.h"
#include "mearas/ring.h"

#define RT_HIDDEN __attribute__((visibility("hidden")))
#define RT_EXPORT __attribute__((visibility("default")))

/* Transport: how the region and notifications reach the back end. The
 * process transport uses a unix socket, a memfd and eventfds; the VM
 * transport a slot of the ivshmem device's memory (/dev/mearasN) with its
 * doorbell and interrupts. */
enum rt_transport_kind { TP_UNIX, TP_VM };


struct rt_transport {
	enum rt_transport_kind kind;
	/* unix */
	int sock;
	int kick_fd[MEARAS_MAX_VGPUS];
	int wake_fd[MEARAS_MAX_THREADS];
	int out_fd, err_fd;     /* device printf/assert output of the back end */
	/* vm */
	int dev_fd;
	/* the VM header is the module's to read (MEARAS_IOC_VM_STATE): a
	 * guest process maps its own slot only */
	const struct mearas_region_hdr *vm_region; /* our slot's region header (read-only) */
	struct mearas_vm_output *vm_out; /* our slot's device output rings */
	uint32_t vm_token;
};

struct rt_vgpu {
	const struct mearas_devinfo *info;
	struct mearas_vgpu_rings rings;
	pthread_mutex_t sq_lock;                /* the producer's: one thread posts at a time */
	struct mearas_sq_producer sq;
	struct mearas_cq_consumer cq[MEARAS_MAX_THREADS]; /* each used by its slot's holder */
	struct cudaDeviceProp prop;
	unsigned flags;                         /* cudaSetDeviceFlags */
	unsigned spin_us;                       /* a wait spins this long before sleeping */
};

struct rt {
	int init_err;                           /* cudaError_t of the connection */
	struct rt_transport tp;
	uint8_t *region;
	uint64_t region_size;
	int memfd;
	uint64_t memfd_off;                     /* the region's offset in memfd */
	unsigned nvgpus, nthreads;
	uint8_t *data;
	uint64_t data_size;
	struct rt_vgpu v[MEARAS_MAX_VGPUS];
	volatile int dead;                      /* the back end went away */
	int same_address;                       /* region mapped where the back end has it */
	uint32_t next_handle;
	uint64_t next_user_data;
	pthread_mutex_t slot_lock[MEARAS_MAX_THREADS];
	uint64_t slots_used;                    /* bitmap; slot 0 is the callback thread's */
};

struct rt_thread {
	int device;
	int slot;                               /* -1 until first needed */
	cudaError_t last_error;
	int ptds;                               /* inside a _ptsz/_ptds entry point */
	struct rt_staging *staging;
};

extern struct rt rt RT_HIDDEN;
extern __thread struct rt_thread rt_tls RT_HIDDEN;

/* rt_init.c */
RT_HIDDEN cudaError_t rt_ensure(void);                 /* connect on first use */
/* true when mearasd stopped serving us (then rt.dead is set) */
RT_HIDDEN bool rt_stopped(void);
/* the error of every call once the back end is gone: cudaErrorLaunchTimeout
 * when mearasd's GPU time limit ended our context, else
 * cudaErrorDevicesUnavailable */
RT_HIDDEN cudaError_t rt_gone(void);
RT_HIDDEN cudaError_t rt_ensure_device(int *dev);      /* connect + current device */
RT_HIDDEN int rt_slot(void);
RT_HIDDEN uint32_t rt_new_handle(void);
RT_HIDDEN cudaError_t rt_set_error(cudaError_t e);     /* records last error, returns e */
RT_HIDDEN void rt_log_unsupported(const char *name);

/* transport.c: picks the VM transport when /dev/mearas0 exists (or
 * MEARAS_DEVICE names a device), else mearasd's unix socket */
RT_HIDDEN cudaError_t tp_connect(struct rt_transport *tp, int *memfd, uint64_t *memfd_off, uint64_t *region_size,
				 uint64_t *region_addr, unsigned *nvgpus, unsigned *nthreads);
RT_HIDDEN void tp_drain_output(struct rt_transport *tp);
RT_HIDDEN void tp_kick(struct rt_transport *tp, unsigned vgpu);
/* sleep until slot's wake fd fires; returns false when the back end is gone */
RT_HIDDEN bool tp_wait(struct rt_transport *tp, unsigned slot, int timeout_ms);

/* transport_unix.c */
RT_HIDDEN cudaError_t tpu_connect(struct rt_transport *tp, int *memfd, uint64_t *region_size,
				  uint64_t *region_addr, unsigned *nvgpus, unsigned *nthreads);
RT_HIDDEN void tpu_drain_output(struct rt_transport *tp);
void tpv_drain_output(struct rt_transport *tp);
RT_HIDDEN void tpu_kick(struct rt_transport *tp, unsigned vgpu);
RT_HIDDEN bool tpu_wait(struct rt_transport *tp, unsigned slot, int timeout_ms);

/* transport_vm.c */
RT_HIDDEN cudaError_t tpv_connect(struct rt_transport *tp, const char *dev, int *fd, uint64_t *region_off,
				  uint64_t *region_size, uint64_t *region_addr, unsigned *nvgpus,
				  unsigned *nthreads);
RT_HIDDEN void tpv_kick(struct rt_transport *tp, unsigned vgpu);
RT_HIDDEN bool tpv_wait(struct rt_transport *tp, unsigned slot, int timeout_ms);

/* submit.c */
struct rt_call {
	struct mearas_sqe sqe;
	const void *payload;
	uint32_t payload_len;
};
RT_HIDDEN void rt_call_init(struct rt_call *c, unsigned op, uint32_t stream);
/* post without waiting (errors surface later, as in CUDA) */
RT_HIDDEN cudaError_t rt_post(int vgpu, struct rt_call *c);
/* post with a completion and wait for it */
RT_HIDDEN cudaError_t rt_call(int vgpu, struct rt_call *c, struct mearas_cqe *out);
/* post with a completion, wait later with rt_wait (slot must be held) */
RT_HIDDEN cudaError_t rt_post_tracked(int vgpu, struct rt_call *c, uint64_t *user_data);
RT_HIDDEN cudaError_t rt_wait(int vgpu, uint64_t user_data, struct mearas_cqe *out);

/* hostmapped.c: pinned ranges kernels may use (told to remote vGPUs) */
RT_HIDDEN void rt_host_mapped(const void *p, uint64_t size);
RT_HIDDEN void rt_host_unmapped(const void *p);

/* dataheap.c: the data area (pinned, DMA-able) */
RT_HIDDEN void *dh_alloc(uint64_t size);
RT_HIDDEN int dh_free(void *p);                        /* -1 if p is not a block start */
RT_HIDDEN bool dh_contains(const void *p, uint64_t len);
RT_HIDDEN uint64_t dh_offset(const void *p);
RT_HIDDEN bool dh_block(const void *p, void **base, uint64_t *size);

/* cudaHostRegister'ed memory is aliased onto data-area pages: the pinned
 * twin of a registered host pointer (NULL if p is not registered) */
RT_HIDDEN void *rt_registered_twin(const void *p, uint64_t len);

/* devmem.c: device allocations known to this process */
RT_HIDDEN void dm_add(int vgpu, uint64_t ptr, uint64_t size, int is_global);
RT_HIDDEN bool dm_remove(int vgpu, uint64_t ptr);
RT_HIDDEN int dm_find(uint64_t ptr, uint64_t len, uint64_t *base, uint64_t *size);  /* vgpu or -1 */
RT_HIDDEN int dm_window_owner(uint64_t ptr);           /* vgpu whose window holds ptr, or -1 */
RT_HIDDEN void dm_forget_vgpu(int vgpu);

/* streams (api_stream.c) */
struct rt_stream_ref {
	int vgpu;
	uint32_t id;
	uint16_t sqe_flags;
};
RT_HIDDEN cudaError_t rt_stream_ref(cudaStream_t s, struct rt_stream_ref *out);
/* rt_ensure, then rt_stream_ref */
RT_HIDDEN cudaError_t rt_stream_of(cudaStream_t stream, struct rt_stream_ref *out);

/* rt_do_NAME: post op NAME (generated from include/mearas/ops.spec) */
#include "rt_ops.gen.h"

/* memory (api_memory.c, api_mempool.c): an allocation on vgpu through pool
 * id `pool` (0: none); the vGPU's current pool; pools gone with a reset */
RT_HIDDEN cudaError_t rt_malloc_on(int vgpu, void **devPtr, size_t size, uint32_t pool);
RT_HIDDEN cudaError_t rt_pool_current(int vgpu, uint32_t *id);
RT_HIDDEN void rt_pools_forget_vgpu(int vgpu);

/* registration (api_register.c) */
struct rt_func;
RT_HIDDEN struct rt_func *rt_func_by_host(const void *host_fun);
RT_HIDDEN cudaError_t rt_func_ready(struct rt_func *f, int vgpu);
RT_HIDDEN uint32_t rt_func_id(const struct rt_func *f);
RT_HIDDEN const char *rt_func_name(const struct rt_func *f);
RT_HIDDEN cudaError_t rt_func_pack(const struct rt_func *f, void **args, uint8_t *buf, uint32_t *len);
RT_HIDDEN cudaError_t rt_symbol(const void *symbol, int vgpu, uint64_t *dptr, uint64_t *size);
RT_HIDDEN void rt_modules_forget_vgpu(int vgpu);

/* parcopy.c: memcpy split over helper threads for large pageable copies */
RT_HIDDEN void rt_parcopy(void *dst, const void *src, size_t n);

/* copies (api_copy.c) */
RT_HIDDEN cudaError_t rt_memcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
				cudaStream_t stream, bool async);

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

/* host functions (api_stream.c) */
RT_HIDDEN void rt_callback_thread_start(void);

#endif
