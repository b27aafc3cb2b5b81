/* SPDX-License-Identifier: MIT */
/*
 * Remote vGPUs: a vGPU of a client can be backed by a GPU of another node.
 * The forwarding node's worker runs a forwarder for it (forward*.c, reap.c)
 * that sends the vGPU's records over remote-link to the serving node's
 * mearasd, where a worker process of its own runs them on a private region
 * fed by the link's session (serve*.c, session*.c). These are the messages
 * between the two.
 *
 * Messages on the link (all little-endian, remote-link carries them opaquely):
 *   OPEN   call, first message: which GPU, which VA window, data area size
 *          -> reply: status, message, the remote vGPU's devinfo
 *   RECORD post: one SQE, its arena payload, and the data-area bytes it reads
 *          (inline, or sent just before as bulk transfers tagged with the
 *          offset), less the bytes that device-to-host copies still in
 *          flight write (see below)
 *   MAPPED post: bytes of a mapped host range (forward_mapped.c, mapped.c)
 *   REAP   call (long poll; up to REMOTE_REAPS_MAX outstanding, answered
 *          oldest first): answered when completions exist, with a list of
 *          items in order: data-area bytes written by device-to-host copies,
 *          DONE marks, device output, completions. Data always comes before
 *          any completion posted after it.
 *
 * Device-to-host copies in flight: the forwarder sends every device-to-host
 * copy with REMOTE_REC_WANT_DONE and an id, and the serving node answers
 * each with exactly one DONE item carrying that id, after all of its DATA
 * items (at once when it writes nothing now: refused, failed, captured).
 * Until then the copy's bytes may not be in the client's data area yet, but
 * they are (or will be, in stream order) in the serving node's copy of it: a
 * later record that reads an overlapping range (a host-to-device copy from
 * the same pinned buffer on the same stream) must not overwrite them with
 * the client's stale bytes, so the forwarder sends only the bytes of the
 * range that no copy in flight writes.
 */
#ifndef MEARAS_REMOTE_MESSAGES_H
#define MEARAS_REMOTE_MESSAGES_H

#include <stdint.h>

#include "mearas/region.h"

#define REMOTE_MAGIC    0x4d45524du /* "MREM" */
/* the messages' number in the low byte, the records' layout (ops.spec)
 * above it: nodes built from different specs refuse the OPEN. 4: the OPEN
 * reply's devinfo grew (the GPU's PCIe link); 5: the OPEN names the client's
 * data-area address */
#define REMOTE_VERSION  (5u | (MEARAS_OPS_LAYOUT << 8))

/* data at most this large travels inside the RECORD message, larger by bulk */
#define REMOTE_INLINE_DATA_MAX (256u << 10)
/* host-to-device and device-to-host copies of twice this or more travel as
 * pieces of this size (pipelined: network and device copy overlap) */
#define REMOTE_SPLIT_BYTES (4u << 20)
/* a REAP reply carries at most this much */
#define REMOTE_REPLY_MAX (8u << 20)
/* REAP calls a forwarder keeps outstanding (the serving node queues this many) */
#define REMOTE_REAPS_MAX 4u

enum remote_msg_kind { REMOTE_MSG_OPEN = 1, REMOTE_MSG_RECORD = 2, REMOTE_MSG_REAP = 3, REMOTE_MSG_MAPPED = 4 };

/* MAPPED post: bytes of a mapped host range the client's host changed (or
 * the whole range when it becomes mapped); the bytes follow */
struct remote_mapped_msg {
	uint32_t kind, pad;
	uint64_t off, len;
};

struct remote_open_req {
	uint32_t magic, version, kind;
	int32_t gpu;            /* physical GPU on the serving node */
	uint32_t va_window;     /* the client's vGPU ordinal: VA window index */
	uint32_t nthreads;
	uint64_t data_size;     /* the client's data area: the remote one matches it */
	uint64_t quota;         /* 0 = the serving node's own quota */
	uint64_t data_va;       /* the client's data area: the serving node puts its copy there
				 * if it can (mapped host memory needs it; the reply says) */
	char node[64];
};

struct remote_open_reply {
	uint32_t magic;
	int32_t status;         /* 0 or a cudaError_t */
	char message[192];
	struct mearas_devinfo info;
	uint64_t data_va;       /* where the serving node's data area is (mapped memory needs the client's) */
};

#define REMOTE_REC_DATA_NONE   0u
#define REMOTE_REC_DATA_INLINE 1u
#define REMOTE_REC_DATA_BULK   2u
#define REMOTE_REC_BAD_PAYLOAD 4u  /* the client's payload was out of bounds */
#define REMOTE_REC_WANT_DONE   8u  /* a device-to-host copy: answer with a DONE item (done_id) */
#define REMOTE_REC_REFUSED    16u  /* the forwarding node refused it (memory budget): fail it with
				    * cudaErrorMemoryAllocation, do not run it */

struct remote_record_hdr {
	uint32_t kind;
	uint32_t flags;         /* REMOTE_REC_* */
	uint32_t payload_len;   /* arena payload bytes that follow */
	uint32_t done_id;       /* REMOTE_REC_WANT_DONE: the forwarder's id, echoed in the DONE item */
	uint64_t data_off, data_len; /* data-area bytes that follow (or came by bulk) */
	struct mearas_sqe sqe;
};

enum remote_item_type { REMOTE_ITEM_CQE = 1, REMOTE_ITEM_DATA = 2, REMOTE_ITEM_OUTPUT = 3,
			REMOTE_ITEM_FATAL = 4, REMOTE_ITEM_DONE = 5,
			REMOTE_ITEM_MAPPED = 6, /* remote_item_data: bytes of a mapped range the device changed */
			/* remote_item_data_bulk: device-to-host bytes sent just before this reply as a bulk
			 * transfer over the link's data connections (--link-streams): the next one */
			REMOTE_ITEM_DATA_BULK = 7 };
/* device-to-host bytes of a reply go as a bulk transfer over the link's data
 * connections (where it has them) in pieces of this size or more, at most
 * REMOTE_REPLY_BULK_MAX of them per reply (no more than the transfers a
 * data connection may run ahead: remote-link's window, 8) */
#define REMOTE_STRIPE_MIN (1u << 20)
#define REMOTE_REPLY_BULK_MAX 8
/* MAPPED items and messages carry at most this much each */
#define REMOTE_MAPPED_PIECE (64u << 10)

struct remote_item_hdr {
	uint32_t type, len;     /* len: bytes after this header */
};

struct remote_item_cqe {
	uint32_t cq, pad;
	struct mearas_cqe cqe;
};

struct remote_item_data {
	uint64_t off;           /* data-area offset; the bytes follow */
};

struct remote_item_data_bulk {
	uint64_t off, len;      /* data-area offset and bytes of the transfer (its tag: off) */
};

/* a record sent with REMOTE_REC_WANT_DONE wrote all it will write into the data area */
struct remote_item_done {
	uint32_t id, pad;
};

struct remote_item_output {
	uint32_t fd, pad;       /* 1 stdout, 2 stderr; the bytes follow */
};

#endif
