/* SPDX-License-Identifier: MIT */
/*
 * What mearasd needs from a device: the CUDA driver API on a GPU
 * (device_cuda.c), or the host-memory model used by the CPU lane
 * (device_sim.c). Every call returns a cudaError_t (0 = success).
 * Device addresses are window addresses handed out by the vaheap; host
 * pointers are the worker's own mapping of the data area.
 * Objects (streams, events, modules, functions, graphs) are opaque pointers.
 */
#ifndef MEARAS_DEVICE_H
#define MEARAS_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <driver_types.h> /* cudaError_t values (plain C header of the toolkit) */

#include "mdev_ops.gen.h"
#include "mearas/region.h"

struct mdev;
struct mearas_tmap_args;
struct mearas_tex_args;

/* The top of each vGPU's window is kept out of the heap for module globals
 * (used by the device model; a GPU places globals itself). */
#define MEARAS_GLOBALS_RESERVE (16ull << 30)

struct mdev_launch {
	uint32_t grid[3], block[3];
	uint32_t smem;
	int cooperative;
	uint32_t cluster[3];    /* thread-block cluster shape; all 0: none */
	/* the other launch attributes the record carried (MEARAS_LAUNCH_*) */
	int programmatic;       /* programmatic stream serialization allowed */
	int sync_domain_remote; /* memory synchronization domain: remote */
	int cluster_policy;     /* cluster scheduling policy preference, 0: default */
	int has_priority, priority;
	int has_carveout, carveout;     /* preferred shared memory carveout, percent */
	void *params;           /* packed parameter buffer */
	uint32_t param_bytes;
};

/* a CUDA array's shape (ARRAY_CREATE; include/mearas/array.h): height and
 * depth 0 for fewer dimensions */
struct mdev_array {
	uint64_t width, height, depth;
	uint32_t format, channels, flags;
};

/* one slice of a copy between an array and linear memory (MEMCPY_ARRAY):
 * dir an enum mearas_array_dir; mem a host pointer (HTOA, ATOH) or a window
 * address (DTOA, ATOD); height rows of width bytes, pitch apart, to or from
 * rows y.. of slice z of the array from byte x of each row */
struct mdev_array_copy {
	int dir;
	uint64_t mem, pitch;
	uint32_t x, y, z, width, height;
};

/* one input of a link (LINK record): a CUjitInputType and its bytes */
struct mdev_link_input {
	uint32_t type;
	const void *data;
	uint64_t size;
};

struct mdev_ops {
	const char *name;
	const char *startup_note;
	/* the device functions of the ops with a generated handler */
	const struct mdev_op_table *op;
	/* once per worker process */
	int (*init)(char *err, size_t errlen);
	int (*count)(void);
	int (*open)(struct mdev **out, int phys, uint64_t va_base, uint64_t va_size,
		    struct mearas_devinfo *info, uint64_t *granularity);
	void (*close)(struct mdev *d);
	/* make the device current for the calling thread (a poller) */
	void (*bind_thread)(struct mdev *d);
	int (*host_register)(struct mdev *d, void *base, size_t size);
	void (*host_unregister)(struct mdev *d, void *base);
	int (*chunk_map)(struct mdev *d, uint64_t va, uint64_t size, void **cookie);
	void (*chunk_unmap)(struct mdev *d, uint64_t va, uint64_t size, void *cookie);
	int (*mem_info)(struct mdev *d, uint64_t *free, uint64_t *total);
	/* Virtual memory management (core/exec_vmm.c), all in the vGPU's window,
	 * sizes, addresses and offsets multiples of the granularity open gave.
	 * va_reserve/va_release: a stretch set aside for mappings (a GPU's
	 * window is reserved whole at open: nothing to do there). phys_create/
	 * phys_release: physical memory of this device. phys_map: [offset,
	 * offset+size) of phys at va, read-write for this device; phys_unmap
	 * takes it out once the device is done with the range. */
	int (*va_reserve)(struct mdev *d, uint64_t va, uint64_t size, void **cookie);
	void (*va_release)(struct mdev *d, uint64_t va, uint64_t size, void *cookie);
	int (*phys_create)(struct mdev *d, uint64_t size, void **phys);
	void (*phys_release)(struct mdev *d, void *phys);
	int (*phys_map)(struct mdev *d, uint64_t va, uint64_t size, void *phys, uint64_t offset, void **cookie);
	void (*phys_unmap)(struct mdev *d, uint64_t va, uint64_t size, void *cookie);

	/* copies: host sides are host pointers, device sides window addresses */
	int (*copy)(struct mdev *d, void *stream, int dir, uint64_t dst, uint64_t src, uint64_t size);
	int (*copy_2d)(struct mdev *d, void *stream, int dir, uint64_t dst, uint64_t dpitch,
		       uint64_t src, uint64_t spitch, uint64_t width, uint64_t height);
	int (*memset)(struct mdev *d, void *stream, uint64_t dst, uint32_t value, uint64_t count,
		      unsigned elem_size);
	int (*memset_2d)(struct mdev *d, void *stream, uint64_t dst, uint64_t pitch, uint8_t value,
			 uint64_t width, uint64_t height);
	/* a stream memory operation on a 4- or 8-byte word at addr (a device
	 * address; host: a pointer to registered host memory): write value
	 * (flags: MEARAS_MEMOP_NO_BARRIER), or wait until the word meets the
	 * condition flags name (enum mearas_memop_cond, with MEARAS_MEMOP_FLUSH)
	 * against value. NULL: not served. */
	int (*stream_memop)(struct mdev *d, void *stream, bool wait, uint64_t addr, bool host, uint64_t value,
			    unsigned size, unsigned flags);

	int (*module_load)(struct mdev *d, const void *image, size_t size, void **module);
	/* links n inputs with the JIT options opt[i] = val[i] (include/mearas/
	 * link.h): the image goes to out when it fits cap bytes, *size its size;
	 * a link error is *link_error (a CUDA error), its log then in out, *size
	 * bytes. The return: the call's own failure (out of memory ...) */
	int (*link)(struct mdev *d, const struct mdev_link_input *in, unsigned n, const uint32_t *opt,
		    const uint32_t *val, unsigned nopt, void *out, uint64_t cap, uint64_t *size, int *link_error);
	void (*module_unload)(struct mdev *d, void *module);
	/* nparams/param_bytes: what the device says of the kernel's parameters
	 * (0xffffffff when it cannot tell) */
	int (*func_get)(struct mdev *d, void *module, const char *name, void **func,
			uint32_t *nparams, uint32_t *param_bytes);
	/* the kernel's name, for log lines (NULL when unknown) */
	const char *(*func_name)(struct mdev *d, void *func);
	/* a function from func_get is no longer used (before its module unloads) */
	void (*func_put)(struct mdev *d, void *func);
	int (*func_attrs)(struct mdev *d, void *func, uint64_t out[2]);
	int (*func_set_attr)(struct mdev *d, void *func, int attr, int value);
	int (*occupancy)(struct mdev *d, void *func, int block, size_t smem, int *blocks);
	/* most clusters of this shape co-resident (cluster all 0: the kernel's own) */
	int (*occupancy_clusters)(struct mdev *d, void *func, const struct mdev_launch *l, int *clusters);
	int (*global_get)(struct mdev *d, void *module, const char *name, uint64_t size_hint,
			  uint64_t *ptr, uint64_t *size);
	int (*launch)(struct mdev *d, void *func, void *stream, const struct mdev_launch *l);

	void *(*stream_default)(struct mdev *d);        /* the legacy default stream */
	int (*stream_create)(struct mdev *d, unsigned flags, int priority, void **s);
	int (*stream_destroy)(struct mdev *d, void *s);
	int (*stream_wait_event)(struct mdev *d, void *s, void *ev, unsigned flags);
	int (*event_create)(struct mdev *d, unsigned flags, void **e);
	int (*event_destroy)(struct mdev *d, void *e);
	int (*event_record)(struct mdev *d, void *e, void *s);
	/* an external record (CU_EVENT_RECORD_EXTERNAL): in a capture it is a
	 * record node of the graph, which records the event at each launch */
	int (*event_record_external)(struct mdev *d, void *e, void *s);
	int (*event_query)(struct mdev *d, void *e);   /* 0, or cudaErrorNotReady (600) */
	int (*event_elapsed)(struct mdev *d, void *start, void *end, float *ms);
	/* Completion flags: fences that the device writes into host memory and
	 * the host reads without a driver call (an event's record and query
	 * cost more, on every synchronizing call's latency). flags_create: a
	 * set of n 32-bit words (cudaErrorNotSupported where the device cannot
	 * write them); flag_write: value into word i once the work posted on
	 * stream so far is done (not in a capture); flag_read: the word now.
	 * flags_destroy frees a set that no write can still reach (NULL: the
	 * set lives as long as the process, as the driver may still write it).
	 * status: the context's sticky error, 0 if none (what a query of an
	 * event would return, and a word never written would not show), asked
	 * without touching the client's streams. All NULL: fences are events. */
	int (*flags_create)(struct mdev *d, unsigned n, void **flags);
	void (*flags_destroy)(struct mdev *d, void *flags);
	int (*flag_write)(struct mdev *d, void *flags, unsigned i, uint32_t value, void *stream);
	uint32_t (*flag_read)(struct mdev *d, void *flags, unsigned i);
	int (*status)(struct mdev *d);

	/* graphs by stream capture (NULL when the device cannot) */
	int (*capture_begin)(struct mdev *d, void *s, int mode);
	int (*capture_end)(struct mdev *d, void *s, void **graph);
	int (*capture_status)(struct mdev *d, void *s, int *status);
	/* flags: CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH and _USE_NODE_PRIORITY only */
	int (*graph_instantiate)(struct mdev *d, void *graph, uint64_t flags, void **exec);
	int (*graph_launch)(struct mdev *d, void *exec, void *s);
	void (*graph_destroy)(struct mdev *d, void *graph);
	void (*graph_exec_destroy)(struct mdev *d, void *exec);
	/* wait for stream (or event, or the whole device if both NULL) so the
	 * driver flushes device printf output; called once the work is done */
	void (*flush_output)(struct mdev *d, void *stream, void *event);
	/* number of nodes of a captured graph */
	int (*graph_node_count)(struct mdev *d, void *graph, uint64_t *count);
	/* a copy of a captured graph, with the same nodes and edges */
	int (*graph_clone)(struct mdev *d, void *graph, void **clone);
	/* run fn(arg) in stream order on s; the stream waits until fn returns */
	int (*host_func)(struct mdev *d, void *s, void (*fn)(void *), void *arg);
	/* the args of a captured graph's host-function nodes that call fn: up
	 * to max of them in args, their number in *n */
	int (*graph_host_funcs)(struct mdev *d, void *graph, void (*fn)(void *), void **args, size_t max,
				size_t *n);
	/* a tensor map (include/mearas/tensormap.h): kind an enum
	 * mearas_tmap_kind; the rank, enums, unused entries and the tensor's
	 * place in this client's memory are checked (core/exec_tensormap.c),
	 * the finer rules of cuda.h are the device's. Writes the map's 128
	 * bytes to out. NULL: the device has none (cudaErrorNotSupported). */
	int (*tensor_map_encode)(struct mdev *d, unsigned kind, const struct mearas_tmap_args *a, uint8_t *out);
	/* CUDA arrays, texture and surface objects (core/exec_array.c checks
	 * shapes, formats, flags, boxes and the client's memory first). A
	 * texture's array, when it has one, is `array`; *value is the object
	 * kernels take. NULL: the device has none (cudaErrorNotSupported). */
	int (*array_create)(struct mdev *d, const struct mdev_array *a, void **array);
	/* The device memory an array of this shape takes, its layout's padding
	 * and alignment included, for charging it before it is made. NULL, or
	 * an error: the array is charged at its element bytes. */
	int (*array_footprint)(struct mdev *d, const struct mdev_array *a, uint64_t *bytes);
	void (*array_destroy)(struct mdev *d, void *array);
	int (*array_copy)(struct mdev *d, void *stream, void *array, const struct mdev_array_copy *c);
	int (*tex_create)(struct mdev *d, const struct mearas_tex_args *t, void *array, uint64_t *value);
	void (*tex_destroy)(struct mdev *d, uint64_t value);
	int (*surf_create)(struct mdev *d, void *array, uint64_t *value);
	void (*surf_destroy)(struct mdev *d, uint64_t value);
};

extern const struct mdev_ops mdev_sim_ops;
extern const struct mdev_ops mdev_cuda_ops;

#endif
