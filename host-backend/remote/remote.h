/* SPDX-License-Identifier: MIT */
/*
 * Remote vGPUs: a vGPU of a client can be backed by a GPU of another node.
 * The client node's worker runs a forwarding poller for it (remote_client.c)
 * that sends the vGPU's records over remote-link to the remote node's
 * mearasd, where a worker process of its own runs them on a private region
 * fed by a "fake guest" thread (remote_server.c).
 *
 * Messages on the link (all little-endian, remote-link carries them opaquely):
 *   OPEN   call, first message: which GPU, which VA window, data area size
 *          -> reply: status, message, the remote vGPU's devinfo
 *   RECORD post: one SQE, its arena payload, and the data-area bytes it reads
 *          (inline, or sent just before as bulk transfers tagged with the
 *          offset), less the bytes that device-to-host copies still in
 *          flight write (see below)
 *   REAP   call (long poll; up to REMOTE_REAPS_MAX outstanding, answered
 *          oldest first): answered when completions exist, with a list of
 *          items in order: data-area bytes written by device-to-host copies,
 *          DONE marks, device output, completions. Data always comes before
 *          any completion posted after it.
 *
 * Device-to-host copies in flight: the client sends every device-to-host
 * copy with REMOTE_REC_WANT_DONE and an id, and the remote node answers each
 * with exactly one DONE item carrying that id, after all of its DATA items
 * (at once when it writes nothing now: refused, failed, captured). Until
 * then the copy's bytes may not be in the client's data area yet, but they
 * are (or will be, in stream order) in the remote node's copy of it: a later
 * record that reads an overlapping range (a host-to-device copy from the
 * same pinned buffer on the same stream) must not overwrite them with the
 * client's stale bytes, so the client sends only the bytes of the range that
 * no copy in flight writes.
 */
#ifndef MEARAS_REMOTE_H
#define MEARAS_REMOTE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "mearas/proto.h"

#define REMOTE_MAGIC    0x4d45524du /* "MREM" */
#define REMOTE_VERSION  3u
#define REMOTE_HOST_MAX 256

/* data at most this large travels inside the RECORD message, larger by bulk */
#define REMOTE_INLINE_DATA_MAX (256u << 10)
/* host-to-device and device-to-host copies of twice this or more travel as
 * pieces of this size (pipelined: network and device copy overlap) */
#define REMOTE_SPLIT_BYTES (4u << 20)
/* a REAP reply carries at most this much */
#define REMOTE_REPLY_MAX (8u << 20)
/* Pollers of a remote vGPU (both nodes) stay awake at least this long after
 * their last record when spinning is on (--spin-us > 0) and the node has
 * REMOTE_SPIN_MIN_CPUS cores or more: a synchronous call's next record comes
 * one network round trip later, and a wakeup per hop costs more than the
 * spin. With fewer cores the spinning threads would take turns on them, and
 * every hop would wait for a time slice instead. */
#define REMOTE_SPIN_US 250u
#define REMOTE_SPIN_MIN_CPUS 4
/* REAP calls a client keeps outstanding (the remote node queues this many) */
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
	int32_t gpu;            /* physical GPU on the remote node */
	uint32_t va_window;     /* the client's vGPU ordinal: VA window index */
	uint32_t nthreads;
	uint64_t data_size;     /* the client's data area: the remote one matches it */
	uint64_t quota;         /* 0 = the remote node's own quota */
	char node[64];
};

struct remote_open_reply {
	uint32_t magic;
	int32_t status;         /* 0 or a cudaError_t */
	char message[192];
	struct mearas_devinfo info;
	uint64_t data_va;       /* where the remote node's data area is (mapped memory needs the client's) */
};

#define REMOTE_REC_DATA_NONE   0u
#define REMOTE_REC_DATA_INLINE 1u
#define REMOTE_REC_DATA_BULK   2u
#define REMOTE_REC_BAD_PAYLOAD 4u  /* the client's payload was out of bounds */
#define REMOTE_REC_WANT_DONE   8u  /* a device-to-host copy: answer with a DONE item (done_id) */
#define REMOTE_REC_REFUSED    16u  /* the client node refused it (memory budget): fail it with
				    * cudaErrorMemoryAllocation, do not run it */

struct remote_record_hdr {
	uint32_t kind;
	uint32_t flags;         /* REMOTE_REC_* */
	uint32_t payload_len;   /* arena payload bytes that follow */
	uint32_t done_id;       /* REMOTE_REC_WANT_DONE: the client's id, echoed in the DONE item */
	uint64_t data_off, data_len; /* data-area bytes that follow (or came by bulk) */
	struct mearas_sqe sqe;
};

enum remote_item_type { REMOTE_ITEM_CQE = 1, REMOTE_ITEM_DATA = 2, REMOTE_ITEM_OUTPUT = 3,
			REMOTE_ITEM_FATAL = 4, REMOTE_ITEM_DONE = 5,
			REMOTE_ITEM_MAPPED = 6 /* remote_item_data: bytes of a mapped range the device changed */ };
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

/* a record sent with REMOTE_REC_WANT_DONE wrote all it will write into the data area */
struct remote_item_done {
	uint32_t id, pad;
};

struct remote_item_output {
	uint32_t fd, pad;       /* 1 stdout, 2 stderr; the bytes follow */
};

/* A vGPU backed by a remote node (client side configuration). */
struct remote_target {
	char host[REMOTE_HOST_MAX];
	uint16_t port;
	int gpu;
};

struct remote_config {
	struct remote_target target[MEARAS_MAX_VGPUS]; /* host "" = local */
	char key_file[REMOTE_HOST_MAX];
	uint8_t key[256];
	size_t key_len;
	const char *link_bind;  /* server: address to bind ("" = any) */
	uint16_t link_port;     /* server: 0 = no link server */
	uint32_t dead_ms;       /* link dead bound (0 = library default, 3 s) */
	uint32_t batch_msgs;    /* records per link batch (0 = library default, 1 = no batching) */
	uint32_t batch_us;      /* time bound of a batch (0 = none: sent when the ring is drained) */
	/* server admission (0 = library default, remote_link.h) */
	uint32_t handshake_ms;  /* accept to authenticated link */
	uint32_t max_pending;   /* connections in the handshake at once */
	uint32_t max_links;     /* remote vGPUs (links) served at once */
	uint32_t fd_reserve;    /* fds kept free for the rest of mearasd */
	uint64_t link_mem;      /* bytes one link may make this node allocate (0 = REMOTE_LINK_MEM_AUTO) */
	bool encryption_off;    /* --link-encryption=off: links in clear text (both ends must agree) */
};

/* The rows a device-to-host copy (MEMCPY or MEMCPY_2D) writes into a data
 * area of data_size bytes; false for other records and for rows out of it. */
bool remote_d2h_range(const struct mearas_sqe *e, uint64_t data_size, struct mearas_span *r);

/* ---- what one link may make the remote node allocate (remote_budget.h) ---- */
#include "budget.h"
/* A link's budget when --link-mem-mb is not given: its data area plus this. */
#define REMOTE_LINK_MEM_EXTRA (64ull << 20)
/* The session thread stops reading completions while its queued replies
 * hold this much (the client's REAP calls drain them): flow control. */
#define REMOTE_QUEUE_SOFT (4ull * REMOTE_REPLY_MAX)
/* ... and never holds more than this (items past it are lost, with an error) */
#define REMOTE_QUEUE_MAX (2 * REMOTE_QUEUE_SOFT)

/* ---- tokens: records in flight, by a token that replaces user_data ---- */
struct remote_token {
	uint64_t user_data;     /* the original */
	uint16_t cq, op;
	uint8_t want_cqe, used;
	uint64_t off, width, pitch, rows; /* device-to-host destination rows */
	struct mearas_span *ranges; /* a graph launch: more of them (malloc'd) */
	uint32_t nranges;
	uint8_t capture_begin;  /* a CAPTURE_BEGIN on the stream of key stream_key */
	uint8_t want_done;      /* send a DONE item with done_id after its data */
	uint32_t done_id;
	uint64_t stream_key;
};

struct remote_tokens {
	pthread_mutex_t lock;
	struct remote_token *e;
	uint64_t *tok;
	uint32_t cap, used;
	uint64_t next;
	int failed;             /* set once: no more tokens */
};

int remote_tokens_init(struct remote_tokens *t, uint32_t cap);
/* 0 when the table is full or failed */
uint64_t remote_tokens_add(struct remote_tokens *t, const struct remote_token *in);
bool remote_tokens_take(struct remote_tokens *t, uint64_t token, struct remote_token *out);
/* Marks the table failed and hands every entry still in flight to fn. */
void remote_tokens_fail(struct remote_tokens *t, void (*fn)(void *ctx, const struct remote_token *e),
			void *ctx);

/* How long a remote vGPU's threads spin (us) given --spin-us; 0: never. */
unsigned remote_spin_us(unsigned cfg_spin_us);

/* ---- stream capture on the remote node (remote_capture.c) ---- */
struct remote_captures;
struct remote_captures *remote_captures_new(void);
void remote_captures_free(struct remote_captures *c);
/* Its tables and ranges are taken from b from now on (NULL: no limit). */
void remote_captures_set_budget(struct remote_captures *c, struct remote_budget *b);
uint64_t remote_stream_key(const struct mearas_sqe *e);
/* Follows captures, graphs and executable graphs; false when out of memory.
 * c NULL (the device has no graphs): every call does nothing. */
bool remote_captures_note(struct remote_captures *c, const struct mearas_sqe *e);
/* The device refused the CAPTURE_BEGIN on this stream: it is not capturing. */
void remote_captures_begin_failed(struct remote_captures *c, uint64_t stream_key);
/* A device-to-host copy on a capturing stream: keeps its range with the
 * capture and returns true (ok false when out of memory). */
bool remote_captures_take_copy(struct remote_captures *c, const struct mearas_sqe *e, const struct mearas_span *r,
			       bool *ok);
/* A GRAPH_LAUNCH: the ranges its graph writes (malloc'd copy, *n 0 if none);
 * false when out of memory. */
bool remote_captures_launch_ranges(struct remote_captures *c, const struct mearas_sqe *e, struct mearas_span **out,
				   uint32_t *n);

/* ---- mapped host memory kept coherent across nodes (remote_mapped.c) ---- */
struct remote_mapped;
struct remote_mapped *remote_mapped_new(void);
void remote_mapped_free(struct remote_mapped *m);
/* Any range mapped? (no lock: the fast path's check) */
bool remote_mapped_any(const struct remote_mapped *m);
/* Shadows are taken from b from now on (NULL: no limit; set before any range). */
void remote_mapped_set_budget(struct remote_mapped *m, struct remote_budget *b);
/* [off, off + size) of the data area base is mapped (on) or no longer; the
 * shadow starts as base's bytes. false when out of memory or budget. */
bool remote_mapped_set(struct remote_mapped *m, const uint8_t *base, uint64_t off, uint64_t size, bool on);
/* [off, off + len) of base is known to both nodes now (a copy carried it):
 * the shadow takes it, so it does not count as a change. */
void remote_mapped_absorb(struct remote_mapped *m, const uint8_t *base, uint64_t off, uint64_t len);
/* Bytes the other node changed: into base and the shadow at once. */
void remote_mapped_write(struct remote_mapped *m, uint8_t *base, uint64_t off, const void *bytes, uint64_t len);
/* emit(ctx, off, bytes, len) for every run of bytes where base differs from
 * the shadow (this node's changes), which the shadow then takes; emit runs
 * under the table's lock and returns nonzero to stop. Returns bytes sent. */
typedef int (*remote_mapped_emit_fn)(void *ctx, uint64_t off, const uint8_t *bytes, uint64_t len);
uint64_t remote_mapped_diff(struct remote_mapped *m, const uint8_t *base, remote_mapped_emit_fn emit, void *ctx);

/* ---- configuration (mearasd options) ---- */
/* --remote=VGPU=HOST:PORT[/GPU] */
int remote_parse_target(struct remote_config *rc, const char *spec);
int remote_load_key(struct remote_config *rc, const char *path);
bool remote_vgpu_is_remote(const struct remote_config *rc, unsigned vgpu);
struct mearas_link_config;
void remote_link_config(const struct remote_config *rc, struct mearas_link_config *lc);

struct worker;
struct vgpu;
struct backend_config;

/* ---- client side (remote_client.c) ---- */
/* Connects and opens the remote vGPU; fills its devinfo. */
int remote_client_open(struct vgpu *v, const struct remote_target *t, struct mearas_devinfo *info,
		       char *err, size_t errlen);
/* The forwarding poller: thread main for a remote vGPU. */
void *remote_client_main(void *arg);

/* ---- server side (remote_server.c) ---- */
int remote_server_start(const struct backend_config *cfg);
void remote_server_stop(void);

#endif
