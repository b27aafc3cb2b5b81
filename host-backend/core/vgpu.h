/* SPDX-License-Identifier: MIT */
/*
 * One vGPU of a worker: its rings in the client's region, the device (or
 * the other node) behind it, the client's objects by handle, and the
 * completions that wait on the device. Its engine's thread (engine.h) is
 * the only one that runs its records.
 */
#ifndef MEARAS_VGPU_H
#define MEARAS_VGPU_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "device/device.h"
#include "handles.h"
#include "mearas/log.h"
#include "mearas/region.h"
#include "mearas/ring.h"
#include "vaheap.h"

struct worker;
struct vgpu_engine;
struct watchdog;
struct vstat_vgpu;

enum pending_action {
	PENDING_POST,           /* post the completion */
	PENDING_FREE,           /* free arg, then post if wanted (cudaFree is synchronous) */
	PENDING_RESET,          /* reset the vGPU, then post */
	PENDING_RELEASE,        /* a graph launch is done: drop its hold on arg (a struct hf_share) */
};

/* Most completions (and their fences) one vGPU keeps waiting on the device:
 * past it, records that would add one fail with cudaErrorMemoryAllocation. */
#define MEARAS_MAX_PENDING 4096u
/* Fences (device events) one vGPU keeps for reuse once passed. */
#define MEARAS_FENCE_POOL 32u
/* completion flags per vGPU (device.h): fences beyond these are events */
#define MEARAS_FLAG_SLOTS 1024u
/* Most host functions captured into graphs per vGPU, and the most bytes of
 * kernel records (FUNC_GET: parameter offsets) one vGPU may hold. */
#define MEARAS_MAX_CAPTURED_HOST_FUNCS 16384u
/* Most host functions on streams (cudaLaunchHostFunc, not captured) one
 * vGPU keeps waiting for their turn: behind a stream that never finishes
 * they would pile up without end. */
#define MEARAS_MAX_QUEUED_HOST_FUNCS 16384u
/* Most graph nodes one vGPU keeps: recorded into captures still open, in
 * graphs, and once more in each instantiation (the driver's copy). */
#define MEARAS_MAX_GRAPH_NODES (1u << 20)
#define MEARAS_MAX_FUNC_BYTES (64ull << 20)

/* cudaLaunchHostFunc: what the host function's trampoline needs. Run once
 * on a stream, it frees itself; captured into a graph it runs at every
 * launch, so the graph (struct hf_share) owns it. */
struct host_func_req {
	struct vgpu *v;
	uint64_t token;
	bool captured;
	struct host_func_req *next;     /* captured: the list it is on */
};

/* The host functions of one captured graph (and its size), shared by the
 * graph, its instantiations and their launches in flight; freed with the
 * last. */
struct hf_share {
	uint32_t refs;
	struct host_func_req *reqs;
	uint64_t nodes;         /* the graph's nodes (MEARAS_MAX_GRAPH_NODES) */
};

/* A client event that pending completions use as their fence: it is
 * destroyed (EVENT_DESTROY, reset) only once none does. */
struct ev_hold {
	void *ev;
	uint32_t refs;
	bool orphan;            /* the client destroyed it meanwhile */
	struct ev_hold *next;
};

struct pending {
	void *fence;            /* device event to query (none for a flag fence) */
	int own_fence;          /* fence is one of ours (the pool's) */
	uint16_t flag;          /* a flag fence: completion flag flag - 1 ... */
	uint32_t flag_value;    /* ... passed once it reads this */
	uint32_t polls;         /* flag reads that found it not passed yet */
	int want_cqe;
	void *flush_stream;     /* synchronize these once passed, so the driver */
	void *flush_event;      /* flushes device printf output (sync ops only) */
	int flush;
	enum pending_action action;
	uint64_t arg;
	int held;               /* fence is a client event under an ev_hold */
	struct mearas_cqe cqe;
	uint16_t cq;
	uint64_t fetched_ns;    /* when the record was taken from the ring */
	uint16_t op;            /* the record's op (the per-op count of synchronizing records) */
	int poll_status;        /* exec_poll_pending: the fence's state this pass */
};

struct global_range {
	uint64_t va, size;
	uint64_t module;        /* its module's handle: the range goes with it */
};

struct vgpu {
	struct worker *w;
	unsigned index;
	const struct vgpu_engine *engine; /* what runs its records (chosen at setup) */
	void *engine_data;      /* the engine's own state (the forwarder's link) */
	const struct mdev_ops *ops;
	struct mdev *dev;
	struct vaheap heap;
	/* the backend's own view of the layout: never re-read from the region */
	struct mearas_vgpu_rings rings;
	struct mearas_sq_consumer sq;
	struct mearas_cq_producer cq[MEARAS_MAX_THREADS]; /* under cq_lock */
	int kick_fd;
	struct handle_table htab[MEARAS_KIND_COUNT]; /* client objects by kind (ops.spec) */
	void *ptds[MEARAS_MAX_THREADS];         /* per-thread default streams */
	struct pending *pend;
	size_t npend, cap_pend;
	/* our fences, kept for reuse: an event made and destroyed per
	 * synchronizing record costs two driver calls on its latency */
	void *fence_pool[MEARAS_FENCE_POOL];
	unsigned nfence_pool;
	/* cheaper still, where the device has them: completion flags, the
	 * device writing a word of host memory that this thread reads (a set
	 * made on first use: flags_state 0, then 1, or -1 when fences stay
	 * events); a word is free again once its write has been read */
	void *flags;
	int flags_state;
	uint32_t flag_value;    /* the last value written (never 0) */
	uint16_t flag_free[MEARAS_FLAG_SLOTS];
	unsigned nflag_free;
	int ctx_error;          /* the context's sticky error once asked and seen (exec.c) */
	struct global_range *globals;
	size_t nglobals, cap_globals;
	/* heap and globals change under it (on this vGPU's thread, which reads
	 * them without it); other vGPUs' threads read them under it (copies
	 * into this vGPU's memory, exec_dev_owner) */
	pthread_mutex_t heap_lock;
	int deferred_error;     /* deferred.h */
	pthread_mutex_t cq_lock;
	pthread_t thread;
	uint64_t records;
	/* synchronizing records (WANT_CQE) completed, and the host time from
	 * taking each from the ring to posting its completion (device time included) */
	uint64_t sync_calls, sync_ns;
	uint32_t sync_by_op[MEARAS_OP_COUNT]; /* synchronizing records per op, for the client's report */
	/* a module loaded since the vGPU opened may print (device printf,
	 * assert): synchronizations flush the driver's printf buffer from then
	 * on (exec_module.c, exec.c) */
	bool may_print;
	/* host functions waiting for the client (cudaLaunchHostFunc): each run
	 * gets a sequence number (cqe.user_data of its request, `run` of the
	 * client's HOST_FUNC_DONE); hf_done_token is the highest one done */
	pthread_mutex_t hf_lock;
	pthread_cond_t hf_cond;
	uint64_t hf_done_token;
	uint64_t hf_seq;                /* last run posted (under cq_lock) */
	struct host_func_req *hf_loose; /* captured, not (yet) in a graph */
	uint32_t hf_ncaptured;          /* captured requests alive */
	/* graph nodes (MEARAS_MAX_GRAPH_NODES): records captured since a
	 * capture began (captures_open; 0 again once no stream captures), and
	 * those of the graphs and instantiations alive */
	bool captures_open;
	uint64_t capture_nodes, graph_nodes;
	_Atomic uint32_t hf_queued;     /* requests on streams not run yet (their trampolines run elsewhere) */
	struct ev_hold *holds;
	uint64_t func_bytes;            /* kernel records held (MEARAS_MAX_FUNC_BYTES) */
	struct mearas_log_burst refuse_log; /* refused records' lines (the poller's) */
	struct watchdog *watch;         /* GPU time limit (watchdog.c), NULL when off */
	_Atomic bool poller_done;       /* its poller has left its loop */
	_Atomic uint64_t alive_ns;      /* watched vGPUs: when its poller last went round */
	/* rounds of its poller (each polls the pending completions): a remote
	 * session's host function waits for one before asking (exec_stream.c) */
	_Atomic uint64_t poll_rounds;
	struct mearas_devinfo info;     /* ours; the client's copy is in its region */
	int phys;                       /* the GPU behind it (this node's, or the remote node's) */
	struct vstat_vgpu *stats;       /* its shared counters (control/vgpustats.h), NULL: not counted */
};

#endif
