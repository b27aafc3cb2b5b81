/* SPDX-License-Identifier: MIT */
/*
 * One remote vGPU on the serving node (serve*.c runs it): what its link's
 * messages do to the worker's rings and data area (session.c,
 * session_feed.c), and what goes back (session_reply.c). Everything here
 * reads what the forwarding node sent, which this node does not trust:
 * records, payloads, HOST_MAPPED ranges, bulk chunks and mapped bytes are
 * checked against the session's own data area and ring before the worker
 * sees them. It touches no link and starts no process: serve.c owns the
 * link, serve_worker.c the worker process and the session thread, and
 * tests/fuzz/fuzz_remote_records drives these functions with a worker of
 * its own.
 */
#ifndef MEARAS_REMOTE_SESSION_H
#define MEARAS_REMOTE_SESSION_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "budget.h"
#include "mearas/ring.h"
#include "messages.h"
#include "remote_link.h"
#include "rxserve.h"
#include "tokens.h"

struct remote_captures;
struct remote_mapped;

/* The session thread stops reading completions while its queued replies
 * hold this much (the forwarder's REAP calls drain them): flow control. */
#define REMOTE_QUEUE_SOFT (4ull * REMOTE_REPLY_MAX)
/* ... and never holds more than this (items past it are lost, with an error) */
#define REMOTE_QUEUE_MAX (2 * REMOTE_QUEUE_SOFT)

enum out_type { OUT_CQE = 1, OUT_DATA, OUT_OUTPUT, OUT_FATAL, OUT_DONE, OUT_MAPPED };

struct out_item {
	enum out_type type;
	uint32_t cq;
	struct mearas_cqe cqe;
	uint64_t off, width, pitch, rows, row, col; /* OUT_DATA, progress kept across replies */
	uint32_t fd;
	uint32_t done_id;       /* OUT_DONE */
	uint8_t *bytes;         /* OUT_OUTPUT / OUT_FATAL */
	size_t nbytes;
};

/* completions read by one pass over the worker's rings */
struct held {
	struct out_item *v;
	size_t n, cap;
};

struct remote_session {
	struct mearas_link_conn *conn;
	pthread_t thread;
	bool thread_started;
	struct remote_open_req open;
	uint64_t open_seq;
	int ready;              /* atomic: 1 region up, -1 worker gone or never started */
	int sleeping;           /* atomic: the session thread is (about to be) in poll */
	int closing;            /* atomic */
	pid_t child;
	int sock;
	uint8_t *region;
	uint64_t region_size;
	uint8_t *data;
	uint64_t data_size;
	unsigned nthreads;
	struct mearas_vgpu_rings rings;
	int kick_fd, out_fd, err_fd, notify_fd;
	int wake_fds[MEARAS_MAX_THREADS];
	struct mearas_sq_producer sq;   /* link thread */
	struct mearas_cq_consumer cq[MEARAS_MAX_THREADS]; /* session thread */
	int held_error;
	uint64_t last_active_ns; /* atomic: last record fed or completion seen */
	struct remote_tokens tokens;
	struct remote_captures *caps; /* link thread only */
	struct remote_mapped *mapped; /* mapped host ranges (mapped.c) */
	uint64_t worker_data_va;      /* the worker's data area address */
	uint32_t streams;             /* atomic: data connections device-to-host bytes go over (0: none yet) */
	/* outgoing items and the outstanding REAP call */
	pthread_mutex_t qlock;
	struct out_item *q;
	size_t qhead, qlen, qcap;
	uint64_t reap_seq[REMOTE_REAPS_MAX]; /* outstanding REAP calls, oldest first */
	unsigned nreap;
	uint64_t qbytes;        /* atomic (written under qlock): what the queue holds */
	uint8_t *reply;
	struct remote_budget budget;
	int budget_error;       /* atomic: a refusal no completion carried, for the next sync */
	/* Who reads the worker's completions and replies (serve_worker.c): the
	 * link's receive thread while it serves (rxserve.h), else the session
	 * thread; harvest_lock makes it one at a time and guards held/fresh. */
	pthread_mutex_t harvest_lock;
	struct held held, fresh;
	struct rx_serve rx;
	uint64_t replies_rx, replies_thread; /* REAP replies each sent (under harvest_lock) */
};

/* A REAP reply being built: item headers and small bytes in the session's
 * reply buffer, device-to-host bytes of REMOTE_REF_MIN or more sent from the
 * data area itself. */
#define REMOTE_REF_MIN (64u << 10)

struct reply_build {
	uint8_t *buf;
	size_t used, len;       /* bytes of buf used; bytes of the whole reply */
	struct iovec iov[MEARAS_LINK_REPLY_IOV_MAX];
	int n;
	bool last_in_buf;       /* iov[n - 1] ends at buf + used: extend it */
	/* DATA_BULK items: data-area ranges to send as bulk transfers, in
	 * order, before the reply (they count towards REMOTE_REPLY_MAX too) */
	struct span_out { uint64_t off, len; } bulk[REMOTE_REPLY_BULK_MAX];
	int nbulk;
	uint64_t bulk_bytes;
};

/* A session for link c (its peer names it in log lines), not ready: NULL
 * without memory. graphs: the device captures streams, so captures are
 * followed. A session whose tables could not be made is marked ready = -1. */
struct remote_session *remote_session_new(struct mearas_link_conn *c, bool graphs);
/* Frees what remote_session_new made and what the queue and tokens hold;
 * the worker's region, fds and the session thread are the caller's. */
void remote_session_free(struct remote_session *s);
/* The worker's region (its header written by the worker) is mapped at
 * region, at region_addr in the worker: the session's view of its rings. */
void remote_session_map(struct remote_session *s, uint8_t *region, uint64_t region_addr);
/* The worker is up: records are fed from now on, within a budget of
 * link_mem bytes (0: the data area plus REMOTE_LINK_MEM_EXTRA). */
void remote_session_start(struct remote_session *s, uint64_t link_mem);

/* One message of the link (link thread). true: an OPEN request, which the
 * caller handles (it starts the worker); everything else is done here. */
bool remote_session_message(struct remote_session *s, uint64_t seq, bool wants_reply, const void *data,
			    size_t len);
/* Bulk bytes: where len bytes of chunk (tag, offset) may be read straight
 * into the data area, or NULL; and the chunk once read (data may be that). */
void *remote_session_chunk_dest(struct remote_session *s, uint64_t tag, uint64_t offset, size_t len);
void remote_session_chunk(struct remote_session *s, uint64_t tag, uint64_t offset, const void *data, size_t len);

/* Session thread: the worker has exited (fresh takes what its rings held). */
void remote_session_worker_gone(struct remote_session *s, struct held *fresh);
/* One round of reading the worker's rings: completions read in one pass go
 * to the queue after the next pass, so that the data posted before them
 * leaves first (held: read by the last round; fresh: scratch). */
void remote_session_collect(struct remote_session *s, struct held *held, struct held *fresh);
/* qlock held: the next REAP reply, built from the head of the queue, and
 * the seq of the REAP call it answers; false when there is none to send. */
bool remote_session_next_reply(struct remote_session *s, uint64_t *seq, struct reply_build *r);
/* qlock held: the next REAP reply would be small (REMOTE_REPLY_SMALL bytes
 * at most, no device-to-host bulk): what the link's receive thread sends
 * itself. */
#define REMOTE_REPLY_SMALL (64u << 10)
bool remote_session_reply_small(const struct remote_session *s);
/* The queue holds enough: completions wait in the worker's rings for now. */
bool remote_session_queue_over(struct remote_session *s);
/* Wakes the session thread. */
void remote_session_notify(struct remote_session *s);

#endif
