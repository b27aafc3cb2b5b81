/* SPDX-License-Identifier: MIT */
/*
 * The guest core: the connection to mearasd (region, rings, transport), the
 * data area, completion slots, device allocations, streams, events, host
 * functions and copies. It lives in mearas's libcuda.so.1; both front ends
 * (the driver API there, the runtime API in libcudart.so.13, which links
 * against libcuda.so.1) use this one copy, so a process that mixes them has
 * one connection and the same streams on both sides. Its symbols are
 * exported from libcuda.so.1 under the private version MEARAS_CORE_1 only.
 * Errors are cudaError_t, the back end's codes; the driver maps them.
 */
#ifndef MEARAS_CORE_H
#define MEARAS_CORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "mearas/region.h"
#include "mearas/ring.h"

/* a core function, exported from libcuda.so.1 to libcudart.so.13 */
#define CORE_API __attribute__((visibility("default")))

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
	unsigned host;                          /* its index in mearasd's region (MEARAS_VISIBLE_VGPUS) */
	struct mearas_vgpu_rings rings;
	pthread_mutex_t sq_lock;                /* the producer's: one thread posts at a time */
	struct mearas_sq_producer sq;
	struct mearas_cq_consumer cq[MEARAS_MAX_THREADS]; /* each used by its slot's holder */
	struct cudaDeviceProp prop;
	unsigned flags;                         /* cudaSetDeviceFlags */
	int cache_config;                       /* its primary context's cache preference (read back only) */
	int default_sync_policy;                /* its default streams' cudaSynchronizationPolicy, 0: none */
	unsigned spin_us;                       /* a wait spins this long before sleeping */
	int window_reserved;                    /* its address window is ours, PROT_NONE (connect.c) */
};

struct rt {
	int init_err;                           /* cudaError_t of the connection */
	struct rt_transport tp;
	uint8_t *region;
	uint64_t region_size;
	int memfd;
	uint64_t memfd_off;                     /* the region's offset in memfd */
	unsigned nvgpus, nthreads;              /* nvgpus: the visible ones (MEARAS_VISIBLE_VGPUS) */
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

extern struct rt rt CORE_API;
extern __thread struct rt_thread rt_tls CORE_API;

/* rt_init.c */
CORE_API cudaError_t rt_ensure(void);                 /* connect on first use */
/* true when mearasd stopped serving us (then rt.dead is set) */
CORE_API bool rt_stopped(void);
/* the error of every call once the back end is gone: cudaErrorLaunchTimeout
 * when mearasd's GPU time limit ended our context, else
 * cudaErrorDevicesUnavailable */
CORE_API cudaError_t rt_gone(void);
CORE_API cudaError_t rt_ensure_device(int *dev);      /* connect + current device */
/* a call's first check e (rt_ensure, a lookup ...), then ok: the pointers
 * it must have are there (else cudaErrorInvalidValue); libcuda's cu_need */
static inline cudaError_t rt_need(cudaError_t e, bool ok)
{
	return e ? e : ok ? cudaSuccess : cudaErrorInvalidValue;
}
CORE_API int rt_slot(void);
/* connect.c: the name of a cudaError_t (NULL: not one); the first of the
 * first n vGPUs at PCI domain:bus:device (-1: none); the vGPU a bus id as
 * CUDA takes it names (domain:bus:device[.function] or bus:device[.function],
 * hexadecimal): -1 none, -2 not a bus id */
CORE_API const char *rt_error_name(cudaError_t e);
CORE_API int rt_vgpu_at_pci(unsigned n, unsigned dom, unsigned bus, unsigned slot);
CORE_API int rt_vgpu_by_bus_id(const char *bus_id);
CORE_API uint32_t rt_new_handle(void);
CORE_API void rt_log_unsupported(const char *name);
CORE_API extern const char mearas_front_end[];

/* transport.c: picks the VM transport when /dev/mearas0 exists (or
 * MEARAS_DEVICE names a device), else mearasd's unix socket */
CORE_API cudaError_t tp_connect(struct rt_transport *tp, int *memfd, uint64_t *memfd_off, uint64_t *region_size,
				 uint64_t *region_addr, unsigned *nvgpus, unsigned *nthreads);
CORE_API void tp_drain_output(struct rt_transport *tp);
CORE_API void tp_kick(struct rt_transport *tp, unsigned vgpu); /* vgpu: mearasd's index (rt_vgpu.host) */
/* sleep until slot's wake fd fires; returns false when the back end is gone */
CORE_API bool tp_wait(struct rt_transport *tp, unsigned slot, int timeout_ms);

/* transport_unix.c */
CORE_API cudaError_t tpu_connect(struct rt_transport *tp, int *memfd, uint64_t *region_size,
				  uint64_t *region_addr, unsigned *nvgpus, unsigned *nthreads);
CORE_API void tpu_drain_output(struct rt_transport *tp);
void tpv_drain_output(struct rt_transport *tp);
CORE_API void tpu_kick(struct rt_transport *tp, unsigned vgpu);
CORE_API bool tpu_wait(struct rt_transport *tp, unsigned slot, int timeout_ms);

/* transport_vm.c */
CORE_API cudaError_t tpv_connect(struct rt_transport *tp, const char *dev, int *fd, uint64_t *region_off,
				  uint64_t *region_size, uint64_t *region_addr, unsigned *nvgpus,
				  unsigned *nthreads);
CORE_API void tpv_kick(struct rt_transport *tp, unsigned vgpu);
CORE_API bool tpv_wait(struct rt_transport *tp, unsigned slot, int timeout_ms);

/* submit.c */
struct rt_call {
	struct mearas_sqe sqe;
	const void *payload;
	uint32_t payload_len;
};
CORE_API void rt_call_init(struct rt_call *c, unsigned op, uint32_t stream);
/* post without waiting (errors surface later, as in CUDA) */
CORE_API cudaError_t rt_post(int vgpu, struct rt_call *c);
/* post with a completion and wait for it */
CORE_API cudaError_t rt_call(int vgpu, struct rt_call *c, struct mearas_cqe *out);
/* post with a completion, wait later with rt_wait (slot must be held) */
CORE_API cudaError_t rt_post_tracked(int vgpu, struct rt_call *c, uint64_t *user_data);
CORE_API cudaError_t rt_wait(int vgpu, uint64_t user_data, struct mearas_cqe *out);

/* hostmapped.c: pinned ranges kernels may use (told to remote vGPUs) */
CORE_API void rt_host_mapped(const void *p, uint64_t size);
/* a pinned allocation (cudaHostAlloc, cuMemHostAlloc): followed as asked
 * with the mapped flag, else while small (unified addressing) */
CORE_API void rt_host_allocated(const void *p, uint64_t size, bool mapped);
/* a pinned allocation from the data area, then rt_host_allocated; NULL when
 * it does not fit, logged as what ("pinned", "page-locked") allocation */
CORE_API void *rt_host_alloc(const char *what, uint64_t size, bool mapped);
/* managed.c: managed memory as zero-copy blocks of the data area; free:
 * false when p is no managed block's start; find: [p, p+len) is managed */
CORE_API cudaError_t rt_managed_alloc(void **p, uint64_t size);
CORE_API bool rt_managed_free(void *p);
CORE_API bool rt_managed_find(const void *p, uint64_t len);
/* managedvars.c: a module's __managed__ variables (n, at the device
 * addresses dptr, size bytes each) mirrored at those addresses here, kept
 * equal with the device around posts and waits (submit.c calls the hooks);
 * unbind: a module's (module 0: every one of the vGPU's) */
CORE_API cudaError_t rt_mvars_bind(int vgpu, uint32_t module, const uint64_t *dptr, const uint64_t *size, unsigned n);
/* every __managed__ variable a module image lists (its index), bound */
struct mearas_fatbin_index;
CORE_API cudaError_t rt_mvars_bind_module(int vgpu, uint32_t module, const struct mearas_fatbin_index *idx);
CORE_API void rt_mvars_unbind(int vgpu, uint32_t module);
void rt_mvars_forget_vgpu(int vgpu);
void rt_mvars_before_post(int vgpu, const struct rt_call *c);
void rt_mvars_after_wait(int vgpu, uint64_t user_data);
/* a stream attachment both APIs take: one way of attaching (global, host or
 * the stream alone; cudaMemAttach* and CU_MEM_ATTACH_* are one set) of a
 * whole managed allocation (p its start, len 0 or its size) */
CORE_API bool rt_managed_attachable(const void *p, uint64_t len, unsigned flags);
CORE_API void rt_host_unmapped(const void *p);

/* dataheap.c: the data area (pinned, DMA-able) */
CORE_API void *dh_alloc(uint64_t size);
CORE_API int dh_free(void *p);                        /* -1 if p is not a block start */
CORE_API bool dh_contains(const void *p, uint64_t len);
CORE_API uint64_t dh_offset(const void *p);
CORE_API bool dh_block(const void *p, void **base, uint64_t *size);

/* cudaHostRegister'ed memory is aliased onto data-area pages: the pinned
 * twin of a registered host pointer (NULL if p is not registered) */
CORE_API void *rt_registered_twin(const void *p, uint64_t len);

/* devmem.c: device allocations known to this process */
/* is_global: DM_ALLOC (cudaMalloc's), DM_GLOBAL (a module global: copies,
 * not cudaFree) or DM_VMM (a cuMemMap mapping: copies, spans over adjacent
 * mappings, not cudaFree; dm_remove_vmm takes it out) */
enum { DM_ALLOC = 0, DM_GLOBAL = 1, DM_VMM = 2 };
CORE_API void dm_add(int vgpu, uint64_t ptr, uint64_t size, int is_global);
CORE_API bool dm_remove(int vgpu, uint64_t ptr);
CORE_API bool dm_remove_vmm(int vgpu, uint64_t ptr);
CORE_API int dm_find(uint64_t ptr, uint64_t len, uint64_t *base, uint64_t *size);  /* vgpu or -1 */
CORE_API int dm_window_owner(uint64_t ptr);           /* vgpu whose window holds ptr, or -1 */
CORE_API void dm_forget_vgpu(int vgpu);

/* streams (api_stream.c) */
struct rt_stream_ref {
	int vgpu;
	uint32_t id;
	uint16_t sqe_flags;
};
CORE_API cudaError_t rt_stream_ref(cudaStream_t s, struct rt_stream_ref *out);
/* objects.c: the id cuStreamGetId and cudaStreamGetId give st, unique
 * among the process's streams (libraries key per-stream state by it) */
CORE_API unsigned long long rt_stream_ref_id(const struct rt_stream_ref *st);
/* rt_ensure, then rt_stream_ref */
CORE_API cudaError_t rt_stream_of(cudaStream_t stream, struct rt_stream_ref *out);

/* rt_do_NAME: post op NAME (generated from include/mearas/ops.spec) */
#include "rt_ops.gen.h"

/* parcopy.c: memcpy split over helper threads for large pageable copies */
CORE_API void rt_parcopy(void *dst, const void *src, size_t n);

/* streams and events (objects.c): the handles both front ends hand out
 * (cudaStream_t and CUstream alike point at a struct rt_stream) */
struct rt_stream {
	uint32_t magic;
	uint32_t id;
	int vgpu;
	unsigned flags;
	int priority;
	int sync_policy;                        /* cudaSynchronizationPolicy set, 0: none (streamattr.c) */
};

/* streamattr.c: the stream attributes of both APIs (ids and values as the
 * launch attributes'); caller names the call in log lines */
CORE_API cudaError_t rt_stream_get_attr(cudaStream_t h, int id, cudaLaunchAttributeValue *v);
CORE_API cudaError_t rt_stream_set_attr(cudaStream_t h, int id, const cudaLaunchAttributeValue *v, const char *caller);
CORE_API cudaError_t rt_stream_copy_attrs(cudaStream_t dst, cudaStream_t src);

struct rt_event {
	uint32_t magic;
	uint32_t id;
	int vgpu;
	unsigned flags;
	int recorded;
};

/* a stream of vgpu with a fresh id, created on the back end (*out) */
CORE_API cudaError_t rt_stream_create(int vgpu, unsigned flags, int priority, struct rt_stream **out);
CORE_API cudaError_t rt_stream_destroy(struct rt_stream *s);
/* NULL unless h is a stream this process created and has not destroyed */
CORE_API struct rt_stream *rt_stream_get(void *h);
CORE_API cudaError_t rt_event_create(int vgpu, unsigned flags, struct rt_event **out);
CORE_API cudaError_t rt_event_destroy(struct rt_event *ev);
CORE_API struct rt_event *rt_event_get(void *h);
/* flags: 0 or MEARAS_EVENT_RECORD_EXTERNAL (a record node when captured) */
CORE_API cudaError_t rt_event_record(struct rt_event *ev, const struct rt_stream_ref *st, unsigned flags);
/* the stream waits for the event's last record (on the host across vGPUs) */
CORE_API cudaError_t rt_stream_wait(const struct rt_stream_ref *st, struct rt_event *ev, unsigned flags);
CORE_API cudaError_t rt_event_sync(struct rt_event *ev);
CORE_API cudaError_t rt_event_query(struct rt_event *ev);
CORE_API cudaError_t rt_event_elapsed(struct rt_event *a, struct rt_event *b, float *ms);

/* CUDA arrays, texture and surface objects (arrays.c): a cudaArray_t and a
 * CUarray alike point at a struct rt_array; texture and surface objects are
 * the device's values (kernels take them), kept here with their ids. */
struct rt_array {
	uint32_t magic;
	uint32_t id;
	int vgpu;
	uint64_t width, height, depth;  /* elements; height, depth 0: fewer dimensions */
	uint32_t format, channels, flags;       /* include/mearas/array.h */
	uint32_t elem;                  /* bytes of one element */
};

/* a box of an array: bytes from x of each row, rows from y, slices from z */
struct rt_array_box {
	uint64_t x, y, z;
	uint64_t width, height, depth;  /* bytes, rows, slices */
};

CORE_API cudaError_t rt_array_create(int vgpu, uint64_t width, uint64_t height, uint64_t depth, uint32_t format,
				     uint32_t channels, uint32_t flags, struct rt_array **out);
CORE_API cudaError_t rt_array_destroy(struct rt_array *a);
/* NULL unless h is an array this process created and has not destroyed */
CORE_API struct rt_array *rt_array_get(const void *h);
/* A copy between box b of array a and linear memory at mem (host memory of
 * any kind, or device memory), rows pitch bytes apart, slices slice_rows
 * rows apart; to_array: which way. Async copies of pageable memory return
 * once its bytes are read or written, as CUDA's do. */
CORE_API cudaError_t rt_array_copy(struct rt_array *a, const struct rt_array_box *b, void *mem, uint64_t pitch,
				   uint64_t slice_rows, bool to_array, cudaStream_t stream, bool async);
/* A copy between two arrays of one vGPU: box b of src to dst from (dx, dy,
 * dz) (bytes, rows, slices), through device memory of the vGPU in stream
 * order (freed in stream order after it). */
CORE_API cudaError_t rt_array_copy_arrays(struct rt_array *dst, uint64_t dx, uint64_t dy, uint64_t dz,
					  struct rt_array *src, const struct rt_array_box *b, cudaStream_t stream);
/* a texture object (t: the payload of TEX_CREATE, its array t->array's id)
 * or a surface object on array a, created on vgpu; *value: the object */
CORE_API cudaError_t rt_tex_create(int vgpu, const struct mearas_tex_args *t, struct rt_array *a, uint64_t *value);
CORE_API cudaError_t rt_surf_create(struct rt_array *a, uint64_t *value);
CORE_API cudaError_t rt_texobj_destroy(uint64_t value, bool surface);
/* fill(out, the arguments a texture (or surface) object was made with, its
 * array or NULL): cudaErrorInvalidValue for an unknown object or no out */
CORE_API cudaError_t rt_texobj_describe(uint64_t value, bool surface, void *out,
					void (*fill)(void *out, const struct mearas_tex_args *t, struct rt_array *a));

/* graphs (capture.c, graphs.c, graphnodes.c): a cudaGraph_t or CUgraph
 * points at a struct rt_graph, a cudaGraphExec_t or CUgraphExec at a struct
 * rt_graph_exec, a cudaGraphNode_t or CUgraphNode at a struct rt_gnode. A
 * graph made by stream capture is kept by the back end (id); its nodes have
 * no handles here. A graph built node by node is kept here (nodes), and its
 * instantiation replays it into a capture on private streams (graphnodes.c):
 * the back end gets a captured graph either way. */
struct rt_gnode;

/* memory graphs allocate (graphmem.c): what a capture, a graph or an
 * executable graph holds; nodes: the alloc and free nodes a capture counted */
struct rt_gmem;
struct rt_gmem_set {
	struct rt_gmem **a;
	size_t n, cap;
	uint32_t nodes;
};

/* user objects (userobj.c): the references a graph, an executable graph or
 * a launch holds */
struct rt_uobj;
struct rt_uobj_ref {
	struct rt_uobj *o;
	uint64_t count;
};
struct rt_uobj_set {
	struct rt_uobj_ref *v;
	size_t n, cap;
};

struct rt_graph {
	uint32_t magic;
	uint32_t id;                    /* the back end's graph (captured); 0 when built */
	int vgpu;
	bool built;                     /* made by cudaGraphCreate / cuGraphCreate */
	struct rt_gnode **nodes;        /* built: in creation order */
	size_t nnodes, cap;
	struct rt_gmem_set mem;         /* the memory its alloc nodes (or its capture) allocated */
	struct rt_graph_exec *mem_exec; /* with memory nodes: its one executable graph, while it lives */
	struct rt_uobj_set uobj;        /* user objects it holds */
};

struct rt_graph_exec {
	uint32_t magic;
	uint32_t id;
	int vgpu;
	unsigned long long flags;       /* as instantiated (the back end's part) */
	struct rt_graph *shape;         /* built graphs: what it runs, a copy whose nodes name their originals */
	struct rt_gmem_set mem;         /* the graph's allocations, held while it can run */
	struct rt_graph *mem_graph;     /* the graph with memory nodes it was made from, while that lives */
	struct rt_uobj_set uobj;        /* its graph's user objects and its child graphs' */
};

/* what a node does, as the front ends hand it over (the type is a
 * cudaGraphNodeType, the driver's numbers too) */
struct rt_kernel_node {
	void *func;                     /* the front end's handle, given back as is */
	void *kern, *ctx;               /* the driver's CUkernel and context, as given */
	uint32_t func_id;               /* the back end's function on the graph's vGPU */
	int vgpu;                       /* whose function it is */
	uint32_t grid[3], block[3], smem;
	const uint8_t *params;          /* packed, len bytes */
	uint32_t len;
	uint32_t nparams;               /* the layout (0 when passed packed through extra) */
	const uint32_t *offsets;
	void **args;                    /* read only: pointers into the node's own copy, nparams */
	uint32_t flags, cluster[3];     /* its attributes, as a LAUNCH carries them (launchattr.c) */
};

struct rt_memcpy_node {
	void *dst;
	const void *src;
	size_t dpitch, spitch, width, height; /* bytes; one row: height 1 */
	enum cudaMemcpyKind kind;
};

struct rt_memset_node {
	void *dst;
	size_t pitch, width, height;    /* width in elements */
	unsigned value, elem;           /* elem: 1, 2 or 4 bytes */
};

struct rt_node_params {
	int type;
	union {
		struct rt_kernel_node k;
		struct rt_memcpy_node c;
		struct rt_memset_node s;
		struct {
			cudaHostFn_t fn;
			void *user;
		} h;
		struct rt_graph *child; /* added: the graph to copy; read: the node's own copy */
		struct {
			void *dptr;     /* alloc: set when the node is added (graphmem.c); free: what it frees */
			size_t bytesize;
			int vgpu;       /* alloc: where */
		} m;
		struct rt_event *ev;    /* event record and wait nodes: the event, not owned */
	} u;
};

/* mode: a cudaStreamCaptureMode; the legacy stream cannot capture */
CORE_API cudaError_t rt_capture_begin(const struct rt_stream_ref *st, int mode);
CORE_API cudaError_t rt_capture_end(const struct rt_stream_ref *st, struct rt_graph **out);
/* the capture status (required) and id of st; the graph being captured into
 * and the next node's dependencies are NULL and 0 outside a capture, and
 * cudaErrorNotSupported (logged, naming call) asked for during one */
CORE_API cudaError_t rt_capture_info(const struct rt_stream_ref *st, const char *call,
				     enum cudaStreamCaptureStatus *status, unsigned long long *id, cudaGraph_t *graph,
				     const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges, size_t *ndeps);
/* st captures (or its capture was invalidated): a round trip only while a
 * capture of this process is in progress, false at once otherwise */
bool rt_capture_active(const struct rt_stream_ref *st);
/* a capture of this process is in progress (no round trip) */
bool rt_capture_any(void);
/* cudaThreadExchangeStreamCaptureMode */
CORE_API cudaError_t rt_capture_mode_exchange(enum cudaStreamCaptureMode *mode);
void rt_capture_forget_stream(int vgpu, uint32_t stream);
void rt_capture_forget_vgpu(int vgpu);

/* NULL unless h is a live graph (executable graph) of this process */
CORE_API struct rt_graph *rt_graph_get(void *h);
CORE_API struct rt_graph_exec *rt_graph_exec_get(void *h);
cudaError_t rt_graph_new(int vgpu, struct rt_graph **out);
void rt_graph_free(struct rt_graph *g);
/* flags: cudaGraphInstantiateFlags; Upload wants the upload stream (the
 * WithParams calls), else NULL; flags the back end cannot honour give
 * cudaErrorNotSupported, logged naming call */
CORE_API cudaError_t rt_graph_instantiate(struct rt_graph *g, unsigned long long flags,
					  const struct rt_stream_ref *upload, const char *call,
					  struct rt_graph_exec **out);
CORE_API cudaError_t rt_graph_launch(struct rt_graph_exec *x, const struct rt_stream_ref *st);
CORE_API cudaError_t rt_graph_upload(struct rt_graph_exec *x, const struct rt_stream_ref *st);
CORE_API cudaError_t rt_graph_destroy(struct rt_graph *g);
CORE_API cudaError_t rt_graph_exec_destroy(struct rt_graph_exec *x);
CORE_API cudaError_t rt_graph_node_count(struct rt_graph *g, size_t *n);

/* node-built graphs (graphnodes.c). `call` names the entry point in log
 * lines. Node lists follow CUDA's convention: with out NULL, *n is set to
 * the count; else up to *n are written, and *n lowered to the count. */
CORE_API struct rt_gnode *rt_gnode_get(void *h);  /* NULL unless a live node */
/* an event record or wait node (type) of a live event of this process (a
 * cudaEvent_t or CUevent), else cudaErrorInvalidValue */
CORE_API cudaError_t rt_event_node_params(int type, void *event, struct rt_node_params *p);
CORE_API cudaError_t rt_graph_create(int vgpu, unsigned flags, struct rt_graph **out);
/* a node of p's kind after deps (nodes of g); the parameters are copied */
CORE_API cudaError_t rt_graph_add(const char *call, struct rt_graph *g, void *const *deps, size_t ndeps,
				  const struct rt_node_params *p, struct rt_gnode **out);
CORE_API struct rt_graph *rt_gnode_graph(struct rt_gnode *n);
CORE_API int rt_gnode_type(struct rt_gnode *n);
/* the node's parameters, pointing into the node's own copies */
CORE_API const struct rt_node_params *rt_gnode_params(struct rt_gnode *n);
/* a memset node's parameters from the fields the driver's and the runtime's
 * memset structs share (width in elements of elem bytes) */
CORE_API void rt_memset_node_params(struct rt_node_params *p, void *dst, size_t pitch, unsigned value, unsigned elem,
				    size_t width, size_t height);
/* new parameters of the same kind (a kernel node keeps its attributes) */
CORE_API cudaError_t rt_gnode_set(const char *call, struct rt_gnode *n, const struct rt_node_params *p);
/* a kernel node's attribute id (set NULL: get into get); copy: dst's
 * attributes become src's (kernel nodes of one vGPU's graphs) */
CORE_API cudaError_t rt_gnode_kernel_attr(const char *call, struct rt_gnode *n, int id,
					  const cudaLaunchAttributeValue *set, cudaLaunchAttributeValue *get);
CORE_API cudaError_t rt_gnode_kernel_attrs_copy(struct rt_gnode *dst, struct rt_gnode *src);
CORE_API cudaError_t rt_graph_nodes(struct rt_graph *g, bool roots, void **out, size_t *n);
/* edges as from[i] -> to[i] */
CORE_API cudaError_t rt_graph_edges(struct rt_graph *g, void **from, void **to, size_t *n);
/* a node's dependencies (dependents false) or dependents */
CORE_API cudaError_t rt_gnode_edges(struct rt_gnode *node, bool dependents, void **out, size_t *n);
CORE_API cudaError_t rt_graph_edge_data(const cudaGraphEdgeData *e, size_t n);
CORE_API cudaError_t rt_graph_change_deps(struct rt_graph *g, void *const *from, void *const *to,
					  const cudaGraphEdgeData *ed, size_t n, bool add);
CORE_API cudaError_t rt_graph_add_deps(struct rt_graph *g, void *const *from, void *const *to, size_t n);
CORE_API cudaError_t rt_graph_remove_deps(struct rt_graph *g, void *const *from, void *const *to, size_t n);
CORE_API cudaError_t rt_gnode_destroy(struct rt_gnode *n);
CORE_API cudaError_t rt_graph_clone(const char *call, struct rt_graph *g, struct rt_graph **out);
/* the node of clone made from node of the graph it was cloned from */
CORE_API cudaError_t rt_gnode_find_in_clone(struct rt_graph *clone, struct rt_gnode *orig, struct rt_gnode **out);
/* user objects (userobj.c): counted objects with a destructor, held by
 * graphs, executable graphs and launches */
CORE_API struct rt_uobj *rt_uobj_get(void *h);
CORE_API cudaError_t rt_uobj_create(void *ptr, cudaHostFn_t destroy, unsigned initial, unsigned flags,
				    struct rt_uobj **out);
CORE_API cudaError_t rt_uobj_retain(struct rt_uobj *o, uint64_t count);
CORE_API cudaError_t rt_uobj_release(struct rt_uobj *o, uint64_t count);
CORE_API cudaError_t rt_uobj_graph_retain(struct rt_graph *g, struct rt_uobj *o, unsigned count, unsigned flags);
CORE_API cudaError_t rt_uobj_graph_release(struct rt_graph *g, struct rt_uobj *o, unsigned count);
cudaError_t rt_uobj_set_copy(struct rt_uobj_set *dst, const struct rt_uobj_set *src);
cudaError_t rt_uobj_set_copy_tree(struct rt_uobj_set *dst, struct rt_graph *g);
void rt_uobj_set_release(struct rt_uobj_set *s);
cudaError_t rt_uobj_launch_hold(const struct rt_graph_exec *x, const struct rt_stream_ref *st);
/* cudaGraphNodeSetEnabled / GetEnabled (set NULL: get) of node in x */
CORE_API cudaError_t rt_graph_exec_node_enabled(struct rt_graph_exec *x, struct rt_gnode *node, const unsigned *set,
						unsigned *get);
/* new parameters for node (of the graph x was made from) in x only */
CORE_API cudaError_t rt_graph_exec_set(const char *call, struct rt_graph_exec *x, struct rt_gnode *node,
				       const struct rt_node_params *p);
/* x takes g's parameters when g has x's topology; result a
 * cudaGraphExecUpdateResult, err/err_from the nodes to blame (or NULL) */
CORE_API cudaError_t rt_graph_exec_update(struct rt_graph_exec *x, struct rt_graph *g, int *result, void **err,
					  void **err_from);
/* internal: graphs.c's instantiation of a built graph, and its freeing */
cudaError_t rt_graph_replay(struct rt_graph *g, struct rt_graph **captured);

/* the stream priority range of every GPU mearas serves (0 is the lowest);
 * streams and kernel nodes clamp to it */
#define RT_PRIORITY_LEAST    0
#define RT_PRIORITY_GREATEST (-5)

static inline int rt_priority_clamp(int priority)
{
	return priority < RT_PRIORITY_GREATEST ? RT_PRIORITY_GREATEST
	       : priority > RT_PRIORITY_LEAST  ? RT_PRIORITY_LEAST
					       : priority;
}

/* launch attributes into a LAUNCH record's flags and cluster shape
 * (launchattr.c); caller names the API call in the log line of an
 * attribute mearas does not carry */
cudaError_t rt_launch_attrs(const cudaLaunchAttribute *attrs, unsigned n, const char *caller, uint32_t *flags,
			    uint32_t cluster[3]);
/* only the cluster shape among them (the occupancy queries) */
cudaError_t rt_launch_cluster(const cudaLaunchAttribute *attrs, unsigned n, uint32_t cluster[3]);
/* one of them into flags and cluster (no log line for a value out of range) */
cudaError_t rt_launch_attr(enum cudaLaunchAttributeID id, const cudaLaunchAttributeValue *v, const char *caller,
			   uint32_t *flags, uint32_t cluster[3]);
/* one attribute of a graph kernel node of grid's shape, packed the same way
 * (nodeattr.c; set: checked as the driver checks it; those mearas does not
 * carry on a node are cudaErrorNotSupported, logged naming caller) */
cudaError_t rt_kernel_node_attr_set(int id, const cudaLaunchAttributeValue *v, const char *caller,
				    const uint32_t grid[3], uint32_t *flags, uint32_t cluster[3]);
cudaError_t rt_kernel_node_attr_get(int id, uint32_t flags, const uint32_t cluster[3], const char *caller,
				    cudaLaunchAttributeValue *v);
void rt_graph_free_nodes(struct rt_graph *g);

/* device memory (memory.c): an allocation on vgpu from pool id `pool` (0:
 * none); a free of the allocation devPtr on the vGPU it is of, ordered on
 * stream when async (NULL: nothing to free; not an allocation:
 * cudaErrorInvalidValue) */
CORE_API cudaError_t rt_malloc_on(int vgpu, void **devPtr, size_t size, uint32_t pool);
CORE_API cudaError_t rt_free(void *devPtr, cudaStream_t stream, bool async);

/* memory pools (pools.c): a pool is mearasd's accounting and attributes of
 * the allocations made through it. A cudaMemPool_t and a CUmemoryPool are
 * both a struct rt_pool, so a pool made by one front end works in the
 * other. Each vGPU has a default pool (made on first use) and a current one
 * (the default until set). `call` names the entry point in log lines; the
 * attribute, location and access values are the runtime's, which are the
 * driver's numbers too. Callers have connected. */
struct rt_pool {
	uint32_t magic;
	int vgpu;
	uint32_t id;
	bool is_default;
};
/* NULL unless h is a live pool */
CORE_API struct rt_pool *rt_pool_get(void *h);
CORE_API cudaError_t rt_pool_default(int vgpu, struct rt_pool **out);
CORE_API cudaError_t rt_pool_current(int vgpu, struct rt_pool **out);
CORE_API cudaError_t rt_pool_set_current(int vgpu, struct rt_pool *p);
/* the vGPU of a pool location (pinned memory of a device); other locations
 * and managed pools are refused with cudaErrorNotSupported and a log line */
CORE_API cudaError_t rt_pool_location(const char *call, const struct cudaMemLocation *loc, int alloc_type,
				      int *vgpu);
CORE_API cudaError_t rt_pool_create(const char *call, const struct cudaMemPoolProps *props, struct rt_pool **out);
CORE_API cudaError_t rt_pool_destroy(struct rt_pool *p);
CORE_API cudaError_t rt_pool_set_attr(const char *call, struct rt_pool *p, int attr, const void *value);
CORE_API cudaError_t rt_pool_get_attr(const char *call, struct rt_pool *p, int attr, void *value);
CORE_API cudaError_t rt_pool_trim(struct rt_pool *p, size_t keep);
CORE_API cudaError_t rt_pool_set_access(const char *call, struct rt_pool *p, const struct cudaMemAccessDesc *desc,
					size_t count);
CORE_API cudaError_t rt_pool_get_access(struct rt_pool *p, const struct cudaMemLocation *loc,
					enum cudaMemAccessFlags *flags);
/* a stream-ordered allocation from p, made at once on p's vGPU */
CORE_API cudaError_t rt_pool_alloc(struct rt_pool *p, void **ptr, size_t size);
/* a reset of vgpu destroyed its pools (reset.c) */
void rt_pools_forget_vgpu(int vgpu);

/* graph memory (graphmem.c): an allocation from p that graphs hold; a hold
 * on g by set s; a copy of what src holds (and its node count) added to dst;
 * every hold of s given up (memory freed in a graph or by the program goes
 * with its last holder); a graph's free of ptr (not graph memory, or freed
 * already: cudaErrorInvalidValue, logged naming call); the program's free of
 * ptr outside graphs: 1 held, so only marked freed; -1 freed twice; 0 not
 * held by a graph (an ordinary free); the graph memory attributes
 * (cudaGraphMemAttributeType) of vgpu, read or set */
cudaError_t rt_gmem_alloc(struct rt_pool *p, size_t size, struct rt_gmem **out);
uint64_t rt_gmem_ptr(const struct rt_gmem *g);
cudaError_t rt_gmem_hold(struct rt_gmem_set *s, struct rt_gmem *g);
cudaError_t rt_gmem_set_copy(struct rt_gmem_set *dst, const struct rt_gmem_set *src);
void rt_gmem_set_release(struct rt_gmem_set *s);
cudaError_t rt_gmem_free_in_graph(uint64_t ptr, const char *call);
int rt_gmem_free_outside(uint64_t ptr);
/* a graph's free of ptr taken back (the free node was not added after all) */
void rt_gmem_unfree(uint64_t ptr);
/* an alloc node's memory for g (p->u.m.dptr set), held by g */
cudaError_t rt_gmem_node_alloc(struct rt_graph *g, struct rt_node_params *p);
/* cudaGraphAddMemAllocNode (q->dptr set; the driver's params are laid out
 * the same) and an alloc node's parameters read back */
CORE_API cudaError_t rt_graph_add_mem_alloc(const char *call, struct rt_graph *g, void *const *deps, size_t ndeps,
					    struct cudaMemAllocNodeParams *q, struct rt_gnode **out);
CORE_API void rt_gmem_node_params(const struct rt_node_params *p, struct cudaMemAllocNodeParams *q);
void rt_gmem_forget_vgpu(int vgpu);
CORE_API cudaError_t rt_gmem_attr(int vgpu, int attr, void *value, bool set);
/* a stream-ordered allocation from p on st (rt_pool_alloc; on a capturing
 * stream, memory the capture's graph holds), and a stream-ordered free of
 * ptr on st that a capture takes (*taken): a free node of graph memory */
CORE_API cudaError_t rt_malloc_async(struct rt_pool *p, const struct rt_stream_ref *st, void **ptr, size_t size);
cudaError_t rt_capture_free(const struct rt_stream_ref *st, uint64_t ptr, bool *taken);

/* registered host memory (hostreg.c), flags as cudaHostRegister's */
CORE_API cudaError_t rt_host_register(void *ptr, size_t size, unsigned int flags);
CORE_API cudaError_t rt_host_unregister(void *ptr);

/* the calling thread's current device (reset.c): set by the runtime's
 * cudaSetDevice; the driver front end, told through its hook, makes the
 * device's primary context current, as NVIDIA's runtime does */
CORE_API void rt_set_device(int vgpu);
CORE_API void rt_on_set_device(void (*hook)(int vgpu));

/* libcuda's (rtfunc.c), for cudaGetFuncBySymbol of mearas's runtime: the
 * kernel name of the runtime's module module_id, loaded on vgpu, as a
 * CUfunction (*out); cudaErrorMemoryAllocation, or
 * cudaErrorInvalidDeviceFunction when the device has no such kernel */
struct mearas_fatbin_index;
CORE_API cudaError_t mearas_cu_runtime_function(int vgpu, uint32_t module_id, struct mearas_fatbin_index *index,
					const char *name, void **out);

/* a kernel's attributes (FUNC_ATTRS's two words) and occupancy per block
 * size and dynamic shared memory, asked of the back end once and kept
 * (funcinfo.c), for both front ends: rt_func_forget drops what is kept for
 * function id on vgpu (id 0: all of vgpu's; a reset does) */
CORE_API cudaError_t rt_func_attrs(int vgpu, uint32_t id, uint64_t p[2]);
CORE_API cudaError_t rt_func_occupancy(int vgpu, uint32_t id, uint64_t block, uint64_t smem, int32_t *blocks);
CORE_API void rt_func_forget(int vgpu, uint32_t id);
/* attributes a program set on a function (the driver's numbers, which are
 * the runtime's): noted once the back end took them, read back as set;
 * rt_func_gone drops a function's when its module goes */
CORE_API cudaError_t rt_func_note_set(int vgpu, uint32_t id, int attr, int value);
CORE_API bool rt_func_set_value(int vgpu, uint32_t id, int attr, int *value);
CORE_API void rt_func_gone(int vgpu, uint32_t id);

/* device reset (reset.c): resets vgpu on the back end, forgets its
 * allocations and pools, and tells every front end (its hook, registered once) that
 * what it loaded or created there is gone */
CORE_API cudaError_t rt_device_reset(int vgpu);
CORE_API void rt_on_reset(void (*hook)(int vgpu));
/* for a reset's forgetting: drops the entries of array a (n of them, n an
 * lvalue updated) whose .vgpu is vgpu, the others kept in order; a macro,
 * as the arrays are of different structs */
#define RT_DROP_VGPU(a, n, vgpu)                        \
	do {                                            \
		size_t kept_ = 0;                       \
		for (size_t i_ = 0; i_ < (n); i_++)     \
			if ((a)[i_].vgpu != (vgpu))     \
				(a)[kept_++] = (a)[i_]; \
		(n) = kept_;                            \
	} while (0)

/* copies (copy.c): kind cudaMemcpyDefault resolves by pointer; async
 * copies of pageable memory are staged */
/* a batch (cudaMemcpyBatchAsync): attributes checked, then each copy async
 * in order; *fail the failing copy's index (SIZE_MAX: none) */
CORE_API cudaError_t rt_memcpy_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
				     const struct cudaMemcpyAttributes *attrs, const size_t *idxs, size_t nattrs,
				     cudaStream_t stream, size_t *fail);
CORE_API cudaError_t rt_memcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
				 cudaStream_t stream, bool async);
/* device memory of vGPU sv to device memory of vGPU dv (a peer copy) */
CORE_API cudaError_t rt_memcpy_peer(void *dst, int dv, const void *src, int sv, size_t n, cudaStream_t stream,
				    bool async);
CORE_API cudaError_t rt_memcpy_2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
				    size_t height, enum cudaMemcpyKind kind, cudaStream_t stream, bool async);
/* p..p+len lies in pinned host memory of this process (the data area or
 * registered memory) */
CORE_API bool rt_pinned_host(const void *p, uint64_t len);
/* a memset (elements of elem bytes) of pinned host memory, filled by this
 * thread once st's earlier work is done; refused while st captures */
CORE_API cudaError_t rt_host_memset(const char *call, const struct rt_stream_ref *st, void *dst, size_t pitch,
				    unsigned value, unsigned elem, size_t width, size_t height);
/* bytes of value over height rows of width bytes, pitch apart (device
 * memory, or pinned host memory through rt_host_memset) */
CORE_API cudaError_t rt_memset(void *p, size_t pitch, int value, size_t width, size_t height,
				 cudaStream_t stream);

/* host functions (hostfn.c): fn(user), or cb(stream, cudaSuccess, user), run
 * on the core's callback thread when the stream reaches them */
CORE_API cudaError_t rt_post_host_fn(cudaStream_t stream, cudaHostFn_t fn, cudaStreamCallback_t cb, void *user);
CORE_API cudaError_t rt_post_host_fn_on(const struct rt_stream_ref *st, cudaStream_t stream, cudaHostFn_t fn,
					cudaStreamCallback_t cb, void *user);
CORE_API void rt_callback_thread_start(void);

#endif
