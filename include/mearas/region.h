/* SPDX-License-Identifier: MIT */
/*
 * The region and record format of mearas: the one definition shared by the
 * guest runtime library, mearasd and the remote vGPU messages (the ring
 * protocol is ring.h's, the ops are include/mearas/ops.spec's).
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
 * indices, offsets, lengths and handles (host-backend/core/exec*.c).
 */
#ifndef MEARAS_REGION_H
#define MEARAS_REGION_H

#include <stdint.h>

#include "mearas/ops.gen.h"

#define MEARAS_REGION_MAGIC   0x3153415241454d00ULL /* "\0MEARAS1" */
/* the protocol's number in the low byte, the records' layout above it: a
 * front end and a daemon built from different ops.spec refuse each other
 * instead of misreading records (a stale guest image did) */
#define MEARAS_PROTO_NUMBER   2u
#define MEARAS_PROTO_VERSION  (MEARAS_PROTO_NUMBER | (MEARAS_OPS_LAYOUT << 8))

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
	uint32_t pad2;
	/* CQ 0 only, written by its consumer (the client): the highest host-
	 * function run it has finished. The back end's waiting host function
	 * reads it, so a finished run is seen even while the poller that would
	 * take the HOST_FUNC_DONE record is held up in the driver (which can
	 * wait for that very host function: cuModuleLoadData does). Zeroed when
	 * the back end wires the rings; a remote serving session leaves it
	 * alone (docs/architecture.md says why). */
	uint64_t consumer_done;
	uint32_t pad3[12];
};
_Static_assert(sizeof(struct mearas_ring_ctl) == 192, "ring control: three cache lines");

/* sqe.flags */
#define MEARAS_SQE_WANT_CQE      1u  /* post a completion to cqe slot sqe.cq */
#define MEARAS_SQE_PAYLOAD_ARENA 2u  /* payload at arena[payload_off] (else inline) */
#define MEARAS_SQE_PER_THREAD    4u  /* "stream 0" means the per-thread default stream */

/* args.LAUNCH.flags: the launch attributes a record carries. Only values
 * travel (no handles, no pointers); the back end hands each to the driver
 * as the attribute of the same name and refuses bits it does not know. */
#define MEARAS_LAUNCH_COOPERATIVE        (1u << 0)
#define MEARAS_LAUNCH_PROGRAMMATIC       (1u << 1)  /* programmatic stream serialization allowed */
#define MEARAS_LAUNCH_SYNC_DOMAIN_REMOTE (1u << 2)  /* memory synchronization domain: remote */
#define MEARAS_LAUNCH_PRIORITY           (1u << 3)  /* priority in bits 8..15 (signed) */
#define MEARAS_LAUNCH_CARVEOUT           (1u << 4)  /* preferred shared memory carveout in bits 16..23 */
#define MEARAS_LAUNCH_POLICY_SHIFT       5u         /* bits 5..6: cluster scheduling policy preference */
#define MEARAS_LAUNCH_POLICY_MASK        (3u << MEARAS_LAUNCH_POLICY_SHIFT)
#define MEARAS_LAUNCH_PRIORITY_SHIFT     8u
#define MEARAS_LAUNCH_CARVEOUT_SHIFT     16u
#define MEARAS_LAUNCH_KNOWN                                                                              \
	(MEARAS_LAUNCH_COOPERATIVE | MEARAS_LAUNCH_PROGRAMMATIC | MEARAS_LAUNCH_SYNC_DOMAIN_REMOTE |     \
	 MEARAS_LAUNCH_PRIORITY | MEARAS_LAUNCH_CARVEOUT | MEARAS_LAUNCH_POLICY_MASK |                    \
	 (0xffu << MEARAS_LAUNCH_PRIORITY_SHIFT) | (0xffu << MEARAS_LAUNCH_CARVEOUT_SHIFT))

/* The ops, their typed arguments and properties: generated from
 * include/mearas/ops.spec (scripts/opgen.py into build/gen). */
#include "mearas/ops.gen.h"

/* memcpy directions: the host side is always an offset into the data area
 * (or the SQE payload for MEMCPY_INLINE); device sides are device addresses. */
enum mearas_copy_dir {
	MEARAS_COPY_HTOD = 1,
	MEARAS_COPY_DTOH = 2,
	MEARAS_COPY_DTOD = 3,
	MEARAS_COPY_HTOH = 4,
};

/* EVENT_RECORD flags: an external record (CUDA's cudaEventRecordExternal,
 * CU_EVENT_RECORD_EXTERNAL), a record node when captured into a graph */
#define MEARAS_EVENT_RECORD_EXTERNAL 1u
/* STREAM_WAIT_EVENT flags: an external wait (cudaEventWaitExternal,
 * CU_EVENT_WAIT_EXTERNAL), a wait node when captured */
#define MEARAS_EVENT_WAIT_EXTERNAL 1u

/* stream memory operations (STREAM_WRITE_VALUE, STREAM_WAIT_VALUE): where
 * the word is, and the wait's condition (the driver's CU_STREAM_WAIT_VALUE_*
 * numbers; a wait's flags may add MEARAS_MEMOP_FLUSH) */
enum mearas_memop_place {
	MEARAS_MEMOP_DEVICE = 0,        /* addr: device memory of the client */
	MEARAS_MEMOP_HOST = 1,          /* addr: an offset into the data area (pinned host memory) */
};
enum mearas_memop_cond {
	MEARAS_MEMOP_GEQ = 0,
	MEARAS_MEMOP_EQ = 1,
	MEARAS_MEMOP_AND = 2,
	MEARAS_MEMOP_NOR = 3,
};
#define MEARAS_MEMOP_FLUSH (1u << 30)
#define MEARAS_MEMOP_NO_BARRIER 1u /* a write's only flag */

/* Operation arguments: op NAME's are args.NAME (struct mearas_args_NAME,
 * written by mearas_prep_NAME). The raw words `a` are for code that moves
 * records as bytes (forwarding, hostile tests), never for reading an op's
 * arguments. Fields an op does not name are zero. */
union mearas_sqe_args {
	MEARAS_SQE_ARGS_MEMBERS
};
MEARAS_SQE_ARGS_CHECKS

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
	union mearas_sqe_args args;
	uint8_t inline_payload[MEARAS_SQE_INLINE];
};

struct mearas_cqe {
	uint64_t user_data;
	int32_t status;         /* cudaError_t */
	uint32_t flags;
	uint64_t val[2];
};

/* cqe.flags: an unsolicited completion asking the client to run a host
 * function (cudaLaunchHostFunc); val[0] = client token, user_data = the
 * run's sequence number (a host function captured in a graph runs at every
 * launch). The client answers with HOST_FUNC_DONE carrying both. */
#define MEARAS_CQE_HOST_FUNC  1u
/* cqe.flags: device printf/assert output is waiting on the output pipes */
#define MEARAS_CQE_OUTPUT     2u

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
	/* virtual memory management (cuMemCreate, cuMemMap...): sizes, addresses
	 * and offsets are multiples of this (the heap's chunk granularity) */
	uint64_t vmm_granularity;
	/* the PCIe link of the GPU behind the vGPU, as its node's sysfs gave
	 * it when the vGPU was opened (generation 1..6, width in lanes; 0:
	 * unknown). Zeros from a mearasd that predates them: the region is
	 * zero-filled and the devinfo block keeps its 4 KiB slot. */
	struct mearas_pcie_link {
		uint32_t cur_gen, max_gen, gpu_max_gen;
		uint32_t cur_width, max_width;
		uint32_t pad;
	} pcie;
	/* the NVIDIA kernel driver's version on the GPU's node ("580.159.04"),
	 * for nvmlSystemGetDriverVersion; empty when unknown (the sim device, a
	 * mearasd that predates it) */
	char kmd_version[32];
};
/* the devinfo keeps its 4 KiB slot (mearas_layout): an older front end
 * finds the rings where it expects them */
_Static_assert(sizeof(struct mearas_devinfo) <= 4096, "mearas_devinfo outgrew its 4 KiB slot");

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

/* A range of data-area bytes: rows of width bytes, pitch apart (one row for
 * a plain range). */
struct mearas_span {
	uint64_t off, pitch, width, rows;
};

#include "mearas/array.h" /* MEMCPY_ARRAY's directions, for the spans below */
#include "mearas/ops_inline.gen.h"

static inline const char *mearas_op_name(unsigned op)
{
	return mearas_op_props(op)->name;
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
