/* SPDX-License-Identifier: MIT */
/*
 * One worker process per client: it owns the client's region, one poller
 * thread per vGPU, and every device object the client created. A client that
 * goes away takes its worker with it, so nothing it held outlives it and a
 * fault in one client cannot touch another.
 */
#ifndef MEARAS_WORKER_H
#define MEARAS_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "device/device.h"
#include "mearas/proto.h"
#include "mearas/ring.h"
#include "remote/remote.h"
#include "vaheap.h"

struct backend_config {
	const struct mdev_ops *dev;
	uint64_t data_default, data_max;
	unsigned vgpus_default;
	int gpu_map[MEARAS_MAX_VGPUS];  /* vGPU -> physical ordinal, -1 = round robin */
	uint64_t quota[MEARAS_MAX_VGPUS]; /* 0 = the GPU's memory */
	unsigned spin_us;               /* poller busy-polls this long before sleeping */
	unsigned va_window_first;       /* VA window of vGPU 0 (remote sessions: the client's ordinal) */
	unsigned kernel_timeout_ms;     /* GPU time limit of one kernel (watchdog.c); 0 = none */
	struct remote_config remote;    /* remote vGPUs and the link server */
};

struct hslot {
	void *obj;
	uint64_t aux;           /* per kind: function's parameter bytes, event flags... */
};

struct handle_table {
	struct hslot *slots;
	uint32_t cap;
};

enum pending_action {
	PENDING_POST,           /* post the completion */
	PENDING_FREE,           /* free arg, then post if wanted (cudaFree is synchronous) */
	PENDING_RESET,          /* reset the vGPU, then post */
	PENDING_RELEASE,        /* a graph launch is done: drop its hold on arg (a struct hf_share) */
};

/* Most completions (and their fences) one vGPU keeps waiting on the device:
 * past it, records that would add one fail with cudaErrorMemoryAllocation. */
#define MEARAS_MAX_PENDING 4096u
/* Most host functions captured into graphs per vGPU, and the most bytes of
 * kernel records (FUNC_GET: parameter offsets) one vGPU may hold. */
#define MEARAS_MAX_CAPTURED_HOST_FUNCS 16384u
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

/* The host functions of one captured graph, shared by the graph, its
 * instantiations and their launches in flight; freed with the last. */
struct hf_share {
	uint32_t refs;
	struct host_func_req *reqs;
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
	void *fence;            /* device event to query */
	int own_fence;          /* destroy the fence when done */
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
	int poll_status;        /* exec_poll_pending: the fence's state this pass */
};

struct global_range {
	uint64_t va, size;
};

struct vgpu {
	struct worker *w;
	unsigned index;
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
	struct global_range *globals;
	size_t nglobals, cap_globals;
	int deferred_error;
	pthread_mutex_t cq_lock;
	pthread_t thread;
	uint64_t records;
	/* synchronizing records (WANT_CQE) completed, and the host time from
	 * taking each from the ring to posting its completion (device time included) */
	uint64_t sync_calls, sync_ns;
	/* host functions waiting for the client (cudaLaunchHostFunc): each run
	 * gets a sequence number (cqe.user_data of its request, `run` of the
	 * client's HOST_FUNC_DONE); hf_done_token is the highest one done */
	pthread_mutex_t hf_lock;
	pthread_cond_t hf_cond;
	uint64_t hf_done_token;
	uint64_t hf_seq;                /* last run posted (under cq_lock) */
	struct host_func_req *hf_loose; /* captured, not (yet) in a graph */
	uint32_t hf_ncaptured;          /* captured requests alive */
	struct ev_hold *holds;
	uint64_t func_bytes;            /* kernel records held (MEARAS_MAX_FUNC_BYTES) */
	/* refused records: log lines in this second, lines dropped */
	uint64_t refuse_window_ns;
	uint32_t refuse_lines, refuse_dropped;
	struct remote_vgpu *remote;     /* set when a remote node backs this vGPU */
	struct watchdog *watch;         /* GPU time limit (watchdog.c), NULL when off */
	_Atomic bool poller_done;       /* its poller has left its loop */
	_Atomic uint64_t alive_ns;      /* watched vGPUs: when its poller last went round */
	struct mearas_devinfo info;     /* ours; the client's copy is in its region */
};

struct worker {
	const struct backend_config *cfg;
	int sock;
	int memfd;
	uint8_t *region;
	uint64_t region_size;
	uint8_t *data;
	uint64_t data_size;
	unsigned nvgpus, nthreads;
	int wake_fds[MEARAS_MAX_THREADS];
	int out_fd, err_fd;     /* read ends of our stdout/stderr pipes */
	/* set by one thread, polled by others (pollers, the socket watcher) */
	_Atomic int stop;
	_Atomic bool broken;
	/* the GPU time limit fired: calls fail with cudaErrorLaunchTimeout and
	 * the process exits, taking the context with it (watchdog.c) */
	_Atomic bool timed_out;
	char tenant[96];        /* who this worker serves, for log lines */
	unsigned va_index0;     /* device address window of vGPU 0 (VM slots use several) */
	unsigned tenant_slot;   /* slot in the tenant table charged for its memory; 0 = none */
	/* completion notification when set (VM transport), else wake_fds */
	void (*wake)(struct worker *w, unsigned cq);
	void *wake_ctx;
	/* VM transport: after a synchronizing record's flush, moves pending
	 * device output to the client; true when the client has output to read */
	bool (*take_output)(struct worker *w);
	struct vgpu vgpus[MEARAS_MAX_VGPUS];
};

struct tenant_peer;
/* worker.c: serve one accepted client connection; returns the exit status.
 * peer: the caller as the kernel told mearasd (SO_PEERCRED); slot: its
 * worker slot in the tenant table (tenant.h). */
int worker_serve_client(const struct backend_config *cfg, int sock, const struct tenant_peer *peer,
			unsigned slot);
/* the same for a caller inside mearasd (a remote node's session): no
 * identity checks, no per-identity accounting */
int worker_serve(const struct backend_config *cfg, int sock);

/* output.c: the worker's stdout/stderr (device printf) go to pipes read by the client */
int worker_capture_output(struct worker *w, char *err, size_t errlen);
int output_capture_pipes(int *out_fd, int *err_fd, char *err, size_t errlen);
bool worker_output_pending(struct worker *w);
/* pieces of worker_serve used by the VM server (vm_slot.c) */
int worker_setup_vgpu(struct worker *w, unsigned i, int ndev, char *err, size_t errlen);
/* writes the region header at w->region for w->nvgpus vGPUs; sets w->data */
void worker_init_region(struct worker *w, uint64_t data_off);

/* exec.c: validate and run one record (already copied out of the ring) */
void exec_record(struct vgpu *v, const struct mearas_sqe *e);
/* poll pending completions; returns how many completed */
int exec_poll_pending(struct vgpu *v);
/* forget every pending completion (the client is gone): fences and holds released */
void exec_drop_pending(struct vgpu *v);
/* post a completion to thread slot cq; false if the client's CQ is corrupt/full */
bool post_cqe(struct vgpu *v, uint16_t cq, const struct mearas_cqe *c);
void vgpu_teardown(struct vgpu *v);
/* complete every pending record with status, waiting for nothing on the
 * device (the GPU time limit fired) */
void exec_fail_pending(struct vgpu *v, int status);
/* ops whose completion also reports an earlier asynchronous error (here and
 * on a remote node's session, which holds errors of its own) */
bool reports_deferred(unsigned op);
/* A HOST_MAPPED record names a range inside a data area of data_size bytes
 * (checked where it runs, and by both nodes of a remote vGPU before they
 * follow the range). */
/* The bytes a 2D range spans: `height` rows of `width` bytes, `pitch`
 * apart, pitch*(height-1)+width, computed without wrapping (2D copies and
 * memsets, here and on both nodes of a remote vGPU). False for an empty
 * range, rows wider than the pitch, or a span past 2^64. */
static inline bool range_2d_span(uint64_t width, uint64_t pitch, uint64_t height, uint64_t *span)
{
	if (!width || !height || width > pitch)
		return false;
	return !__builtin_mul_overflow(pitch, height - 1, span) && !__builtin_add_overflow(*span, width, span);
}

static inline bool host_mapped_valid(const struct mearas_sqe *e, uint64_t data_size)
{
	const struct mearas_args_HOST_MAPPED *a = &e->args.HOST_MAPPED;

	return a->size && a->off <= data_size && a->size <= data_size - a->off && a->mapped <= 1;
}

/* poller.c */
void *poller_main(void *arg);
/* records waiting in the vGPU's submission ring, or -1 (the indices are
 * out of range: logged, the client is marked corrupt by the caller) */
int sq_available(struct vgpu *v);
/* runs every record waiting in the ring; returns how many, or -1 when the
 * ring is corrupt or the client broke it */
int sq_drain(struct vgpu *v);
/* wait up to timeout_ms for a kick on v->kick_fd and consume it (pollers
 * of local and remote vGPUs, once mearas_ring_prepare_sleep said so) */
void sleep_on_kick(struct vgpu *v, int timeout_ms);

/* watchdog.c: the GPU time limit of a process client's kernels */
/* give each local vGPU of w a watchdog when cfg->kernel_timeout_ms is set */
int watchdog_arm(struct worker *w);
/* work was issued on stream: kernel work (counted against the limit), or a
 * wait (for an event or a host function: not counted); func names the kernel */
void watchdog_mark(struct vgpu *v, void *stream, bool kernel, void *func);
/* check the stream heads (at most once a millisecond); returns marks passed;
 * sets w->timed_out when a kernel ran past the limit */
int watchdog_poll(struct vgpu *v);
/* how long an idle poller with work in flight may sleep */
int watchdog_nap_ms(struct vgpu *v);
/* worker's main thread: a watched poller stuck in one driver call (one
 * that waits behind a kernel past the limit) cannot check the limit
 * itself; true (and the client timed out) when one is */
bool watchdog_pollers_stuck(struct worker *w);
/* the limit fired: wake the client's threads, let the pollers fail their
 * waits, then return so the process exits (the driver frees the context) */
void watchdog_teardown(struct worker *w);
/* free v's watchdog and its events (tests; a worker just exits) */
void watchdog_disarm(struct vgpu *v);

/* handles.c */
int htab_put(struct handle_table *t, uint64_t id, void *obj, uint64_t aux);
struct hslot *htab_get(struct handle_table *t, uint64_t id);
void *htab_take(struct handle_table *t, uint64_t id);
void htab_free(struct handle_table *t);

#endif
