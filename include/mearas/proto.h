/* SPDX-License-Identifier: MIT */
/*
 * mearas wire/ring format: the one definition shared by the guest runtime
 * library, mearasd and remote-link.
 *
 * A client (one CUDA process) and its backend worker share one region:
 *
 *   +-----------------------------+ 0
 *   | struct mearas_region_hdr    |  written by the backend, read-only to the client
 *   +-----------------------------+ hdr.vgpu_off[v]   (one block per vGPU)
 *   | struct mearas_devinfo       |  device properties, VA window, quota
 *   | struct mearas_ring_ctl (SQ) |  client produces, backend consumes
 *   | sqe[sq_entries]             |
 *   | arena[arena_size]           |  payloads too large for an SQE's inline bytes
 *   | per thread slot t:          |
 *   |   struct mearas_ring_ctl(CQ)|  backend produces, client consumes
 *   |   cqe[cq_entries]           |
 *   +-----------------------------+ hdr.data_off
 *   | data area                   |  pinned host memory (cudaMallocHost) and
 *   |                             |  staging buffers; the backend registers it
 *   +-----------------------------+ hdr.region_size
 *
 * Everything is little-endian (both ends are x86-64 or another LE machine;
 * remote-link converts nothing). Indices are free-running 32-bit counters;
 * slot = index & (entries - 1).
 *
 * The backend never trusts anything it reads from the region: it keeps its own
 * copy of the layout, copies each SQE before validating it, and checks ring
 * indices, offsets, lengths and handles (see host-backend/validate.c).
 */
#ifndef MEARAS_PROTO_H
#define MEARAS_PROTO_H

#include <stdint.h>

#define MEARAS_REGION_MAGIC   0x3153415241454d00ULL /* "\0MEARAS1" */
#define MEARAS_PROTO_VERSION  2u

#define MEARAS_MAX_VGPUS      16u
#define MEARAS_MAX_THREADS    64u   /* completion slots per vGPU */
#define MEARAS_SQ_ENTRIES     4096u
#define MEARAS_CQ_ENTRIES     64u
#define MEARAS_ARENA_SIZE     (1u << 20)
#define MEARAS_SQE_INLINE     168u
#define MEARAS_NUM_ATTRS      256u
#define MEARAS_MAX_PARAM_BYTES 32764u /* CUDA's kernel parameter limit */

/* Handles chosen by the client for objects it creates (streams, events,
 * modules, functions, graphs): small integers, so creation needs no round
 * trip. 0 is never a valid id; stream 0 is the legacy default stream and
 * MEARAS_STREAM_PER_THREAD the per-thread default stream of the caller. */
#define MEARAS_MAX_HANDLES    65536u
#define MEARAS_STREAM_LEGACY      0u
#define MEARAS_STREAM_PER_THREAD  0xffffffffu

/* ring_ctl.flags */
#define MEARAS_RING_NEED_WAKEUP  1u   /* consumer sleeps: producer must notify */

struct mearas_ring_ctl {
	uint32_t head;          /* consumer's index */
	uint32_t pad0[15];      /* head and tail on their own cache lines */
	uint32_t tail;          /* producer's index */
	uint32_t pad1[15];
	uint32_t flags;         /* written by the consumer */
	uint32_t pad2[15];
};

/* sqe.flags */
#define MEARAS_SQE_WANT_CQE      1u  /* post a completion to cqe slot sqe.cq */
#define MEARAS_SQE_PAYLOAD_ARENA 2u  /* payload at arena[payload_off] (else inline) */
#define MEARAS_SQE_PER_THREAD    4u  /* "stream 0" means the per-thread default stream */

/*
 * Operations: one table. X(name, sync) -- sync = 1 when the op always
 * produces a completion (the client waits for its result).
 */
#define MEARAS_OPS(X)                   \
	X(NOP, 0)                       \
	X(MEM_ALLOC, 1)                 \
	X(MEM_FREE, 1)                  \
	X(MEM_FREE_ASYNC, 0)            \
	X(MEM_GET_INFO, 1)              \
	X(MEMCPY, 0)                    \
	X(MEMCPY_INLINE, 0)             \
	X(MEMCPY_2D, 0)                 \
	X(MEMSET, 0)                    \
	X(MEMSET_2D, 0)                 \
	X(MODULE_LOAD, 1)               \
	X(MODULE_UNLOAD, 0)             \
	X(FUNC_GET, 1)                  \
	X(FUNC_ATTRS, 1)                \
	X(FUNC_SET_ATTR, 0)             \
	X(OCCUPANCY, 1)                 \
	X(GLOBAL_GET, 1)                \
	X(LAUNCH, 0)                    \
	X(STREAM_CREATE, 0)             \
	X(STREAM_DESTROY, 0)            \
	X(STREAM_SYNC, 1)               \
	X(STREAM_QUERY, 1)              \
	X(STREAM_WAIT_EVENT, 0)         \
	X(EVENT_CREATE, 0)              \
	X(EVENT_DESTROY, 0)             \
	X(EVENT_RECORD, 0)              \
	X(EVENT_SYNC, 1)                \
	X(EVENT_QUERY, 1)               \
	X(EVENT_ELAPSED, 1)             \
	X(CTX_SYNC, 1)                  \
	X(DEVICE_RESET, 1)              \
	X(HOST_FUNC, 0)                 \
	X(HOST_FUNC_DONE, 0)            \
	X(CAPTURE_BEGIN, 0)             \
	X(CAPTURE_END, 1)               \
	X(CAPTURE_STATUS, 1)            \
	X(GRAPH_INSTANTIATE, 1)         \
	X(GRAPH_LAUNCH, 0)              \
	X(GRAPH_DESTROY, 0)             \
	X(GRAPH_EXEC_DESTROY, 0)        \
	X(GRAPH_NODE_COUNT, 1)          \
	X(SYNC_ERROR, 1)                \
	X(HOST_MAPPED, 0)

enum mearas_op {
#define MEARAS_OP_ENUM(name, sync) MEARAS_OP_##name,
	MEARAS_OPS(MEARAS_OP_ENUM)
#undef MEARAS_OP_ENUM
	MEARAS_OP_COUNT
};

/* memcpy directions: the host side is always an offset into the data area
 * (or the SQE payload for MEMCPY_INLINE); device sides are device addresses. */
enum mearas_copy_dir {
	MEARAS_COPY_HTOD = 1,
	MEARAS_COPY_DTOH = 2,
	MEARAS_COPY_DTOD = 3,
	MEARAS_COPY_HTOH = 4,
};

/* Operation arguments. Fields not named by an op are zero. */
struct mearas_sqe_args {
	uint64_t a[7];
};

struct mearas_sqe {
	uint16_t op;
	uint16_t flags;
	uint16_t cq;            /* completion slot (thread slot) */
	uint16_t reserved;
	uint32_t stream;        /* stream handle (0 = legacy default) */
	uint32_t payload_len;
	uint64_t user_data;     /* echoed in the completion */
	uint32_t payload_off;   /* arena offset with MEARAS_SQE_PAYLOAD_ARENA */
	uint32_t reserved2;
	struct mearas_sqe_args args;
	uint8_t inline_payload[MEARAS_SQE_INLINE];
};

struct mearas_cqe {
	uint64_t user_data;
	int32_t status;         /* cudaError_t */
	uint32_t flags;
	uint64_t val[2];
};

/* cqe.flags: an unsolicited completion asking the client to run a host
 * function (cudaLaunchHostFunc); val[0] = client token. The client answers
 * with HOST_FUNC_DONE carrying the same token. */
#define MEARAS_CQE_HOST_FUNC  1u
/* cqe.flags: device printf/assert output is waiting on the output pipes */
#define MEARAS_CQE_OUTPUT     2u

/*
 * Argument meanings (a[i]):
 *   MEM_ALLOC        a0 size                          -> val0 device ptr
 *   MEM_FREE         a0 ptr
 *   MEM_FREE_ASYNC   a0 ptr (stream-ordered)
 *   MEM_GET_INFO                                      -> val0 free, val1 total
 *   MEMCPY           a0 dst, a1 src, a2 size, a3 dir  (host side = data offset)
 *   MEMCPY_INLINE    a0 dst device ptr; payload = bytes
 *   MEMCPY_2D        a0 dst, a1 dpitch, a2 src, a3 spitch, a4 width, a5 height, a6 dir
 *   MEMSET           a0 dst, a1 value, a2 count, a3 element size (1, 2, 4)
 *   MEMSET_2D        a0 dst, a1 pitch, a2 value, a3 width, a4 height
 *   MODULE_LOAD      a0 module id, a1 data offset, a2 size (fat binary image)
 *   MODULE_UNLOAD    a0 module id
 *   FUNC_GET         a0 module id, a1 func id; payload = NUL-terminated name
 *                                                     -> val0 param count
 *   FUNC_ATTRS       a0 func id                       -> val0 = packed attrs (see below)
 *   FUNC_SET_ATTR    a0 func id, a1 attribute (cudaFuncAttribute), a2 value
 *   OCCUPANCY        a0 func id, a1 block size, a2 dynamic smem -> val0 blocks/SM
 *   GLOBAL_GET       a0 module id, a1 size; payload = name -> val0 ptr, val1 size
 *   LAUNCH           a0 func id, a1 grid x|y<<32, a2 grid z|block x<<32,
 *                    a3 block y|z<<32, a4 dynamic smem, a5 flags (1 = cooperative);
 *                    payload = parameter buffer (layout from the fat binary)
 *   STREAM_CREATE    a0 stream id, a1 flags, a2 priority (signed)
 *   STREAM_DESTROY   a0 stream id
 *   STREAM_SYNC      (sqe.stream)
 *   STREAM_QUERY     (sqe.stream)                     status cudaErrorNotReady if busy
 *   STREAM_WAIT_EVENT a0 event id, a1 flags            (sqe.stream waits)
 *   EVENT_CREATE     a0 event id, a1 flags
 *   EVENT_DESTROY    a0 event id
 *   EVENT_RECORD     a0 event id                      (on sqe.stream)
 *   EVENT_SYNC       a0 event id
 *   EVENT_QUERY      a0 event id
 *   EVENT_ELAPSED    a0 start id, a1 end id           -> val0 = float ms bits
 *   CTX_SYNC / DEVICE_RESET
 *   HOST_FUNC        a0 client token                  (on sqe.stream)
 *   HOST_FUNC_DONE   a0 client token
 *   CAPTURE_BEGIN    a0 mode                          (sqe.stream)
 *   CAPTURE_END      a0 graph id                      (sqe.stream)
 *   CAPTURE_STATUS                                    -> val0 cudaStreamCaptureStatus
 *   GRAPH_INSTANTIATE a0 graph id, a1 exec id
 *   GRAPH_LAUNCH     a0 exec id                       (sqe.stream)
 *   GRAPH_DESTROY    a0 graph id;  GRAPH_EXEC_DESTROY a0 exec id
 *   GRAPH_NODE_COUNT a0 graph id                      -> val0 nodes
 *   SYNC_ERROR       returns (and clears) the first deferred error
 *   HOST_MAPPED      a0 data offset, a1 size, a2 1 mapped / 0 no longer: the
 *                    program may hand this pinned range to kernels (a remote
 *                    vGPU keeps it coherent across nodes; a local one has
 *                    nothing to do)
 */

/* FUNC_ATTRS packing: val0 = numRegs | maxThreadsPerBlock << 16 | ptxVersion << 32 | binaryVersion << 48,
 *                     val1 = sharedSizeBytes | localSizeBytes << 24 | constSizeBytes << 48 (clamped) */

/* Device description written by the backend for each vGPU. */
struct mearas_devinfo {
	char name[256];
	uint8_t uuid[16];
	uint64_t total_mem;     /* the vGPU's memory quota, or the GPU's memory */
	uint64_t va_base;       /* this vGPU's device virtual-address window */
	uint64_t va_size;
	int32_t driver_version;
	int32_t ordinal;        /* physical ordinal on its node (informational) */
	uint32_t is_remote;
	uint32_t is_sim;
	int32_t attrs[MEARAS_NUM_ATTRS]; /* indexed by cudaDeviceAttr / CUdevice_attribute */
};

/* region_hdr.state (backend-owned) */
#define MEARAS_BACKEND_READY   1u
#define MEARAS_BACKEND_DEAD    2u
/* mearasd's GPU time limit (--kernel-timeout-ms) ended this client's context:
 * every call fails with cudaErrorLaunchTimeout */
#define MEARAS_BACKEND_TIMED_OUT 3u

struct mearas_region_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size;
	uint64_t region_size;
	uint32_t nvgpus;
	uint32_t nthreads;      /* completion slots per vGPU */
	uint32_t sq_entries;
	uint32_t cq_entries;
	uint32_t arena_size;
	uint32_t state;
	uint64_t data_off;
	uint64_t data_size;
	uint64_t vgpu_off[MEARAS_MAX_VGPUS];
	uint64_t vgpu_size;
};

/* Offsets inside a vGPU block. */
struct mearas_vgpu_layout {
	uint64_t devinfo, sq_ctl, sqes, arena, cqs, cq_stride, size;
};

static inline uint64_t mearas_align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static inline struct mearas_vgpu_layout mearas_vgpu_layout(uint32_t sq_entries, uint32_t cq_entries,
							   uint32_t arena_size, uint32_t nthreads)
{
	struct mearas_vgpu_layout l;
	uint64_t off = 0;

	l.devinfo = off;
	off = mearas_align_up(off + sizeof(struct mearas_devinfo), 4096);
	l.sq_ctl = off;
	off = mearas_align_up(off + sizeof(struct mearas_ring_ctl), 64);
	l.sqes = off;
	off = mearas_align_up(off + (uint64_t)sq_entries * sizeof(struct mearas_sqe), 4096);
	l.arena = off;
	off = mearas_align_up(off + arena_size, 4096);
	l.cqs = off;
	l.cq_stride = mearas_align_up(sizeof(struct mearas_ring_ctl) +
				      (uint64_t)cq_entries * sizeof(struct mearas_cqe), 64);
	off = mearas_align_up(off + l.cq_stride * nthreads, 4096);
	l.size = off;
	return l;
}

_Static_assert(sizeof(struct mearas_sqe) == 256, "SQE is 256 bytes");
_Static_assert(sizeof(struct mearas_cqe) == 32, "CQE is 32 bytes");
_Static_assert(sizeof(struct mearas_ring_ctl) == 192, "ring control is 3 cache lines");

static inline const char *mearas_op_name(unsigned op)
{
	static const char *const names[] = {
#define MEARAS_OP_NAME(name, sync) #name,
		MEARAS_OPS(MEARAS_OP_NAME)
#undef MEARAS_OP_NAME
	};
	return op < MEARAS_OP_COUNT ? names[op] : "INVALID";
}

static inline int mearas_op_is_sync(unsigned op)
{
	static const unsigned char sync[] = {
#define MEARAS_OP_SYNC(name, s) s,
		MEARAS_OPS(MEARAS_OP_SYNC)
#undef MEARAS_OP_SYNC
	};
	return op < MEARAS_OP_COUNT ? sync[op] : 0;
}

/*
 * Process transport handshake on mearasd's unix socket. The client sends a
 * hello; the backend answers with a welcome and, in the same message
 * (SCM_RIGHTS), the region's memfd, one "kick" eventfd per vGPU (client ->
 * poller), one "wake" eventfd per thread slot (backend -> client), and the
 * read ends of the worker's stdout and stderr pipes (device printf/assert
 * output, which the client writes to its own stdout/stderr).
 */
#define MEARAS_HELLO_MAGIC    0x4f4c4c4548534d00ULL
#define MEARAS_WELCOME_MAGIC  0x454d4f434c454d00ULL

struct mearas_hello {
	uint64_t magic;
	uint32_t version;
	uint32_t nvgpus;        /* vGPUs wanted (0 = backend default) */
	uint64_t data_size;     /* data area wanted, bytes (0 = backend default) */
	int32_t pid;
	uint32_t flags;
	char assembly[64];      /* booked assembly id, or "" */
};

struct mearas_welcome {
	uint64_t magic;
	uint32_t version;
	int32_t status;         /* 0, or a cudaError_t explaining the refusal */
	uint64_t region_size;
	uint32_t nvgpus;
	uint32_t nthreads;
	uint64_t region_addr;   /* where the worker mapped the region: mapped at the
				 * same address, host pointers into it are device
				 * pointers too (UVA), so mapped pinned memory works */
	char message[192];      /* human-readable reason when status != 0 */
};

#endif
